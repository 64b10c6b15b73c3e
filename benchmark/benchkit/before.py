"""The "before" build of `bench --before REV`: imgfs at another git revision, measured beside the current build in the
same run (issue 35: a redesign checked by one run, not by two).

- build(): REV's imgfs in release mode, in a git worktree of its own under bench-results/work/ (ignored by git), with
  the current tree's Package.resolved when REV's tree has none (the same dependency versions on both sides). A binary
  already built from the same commit is reused.
- twin(): a copy of an imgfs system that runs the before binary under the name `imgfs@<commit>`, mounted exactly as
  the system it copies (its own mount points, caches and logs).
- grouped(): imgfs and its twin as one group whose parts run back to back, in an order that alternates between
  repetitions; every other system alone.
- legacy_arguments(): the mount arguments translated for a binary from before `--tune` (detected by whether its
  `imgfs mount --help` lists `--tune`)."""
import copy
import functools
import os
import shutil
import subprocess

from .processes import BenchFailure, log


def build(rev, repository, results):
    """Builds (or reuses) REV's imgfs; returns (binary, short commit)."""
    def git(*args):
        result = subprocess.run(["git", "-C", repository, *args], capture_output=True, text=True)
        if result.returncode != 0:
            raise BenchFailure(f"git {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    short = git("rev-parse", "--short=7", commit)
    tree = os.path.join(results, "work", f"imgfs-{commit[:12]}")
    binary = os.path.join(tree, ".build", "release", "imgfs")
    stamp = os.path.join(tree, ".build", "bench-built-from")
    if os.path.exists(binary) and os.path.exists(stamp) and open(stamp).read().strip() == commit:
        log(f"before: reusing the release build of {short} ({binary})")
        return binary, short
    if not os.path.isdir(tree):
        os.makedirs(os.path.dirname(tree), exist_ok=True)
        git("worktree", "add", "--detach", tree, commit)
    resolved = os.path.join(repository, "Package.resolved")
    if os.path.exists(resolved) and not os.path.exists(os.path.join(tree, "Package.resolved")):
        shutil.copyfile(resolved, os.path.join(tree, "Package.resolved"))
    log(f"before: building imgfs at {short} (release) in {tree}")
    result = subprocess.run(["swift", "build", "-c", "release", "--product", "imgfs", "--package-path", tree],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0 or not os.path.exists(binary):
        raise BenchFailure(f"before: the release build of {short} failed:\n{result.stdout[-2000:]}")
    with open(stamp, "w") as f:
        f.write(commit + "\n")
    return binary, short


def twin(system, binary, commit):
    """The same system running `binary`: name `<name>@<commit>`, its own mount points, caches and logs (same counter,
    so their numbers never meet the original's)."""
    other = copy.copy(system)
    other.binary = binary
    other.original = system
    other.name = f"{system.name}@{commit}"
    other.label = f"{system.label}@{commit}" if system.label else None
    other.directory = f"{system.directory or system.name}-before"
    other.command_name = (system.command_name or system.name).replace(system.name, other.name, 1)
    return other


def grouped(systems, rep):
    """[[system, ...]]: each system alone, but a twin with its original, the original first in even repetitions and
    the twin first in odd ones."""
    groups = []
    for system in systems:
        original = getattr(system, "original", None)
        group = next((g for g in groups if original in g), None)
        if group is None:
            groups.append([system])
        else:
            group.append(system)
    return [list(reversed(g)) if rep % 2 else g for g in groups]


@functools.lru_cache(maxsize=None)
def has_tune(binary):
    """Whether this build's `imgfs mount --help` lists --tune (builds from before issue 35's options do not)."""
    text = subprocess.run([binary, "mount", "--help"], capture_output=True, text=True).stdout
    return "--tune" in text


# --tune KEY=VALUE of the current build -> the flags of a build from before --tune (20f43f6 and older).
TOGGLES = {("passthrough", "off"): ["--no-passthrough"], ("passthrough", "on"): [],
           ("direct-cold-reads", "off"): ["--no-direct-cold-reads"], ("direct-cold-reads", "on"): [],
           ("pages", "huge"): ["--huge-pages"], ("pages", "small"): ["--small-pages"], ("pages", "large"): []}
HEADERS = {"user-agent": "--user-agent", "referer": "--referer"}


def legacy_arguments(arguments):
    """The same mount arguments for a build without --tune: `--tune passthrough=off` -> `--no-passthrough`,
    `--tune pages=huge|small` -> `--huge-pages`/`--small-pages`, `--tune direct-cold-reads=off` ->
    `--no-direct-cold-reads`, any other `--tune KEY=VALUE` -> `--KEY VALUE` (read-ahead, max-transfers, fetch-threads,
    kernel-read-ahead, timeouts, max-pixels, thumb-workers, shared-max-size, …); `--header 'User-Agent: X'` ->
    `--user-agent X` (and Referer); `--negative-ttl 0` -> `--retry-failed`; `--disk-limit 0` -> `--no-disk-cache`.
    Everything else is passed as it is."""
    out, rest = [], list(arguments)
    while rest:
        item = rest.pop(0)
        value = rest[0] if rest else None
        if item == "--tune":
            key, _, setting = rest.pop(0).partition("=")
            out += TOGGLES.get((key, setting.lower()), [f"--{key}", setting])
        elif item == "--header" and value and value.partition(":")[0].strip().lower() in HEADERS:
            name, _, text = rest.pop(0).partition(":")
            out += [HEADERS[name.strip().lower()], text.strip()]
        elif (item, value) in (("--negative-ttl", "0"), ("--disk-limit", "0")):
            rest.pop(0)
            out.append("--retry-failed" if item == "--negative-ttl" else "--no-disk-cache")
        else:
            out.append(item)
    return out


def adapted(binary, command):
    """`command` (an imgfs mount command line written for the current build) as `binary` accepts it."""
    return command if has_tune(binary) else legacy_arguments(command)
