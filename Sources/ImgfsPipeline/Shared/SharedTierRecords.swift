import Foundation
import ImgfsModel
import ImgfsStore

/// The keys and values the shared tier keeps in the store, version 2.
///
/// Keys are namespaced and versioned (`imgfs:v2:…`) and name a URL by the SHA-256 of its text without fragment:
/// `meta:<h>` describes a complete body, `lease:<h>` holds the id of the one fetch under way fleet-wide,
/// `head:<h>:<id>` and `piece:<h>:<id>:<n>` are what that fetch has published so far. Every value says which URL and
/// fetch it belongs to, carries a checksum and is sealed with the fleet key (``SharedTierSeal``), so a foreign,
/// stale, corrupt or forged value is recognised and ignored. Version 1 values (no seal) are never read: mounts of
/// the two versions do not share.
public struct SharedTierKeys: Sendable, Equatable {
    /// The prefix of every key, with the version.
    public static let namespace = "imgfs:v2:"
    /// The URL's hash, as used in the keys.
    public let hash: String

    /// The keys of `url`; when its requests carry credentials (``ImageURL/credentialScope``), the hash covers the
    /// scope too, under the fleet key of `seal`, so only mounts sending the same credentials (with the same key) meet
    /// the same values, and the key names say nothing a guess of the credentials could be checked against.
    public init(url: ImageURL, seal: SharedTierSeal = SharedTierSeal()) {
        if let scope = url.credentialScope {
            hash = seal.digest("credentials:\(scope):\(url.resourceKey)")
        } else {
            hash = SHA256.hex(of: Array(url.resourceKey.utf8))
        }
    }

    /// The key of the complete body's record.
    public var meta: String { "\(Self.namespace)meta:\(hash)" }
    /// The key of the lease of the one fetch under way.
    public var lease: String { "\(Self.namespace)lease:\(hash)" }
    /// The key of the response head that fetch `fetch` published.
    public func head(_ fetch: String) -> String { "\(Self.namespace)head:\(hash):\(fetch)" }
    /// The key of piece `index` that fetch `fetch` published.
    public func piece(_ fetch: String, _ index: Int) -> String { "\(Self.namespace)piece:\(hash):\(fetch):\(index)" }
}

/// A response head as published by the fetch that holds the lease (`head:<h>:<id>`), and, with the body's length
/// and checksum, the description of a complete body (`meta:<h>`).
public struct SharedTierRecord: Codable, Equatable, Sendable {
    /// The record version this build writes and reads.
    public static let currentVersion = 2
    /// The version the record was written in; another is never used.
    public var version = currentVersion
    /// The URL's text without fragment, to check against the key's hash.
    public var url: String
    /// The fetch that published the pieces.
    public var fetch: String
    /// Content-Length, when the origin announced it.
    public var contentLength: Int?
    /// Content-Type, when the origin named one.
    public var contentType: String?
    /// ETag, when the origin gave one.
    public var etag: String?
    /// Last-Modified, when the origin gave it.
    public var lastModified: Date?
    /// When the body stops being fresh (the store's TTL ends then too).
    public var expiresAt: Date
    /// Bytes per piece (the last may be shorter).
    public var pieceSize: Int
    /// Set in a complete body's record: its length, the CRC-32 of all of it, and its SHA-256 (hex), which catches
    /// pieces of two writers put together.
    public var size: Int?
    /// The CRC-32 of the whole body, set with `size`.
    public var checksum: UInt32?
    /// The SHA-256 of the whole body, in hex, set with `size`.
    public var sha256: String?

    /// The record of fetch `fetch` of `url`, from its response head; not yet complete.
    public init(url: String, fetch: String, head: ResponseHead, expiresAt: Date, pieceSize: Int) {
        self.url = url
        self.fetch = fetch
        contentLength = head.contentLength
        contentType = head.contentType
        etag = head.etag
        lastModified = head.lastModified
        self.expiresAt = expiresAt
        self.pieceSize = pieceSize
    }

    /// The bytes stored.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    /// The largest piece size a record may name.
    public static let maximumPieceSize = 64 << 20

    /// The record in `bytes` if it is one of version 2 for `url` (and, for a complete body, self-consistent).
    public static func decode(_ bytes: [UInt8], url: String, maxSize: Int = 64 << 20) -> SharedTierRecord? {
        try? check(bytes, url: url, maxSize: maxSize).get()
    }

