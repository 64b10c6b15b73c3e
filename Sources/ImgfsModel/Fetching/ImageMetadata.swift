import Foundation

/// What is known about an image once its size is: enough to answer `stat`.
public struct ImageMetadata: Equatable, Sendable {
    /// The size in bytes: Content-Length, or the length of the whole body when none was announced.
    public var size: Int
    public var contentType: String?
    public var etag: String?
    /// Last-Modified; nil when the origin did not say.
    public var lastModified: Date?
    /// When the response header arrived.
    public var fetchedAt: Date

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
