"""What the benchmark reads, with how many readers, and the delay of the 20 ms variant."""



MB = 1_000_000
MEMORY_BUDGET = "256M"
MEMORY_BUDGET_MIB = 256
SMALL_READERS = 16
LARGE_READERS = 4
DEDUP_READERS = 32
FIRST_BYTES = 64 * 1024
KERNEL_READ_AHEAD_KIB = 1024  # imgfs's default --tune kernel-read-ahead, which floorfs gets too
WARM_PASSES = 5  # warm rows: 5 passes; the first is reported alone, and the median of the other 4
THROTTLE_RATE = "2m"  # nginx limit_rate of /throttled/: 2 MiB/s
ONE_WAY_DELAY = 0.010  # the delay line: 10 ms each way = 20 ms round trip

ICON_PACKAGES = ["adwaita-icon-theme", "gnome-icon-theme", "oxygen-icon-theme"]
# (source file, Debian package, conversion): conversions re-encode losslessly to PNG to get tens of MB.
LARGE_IMAGES = [
    ("/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg", "mate-backgrounds", "png"),
    ("/usr/share/backgrounds/gnome/pixels-l.webp", "gnome-backgrounds", "png"),
    ("/usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg", "lomiri-wallpapers-20.04", "png"),
    ("/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg", "mate-backgrounds", None),
    ("/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg", "mate-backgrounds", None),
    ("/usr/share/backgrounds/gnome/pixels-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/Infinite-Sea_by_Aury88.jpg", "lomiri-wallpapers-20.04", None),
    ("/usr/share/backgrounds/gnome/pixels-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg", "lomiri-wallpapers-20.04", None),
    ("/usr/share/backgrounds/gnome/adwaita-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/gnome/adwaita-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/warty-final-ubuntu.png", "lomiri-wallpapers", None),
    ("/usr/share/backgrounds/gnome/licorice-l.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/mate/abstract/Gulp.png", "mate-backgrounds", None),
    ("/usr/share/backgrounds/mate/desktop/Ubuntu-Mate-Cold-no-logo.png", "mate-backgrounds", None),
    ("/usr/share/backgrounds/gnome/grid-d.webp", "gnome-backgrounds", None),
    ("/usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers-16.04", None),
    ("/usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers-16.04", None),
    ("/usr/share/plymouth/themes/emerald/logo+emerald.png", "desktop-base", None),
    ("/usr/share/backgrounds/Dragonfly_by_Bolly.jpg", "lomiri-wallpapers-16.04", None),
]
QUICK_LARGE = LARGE_IMAGES[4:10]  # six of 4-9 MB, no conversion
DEDUP_SOURCE = "/usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg"  # 16.4 MB
THROTTLED_SOURCE = "/usr/share/backgrounds/mate/abstract/Elephants_3840x2160.jpg"  # 8.5 MB

# The corpus of the "icons" and "harness" variants (issue 20's independent harness): smaller icons (512–6,000 B: mean
# ≈ 1.6 KB) and 23 large files of 1–48 MB with a 48 MB PNG among them (random pixels: no Debian image is that big).
HARNESS_ICON_RANGE = (512, 6000)
NOISE_48MB = ("noise:4000x4000", "a 48 MB PNG of random pixels made by the benchmark", "png")
HARNESS_EXTRA = [
    ("/usr/share/backgrounds/mate/abstract/Elephants.jpg", "mate-backgrounds", None),  # 1.0 MB
    ("/usr/share/backgrounds/mate/desktop/Ubuntu-Mate-Warm-no-logo.png", "mate-backgrounds", None),  # 1.8 MB
    NOISE_48MB,
]
HARNESS_LARGE = LARGE_IMAGES + HARNESS_EXTRA
QUICK_HARNESS_LARGE = QUICK_LARGE + [HARNESS_EXTRA[0], NOISE_48MB]
VARIANT_REPS = 2  # repetitions of each variant beside loopback in a full run (loopback: --reps, 3)
# Each restart (tmpfs, ext4 after drop_caches) is timed this many times on the same cache: the row's spread.
RESTART_REPEATS = 3
