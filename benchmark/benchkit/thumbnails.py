"""Thumbnail rows (benchmark/bench --thumbnails): imgfs's thumb/256/ against vipsthumbnail and Pillow.

- imgfs: the benchmark's large images are read once through img/ (so the originals are cached), then thumb/256/ of
  each is read by LARGE_READERS readers at once: thumbnails per second, the originals cached. Each repetition evicts
  the variants first (rm thumb/256/*), so every one is made again.
- vipsthumbnail (Debian libvips-tools): one process over all the files on tmpfs, the same size and JPEG quality.
- Pillow: Image.draft() (JPEG shrink-on-load) + thumbnail() + save, from tmpfs, on one thread per core.
- warm reread: the variants (small files) read again through the mount by SMALL_READERS readers, each pass the list
  REREAD_ROUNDS times over, against the vipsthumbnail outputs read the same way from tmpfs.
- FUSE floor of the warm reread: the same reread of vipsthumbnail's files through floorfs (benchmark/floorfs.c, a
  minimal C daemon answering from memory): the OPEN and RELEASE round trips any FUSE file system pays per open.
- the same reread over as many cached icons through img/, against the icons on tmpfs (variants or not, imgfs serves
  a small cached file the same way).
- format view: fmt/jpeg/ of each large image (the whole image converted to a baseline JPEG, originals cached) read by
  LARGE_READERS readers at once, against libvips converting the same files from tmpfs to JPEG (what `vips copy IN
  OUT.jpg` does) in one process, one file after the other (libvips's own threads), through ctypes: no process start.
  Each repetition evicts the views first (rm fmt/jpeg/*).
- the imgfs daemon's peak RSS (VmHWM).
- desktop thumbnails: `imgfs thumbnails --desktop` of a list of the large images (originals cached; the list's
  `.sh_thumbnails/{normal,large}/` evicted first and a fresh thumbnail cache each repetition, so every PNG is made
  again), against vipsthumbnail writing the same PNGs (128 and 256 px, one process per size) from tmpfs: entries per
  second. Only the build under test (a --before build may not have the command).
Ratios are paired: the median (min–max) of each repetition's own ratio.
"""
import io
import os
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from .before import grouped
from .processes import BenchFailure, log, vmhwm_mib
from .results import Results
from .settings import LARGE_READERS, SMALL_READERS

SIZE = 256
QUALITY = 85
WARM_PASSES = 5
REREAD_ROUNDS = 50  # a pass of 20 files alone would time the thread pool, not the reads


def read_whole(paths, threads):
    """Reads every file completely with `threads` readers; returns (seconds, bytes).

    Unbuffered (buffering=0), as a C program's open/fstat/read would: Python's buffered open() asks isatty() of every
    file (an ioctl TCGETS; CPython 3.14 no longer does for regular files), which tmpfs answers at once but FUSE sends
    to the daemon as one more synchronous round trip per open (the kernel does not remember the ENOSYS). Both sides of
    every row use this reader."""
    def one(path):
        with open(path, "rb", buffering=0) as f:
            data = f.read()
        if not data:
            raise BenchFailure(f"empty read: {path}")
        return len(data)
    start = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(one, paths))
    return time.monotonic() - start, total


def pillow_thumbnails(paths, out_dir, threads):
    """Pillow's fastest usual recipe; returns seconds."""
    from PIL import Image

    def one(item):
        index, path = item
        with Image.open(path) as image:
            image.draft("RGB", (SIZE, SIZE))  # JPEG: decode at 1/2, 1/4 or 1/8 scale
            image.thumbnail((SIZE, SIZE))
            buffer = io.BytesIO()
            if image.mode in ("RGBA", "LA", "P"):
                image.save(buffer, "PNG")
            else:
                image.convert("RGB").save(buffer, "JPEG", quality=QUALITY)
        with open(os.path.join(out_dir, f"{index}.out"), "wb") as f:
            f.write(buffer.getvalue())
    start = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, enumerate(paths)))
    return time.monotonic() - start


