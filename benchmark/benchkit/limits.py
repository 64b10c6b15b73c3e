"""The limits every row is compared with: curl (to /dev/null: the network limit; into files on tmpfs and then read:
the download-then-read alternative), and the same files on tmpfs (warm rows)."""
import os
import shutil
import signal
import subprocess
import time

from .settings import DEDUP_READERS, FIRST_BYTES, LARGE_READERS, MB, SMALL_READERS, WARM_PASSES
from .processes import BenchFailure, CpuClock
from .corpus import sha256_file
from .reader import read_all, time_ls, time_stat

# The systems under which the limits are recorded in Results.
LIMIT = "limit"  # cold rows: curl --parallel to /dev/null; warm rows: tmpfs
DOWNLOAD_THEN_READ = "dl-read"  # cold rows: curl --parallel into files on tmpfs, then the same readers over them


class Limits:
    """Mixed into Bench: the curl runs and the limit rows (Bench provides origin, corpus, manifest, results, …)."""

    def curl_many(self, origin_url, rels, parallel, sink="files", options=(), keep=False):
        """Fetches rels with one `curl --parallel --parallel-max parallel`; returns the wall time. sink "null": every
        body goes to /dev/null (then the status and size of each transfer are checked); "files": into files on the
        tmpfs (checked against the manifest, then deleted unless keep: then returns (time, [paths]). The machine's
        CPU while curl ran is left in last_cpu (busy seconds) and last_idle (idle share)."""
        out = os.path.join(self.scratch, "curl")
        os.makedirs(out, exist_ok=True)
        config = os.path.join(self.work, "curl.cfg")
        paths = [os.path.join(out, str(index)) for index in range(len(rels))]
        with open(config, "w") as f:
            for rel, path in zip(rels, paths):
                f.write(f'url = "{origin_url}/{rel}"\noutput = "{"/dev/null" if sink == "null" else path}"\n')
        command = ["curl", "--parallel", "--parallel-max", str(parallel), "--no-progress-meter", "--fail",
                   *options, "--write-out", "%{http_code} %{size_download}\\n", "--config", config]
        where = "/dev/null" if sink == "null" else "<tmpfs>/<n>"
        self.commands.setdefault(f"curl --parallel-max {parallel} {' '.join(options)} to {where}".replace("  ", " "),
                                 " ".join(command) + f"   # config: url = …/<file>, output = {where} per file")
        clock = CpuClock().start()
        start = time.perf_counter()
        result = subprocess.run(command, timeout=600, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        clock.stop()
        self.last_cpu, self.last_idle = clock.busy, clock.idle_share
        if result.returncode != 0:
            raise BenchFailure(f"curl failed: {result.stderr.decode(errors='replace')[:500]}")
        transfers = [line.split() for line in result.stdout.decode().splitlines() if line.strip()]
        expected = sum(self.manifest[rel][0] for rel in rels)
        if (len(transfers) != len(rels) or any(code != "200" for code, _ in transfers)
                or sum(int(size) for _, size in transfers) != expected):
            raise BenchFailure(f"curl: {len(transfers)} transfers, statuses {sorted({c for c, _ in transfers})}, "
                               f"{sum(int(s) for _, s in transfers)} bytes; expected {len(rels)} × 200, {expected}")
        if sink == "files" and not keep:
            for rel, path in zip(rels, paths):
                size, digest = self.manifest[rel]
                if os.path.getsize(path) != size or sha256_file(path) != digest:
                    raise BenchFailure(f"curl: {rel} differs from the original")
        if keep:
            return elapsed, paths
        shutil.rmtree(out)
        return elapsed

    def download_then_read(self, origin_url, rels, parallel, buffers, options=()):
        """What a user would do instead: curl the files into a tmpfs, then read them with the benchmark's readers
        (`parallel` threads); returns the two times added (each file's bytes are checked after the clocks). The
        machine's CPU of both clocks is left in last_cpu."""
        fetched, paths = self.curl_many(origin_url, rels, parallel, "files", options, keep=True)
        fetch_cpu, cpu = self.last_cpu, []
        read, _ = read_all(paths, self.expected(rels), buffers, parallel, self.timeout, cpu=cpu)
        self.last_cpu = fetch_cpu + cpu[0].busy
        shutil.rmtree(os.path.dirname(paths[0]))
        return fetched + read

    def cold_limits(self, url, suffix="", options=(), cpu=True):
        """The limits of cold-small and cold-large (keys end with suffix, e.g. "@20ms"): curl to /dev/null, with the
        machine's CPU per file and per MB and its idle share (cpu), and download-then-read."""
        n = len(self.small)
        large_mb = sum(self.manifest[r][0] for r in self.large) / MB
        elapsed = self.curl_many(url, self.small, SMALL_READERS, "null", options)
        self.record(LIMIT, "cold-small" + suffix, n / elapsed, "files/s (curl to /dev/null)")
        if cpu:
            self.record(LIMIT, "cold-small-cpu" + suffix, self.last_cpu / n * 1e6, "µs of CPU per file (curl)")
        elapsed = self.curl_many(url, self.large, LARGE_READERS, "null", options)
        self.record(LIMIT, "cold-large" + suffix, large_mb / elapsed, "MB/s (curl to /dev/null)")
        if cpu:
            self.record(LIMIT, "cold-large-cpu" + suffix, self.last_cpu / large_mb * 1e3, "ms of CPU per MB (curl)")
            self.record(LIMIT, "cold-large-idle" + suffix, self.last_idle * 100, "% idle (curl)")
        elapsed = self.download_then_read(url, self.small, SMALL_READERS, self.small_buffers, options)
        self.record(DOWNLOAD_THEN_READ, "cold-small" + suffix, n / elapsed, "files/s (curl into tmpfs, then read)")
        if cpu:
            self.record(DOWNLOAD_THEN_READ, "cold-small-cpu" + suffix, self.last_cpu / n * 1e6,
                        "µs of CPU per file (download-then-read)")
        elapsed = self.download_then_read(url, self.large, LARGE_READERS, self.large_buffers, options)
        self.record(DOWNLOAD_THEN_READ, "cold-large" + suffix, large_mb / elapsed, "MB/s (curl into tmpfs, then read)")
        if cpu:
            self.record(DOWNLOAD_THEN_READ, "cold-large-cpu" + suffix, self.last_cpu / large_mb * 1e3,
                        "ms of CPU per MB (download-then-read)")

    def warm_limits(self):
        """tmpfs is the limit of every warm row (drop_caches and remounts do not touch it), of `ls -l` and `stat`."""
        small_paths = [os.path.join(self.corpus, r) for r in self.small]
        large_paths = [os.path.join(self.corpus, r) for r in self.large]
        self.timed_read(LIMIT, "warm-small", small_paths, self.small, self.small_buffers, SMALL_READERS, "files",
                        passes=WARM_PASSES)
        self.timed_read(LIMIT, "warm-large", large_paths, self.large, self.large_buffers, LARGE_READERS, "bytes",
                        passes=WARM_PASSES)
        for kind in ("small", "large"):
            value = self.results.values[(LIMIT, f"warm-{kind}")][-1]
            for key in (f"warm-{kind}-1st", f"dropped-{kind}", f"remount-{kind}"):
                self.results.add(LIMIT, key, value)
        # The first-pass floor of warm-large: the same files just written into tmpfs, read once. Like the pages a
        # cold pass leaves in a page cache, they have been touched once; the second touch moves them to the kernel's
        # active list, which the tmpfs passes above (the corpus was read before) no longer pay.
        fresh = os.path.join(self.scratch, "fresh-large")
        os.makedirs(fresh)
        fresh_paths = [os.path.join(fresh, str(index)) for index in range(len(large_paths))]
        for source, target in zip(large_paths, fresh_paths):
            shutil.copyfile(source, target)
        self.timed_read(LIMIT, "warm-large-fresh", fresh_paths, self.large, self.large_buffers, LARGE_READERS,
                        "bytes")
        shutil.rmtree(fresh)
        self.record(LIMIT, "ls-l", time_ls(os.path.join(self.corpus, "small"))[0] * 1000, "ms (tmpfs)")
        self.record(LIMIT, "stat", time_stat(small_paths) * 1000, "ms (tmpfs)")
        return small_paths, large_paths

    def run_limits(self):
        url = self.origin.url
        self.cold_limits(url)
        self.warm_limits()
        self.record(LIMIT, "dedup-wall", self.curl_one(url, self.dedup_rel) * 1000, "ms (curl, one fetch)")
        # The copying floor of the dedup row: the same 32 readers of the same file on tmpfs.
        elapsed, _ = read_all([os.path.join(self.corpus, self.dedup_rel)] * DEDUP_READERS,
                              [self.manifest[self.dedup_rel]] * DEDUP_READERS, self.dedup_buffers, DEDUP_READERS,
                              self.timeout)
        self.record(LIMIT, "dedup-tmpfs", elapsed * 1000, "ms (32 readers of the file on tmpfs)")
        self.results.add(LIMIT, "dedup-gets", 1)
        self.results.add(LIMIT, "dedup-bytes", 1.0)
        self.record(LIMIT, "first-64k", self.curl_first_bytes(url, self.throttled_rel) * 1000, "ms (curl)")
        if self.delay:
            # The cold 20 ms limits run right before the first system's 20 ms rows (run_delayed), not here.
            durl = self.delay.url
            self.record(LIMIT, "first-64k@20ms", self.curl_first_bytes(durl, self.throttled_rel) * 1000, "ms (curl)")
            self.record(LIMIT, "dedup-wall@20ms", self.curl_one(durl, self.dedup_rel) * 1000, "ms (curl, one fetch)")
            self.results.add(LIMIT, "dedup-gets@20ms", 1)
            self.results.add(LIMIT, "dedup-bytes@20ms", 1.0)

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
