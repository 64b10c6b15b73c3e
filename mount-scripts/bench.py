#!/usr/bin/env python3
"""The imgfs benchmark driver (run through mount-scripts/bench, which installs, builds and cleans up).

Builds a corpus of real images from Debian packages on a tmpfs, serves it with a private nginx on 127.0.0.1, and
reads it through imgfs, httpdirfs and rclone mount with one reader (a Python thread pool), against the limits:
direct curl (cold) and the same files on tmpfs (warm). Prints a Markdown table and writes it, with versions and the
exact commands, to a results file.

Network: every byte goes to 127.0.0.1 (nginx, and the delay line in front of it). Nothing else is contacted.
"""
import argparse
import asyncio
import datetime
import hashlib
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

MB = 1_000_000
MEMORY_BUDGET = "256M"
MEMORY_BUDGET_MIB = 256
SMALL_READERS = 16
LARGE_READERS = 4
DEDUP_READERS = 32
FIRST_BYTES = 64 * 1024
WARM_PASSES = 5  # warm rows: 5 passes; the first is reported alone, and the median of the other 4
THROTTLE_RATE = "2m"  # nginx limit_rate of /throttled/: 2 MiB/s
ONE_WAY_DELAY = 0.010  # the delay line: 10 ms each way = 20 ms round trip

ICON_PACKAGES = ["adwaita-icon-theme", "gnome-icon-theme", "oxygen-icon-theme"]
# (source file, Debian package, conversion): conversions re-encode losslessly to PNG to get tens of MB.
LARGE_IMAGES = [
    ("/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg", "mate-backgrounds", "png"),
    ("/usr/share/backgrounds/gnome/pixels-l.webp", "gnome-backgrounds", "png"),
    ("/usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg", "lomiri-wallpapers-20.04", "png"),
    ("/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg", "mate-backgrounds", None),
    ("/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg", "mate-backgrounds", None),
    ("/usr/share/backgrounds/gnome/pixels-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg", "lomiri-wallpapers-20.04", None),
    ("/usr/share/backgrounds/gnome/pixels-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg", "lomiri-wallpapers-20.04", None),
    ("/usr/share/backgrounds/gnome/adwaita-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/gnome/adwaita-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/warty-final-ubuntu.png", "lomiri-wallpapers", None),
    ("/usr/share/backgrounds/gnome/licorice-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/mate/abstract/Gulp.png", "mate-backgrounds", None),
    ("/usr/share/backgrounds/mate/desktop/Ubuntu-Mate-Cold-no-logo.png", "mate-backgrounds", None),
    ("/usr/share/backgrounds/gnome/grid-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers-16.04", None),
    ("/usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers-16.04", None),
    ("/usr/share/plymouth/themes/emerald/logo+emerald.png", "desktop-base", None),
    ("/usr/share/backgrounds/Dragonfly_by_Bolly.jpg", "lomiri-wallpapers-16.04", None),
]
QUICK_LARGE = LARGE_IMAGES[4:10]  # six of 4-9 MB, no conversion
DEDUP_SOURCE = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg"  # 16.4 MB
THROTTLED_SOURCE = "/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg"  # 8.5 MB


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class BenchFailure(Exception):
    pass


class MountFailure(Exception):
    pass


# ----------------------------------------------------------------------------------------------------------------
# Processes and mounts this run owns (recorded in <workdir>/state so that the shell wrapper can clean up after a
# hard failure of this driver).

