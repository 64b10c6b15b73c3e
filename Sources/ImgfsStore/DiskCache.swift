import Foundation
import ImgfsModel
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A persistent, size-bounded cache of image bodies and their records, safe against crashes and corruption.
///
/// Guarantees:
/// - **Atomic entries.** ``store(_:body:)`` and ``update(_:)`` write through a temporary file, `fsync`, `rename` and
///   a directory `fsync`; a crash (even `kill -9` or power loss) at any moment leaves the old entry or the new one,
///   never a partial body served as whole. A failed write (`ENOSPC`, `EIO`, …) removes its temporary file and
///   throws, leaving no partial entry.
/// - **Verified reads.** The first read of an entry after the cache was opened checks the whole body against its
///   size and CRC-32; a mismatching, truncated or missing body removes the entry and throws
///   ``DiskCacheError/corrupt(_:)`` so the caller fetches again. Later reads use `pread` without checking again.
/// - **Bounded size.** Bodies total at most `sizeLimit` bytes, least recently used entries are evicted first; the
///   order survives restarts approximately (each entry's last use is written at most about once a minute).
/// - **Fast start.** Opening lists the files and reads their status only: no bodies, no records, no hashing.
///   Leftovers of interrupted writes (temporary files, bodies without a record, records without a body) are removed.
/// - **Thread safety.** Every method may be called from any thread. Reads never wait for another call's disk I/O;
///   changes to the files (store, update, removals) are serialized among themselves.
///
/// The file layout is described at ``DiskCacheLayout``. Several instances may share a directory (each holds a
/// shared `flock` on `v1/lock`; only an instance that is alone at startup removes young leftovers), but their size
/// accounting is separate, so the limit is only kept for the files each one wrote.
public final class DiskCache: Sendable {
    // MARK: - State

    /// The most bytes of bodies the cache keeps.
    public let sizeLimit: Int
    let layout: DiskCacheLayout
    let logger: Logger
    let options: DiskCacheOptions
    /// The index, behind its lock: never held during disk I/O, and never taken before `writeLock` by a holder of it.
    private let index: Locked<DiskCacheIndex>
    /// Serializes changes to the files, so that a key's files and its index entry change together.
    private let writeLock = Locked(())
    /// Holds the shared `flock` on `v1/lock` for the life of the instance.
    private let lockFD: Int32

    // MARK: - Opening

    /// Opens (creating it, and its parents, with mode 0700 when missing) the cache in `directory`, keeping at most
    /// `sizeLimit` bytes of bodies. Builds the index from file names and statuses only, removes leftovers of
    /// interrupted writes, and evicts least recently used entries if the files exceed `sizeLimit`. `expiry` says when a
    /// record stops being fresh, for sweeps (by default its stored `expiresAt`).
    /// - Throws: ``DiskCacheError`` when the directory cannot be created or listed.
    public convenience init(
        directory: URL, sizeLimit: Int, logger: Logger,
        expiry: @escaping @Sendable (CacheRecord) -> Date = { $0.expiresAt }
    ) throws {
        var options = DiskCacheOptions()
        options.expiry = expiry
        try self.init(directory: directory, sizeLimit: sizeLimit, logger: logger, options: options)
    }

    init(directory: URL, sizeLimit: Int, logger: Logger, options: DiskCacheOptions) throws {
        let layout = DiskCacheLayout(directory: directory.path)
        var lockFD: Int32 = -1
        do {
            try DiskCacheIO.makeDirectories(layout.root)
            lockFD = try DiskCacheIO.open(layout.lockPath, O_RDWR | O_CREAT, mode: 0o600)
            let exclusive = (try? DiskCacheIO.flock(lockFD, LOCK_EX | LOCK_NB, path: layout.lockPath)) ?? false
            if !exclusive { _ = try? DiskCacheIO.flock(lockFD, LOCK_SH, path: layout.lockPath) }
            let scan = try DiskCacheScanner(layout: layout, exclusive: exclusive, now: options.now(), logger: logger)
                .scan()
            if exclusive { _ = try? DiskCacheIO.flock(lockFD, LOCK_SH, path: layout.lockPath) }
            var index = DiskCacheIndex(capacity: scan.entries.count)
            for entry in scan.entries { index.insert(entry) }
            self.index = Locked(index)
            if scan.removedFiles > 0 {
                logger.info("disk cache: removed \(scan.removedFiles) leftover files of interrupted writes")
            }
        } catch {
            if lockFD >= 0 { try? DiskCacheIO.close(lockFD, path: layout.lockPath) }
            throw error.diskCacheError
        }
        self.layout = layout
        self.sizeLimit = max(0, sizeLimit)
        self.logger = logger
        self.options = options
        self.lockFD = lockFD
        let victims = withWriteLock { withIndex { _makeRoom(for: nil, size: 0, in: &$0) } }
        withWriteLock { _removeFiles(of: victims) }
        logger.debug("disk cache opened", metadata: ["entries": "\(count)", "bytes": "\(totalBytes)"])
    }

