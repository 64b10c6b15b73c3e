// swift-tools-version:6.0
// The layers, each depending only on the ones above it:
//   CFuse, CCurl, CCurlShims,
//   CFuseShims                C interop only
//   ImgfsCore                 naming, fetching, caching, filesystem logic; no C imports
//   ImgfsCurl                 the libcurl multi fetcher (ImgfsCore + CCurlShims)
//   ImgfsFuse                 the thin low-level FUSE adapter (ImgfsCore + CFuse)
//   ImgfsSystem               Linux facilities: memory pressure (PSI, cgroups, /proc/meminfo), allocator trim,
//                             memfd memory for image bodies
//   imgfs                     the command line; wires ImgfsCurl and ImgfsFuse together
import PackageDescription

let package = Package(
    name: "imgfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "imgfs", targets: ["imgfs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Links zlib and libbrotlidec (Debian zlib1g-dev, libbrotli-dev) for its Content-Encoding decoders.
        .target(name: "CCurlShims", dependencies: ["CCurl"],
                linkerSettings: [.linkedLibrary("z"), .linkedLibrary("brotlidec")]),
        .target(name: "CFuseShims", dependencies: ["CFuse"]),
        .target(name: "ImgfsCore", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "ImgfsCurl", dependencies: ["ImgfsCore", "CCurlShims", "CCurl"]),
        .target(name: "ImgfsFuse", dependencies: ["ImgfsCore", "CFuse", "CFuseShims"]),
        .target(name: "ImgfsSystem", dependencies: ["ImgfsCore", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "imgfs",
            dependencies: [
                "ImgfsCore", "ImgfsCurl", "ImgfsFuse", "ImgfsSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "ImgfsTestSupport", path: "Tests/ImgfsTestSupport"),
        .testTarget(name: "ImgfsCoreTests", dependencies: ["ImgfsCore"]),
        .testTarget(name: "ImgfsSystemTests", dependencies: ["ImgfsSystem"]),
        .testTarget(name: "ImgfsIntegrationTests", dependencies: ["ImgfsCore", "ImgfsTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
