"""The FUSE floor (benchmark/floorfs.c): a minimal C daemon serving the same small files, so that every small-file row
of imgfs stands next to what any FUSE file system pays for the same access pattern in the same run.

Each floor row runs right after imgfs's row of the same pattern (FloorRows), because on this VM the cost of a round
trip between threads depends on what ran just before (docs/PERFORMANCE.md): a floor measured at another moment of
the run is not comparable. In the back-to-back variants, which must leave imgfs no pause, they all run after the
sequence instead.

- floor warm-small: floorfs serving the small files from its memory, all read once before (OPEN and RELEASE per
  file: keep_cache, hour-long entry timeouts), passes 2–5, as imgfs's warm-small.
- floor dropped-small: the same after drop_caches (LOOKUP, OPEN, READ, RELEASE per file), with its CPU per file, as
  imgfs's files after drop_caches (bytes in the daemon, not in the kernel).
- floor dropped-large: a fresh floorfs mount serving the large files from its memory, every byte by READ, with its
  CPU per MB: the serving side of a cold large file (imgfs's own after drop_caches is passthrough from its memory).
  Every floorfs mount reads ahead as imgfs does (1 MiB, so READs of up to 1 MiB). In https-h2 it runs too (with
  store-large), right after imgfs's cold-large at 20 ms: the floor of that row's CPU per MB.
- floor warm-large-memfd: the large files written into new memfds (512 KiB pieces) and read by the same readers
  through /proc/self/fd, first pass and passes 2–5, right after imgfs's warm-large: the memory imgfs's warm reads come
  from by passthrough with --tune pages=small (a large image read while it arrived leaves no pages in the kernel's page
  cache), which reads slower than the corpus's older tmpfs pages on this VM; by default imgfs keeps a large body in
  256 KiB pages of a tmpfs of its own instead, which read faster than either.
- floor store-large: the large files' bytes, already in this process's memory, written into new files on a tmpfs
  by as many threads in 512 KiB pieces (curl's piece size in imgfs), with the CPU per MB: what keeping a cold file's
  bytes in 4 KiB pages the kernel can serve costs (imgfs keeps a large body in shared memory too, in 256 KiB pages;
  floorfs serves bytes it loaded before the clock).
- floor store-small: the small files written into new files on the file system of imgfs's disk caches, one file
  each, then one sync (`floorfs --store`), with that process's own CPU per file: the least keeping each icon in a file
  of its own costs there, set against the CPU of imgfs's disk-writer thread per cold icon (disk-write-cpu). Those
  copies are the ones the remount floors below read.
- floor remount-small: a fresh floorfs mount serving ext4 copies of the files (stat at LOOKUP, open at OPEN, pread at
  READ), as imgfs after a remount reads its disk cache. The copies are read once directly first, so they are in the
  page cache: the most favourable case, which makes it a floor whether or not imgfs's disk-cache files are cached.
- floor remount-small-disk: the same through another fresh mount after drop_caches, the copies read from the disk,
  as imgfs's remount-small row reads its disk cache (one file per icon, as imgfs's entry files).
- disk remount-large: imgfs's own disk-cache files of the large images read directly (no FUSE) after drop_caches,
  right after imgfs's remount rows, which also start from drop_caches: what reading those bytes from the disk costs.
"""
import contextlib
import os
import shutil
import subprocess
import threading
import time