class Owned:
    def __init__(self, workdir):
        self.state = os.path.join(workdir, "state")
        self.pids = {}
        self.mounts = []
        self.lock = threading.Lock()
        self._write()

    def _write(self):
        lines = [f"pid {pid}" for pid in self.pids] + [f"mount {m}" for m in self.mounts]
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.state)

    def add_process(self, proc):
        with self.lock:
            self.pids[proc.pid] = proc
            self._write()

    def forget_process(self, proc):
        with self.lock:
            self.pids.pop(proc.pid, None)
            self._write()

    def add_mount(self, path):
        with self.lock:
            if path not in self.mounts:
                self.mounts.append(path)
                self._write()

    def forget_mount(self, path):
        with self.lock:
            if path in self.mounts:
                self.mounts.remove(path)
                self._write()

    def stop_process(self, proc, sig=signal.SIGTERM, wait=10):
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.forget_process(proc)

    def cleanup(self):
        for path in reversed(list(self.mounts)):
            unmount(path)
            self.forget_mount(path)
        for proc in list(self.pids.values()):
            try:
                self.stop_process(proc, wait=5)
            except Exception as error:  # keep cleaning
                log(f"cleanup: {error}")


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def unmount(path):
    if not is_mounted(path):
        return
    for command in (["fusermount3", "-u", path], ["umount", path], ["fusermount3", "-u", "-z", path],
                    ["umount", "-l", path]):
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(50):
            if not is_mounted(path):
                return
            time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def vmhwm_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_snapshot():
    """(all CPUs' busy seconds, this run's processes' seconds, kernel threads' seconds): their differences over a
    repetition tell how much CPU other user-space processes took meanwhile (the machine should be quiet)."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = (sum(fields[:8]) - fields[3] - fields[4]) / tick  # all but idle and iowait
    processes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/status") as f:
                kernel = "VmSize" not in f.read()
        except OSError:
            continue
        processes[int(entry)] = (int(rest[1]), sum(int(x) for x in rest[11:15]) / tick, kernel)
    ours, stack = 0.0, [os.getpid()]
    seen = set()
    while stack:
        pid = stack.pop()
        if pid in seen or pid not in processes:
            continue
        seen.add(pid)
        ours += processes[pid][1]
        stack += [child for child, (parent, _, _) in processes.items() if parent == pid]
    kthreads = sum(seconds for _, seconds, kernel in processes.values() if kernel)
    return busy, ours, kthreads


def run_out(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as error:
        return f"({error})"


# ----------------------------------------------------------------------------------------------------------------
# The corpus

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def package_files(package):
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def build_corpus(root, small_count, large_images):
    """Writes small/, large/, dedup/ and throttled/ under root; returns {relative path: (size, sha256)}."""
    manifest = {}
    os.makedirs(os.path.join(root, "small"))
    os.makedirs(os.path.join(root, "large"))
    os.makedirs(os.path.join(root, "dedup"))
    os.makedirs(os.path.join(root, "throttled"))
    candidates = {}
    for package in ICON_PACKAGES:
        for path in package_files(package):
            if not path.endswith(".png") or not os.path.isfile(path) or os.path.islink(path):
                continue
            size = os.path.getsize(path)
            if 512 <= size <= 50 * 1024:
                with open(path, "rb") as f:
                    data = f.read()
                if data[:8] != b"\x89PNG\r\n\x1a\n":
                    continue
                candidates.setdefault(hashlib.sha256(data).hexdigest(), path)
    if len(candidates) < small_count:
        raise BenchFailure(f"only {len(candidates)} distinct icons found in {ICON_PACKAGES}")
    chosen = sorted(candidates.items())[:small_count]  # a deterministic, size-blind sample
    for index, (digest, source) in enumerate(chosen):
        rel = f"small/{index:04d}-{safe_name(os.path.basename(source))}"
        shutil.copyfile(source, os.path.join(root, rel))
        manifest[rel] = (os.path.getsize(source), digest)

    def make_large(item):
        index, (source, _package, conversion) = item
        base = safe_name(os.path.splitext(os.path.basename(source))[0])
        if conversion:
            rel = f"large/{index:02d}-{base}-lossless.{conversion}"
            subprocess.run(["/usr/bin/convert", source, "-quality", "100", os.path.join(root, rel)], check=True)
        else:
            rel = f"large/{index:02d}-{safe_name(os.path.basename(source))}"
            shutil.copyfile(source, os.path.join(root, rel))
        return rel

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        rels = list(pool.map(make_large, enumerate(large_images)))
    for rel in rels:
        path = os.path.join(root, rel)
        manifest[rel] = (os.path.getsize(path), sha256_file(path))
    for rel, source in (("dedup/elephants-16mb.jpg", DEDUP_SOURCE), ("throttled/elephants-8mb.jpg", THROTTLED_SOURCE)):
        shutil.copyfile(source, os.path.join(root, rel))
        manifest[rel] = (os.path.getsize(source), sha256_file(source))
    return manifest


# ----------------------------------------------------------------------------------------------------------------
# The origin: nginx, and the delay line (a user-space TCP proxy on 127.0.0.1) for the 20 ms variant

NGINX_CONF = """\
user root;
worker_processes 2;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    types {{ image/png png; image/jpeg jpg; image/webp webp; text/html html; }}
    default_type application/octet-stream;
    log_format bench '$msec|$request|$status|$body_bytes_sent|$server_protocol|$http_range';
    access_log {work}/access.log bench;
    client_body_temp_path {work}/nginx-tmp;
    proxy_temp_path {work}/nginx-tmp;
    fastcgi_temp_path {work}/nginx-tmp;
    uwsgi_temp_path {work}/nginx-tmp;
    scgi_temp_path {work}/nginx-tmp;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {root};
        autoindex on;
        location /throttled/ {{ limit_rate {rate}; }}
    }}
}}
"""


class Origin:
    def __init__(self, owned, work, root):
        self.owned = owned
        self.work = os.path.join(work, "nginx")
        os.makedirs(os.path.join(self.work, "nginx-tmp"))
        self.port = free_port()
        self.conf_path = os.path.join(self.work, "nginx.conf")
        self.conf = NGINX_CONF.format(work=self.work, port=self.port, root=root, rate=THROTTLE_RATE)
        with open(self.conf_path, "w") as f:
            f.write(self.conf)
        self.access_log = os.path.join(self.work, "access.log")
        self.command = ["nginx", "-p", self.work, "-c", self.conf_path]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "nginx.out"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "nginx")
        self.url = f"http://127.0.0.1:{self.port}"

    def log_offset(self):
        try:
            return os.path.getsize(self.access_log)
        except OSError:
            return 0

    def requests_since(self, offset):
        """The access log lines after offset: (method, path, status, bytes, protocol, range)."""
        with open(self.access_log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        entries = []
        for line in text.splitlines():
            parts = line.split("|")
            if len(parts) < 6:
                continue
            request = parts[1].split(" ")
            method, target = (request + ["", ""])[:2]
            entries.append((method, urllib.parse.urlsplit(target).path, int(parts[2]), int(parts[3]), parts[4],
                            parts[5]))
        return entries

    def stop(self):
        self.owned.stop_process(self.proc, signal.SIGQUIT)


def wait_for_port(port, proc, name, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchFailure(f"{name} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchFailure(f"{name} did not listen on 127.0.0.1:{port}")


async def delay_line(listen_port, upstream_port, one_way):
    """A TCP proxy that holds every chunk one_way seconds in each direction, and a new connection 2 * one_way
    (the handshake's round trip): a stand-in for a link with 2 * one_way round-trip time, since this kernel has no
    netem (nor fq/etf, which could delay packets by departure time)."""
    loop = asyncio.get_running_loop()

    async def pump(reader, writer):
        queue = asyncio.Queue(maxsize=64)

        async def produce():
            while True:
                try:
                    data = await reader.read(256 * 1024)
                except (ConnectionError, OSError):
                    data = b""
                await queue.put((loop.time() + one_way, data))
                if not data:
                    return

        async def consume():
            while True:
                due, data = await queue.get()
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if not data:
                    try:
                        writer.write_eof()
                    except (OSError, RuntimeError):
                        pass
                    return
                try:
                    writer.write(data)
                    await writer.drain()
                except (ConnectionError, OSError):
                    return

        await asyncio.gather(produce(), consume())

    async def handle(client_reader, client_writer):
        try:
            await asyncio.sleep(2 * one_way)
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(pump(client_reader, up_writer), pump(up_reader, client_writer))
        finally:
            for writer in (client_writer, up_writer):
                try:
                    writer.close()
                except OSError:
                    pass

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, backlog=4096)
    async with server:
        await server.serve_forever()


class DelayLine:
    def __init__(self, owned, work, upstream_port):
        self.owned = owned
        self.port = free_port()
        self.command = [sys.executable, os.path.abspath(__file__), "--delay-line", str(self.port), str(upstream_port),
                        str(ONE_WAY_DELAY)]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, "delay-line.log"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "delay line")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.owned.stop_process(self.proc)


# ----------------------------------------------------------------------------------------------------------------
# The reader: the same code for every file system

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


def read_all(paths, expected, buffers, threads, timeout, stop_after=None):
    """Reads every path with `threads` threads (each takes the next path); returns (wall time in seconds, files
    read). With stop_after (seconds), no new file is started after that time: the files read are then the first n.
    expected: [(size, sha256)]; the bytes are checked after the clock stops: any difference fails the run."""
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
    barrier.wait()
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    elapsed = time.perf_counter() - start
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
    holds `expected` entries: how far the disk writes lag behind the reads."""

    def __init__(self, mount, expected):
        self.start = time.monotonic()
        self.seconds = None
        self.deadline = None
        self.thread = threading.Thread(target=self._poll, args=(mount, expected), daemon=True)
        self.thread.start()

    def _poll(self, mount, expected):
        while self.deadline is None or time.monotonic() < self.deadline:
            try:
                if imgfs_stats(mount.mountpoint)["repository"]["disk_entries"] >= expected:
                    self.seconds = time.monotonic() - self.start
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


# ----------------------------------------------------------------------------------------------------------------
# The systems

class Mount:
    def __init__(self, system, mountpoint, cache, proc, command):
        self.system = system
        self.mountpoint = mountpoint
        self.cache = cache
        self.proc = proc
        self.command = command
        self.peak_rss = 0.0

    def path(self, rel):
        return self.system.path(self, rel)

    def listing_dir(self):
        return self.system.listing_dir(self)

    def sample_rss(self):
        value = vmhwm_mib(self.proc.pid)
        if value is not None:
            self.peak_rss = max(self.peak_rss, value)
        return self.peak_rss

    def unmount(self):
        self.sample_rss()
        owned = self.system.bench.owned
        unmount(self.mountpoint)
        owned.forget_mount(self.mountpoint)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        owned.stop_process(self.proc)

    def abort(self):
        """Kills the daemon (pending requests then fail) and lazily unmounts."""
        owned = self.system.bench.owned
        owned.stop_process(self.proc, signal.SIGKILL)
        unmount(self.mountpoint)
        owned.forget_mount(self.mountpoint)


class System:
    name = ""
    label = None  # the column header, when not the name
    only = None  # a system that runs only cold-small

    def __init__(self, bench):
        self.bench = bench
        self.counter = itertools.count()

    def command(self, origin_url, mountpoint, cache):
        raise NotImplementedError

    def path(self, mount, rel):
        return os.path.join(mount.mountpoint, rel)

    def listing_dir(self, mount):
        return os.path.join(mount.mountpoint, "small")

    def environment(self):
        return None

    def mount(self, origin_url, cache=None):
        n = next(self.counter)
        mountpoint = os.path.join(self.bench.work, "mnt", f"{self.name}-{n}")
        os.makedirs(mountpoint)
        if cache is None:
            cache = os.path.join(self.bench.work, "cache", f"{self.name}-{n}")
            os.makedirs(cache)
        command = self.command(origin_url, mountpoint, cache)
        self.bench.commands.setdefault(self.name, " ".join(shlex.quote(c) for c in command))
        logfile = open(os.path.join(self.bench.work, "logs", f"{self.name}-{n}.log"), "w")
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                                env=self.environment())
        self.bench.owned.add_process(proc)
        self.bench.owned.add_mount(mountpoint)
        deadline = time.monotonic() + 30
        while not is_mounted(mountpoint):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.bench.owned.stop_process(proc)
                tail = open(logfile.name, errors="replace").read()[-300:].strip()
                raise MountFailure(f"{self.name} did not mount: {tail}")
            time.sleep(0.01)
        return Mount(self, mountpoint, cache, proc, command)


