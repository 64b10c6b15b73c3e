import ImgfsModel

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
