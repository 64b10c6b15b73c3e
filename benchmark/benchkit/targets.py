"""The targets table: issue 20's targets and the rows met before, per variant (a target counts as met only when it
holds in every variant that measures it), and the floors measured in the same run beside them."""
import statistics

from .settings import MEMORY_BUDGET_MIB
from .floor import FLOOR
from .limits import DOWNLOAD_THEN_READ, LIMIT
from .lists import list_targets
from .loader import loader_targets

HTTPS = "https-h2"


def med(results, system, key):
    values = results.get(system, key)
    return statistics.median(values) if values else None


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


def ratio_target(key, limit_system, at_least=None, at_most=None):
    """imgfs ÷ the limit's median of key; met when ≥ at_least or ≤ at_most."""
    def check(results):
        value, limit = med(results, "imgfs", key), med(results, limit_system, key)
        if value is None or not limit:
            return None
        r = value / limit
        met = r >= at_least if at_least is not None else r <= at_most
        return f"{r:.2f}× ({fmt(value)} vs {fmt(limit)})", met
    return check


def floor_ratio(key, extra_key, system="imgfs"):
    """A floor of an imgfs ÷ curl CPU ratio: (curl's CPU + `system`'s CPU for the same bytes or files without a
    transfer, i.e. only the FUSE side) ÷ curl's CPU."""
    def check(results):
        limit, extra = med(results, LIMIT, key), med(results, system, extra_key)
        if not limit or extra is None:
            return None
        return f"{(limit + extra) / limit:.2f}× (curl {fmt(limit)} + FUSE {fmt(extra)})", None
    return check


def stored_floor_ratio(key, extra_keys):
    """A floor of the imgfs ÷ curl CPU per MB that also keeps the bytes: (curl's CPU + floorfs's CPU for each of
    extra_keys) ÷ curl's CPU, and where imgfs stands against it."""
    def check(results):
        limit, value = med(results, LIMIT, key), med(results, "imgfs", key)
        extras = [med(results, FLOOR, extra) for extra in extra_keys]
        if not limit or any(extra is None for extra in extras) or value is None:
            return None
        floor = limit + sum(extras)
        parts = " + ".join(fmt(extra) for extra in extras)
        return f"{floor / limit:.2f}× (curl {fmt(limit)} + {parts}); imgfs at {value / floor:.2f}× of it", None
    return check


def deferred_store(results):
    """The CPU imgfs's disk writer spends per cold icon once cold-small's clock has stopped (none of the ratios above
    counts it), against floorfs --store writing the same icons into files of their own on the same file system."""
    value, floor = med(results, "imgfs", "disk-write-cpu"), med(results, FLOOR, "store-small-cpu")
    if value is None or floor is None:
        return None
    return f"{fmt(value)} µs (floor {fmt(floor)} µs)", None


def dedup_delay_floor(results):
    """The least the 32 dedup readers can take at 20 ms: nothing reaches them before the connection and the request
    have crossed the delay line (curl's first 64 KiB at 20 ms less the same at 0 ms), and their copying alone takes
    what it takes on tmpfs; ÷ one curl fetch at 20 ms, and where imgfs stands against it."""
    first, first_now = med(results, LIMIT, "first-64k@20ms"), med(results, LIMIT, "first-64k")
    copying = med(results, LIMIT, "dedup-tmpfs")
    if first is None or first_now is None or copying is None:
        return None
    return floor_cell(first - first_now + copying, med(results, LIMIT, "dedup-wall@20ms"),
                      med(results, "imgfs", "dedup-wall@20ms"))


def floor_cell(floor, base, value):
    """A floor ÷ the rate it is compared with, and where imgfs (value) stands against the floor; None if unmeasured."""
    if not floor or not base or value is None:
        return None
    return f"{floor / base:.2f}× ({fmt(floor)} vs {fmt(base)}); imgfs at {value / floor:.2f}× of it", None


