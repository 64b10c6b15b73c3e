import Foundation

/// A complete image held in memory, with what is needed to serve and revalidate it.
public struct CachedImage: Sendable {
    /// The URL (without fragment) it was fetched from.
    public var url: ImageURL
    public var bytes: ImageBytes
    public var metadata: ImageMetadata
    /// After this the image must be revalidated before it is served (except when the origin cannot be reached).
    public var expiresAt: Date

    public init(url: ImageURL, bytes: ImageBytes, metadata: ImageMetadata, expiresAt: Date) {
        self.url = url
        self.bytes = bytes
        self.metadata = metadata
        self.expiresAt = expiresAt
    }

    /// Cost in the memory budget.
    public var cost: Int { metadata.size }
}