from .processes import BenchFailure, CpuClock, drop_caches, is_mounted, unmount
from .reader import read_all
from .settings import KERNEL_READ_AHEAD_KIB, LARGE_READERS, SMALL_READERS, WARM_PASSES

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
        command = [self.binary, mode, self.listing(f"floorfs-{self.counter}.list", sources), mountpoint]
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
            # The kernel's read-ahead, and so the size of its READs, as imgfs sets it (--tune kernel-read-ahead=1024):
            # written after INIT, it holds for every file opened from then on.
            device = os.stat(mountpoint).st_dev
            with open(f"/sys/class/bdi/{os.major(device)}:{os.minor(device)}/read_ahead_kb", "w") as f:
                f.write(str(KERNEL_READ_AHEAD_KIB))
            yield [os.path.join(mountpoint, str(index)) for index in range(len(sources))]
        finally:
            unmount(mountpoint)
            bench.owned.forget_mount(mountpoint)
            bench.owned.stop_process(proc)

    def store(self, sources, directory):
        """`sources` copied into new files 0, 1, 2, … of `directory` by `floorfs --store`, which measures its own
        CPU per file (creating, writing and closing each, one sync at the end); returns that."""
        command = [self.binary, "--store", self.listing("floorfs-store.list", sources), directory]
        self.bench.commands.setdefault("floorfs --store", " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchFailure(f"floorfs --store failed: {done.stderr[-500:]}")
        return float(done.stdout)

    def listing(self, name, sources):
        """The LIST file floorfs reads (one source path per line), written as `name` in the work directory."""
        path = os.path.join(self.bench.work, name)
        with open(path, "w") as f:
            f.write("".join(source + "\n" for source in sources))
        return path

    def rows(self):
        """The floor rows of this variant's small files, to run beside one imgfs sequence."""
        return FloorRows(self)


class FloorRows:
    """floorfs beside one imgfs sequence: start() before it, then each row after imgfs's row, then close()."""

    def __init__(self, floor):
        self.floor = floor
        self.bench = floor.bench
        self.rels = self.bench.small
        self.held = contextlib.ExitStack()  # the memory mount and the ext4 copies, until close()

    def start(self):
        bench = self.bench
        on_tmpfs = [os.path.join(bench.corpus, r) for r in self.rels]
        self.paths = self.held.enter_context(self.floor.mounted("--memory", on_tmpfs))
        self.read(self.paths)
        copies = os.path.join(bench.work, "floorfs-disk")  # on the same file system as imgfs's disk caches
        os.makedirs(copies)
        self.held.callback(shutil.rmtree, copies, ignore_errors=True)
        self.on_disk = [os.path.join(copies, str(index)) for index in range(len(self.rels))]
        bench.record(FLOOR, "store-small-cpu", self.floor.store(on_tmpfs, copies), "µs of CPU per file")

    def read(self, paths):
        """One untimed pass (the bytes are checked all the same)."""
        bench = self.bench
        read_all(paths, bench.expected(self.rels), bench.small_buffers, SMALL_READERS, bench.timeout)

    def warm(self):
        self.bench.timed_read(FLOOR, "warm-small", self.paths, self.rels, self.bench.small_buffers, SMALL_READERS,
                              "files", passes=WARM_PASSES, split_first=True)

    def dropped(self, drop=False):
        """After drop_caches (the caller's, or its own with drop)."""
        bench = self.bench
        if drop:
            drop_caches(sync=False)
        if bench.timed_read(FLOOR, "dropped-small", self.paths, self.rels, bench.small_buffers, SMALL_READERS,
                            "files") is not None:
            bench.record(FLOOR, "dropped-small-cpu", bench.last_cpu / len(self.paths) * 1e6, "µs of CPU per file")

    def large(self):
        """The large files through a fresh floorfs mount: every byte comes by READ (floorfs has no passthrough), as
        a cold file's bytes reach imgfs's readers; with the CPU per MB."""
        bench = self.bench
        on_tmpfs = [os.path.join(bench.corpus, r) for r in bench.large]
        with self.floor.mounted("--memory", on_tmpfs) as paths:
            if bench.timed_read(FLOOR, "dropped-large", paths, bench.large, bench.large_buffers, LARGE_READERS,
                                "bytes") is not None:
                bench.record(FLOOR, "dropped-large-cpu", bench.last_cpu / bench.large_mb() * 1e3, "ms of CPU per MB")
        self.store_large(on_tmpfs)

    def memfd_large(self):
        """The large files in new memfds read by the same readers (first pass, then passes 2–5), as imgfs's warm
        reads of them by passthrough with --tune pages=small."""
        bench = self.bench
        descriptors = []
        try:
            for rel in bench.large:
                descriptor = os.memfd_create(os.path.basename(rel))
                descriptors.append(descriptor)
                with open(os.path.join(bench.corpus, rel), "rb") as f:
                    data = memoryview(f.read())
                write_in_pieces(lambda piece: os.write(descriptor, piece), data)
            paths = [f"/proc/self/fd/{descriptor}" for descriptor in descriptors]
            bench.timed_read(FLOOR, "warm-large-memfd", paths, bench.large, bench.large_buffers, LARGE_READERS,
                             "bytes", passes=WARM_PASSES, split_first=True)
        finally:
            for descriptor in descriptors:
                os.close(descriptor)

    def store_large(self, sources):
        """The CPU per MB of writing the large files' bytes (read into memory first) into new tmpfs files."""
        bench = self.bench
        blobs = []
        for source in sources:
            with open(source, "rb") as f:
                blobs.append(f.read())
        target = os.path.join(bench.scratch, "store-floor")
        shutil.rmtree(target, ignore_errors=True)
        os.makedirs(target)
        queue = list(enumerate(blobs))
        lock = threading.Lock()

        def writer():
            while True:
                with lock:
                    if not queue:
                        return
                    index, blob = queue.pop(0)
                view = memoryview(blob)
                with open(os.path.join(target, str(index)), "wb", buffering=0) as f:
                    write_in_pieces(f.write, view)

        threads = [threading.Thread(target=writer) for _ in range(LARGE_READERS)]
        clock = CpuClock().start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        clock.stop()
        written = sum(os.path.getsize(os.path.join(target, str(index))) for index in range(len(blobs)))
        shutil.rmtree(target, ignore_errors=True)
        if written != sum(len(blob) for blob in blobs):
            raise BenchFailure(f"the store floor wrote {written} bytes of {sum(len(blob) for blob in blobs)}")
        bench.record(FLOOR, "store-large-cpu", clock.busy / bench.large_mb() * 1e3, "ms of CPU per MB")

    def remount(self):
        """The copies in the page cache, then from the disk."""
        bench = self.bench
        self.read(self.on_disk)
        for key in ("remount-small", "remount-small-disk"):
            if key.endswith("-disk"):
                drop_caches()
            with self.floor.mounted("--disk", self.on_disk) as paths:
                bench.timed_read(FLOOR, key, paths, self.rels, bench.small_buffers, SMALL_READERS, "files")

    def after_remount(self, cache, rest):
        """After imgfs's last row: the disk floor of its remount-large row, then, with `rest` (back to back), every
        other floor row."""
        disk_floor(self.bench, cache)
        if rest:
            self.after_sequence()

    def after_sequence(self):
        """Every row, one after the other: after a back-to-back sequence, which must leave imgfs no pause."""
        self.warm()
        self.memfd_large()
        self.dropped(drop=True)
        self.large()
        self.remount()

    def close(self):
        self.held.close()


def write_in_pieces(write, data):
    """Writes `data` (a memoryview) with `write` in pieces of curl's piece size in imgfs, 512 KiB, as imgfs writes
    a body it receives."""
    for start in range(0, len(data), 512 << 10):
        write(data[start:start + (512 << 10)])


def disk_floor(bench, cache):
    """The disk-cache files of imgfs's large entries (a body file per large image, found by its size) read directly
    by the same readers after drop_caches, as the remount-large row of the same run reads them through imgfs."""
    by_size = {}
    for rel in bench.large:
        by_size.setdefault(os.path.getsize(os.path.join(bench.corpus, rel)), []).append(rel)
    found = {}
    for directory, _, names in os.walk(cache):
        for name in names:
            if name.endswith(".data"):
                path = os.path.join(directory, name)
                matches = by_size.get(os.path.getsize(path), [])
                if len(matches) == 1:
                    found[matches[0]] = path
    if len(found) < len(bench.large):
        bench.results.note(FLOOR, "remount-large", f"only {len(found)} of {len(bench.large)} body files told apart")
        return
    drop_caches()
    # In the order of bench.large, which the readers' buffers follow.
    paths = [found[rel] for rel in bench.large]
    bench.timed_read(FLOOR, "remount-large", paths, bench.large, bench.large_buffers, LARGE_READERS, "bytes")