def fuse_floor(key, floor_key=None):
    """The FUSE floor (floorfs, benchkit/floor.py) ÷ the limit of key, and where imgfs stands against that floor."""
    return lambda results: floor_cell(med(results, FLOOR, floor_key or key), med(results, LIMIT, key),
                                      med(results, "imgfs", key))


def shared_cores_bound(key, floor_system, floor_key, against):
    """What a daemon that fetches like curl and serves like `floor_system` (its rate of floor_key, with the bytes
    already there) could reach at best on the same cores: 1 ÷ (1 ÷ curl's rate + 1 ÷ the floor's rate), ÷ the rate of
    `against` (LIMIT or DOWNLOAD_THEN_READ) for key; and where imgfs stands against it."""
    def check(results):
        curl, floor = med(results, LIMIT, key), med(results, floor_system, floor_key)
        bound = 1 / (1 / curl + 1 / floor) if curl and floor else None
        return floor_cell(bound, med(results, against, key), med(results, "imgfs", key))
    return check


def scale(key, floor_system, floor_key, system="imgfs"):
    """`system`'s median of key against another measured quantity of the same run (no verdict)."""
    def check(results):
        value, floor = med(results, system, key), med(results, floor_system, floor_key)
        if value is None or not floor:
            return None
        return f"{value / floor:.2f}× ({fmt(value)} vs {fmt(floor)})", None
    return check


def dedup(suffix):
    def check(results):
        gets, nbytes = results.get("imgfs", "dedup-gets" + suffix), results.get("imgfs", "dedup-bytes" + suffix)
        if not gets:
            return None
        ok = all(g == 1 for g in gets) and all(abs(b - 1.0) < 1e-9 for b in nbytes)
        return f"GETs {sorted(set(gets))}, bytes {', '.join(f'{b:.2f}×' for b in sorted(set(nbytes)))}", ok
    return check


def first_bytes(key):
    def check(results):
        value, limit = med(results, "imgfs", key), med(results, LIMIT, key)
        if value is None or not limit:
            return None
        return f"{fmt(value)} ms vs {fmt(1.2 * limit + 5)} allowed", value <= 1.2 * limit + 5
    return check


def absolute(key, unit, at_most):
    def check(results):
        value = med(results, "imgfs", key)
        return None if value is None else (f"{fmt(value)} {unit}", value <= at_most)
    return check


def idle(suffix=""):
    """The machine's idle share while imgfs's cold-large clock ran (curl's beside it)."""
    def check(results):
        key = "cold-large-idle" + suffix
        value, limit = med(results, "imgfs", key), med(results, LIMIT, key)
        if value is None:
            return None
        return f"{value:.0f} % (curl {fmt(limit)} %)", None
    return check


