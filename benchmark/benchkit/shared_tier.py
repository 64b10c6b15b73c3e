"""The shared-tier rows (issue 19): a second mount's cold reads from the shared Redis tier, next to the same reads
from the origin and from its own disk cache, and the origin GETs of 4 mounts x 16 readers of the same icons.

Run on its own with `benchmark/bench --shared-tier [--quick]`. A private redis-server on 127.0.0.1 (free port,
no persistence, `maxmemory` with `allkeys-lru`, as docs/SHARED-CACHE.md recommends) is started and stopped by PID.
"""
import os
import subprocess
import threading
import time

from .settings import LARGE_READERS, MB, SMALL_READERS
from .processes import BenchFailure, drop_caches, free_port, log
from .origin import wait_for_port
from .reader import Buffers, imgfs_stats, read_all
from .results import Results
from .systems import Imgfs


class SharedImgfs(Imgfs):
    """imgfs with --shared-cache pointing at the benchmark's Redis, every value sealed with a fleet key of the run's
    (--shared-cache-key-file, as docs/SHARED-CACHE.md recommends for a fleet)."""
    name = "imgfs-shared"

    def __init__(self, bench, binary, redis_url):
        super().__init__(bench, binary)
        self.redis_url = redis_url
        self.key_file = os.path.join(bench.work, "fleet.key")
        with open(os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as key:
            key.write(os.urandom(32).hex())

    def command(self, origin_url, mountpoint, cache):
        return super().command(origin_url, mountpoint, cache) + [
            "--shared-cache", self.redis_url, "--tune", "shared-max-size=128M",
            "--shared-cache-key-file", self.key_file]


class Redis:
    def __init__(self, bench):
        self.port = free_port()
        self.command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--maxmemory", "3gb", "--maxmemory-policy", "allkeys-lru"]
        log_path = os.path.join(bench.work, "logs", "redis.log")
        self.proc = subprocess.Popen(self.command, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
        bench.owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "redis-server")
        self.url = f"redis://127.0.0.1:{self.port}"
        bench.commands.setdefault("redis-server", " ".join(self.command))

    def flush(self):
        subprocess.run(["redis-cli", "-p", str(self.port), "FLUSHALL"], check=True, stdout=subprocess.DEVNULL)


def _read(bench, mount, rels, buffers, threads):
    paths = [mount.path(r) for r in rels]
    elapsed, _ = read_all(paths, bench.expected(rels), buffers, threads, bench.timeout)
    return elapsed


def _rate(bench, rels, elapsed, unit):
    if unit == "files":
        return len(rels) / elapsed
    return sum(bench.manifest[r][0] for r in rels) / elapsed / MB


def _origin_gets(bench, offset, rels):
    wanted = {"/" + r for r in rels}
    return sum(1 for method, path, *_ in bench.origin.requests_since(offset) if method == "GET" and path in wanted)


def second_mount_workloads(bench):
    """(workload, rels, buffers, readers, unit) of the two second-mount rows."""
    return [("cold-small", bench.small, bench.small_buffers, SMALL_READERS, "files"),
            ("cold-large", bench.large, bench.large_buffers, LARGE_READERS, "bytes")]


def second_mount_row(bench, redis, plain, shared, workload, rels, buffers, threads, unit):
    """A fresh mount B reads what mount A fetched, from the shared tier; a plain mount reads the same from the origin;
    B remounted on its own cache reads it from its own disk."""
    redis.flush()
    a = shared.mount(bench.origin.url)
    try:
        _read(bench, a, rels, buffers, threads)
        deadline = time.monotonic() + 60
        while (imgfs_stats(a.mountpoint) or {}).get("repository", {}).get("shared_tier", {}).get(
                "published", 0) < len(rels) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        a.unmount()
    origin_mount = plain.mount(bench.origin.url)
    try:
        drop_caches()
        from_origin = _rate(bench, rels, _read(bench, origin_mount, rels, buffers, threads), unit)
    finally:
        origin_mount.unmount()
    b = shared.mount(bench.origin.url)
    offset = bench.origin.log_offset()
    try:
        drop_caches()
        from_shared = _rate(bench, rels, _read(bench, b, rels, buffers, threads), unit)
        gets = _origin_gets(bench, offset, rels)
        deadline = time.monotonic() + 60
        while (imgfs_stats(b.mountpoint) or {}).get("repository", {}).get("disk_entries", 0) < len(rels) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        b.unmount()
    b_again = shared.mount(bench.origin.url, cache=b.cache)
    try:
        drop_caches()
        from_disk = _rate(bench, rels, _read(bench, b_again, rels, buffers, threads), unit)
    finally:
        b_again.unmount()
    label = "files/s" if unit == "files" else "MB/s"
    log(f"shared tier {plain.name} {workload}: origin {from_origin:.1f}, shared tier {from_shared:.1f} ({gets} "
        f"origin GETs), own disk {from_disk:.1f} {label}")
    return f"second mount, {workload} ({label})", from_origin, from_shared, from_disk, gets


def fleet_gets(bench, redis, shared, mounts=4):
    """Origin GETs while `mounts` fresh mounts, 16 readers each, read the same icons at once (target: one each)."""
    redis.flush()
    fleet = [shared.mount(bench.origin.url) for _ in range(mounts)]
    offset = bench.origin.log_offset()
    errors = []
    try:
        def member(mount):
            try:
                _read(bench, mount, bench.small, Buffers([bench.manifest[r][0] for r in bench.small]), SMALL_READERS)
            except Exception as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=member, args=(m,)) for m in fleet]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        counters = {}
        for m in fleet:
            for key, value in (imgfs_stats(m.mountpoint) or {}).get("repository", {}).get("shared_tier", {}).items():
                counters[key] = counters.get(key, 0) + value
        log(f"shared tier fleet counters (sum of the mounts): {counters}")
    finally:
        for m in fleet:
            m.unmount()
    if errors:
        raise BenchFailure(f"shared tier fleet read failed: {errors[0]}")
    gets = _origin_gets(bench, offset, bench.small)
    log(f"shared tier fleet: {mounts} mounts x {SMALL_READERS} readers of {len(bench.small)} icons: {gets} origin "
        f"GETs (target {len(bench.small)}), {elapsed:.2f} s")
    return gets, elapsed


