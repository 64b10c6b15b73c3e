"""The report: the Markdown tables, ratios, targets and the results file."""
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess

from .settings import DEDUP_READERS, LARGE_READERS, SMALL_READERS, THROTTLE_RATE
from .limits import DOWNLOAD_THEN_READ, LIMIT
from .lists import LIST_WORKLOADS
from .loader import LOADER_WORKLOADS
from .processes import run_out
from .compare import before_after_rows, before_after_table
from .targets import fmt, target_table
from .variants import LOOPBACK


# (key, label, unit, better, limit label)
WORKLOADS = [
    ("cold-small", f"cold-small: {SMALL_READERS} readers, empty caches", "files/s", "higher", "curl → /dev/null"),
    ("cold-small-cpu", "cold-small: CPU time of the whole machine per file (all processes and the kernel)", "µs",
     "lower", "curl → /dev/null"),
    ("cold-large", f"cold-large: {LARGE_READERS} readers, empty caches", "MB/s", "higher", "curl → /dev/null"),
    ("cold-large-cpu", "cold-large: CPU time of the whole machine per MB (all processes and the kernel)", "ms",
     "lower", "curl → /dev/null"),
    ("cold-large-idle", "cold-large: share of the machine's CPU time idle while the clock ran", "%", "info",
     "curl → /dev/null"),
    ("warm-small-1st", "warm-small: again, at once (first pass)", "files/s", "higher", "tmpfs"),
    ("warm-small", "warm-small: passes 2–5 (median)", "files/s", "higher", "tmpfs"),
    ("warm-large-1st", "warm-large: again, at once (first pass)", "MB/s", "higher", "tmpfs"),
    ("warm-large", "warm-large: passes 2–5 (median)", "MB/s", "higher", "tmpfs"),
    ("warm-large-fresh", "warm-large: the same files just written into tmpfs, read once (first-pass floor)", "MB/s",
     "higher", ""),
    ("dropped-small", "small after drop_caches", "files/s", "higher", "tmpfs"),
    ("dropped-small-cpu", "small after drop_caches: CPU time of the whole machine per file (the FUSE round trips "
     "of a cold file without its transfer)", "µs", "lower", ""),
    ("dropped-large", "large after drop_caches", "MB/s", "higher", "tmpfs"),
    ("dropped-large-cpu", "large after drop_caches: CPU time of the whole machine per MB (serving the bytes through "
     "FUSE without a transfer)", "ms", "lower", ""),
    ("store-large-cpu", "the large files' bytes written into new tmpfs files: CPU time of the whole machine per MB "
     "(keeping a cold file's bytes in memory pages)", "ms", "lower", ""),
    ("remount-small", "small after remount", "files/s", "higher", "tmpfs"),
    ("remount-large", "large after remount", "MB/s", "higher", "tmpfs"),
    ("remount-gets", "origin GETs of files during the remount reads", "GETs", "lower", ""),
    ("disk-lag", "imgfs: time after cold-small until its entries were on disk", "s", "lower", ""),
    ("disk-write-cpu", "imgfs: its disk writer's CPU per cold icon (storing it, after the clock)", "µs", "lower", ""),
    ("store-small-cpu", "the small files written into new files beside imgfs's disk caches, one each, one sync: "
     "that process's CPU per file (keeping each icon in a file of its own)", "µs", "lower", ""),
    ("ls-l", "`ls -l` of the cached small files", "ms", "lower", "tmpfs"),
    ("stat", "`stat` of the cached small files (one thread)", "ms", "lower", "tmpfs"),
    ("dedup-wall", f"dedup: {DEDUP_READERS} readers of a cold 16 MB file", "ms", "lower", "curl, one fetch"),
    ("dedup-tmpfs", "dedup: the same 32 readers on tmpfs (copying floor)", "ms", "lower", ""),
    ("dedup-gets", "dedup: origin GETs", "GETs", "exact", "curl"),
    ("dedup-bytes", "dedup: origin bytes / file size", "×", "exact", "curl"),
    ("first-64k", f"first 64 KiB of a cold 8 MB file (nginx limit_rate {THROTTLE_RATE})", "ms", "lower", "curl"),
    ("rss", "daemon peak RSS (VmHWM)", "MiB", "lower", ""),
    ("cold-small@20ms", "cold-small, 20 ms round trip", "files/s", "higher", "curl → /dev/null"),
    ("cold-large@20ms", "cold-large, 20 ms round trip", "MB/s", "higher", "curl → /dev/null"),
    ("first-64k@20ms", "first 64 KiB, 20 ms round trip", "ms", "lower", "curl"),
    ("dedup-wall@20ms", f"dedup, 20 ms round trip: {DEDUP_READERS} readers", "ms", "lower", "curl, one fetch"),
    ("dedup-gets@20ms", "dedup, 20 ms round trip: origin GETs", "GETs", "exact", "curl"),
    ("dedup-bytes@20ms", "dedup, 20 ms round trip: origin bytes / file size", "×", "exact", "curl"),
    ("restart", "restart with N cached entries (ext4, after drop_caches): first read served", "s", "lower", ""),
    ("restart-tmpfs", "restart with N cached entries (tmpfs): first read served", "s", "lower", ""),
]
WORKLOADS += LIST_WORKLOADS + LOADER_WORKLOADS


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


