"""The report: the Markdown tables, ratios, targets and the results file."""
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess

from .settings import DEDUP_READERS, LARGE_READERS, MEMORY_BUDGET_MIB, SMALL_READERS, THROTTLE_RATE
from .lists import LIST_WORKLOADS, list_targets
from .processes import run_out


# (key, label, unit, better, limit label)
WORKLOADS = [
    ("cold-small", f"cold-small: {SMALL_READERS} readers, empty caches", "files/s", "higher", "curl"),
    ("cold-small-cpu", "cold-small: CPU time of the whole machine per file (all processes and the kernel)", "µs",
     "lower", "curl"),
    ("cold-large", f"cold-large: {LARGE_READERS} readers, empty caches", "MB/s", "higher", "curl"),
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
    ("dedup-wall@20ms", f"dedup, 20 ms round trip: {DEDUP_READERS} readers", "ms", "lower", "curl, one fetch"),
    ("dedup-gets@20ms", "dedup, 20 ms round trip: origin GETs", "GETs", "exact", "curl"),
    ("dedup-bytes@20ms", "dedup, 20 ms round trip: origin bytes / file size", "×", "exact", "curl"),
    ("restart", "restart with N cached entries (ext4, after drop_caches): first read served", "s", "lower", ""),
    ("restart-tmpfs", "restart with N cached entries (tmpfs): first read served", "s", "lower", ""),
]
WORKLOADS += LIST_WORKLOADS


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

    def for_scale(key, floor_key, what):
        """A row without a goal: imgfs against a floor the limit itself shows in the same situation."""
        value, floor = med("imgfs", key), med("limit", floor_key)
        if value is not None and floor:
            rows.append((f"{key}, for scale", f"÷ {what}", f"{value / floor:.2f}× ({fmt(value)} vs {fmt(floor)})",
                         "–"))

    at_least("cold-small", 0.9, "curl")
    at_least("cold-small@20ms", 0.9, "curl")
    at_least("cold-large", 0.9, "curl")
    at_least("cold-large@20ms", 0.9, "curl")
    at_least("warm-large-1st", 0.9, "tmpfs")
    for_scale("warm-large-1st", "warm-large-fresh", "the same first read on tmpfs (files just written)")
    at_least("warm-large", 0.9, "tmpfs")
    at_least("warm-small-1st", 0.5, "tmpfs")
    at_least("warm-small", 0.5, "tmpfs")
    value, limit = med("imgfs", "dropped-large"), med("limit", "warm-large")
    if value is not None and limit:
        rows.append(("dropped-large", "≥ 0.5× tmpfs", f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)})",
                     "met" if value / limit >= 0.5 else "**missed**"))
    for suffix in ("", "@20ms"):
        gets, nbytes = results.get("imgfs", "dedup-gets" + suffix), results.get("imgfs", "dedup-bytes" + suffix)
        if gets:
            ok = all(g == 1 for g in gets) and all(abs(b - 1.0) < 1e-9 for b in nbytes)
            rows.append((f"dedup GETs, bytes{suffix}", "exactly 1 GET, 1× bytes",
                         f"GETs {sorted(set(gets))}, bytes {', '.join(f'{b:.2f}×' for b in sorted(set(nbytes)))}",
                         "met" if ok else "**missed**"))
        value, limit = med("imgfs", "dedup-wall" + suffix), med("limit", "dedup-wall" + suffix)
        if value is not None and limit:
            rows.append((f"dedup wall{suffix}", "≤ 1.2× one curl fetch",
                         f"{value / limit:.2f}× ({fmt(value)} vs {fmt(limit)} ms)",
                         "met" if value <= 1.2 * limit else "**missed**"))
        if not suffix:
            for_scale("dedup-wall", "dedup-tmpfs", "the same 32 readers on tmpfs (copying floor)")
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
    rows += list_targets(med, fmt)
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
    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    imgfs_commit = run_out(["git", "-C", repository, "describe", "--always", "--dirty"])
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
             "- readers: `benchmark/bench.py` read_all(): os.open + os.readv into a pre-allocated buffer until "
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
