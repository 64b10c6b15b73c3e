#!/usr/bin/env python3
"""The imgfs benchmark driver (run through benchmark/bench, which installs, builds and cleans up).

Builds corpora of real images from Debian packages on a tmpfs, serves them with private nginx instances, and reads
them through imgfs, httpdirfs and rclone mount with one reader (a Python thread pool), against the limits: curl to
/dev/null and download-then-read (cold), the same files on tmpfs (warm). Runs the loopback run and the variants of
conditions (benchkit/variants.py: veth, back-to-back, icons, harness, https-h2), prints a Markdown table per variant
and the targets table, and writes them, with versions and the exact commands, to a results file. The pieces are in
benchkit/: settings, processes (what a run owns), corpus, origin (nginx and the delay line), netns, tls, reader,
systems, limits, workloads, variants, report and targets; with --before REV, before (REV's build beside the current
one) and compare (the before/after table).

Network: every byte goes to 127.0.0.1 or to the run's own network namespace over its veth pair (nginx, and the delay
line in front of it). Nothing else is contacted.
"""
import argparse
import json
import os
import signal
import sys
import time

from benchkit.before import build as build_before
from benchkit.compare import before_after_rows, before_after_table
from benchkit.processes import BenchFailure, log
from benchkit.report import before_after, report, write_results
from benchkit.shared_tier import SHARED_TIER_WORKLOADS, run_shared_tier
from benchkit.targets import fmt
from benchkit.workloads import Bench


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, a smaller corpus (development)")
    parser.add_argument("--reps", type=int, default=0,
                        help="repetitions (default 3 of loopback and 2 of each other variant; 1 with --quick)")
    parser.add_argument("--workdir", help="an empty scratch directory this run owns (made by benchmark/bench)")
    parser.add_argument("--imgfs", help="the imgfs binary (release build)")
    parser.add_argument("--results", help="where to write the results file")
    parser.add_argument("--systems", default="imgfs,imgfs-6,httpdirfs,rclone")
    parser.add_argument("--no-delay", action="store_true",
                        help="skip the 20 ms round-trip rows (and the https-h2 variant)")
    parser.add_argument("--variants", default="all", metavar="LIST",
                        help="the variants run beside loopback: all (default), none, or a comma-separated list of "
                             "veth, back-to-back, icons, harness, https-h2 (benchkit/variants.py)")
    parser.add_argument("--no-restart", action="store_true", help="skip the restart with 100,000 cached entries")
    parser.add_argument("--restart-entries", type=int, default=0)
    parser.add_argument("--shared-tier", action="store_true",
                        help="only the shared-tier rows (--shared-cache on a private redis-server; benchkit/shared_tier)")
    parser.add_argument("--lists", action="store_true",
                        help="only the list rows: ls of a 10,000-entry list, the stepping viewer (read-ahead 0 and 8)")
    parser.add_argument("--loader", action="store_true",
                        help="only the data-loader rows: 8 worker processes over ~400 JPEGs of a list (with and "
                             "without list add --warm), against curl then read and tmpfs, at 0 and 20 ms")
    parser.add_argument("--before", metavar="REV",
                        help="also measure imgfs built at git revision REV (release, cached under the results' work/), "
                             "as imgfs@<commit> beside imgfs in every row, and print a before/after table")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch directory (logs, caches)")
    parser.add_argument("--thumbnails", action="store_true",
                        help="run only the thumbnail rows (thumb/256/ vs vipsthumbnail and Pillow)")
    args = parser.parse_args()
    if not (args.workdir and args.imgfs and args.results):
        parser.error("--workdir, --imgfs and --results are required (run benchmark/bench)")

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    bench = Bench(args)
    if args.keep_work:
        open(os.path.join(args.workdir, "keep"), "w").close()
    try:
        if args.before:
            repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            args.before_imgfs, args.before_commit = build_before(args.before, repository, args.results)
        if args.thumbnails:
            return run_thumbnail_rows(bench, args)
        if args.shared_tier:
            table, results = run_shared_tier(bench)
            os.makedirs(args.results, exist_ok=True)
            path = os.path.join(args.results, time.strftime("shared-tier-%Y-%m-%d-%H%M.md"))
            if args.before:
                table += "\n\n## Before and after\n\n" + compared_table(
                    args, path, [("shared-tier", results, SHARED_TIER_WORKLOADS)])
            print(table)
            with open(path, "w") as f:
                f.write(table + "\n")
            print(f"\nresults: {path}")
            return 0
        bench.run()
        tables, targets = report(bench)
        compared = before_after(bench)
        path = write_results(bench, tables, targets, compared)
        print(tables)
        print()
        print("imgfs targets (met only when met in every variant that measures the row):\n")
        print(targets)
        if compared:
            print()
            print(compared[1])
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


def run_thumbnail_rows(bench, args):
    """The thumbnail rows on their own (benchkit/thumbnails.py); prints and writes their table (with --before, and
    the before/after table, also as .json)."""
    import datetime
    from benchkit.systems import Imgfs
    from benchkit.thumbnails import THUMBNAIL_WORKLOADS, run_thumbnails
    bench.setup()
    imgfs = Imgfs(bench, args.imgfs)
    text, results = run_thumbnails(bench, [imgfs, *bench.before_twins(imgfs)])
    os.makedirs(args.results, exist_ok=True)
    path = os.path.join(args.results, f"{datetime.datetime.now():%Y-%m-%d-%H%M}-thumbnails.md")
    if args.before:
        text += "\n\n## Before and after\n\n" + compared_table(
            args, path, [("thumbnails", results, THUMBNAIL_WORKLOADS)])
    with open(path, "w") as f:
        f.write(f"# imgfs thumbnail benchmark\n\n{text}\n")
    print(text)
    print(f"\nresults: {path}")
    return 0


def compared_table(args, path, sections):
    """The before/after table of a run of its own (thumbnails, shared tier: benchkit/compare.py); its rows also go to
    path's .json."""
    before = f"imgfs@{args.before_commit}"
    rows = before_after_rows(sections, before)
    with open(path[:-3] + ".json", "w") as f:
        json.dump({"before-after": rows}, f)
    return before_after_table(rows, before, fmt)


if __name__ == "__main__":
    sys.exit(main())
