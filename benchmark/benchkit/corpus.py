"""The corpus: real images from Debian packages, on a tmpfs."""
import hashlib
import os
import random
import re
import shutil
import struct
import subprocess
import zlib

from .settings import DEDUP_SOURCE, ICON_PACKAGES, THROTTLED_SOURCE
from .processes import BenchFailure


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def package_files(package):
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


CONVERTED = {}  # (source, format) -> a file made earlier in this run: a second corpus copies it instead


def write_noise_png(path, width, height, seed):
    """A valid 8-bit RGB PNG of seeded random pixels (incompressible: the file is width × height × 3 bytes and a
    little more), for a large image of an exact size that no Debian package ships."""
    raw = random.Random(seed).randbytes(width * height * 3)
    stride = width * 3
    rows = b"".join(b"\0" + raw[y * stride:(y + 1) * stride] for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def build_corpus(root, small_count, large_images, icon_range=(512, 50 * 1024)):
    """Writes small/, large/, dedup/ and throttled/ under root; returns {relative path: (size, sha256)}. Icons are
    the distinct PNGs of ICON_PACKAGES whose size is within icon_range (bytes). A large image whose source is
    `noise:<W>x<H>` is a PNG of random pixels made here (write_noise_png)."""
    manifest = {}
    os.makedirs(os.path.join(root, "small"))
    os.makedirs(os.path.join(root, "large"))
    os.makedirs(os.path.join(root, "dedup"))
    os.makedirs(os.path.join(root, "throttled"))
    candidates = {}
    for package in ICON_PACKAGES:
        for path in package_files(package):
            if not path.endswith(".png") or not os.path.isfile(path) or os.path.islink(path):
                continue
            size = os.path.getsize(path)
            if icon_range[0] <= size <= icon_range[1]:
                with open(path, "rb") as f:
                    data = f.read()
                if data[:8] != b"\x89PNG\r\n\x1a\n":
                    continue
                candidates.setdefault(hashlib.sha256(data).hexdigest(), path)
    if len(candidates) < small_count:
        raise BenchFailure(f"only {len(candidates)} distinct icons found in {ICON_PACKAGES}")
    chosen = sorted(candidates.items())[:small_count]  # a deterministic, size-blind sample
    for index, (digest, source) in enumerate(chosen):
        rel = f"small/{index:04d}-{safe_name(os.path.basename(source))}"
        shutil.copyfile(source, os.path.join(root, rel))
        manifest[rel] = (os.path.getsize(source), digest)

    def make_large(item):
        index, (source, _package, conversion) = item
        base = safe_name(os.path.splitext(os.path.basename(source))[0])
        if source.startswith("noise:"):
            width, height = (int(x) for x in source[len("noise:"):].split("x"))
            rel = f"large/{index:02d}-noise-{width}x{height}.png"
            write_noise_png(os.path.join(root, rel), width, height, seed=index)
        elif conversion and (source, conversion) in CONVERTED:
            rel = f"large/{index:02d}-{base}-lossless.{conversion}"
            shutil.copyfile(CONVERTED[(source, conversion)], os.path.join(root, rel))
        elif conversion:
            rel = f"large/{index:02d}-{base}-lossless.{conversion}"
            subprocess.run(["/usr/bin/convert", source, "-quality", "100", os.path.join(root, rel)], check=True)
            CONVERTED[(source, conversion)] = os.path.join(root, rel)
        else:
            rel = f"large/{index:02d}-{safe_name(os.path.basename(source))}"
            shutil.copyfile(source, os.path.join(root, rel))
        return rel

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        rels = list(pool.map(make_large, enumerate(large_images)))
    for rel in rels:
        path = os.path.join(root, rel)
        manifest[rel] = (os.path.getsize(path), sha256_file(path))
    for rel, source in (("dedup/elephants-16mb.jpg", DEDUP_SOURCE), ("throttled/elephants-8mb.jpg", THROTTLED_SOURCE)):
        shutil.copyfile(source, os.path.join(root, rel))
        manifest[rel] = (os.path.getsize(source), sha256_file(source))
    return manifest