NOT_HTTPS = lambda name: name != HTTPS  # noqa: E731
ONLY_HTTPS = lambda name: name == HTTPS  # noqa: E731
# (row, goal, check(results) -> (text, met or None for a floor) or None, which variants it applies to)
TARGETS = [
    ("CPU per cold file, imgfs ÷ curl (to /dev/null)", "≤ 2.0×",
     ratio_target("cold-small-cpu", LIMIT, at_most=2.0), NOT_HTTPS),
    ("  floor: curl + the FUSE round trips of a file without its transfer (small after drop_caches)", "",
     floor_ratio("cold-small-cpu", "dropped-small-cpu"), NOT_HTTPS),
    ("  floor: curl + a minimal C FUSE daemon's round trips (floorfs, same files)", "",
     floor_ratio("cold-small-cpu", "dropped-small-cpu", FLOOR), NOT_HTTPS),
    ("  for scale: download-then-read's CPU per file ÷ curl (to /dev/null)", "",
     scale("cold-small-cpu", LIMIT, "cold-small-cpu", DOWNLOAD_THEN_READ), NOT_HTTPS),
    ("  after the clock: imgfs's disk writer per cold icon (floor: one new file per icon on that file system)", "",
     deferred_store, NOT_HTTPS),
    ("CPU per cold MB, imgfs ÷ curl (to /dev/null)", "≤ 2.0×", ratio_target("cold-large-cpu", LIMIT, at_most=2.0),
     NOT_HTTPS),
    ("  floor: curl + serving the bytes through FUSE without a transfer (large after drop_caches)", "",
     floor_ratio("cold-large-cpu", "dropped-large-cpu"), NOT_HTTPS),
    ("  floor: curl + floorfs serving the same files by READ", "",
     floor_ratio("cold-large-cpu", "dropped-large-cpu", FLOOR), NOT_HTTPS),
    ("  floor: the same, plus writing the bytes into tmpfs (keeping them in 4 KiB memory pages)", "",
     stored_floor_ratio("cold-large-cpu", ["dropped-large-cpu", "store-large-cpu"]), NOT_HTTPS),
    ("  for scale: download-then-read's CPU per MB ÷ curl (to /dev/null)", "",
     scale("cold-large-cpu", LIMIT, "cold-large-cpu", DOWNLOAD_THEN_READ), NOT_HTTPS),
    ("  the machine idle during cold-large, imgfs (curl)", "", idle(), NOT_HTTPS),
    ("cold-small ÷ download-then-read, 0 ms", "≥ 1.0×", ratio_target("cold-small", DOWNLOAD_THEN_READ, 1.0),
     NOT_HTTPS),
    ("  bound: curl's fetches and floorfs's round trips sharing the cores ÷ download-then-read", "",
     shared_cores_bound("cold-small", FLOOR, "dropped-small", DOWNLOAD_THEN_READ), NOT_HTTPS),
    ("cold-small ÷ download-then-read, 20 ms", "≥ 1.0×", ratio_target("cold-small@20ms", DOWNLOAD_THEN_READ, 1.0),
     NOT_HTTPS),
    ("cold-large ÷ download-then-read, 0 ms", "≥ 1.0×", ratio_target("cold-large", DOWNLOAD_THEN_READ, 1.0),
     NOT_HTTPS),
    ("  bound: curl's fetches and floorfs serving by READ sharing the cores ÷ download-then-read", "",
     shared_cores_bound("cold-large", FLOOR, "dropped-large", DOWNLOAD_THEN_READ), NOT_HTTPS),
    ("cold-large ÷ download-then-read, 20 ms", "≥ 1.0×", ratio_target("cold-large@20ms", DOWNLOAD_THEN_READ, 1.0),
     NOT_HTTPS),
    ("cold-large ÷ curl to /dev/null, 0 ms", "≥ 0.6×", ratio_target("cold-large", LIMIT, 0.6), NOT_HTTPS),
    ("  for scale: large after drop_caches (FUSE, no transfer) ÷ curl to /dev/null", "",
     scale("dropped-large", LIMIT, "cold-large"), NOT_HTTPS),
    ("  bound: curl's fetches and floorfs serving by READ sharing the cores ÷ curl", "",
     shared_cores_bound("cold-large", FLOOR, "dropped-large", LIMIT), NOT_HTTPS),
    ("cold-large ÷ curl to /dev/null, 20 ms", "≥ 0.9×", ratio_target("cold-large@20ms", LIMIT, 0.9), NOT_HTTPS),
    ("cold-small ÷ curl to /dev/null, 0 ms", "≥ 0.5×", ratio_target("cold-small", LIMIT, 0.5), NOT_HTTPS),
    ("  for scale: small after drop_caches (FUSE round trips, no transfer) ÷ curl to /dev/null", "",
     scale("dropped-small", LIMIT, "cold-small"), NOT_HTTPS),
    ("  for scale: floorfs serving the files from memory (no transfer) ÷ curl to /dev/null", "",
     fuse_floor("cold-small", "dropped-small"), NOT_HTTPS),
    ("  bound: curl's fetches and floorfs's round trips sharing the cores ÷ curl", "",
     shared_cores_bound("cold-small", FLOOR, "dropped-small", LIMIT), NOT_HTTPS),
    ("  for scale: curl to /dev/null ÷ download-then-read, 20 ms (both wait on the same delay line)", "",
     scale("cold-small@20ms", DOWNLOAD_THEN_READ, "cold-small@20ms", LIMIT), NOT_HTTPS),
    ("cold-small ÷ curl to /dev/null, 20 ms", "≥ 0.9×", ratio_target("cold-small@20ms", LIMIT, 0.9), NOT_HTTPS),
    ("HTTPS + HTTP/2 cold-small, 20 ms, imgfs defaults ÷ curl --http2", "≥ 0.9×",
     ratio_target("cold-small@20ms", LIMIT, 0.9), ONLY_HTTPS),
    ("HTTPS + HTTP/2 cold-large, 20 ms, imgfs defaults ÷ curl --http2", "≥ 0.9×",
     ratio_target("cold-large@20ms", LIMIT, 0.9), ONLY_HTTPS),
    ("  the machine idle during it, imgfs (curl --http2)", "", idle("@20ms"), ONLY_HTTPS),
    ("  floor of its CPU per MB: curl --http2 + floorfs's READs + writing the bytes into tmpfs, ÷ curl --http2", "",
     stored_floor_ratio("cold-large-cpu@20ms", ["dropped-large-cpu", "store-large-cpu"]), ONLY_HTTPS),
    ("small after remount ÷ tmpfs", "≥ 0.3×", ratio_target("remount-small", LIMIT, 0.3), NOT_HTTPS),
    ("  floor: floorfs reading the same files from ext4 (in the page cache) ÷ tmpfs", "", fuse_floor("remount-small"),
     NOT_HTTPS),
    ("  floor: floorfs reading the same files from ext4 after drop_caches ÷ tmpfs", "",
     fuse_floor("remount-small", "remount-small-disk"), NOT_HTTPS),
    ("  floor: floorfs after drop_caches, bytes in its memory ÷ tmpfs", "", fuse_floor("dropped-small"), NOT_HTTPS),
    ("large after remount ÷ tmpfs", "≥ 0.5×", ratio_target("remount-large", LIMIT, 0.5), NOT_HTTPS),
    ("  floor: imgfs's disk-cache files read directly from the disk after drop_caches ÷ tmpfs", "",
     fuse_floor("remount-large"), NOT_HTTPS),
    ("warm-large, first pass ÷ tmpfs", "≥ 0.9×", ratio_target("warm-large-1st", LIMIT, 0.9), NOT_HTTPS),
    ("  for scale: the same first read on tmpfs (files just written)", "",
     scale("warm-large-1st", LIMIT, "warm-large-fresh"), NOT_HTTPS),
    ("  for scale: the same files in new memfds (4 KiB pages, imgfs's --tune pages=small), first read, ÷ tmpfs", "",
     fuse_floor("warm-large-1st", "warm-large-memfd-1st"), NOT_HTTPS),
    ("warm-large ÷ tmpfs", "≥ 0.9×", ratio_target("warm-large", LIMIT, 0.9), NOT_HTTPS),
    ("  for scale: the same files in new memfds (4 KiB pages, imgfs's --tune pages=small), ÷ tmpfs", "",
     fuse_floor("warm-large", "warm-large-memfd"), NOT_HTTPS),
    ("warm-small, first pass ÷ tmpfs", "≥ 0.5×", ratio_target("warm-small-1st", LIMIT, 0.5), NOT_HTTPS),
    ("  floor: floorfs ÷ tmpfs, its first timed pass (the files read once before, as imgfs's)", "",
     fuse_floor("warm-small-1st"), NOT_HTTPS),
    ("warm-small ÷ tmpfs", "≥ 0.5×", ratio_target("warm-small", LIMIT, 0.5), NOT_HTTPS),
    ("  floor: floorfs ÷ tmpfs, passes 2–5", "", fuse_floor("warm-small"), NOT_HTTPS),
    ("large after drop_caches ÷ tmpfs", "≥ 0.5×", ratio_target("dropped-large", LIMIT, 0.5), NOT_HTTPS),
    ("dedup: GETs, bytes", "exactly 1 GET, 1× bytes", dedup(""), NOT_HTTPS),
    ("dedup: GETs, bytes, 20 ms", "exactly 1 GET, 1× bytes", dedup("@20ms"), NOT_HTTPS),
    ("dedup wall ÷ one curl fetch", "≤ 1.2×", ratio_target("dedup-wall", LIMIT, at_most=1.2), NOT_HTTPS),
    ("  for scale: the same 32 readers on tmpfs (copying floor)", "", scale("dedup-wall", LIMIT, "dedup-tmpfs"),
     NOT_HTTPS),
    ("dedup wall ÷ one curl fetch, 20 ms", "≤ 1.2×", ratio_target("dedup-wall@20ms", LIMIT, at_most=1.2),
     NOT_HTTPS),
    ("  floor: the round trips before the first byte (curl's first 64 KiB at 20 ms less at 0 ms) + the 32 readers "
     "copying on tmpfs, ÷ one curl fetch", "", dedup_delay_floor, NOT_HTTPS),
    ("first 64 KiB", "≤ 1.2× curl + 5 ms", first_bytes("first-64k"), NOT_HTTPS),
    ("first 64 KiB, 20 ms", "≤ 1.2× curl + 5 ms", first_bytes("first-64k@20ms"), NOT_HTTPS),
    ("ls -l ÷ tmpfs", "≤ 2×", ratio_target("ls-l", LIMIT, at_most=2.0), NOT_HTTPS),
    ("peak RSS", f"≤ {MEMORY_BUDGET_MIB} + 40 MiB", absolute("rss", "MiB", MEMORY_BUDGET_MIB + 40), NOT_HTTPS),
]