    deinit {
        try? DiskCacheIO.close(lockFD, path: layout.lockPath)
    }

    // MARK: - Locks

    /// Runs `body` with the index lock held. `body` must not do disk I/O or take `writeLock`.
    @discardableResult
    func withIndex<Result>(_ body: (inout DiskCacheIndex) throws -> Result) rethrows -> Result {
        try index.withLock(body)
    }

    /// Runs `body` with the write lock held: no other change to the files runs meanwhile.
    func withWriteLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        try writeLock.withLock { _ in try body() }
    }

    // MARK: - Statistics

    /// The sum of the sizes of the bodies kept (records not counted); at most ``sizeLimit`` after every call.
    public var totalBytes: Int { withIndex { $0.totalBytes } }

    /// The number of entries.
    public var count: Int { withIndex { $0.count } }

    /// The number of entries evicted to respect ``sizeLimit`` since the cache was opened.
    public var evictionCount: Int { withIndex { $0.evictionCount } }

    // MARK: - Lookup

    /// All keys, sorted: a snapshot for paged listings, whose pages are then looked up with ``record(forKey:)``.
    public func keys() -> [String] {
        let keys = withIndex { Array($0.keys) }
        return keys.sorted().map(\.description)
    }

    /// The record of the entry `key`, or nil when there is none. The record is read from disk the first time and
    /// then kept in memory; one that does not match its files is treated as corrupt (the entry is removed, nil is
    /// returned). `lastAccess` is the cache's own. The body is not verified here; ``read(key:offset:count:)`` does.
    public func record(forKey key: String) -> CacheRecord? {
        guard let parsed = DiskCacheKey(key) else { return nil }
        do {
            return try loadRecordIfPresent(parsed)?.record
        } catch {
            if case .io = error.diskCacheError {
                logger.warning("disk cache: cannot read the record of \(key): \(error)")
            }
            return nil
        }
    }

    // MARK: - Use

    /// Marks the entry `key` as used now, for least-recently-used eviction. Does disk I/O (setting the body file's
    /// modification time, so the order survives restarts) at most about once a minute per entry. Unknown keys are
    /// ignored.
    public func touch(key: String) {
        if let key = DiskCacheKey(key) { markUsed(key) }
    }

    /// Marks `key` used now, persisting the time when the last persisted one is older than the interval.
    func markUsed(_ key: DiskCacheKey) {
        let now = options.now()
        let bodyPath: String? = withIndex { index in
            guard let entry = index.markUsed(key, at: now),
                abs(now.timeIntervalSince(entry.persistedAccess)) >= options.accessPersistInterval
            else { return nil }
            index.modify(key, generation: entry.generation) { $0.persistedAccess = now }
            return layout.bodyPath(of: entry)
        }
        guard let bodyPath else { return }
        do {
            try DiskCacheIO.setModificationTime(bodyPath, to: now)
        } catch let error as DiskCacheSystemError where error.isMissing {
            return  // removed meanwhile
        } catch {
            logger.debug("disk cache: cannot record the last use of \(key): \(error)")
        }
    }
}

// MARK: - DiskCacheOptions