def run_shared_tier(bench):
    """Runs the shared-tier rows of imgfs and, with --before, of its before build (benchkit/before.py: each row of
    both back to back); returns (them as a Markdown table, the same as Results for the before/after table)."""
    bench.setup()
    redis = Redis(bench)
    plain = Imgfs(bench, bench.args.imgfs)
    shared = SharedImgfs(bench, bench.args.imgfs, redis.url)
    builds = [(plain, shared)] + list(zip(bench.before_twins(plain), bench.before_twins(shared)))
    results = Results()
    lines = ["| imgfs | row | from the origin | from the shared tier | from its own disk | origin GETs (shared) |",
             "|---|---|---:|---:|---:|---:|"]
    for spec in second_mount_workloads(bench):
        for build_plain, build_shared in builds:
            name, origin, shared_rate, disk, row_gets = second_mount_row(bench, redis, build_plain, build_shared,
                                                                         *spec)
            lines.append(f"| {build_plain.name} | {name} | {origin:.1f} | {shared_rate:.1f} | {disk:.1f} "
                         f"| {row_gets} |")
            for key, value in (("origin", origin), ("shared", shared_rate), ("disk", disk), ("gets", row_gets)):
                results.add(build_plain.name, f"{spec[0]}-{key}", value)
    lines.append("")
    for build_plain, build_shared in builds:
        gets, elapsed = fleet_gets(bench, redis, build_shared)
        results.add(build_plain.name, "fleet-gets", gets)
        results.add(build_plain.name, "fleet-time", elapsed)
        lines.append(f"{build_plain.name}: 4 mounts x {SMALL_READERS} readers of the same {len(bench.small)} icons: "
                     f"**{gets} origin GETs** (target {len(bench.small)}), {elapsed:.2f} s")
    return "\n".join(lines), results


# (key, label, unit, better) of the rows above, for the before/after table (benchkit/compare.py).
SHARED_TIER_WORKLOADS = [
    row for workload, unit in (("cold-small", "files/s"), ("cold-large", "MB/s")) for row in [
        (f"{workload}-origin", f"second mount, {workload}: from the origin", unit, "higher"),
        (f"{workload}-shared", f"second mount, {workload}: from the shared tier", unit, "higher"),
        (f"{workload}-disk", f"second mount, {workload}: from its own disk", unit, "higher"),
        (f"{workload}-gets", f"second mount, {workload}: origin GETs", "GETs", "lower")]
] + [
    ("fleet-gets", "4 mounts x 16 readers of the same icons: origin GETs", "GETs", "lower"),
    ("fleet-time", "4 mounts x 16 readers of the same icons: wall time", "s", "lower"),
]