class Imgfs(System):
    name = "imgfs"

    def __init__(self, bench, binary, per_host=16):
        super().__init__(bench)
        self.binary = binary
        self.per_host = per_host

    def command(self, origin_url, mountpoint, cache):
        return [self.binary, "mount", mountpoint, "-f", "--cache-dir", cache, "--memory-limit", MEMORY_BUDGET,
                "--disk-limit", "4G", "--max-transfers", "16", "--max-transfers-per-host", str(self.per_host)]

    def path(self, mount, rel):
        url = f"{mount.origin_url}/{rel}"
        return os.path.join(mount.mountpoint, "img", urllib.parse.quote(url, safe=""))

    def listing_dir(self, mount):
        return os.path.join(mount.mountpoint, "img")

    def mount(self, origin_url, cache=None):
        m = super().mount(origin_url, cache)
        m.origin_url = origin_url
        deadline = time.monotonic() + 10
        while not os.path.isdir(os.path.join(m.mountpoint, "img")):
            if time.monotonic() > deadline:
                raise BenchFailure("imgfs mounted but img/ is missing")
            time.sleep(0.01)
        return m


class Imgfs6(Imgfs):
    """imgfs with its default per-host limit (6), for the cold-small rows only."""
    name = "imgfs-6"
    label = "imgfs, 6/host"
    only = "cold-small"

    def __init__(self, bench, binary):
        super().__init__(bench, binary, per_host=6)


class Httpdirfs(System):
    name = "httpdirfs"

    def command(self, origin_url, mountpoint, cache):
        return ["httpdirfs", "-f", "--cache", "--cache-location", cache, "--no-range-check", origin_url + "/",
                mountpoint]


class Rclone(System):
    name = "rclone"

    def environment(self):
        env = dict(os.environ)
        env["RCLONE_CONFIG"] = os.path.join(self.bench.work, "rclone.conf")
        return env

    def command(self, origin_url, mountpoint, cache):
        return ["rclone", "mount", ":http:", mountpoint, "--http-url", origin_url + "/", "--vfs-cache-mode", "full",
                "--read-only", "--cache-dir", cache]


# ----------------------------------------------------------------------------------------------------------------
# The workloads

