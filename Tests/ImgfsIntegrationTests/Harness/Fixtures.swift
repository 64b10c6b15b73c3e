import Foundation
import ImgfsModel
import Synchronization

/// Real images shipped by Debian packages (the README's test command installs them).
enum Fixtures {
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    /// Small PNG icons from adwaita-icon-theme, in a stable order.
    static func smallPNGs(_ count: Int) throws -> [[UInt8]] {
        let root = "/usr/share/icons/Adwaita/48x48"
        let files = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".png") }.sorted().prefix(count)
        guard files.count == count else {
            throw Missing(description: "need \(count) PNG icons under \(root): apt-get install adwaita-icon-theme")
        }
        return try files.map { try bytes("\(root)/\($0)") }
    }

    /// A multi-MiB JPEG wallpaper (lomiri-wallpapers).
    static func largeJPEG() throws -> [UInt8] {
        try largest(in: "/usr/share/backgrounds", suffix: ".jpg", package: "lomiri-wallpapers")
    }

    /// A multi-MiB PNG wallpaper (lomiri-wallpapers).
    static func largePNG() throws -> [UInt8] {
        try largest(in: "/usr/share/backgrounds", suffix: ".png", package: "lomiri-wallpapers")
    }

    /// Real JPEG wallpapers no larger than `maximumSize`, smallest first (lomiri-wallpapers).
    static func wallpapers(maximumSize: Int, count: Int) throws -> [[UInt8]] {
        let directory = "/usr/share/backgrounds"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasSuffix(".jpg")
        }
        let sized = names.compactMap { name -> (String, Int)? in
            let size = (try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")[.size] as? Int) ?? nil
            return size.flatMap { $0 <= maximumSize ? ("\(directory)/\(name)", $0) : nil }
        }.sorted { $0.1 < $1.1 }.prefix(count)
        guard sized.count == count else {
            throw Missing(
                description:
                    "need \(count) JPEGs of at most \(maximumSize) bytes in \(directory): apt-get install "
                    + "lomiri-wallpapers"
            )
        }
        return try sized.map { try bytes($0.0) }
    }

    /// A JPEG of a few hundred KiB (desktop-base).
    static func mediumJPEG() throws -> [UInt8] {
        try bytes(
            "/usr/share/plasma/look-and-feel/org.debian.desktop/contents/previews/fullscreenpreview.jpg",
            package: "desktop-base")
    }

    /// The SHA-256 of `bytes`, remembered (the debug build hashes slowly and tests compare often).
    static func sha256(_ bytes: [UInt8]) -> String {
        // Keyed by all the bytes (one fast pass): a key made of the ends alone gave a copy whose middle differs the
        // digest of the original.
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        let key = hasher.finalize() ^ bytes.count
        if let known = digests.withLock({ $0[key] }) { return known }
        let digest = SHA256.hex(of: bytes)
        digests.withLock { $0[key] = digest }
        return digest
    }

    /// A read's result by SHA-256 of its bytes (so that a failure does not print megabytes).
    static func digest(_ result: Result<[UInt8], Errno>?) -> Result<String, Errno>? {
        result.map { $0.map(sha256) }
    }

    private static let digests = Mutex<[Int: String]>([:])

    private static func largest(in directory: String, suffix: String, package: String) throws -> [UInt8] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let sized = names.filter { $0.hasSuffix(suffix) }.compactMap { name -> (String, Int)? in
            let size = (try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")[.size] as? Int) ?? nil
            return size.map { ("\(directory)/\(name)", $0) }
        }
        guard let (path, size) = sized.max(by: { $0.1 < $1.1 }), size > 2 << 20 else {
            throw Missing(description: "need a multi-MiB \(suffix) in \(directory): apt-get install \(package)")
        }
        return try bytes(path)
    }

    private static func bytes(_ path: String, package: String = "") throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Missing(
                description: "missing fixture \(path)\(package.isEmpty ? "" : ": apt-get install \(package)")")
        }
        return [UInt8](data)
    }
}
