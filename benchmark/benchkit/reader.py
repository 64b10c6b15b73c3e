"""The reader: the same code for every file system, timed, with every byte checked afterwards."""
import hashlib
import itertools
import json
import os
import subprocess
import threading
import time

from .settings import FIRST_BYTES
from .processes import BenchFailure, CpuClock, thread_cpu_seconds


class Buffers:
    """Pre-allocated, pre-touched buffers (one per file and reader), so that timing excludes allocation."""

    def __init__(self, sizes):
        self.buffers = []
        for size in sizes:
            buffer = bytearray(size + 1)
            buffer[::4096] = bytes(len(range(0, size + 1, 4096)))
            self.buffers.append(buffer)


class ReadTimeout(Exception):
    pass


class ReadErrors(Exception):
    """Reads failed (EIO, ENOTCONN after a daemon crash, …): recorded for that system, the run goes on. Bytes that
    differ from the original are a BenchFailure instead: they end the run."""


def read_all(paths, expected, buffers, threads, timeout, stop_after=None, cpu=None):
    """Reads every path with `threads` threads (each takes the next path); returns (wall time in seconds, files
    read). With stop_after (seconds), no new file is started after that time: the files read are then the first n.
    expected: [(size, sha256)]; the bytes are checked after the clock stops: any difference fails the run. With cpu
    (a list), the machine's CpuClock of the time the clock ran is appended to it (busy seconds, idle share)."""
    count = len(paths)
    counter = itertools.count()
    errors = []
    lengths = [None] * count
    barrier = threading.Barrier(threads + 1)
    stop_at = [None]
    taken = [0]

    def worker():
        barrier.wait()
        while True:
            if stop_at[0] is not None and time.monotonic() > stop_at[0]:
                return
            index = next(counter)
            if index >= count:
                return
            taken[0] = max(taken[0], index + 1)
            view = memoryview(buffers.buffers[index])
            try:
                fd = os.open(paths[index], os.O_RDONLY)
                try:
                    offset = 0
                    while offset < len(view):
                        n = os.readv(fd, [view[offset:]])
                        if n == 0:
                            break
                        offset += n
                finally:
                    os.close(fd)
                lengths[index] = offset
            except OSError as error:
                errors.append(f"{paths[index]}: {error}")
                lengths[index] = -1

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for w in workers:
        w.start()
    if stop_after is not None:
        stop_at[0] = time.monotonic() + stop_after
    clock = CpuClock().start()
    barrier.wait()
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    elapsed = time.perf_counter() - start
    if cpu is not None:
        cpu.append(clock.stop())
    if any(w.is_alive() for w in workers):
        raise ReadTimeout(workers)
    if errors:
        raise ReadErrors(f"{len(errors)} of {count} reads failed, e.g. {errors[0]}")
    done = taken[0]
    for index, (size, digest) in enumerate(expected[:done]):
        if lengths[index] != size:
            raise BenchFailure(f"{paths[index]}: read {lengths[index]} bytes, expected {size}")
        if hashlib.sha256(memoryview(buffers.buffers[index])[:size]).hexdigest() != digest:
            raise BenchFailure(f"{paths[index]}: the bytes differ from the original (sha256)")
    return elapsed, done


def join_stragglers(error, timeout=30):
    for w in error.args[0]:
        w.join(timeout)


def read_first_bytes(path, expected_prefix):
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        data = b""
        while len(data) < FIRST_BYTES:
            chunk = os.read(fd, FIRST_BYTES - len(data))
            if not chunk:
                break
            data += chunk
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
    if data != expected_prefix:
        raise BenchFailure(f"{path}: the first {FIRST_BYTES} bytes differ from the original")
    return elapsed


def imgfs_stats(mountpoint):
    with open(os.path.join(mountpoint, ".imgfs", "stats.json")) as f:
        return json.load(f)


def wait_for_disk_entries(mount, expected, timeout):
    """imgfs writes its disk cache on a queue after the reads: waits until it holds `expected` entries (or stops
    growing for 5 s, or timeout); returns (seconds waited, entries)."""
    start = time.monotonic()
    last, last_change = -1, start
    while True:
        entries = imgfs_stats(mount.mountpoint)["repository"]["disk_entries"]
        now = time.monotonic()
        if entries != last:
            last, last_change = entries, now
        if entries >= expected or now - last_change > 5 or now - start > timeout:
            return now - start, entries
        time.sleep(0.05)


class DiskLag:
    """Polls imgfs's statistics (10 times a second, on a thread) from the end of a cold pass until the disk cache
    holds `expected` entries: how far the disk writes lag behind the reads. At that moment it also reads the CPU time
    of imgfs's disk-writer thread (`writer_cpu`, seconds since the mount): what storing those entries cost, outside
    the cold pass's clock."""

    def __init__(self, mount, expected):
        self.start = time.monotonic()
        self.seconds = None
        self.writer_cpu = None
        self.deadline = None
        self.thread = threading.Thread(target=self._poll, args=(mount, expected), daemon=True)
        self.thread.start()

    def _poll(self, mount, expected):
        while self.deadline is None or time.monotonic() < self.deadline:
            try:
                if imgfs_stats(mount.mountpoint)["repository"]["disk_entries"] >= expected:
                    self.seconds = time.monotonic() - self.start
                    self.writer_cpu = thread_cpu_seconds(mount.proc.pid, "imgfs-disk")
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.1)

    def result(self, timeout):
        """The seconds it took, waiting up to `timeout` more seconds; None if not reached by then."""
        self.deadline = time.monotonic() + timeout
        self.thread.join()
        return self.seconds


def time_ls(directory):
    start = time.perf_counter()
    result = subprocess.run(["ls", "-l", directory], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise BenchFailure(f"ls -l {directory}: {result.stderr.decode(errors='replace').strip()}")
    return elapsed, result.stdout.count(b"\n") - 1


def time_stat(paths):
    start = time.perf_counter()
    for path in paths:
        os.stat(path)
    return time.perf_counter() - start