/// Knobs of ``DiskCache`` that only tests change.
struct DiskCacheOptions: Sendable {
    /// Whether files and directories are synced to the device before a write counts as done. Turning it off keeps
    /// the write order and atomic renames but gives up durability across power loss; only tests do.
    var durable = true
    /// How often at most an entry's last use is written to disk (as its data file's modification time).
    var accessPersistInterval: TimeInterval = 60
    /// Bodies of at most this many bytes are stored with their record in one entry file (see ``DiskCacheLayout``);
    /// negative: none.
    var singleFileLimit = 64 << 10
    /// The largest step of a body's checksum or write between two calls of a store's `pace`.
    var paceStep = 1 << 20
    /// When a record stops being fresh (what sweeps compare): by default its stored expiry; the mount passes its
    /// expiry policy, which may compute it from the fetch time and the current `--expire`.
    var expiry: @Sendable (CacheRecord) -> Date = { $0.expiresAt }
    /// The clock used for last-use times.
    var now: @Sendable () -> Date = { Date() }
    /// Called with the final path before each file is written; an errno it returns makes the write fail with that
    /// errno after half of the bytes were written (to simulate a full disk or an I/O error).
    var writeFault: (@Sendable (_ path: String) -> Int32?)?
}

// MARK: - DiskCacheLayout

/// Where ``DiskCache`` keeps its files, and how their names are read back.
///
/// ```
/// <directory>/v1/lock                          held with flock by every open DiskCache on this directory
/// <directory>/v1/<k0k1>/<key>.meta             the CacheRecord as JSON
/// <directory>/v1/<k0k1>/<key>.<crc>.data       the body; <crc> is its CRC-32 as 8 lower-case hex digits
/// <directory>/v1/<k0k1>/<key>.<crc>.<size>.entry  instead of both: a small body followed by its record (JSON);
///                                              <size> is the body's length as 8 lower-case hex digits
/// <directory>/v1/<k0k1>/<key>.<random>.tmp     a write in progress (or the leftover of an interrupted one)
/// ```
/// `<k0k1>` is the first two characters of the key, giving 256 subdirectories. Names come only from the key (never
/// from URL text). The data file's name carries the checksum the record names, so replacing an entry never
/// overwrites the file an older record points to; a data file and its record are committed in that order, so a
/// record never names a body that is not completely on disk. An entry file is committed by one rename; reading an
/// entry whose record and body are in one file takes one read of the disk instead of two. Other names in these
/// directories are left alone.
struct DiskCacheLayout: Sendable {
    /// `<directory>/v1`.
    let root: String

    init(directory: String) {
        root = directory.hasSuffix("/") ? directory + Self.version : directory + "/" + Self.version
    }

    /// The layout version directory; a future format uses another name and can coexist.
    static let version = "v1"

    // MARK: - Paths

    var lockPath: String { root + "/lock" }

    func subdirectory(named name: String) -> String { root + "/" + name }

    func subdirectory(for key: DiskCacheKey) -> String { root + "/" + key.subdirectoryName }

    func metaPath(for key: DiskCacheKey) -> String { subdirectory(for: key) + "/" + Self.metaName(key) }

    func dataPath(for key: DiskCacheKey, checksum: UInt32) -> String {
        subdirectory(for: key) + "/" + Self.dataName(key, checksum: checksum)
    }

    func temporaryPath(for key: DiskCacheKey) -> String {
        subdirectory(for: key) + "/\(key)." + Self.hex(UInt64.random(in: 0...UInt64.max)) + ".tmp"
    }

    func entryPath(for key: DiskCacheKey, checksum: UInt32, size: Int) -> String {
        subdirectory(for: key) + "/" + Self.entryName(key, checksum: checksum, size: size)
    }

    /// The file that holds `entry`'s body (from offset 0).
    func bodyPath(of entry: DiskCacheEntry) -> String {
        entry.singleFile
            ? entryPath(for: entry.key, checksum: entry.checksum, size: entry.size)
            : dataPath(for: entry.key, checksum: entry.checksum)
    }

    /// The files of `entry`, the one holding its record first.
    func files(of entry: DiskCacheEntry) -> [String] {
        let subdirectory = subdirectory(for: entry.key)
        return Self.names(entry.key, checksum: entry.checksum, size: entry.size, singleFile: entry.singleFile)
            .map { subdirectory + "/" + $0 }
    }

