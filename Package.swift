// swift-tools-version:6.0
// The layers, each depending only on the ones above it (the compiler checks it: a target sees only what it depends on):
//   CFuse, CCurl, CCurlShims,
//   CFuseShims,
//   CVipsShims (libvips by dlopen), CHiredis,
//   CStoreShims, CTmpfsShims  C interop only
//   ImgfsModel                values: URLs and names, errors, metadata, request rules, address rules, signatures
//   ImgfsWorkers              threads: WorkerThread (the one way a thread is started) and WorkerPool (the one job
//                             queue); Glibc, Dispatch and Synchronization only
//   ImgfsStore                the disk cache: records, the index, atomic writes, scanning, the CRC-32
//                             (ImgfsModel, ImgfsWorkers + CStoreShims)
//   ImgfsPipeline             downloads, the in-flight table, remembered failures, the memory cache and the tiers,
//                             the disk-write queue, the shared tier, variants (ImgfsModel, ImgfsWorkers, ImgfsStore)
//   ImgfsFilesystem           the file system without FUSE: inodes, the views img/, lists/, hosts/, thumb/, .imgfs/,
//                             lists and read-ahead, statistics (ImgfsModel, ImgfsStore, ImgfsPipeline)
//   ImgfsSystem               Linux facilities: memory pressure (PSI, cgroups, /proc/meminfo), allocator trim,
//                             shared memory for image bodies (a private tmpfs in large pages, or memfds), the
//                             signal thread (+ CTmpfsShims)
//   ImgfsCurl                 the libcurl multi fetcher (ImgfsPipeline, ImgfsSystem + CCurlShims)
//   ImgfsFuse                 the thin low-level FUSE adapter (ImgfsFilesystem, ImgfsSystem + CFuse)
//   ImgfsVips                 libvips making thumbnails and downsized variants (ImgfsPipeline + CVipsShims)
//   ImgfsRedis                the shared tier's store on Redis through hiredis (ImgfsPipeline + CHiredis)
//   imgfs                     the command line; wires ImgfsCurl, ImgfsFuse, ImgfsVips and ImgfsRedis together
import PackageDescription

// libvips's headers include GLib's, whose configuration header lives in the multiarch library directory (Debian).
#if arch(arm64)
    let multiarch = "aarch64-linux-gnu"
#else
    let multiarch = "x86_64-linux-gnu"
#endif
let glibIncludes = ["-I/usr/include/glib-2.0", "-I/usr/lib/\(multiarch)/glib-2.0/include"]

let package = Package(
    name: "imgfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "imgfs", targets: ["imgfs"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2")
    ],
    targets: [
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Links zlib and libbrotlidec (Debian zlib1g-dev, libbrotli-dev) for its Content-Encoding decoders.
        .target(
            name: "CCurlShims", dependencies: ["CCurl"],
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("brotlidec")]),
        .target(name: "CFuseShims", dependencies: ["CFuse"]),
        // libvips is not linked: CVipsShims opens it with dlopen when the first variant is made (library.c), so only
        // its headers and GLib's are needed here (pkg-config would link libvips and GLib too).
        .target(name: "CVipsShims", cSettings: [.unsafeFlags(glibIncludes)]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .target(name: "ImgfsModel", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "ImgfsWorkers"),
        .target(
            name: "ImgfsStore",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "CStoreShims", .product(name: "Logging", package: "swift-log")
            ]),
        .target(
            name: "ImgfsPipeline",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "ImgfsStore", .product(name: "Logging", package: "swift-log")
            ]),
        .target(
            name: "ImgfsFilesystem",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "ImgfsStore", "ImgfsPipeline",
                .product(name: "Logging", package: "swift-log")
            ]),
        .target(
            name: "ImgfsCurl",
            dependencies: ["ImgfsModel", "ImgfsWorkers", "ImgfsPipeline", "ImgfsSystem", "CCurlShims", "CCurl"]),
        .target(
            name: "ImgfsFuse",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "ImgfsPipeline", "ImgfsFilesystem", "ImgfsSystem", "CFuse", "CFuseShims"
            ]),
        .target(name: "ImgfsRedis", dependencies: ["ImgfsModel", "ImgfsPipeline", "CHiredis"]),
        .target(name: "ImgfsVips", dependencies: ["ImgfsModel", "ImgfsPipeline", "CVipsShims"]),
        .target(name: "CStoreShims"),
        .target(name: "CTmpfsShims"),
        .target(
            name: "ImgfsSystem",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "ImgfsStore", "ImgfsPipeline", "CTmpfsShims",
                .product(name: "Logging", package: "swift-log")
            ]),
        .executableTarget(
            name: "imgfs",
            dependencies: [
                "ImgfsModel", "ImgfsStore", "ImgfsPipeline", "ImgfsFilesystem", "ImgfsCurl", "ImgfsFuse", "ImgfsRedis",
                "ImgfsSystem", "ImgfsVips", "ImgfsWorkers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams")
            ]
        ),
        .target(name: "ImgfsTestSupport", path: "Tests/ImgfsTestSupport"),
        .testTarget(
            name: "ImgfsLogicTests",
            dependencies: [
                "ImgfsModel", "ImgfsWorkers", "ImgfsStore", "ImgfsPipeline", "ImgfsFilesystem", "ImgfsTestSupport",
                .product(name: "Logging", package: "swift-log")
            ]),
        .testTarget(name: "ImgfsSystemTests", dependencies: ["ImgfsSystem"]),
        .testTarget(name: "ImgfsWorkersTests", dependencies: ["ImgfsWorkers"]),
        .testTarget(name: "ImgfsFuseTests", dependencies: ["CFuseShims", "ImgfsFuse"]),
        .testTarget(name: "ImgfsCommandTests", dependencies: ["imgfs"]),
        .testTarget(
            name: "ImgfsCurlTests",
            dependencies: [
                "ImgfsModel", "ImgfsPipeline", "ImgfsCurl", "ImgfsTestSupport",
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .testTarget(
            name: "ImgfsIntegrationTests",
            dependencies: ["ImgfsModel", "ImgfsStore", "ImgfsPipeline", "ImgfsFilesystem", "ImgfsTestSupport"])
    ],
    swiftLanguageModes: [.v6]
)
