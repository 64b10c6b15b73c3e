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

/// A range of an image's bytes handed to a reader. The buffers stay valid as long as the slice is alive.
public struct ImageSlice: Sendable {
    public let bytes: ImageBytes
    public let offset: Int
    public let count: Int

    public init(bytes: ImageBytes, offset: Int, count: Int) {
        self.bytes = bytes
        self.offset = offset
        self.count = count
    }

    /// Bytes `offset ..< offset + count` of an image of `size` bytes held in `bytes`: fewer at the end, none past it.
    public init(_ bytes: ImageBytes, size: Int, offset: Int, count: Int) {
        self = offset < size ? ImageSlice(bytes: bytes, offset: offset, count: min(count, size - offset)) : .empty
    }

    /// The empty slice.
    public static let empty = ImageSlice(bytes: ImageBytes(), offset: 0, count: 0)

    /// Calls `body` with the buffers holding the slice, in order.
    public func withSegments<Result>(_ body: ([UnsafeRawBufferPointer]) throws -> Result) rethrows -> Result {
        try bytes.withSegments(offset: offset, count: count, body)
    }
}
