"""The file systems compared: how each is mounted and where its files are."""
import itertools
import os
import shlex
import signal
import subprocess
import time
import urllib.parse

from .before import adapted
from .settings import MEMORY_BUDGET
from .processes import BenchFailure, MountFailure, is_mounted, unmount, vmhwm_mib


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
    command_name = None  # how its command line is listed in the results, when not the name
    directory = None  # the prefix of its mount points, caches and logs, when not the name

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

    def adapt(self, command):
        """The command line as this system's binary accepts it."""
        return command

    def mount(self, origin_url, cache=None):
        n = next(self.counter)
        slug = self.directory or self.name
        mountpoint = os.path.join(self.bench.work, "mnt", f"{slug}-{n}")
        os.makedirs(mountpoint)
        if cache is None:
            cache = os.path.join(self.bench.work, "cache", f"{slug}-{n}")
            os.makedirs(cache)
        command = self.adapt(self.command(origin_url, mountpoint, cache))
        self.bench.commands.setdefault(self.command_name or self.name, " ".join(shlex.quote(c) for c in command))
        logfile = open(os.path.join(self.bench.work, "logs", f"{slug}-{n}.log"), "w")
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
                "--disk-limit", "4G", "--tune", "max-transfers=16",
                "--tune", f"max-transfers-per-host={self.per_host}"]

    def adapt(self, command):
        """For a build from before --tune (bench --before), the same options in its older flags."""
        return adapted(self.binary, command)

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


class ImgfsDefaults(Imgfs):
    """imgfs with its default options (transfer limits, memory budget; 6 transfers per host) and the given options
    (the HTTPS variant's certificate trust), for the HTTPS + HTTP/2 rows."""

    command_name = "imgfs (default options, HTTPS variant)"
    directory = "imgfs-defaults"

    def __init__(self, bench, binary, options):
        super().__init__(bench, binary)
        self.options = list(options)

    def command(self, origin_url, mountpoint, cache):
        return [self.binary, "mount", mountpoint, "-f", "--cache-dir", cache, *self.options]
