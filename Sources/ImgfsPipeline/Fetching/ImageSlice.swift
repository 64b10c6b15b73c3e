import Foundation
import ImgfsModel

/// A range of an image's bytes handed to a reader. The buffers stay valid as long as the slice is alive.
public struct ImageSlice: Sendable {
    /// The image's bytes, held alive by the slice.
    public let bytes: ImageBytes
    /// Where the range starts in the image.
    public let offset: Int
    /// The range's length in bytes (0 at or past the image's end).
    public let count: Int

    /// The `count` bytes of `bytes` from `offset`.
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