def vipsthumbnail(paths, out_dir):
    """One vipsthumbnail process over all the files; returns seconds."""
    command = ["vipsthumbnail", "--size", f"{SIZE}x{SIZE}>", "-o", os.path.join(out_dir, f"%s.jpg[Q={QUALITY},strip]")]
    start = time.monotonic()
    subprocess.run(command + paths, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def desktop_thumbnails(mount, binary, origin_url, rels, xdg):
    """`imgfs thumbnails --desktop` of the list `desktop` of `rels` on `origin_url` (made at the first call), its shared
    repository's normal/ and large/ thumbnails evicted first, into the fresh thumbnail cache `xdg`; returns seconds."""
    name = "desktop"
    listing = os.path.join(mount.mountpoint, "lists", name)
    if not os.path.isdir(listing):
        path = f"{xdg}.list"
        with open(path, "w") as f:
            f.write("".join(f"{origin_url}/{rel}\n" for rel in rels))
        subprocess.run([binary, "list", "add", "--no-probe", mount.mountpoint, name, path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for size in ("normal", "large"):
        folder = os.path.join(listing, ".sh_thumbnails", size)
        for entry in os.listdir(folder):
            try:
                os.unlink(os.path.join(folder, entry))
            except FileNotFoundError:
                pass
    start = time.monotonic()
    subprocess.run([binary, "thumbnails", "--desktop", mount.mountpoint, name], check=True,
                   env=dict(os.environ, XDG_CACHE_HOME=xdg), stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    made = sum(len(os.listdir(os.path.join(xdg, "thumbnails", size))) for size in ("normal", "large"))
    if made != 2 * len(rels):
        raise BenchFailure(f"imgfs thumbnails --desktop wrote {made} of {2 * len(rels)} thumbnails")
    return seconds


def vipsthumbnail_pngs(paths, out_dir):
    """vipsthumbnail writing the desktop PNGs, normal (128 px) and large (256 px), one process per size; returns
    seconds."""
    start = time.monotonic()
    for px in (128, 256):
        out = os.path.join(out_dir, str(px))
        os.makedirs(out)
        subprocess.run(["vipsthumbnail", "--size", f"{px}x{px}>", "-o", os.path.join(out, "%s.png")] + paths,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def vips_copy_jpeg(paths, out_dir):
    """libvips in this process: each file loaded (sequential access) and saved as JPEG of quality QUALITY, metadata
    stripped, one after the other; returns seconds."""
    import ctypes
    import ctypes.util
    vips = ctypes.CDLL(ctypes.util.find_library("vips") or "libvips.so.42")
    vips.vips_init.argtypes = [ctypes.c_char_p]
    vips.vips_image_new_from_file.restype = ctypes.c_void_p
    vips.vips_image_new_from_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    vips.vips_image_write_to_file.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    vips.g_object_unref.argtypes = [ctypes.c_void_p]
    if vips.vips_init(b"imgfs-bench") != 0:
        raise BenchFailure("libvips could not be initialised")
    start = time.monotonic()
    for index, path in enumerate(paths):
        image = vips.vips_image_new_from_file(f"{path}[access=sequential]".encode(), None)
        if not image:
            raise BenchFailure(f"libvips cannot load {path}")
        target = os.path.join(out_dir, f"{index}.jpg[Q={QUALITY},strip]").encode()
        failed = vips.vips_image_write_to_file(ctypes.c_void_p(image), target, None)
        vips.g_object_unref(ctypes.c_void_p(image))
        if failed:
            raise BenchFailure(f"libvips cannot write {path} as JPEG")
    return time.monotonic() - start


def format_view_name(path):
    """The name of a cached image's JPEG under fmt/jpeg/: its img/ name, with `%23.jpg` unless it ends in .jpg."""
    name = os.path.basename(path)
    return name if name.lower().endswith((".jpg", ".jpeg")) else name + "%23.jpg"


def run_thumbnails(bench, systems):
    """Runs the rows of imgfs (systems: imgfs, and with --before its before build, each on a mount of its own, their
    passes back to back, which goes first alternating between repetitions: benchkit/before.grouped); returns (the
    Markdown table, the imgfs rows as Results for the before/after table: benchkit/compare.py)."""
    if not shutil.which("vipsthumbnail"):
        raise BenchFailure("vipsthumbnail is missing: apt-get install libvips-tools")
    rels = bench.large
    sources = [os.path.join(bench.corpus, r) for r in rels]
    threads = os.cpu_count() or 1
    values = {key: [] for key in ("vips", "pillow", "tmpfs-warm", "floor-warm", "icons-tmpfs", "vips-copy",
                                  "desktop", "vips-png")}
    icon_rels = bench.small[:len(rels)]
    icons_tmpfs = [os.path.join(bench.corpus, r) for r in icon_rels]
    mounts, thumbs, icons, views = {}, {}, {}, {}
    try:
        for system in systems:
            name = system.name
            mount = mounts[name] = system.mount(bench.origin.url)
            values.update({name: [], f"{name}-warm": [], f"{name}-icons": [], f"{name}-fmt": []})
            originals = [mount.path(r) for r in rels]
            read_whole(originals, LARGE_READERS)  # the originals, cached
            icons[name] = [mount.path(r) for r in icon_rels]
            read_whole(icons[name], SMALL_READERS)  # as many small images, cached, for the floor of the warm reread
            base = os.path.join(mount.mountpoint, "thumb", str(SIZE))
            thumbs[name] = [os.path.join(base, os.path.basename(p)) for p in originals]
            # A --before build may have no format views: its fmt/jpeg/ row is left out.
            if os.path.isdir(os.path.join(mount.mountpoint, "fmt", "jpeg")):
                views[name] = [os.path.join(mount.mountpoint, "fmt", "jpeg", format_view_name(p)) for p in originals]
        for rep in range(bench.reps):
            order = [s.name for s in grouped(systems, rep)[0]]
            for name in order:
                base = os.path.dirname(thumbs[name][0])
                for entry in os.listdir(base):
                    os.unlink(os.path.join(base, entry))
                seconds, _ = read_whole(thumbs[name], LARGE_READERS)
                values[name].append(len(thumbs[name]) / seconds)
                mounts[name].sample_rss()
                if name not in views:
                    continue
                base = os.path.dirname(views[name][0])
                for entry in os.listdir(base):
                    os.unlink(os.path.join(base, entry))
                seconds, _ = read_whole(views[name], LARGE_READERS)
                values[f"{name}-fmt"].append(len(views[name]) / seconds)
                with open(views[name][0], "rb") as f:
                    if f.read(2) != b"\xff\xd8":
                        raise BenchFailure(f"not a JPEG: {views[name][0]}")
                mounts[name].sample_rss()
            out = os.path.join(bench.scratch, f"vips-{rep}")
            os.makedirs(out)
            values["vips"].append(len(sources) / vipsthumbnail(sources, out))
            made = [os.path.join(out, entry) for entry in sorted(os.listdir(out))]
            if len(made) != len(sources):
                raise BenchFailure(f"vipsthumbnail wrote {len(made)} of {len(sources)} files")
            desktop_name = systems[0].name
            xdg = os.path.join(bench.scratch, f"desktop-{rep}")
            values["desktop"].append(
                len(rels) / desktop_thumbnails(mounts[desktop_name], systems[0].binary, bench.origin.url, rels, xdg))
            png_out = os.path.join(bench.scratch, f"vips-png-{rep}")
            os.makedirs(png_out)
            values["vips-png"].append(len(sources) / vipsthumbnail_pngs(sources, png_out))
            shutil.rmtree(png_out)
            copies = os.path.join(bench.scratch, f"vips-copy-{rep}")
            os.makedirs(copies)
            values["vips-copy"].append(len(sources) / vips_copy_jpeg(sources, copies))
            shutil.rmtree(copies)
            pillow_out = os.path.join(bench.scratch, f"pillow-{rep}")
            os.makedirs(pillow_out)
            values["pillow"].append(len(sources) / pillow_thumbnails(sources, pillow_out, threads))
            with bench.fuse_floor.mounted("--memory", made) as floor:
                read_whole(floor, SMALL_READERS)  # in the kernel's page cache, as the variants are
                rereads = ([(f"{name}-warm", thumbs[name]) for name in order]
                           + [("tmpfs-warm", made), ("floor-warm", floor)]
                           + [(f"{name}-icons", icons[name]) for name in order] + [("icons-tmpfs", icons_tmpfs)])
                passes = {key: [] for key, _ in rereads}
                for _ in range(WARM_PASSES):
                    for key, paths in rereads:
                        many = paths * REREAD_ROUNDS
                        passes[key].append(len(many) / read_whole(many, SMALL_READERS)[0])
            for key, rates in passes.items():
                values[key].append(statistics.median(rates))
            shutil.rmtree(out)
            shutil.rmtree(pillow_out)
            log(f"thumbnails rep {rep + 1}: " + ", ".join(f"{n} {values[n][-1]:.1f}/s" for n in order)
                + f", vipsthumbnail {values['vips'][-1]:.1f}/s, Pillow {values['pillow'][-1]:.1f}/s; warm reread "
                + ", ".join(f"{n} {values[n + '-warm'][-1]:.0f}/s" for n in order)
                + f", tmpfs {values['tmpfs-warm'][-1]:.0f}/s; fmt/jpeg/ "
                + ", ".join(f"{n} {values[n + '-fmt'][-1]:.2f}/s" for n in order if n in views)
                + f", libvips to JPEG {values['vips-copy'][-1]:.2f}/s")
        peaks = {name: mount.sample_rss() or vmhwm_mib(mount.proc.pid) or 0 for name, mount in mounts.items()}
    finally:
        for mount in mounts.values():
            mount.unmount()
    results = Results()
    for name in mounts:
        for key, row in (("thumb-256", name), ("thumb-warm", f"{name}-warm"), ("thumb-icons-warm", f"{name}-icons"),
                         ("fmt-jpeg", f"{name}-fmt")):
            for value in values.get(row, []):
                results.add(name, key, value)
        results.add(name, "thumb-rss", peaks[name])
    for value in values["desktop"]:
        results.add(systems[0].name, "thumb-desktop", value)
    return table(bench, values, peaks, len(rels), threads, list(mounts)), results


# (key, label, unit, better) of the imgfs rows above, for the before/after table (benchkit/compare.py).
THUMBNAIL_WORKLOADS = [
    ("thumb-256", f"thumb/{SIZE}/ through the mount, originals cached", "thumbnails/s", "higher"),
    ("thumb-warm", "warm reread of the variants through the mount", "files/s", "higher"),
    ("thumb-icons-warm", "the same reread of as many cached icons through img/", "files/s", "higher"),
    ("fmt-jpeg", "fmt/jpeg/ of the large images through the mount, originals cached", "files/s", "higher"),
    ("thumb-rss", "daemon peak RSS (VmHWM)", "MiB", "lower"),
    ("thumb-desktop", "imgfs thumbnails --desktop (normal + large PNGs), originals cached", "entries/s", "higher"),
]


def table(bench, values, peaks, count, threads, names):
    def cell(key):
        v = values[key]
        return f"{statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"

    def ratio(key, limit):
        # Paired: each repetition's ratio (its rows ran seconds apart), then the median, so a change in the shared
        # machine's load between repetitions does not count as a difference between the rows.
        pairs = [a / b for a, b in zip(values[key], values[limit])]
        return f"{statistics.median(pairs):.2f}× ({min(pairs):.2f}–{max(pairs):.2f})"
    large_bytes = sum(bench.manifest[r][0] for r in bench.large) / 1e6

    def rows_of(name):
        """The rows of one imgfs build (imgfs, or its --before build)."""
        rows = [
            f"| {name} thumb/{SIZE}/ through the mount, originals cached, {LARGE_READERS} readers | {cell(name)} "
            f"| {ratio(name, 'vips')} vipsthumbnail | ≥ 1.5× |",
            f"| {name}: warm reread of the variants through the mount, {SMALL_READERS} readers "
            f"| {cell(name + '-warm')} | {ratio(name + '-warm', 'tmpfs-warm')} tmpfs; "
            f"{ratio(name + '-warm', 'floor-warm')} floorfs | ≥ 0.5× |",
            f"| {name}: the same reread of {count} cached icons through img/ | {cell(name + '-icons')} "
            f"| {ratio(name + '-icons', 'icons-tmpfs')} tmpfs | |",
            f"| {name} peak RSS (VmHWM) | {peaks[name]:.0f} MiB | | |",
        ]
        if values[name + "-fmt"]:
            rows.insert(-1, f"| {name} fmt/jpeg/ of the {count} large images through the mount, originals cached, "
                        f"{LARGE_READERS} readers | {cell(name + '-fmt')} "
                        f"| {ratio(name + '-fmt', 'vips-copy')} libvips to JPEG | ≥ 1.0× |")
        return rows
    rows = [
        f"Thumbnails at {SIZE} px of the {count} large images ({large_bytes:.0f} MB), {bench.reps} repetition(s), "
        f"median (min–max); {os.cpu_count()} CPUs (shared with whatever else runs).",
        "",
        "| row | per second | ratio | target |",
        "|---|---|---|---|",
        *(row for name in names for row in rows_of(name)),
        f"| {names[0]} desktop thumbnails: imgfs thumbnails --desktop of the {count} large images (normal/ and "
        f"large/ PNGs), originals cached | {cell('desktop')} | {ratio('desktop', 'vips-png')} vipsthumbnail | ≥ 1.5× |",
        f"| vipsthumbnail writing the same PNGs (128 and 256 px, one process per size) on tmpfs | {cell('vips-png')} "
        f"| 1.00× | |",
        f"| vipsthumbnail, one process over all files on tmpfs | {cell('vips')} | 1.00× | |",
        f"| Pillow draft() + thumbnail() from tmpfs, {threads} threads | {cell('pillow')} "
        f"| {ratio('pillow', 'vips')} vipsthumbnail | |",
        f"| warm reread of vipsthumbnail's files on tmpfs | {cell('tmpfs-warm')} | 1.00× | |",
        f"| FUSE floor: the same reread of vipsthumbnail's files through floorfs (benchmark/floorfs.c) "
        f"| {cell('floor-warm')} | {ratio('floor-warm', 'tmpfs-warm')} tmpfs | |",
        f"| the same icons on tmpfs | {cell('icons-tmpfs')} | 1.00× | |",
        f"| libvips to JPEG (`vips copy IN OUT.jpg`), one process over all files on tmpfs | {cell('vips-copy')} "
        f"| 1.00× | |",
    ]
    return "\n".join(rows)