    /// The names of the files of an entry of `key`, the one holding its record first: its entry file, or its record
    /// and its data file.
    static func names(_ key: DiskCacheKey, checksum: UInt32, size: Int, singleFile: Bool) -> [String] {
        singleFile
            ? [entryName(key, checksum: checksum, size: size)] : [metaName(key), dataName(key, checksum: checksum)]
    }

    static func metaName(_ key: DiskCacheKey) -> String { "\(key).meta" }

    static func entryName(_ key: DiskCacheKey, checksum: UInt32, size: Int) -> String {
        "\(key)." + hex(checksum) + "." + hex(UInt32(truncatingIfNeeded: size)) + ".entry"
    }

    static func dataName(_ key: DiskCacheKey, checksum: UInt32) -> String { "\(key)." + hex(checksum) + ".data" }

    // MARK: - Names

    /// What a file name in a subdirectory is.
    enum Name: Equatable {
        case meta(key: DiskCacheKey)
        case data(key: DiskCacheKey, checksum: UInt32)
        case entry(key: DiskCacheKey, checksum: UInt32, size: Int)
        case temporary
        case other
    }

    /// Whether `name` (of `length` bytes) is a subdirectory name: two lower-case hexadecimal characters.
    static func isSubdirectoryName(_ name: UnsafePointer<UInt8>, length: Int) -> Bool {
        length == 2 && hexValue(name[0]) != nil && hexValue(name[1]) != nil
    }

    /// Reads a file name found in a subdirectory, without allocating unless it is one of ours.
    static func parse(_ name: UnsafePointer<UInt8>, length: Int) -> Name {
        if length > 4, matches(name + length - 4, ".tmp") { return .temporary }
        guard length >= 69, name[64] == UInt8(ascii: "."), let key = DiskCacheKey(hex: name) else { return .other }
        if length == 69, matches(name + 64, ".meta") { return .meta(key: key) }
        guard length >= 78, let checksum = hexNumber(name + 65) else { return .other }
        if length == 78, matches(name + 73, ".data") { return .data(key: key, checksum: checksum) }
        if length == 88, name[73] == UInt8(ascii: "."), let size = hexNumber(name + 74), matches(name + 82, ".entry") {
            return .entry(key: key, checksum: checksum, size: Int(size))
        }
        return .other
    }

