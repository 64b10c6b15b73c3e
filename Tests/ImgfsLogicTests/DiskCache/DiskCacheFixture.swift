import Foundation
import Logging

@testable import ImgfsModel
@testable import ImgfsStore

/// A temporary cache directory for one test, with helpers to open caches on it and to look at its files.
struct DiskCacheFixture {
    let directory: URL

    init() throws {
        directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("imgfs-disk-cache-test-\(UUID().uuidString)")
    }

    /// Removes the directory; call it in a `defer`.
    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    static let logger = Logger(label: "imgfs.disk-cache.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A cache on the directory (not fsyncing unless `durable`, to keep tests fast), keeping every body in a data file
    /// beside its record unless `singleFileLimit` (the largest body kept in one entry file with its record) says so.
    func open(
        sizeLimit: Int = 1 << 30, durable: Bool = false, now: (@Sendable () -> Date)? = nil,
        writeFault: (@Sendable (String) -> Int32?)? = nil, paceStep: Int? = nil,
        singleFileLimit: Int = -1
    ) throws -> DiskCache {
        var options = DiskCacheOptions()
        options.durable = durable
        options.singleFileLimit = singleFileLimit
        if let paceStep { options.paceStep = paceStep }
        if let now { options.now = now }
        options.writeFault = writeFault
        return try DiskCache(directory: directory, sizeLimit: sizeLimit, logger: Self.logger, options: options)
    }

    // MARK: - Records and bodies

    static func key(_ url: String) -> String { SHA256.hex(of: Array(url.utf8)) }

    static func record(
        _ url: String, size: Int = 0, expiresAt: Date = Date(timeIntervalSinceNow: 3600),
        etag: String? = "\"v1\""
    ) -> CacheRecord {
        CacheRecord(
            key: key(url), url: url, size: size, contentType: "image/png", etag: etag,
            lastModified: Date(timeIntervalSince1970: 1_700_000_000),
            fetchedAt: Date(timeIntervalSince1970: 1_700_000_100),
            expiresAt: expiresAt)
    }

    /// `count` bytes that differ between seeds.
    static func body(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7) }
    }

    // MARK: - Files

    var root: URL { directory.appendingPathComponent(DiskCacheLayout.version) }

    func subdirectory(for key: String) -> URL { root.appendingPathComponent(String(key.prefix(2))) }

    func metaFile(for key: String) -> URL { subdirectory(for: key).appendingPathComponent(key + ".meta") }

    func dataFile(for key: String, checksum: UInt32) -> URL {
        subdirectory(for: key).appendingPathComponent(key + "." + DiskCacheLayout.hex(checksum) + ".data")
    }

    func entryFile(for key: String, checksum: UInt32, size: Int) -> URL {
        subdirectory(for: key).appendingPathComponent(
            key + "." + DiskCacheLayout.hex(checksum) + "." + DiskCacheLayout.hex(UInt32(size)) + ".entry")
    }

    /// Every regular file under the layout directory except the lock file, relative to it.
    func files() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(
                atPath: root.appendingPathComponent(path).path, isDirectory: &isDirectory)
            if !isDirectory.boolValue && path != "lock" { files.append(path) }
        }
        return files.sorted()
    }

    /// The sum of the sizes of ``files()``, and of the bodies (`.data`, and the bodies in `.entry` files) alone.
    func diskUsage() -> (all: Int, bodies: Int) {
        var all = 0
        var bodies = 0
        for path in files() {
            let size =
                (try? FileManager.default.attributesOfItem(atPath: root.appendingPathComponent(path).path)[.size]
                    as? Int) ?? 0
            all += size
            if path.hasSuffix(".data") { bodies += size }
            if path.hasSuffix(".entry"), let hex = path.split(separator: ".").dropLast().last {
                bodies += Int(hex, radix: 16) ?? 0
            }
        }
        return (all, bodies)
    }

    func write(_ bytes: [UInt8], to url: URL, modified: Date? = nil) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        if let modified { try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: url.path) }
    }
}

/// A clock tests move by hand.
final class DiskCacheTestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date()) { current = start }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }
}
