"""The data-loader rows (issue 37), run with `bench --loader`: a PyTorch-style loader over a list of ~400 JPEGs of
1280 px, directly and through the 20 ms delay line. The loader is 8 worker processes (a plain multiprocessing Pool,
as a DataLoader with num_workers=8 runs them): imap over a shuffled order, each task opens its file, decodes it in
Pillow's draft mode and resizes it to 224 px. Against: `curl --parallel` (curl's default of 50 at once) into a tmpfs,
then the same loader over those files (download-then-read); and the same loader over the files on tmpfs (the second
epoch's limit). imgfs reads `lists/NAME/`: the list added with `imgfs list add --warm` (the clock includes the
`list add`), the same without `--warm` for scale, then a second epoch in another shuffled order over the same mount."""
import io
import itertools
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import time

from .corpus import sha256_file
from .processes import BenchFailure, log
from .reader import wait_for_disk_entries
from .systems import Imgfs

LOADER_IMAGES = 400
LOADER_WORKERS = 8
LOADER_PX = 224
LOADER_SOURCE_PX = 1280
CURL_PARALLEL = 50  # curl's own default for --parallel
LOADER_SOURCES = [  # wallpapers of the benchmark's packages, cut into 1280 px JPEGs
    "/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg",
    "/usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg",
    "/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg",
    "/usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg",
    "/usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg",
    "/usr/share/backgrounds/Dragonfly_by_Bolly.jpg",
    "/usr/share/backgrounds/gnome/pixels-l.webp",
    "/usr/share/backgrounds/gnome/adwaita-d.webp",
]

# (key, label, unit, better, limit label), appended to the report's rows when the loader rows ran.
LOADER_WORKLOADS = [
    row
    for delay, where in (("", "direct origin"), ("@20ms", "20 ms origin"))
    for row in [
        (f"loader-cold{delay}", f"data loader, {LOADER_WORKERS} processes, cold epoch, {where}: "
                                f"list add --warm, then the epoch", "images/s", "higher", "curl then read"),
        (f"loader-cold-nowarm{delay}", f"data loader, cold epoch, {where}: list without --warm", "images/s",
         "higher", "curl then read"),
        (f"loader-gets{delay}", f"data loader, cold epoch with --warm, {where}: origin GETs", "GETs", "exact", ""),
        (f"loader-epoch2{delay}", f"data loader, second epoch, {where}", "images/s", "higher", "tmpfs"),
    ]
]
COLD_TARGET = 1.0  # × download-then-read
EPOCH2_TARGET = 0.9  # × the loader over tmpfs


def load_one(path):
    """One task of the loader: open, decode in draft mode, resize to LOADER_PX; returns the size it made."""
    from PIL import Image
    with Image.open(path) as image:
        image.draft("RGB", (LOADER_PX, LOADER_PX))
        small = image.convert("RGB").resize((LOADER_PX, LOADER_PX))
    return small.size


def make_images(directory, count):
    """count distinct JPEGs of LOADER_SOURCE_PX × 853 px cut from LOADER_SOURCES (seeded): {name: (size, sha256)}."""
    from PIL import Image
    os.makedirs(directory, exist_ok=True)
    sources = []
    for path in LOADER_SOURCES:
        if not os.path.exists(path):
            continue
        with Image.open(path) as image:
            image = image.convert("RGB")
            scale = 1800 / image.width
            sources.append(image.resize((1800, max(900, int(image.height * scale)))))
    if not sources:
        raise BenchFailure("no wallpaper to make the loader's JPEGs from (gnome-backgrounds, mate-backgrounds, …)")
    rng = random.Random(37)
    manifest = {}
    height = LOADER_SOURCE_PX * 2 // 3
    for index in range(count):
        source = sources[index % len(sources)]
        x, y = rng.randrange(source.width - LOADER_SOURCE_PX), rng.randrange(source.height - height)
        crop = source.crop((x, y, x + LOADER_SOURCE_PX, y + height))
        if index // len(sources) % 2:
            crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        buffer = io.BytesIO()
        crop.save(buffer, "JPEG", quality=rng.randrange(82, 93))
        name = f"{index:04d}.jpg"
        with open(os.path.join(directory, name), "wb") as f:
            f.write(buffer.getvalue())
        manifest[name] = None
    for name in manifest:
        path = os.path.join(directory, name)
        manifest[name] = (os.path.getsize(path), sha256_file(path))
    return manifest


