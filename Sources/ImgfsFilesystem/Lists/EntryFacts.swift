import Foundation
import ImgfsModel

/// What a list knows about one entry without reading its image: its size, format, dimensions, orientation, validators
/// and modification time, or that it failed and why. Kept in the list's facts file (``ListFacts``), so `stat` answers
/// from it after a remount without the network.
///
/// Guarantees: a value; ``encoded(urlText:)`` gives exactly ``recordSize`` bytes, and ``init(record:urlText:)`` reads
/// back only a record written for the same URL text, checking every field (an out-of-range number is dropped, a
/// record that makes no sense is none).
public struct EntryFacts: Equatable, Sendable {
    /// Whether the image was usable when it was last looked at.
    public enum Status: UInt8, Sendable {
        /// Its size (and, when its first bytes were seen, its header) is known.
        case ok = 1
        /// Its fetch failed; ``EntryFacts/reason`` says how.
        case failed = 2

        /// `ok` or `failed`, as `.index.jsonl` and `imgfs list show` print it.
        public var name: String { self == .ok ? "ok" : "failed" }
    }

    /// Whether it was usable.
    public var status: Status
    /// Its size in bytes (ok only).
    public var size: Int?
    /// Its format, from its first bytes.
    public var format: ImageSignature.Format?
    /// Its stored width in pixels.
    public var width: Int?
    /// Its stored height in pixels.
    public var height: Int?
    /// Its EXIF orientation (1–8).
    public var orientation: Int?
    /// Last-Modified, else when it was fetched: its `st_mtime`.
    public var modified: Date?
    /// Its ETag, when the origin gave one of at most ``etagLimit`` bytes.
    public var etag: String?
    /// Why it failed (the start of the error's description).
    public var reason: String?

    /// Whether these facts already say everything `metadata` tells (size, validators, modification time) and the
    /// image's header: recording it again would change nothing.
    public func isCurrent(for metadata: ImageMetadata) -> Bool {
        status == .ok && size == metadata.size && etag == metadata.etag && format != nil
            && modified == PlausibleDate.check(metadata.lastModified ?? metadata.fetchedAt)
    }

    /// The facts of a usable image of `size` bytes with `header`.
    public init(size: Int, header: ImageHeader?, modified: Date?, etag: String?) {
        status = .ok
        self.size = max(0, size)
        format = header?.format
        width = header?.width
        height = header?.height
        orientation = header?.orientation
        self.modified = PlausibleDate.check(modified)
        self.etag = etag.flatMap { $0.utf8.count <= Self.etagLimit ? $0 : nil }
    }

    /// The facts of an image whose fetch failed for `reason`.
    public init(failure reason: String) {
        status = .failed
        self.reason = Self.cut(reason, to: Self.reasonLimit)
    }

    // MARK: - The record

    /// Bytes of one record.
    public static let recordSize = 128
    /// The longest ETag kept.
    public static let etagLimit = 48
    /// The formats by their number in a record (1-based; 0: unknown): only ever appended to.
    static let formatCodes = ["png", "jpeg", "gif", "webp", "avif", "heic", "bmp", "tiff", "ico", "svg", "jpeg-xl"]
    /// The longest reason kept, in bytes.
    public static let reasonLimit = 39

    /// A 64-bit FNV-1a hash of `text`, never 0 (0 marks an empty record).
    public static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01B3 }
        return hash == 0 ? 1 : hash
    }

    /// The record of these facts for the entry whose URL text is `urlText`.
    public func encoded(urlText: String) -> [UInt8] {
        var record = [UInt8](repeating: 0, count: Self.recordSize)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { record.replaceSubrange(offset..<(offset + $0.count), with: $0) }
        }
        put(Self.hash(urlText), at: 0)
        record[8] = status.rawValue
        record[9] = format.flatMap { Self.formatCodes.firstIndex(of: $0.rawValue) }.map { UInt8($0 + 1) } ?? 0
        record[10] = UInt8(orientation ?? 0)
        put(Int64(size ?? -1), at: 16)
        put(UInt32(clamping: width ?? 0), at: 24)
        put(UInt32(clamping: height ?? 0), at: 28)
        put((modified?.timeIntervalSince1970 ?? -1).bitPattern, at: 32)
        let etagBytes = Array((etag ?? "").utf8.prefix(Self.etagLimit))
        record[11] = UInt8(etagBytes.count)
        record.replaceSubrange(40..<(40 + etagBytes.count), with: etagBytes)
        let reasonBytes = Array((reason ?? "").utf8.prefix(Self.reasonLimit))
        record[12] = UInt8(reasonBytes.count)
        record.replaceSubrange(88..<(88 + reasonBytes.count), with: reasonBytes)
        return record
    }

    /// The facts `record` holds for `urlText`; nil when it is empty, written for another URL, or makes no sense.
    public init?(record: some Collection<UInt8>, urlText: String) {
        let bytes = Array(record)
        guard bytes.count == Self.recordSize else { return nil }
        func get<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
            bytes[offset..<(offset + MemoryLayout<T>.size)].reversed().reduce(T(0)) { $0 << 8 | T($1) }
        }
        guard get(UInt64.self, at: 0) == Self.hash(urlText), let status = Status(rawValue: bytes[8]) else {
            return nil
        }
        self.status = status
        let code = Int(bytes[9])
        format =
            code >= 1 && code <= Self.formatCodes.count
            ? ImageSignature.Format(rawValue: Self.formatCodes[code - 1]) : nil
        orientation = (1...8).contains(bytes[10]) ? Int(bytes[10]) : nil
        let size = get(Int64.self, at: 16)
        self.size = status == .ok && size >= 0 ? Int(size) : nil
        if status == .ok && self.size == nil { return nil }
        let width = Int(get(UInt32.self, at: 24))
        let height = Int(get(UInt32.self, at: 28))
        if width > 0 && height > 0 {
            self.width = width
            self.height = height
        }
        let seconds = Double(bitPattern: get(UInt64.self, at: 32))
        modified = seconds.isFinite && seconds >= 0 ? PlausibleDate.check(Date(timeIntervalSince1970: seconds)) : nil
        let etagCount = Int(min(bytes[11], UInt8(Self.etagLimit)))
        etag = etagCount > 0 ? String(validating: bytes[40..<(40 + etagCount)], as: UTF8.self) : nil
        let reasonCount = Int(min(bytes[12], UInt8(Self.reasonLimit)))
        reason = reasonCount > 0 ? String(decoding: bytes[88..<(88 + reasonCount)], as: UTF8.self) : nil
    }

    /// `text` cut to at most `limit` UTF-8 bytes on a character boundary.
    static func cut(_ text: String, to limit: Int) -> String {
        var result = ""
        for character in text {
            guard result.utf8.count + String(character).utf8.count <= limit else { break }
            result.append(character)
        }
        return result
    }
}
