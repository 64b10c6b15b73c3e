import Foundation
import ImgfsModel

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
