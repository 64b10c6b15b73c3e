"""The FUSE floor (benchmark/floorfs.c): a minimal C daemon serving the same small files, so that every small-file row
of imgfs stands next to what any FUSE file system pays for the same access pattern in the same run.

- floor dropped-small: a fresh floorfs mount serving the small files from its memory; each file costs LOOKUP, OPEN,
  READ and RELEASE, as imgfs's files after drop_caches (bytes in the daemon, not in the kernel). With its CPU per file.
- floor warm-small: the same files again (OPEN and RELEASE only: keep_cache, hour-long entry timeouts), passes 2–5.
- floor remount-small: a fresh floorfs mount serving ext4 copies of the files (stat at LOOKUP, open at OPEN, pread at
  READ), as imgfs after a remount reads its disk cache. The copies were just written, so they are in the page cache:
  the most favourable case, which makes it a floor whether or not imgfs's disk-cache files are still cached.
"""
import contextlib
import os
import shutil
import subprocess
import time

from .processes import BenchFailure, is_mounted, unmount
from .settings import SMALL_READERS, WARM_PASSES

FLOOR = "fuse-floor"
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "floorfs.c")


class FuseFloor:
    def __init__(self, bench):
        self.bench = bench
        self.binary = os.path.join(bench.work, "floorfs")
        self.counter = 0
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True, capture_output=True,
                               text=True).stdout.split()
        command = ["gcc", "-O2", "-o", self.binary, SOURCE, *flags]
        bench.commands.setdefault("floorfs (build)", " ".join(command))
        built = subprocess.run(command, capture_output=True, text=True)
        if built.returncode != 0:
            raise BenchFailure(f"cannot build floorfs: {built.stderr[-500:]}")

    @contextlib.contextmanager
    def mounted(self, mode, sources):
        """floorfs over `sources` (`mode`: --memory or --disk); yields the paths of its files, in order."""
        bench = self.bench
        self.counter += 1
        mountpoint = os.path.join(bench.work, "mnt", f"floorfs-{self.counter}")
        os.makedirs(mountpoint)
        listing = os.path.join(bench.work, f"floorfs-{self.counter}.list")
        with open(listing, "w") as f:
            f.write("".join(path + "\n" for path in sources))
        command = [self.binary, mode, listing, mountpoint]
        bench.commands.setdefault(f"floorfs {mode}", " ".join(command))
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        bench.owned.add_process(proc)
        bench.owned.add_mount(mountpoint)
        try:
            deadline = time.monotonic() + 30
            while not is_mounted(mountpoint):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise BenchFailure(f"floorfs did not mount: {proc.stderr.read(500) if proc.poll() else ''}")
                time.sleep(0.01)
            yield [os.path.join(mountpoint, str(index)) for index in range(len(sources))]
        finally:
            unmount(mountpoint)
            bench.owned.forget_mount(mountpoint)
            bench.owned.stop_process(proc)

    def run(self):
        """The floor rows of this variant's small files (see the module's text)."""
        bench = self.bench
        rels = bench.small
        on_tmpfs = [os.path.join(bench.corpus, r) for r in rels]
        with self.mounted("--memory", on_tmpfs) as paths:
            if bench.timed_read(FLOOR, "dropped-small", paths, rels, bench.small_buffers, SMALL_READERS,
                                "files") is not None:
                bench.record(FLOOR, "dropped-small-cpu", bench.last_cpu / len(paths) * 1e6, "µs of CPU per file")
            bench.timed_read(FLOOR, "warm-small", paths, rels, bench.small_buffers, SMALL_READERS, "files",
                             passes=WARM_PASSES, split_first=True)
        copies = os.path.join(bench.work, "floorfs-disk")  # on the same file system as imgfs's disk caches
        os.makedirs(copies)
        on_disk = [os.path.join(copies, str(index)) for index in range(len(rels))]
        for source, target in zip(on_tmpfs, on_disk):
            shutil.copyfile(source, target)
        try:
            with self.mounted("--disk", on_disk) as paths:
                bench.timed_read(FLOOR, "remount-small", paths, rels, bench.small_buffers, SMALL_READERS, "files")
        finally:
            shutil.rmtree(copies)
