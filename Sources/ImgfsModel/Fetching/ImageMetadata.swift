import Foundation

/// What is known about an image once its size is: enough to answer `stat`.
public struct ImageMetadata: Equatable, Sendable {
    /// The size in bytes: Content-Length, or the length of the whole body when none was announced.
    public var size: Int
    /// Content-Type, when the origin named one.
    public var contentType: String?
    /// ETag, when the origin gave one.
    public var etag: String?
    /// Last-Modified; nil when the origin did not say.
    public var lastModified: Date?
    /// When the response header arrived.
    public var fetchedAt: Date

    /// Metadata with the given fields; `fetchedAt` defaults to now.
    public init(
        size: Int, contentType: String? = nil, etag: String? = nil, lastModified: Date? = nil,
        fetchedAt: Date = Date()
    ) {
        self.size = size
        self.fetchedAt = fetchedAt
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
    }
}
