import Foundation
import ImgfsModel

/// What is known about one image without fetching anything: where it would be served from, its metadata, its
/// expiry and its last failure.
public struct ImageReport: Equatable, Sendable {
    /// The tier holding the image.
    public enum Source: String, Sendable {
        case memory, disk, network
    }

    /// nil when the image is neither cached nor being fetched.
    public var source: Source?
    /// The image's metadata, when it is cached or its head has arrived.
    public var metadata: ImageMetadata?
    /// When the cached image stops being fresh; nil when it is not cached.
    public var expiresAt: Date?
    /// The last failure, until the image is fetched successfully.
    public var error: FetchError?

    /// A report with the given fields.
    public init(source: Source?, metadata: ImageMetadata?, expiresAt: Date?, error: FetchError?) {
        self.source = source
        self.metadata = metadata
        self.expiresAt = expiresAt
        self.error = error
    }
}
