import Foundation
import ImgfsModel

/// A complete image held in memory, with what is needed to serve and revalidate it.
public struct CachedImage: Sendable {
    /// The URL (without fragment) it was fetched from.
    public var url: ImageURL
    /// The whole body.
    public var bytes: ImageBytes
    /// The metadata of the response the body came with.
    public var metadata: ImageMetadata
    /// After this the image must be revalidated before it is served (except when the origin cannot be reached).
    public var expiresAt: Date
    /// When the origin last vouched for these bytes (the fetch, or a 304).
    public var validatedAt: Date
    /// Whether HTTP headers set `expiresAt` (see ``CacheRecord/expiryFromHeaders``); ``ExpiryPolicy`` decides at use.
    public var expiryFromHeaders: Bool?
    /// The numeric address the bytes came from, when known (see ``CacheRecord/remoteAddress``).
    public var remoteAddress: String?

    /// An image of `url` with its body, metadata and expiry.
    public init(
        url: ImageURL, bytes: ImageBytes, metadata: ImageMetadata, expiresAt: Date, validatedAt: Date? = nil,
        expiryFromHeaders: Bool? = nil, remoteAddress: String? = nil
    ) {
        self.url = url
        self.bytes = bytes
        self.metadata = metadata
        self.expiresAt = expiresAt
        self.validatedAt = validatedAt ?? metadata.fetchedAt
        self.expiryFromHeaders = expiryFromHeaders
        self.remoteAddress = remoteAddress
    }

    /// Cost in the memory budget.
    public var cost: Int { metadata.size }
}