def ratio(results, system, key, limit_system=LIMIT):
    s = summarize(results.get(system, key))
    limit = summarize(results.get(limit_system, key))
    if s is None or limit is None or limit[0] == 0:
        return None
    return s[0] / limit[0]


def workload_table(results, systems, restart_entries):
    """The medians (min–max) of every row measured: the limit, download-then-read, and each system."""
    names = [LIMIT] + [s.name for s in systems]
    keys = [w for w in WORKLOADS if any(results.get(s, w[0]) or results.notes.get((s, w[0])) for s in names)]
    header = ["workload", "unit", "limit", "download-then-read"] + [s.label or s.name for s in systems]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, label, unit, better, limit_label in keys:
        limit_text = cell(results, LIMIT, key)
        if limit_label and limit_text != "–":
            limit_text = f"{limit_text} ({limit_label})"
        label = label.replace("N cached", f"{restart_entries:,} cached")
        row = [label, unit, limit_text, cell(results, DOWNLOAD_THEN_READ, key)] + [cell(results, s.name, key)
                                                                                    for s in systems]
        lines.append("| " + " | ".join(row) + " |")
    footnotes = [f"- {system}, {label.replace('N cached', f'{restart_entries:,} cached')}: {note}"
                 for key, label, *_ in keys for system in names
                 for note in results.notes.get((system, key), []) if len(note) > SHORT_NOTE]
    if footnotes:
        lines += [""] + footnotes
    return "\n".join(lines)


def ratio_table(results, systems):
    """Each system's median ÷ the limit's median (and ÷ download-then-read for the cold rows)."""
    names = [s.label or s.name for s in systems]
    lines = ["| workload | better | " + " | ".join(names) + " |", "|" + "---|" * (2 + len(systems))]
    for key, label, unit, better, limit_label in WORKLOADS:
        if not limit_label or better in ("exact", "info") or key == "rss":
            continue
        for limit, text in ((LIMIT, limit_label), (DOWNLOAD_THEN_READ, "download-then-read")):
            cells = [ratio(results, s.name, key, limit) for s in systems]
            if all(r is None for r in cells):
                continue
            row = [f"{key} (÷ {text})", better] + ["–" if r is None else f"{r:.2f}×" for r in cells]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def described(bench):
    """[(name, description, Results, systems, corpus text)] of loopback and every variant run."""
    if bench.variants:
        return bench.variants.described()
    return [(LOOPBACK[0], LOOPBACK[1], bench.results, bench.systems, bench.corpus_text)]


def before_after(bench):
    """With --before: (the before/after rows of every variant, their Markdown table; benchkit/compare.py); else
    None."""
    if not bench.args.before:
        return None
    before = f"imgfs@{bench.args.before_commit}"
    rows = before_after_rows([(name, results, WORKLOADS) for name, _, results, _, _ in described(bench)], before)
    return rows, before_after_table(rows, before, fmt)