def target_table(variants, restart_entries, measured_only=False):
    """variants: [(name, Results)], loopback first. One column per variant; the last says met only when every
    variant that measured the row met it. measured_only: leave out the rows no variant measured (`--lists`)."""
    names = [name for name, _ in variants]
    lines = ["| target | goal | " + " | ".join(names) + " | verdict |", "|---|---|" + "---|" * (len(names) + 1)]
    for label, goal, check, applies in TARGETS:
        cells, verdicts = [], []
        for name, results in variants:
            outcome = check(results) if applies(name) else None
            if outcome is None:
                cells.append("–")
                continue
            text, met = outcome
            if met is not None:
                verdicts.append(met)
                text += " met" if met else " **missed**"
            cells.append(text)
        if measured_only and all(c == "–" for c in cells):
            continue
        if not goal:
            verdict = "floor / for scale" if any(c != "–" for c in cells) else "–"
        elif not verdicts:
            verdict = "not measured"
        else:
            verdict = "met" if all(verdicts) else f"**missed** ({verdicts.count(False)} of {len(verdicts)})"
        lines.append(f"| {label} | {goal} | " + " | ".join(cells) + f" | {verdict} |")
    base = variants[0][1]
    entries = f"{restart_entries:,}" if restart_entries else "100,000"
    value = med(base, "imgfs", "restart")
    cells = [f"{value:.2f} s (ext4, cold)" if value is not None else "not run"] + ["–"] * (len(names) - 1)
    verdict = "not run" if value is None else ("met" if value <= 2 else "**missed**")
    if value is not None or not measured_only:
        lines.append(f"| restart, {entries} entries | mounted and serving ≤ 2 s | " + " | ".join(cells)
                     + f" | {verdict} |")
    # The list rows (`bench --lists`, loopback only).
    for what, goal, value, verdict in list_targets(lambda system, key: med(base, system, key), fmt):
        lines.append(f"| {what} | {goal} | " + " | ".join([value] + ["–"] * (len(names) - 1)) + f" | {verdict} |")
    # The data-loader rows (`bench --loader`, loopback only).
    for what, goal, value, verdict in loader_targets(lambda system, key: med(base, system, key), fmt):
        lines.append(f"| {what} | {goal} | " + " | ".join([value] + ["–"] * (len(names) - 1)) + f" | {verdict} |")
    return "\n".join(lines)