class Results:
    def __init__(self):
        self.values = {}  # (system, workload) -> [value per repetition]
        self.notes = {}  # (system, workload) -> [text]
        self.errors = []  # read errors, in full
        self.capped = {}  # (system, workload) -> [files read before the cap, per repetition]

    def add(self, system, workload, value):
        self.values.setdefault((system, workload), []).append(value)

    def note(self, system, workload, text):
        notes = self.notes.setdefault((system, workload), [])
        if text not in notes:
            notes.append(text)

    def get(self, system, workload):
        return [v for v in self.values.get((system, workload), []) if v is not None]


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = args.workdir
        for sub in ("mnt", "cache", "logs", "tmpfs"):
            os.makedirs(os.path.join(self.work, sub), exist_ok=True)
        with open(os.path.join(self.work, "rclone.conf"), "w"):
            pass
        self.owned = Owned(self.work)
        self.results = Results()
        self.commands = {}
        self.quick = args.quick
        self.reps = args.reps or (1 if args.quick else 3)
        self.timeout = 60 if args.quick else 120
        # Cold small-file passes start no new file after this many seconds (httpdirfs fetches ~10 files/s).
        self.cap = 5.0 if args.quick else 20.0

    # -- set-up ---------------------------------------------------------------------------------------------------
    def setup(self):
        tmpfs = os.path.join(self.work, "tmpfs")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g,mode=0755", "imgfs-bench", tmpfs], check=True)
        self.owned.add_mount(tmpfs)
        self.corpus = os.path.join(tmpfs, "corpus")
        self.scratch = os.path.join(tmpfs, "scratch")
        os.makedirs(self.scratch)
        small = 300 if self.quick else 2000
        large = QUICK_LARGE if self.quick else LARGE_IMAGES
        log(f"building the corpus ({small} icons, {len(large)} large images) on tmpfs")
        self.manifest = build_corpus(self.corpus, small, large)
        self.small = sorted(r for r in self.manifest if r.startswith("small/"))
        self.large = sorted(r for r in self.manifest if r.startswith("large/"))
        self.dedup_rel = "dedup/elephants-16mb.jpg"
        self.throttled_rel = "throttled/elephants-8mb.jpg"
        with open(os.path.join(self.corpus, self.throttled_rel), "rb") as f:
            self.throttled_prefix = f.read(FIRST_BYTES)
        self.small_buffers = Buffers([self.manifest[r][0] for r in self.small])
        self.large_buffers = Buffers([self.manifest[r][0] for r in self.large])
        self.dedup_buffers = Buffers([self.manifest[self.dedup_rel][0]] * DEDUP_READERS)
        self.origin = Origin(self.owned, self.work, self.corpus)
        self.delay = None if self.args.no_delay else DelayLine(self.owned, self.work, self.origin.port)
        # One untimed pass through the origin (and the delay line), so that the first repetition is not the only one
        # that pays for nginx's first opens of the files.
        for url in [self.origin.url] + ([self.delay.url] if self.delay else []):
            self.curl_many(url, self.small + self.large + [self.dedup_rel], SMALL_READERS)
        self.systems = [Imgfs(self, self.args.imgfs), Imgfs6(self, self.args.imgfs), Httpdirfs(self), Rclone(self)]
        self.systems = [s for s in self.systems if s.name in self.args.systems.split(",")]
        small_bytes = sum(self.manifest[r][0] for r in self.small)
        large_bytes = sum(self.manifest[r][0] for r in self.large)
        self.corpus_text = (f"{len(self.small)} PNG icons ({small_bytes / MB:.1f} MB, "
                            f"{min(self.manifest[r][0] for r in self.small)}–"
                            f"{max(self.manifest[r][0] for r in self.small)} B, median "
                            f"{statistics.median(self.manifest[r][0] for r in self.small):.0f} B) from "
                            f"{', '.join(ICON_PACKAGES)}; {len(self.large)} large images ({large_bytes / MB:.1f} MB, "
                            f"{min(self.manifest[r][0] for r in self.large) / MB:.1f}–"
                            f"{max(self.manifest[r][0] for r in self.large) / MB:.1f} MB, JPEG/PNG/WebP) from "
                            f"{', '.join(sorted({p for _, p, _ in large}))}")
        log(self.corpus_text)

    def expected(self, rels):
        return [self.manifest[r] for r in rels]

    # -- one read workload ----------------------------------------------------------------------------------------
    def timed_read(self, system_name, workload, paths, rels, buffers, threads, unit, abort=None, passes=1,
                   cap=None, split_first=False):
        """Reads paths `passes` times and records the median pass as files/s (unit 'files') or MB/s (unit
        'bytes'). With cap (seconds), readers start no new file after that time (the rate is over the files read).
        Returns the number of files read, or None after a timeout (then abort() is called)."""
        times = []
        for _ in range(passes):
            try:
                elapsed, done = read_all(paths, self.expected(rels), buffers, threads, self.timeout, cap)
            except ReadTimeout as error:
                log(f"{system_name} {workload}: no result within {self.timeout} s")
                self.results.add(system_name, workload, None)
                self.results.note(system_name, workload, f"timed out (> {self.timeout} s)")
                if abort:
                    abort()
                join_stragglers(error)
                return None
            except ReadErrors as error:
                self.read_failed(system_name, workload, error, abort)
                return None
            times.append(elapsed)
        if passes > 1 and split_first:
            # The first pass right after the cold one, and the steady state (the median of the later passes).
            first = len(paths) / times[0] if unit == "files" else sum(self.manifest[r][0] for r in rels) / times[0] / MB
            self.results.add(system_name, workload + "-1st", first)
            log(f"{system_name:9} {workload + '-1st':16} {first:10.1f} {'files/s' if unit == 'files' else 'MB/s'}"
                f" ({times[0]:.3f} s)")
            times = times[1:]
        elapsed = statistics.median(times)
        if done < len(paths):
            self.results.capped.setdefault((system_name, workload), []).append(done)
            counts = self.results.capped[(system_name, workload)]
            span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
            self.results.notes[(system_name, workload)] = [f"stopped at {cap:.0f} s: {span} of {len(paths)} files"]
        if unit == "files":
            value = done / elapsed
        else:
            value = sum(self.manifest[r][0] for r in rels[:done]) / elapsed / MB
        self.results.add(system_name, workload, value)
        log(f"{system_name:9} {workload:16} {value:10.1f} {'files/s' if unit == 'files' else 'MB/s'}"
            f" ({elapsed:.3f} s{f', {done} of {len(paths)} files' if done < len(paths) else ''}"
            f"{f', median of {passes} passes' if passes > 1 else ''})")
        return done

    # -- the limits -----------------------------------------------------------------------------------------------
    def curl_many(self, origin_url, rels, parallel):
        out = os.path.join(self.scratch, "curl")
        os.makedirs(out, exist_ok=True)
        config = os.path.join(self.work, "curl.cfg")
        with open(config, "w") as f:
            for index, rel in enumerate(rels):
                f.write(f'url = "{origin_url}/{rel}"\noutput = "{out}/{index}"\n')
        command = ["curl", "--parallel", "--parallel-max", str(parallel), "--no-progress-meter", "--fail",
                   "--config", config]
        self.commands.setdefault(f"curl --parallel-max {parallel}",
                                 " ".join(command) + "   # config: url = …/<file>, output = <tmpfs>/<n> per file")
        start = time.perf_counter()
        result = subprocess.run(command, timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise BenchFailure(f"curl failed: {result.stderr.decode(errors='replace')[:500]}")
        for index, rel in enumerate(rels):
            path = os.path.join(out, str(index))
            size, digest = self.manifest[rel]
            if os.path.getsize(path) != size or sha256_file(path) != digest:
                raise BenchFailure(f"curl: {rel} differs from the original")
        shutil.rmtree(out)
        return elapsed

    def curl_one(self, origin_url, rel):
        out = os.path.join(self.scratch, "one")
        command = ["curl", "--no-progress-meter", "--fail", "-o", out, f"{origin_url}/{rel}"]
        self.commands.setdefault("curl (one file)", " ".join(command))
        start = time.perf_counter()
        subprocess.run(command, check=True, timeout=300)
        elapsed = time.perf_counter() - start
        if sha256_file(out) != self.manifest[rel][1]:
            raise BenchFailure(f"curl: {rel} differs from the original")
        os.unlink(out)
        return elapsed

    def curl_first_bytes(self, origin_url, rel):
        command = ["curl", "--no-progress-meter", "--no-buffer", f"{origin_url}/{rel}"]
        self.commands.setdefault("curl (first 64 KiB)",
                                 " ".join(command) + "   # stdout read until 64 KiB, then killed")
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.owned.add_process(proc)
        data = b""
        while len(data) < FIRST_BYTES:
            chunk = proc.stdout.read(FIRST_BYTES - len(data))
            if not chunk:
                break
            data += chunk
        elapsed = time.perf_counter() - start
        self.owned.stop_process(proc, signal.SIGKILL)
        proc.stdout.close()
        if data != self.throttled_prefix:
            raise BenchFailure("curl: the first 64 KiB of the throttled file differ from the original")
        return elapsed

    def read_failed(self, system_name, workload, error, abort):
        log(f"{system_name} {workload}: READ ERRORS: {error}")
        self.results.add(system_name, workload, None)
        brief = re.sub(r".*\[Errno \d+\] ([^:']+).*", r"\1", str(error))
        self.results.note(system_name, workload, f"failed: {brief}")
        self.results.errors.append(f"{system_name} {workload}: {error}")
        if abort:
            abort()

    def record(self, system, workload, value, text):
        self.results.add(system, workload, value)
        log(f"{system:9} {workload:16} {value:10.1f} {text}")

    def run_limits(self):
        url = self.origin.url
        n = len(self.small)
        large_bytes = sum(self.manifest[r][0] for r in self.large)
        self.record("limit", "cold-small", n / self.curl_many(url, self.small, SMALL_READERS), "files/s (curl)")
        self.record("limit", "cold-large", large_bytes / self.curl_many(url, self.large, LARGE_READERS) / MB,
                    "MB/s (curl)")
        small_paths = [os.path.join(self.corpus, r) for r in self.small]
        large_paths = [os.path.join(self.corpus, r) for r in self.large]
        # tmpfs is the limit of every warm row: drop_caches and remounts do not touch it.
        self.timed_read("limit", "warm-small", small_paths, self.small, self.small_buffers, SMALL_READERS, "files",
                        passes=WARM_PASSES)
        self.timed_read("limit", "warm-large", large_paths, self.large, self.large_buffers, LARGE_READERS, "bytes",
                        passes=WARM_PASSES)
        for kind in ("small", "large"):
            value = self.results.values[("limit", f"warm-{kind}")][-1]
            self.results.add("limit", f"warm-{kind}-1st", value)
            self.results.add("limit", f"dropped-{kind}", value)
            self.results.add("limit", f"remount-{kind}", value)
        self.record("limit", "ls-l", time_ls(os.path.join(self.corpus, "small"))[0] * 1000, "ms (tmpfs)")
        self.record("limit", "stat", time_stat(small_paths) * 1000, "ms (tmpfs)")
        self.record("limit", "dedup-wall", self.curl_one(url, self.dedup_rel) * 1000, "ms (curl, one fetch)")
        # The copying floor of the dedup row: the same 32 readers of the same file on tmpfs.
        elapsed, _ = read_all([os.path.join(self.corpus, self.dedup_rel)] * DEDUP_READERS,
                              [self.manifest[self.dedup_rel]] * DEDUP_READERS, self.dedup_buffers, DEDUP_READERS,
                              self.timeout)
        self.record("limit", "dedup-tmpfs", elapsed * 1000, "ms (32 readers of the file on tmpfs)")
        self.results.add("limit", "dedup-gets", 1)
        self.results.add("limit", "dedup-bytes", 1.0)
        self.record("limit", "first-64k", self.curl_first_bytes(url, self.throttled_rel) * 1000, "ms (curl)")
        if self.delay:
            durl = self.delay.url
            self.record("limit", "cold-small@20ms", n / self.curl_many(durl, self.small, SMALL_READERS),
                        "files/s (curl)")
            self.record("limit", "cold-large@20ms", large_bytes / self.curl_many(durl, self.large, LARGE_READERS) / MB,
                        "MB/s (curl)")
            self.record("limit", "first-64k@20ms", self.curl_first_bytes(durl, self.throttled_rel) * 1000, "ms (curl)")

    # -- a file system --------------------------------------------------------------------------------------------
    def run_system(self, system):
        """Each part mounts afresh; a part that cannot mount is recorded and the next one runs."""
        url = self.origin.url
        parts = [lambda: self.run_cold_small_only(system)] if system.only else [
            lambda: self.run_sequence(system),
            lambda: self.run_dedup(system, url),
            lambda: self.run_first_bytes(system, url, "first-64k")] + (
            [lambda: self.run_delayed(system)] if self.delay else [])
        for part in parts:
            try:
                part()
            except MountFailure as error:
                log(f"{system.name}: {error}")
                self.results.errors.append(f"{system.name}: {error}")

    def run_sequence(self, system):
        """cold-small, warm-small, ls -l, stat, cold-large, warm-large, drop_caches, both again, remount, both
        again: on one mount (and its cache after the remount)."""
        name = system.name
        url = self.origin.url
        mount = system.mount(url)
        try:
            small = [mount.path(r) for r in self.small]
            large = [mount.path(r) for r in self.large]
            done = self.timed_read(name, "cold-small", small, self.small, self.small_buffers, SMALL_READERS, "files",
                                   mount.abort, cap=self.cap)
            if done is None:
                return
            # Later small-file rows read what the cold pass read (all of it unless it hit the cap).
            rels = self.small[:done]
            small = small[:done]
            lag = DiskLag(mount, done) if system.name == "imgfs" else None
            self.timed_read(name, "warm-small", small, rels, self.small_buffers, SMALL_READERS, "files",
                            passes=WARM_PASSES, split_first=True)
            ls_time, entries = time_ls(mount.listing_dir())
            self.record(name, "ls-l", ls_time * 1000, f"ms ({entries} entries)")
            self.results.note(name, "ls-l", f"{entries} entries")
            self.record(name, "stat", time_stat(small) * 1000, f"ms ({len(small)} files)")
            if len(small) != len(self.small):
                self.results.capped.setdefault((name, "stat"), []).append(len(small))
                counts = self.results.capped[(name, "stat")]
                span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
                self.results.notes[(name, "stat")] = [f"{span} files"]
            if self.timed_read(name, "cold-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes",
                               mount.abort) is None:
                return
            self.timed_read(name, "warm-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes",
                            passes=WARM_PASSES, split_first=True)
            mount.sample_rss()
            drop_caches()
            self.timed_read(name, "dropped-small", small, rels, self.small_buffers, SMALL_READERS, "files")
            self.timed_read(name, "dropped-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes")
            rss = mount.sample_rss()
            if lag:
                seconds = lag.result(self.timeout)
                if seconds is None:
                    self.results.add(name, "disk-lag", None)
                    self.results.note(name, "disk-lag", f"not all on disk after {self.timeout} s")
                else:
                    self.record(name, "disk-lag", seconds, f"s after cold-small until its {done} entries were on disk")
                # The remount rows measure the disk cache: let the queued writes finish first.
                waited, entries = wait_for_disk_entries(mount, len(rels) + len(self.large), self.timeout)
                if entries < len(rels) + len(self.large):
                    self.results.note(name, "remount-small", f"only {entries} entries on disk")
            mount.unmount()
            mount = system.mount(url, cache=mount.cache)
            small = [mount.path(r) for r in rels]
            large = [mount.path(r) for r in self.large]
            offset = self.origin.log_offset()
            self.timed_read(name, "remount-small", small, rels, self.small_buffers, SMALL_READERS, "files")
            self.timed_read(name, "remount-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes")
            refetched = [r for r in self.origin.requests_since(offset)
                         if r[0] == "GET" and not r[1].endswith("/") and r[1].count("/") > 1]
            self.record(name, "remount-gets", len(refetched), "origin GETs of files during the remount reads")
            rss = max(rss, mount.sample_rss())
            mount.unmount()
            self.record(name, "rss", rss, "MiB (VmHWM)")
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()

    def run_cold_small_only(self, system):
        for workload, url in (("cold-small", self.origin.url), ("cold-small@20ms", self.delay and self.delay.url)):
            if not url:
                continue
            mount = system.mount(url)
            try:
                small = [mount.path(r) for r in self.small]
                if self.timed_read(system.name, workload, small, self.small, self.small_buffers, SMALL_READERS,
                                   "files", mount.abort, cap=self.cap) is not None:
                    mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()

    def run_dedup(self, system, url):
        name = system.name
        mount = system.mount(url)
        try:
            path = mount.path(self.dedup_rel)
            offset = self.origin.log_offset()
            try:
                elapsed, _ = read_all([path] * DEDUP_READERS, [self.manifest[self.dedup_rel]] * DEDUP_READERS,
                                      self.dedup_buffers, DEDUP_READERS, self.timeout)
            except ReadTimeout as error:
                mount.abort()
                join_stragglers(error)
                self.results.add(name, "dedup-wall", None)
                self.results.note(name, "dedup-wall", f"timed out (> {self.timeout} s)")
                return
            except ReadErrors as error:
                self.read_failed(name, "dedup-wall", error, mount.abort)
                return
            time.sleep(0.3)  # let the origin finish writing its log
            requests = [r for r in self.origin.requests_since(offset) if r[1] == "/" + self.dedup_rel]
            gets = [r for r in requests if r[0] == "GET"]
            size = self.manifest[self.dedup_rel][0]
            self.results.add(name, "dedup-wall", elapsed * 1000)
            self.results.add(name, "dedup-gets", len(gets))
            self.results.add(name, "dedup-bytes", sum(r[3] for r in gets) / size)
            heads = len(requests) - len(gets)
            if heads:
                self.results.note(name, "dedup-gets", f"+{heads} HEAD")
            log(f"{name:9} {'dedup':16} {elapsed * 1000:10.1f} ms, {len(gets)} GETs, "
                f"{sum(r[3] for r in gets) / size:.2f}× the bytes")
            mount.unmount()
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()

    def run_first_bytes(self, system, url, workload):
        name = system.name
        mount = system.mount(url)
        try:
            result = {}

            def go():
                try:
                    result["t"] = read_first_bytes(mount.path(self.throttled_rel), self.throttled_prefix)
                except Exception as error:  # reported below
                    result["e"] = error

            thread = threading.Thread(target=go, daemon=True)
            thread.start()
            thread.join(self.timeout)
            if thread.is_alive():
                mount.abort()
                thread.join(30)
                self.results.add(name, workload, None)
                self.results.note(name, workload, f"timed out (> {self.timeout} s)")
                return
            if "e" in result:
                if isinstance(result["e"], BenchFailure):
                    raise result["e"]
                self.read_failed(name, workload, ReadErrors(str(result["e"])), mount.abort)
                return
            self.record(name, workload, result["t"] * 1000, "ms")
            mount.unmount()
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()

    def run_delayed(self, system):
        name = system.name
        url = self.delay.url
        for workload, rels, buffers, threads, unit, cap in (
                ("cold-small@20ms", self.small, self.small_buffers, SMALL_READERS, "files", self.cap),
                ("cold-large@20ms", self.large, self.large_buffers, LARGE_READERS, "bytes", None)):
            mount = system.mount(url)
            try:
                if self.timed_read(name, workload, [mount.path(r) for r in rels], rels, buffers, threads, unit,
                                   mount.abort, cap=cap) is not None:
                    mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()
        self.run_first_bytes(system, url, "first-64k@20ms")

    # -- restart with many cached entries (imgfs) -----------------------------------------------------------------
    def run_restart(self, count):
        """Creates `count` disk-cache entries by reading distinct URLs (`/small/<icon>?n=<i>`) through imgfs with its
        cache on a tmpfs (imgfs fsyncs every entry on one serial queue: on this disk that is ~250 entries/s, 100,000
        would take minutes), waits until all are on disk, and restarts on that cache: once from the tmpfs, and once
        from a copy on the root file system (ext4) after drop_caches."""
        system = next((s for s in self.systems if s.name == "imgfs"), None)
        if system is None or count <= 0:
            return
        url = self.origin.url
        rels = [f"{self.small[i % len(self.small)]}?n={i}" for i in range(count)]
        space = os.path.join(self.work, "restart-tmpfs")
        os.makedirs(space)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g,mode=0700", "imgfs-bench-restart", space], check=True)
        self.owned.add_mount(space)
        cache = os.path.join(space, "cache")
        log(f"imgfs restart: creating {count} cache entries by reading through imgfs (cache on tmpfs)")
        mount = system.mount(url, cache=cache)
        try:
            batch = len(self.small)
            start = time.perf_counter()
            for first in range(0, count, batch):
                chunk = rels[first:first + batch]
                read_all([mount.path(r) for r in chunk], self.expected([r.split("?")[0] for r in chunk]),
                         self.small_buffers, SMALL_READERS, self.timeout)
            fill = time.perf_counter() - start
            waited, entries = wait_for_disk_entries(mount, count, 300)
            log(f"imgfs restart: read {count} URLs in {fill:.1f} s ({count / fill:.0f} files/s); {entries} disk "
                f"entries {waited:.1f} s later")
            self.results.note("imgfs", "restart", f"{count} URLs read in {fill:.0f} s, {entries} disk entries")
            mount.unmount()
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()
        copy = os.path.join(self.work, "cache", "restart-ext4")
        start = time.perf_counter()
        subprocess.run(["cp", "-a", cache, copy], check=True)
        log(f"imgfs restart: copied the cache to ext4 in {time.perf_counter() - start:.1f} s")
        probes = [rels[(i * 7919) % count] for i in range(100)]
        for workload, directory, drop in (("restart-tmpfs", cache, False), ("restart", copy, True)):
            if drop:
                drop_caches()
            offset = self.origin.log_offset()
            start = time.perf_counter()
            mount = system.mount(url, cache=directory)
            try:
                mounted = time.perf_counter() - start
                served = None
                for probe in probes:
                    with open(mount.path(probe), "rb") as f:
                        data = f.read()
                    if hashlib.sha256(data).hexdigest() != self.manifest[probe.split("?")[0]][1]:
                        raise BenchFailure("imgfs restart: a cached image differs from the original")
                    if served is None:
                        served = time.perf_counter() - start
                hundred = time.perf_counter() - start
                gets = [r for r in self.origin.requests_since(offset) if r[0] == "GET"]
                self.results.add("imgfs", workload, served)
                where = "ext4 after drop_caches" if drop else "tmpfs"
                self.results.note("imgfs", workload, f"{where}: mounted {mounted * 1000:.0f} ms, first read "
                                                     f"{served * 1000:.0f} ms, 100 reads {hundred * 1000:.0f} ms, "
                                                     f"{len(gets)} origin GETs")
                log(f"imgfs {workload}: mounted {mounted:.3f} s, first read {served:.3f} s, 100 reads {hundred:.3f} s,"
                    f" {len(gets)} GETs")
                mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()
        shutil.rmtree(copy)

    # -- the whole run --------------------------------------------------------------------------------------------
    def run(self):
        self.started = time.time()
        self.load_before = os.getloadavg()
        self.loads = []
        self.foreign = []  # CPU seconds other user-space processes used during each repetition
        self.setup()
        for rep in range(self.reps):
            self.loads.append(os.getloadavg()[0])
            log(f"repetition {rep + 1} of {self.reps} (load average {self.loads[-1]:.2f}, this run's threads included)")
            before = cpu_snapshot()
            self.run_limits()
            for system in self.systems:
                self.run_system(system)
            after = cpu_snapshot()
            others = (after[0] - before[0]) - (after[1] - before[1]) - (after[2] - before[2])
            self.foreign.append(max(0.0, others))
            log(f"repetition {rep + 1}: other processes used about {self.foreign[-1]:.1f} CPU seconds")
        self.restart_entries = 0 if self.args.no_restart else (self.args.restart_entries or
                                                               (5_000 if self.quick else 100_000))
        self.run_restart(self.restart_entries)
        self.finished = time.time()


# ----------------------------------------------------------------------------------------------------------------
# The report

# (key, label, unit, better, limit label)
WORKLOADS = [
    ("cold-small", f"cold-small: {SMALL_READERS} readers, empty caches", "files/s", "higher", "curl"),
    ("cold-large", f"cold-large: {LARGE_READERS} readers, empty caches", "MB/s", "higher", "curl"),
    ("warm-small-1st", "warm-small: again, at once (first pass)", "files/s", "higher", "tmpfs"),
    ("warm-small", "warm-small: passes 2–5 (median)", "files/s", "higher", "tmpfs"),
    ("warm-large-1st", "warm-large: again, at once (first pass)", "MB/s", "higher", "tmpfs"),
    ("warm-large", "warm-large: passes 2–5 (median)", "MB/s", "higher", "tmpfs"),
    ("dropped-small", "small after drop_caches", "files/s", "higher", "tmpfs"),
    ("dropped-large", "large after drop_caches", "MB/s", "higher", "tmpfs"),
    ("remount-small", "small after remount", "files/s", "higher", "tmpfs"),
    ("remount-large", "large after remount", "MB/s", "higher", "tmpfs"),
    ("remount-gets", "origin GETs of files during the remount reads", "GETs", "lower", ""),
    ("disk-lag", "imgfs: time after cold-small until its entries were on disk", "s", "lower", ""),
    ("ls-l", "`ls -l` of the cached small files", "ms", "lower", "tmpfs"),
    ("stat", "`stat` of the cached small files (one thread)", "ms", "lower", "tmpfs"),
    ("dedup-wall", f"dedup: {DEDUP_READERS} readers of a cold 16 MB file", "ms", "lower", "curl, one fetch"),
    ("dedup-tmpfs", "dedup: the same 32 readers on tmpfs (copying floor)", "ms", "lower", ""),
    ("dedup-gets", "dedup: origin GETs", "GETs", "exact", "curl"),
    ("dedup-bytes", "dedup: origin bytes / file size", "×", "exact", "curl"),
    ("first-64k", f"first 64 KiB of a cold 8 MB file (nginx limit_rate {THROTTLE_RATE})", "ms", "lower", "curl"),
    ("rss", "daemon peak RSS (VmHWM)", "MiB", "lower", ""),
    ("cold-small@20ms", "cold-small, 20 ms round trip", "files/s", "higher", "curl"),
    ("cold-large@20ms", "cold-large, 20 ms round trip", "MB/s", "higher", "curl"),
    ("first-64k@20ms", "first 64 KiB, 20 ms round trip", "ms", "lower", "curl"),
    ("restart", "restart with N cached entries (ext4, after drop_caches): first read served", "s", "lower", ""),
    ("restart-tmpfs", "restart with N cached entries (tmpfs): first read served", "s", "lower", ""),
]


def fmt(value):
    if value is None:
        return "–"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def summarize(values):
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


SHORT_NOTE = 40


def cell(results, system, key):
    s = summarize(results.get(system, key))
    notes = [n for n in results.notes.get((system, key), []) if len(n) <= SHORT_NOTE]
    if s is None:
        return "; ".join(notes) if notes else "–"
    median, low, high = s
    text = fmt(median)
    if len(results.get(system, key)) > 1 and (low != high):
        text += f" ({fmt(low)}–{fmt(high)})"
    if notes:
        text += " [" + "; ".join(notes) + "]"
    return text


def ratio(results, system, key):
    s = summarize(results.get(system, key))
    limit = summarize(results.get("limit", key))
    if s is None or limit is None or limit[0] == 0:
        return None
    return s[0] / limit[0]


def report(bench):
    results = bench.results
    systems = ["limit"] + [s.name for s in bench.systems]
    keys = [w for w in WORKLOADS if any(results.get(s, w[0]) or results.notes.get((s, w[0])) for s in systems)]
    lines = []
    header = ["workload", "unit", "limit"] + [s.label or s.name for s in bench.systems]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for key, label, unit, better, limit_label in keys:
        limit_text = cell(results, "limit", key)
        if limit_label and limit_text != "–":
            limit_text = f"{limit_text} ({limit_label})"
        label = label.replace("N cached", f"{bench.restart_entries:,} cached")
        row = [label, unit, limit_text] + [cell(results, s.name, key) for s in bench.systems]
        lines.append("| " + " | ".join(row) + " |")
    footnotes = [f"- {system}, {label.replace('N cached', f'{bench.restart_entries:,} cached')}: {note}"
                 for key, label, *_ in keys for system in systems
                 for note in results.notes.get((system, key), []) if len(note) > SHORT_NOTE]
    if footnotes:
        lines += [""] + footnotes
    table = "\n".join(lines)

    lines = ["| workload | better | " + " | ".join(s.label or s.name for s in bench.systems) + " |",
             "|" + "---|" * (2 + len(bench.systems))]
    for key, label, unit, better, limit_label in keys:
        if not limit_label or better == "exact" or key == "rss":
            continue
        row = [f"{key} (÷ {limit_label})", better]
        for s in bench.systems:
            r = ratio(results, s.name, key)
            row.append("–" if r is None else f"{r:.2f}×")
        lines.append("| " + " | ".join(row) + " |")
    ratios = "\n".join(lines)
    targets = target_table(bench)
    return table, ratios, targets


def target_table(bench):
    results = bench.results

    def med(system, key):
        s = summarize(results.get(system, key))
        return None if s is None else s[0]

    rows = []

    def at_least(key, factor, limit_name):
        value, limit = med("imgfs", key), med("limit", key)
        if value is None or limit is None:
            rows.append((key, f"≥ {factor}× {limit_name}", "–", "not measured"))
            return
        r = value / limit
        rows.append((key, f"≥ {factor}× {limit_name}", f"{r:.2f}× ({fmt(value)} vs {fmt(limit)})",
                     "met" if r >= factor else "**missed**"))

    at_least("cold-small", 0.9, "curl")
    at_least("cold-large", 0.9, "curl")
    at_least("warm-large-1st", 0.9, "tmpfs")
    at_least("warm-large", 0.9, "tmpfs")
    at_least("warm-small-1st", 0.5, "tmpfs")
    at_least("warm-small", 0.5, "tmpfs")
    value, limit = med("imgfs", "dropped-large"), med("limit", "warm-large")
    if value is not None and limit:
        rows.append(("dropped-large", "≥ 0.5× tmpfs", f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)})",
                     "met" if value / limit >= 0.5 else "**missed**"))
    gets, nbytes = results.get("imgfs", "dedup-gets"), results.get("imgfs", "dedup-bytes")
    if gets:
        ok = all(g == 1 for g in gets) and all(abs(b - 1.0) < 1e-9 for b in nbytes)
        rows.append(("dedup GETs, bytes", "exactly 1 GET, 1× bytes",
                     f"GETs {sorted(set(gets))}, bytes {', '.join(f'{b:.2f}×' for b in sorted(set(nbytes)))}",
                     "met" if ok else "**missed**"))
    value, limit = med("imgfs", "dedup-wall"), med("limit", "dedup-wall")
    if value is not None and limit:
        rows.append(("dedup wall", "≤ 1.2× one curl fetch",
                     f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)} ms)",
                     "met" if value <= 1.2 * limit else "**missed**"))
    for key in ("first-64k", "first-64k@20ms"):
        value, limit = med("imgfs", key), med("limit", key)
        if value is not None and limit:
            rows.append((key, "≤ 1.2× curl + 5 ms", f"{fmt(value)} ms vs {fmt(1.2 * limit + 5)} ms allowed",
                         "met" if value <= 1.2 * limit + 5 else "**missed**"))
    value, limit = med("imgfs", "ls-l"), med("limit", "ls-l")
    if value is not None and limit:
        rows.append(("ls -l", "≤ 2× tmpfs", f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)} ms)",
                     "met" if value <= 2 * limit else "**missed**"))
    value = med("imgfs", "rss")
    if value is not None:
        rows.append(("peak RSS", f"≤ {MEMORY_BUDGET_MIB} + 40 MiB", f"{fmt(value)} MiB",
                     "met" if value <= MEMORY_BUDGET_MIB + 40 else "**missed**"))
    value = med("imgfs", "restart")
    entries = f"{bench.restart_entries:,}" if bench.restart_entries else "100,000"
    if value is not None:
        rows.append((f"restart, {entries} entries", "mounted and serving ≤ 2 s", f"{value:.2f} s (ext4, cold)",
                     "met" if value <= 2 else "**missed**"))
    else:
        rows.append((f"restart, {entries} entries", "mounted and serving ≤ 2 s", "–", "not run"))
    lines = ["| target | goal | imgfs | |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def versions(bench):
    imgfs_commit = run_out(["git", "-C", os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "describe",
                            "--always", "--dirty"])
    items = [
        ("imgfs", f"{run_out([bench.args.imgfs, '--version'])} (git {imgfs_commit}, release build)"),
        ("httpdirfs", run_out(["dpkg-query", "-W", "-f=${Version}", "httpdirfs"])),
        ("rclone", run_out(["rclone", "version"]).splitlines()[0] if run_out(["rclone", "version"]) else "?"),
        ("nginx", subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()),
        ("curl", run_out(["curl", "--version"]).splitlines()[0]),
        ("libfuse3", run_out(["pkg-config", "--modversion", "fuse3"])),
        ("python", platform.python_version()),
        ("kernel", platform.release()),
        ("CPU", f"{cpu_model()}, {os.cpu_count()} cores, "
                f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM"),
    ]
    return "\n".join(f"- {k}: {v}" for k, v in items)


def write_results(bench, table, ratios, targets):
    load = bench.load_before
    started = datetime.datetime.fromtimestamp(bench.started)
    quiet = "quiet" if load[0] < 0.5 else f"**not quiet** (1-minute load {load[0]:.2f} ≥ 0.5)"
    text = [f"# imgfs benchmark, {started:%Y-%m-%d %H:%M}", "",
            f"{'Quick run (--quick)' if bench.quick else 'Full run'}: {bench.reps} repetition(s), median (min–max); "
            f"took {bench.finished - bench.started:.0f} s. Load average before the run: "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({quiet}); 1-minute load at the start of each repetition: "
            f"{', '.join(f'{x:.2f}' for x in bench.loads)} (this run's own threads count too); CPU seconds other "
            f"user-space processes used during each repetition: {', '.join(f'{x:.1f}' for x in bench.foreign)}.", "",
            f"Corpus: {bench.corpus_text}.", "",
            table, "", "Ratios (median ÷ median of the limit):", "", ratios, "", "imgfs targets:", "", targets, "",
            "## Versions", "", versions(bench), "", "## Commands", ""]
    for name, command in bench.commands.items():
        text.append(f"- {name}: `{command}`")
    if bench.results.errors:
        text[text.index("## Versions"):text.index("## Versions")] = (
            ["## Errors", ""] + [f"- {e}" for e in bench.results.errors] + [""])
    text += ["- drop caches: `sync; echo 3 > /proc/sys/vm/drop_caches`",
             f"- delay line (20 ms variant): `{' '.join(bench.delay.command) if bench.delay else 'not run'}`",
             "- readers: `mount-scripts/bench.py` read_all(): os.open + os.readv into a pre-allocated buffer until "
             "EOF, N threads taking the next file; sha256 checked after the clock stops", "",
             "nginx configuration:", "", "```nginx", bench.origin.conf.rstrip(), "```", ""]
    os.makedirs(bench.args.results, exist_ok=True)
    path = os.path.join(bench.args.results, f"{started:%Y-%m-%d-%H%M%S}{'-quick' if bench.quick else ''}.md")
    with open(path, "w") as f:
        f.write("\n".join(text))
    with open(os.path.join(bench.work, "results.json"), "w") as f:
        json.dump({f"{s}|{w}": v for (s, w), v in bench.results.values.items()}, f)
    shutil.copyfile(os.path.join(bench.work, "results.json"), path[:-3] + ".json")
    if bench.results.errors:
        shutil.copytree(os.path.join(bench.work, "logs"), path[:-3] + "-logs")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, a smaller corpus (development)")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (default 3, 1 with --quick)")
    parser.add_argument("--workdir", help="an empty scratch directory this run owns (made by mount-scripts/bench)")
    parser.add_argument("--imgfs", help="the imgfs binary (release build)")
    parser.add_argument("--results", help="where to write the results file")
    parser.add_argument("--systems", default="imgfs,imgfs-6,httpdirfs,rclone")
    parser.add_argument("--no-delay", action="store_true", help="skip the 20 ms round-trip variant")
    parser.add_argument("--no-restart", action="store_true", help="skip the restart with 100,000 cached entries")
    parser.add_argument("--restart-entries", type=int, default=0)
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch directory (logs, caches)")
    parser.add_argument("--delay-line", nargs=3, metavar=("LISTEN_PORT", "UPSTREAM_PORT", "ONE_WAY_SECONDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.delay_line:
        listen, upstream, one_way = args.delay_line
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        asyncio.run(delay_line(int(listen), int(upstream), float(one_way)))
        return 0
    if not (args.workdir and args.imgfs and args.results):
        parser.error("--workdir, --imgfs and --results are required (run mount-scripts/bench)")

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    bench = Bench(args)
    if args.keep_work:
        open(os.path.join(args.workdir, "keep"), "w").close()
    try:
        bench.run()
        table, ratios, targets = report(bench)
        path = write_results(bench, table, ratios, targets)
        print(table)
        print()
        print("Ratios (median ÷ median of the limit):\n")
        print(ratios)
        print()
        print("imgfs targets:\n")
        print(targets)
        print(f"\nresults: {path}")
        return 0
    except BenchFailure as error:
        log(f"FAILED: {error}")
        return 1
    except KeyboardInterrupt as error:
        log(f"interrupted ({error}); cleaning up")
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # let the cleanup finish
        if getattr(bench, "origin", None):
            bench.origin.stop()
        bench.owned.cleanup()


if __name__ == "__main__":
    sys.exit(main())
