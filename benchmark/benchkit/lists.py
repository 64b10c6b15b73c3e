"""The list rows (issue 16), run with `bench --lists`: `ls` and `ls -l` of a 10,000-entry list against the same
names on tmpfs, and a viewer stepping through 30 entries of a 500-entry list, directly and through the 20 ms delay
line, with read-ahead 0 and 8 (time per image, origin GETs). The issue's target for the viewer: with read-ahead 8 and
the 20 ms origin, from the third image on each open finds its image cached, time to first byte ≤ 1 ms (the rows give
the median and the 90th percentile of images 3..30)."""
import itertools
import math
import os
import statistics
import subprocess
import time

from .processes import BenchFailure, log
from .systems import Imgfs
from .before import grouped

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
    row
    for delay in ("", "@20ms") for k in (0, 8)
    for viewer in [f"viewer stepping through {VIEWER_STEPS} of {VIEWER_ENTRIES} entries, "
                   f"{'20 ms origin' if delay else 'direct origin'}, read-ahead {k}"]
    for row in [
        (f"viewer{delay}-ra{k}", f"{viewer}: time to the first byte, mean of all {VIEWER_STEPS}", "ms", "lower", ""),
        (f"viewer{delay}-ra{k}-p50", f"{viewer}: the same, median of images 3..{VIEWER_STEPS}", "ms", "lower", ""),
        (f"viewer{delay}-ra{k}-p90", f"{viewer}: the same, 90th percentile of images 3..{VIEWER_STEPS}", "ms",
         "lower", ""),
        (f"viewer{delay}-ra{k}-gets", f"{viewer}: origin GETs", "GETs", "lower", ""),
    ]
]
VIEWER_TARGET_MS = 1.0  # from the third image on, with read-ahead 8 and the 20 ms origin


class ReadAheadImgfs(Imgfs):
    """imgfs with a given --tune read-ahead."""

    def __init__(self, bench, binary, read_ahead):
        super().__init__(bench, binary)
        self.read_ahead = read_ahead
        self.counter = _MOUNTS

    def command(self, origin_url, mountpoint, cache):
        return super().command(origin_url, mountpoint, cache) + ["--tune", f"read-ahead={self.read_ahead}"]


def _systems(bench, read_ahead, rep):
    """imgfs with that read-ahead, and its --before build (benchkit/before.py), in this repetition's order."""
    system = ReadAheadImgfs(bench, bench.args.imgfs, read_ahead)
    return grouped([system, *bench.before_twins(system)], rep)[0]


def _add_list(bench, mount, name, urls):
    path = os.path.join(bench.work, f"{name}.txt")
    with open(path, "w") as f:
        f.write("\n".join(urls) + "\n")
    result = subprocess.run([mount.system.binary, "list", "add", "--no-probe", mount.mountpoint, name, path],
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


def run_list_listing(bench, system):
    urls = _urls(bench.origin.url, bench.small, LIST_ENTRIES)
    names = [f"{i + 1:05d}-{os.path.basename(u.split('?')[0])}" for i, u in enumerate(urls)]
    floor = os.path.join(bench.scratch, "list-floor")
    os.makedirs(floor, exist_ok=True)
    for name in names:
        open(os.path.join(floor, name), "w").close()
    bench.record("limit", "list-ls", _time(["ls", floor])[0] * 1000, "ms (tmpfs)")
    bench.record("limit", "list-ls-l", _time(["ls", "-l", floor])[0] * 1000, "ms (tmpfs)")
    mount = system.mount(bench.origin.url)
    try:
        directory = _add_list(bench, mount, "big", urls)
        offset = bench.origin.log_offset()
        elapsed, count = _time(["ls", directory])
        if count != LIST_ENTRIES:
            raise BenchFailure(f"ls of the list printed {count} names")
        bench.record(system.name, "list-ls", elapsed * 1000, "ms")
        bench.record(system.name, "list-ls-gets", len(bench.origin.requests_since(offset)), "GETs")
        warm = os.path.join(bench.work, "big.txt")
        subprocess.run([system.binary, "prefetch", "--quiet", "--concurrency", "32", mount.mountpoint, warm],
                       stdout=subprocess.DEVNULL, check=True)
        _time(["ls", "-l", directory])  # the first pass fills the kernel's attribute cache
        bench.record(system.name, "list-ls-l", _time(["ls", "-l", directory])[0] * 1000, "ms")
    finally:
        mount.unmount()


def run_viewer(bench, origin_url, suffix, rep):
    for system in (s for k in (0, 8) for s in _systems(bench, k, rep)):
        k = system.read_ahead
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
            bench.record(system.name, f"viewer{suffix}-ra{k}", sum(waits) / len(waits) * 1000, "ms per image")
            late = [w * 1000 for w in waits[2:]]
            bench.record(system.name, f"viewer{suffix}-ra{k}-p50", statistics.median(late), "ms")
            bench.record(system.name, f"viewer{suffix}-ra{k}-p90", _percentile(late, 0.9), "ms")
            bench.record(system.name, f"viewer{suffix}-ra{k}-gets", gets, "GETs")
        finally:
            mount.unmount()


def _percentile(values, fraction):
    """The nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)]


def list_targets(med, fmt):
    """The target rows of the list rows (issue 16), for the report's target table: `ls` and `ls -l` of the list
    ≤ 2× tmpfs; the stepping viewer at 20 ms with read-ahead 8, images 3..30, ≤ 1 ms to the first byte."""
    rows = []
    for key, what in (("list-ls", "ls of the list"), ("list-ls-l", "ls -l of the list")):
        value, limit = med("imgfs", key), med("limit", key)
        if value is not None and limit:
            rows.append((what, "≤ 2× tmpfs", f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)} ms)",
                         "met" if value <= 2 * limit else "**missed**"))
    for stat in ("p50", "p90"):
        value = med("imgfs", f"viewer@20ms-ra8-{stat}")
        if value is not None:
            rows.append((f"viewer, 20 ms origin, read-ahead 8, images 3..{VIEWER_STEPS}, {stat}",
                         f"≤ {VIEWER_TARGET_MS:g} ms to the first byte", f"{fmt(value)} ms",
                         "met" if value <= VIEWER_TARGET_MS else "**missed**"))
    gets = med("imgfs", "viewer@20ms-ra8-gets")
    if gets is not None:
        rows.append(("viewer, 20 ms origin, read-ahead 8: GETs", f"≤ {VIEWER_STEPS} + 8", f"{gets:g}",
                     "met" if gets <= VIEWER_STEPS + 8 else "**missed**"))
    return rows


def run_lists(bench, rep):
    """The list rows of repetition rep (0, 1, …): imgfs's and its --before build's, each row back to back."""
    log("list rows: ls of a 10,000-entry list, the stepping viewer")
    for system in _systems(bench, 0, rep):
        run_list_listing(bench, system)
    run_viewer(bench, bench.origin.url, "", rep)
    if bench.delay:
        run_viewer(bench, bench.delay.url, "@20ms", rep)
