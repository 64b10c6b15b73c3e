"""The list rows (issue 16), run with `bench --lists`: `ls` and `ls -l` of a 10,000-entry list against the same
names on tmpfs, and a viewer stepping through 30 entries of a 500-entry list, directly and through the 20 ms delay
line, with read-ahead 0 and 8 (time per image, origin GETs)."""
import itertools
import os
import subprocess
import time

from .processes import BenchFailure, log
from .systems import Imgfs

LIST_ENTRIES = 10_000
VIEWER_ENTRIES = 500
VIEWER_STEPS = 30
VIEWER_DISPLAY = 0.03  # seconds each image stays on screen
_MOUNTS = itertools.count(100)  # mount directories of these rows, apart from the other rows' imgfs-<n>

# (key, label, unit, better, limit label), appended to the report's rows when the list rows ran.
LIST_WORKLOADS = [
    ("list-ls", f"`ls` of a {LIST_ENTRIES:,}-entry list, nothing fetched", "ms", "lower", "tmpfs"),
    ("list-ls-gets", "origin GETs during that `ls`", "GETs", "exact", ""),
    ("list-ls-l", f"`ls -l` of the {LIST_ENTRIES:,}-entry list once cached", "ms", "lower", "tmpfs"),
] + [
    (f"viewer{delay}-ra{k}", f"viewer stepping through {VIEWER_STEPS} of {VIEWER_ENTRIES} entries, "
     f"{'20 ms origin' if delay else 'direct origin'}, read-ahead {k}: time to the first byte per image", "ms",
     "lower", "")
    for delay in ("", "@20ms") for k in (0, 8)
] + [
    (f"viewer{delay}-ra{k}-gets", f"the same: origin GETs", "GETs", "lower", "")
    for delay in ("", "@20ms") for k in (0, 8)
]


class ReadAheadImgfs(Imgfs):
    """imgfs with a given --read-ahead."""

    def __init__(self, bench, binary, read_ahead):
        super().__init__(bench, binary)
        self.read_ahead = read_ahead
        self.counter = _MOUNTS

    def command(self, origin_url, mountpoint, cache):
        return super().command(origin_url, mountpoint, cache) + ["--read-ahead", str(self.read_ahead)]


def _add_list(bench, mount, name, urls):
    path = os.path.join(bench.work, f"{name}.txt")
    with open(path, "w") as f:
        f.write("\n".join(urls) + "\n")
    result = subprocess.run([bench.args.imgfs, "list", "add", "--no-probe", mount.mountpoint, name, path],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise BenchFailure(f"imgfs list add: {result.stdout.decode(errors='replace').strip()}")
    return os.path.join(mount.mountpoint, "lists", name)


def _time(command):
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise BenchFailure(f"{' '.join(command)}: {result.stderr.decode(errors='replace').strip()}")
    return time.perf_counter() - start, result.stdout.count(b"\n")


def _urls(origin_url, rels, count):
    """`count` distinct URLs of the small images (a query string makes repeats distinct; nginx ignores it)."""
    return [f"{origin_url}/{rels[i % len(rels)]}?n={i}" for i in range(count)]


def run_list_listing(bench):
    urls = _urls(bench.origin.url, bench.small, LIST_ENTRIES)
    names = [f"{i + 1:05d}-{os.path.basename(u.split('?')[0])}" for i, u in enumerate(urls)]
    floor = os.path.join(bench.scratch, "list-floor")
    os.makedirs(floor, exist_ok=True)
    for name in names:
        open(os.path.join(floor, name), "w").close()
    bench.record("limit", "list-ls", _time(["ls", floor])[0] * 1000, "ms (tmpfs)")
    bench.record("limit", "list-ls-l", _time(["ls", "-l", floor])[0] * 1000, "ms (tmpfs)")
    system = ReadAheadImgfs(bench, bench.args.imgfs, 0)
    mount = system.mount(bench.origin.url)
    try:
        directory = _add_list(bench, mount, "big", urls)
        offset = bench.origin.log_offset()
        elapsed, count = _time(["ls", directory])
        if count != LIST_ENTRIES:
            raise BenchFailure(f"ls of the list printed {count} names")
        bench.record("imgfs", "list-ls", elapsed * 1000, "ms")
        bench.record("imgfs", "list-ls-gets", len(bench.origin.requests_since(offset)), "GETs")
        warm = os.path.join(bench.work, "big.txt")
        subprocess.run([bench.args.imgfs, "prefetch", "--quiet", "--concurrency", "32", mount.mountpoint, warm],
                       stdout=subprocess.DEVNULL, check=True)
        _time(["ls", "-l", directory])  # the first pass fills the kernel's attribute cache
        bench.record("imgfs", "list-ls-l", _time(["ls", "-l", directory])[0] * 1000, "ms")
    finally:
        mount.unmount()


def run_viewer(bench, origin_url, suffix):
    for k in (0, 8):
        system = ReadAheadImgfs(bench, bench.args.imgfs, k)
        mount = system.mount(origin_url)
        try:
            directory = _add_list(bench, mount, "viewer", _urls(origin_url, bench.small, VIEWER_ENTRIES))
            names = sorted(os.listdir(directory))[:VIEWER_STEPS]
            offset = bench.origin.log_offset()
            waits = []
            for index, name in enumerate(names):
                if index:
                    time.sleep(VIEWER_DISPLAY)
                start = time.perf_counter()
                with open(os.path.join(directory, name), "rb") as f:
                    f.read(4096)
                    waits.append(time.perf_counter() - start)
                    while f.read(1 << 16):
                        pass
            time.sleep(1)  # let read-ahead still under way reach the origin's log
            gets = len(bench.origin.requests_since(offset))
            bench.record("imgfs", f"viewer{suffix}-ra{k}", sum(waits) / len(waits) * 1000, "ms per image")
            bench.record("imgfs", f"viewer{suffix}-ra{k}-gets", gets, "GETs")
        finally:
            mount.unmount()


def run_lists(bench):
    log("list rows: ls of a 10,000-entry list, the stepping viewer")
    run_list_listing(bench)
    run_viewer(bench, bench.origin.url, "")
    if bench.delay:
        run_viewer(bench, bench.delay.url, "@20ms")