    /// The 8 hexadecimal digits at `digits`, or nil.
    private static func hexNumber(_ digits: UnsafePointer<UInt8>) -> UInt32? {
        var value: UInt32 = 0
        for index in 0..<8 {
            guard let digit = hexValue(digits[index]) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    // MARK: - Hexadecimal

    static func hex<Value: FixedWidthInteger & UnsignedInteger>(_ value: Value) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let width = Value.bitWidth / 4
        return String(unsafeUninitializedCapacity: width) { buffer in
            for index in 0..<width {
                let shift = (width - 1 - index) * 4
                buffer[index] = digits[Int(truncatingIfNeeded: value >> shift) & 0xf]
            }
            return width
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    private static func matches(_ pointer: UnsafePointer<UInt8>, _ text: StaticString) -> Bool {
        let bytes = text.utf8Start
        for index in 0..<text.utf8CodeUnitCount where pointer[index] != bytes[index] { return false }
        return true
    }
}

// MARK: - DiskCacheKey

/// A cache key, 64 lower-case hexadecimal characters, held as its 32 bytes: an index entry then needs no string of
/// its own, and hashing and comparing keys is cheap. Keys order as their text does.
struct DiskCacheKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    private let word0: UInt64
    private let word1: UInt64
    private let word2: UInt64
    private let word3: UInt64

    /// The key written as `text`, or nil when `text` is not 64 lower-case hexadecimal characters.
    init?(_ text: String) {
        var text = text
        guard let key = text.withUTF8({ $0.count == 64 ? DiskCacheKey(hex: $0.baseAddress!) : nil }) else { return nil }
        self = key
    }

    /// The key written in the 64 bytes at `hex`, or nil when they are not all lower-case hexadecimal digits.
    init?(hex: UnsafePointer<UInt8>) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var index = 0
        while index < 64 {
            let byte = hex[index]
            let digit: UInt8
            if byte >= 0x30 && byte <= 0x39 {
                digit = byte &- 0x30
            } else if byte >= 0x61 && byte <= 0x66 {
                digit = byte &- 0x61 &+ 10
            } else {
                return nil
            }
            switch index >> 4 {
            case 0: words.0 = words.0 << 4 | UInt64(digit)
            case 1: words.1 = words.1 << 4 | UInt64(digit)
            case 2: words.2 = words.2 << 4 | UInt64(digit)
            default: words.3 = words.3 << 4 | UInt64(digit)
            }
            index &+= 1
        }
        (word0, word1, word2, word3) = words
    }

    /// The 64-character text of the key.
    var description: String {
        DiskCacheLayout.hex(word0) + DiskCacheLayout.hex(word1) + DiskCacheLayout.hex(word2)
            + DiskCacheLayout.hex(word3)
    }

    /// The name of the key's subdirectory: its first two characters.
    var subdirectoryName: String { DiskCacheLayout.hex(UInt8(truncatingIfNeeded: word0 >> 56)) }

    /// The first byte, whose two hex digits name the subdirectory.
    var firstByte: UInt8 { UInt8(truncatingIfNeeded: word0 >> 56) }

    static func < (lhs: DiskCacheKey, rhs: DiskCacheKey) -> Bool {
        (lhs.word0, lhs.word1, lhs.word2, lhs.word3) < (rhs.word0, rhs.word1, rhs.word2, rhs.word3)
    }
}

// MARK: - CacheRecord

/// What the disk cache knows about one stored image: where it came from, its validators and its freshness.
///
/// The record is saved as JSON next to the body. `key` and `url` are stored so that a file found under the wrong
/// name (a copy, a hash collision) is detected: ``DiskCache`` treats a record whose key differs from its file name as
/// corrupt, and a caller that looks a URL up compares ``url`` with the URL it wanted.
public struct CacheRecord: Codable, Equatable, Sendable {
    /// 64 lower-case hexadecimal characters, the SHA-256 of the URL, computed by the caller; names the files.
    public var key: String
    /// The URL the body was fetched from.
    public var url: String
    /// The body's length in bytes; ``DiskCache/store(_:body:)`` sets it to the body it writes.
    public var size: Int
    /// The `Content-Type` the origin sent, if any.
    public var contentType: String?
    /// The `ETag` the origin sent, if any, for conditional requests.
    public var etag: String?
    /// The `Last-Modified` date the origin sent, if any, for conditional requests.
    public var lastModified: Date?
    /// When the body (or its last revalidation) was received.
    public var fetchedAt: Date
    /// When the entry stops being fresh.
    public var expiresAt: Date
    /// CRC-32 (IEEE) of the body; ``DiskCache/store(_:body:)`` fills it in.
    public var checksum: UInt32
    /// When the entry was last used; maintained by the cache (persisted at most about once a minute).
    public var lastAccess: Date
    /// When the origin last vouched for the body (a 304 after `fetchedAt`); nil means `fetchedAt` (and in records
    /// written before this field existed).
    public var validatedAt: Date?
    /// Whether the response's Cache-Control / Expires set `expiresAt` (under `--cache-control`); false when it is the
    /// fixed `--expire`, which is computed again from the current option at use; nil in older records.
    public var expiryFromHeaders: Bool?

    /// The numeric address the body came from (see ``ResponseHead/remoteAddress``); nil when unknown (older records).
    public var remoteAddress: String?

    /// When the origin last vouched for the body: ``validatedAt``, else ``fetchedAt``.
    public var lastValidated: Date { validatedAt ?? fetchedAt }

    /// A record; `checksum` and `lastAccess` are normally left for the cache to fill in.
    public init(
        key: String, url: String, size: Int, contentType: String?, etag: String?, lastModified: Date?,
        fetchedAt: Date, expiresAt: Date, checksum: UInt32 = 0, lastAccess: Date = Date(),
        validatedAt: Date? = nil, expiryFromHeaders: Bool? = nil, remoteAddress: String? = nil
    ) {
        self.key = key
        self.url = url
        self.size = size
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.fetchedAt = fetchedAt
        self.expiresAt = expiresAt
        self.checksum = checksum
        self.lastAccess = lastAccess
        self.validatedAt = validatedAt
        self.expiryFromHeaders = expiryFromHeaders
        self.remoteAddress = remoteAddress
    }
}