    /// The record in `bytes`, or why it is refused: not a version-2 record of `url`, or a field out of range (a date
    /// that is not finite or not in years 1970...9999, a length or size outside `0...maxSize`, a piece size outside
    /// `1...maximumPieceSize`, a size that disagrees with the length). Nothing in a refused value is ever used.
    public static func check(
        _ bytes: [UInt8], url: String, maxSize: Int
    ) -> Result<SharedTierRecord, SharedTierRefusal> {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard let record = try? decoder.decode(SharedTierRecord.self, from: Data(bytes)) else {
            return .failure(SharedTierRefusal("not a record"))
        }
        guard record.version == currentVersion, record.url == url, !record.fetch.isEmpty else {
            return .failure(SharedTierRefusal("a record of another version, URL or fetch"))
        }
        if let problem = record.rangeProblem(maxSize: maxSize) { return .failure(SharedTierRefusal(problem)) }
        return .success(record)
    }

    /// What is out of range in this record, or nil.
    private func rangeProblem(maxSize: Int) -> String? {
        guard PlausibleDate.contains(expiresAt) else { return "expiresAt out of range" }
        if let lastModified, !PlausibleDate.contains(lastModified) { return "lastModified out of range" }
        guard (1...Self.maximumPieceSize).contains(pieceSize) else { return "piece size \(pieceSize) out of range" }
        for (name, value) in [("contentLength", contentLength), ("size", size)] {
            if let value, !(0...maxSize).contains(value) { return "\(name) \(value) outside 0...\(maxSize)" }
        }
        if let size, let contentLength, size != contentLength { return "size \(size) but length \(contentLength)" }
        if let sha256, sha256.utf8.count != 64 || !sha256.utf8.allSatisfy(Self.isHexDigit) {
            return "sha256 is not 64 hexadecimal digits"
        }
        if size != nil, sha256 == nil { return "a complete record without sha256" }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// The number of pieces of a complete body.
    public var pieceCount: Int { ((size ?? 0) + pieceSize - 1) / pieceSize }

    /// The head to hand a transfer's observer: a 200 with the stored fields, fresh for what is left of the lifetime.
    public func responseHead(now: Date) -> ResponseHead {
        var head = ResponseHead(
            status: 200, contentLength: size ?? contentLength, contentType: contentType, etag: etag,
            lastModified: lastModified)
        head.cacheControl = "max-age=\(max(0, Int(saturating: expiresAt.timeIntervalSince(now))))"
        head.date = now
        return head
    }
}

/// Why a value read from the shared store was not used.
public struct SharedTierRefusal: Error, Equatable, Sendable {
    /// Why, for the log.
    public let reason: String

    /// A refusal for `reason`.
    public init(_ reason: String) { self.reason = reason }
}

/// One piece of a body (`piece:<h>:<id>:<n>`): a 16-byte header (magic `IMP2`, index, length, CRC-32 of the bytes;
/// big-endian) and the bytes; stored sealed (``SharedTierSeal``), so the key binds it to its URL, fetch and index.
public enum SharedTierPiece {
    static let magic: [UInt8] = Array("IMP2".utf8)

    /// The payload of piece `index` holding `bytes` (sealed before it is stored).
    public static func encode(index: Int, bytes: [UInt8]) -> [UInt8] {
        var value = magic
        value.reserveCapacity(16 + bytes.count + SharedTierSeal.codeLength)
        for field in [UInt32(index), UInt32(bytes.count), CRC32.checksum(bytes)] {
            withUnsafeBytes(of: field.bigEndian) { value.append(contentsOf: $0) }
        }
        return value + bytes
    }

    /// The bytes of the payload `value` if it is piece `index`, whole and unchanged; nil otherwise.
    public static func decode(_ value: ArraySlice<UInt8>, index: Int) -> ArraySlice<UInt8>? {
        let start = value.startIndex
        guard value.count >= 16, value[start..<start + 4].elementsEqual(magic) else { return nil }
        func field(_ at: Int) -> UInt32 { value[start + at..<start + at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let bytes = value[(start + 16)...]
        guard field(4) == UInt32(truncatingIfNeeded: index), Int(field(8)) == bytes.count else { return nil }
        let crc = bytes.withUnsafeBytes { CRC32.checksum($0) }
        return crc == field(12) ? bytes : nil
    }
}
