"""The before/after table of `bench --before REV`: every row measured for both imgfs and its before build
(`imgfs@<commit>`, benchkit/before.py) in the same run, each side's min–max and median, and a verdict.

A row is "worse beyond spread" when after's best value is worse than before's worst (direction-aware: for a rate,
after's highest below before's lowest; for a time, CPU, RSS or count, after's lowest above before's highest), and
"better beyond spread" the other way round; otherwise the ranges overlap ("within spread"). Rows whose value must be
exact (GETs, bytes of the dedup rows) are "same" or "differs"; rows for information only get no verdict."""
import statistics


def verdict(better, before, after):
    if better == "higher":
        return ("worse beyond spread" if max(after) < min(before) else
                "better beyond spread" if min(after) > max(before) else "within spread")
    if better == "lower":
        return ("worse beyond spread" if min(after) > max(before) else
                "better beyond spread" if max(after) < min(before) else "within spread")
    if better == "exact":
        return "same" if sorted(before) == sorted(after) else "differs"
    return ""


def before_after_rows(sections, before, after="imgfs"):
    """[{variant, key, label, unit, better, before, after, verdict}] of every row measured for both systems;
    sections: [(variant name, Results, [(key, label, unit, better, …)])]."""
    rows = []
    for variant, results, workloads in sections:
        for key, label, unit, better, *_ in workloads:
            old, new = results.get(before, key), results.get(after, key)
            if old and new:
                rows.append({"variant": variant, "key": key, "label": label, "unit": unit, "better": better,
                             "before": old, "after": new, "verdict": verdict(better, old, new)})
    return rows


def before_after_table(rows, before, fmt):
    """The rows as Markdown: before min–max and median, after min–max and median, the verdict (bold when worse)."""
    def side(values):
        return f"{fmt(min(values))}–{fmt(max(values))} | {fmt(statistics.median(values))}"
    worse = sum(r["verdict"] == "worse beyond spread" for r in rows)
    single = sum(min(len(r["before"]), len(r["after"])) < 2 for r in rows)
    lines = [f"Before/after: {before} (before) and imgfs (after), measured in the same run; "
             f"{worse} of {len(rows)} rows worse beyond their min–max spread"
             + (f"; {single} of the rows have a single value on a side (no spread: one repetition decides)"
                if single else "") + ".", "",
             "| variant | row | unit | better | before min–max | before median | after min–max | after median "
             "| verdict |", "|" + "---|" * 9]
    for r in rows:
        mark = f"**{r['verdict']}**" if r["verdict"] in ("worse beyond spread", "differs") else r["verdict"]
        lines.append(f"| {r['variant']} | {r['key']} | {r['unit']} | {r['better']} | {side(r['before'])} "
                     f"| {side(r['after'])} | {mark} |")
    return "\n".join(lines)