def _worker_signals():
    """A worker's signals as a DataLoader worker's: the driver's handlers (SIGTERM raising KeyboardInterrupt) are not
    inherited, so the pool's terminate() at the end of an epoch ends its workers quietly."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def run_epoch(paths, seed):
    """The loader over paths in a shuffled order (seed); returns the seconds from the first task to the last result
    (the pool is started before the clock, as a DataLoader's workers are)."""
    order = list(paths)
    random.Random(seed).shuffle(order)
    with multiprocessing.get_context("fork").Pool(LOADER_WORKERS, initializer=_worker_signals) as pool:
        pool.map(abs, range(LOADER_WORKERS))  # every worker started
        start = time.perf_counter()
        sizes = list(pool.imap(load_one, order, chunksize=1))
        elapsed = time.perf_counter() - start
    if any(size != (LOADER_PX, LOADER_PX) for size in sizes):
        raise BenchFailure("the loader made an image of the wrong size")
    return elapsed


class Loader:
    """The loader rows of one run (set up once: the JPEGs in the corpus, served by the benchmark's nginx)."""

    def __init__(self, bench):
        self.bench = bench
        self.rels = []
        log(f"making {LOADER_IMAGES} JPEGs of {LOADER_SOURCE_PX} px for the loader rows")
        manifest = make_images(os.path.join(bench.corpus, "loader"), LOADER_IMAGES)
        for name, entry in manifest.items():
            rel = f"loader/{name}"
            bench.manifest[rel] = entry
            self.rels.append(rel)
        total = sum(size for size, _ in manifest.values())
        bench.loader_text = (f"{LOADER_IMAGES} JPEGs of {LOADER_SOURCE_PX}×{LOADER_SOURCE_PX * 2 // 3} px "
                             f"({total / 1e6:.1f} MB, mean {total / LOADER_IMAGES / 1e3:.0f} kB) cut from "
                             f"{len(LOADER_SOURCES)} wallpapers")
        log(bench.loader_text)
        bench.corpus_text += f"; the loader rows: {bench.loader_text}"
        self.system = Imgfs(bench, bench.args.imgfs)
        self.system.counter = itertools.count(200)  # mount directories apart from the other rows' imgfs-<n>
        bench.commands.setdefault("data loader", f"multiprocessing Pool({LOADER_WORKERS}).imap(load_one, shuffled "
                                                 f"paths, chunksize=1); load_one: PIL.Image.open, "
                                                 f"draft('RGB', ({LOADER_PX}, {LOADER_PX})), convert('RGB'), "
                                                 f"resize(({LOADER_PX}, {LOADER_PX}))")

    def run(self, rep):
        bench = self.bench
        delays = [("", bench.origin.url)] + ([("@20ms", bench.delay.url)] if bench.delay else [])
        for suffix, url in delays:
            self.run_at(url, suffix, rep)

    def run_at(self, url, suffix, rep):
        bench = self.bench
        n = len(self.rels)
        log(f"loader rows{suffix or ' (direct)'}: download-then-read, imgfs with and without --warm")
        fetched, paths = bench.curl_many(url, self.rels, CURL_PARALLEL, "files", keep=True)
        for rel, path in zip(self.rels, paths):
            size, digest = bench.manifest[rel]
            if os.path.getsize(path) != size or sha256_file(path) != digest:
                raise BenchFailure(f"curl: {rel} differs from the original")
        read = run_epoch(paths, seed=rep * 10 + 1)
        bench.record("dl-read", f"loader-cold{suffix}", n / (fetched + read), "images/s (curl into tmpfs, then the "
                     "loader)")
        bench.results.add("dl-read", f"loader-cold-nowarm{suffix}", n / (fetched + read))
        shutil.rmtree(os.path.dirname(paths[0]))
        for warm in ([True, False] if rep % 2 == 0 else [False, True]):
            self.run_imgfs(url, suffix, rep, warm)
        bench.results.add("limit", f"loader-gets{suffix}", n)

    def run_imgfs(self, url, suffix, rep, warm):
        bench = self.bench
        n = len(self.rels)
        system = self.system
        mount = system.mount(url)
        try:
            listing = os.path.join(bench.work, "loader.txt")
            with open(listing, "w") as f:
                f.write("".join(f"{url}/{rel}\n" for rel in self.rels))
            offset = bench.origin.log_offset()
            start = time.perf_counter()
            command = [system.binary, "list", "add", *(["--warm"] if warm else []), mount.mountpoint, "train",
                       listing]
            result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                raise BenchFailure(f"imgfs list add: {result.stdout.decode(errors='replace').strip()}")
            directory = os.path.join(mount.mountpoint, "lists", "train")
            paths = [os.path.join(directory, name) for name in sorted(os.listdir(directory))]
            if len(paths) != n:
                raise BenchFailure(f"lists/train has {len(paths)} entries, not {n}")
            elapsed = time.perf_counter() - start + run_epoch(paths, seed=rep * 10 + 1)
            key = f"loader-cold{suffix}" if warm else f"loader-cold-nowarm{suffix}"
            bench.record(system.name, key, n / elapsed, "images/s (list add, then the loader's first epoch)")
            if not warm:
                return
            time.sleep(0.5)  # the origin's log is written as responses end
            bench.record(system.name, f"loader-gets{suffix}", len(bench.origin.requests_since(offset)), "GETs")
            # imgfs writes its disk cache in a lull after the transfers: the second epoch and its limit both run once
            # that is done (else the writes slow whichever runs beside them), back to back, in alternating order.
            waited, entries = wait_for_disk_entries(mount, n, 120)
            log(f"disk cache: {entries} entries after {waited:.1f} s")
            tmpfs = [os.path.join(bench.corpus, rel) for rel in self.rels]
            for which in (["imgfs", "tmpfs"] if rep % 2 == 0 else ["tmpfs", "imgfs"]):
                elapsed = run_epoch(paths if which == "imgfs" else tmpfs, seed=rep * 10 + 2)
                if which == "imgfs":
                    bench.record(system.name, f"loader-epoch2{suffix}", n / elapsed, "images/s (second epoch)")
                else:
                    bench.record("limit", f"loader-epoch2{suffix}", n / elapsed, "images/s (the loader over tmpfs)")
        finally:
            mount.unmount()


def loader_targets(med, fmt):
    """The target rows of the loader (issue 37 item 6): the cold epoch with --warm ≥ 1.0× download-then-read; the
    second epoch ≥ 0.9× the loader over tmpfs; at 0 and 20 ms."""
    rows = []
    for suffix, where in (("", "direct origin"), ("@20ms", "20 ms origin")):
        for key, limit, target, what in (
                (f"loader-cold{suffix}", "dl-read", COLD_TARGET, "download-then-read"),
                (f"loader-epoch2{suffix}", "limit", EPOCH2_TARGET, "the loader over tmpfs")):
            value, reference = med("imgfs", key), med(limit, key)
            if value is None or not reference:
                continue
            label = "cold epoch, list add --warm" if "cold" in key else "second epoch"
            rows.append((f"data loader, {label}, {where}", f"≥ {target:g}× {what}",
                         f"{value / reference:.2f}× ({fmt(value)} vs {fmt(reference)} images/s)",
                         "met" if value >= target * reference else "**missed**"))
        value, reference = med("imgfs", f"loader-cold-nowarm{suffix}"), med("dl-read", f"loader-cold{suffix}")
        if value is not None and reference:
            rows.append((f"data loader, cold epoch without --warm, {where}", "for scale",
                         f"{value / reference:.2f}× download-then-read", "–"))
        gets = med("imgfs", f"loader-gets{suffix}")
        if gets is not None:
            rows.append((f"data loader, cold epoch with --warm, {where}: GETs", f"= {LOADER_IMAGES}", f"{gets:g}",
                         "met" if gets == LOADER_IMAGES else "**missed**"))
    return rows
