"""The workloads: what is read through each system, and the limits they are compared with."""
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import threading
import time

from .settings import (DEDUP_READERS, FIRST_BYTES, ICON_PACKAGES, LARGE_IMAGES, LARGE_READERS, MB, QUICK_LARGE,
                       RESTART_REPEATS, SMALL_READERS, WARM_PASSES)
from .processes import BenchFailure, MountFailure, Owned, cpu_snapshot, drop_caches, is_mounted, log
from .corpus import build_corpus
from .limits import Limits
from .origin import DelayLine, Origin
from .tls import Certificates
from .results import Results
from .reader import (
    Buffers, DiskLag, ReadErrors, ReadTimeout, join_stragglers, read_all, read_first_bytes, time_ls, time_stat,
    wait_for_disk_entries)
from .lists import run_lists
from .loader import Loader
from .variants import Variants
from .systems import Httpdirfs, Imgfs, Imgfs6, Rclone
from .before import grouped, twin
from .floor import FuseFloor


class Bench(Limits):
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
        # Whether curl's cold 20 ms passes are still to run in this repetition (run_delayed).
        self.delay_limits_due = True

    # -- set-up ---------------------------------------------------------------------------------------------------
    def setup(self):
        tmpfs = os.path.join(self.work, "tmpfs")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3g,mode=0755", "imgfs-bench", tmpfs], check=True)
        self.owned.add_mount(tmpfs)
        self.tmpfs = tmpfs
        self.scratch = os.path.join(tmpfs, "scratch")
        os.makedirs(self.scratch)
        self.certificates = Certificates(os.path.join(self.work, "tls"), ["127.0.0.1"])
        self.fuse_floor = FuseFloor(self)
        small = 300 if self.quick else 2000
        self.load_corpus("corpus", small, QUICK_LARGE if self.quick else LARGE_IMAGES)
        self.origin = Origin(self.owned, self.work, self.corpus, tls=(self.certificates.cert, self.certificates.key))
        self.delay = None if self.args.no_delay else DelayLine(self.owned, self.work, self.origin.port)
        self.warm_origin([self.origin.url] + ([self.delay.url] if self.delay else []))
        imgfs = Imgfs(self, self.args.imgfs)
        self.systems = [imgfs, *self.before_twins(imgfs), Imgfs6(self, self.args.imgfs), Httpdirfs(self),
                        Rclone(self)]
        wanted = self.args.systems.split(",")
        self.systems = [s for s in self.systems if getattr(s, "original", s).name in wanted]

    def before_twins(self, system):
        """[system's twin running the --before build] (benchkit/before.py), or [] without --before."""
        return [twin(system, self.args.before_imgfs, self.args.before_commit)] if self.args.before else []

    def is_imgfs(self, system):
        """Whether system is imgfs (the current build or the --before one) with the benchmark's options."""
        return getattr(system, "original", system).name == "imgfs" and system.only is None

    def load_corpus(self, name, small_count, large, icon_range=(512, 50 * 1024)):
        """Builds a corpus on the tmpfs (benchkit/corpus.py) and makes it the one the workloads read."""
        self.corpus = os.path.join(self.tmpfs, name)
        log(f"building the corpus {name} ({small_count} icons of {icon_range[0]}–{icon_range[1]} B, {len(large)} "
            "large images) on tmpfs")
        self.manifest = build_corpus(self.corpus, small_count, large, icon_range)
        self.small = sorted(r for r in self.manifest if r.startswith("small/"))
        self.large = sorted(r for r in self.manifest if r.startswith("large/"))
        self.dedup_rel = "dedup/elephants-16mb.jpg"
        self.throttled_rel = "throttled/elephants-8mb.jpg"
        with open(os.path.join(self.corpus, self.throttled_rel), "rb") as f:
            self.throttled_prefix = f.read(FIRST_BYTES)
        self.small_buffers = Buffers([self.manifest[r][0] for r in self.small])
        self.large_buffers = Buffers([self.manifest[r][0] for r in self.large])
        self.dedup_buffers = Buffers([self.manifest[self.dedup_rel][0]] * DEDUP_READERS)
        small_sizes = [self.manifest[r][0] for r in self.small]
        large_sizes = [self.manifest[r][0] for r in self.large]
        self.corpus_text = (f"{len(self.small)} PNG icons ({sum(small_sizes) / MB:.1f} MB, "
                            f"{min(small_sizes)}–{max(small_sizes)} B, mean {statistics.mean(small_sizes):.0f} B, "
                            f"median {statistics.median(small_sizes):.0f} B) from {', '.join(ICON_PACKAGES)}; "
                            f"{len(self.large)} large images ({sum(large_sizes) / MB:.1f} MB, "
                            f"{min(large_sizes) / MB:.1f}–{max(large_sizes) / MB:.1f} MB, JPEG/PNG/WebP) from "
                            f"{', '.join(sorted({p for _, p, _ in large}))}")
        log(self.corpus_text)

    def warm_origin(self, urls, options=()):
        """One untimed pass through each origin URL, so that the first repetition is not the only one that pays for
        nginx's first opens of the files."""
        for url in urls:
            self.curl_many(url, self.small + self.large + [self.dedup_rel], SMALL_READERS, options=options)

    CONTEXT = ("corpus", "manifest", "small", "large", "throttled_prefix", "small_buffers", "large_buffers",
               "dedup_buffers", "corpus_text", "origin", "delay", "results", "systems")

    def context(self):
        """What a variant changes (corpus, origin, delay line, results, systems), to switch between variants."""
        return {name: getattr(self, name) for name in self.CONTEXT}

    def use(self, context):
        for name, value in context.items():
            setattr(self, name, value)

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
                cpu = []
                elapsed, done = read_all(paths, self.expected(rels), buffers, threads, self.timeout, cap, cpu)
                # While the clock ran: the checksums after it are not the system's work.
                self.last_cpu, self.last_idle = cpu[0].busy, cpu[0].idle_share
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

    # -- a file system --------------------------------------------------------------------------------------------
    def parts(self, system):
        """What run_systems runs of one system, in order: each part mounts afresh."""
        url = self.origin.url
        return [lambda: self.run_cold_small_only(system)] if system.only else [
            lambda: self.run_sequence(system),
            lambda: self.run_dedup(system, url),
            lambda: self.run_first_bytes(system, url, "first-64k")] + (
            [lambda: self.run_delayed(system)] if self.delay else [])

    def run_systems(self, systems):
        """Each part of each system (benchkit/before.grouped: imgfs and its --before build), the systems' same part
        back to back; a part that cannot mount is recorded and the next one runs."""
        for parts in zip(*(self.parts(system) for system in systems)):
            for system, part in zip(systems, parts):
                try:
                    part()
                except MountFailure as error:
                    log(f"{system.name}: {error}")
                    self.results.errors.append(f"{system.name}: {error}")

    def run_sequence(self, system, back_to_back=False):
        """cold-small, warm-small, ls -l, stat, cold-large, warm-large, drop_caches, both again, remount, both
        again: on one mount (and its cache after the remount). The warm passes between the two cold ones give the disk
        writer time, drop_caches syncs first, the remount waits until the disk cache holds every entry, then drops it.
        back_to_back: cold-large right after cold-small, then the warm rows, drop_caches without sync and the remount
        without waiting: no pause for background disk writes anywhere."""
        name = system.name
        url = self.origin.url
        # The FUSE floor's rows (benchkit/floor.py), beside the --before build's sequence too: the same pauses for both.
        floor = self.fuse_floor.rows() if self.is_imgfs(system) else None
        beside = floor if floor and not back_to_back else None
        mount = system.mount(url)
        try:
            if floor:
                floor.start()
            small = [mount.path(r) for r in self.small]
            large = [mount.path(r) for r in self.large]
            done = self.timed_read(name, "cold-small", small, self.small, self.small_buffers, SMALL_READERS, "files",
                                   mount.abort, cap=self.cap)
            if done is None:
                return
            self.record(name, "cold-small-cpu", self.last_cpu / done * 1e6, "µs of CPU per file")
            # Later small-file rows read what the cold pass read (all of it unless it hit the cap).
            rels = self.small[:done]
            small = small[:done]
            lag = DiskLag(mount, done) if self.is_imgfs(system) and not back_to_back else None
            if back_to_back and not self.cold_large(name, large, mount):
                return
            self.timed_read(name, "warm-small", small, rels, self.small_buffers, SMALL_READERS, "files",
                            passes=WARM_PASSES, split_first=True)
            if beside:
                beside.warm()
            ls_time, entries = time_ls(mount.listing_dir())
            self.record(name, "ls-l", ls_time * 1000, f"ms ({entries} entries)")
            self.results.note(name, "ls-l", f"{entries} entries")
            self.record(name, "stat", time_stat(small) * 1000, f"ms ({len(small)} files)")
            if len(small) != len(self.small):
                self.results.capped.setdefault((name, "stat"), []).append(len(small))
                counts = self.results.capped[(name, "stat")]
                span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
                self.results.notes[(name, "stat")] = [f"{span} files"]
            if not back_to_back and not self.cold_large(name, large, mount):
                return
            self.timed_read(name, "warm-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes",
                            passes=WARM_PASSES, split_first=True)
            if beside:
                beside.memfd_large()
            mount.sample_rss()
            drop_caches(sync=not back_to_back)
            if self.timed_read(name, "dropped-small", small, rels, self.small_buffers, SMALL_READERS,
                               "files") is not None:
                self.record(name, "dropped-small-cpu", self.last_cpu / len(small) * 1e6, "µs of CPU per file")
            if beside:
                beside.dropped()
            if self.timed_read(name, "dropped-large", large, self.large, self.large_buffers, LARGE_READERS,
                               "bytes") is not None:
                self.record(name, "dropped-large-cpu", self.last_cpu / self.large_mb() * 1e3, "ms of CPU per MB")
            if beside:
                beside.large()
            rss = mount.sample_rss()
            if lag:
                seconds = lag.result(self.timeout)
                if seconds is None:
                    self.results.add(name, "disk-lag", None)
                    self.results.note(name, "disk-lag", f"not all on disk after {self.timeout} s")
                else:
                    self.record(name, "disk-lag", seconds, f"s after cold-small until its {done} entries were on disk")
                    if lag.writer_cpu is not None:
                        self.record(name, "disk-write-cpu", lag.writer_cpu / done * 1e6,
                                    "µs of the disk writer's CPU per cold icon (after the clock)")
                # The remount rows measure the disk cache: let the queued writes finish first.
                waited, entries = wait_for_disk_entries(mount, len(rels) + len(self.large), self.timeout)
                if entries < len(rels) + len(self.large):
                    self.results.note(name, "remount-small", f"only {entries} entries on disk")
            mount.unmount()
            drop_caches(sync=not back_to_back)  # a remount reads its disk cache from the disk (floor: disk_floor)
            mount = system.mount(url, cache=mount.cache)
            small = [mount.path(r) for r in rels]
            large = [mount.path(r) for r in self.large]
            offset = self.origin.log_offset()
            self.timed_read(name, "remount-small", small, rels, self.small_buffers, SMALL_READERS, "files")
            if beside:
                beside.remount()
            self.timed_read(name, "remount-large", large, self.large, self.large_buffers, LARGE_READERS, "bytes")
            refetched = [r for r in self.origin.requests_since(offset)
                         if r[0] == "GET" and not r[1].endswith("/") and r[1].count("/") > 1]
            self.record(name, "remount-gets", len(refetched), "origin GETs of files during the remount reads")
            rss = max(rss, mount.sample_rss())
            mount.unmount()
            self.record(name, "rss", rss, "MiB (VmHWM)")
            if floor:
                floor.after_remount(mount.cache, rest=not beside)
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()
            if floor:
                floor.close()

    def large_mb(self):
        return sum(self.manifest[r][0] for r in self.large) / MB

    def cold_large(self, name, large, mount, suffix=""):
        """The cold-large row (key ends with suffix), with the machine's CPU per MB and idle share while its clock
        ran."""
        if self.timed_read(name, "cold-large" + suffix, large, self.large, self.large_buffers, LARGE_READERS, "bytes",
                           mount.abort) is None:
            return False
        self.record(name, "cold-large-cpu" + suffix, self.last_cpu / self.large_mb() * 1e3, "ms of CPU per MB")
        self.record(name, "cold-large-idle" + suffix, self.last_idle * 100, "% of the machine idle")
        return True

    def run_cold_small_only(self, system):
        for workload, url in (("cold-small", self.origin.url), ("cold-small@20ms", self.delay and self.delay.url)):
            if not url:
                continue
            if workload.endswith("@20ms"):
                self.delay_limits_beside(url)
            mount = system.mount(url)
            try:
                small = [mount.path(r) for r in self.small]
                done = self.timed_read(system.name, workload, small, self.small, self.small_buffers, SMALL_READERS,
                                       "files", mount.abort, cap=self.cap)
                if done is not None:
                    if workload == "cold-small":
                        self.record(system.name, "cold-small-cpu", self.last_cpu / done * 1e6, "µs of CPU per file")
                    mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()

    def run_dedup(self, system, url, suffix=""):
        """32 readers of the cold dedup file on a fresh mount: wall time, and the origin's GETs and bytes for it (keys
        end with `suffix`, "@20ms" through the delay line)."""
        name = system.name
        wall, gets_key, bytes_key = f"dedup-wall{suffix}", f"dedup-gets{suffix}", f"dedup-bytes{suffix}"
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
                self.results.add(name, wall, None)
                self.results.note(name, wall, f"timed out (> {self.timeout} s)")
                return
            except ReadErrors as error:
                self.read_failed(name, wall, error, mount.abort)
                return
            time.sleep(0.3)  # let the origin finish writing its log
            requests = [r for r in self.origin.requests_since(offset) if r[1] == "/" + self.dedup_rel]
            gets = [r for r in requests if r[0] == "GET"]
            size = self.manifest[self.dedup_rel][0]
            self.results.add(name, wall, elapsed * 1000)
            self.results.add(name, gets_key, len(gets))
            self.results.add(name, bytes_key, sum(r[3] for r in gets) / size)
            heads = len(requests) - len(gets)
            if heads:
                self.results.note(name, gets_key, f"+{heads} HEAD")
            log(f"{name:9} {'dedup' + suffix:16} {elapsed * 1000:10.1f} ms, {len(gets)} GETs, "
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
        url = self.delay.url
        self.delay_limits_beside(url)
        self.run_cold_each(system, url, "@20ms")
        self.run_first_bytes(system, url, "first-64k@20ms")
        self.run_dedup(system, url, suffix="@20ms")

    def delay_limits_beside(self, url):
        """delay_limits, once per repetition: right before the first system's 20 ms rows."""
        if self.delay_limits_due:
            self.delay_limits(url)
            self.delay_limits_due = False

    def delay_limits(self, url):
        """curl's cold 20 ms passes, run right before a system's 20 ms rows: on this VM a limit measured a minute
        earlier is not comparable (docs/PERFORMANCE.md), as for the floors. An untimed fetch of a few icons comes
        first: the sequence before ends with drop_caches, and a timed curl must not be the one that reads curl and
        its libraries back from the disk."""
        self.curl_many(url, self.small[:SMALL_READERS], SMALL_READERS, "null")
        self.cold_limits(url, "@20ms", cpu=False)

    def run_cold_each(self, system, url, suffix):
        """cold-small and cold-large (with its CPU per MB and idle share), each on a fresh mount of url (keys end
        with suffix)."""
        name = system.name
        for large in (False, True):
            mount = system.mount(url)
            try:
                if large:
                    done = self.cold_large(name, [mount.path(r) for r in self.large], mount, suffix)
                else:
                    done = self.timed_read(name, "cold-small" + suffix, [mount.path(r) for r in self.small],
                                           self.small, self.small_buffers, SMALL_READERS, "files", mount.abort,
                                           cap=self.cap) is not None
                if done:
                    mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()

    # -- restart with many cached entries (imgfs) -----------------------------------------------------------------
    def run_restart(self, count):
        """The restart rows (restart_with) of imgfs, then of its --before build, back to back."""
        systems = [s for s in self.systems if self.is_imgfs(s)]
        if not systems or count <= 0:
            return
        space = os.path.join(self.work, "restart-tmpfs")
        os.makedirs(space)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4g,mode=0700", "imgfs-bench-restart", space], check=True)
        self.owned.add_mount(space)
        for system in systems:
            self.restart_with(system, count, space)

    def restart_with(self, system, count, space):
        """Creates `count` disk-cache entries by reading distinct URLs (`/small/<icon>?n=<i>`) through imgfs with its
        cache on a tmpfs (`space`; imgfs fsyncs every entry on one serial queue: on this disk that is ~250 entries/s,
        100,000 would take minutes), waits until all are on disk, and restarts on that cache: once from the tmpfs, and
        once from a copy on the root file system (ext4) after drop_caches; each restart is timed RESTART_REPEATS times
        (the row's spread), ext4 after a drop_caches each time."""
        url = self.origin.url
        name = system.name
        rels = [f"{self.small[i % len(self.small)]}?n={i}" for i in range(count)]
        cache = os.path.join(space, f"cache-{system.directory or name}")
        log(f"{name} restart: creating {count} cache entries by reading through imgfs (cache on tmpfs)")
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
            log(f"{name} restart: read {count} URLs in {fill:.1f} s ({count / fill:.0f} files/s); {entries} disk "
                f"entries {waited:.1f} s later")
            self.results.note(name, "restart", f"{count} URLs read in {fill:.0f} s, {entries} disk entries")
            mount.unmount()
        finally:
            if is_mounted(mount.mountpoint):
                mount.abort()
        copy = os.path.join(self.work, "cache", f"restart-ext4-{system.directory or name}")
        start = time.perf_counter()
        subprocess.run(["cp", "-a", cache, copy], check=True)
        log(f"{name} restart: copied the cache to ext4 in {time.perf_counter() - start:.1f} s")
        probes = [rels[(i * 7919) % count] for i in range(100)]
        restarts = [("restart-tmpfs", cache, False), ("restart", copy, True)] * RESTART_REPEATS
        for workload, directory, drop in restarts:
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
                        raise BenchFailure(f"{name} restart: a cached image differs from the original")
                    if served is None:
                        served = time.perf_counter() - start
                hundred = time.perf_counter() - start
                gets = [r for r in self.origin.requests_since(offset) if r[0] == "GET"]
                self.results.add(name, workload, served)
                where = "ext4 after drop_caches" if drop else "tmpfs"
                self.results.note(name, workload, f"{where}: mounted {mounted * 1000:.0f} ms, first read "
                                                     f"{served * 1000:.0f} ms, 100 reads {hundred * 1000:.0f} ms, "
                                                     f"{len(gets)} origin GETs")
                log(f"{name} {workload}: mounted {mounted:.3f} s, first read {served:.3f} s, 100 reads {hundred:.3f} s,"
                    f" {len(gets)} GETs")
                mount.unmount()
            finally:
                if is_mounted(mount.mountpoint):
                    mount.abort()
        shutil.rmtree(copy)
        shutil.rmtree(cache)

    # -- the whole run --------------------------------------------------------------------------------------------
    def run(self):
        self.started = time.time()
        self.load_before = os.getloadavg()
        self.loads = []
        self.foreign = []  # CPU seconds other user-space processes used during each repetition
        self.variants = None
        self.setup()
        if self.args.lists or self.args.loader:
            loader = Loader(self) if self.args.loader else None
            for rep in range(self.reps):
                if self.args.lists:
                    run_lists(self, rep)
                if loader:
                    loader.run(rep)
            self.restart_entries = 0
            self.finished = time.time()
            return
        self.variants = Variants(self) if self.args.variants not in ("none", "loopback", "") else None
        for rep in range(self.reps):
            self.loads.append(os.getloadavg()[0])
            log(f"repetition {rep + 1} of {self.reps} (load average {self.loads[-1]:.2f}, this run's threads included)")
            before = cpu_snapshot()
            log("variant loopback")
            self.run_limits()
            self.delay_limits_due = True
            for systems in grouped(self.systems, rep):
                self.run_systems(systems)
            if self.variants and rep < self.variants.reps:
                self.variants.run_repetition(rep)
            after = cpu_snapshot()
            others = (after[0] - before[0]) - (after[1] - before[1]) - (after[2] - before[2])
            self.foreign.append(max(0.0, others))
            log(f"repetition {rep + 1}: other processes used about {self.foreign[-1]:.1f} CPU seconds")
        self.restart_entries = 0 if self.args.no_restart else (self.args.restart_entries or
                                                               (5_000 if self.quick else 100_000))
        self.run_restart(self.restart_entries)
        self.finished = time.time()