def report(bench):
    """(the tables of every variant, as Markdown with a heading each; the targets table)."""
    variants = described(bench)
    sections = []
    for name, description, results, systems, corpus in variants:
        sections += [f"### Variant {name}", "", f"{description}.", "", f"Corpus: {corpus}.", "",
                     workload_table(results, systems, bench.restart_entries), "",
                     "Ratios (median ÷ median of the limit):", "", ratio_table(results, systems), ""]
        errors = results.errors
        if errors:
            sections += ["Errors:", ""] + [f"- {e}" for e in errors] + [""]
    targets = target_table([(name, results) for name, _, results, _, _ in variants], bench.restart_entries,
                           measured_only=bench.args.lists or bench.args.loader)
    return "\n".join(sections).rstrip(), targets


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def versions(bench):
    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    imgfs_commit = run_out(["git", "-C", repository, "describe", "--always", "--dirty"])
    items = [
        ("imgfs", f"{run_out([bench.args.imgfs, '--version'])} (git {imgfs_commit}, release build)"),
    ] + ([(f"imgfs@{bench.args.before_commit}", f"{run_out([bench.args.before_imgfs, '--version'])} (git "
                                                f"{bench.args.before_commit}, release build of --before "
                                                f"{bench.args.before})")] if bench.args.before else []) + [
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


def write_results(bench, tables, targets, compared=None):
    load = bench.load_before
    started = datetime.datetime.fromtimestamp(bench.started)
    quiet = "quiet" if load[0] < 0.5 else f"**not quiet** (1-minute load {load[0]:.2f} ≥ 0.5)"
    variant_reps = bench.variants.reps if bench.variants else 0
    text = [f"# imgfs benchmark, {started:%Y-%m-%d %H:%M}", "",
            f"{'Quick run (--quick)' if bench.quick else 'Full run'}: {bench.reps} repetition(s) of loopback"
            f"{f', {variant_reps} of each other variant' if bench.variants else ''}, median (min–max); "
            f"took {bench.finished - bench.started:.0f} s. Load average before the run: "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({quiet}); 1-minute load at the start of each repetition: "
            f"{', '.join(f'{x:.2f}' for x in bench.loads)} (this run's own threads count too); CPU seconds other "
            f"user-space processes used during each repetition: {', '.join(f'{x:.1f}' for x in bench.foreign)}.", "",
            "imgfs targets (a target is met only when it holds in every variant that measures it; rows without a "
            "goal are floors measured in the same run):", "", targets, "", tables, "",
            *(["## Before and after", "", compared[1], ""] if compared else []),
            "## Versions", "", versions(bench), "", "## Commands", ""]
    for name, command in bench.commands.items():
        text.append(f"- {name}: `{command}`")
    errors = [e for _, _, results, _, _ in (bench.variants.described() if bench.variants else []) for e in
              results.errors] or bench.results.errors
    if errors:
        at = text.index("## Versions")
        text[at:at] = ["## Errors", ""] + [f"- {e}" for e in errors] + [""]
    text += ["- drop caches: `sync; echo 3 > /proc/sys/vm/drop_caches` (back to back: without sync)",
             f"- delay line (20 ms rows): `{' '.join(bench.delay.command) if bench.delay else 'not run'}`",
             "- readers: `benchmark/bench.py` read_all(): os.open + os.readv into a pre-allocated buffer until "
             "EOF, N threads taking the next file; sha256 checked after the clock stops", "",
             "nginx configuration (loopback; the other variants' origins differ in the listen address and root):", "",
             "```nginx", bench.origin.conf.rstrip(), "```", ""]
    os.makedirs(bench.args.results, exist_ok=True)
    path = os.path.join(bench.args.results, f"{started:%Y-%m-%d-%H%M%S}{'-quick' if bench.quick else ''}.md")
    with open(path, "w") as f:
        f.write("\n".join(text))
    values = {f"{s}|{w}": v for (s, w), v in bench.results.values.items()}
    if bench.variants:
        values = {f"{name}|{s}|{w}": v for name, _, results, _, _ in bench.variants.described()
                  for (s, w), v in results.values.items()}
    if compared:
        values["before-after"] = compared[0]  # [{variant, key, label, unit, better, before, after, verdict}]
    with open(os.path.join(bench.work, "results.json"), "w") as f:
        json.dump(values, f)
    shutil.copyfile(os.path.join(bench.work, "results.json"), path[:-3] + ".json")
    if errors:
        shutil.copytree(os.path.join(bench.work, "logs"), path[:-3] + "-logs")
    return path
