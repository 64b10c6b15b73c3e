"""Logging, failures, and the processes and mounts a run owns (so that everything it starts is stopped)."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time


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
        self.netns = []  # network namespaces this run created (`ip netns add`)
        self.links = []  # host-side veth ends this run created (deleting one deletes its peer)
        self.lock = threading.Lock()
        self._write()

    def _write(self):
        lines = ([f"pid {pid}" for pid in self.pids] + [f"mount {m}" for m in self.mounts]
                 + [f"link {name}" for name in self.links] + [f"netns {name}" for name in self.netns])
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

    def add_netns(self, name):
        with self.lock:
            self.netns.append(name)
            self._write()

    def add_link(self, name):
        with self.lock:
            self.links.append(name)
            self._write()

    def remove_network(self):
        """Deletes the veth pairs and network namespaces this run created (their processes are stopped first)."""
        for name in list(self.links):
            subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with self.lock:
                self.links.remove(name)
                self._write()
        for name in list(self.netns):
            subprocess.run(["ip", "netns", "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with self.lock:
                self.netns.remove(name)
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
        self.remove_network()


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


def drop_caches(sync=True):
    """Drops the page cache; without sync, dirty pages (writes still pending) stay and nothing waits for them."""
    if sync:
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


def machine_busy_seconds():
    """CPU seconds all CPUs spent on anything but idling and waiting for I/O, since boot (from /proc/stat)."""
    return machine_cpu_seconds()[0]


def machine_cpu_seconds():
    """(busy, total) CPU seconds of all CPUs since boot, from /proc/stat's first line: busy is everything but idle and
    iowait (user, nice, system, irq, softirq, steal: all processes and the kernel); total includes idle and iowait."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    total = sum(fields[:8])
    return (total - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK"), total / os.sysconf("SC_CLK_TCK")


class CpuClock:
    """The machine's CPU while a clock runs: start() and stop() around the timed work; then busy (CPU seconds of all
    processes and the kernel) and idle_share (the fraction of all CPUs' time spent idle or waiting for I/O)."""

    def start(self):
        self.before = machine_cpu_seconds()
        return self

    def stop(self):
        after = machine_cpu_seconds()
        self.busy = after[0] - self.before[0]
        total = after[1] - self.before[1]
        self.idle_share = max(0.0, (total - self.busy) / total) if total > 0 else None
        return self


def proc_stat(path):
    """A `/proc/…/stat` file: (the name in its parentheses, the fields after them; field 11 is utime, 12 stime)."""
    with open(path) as f:
        text = f.read()
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def thread_cpu_seconds(pid, name):
    """The CPU time (user and system) of `pid`'s threads called `name`, in seconds; None if it has none."""
    total, found = 0, False
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            thread, fields = proc_stat(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
        if thread == name:
            total += int(fields[11]) + int(fields[12])
            found = True
    return total / os.sysconf("SC_CLK_TCK") if found else None


def cpu_snapshot():
    """(all CPUs' busy seconds, this run's processes' seconds, kernel threads' seconds): their differences over a
    repetition tell how much CPU other user-space processes took meanwhile (the machine should be quiet)."""
    tick = os.sysconf("SC_CLK_TCK")
    busy = machine_busy_seconds()
    processes = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            _, rest = proc_stat(f"/proc/{entry}/stat")
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
