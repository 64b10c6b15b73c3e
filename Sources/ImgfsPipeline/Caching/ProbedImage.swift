import ImgfsModel

/// What a probe tells of an image without its whole body (``ImageRepository/probe(_:interest:reply:)``): the size,
/// type and validators of one version, its type by signature, and its first bytes, for whoever reads facts from an
/// image's header (dimensions, orientation).
///
/// Guarantees: ``firstBytes`` are the first `min(metadata.size, ImageRepository.probeBytes)` bytes of the version
/// ``metadata`` describes (never bytes of another version); ``format`` is what ``ImageSignature/detect(_:)`` finds in
/// them.
public struct ProbedImage: Sendable, Equatable {
    /// The whole image's size, Content-Type, ETag, Last-Modified and when its head arrived.
    public var metadata: ImageMetadata
    /// The format its first bytes say, nil when they match none (only with `--allow-any-type`).
    public var format: ImageSignature.Format?
    /// The first bytes of the image (all of it when it is no larger than ``ImageRepository/probeBytes``).
    public var firstBytes: [UInt8]

    /// A probe's result of `metadata` and `firstBytes`, its format read from them.
    public init(metadata: ImageMetadata, firstBytes: [UInt8]) {
        self.metadata = metadata
        self.firstBytes = firstBytes
        self.format = ImageSignature.detect(firstBytes.prefix(ImageSignature.bytesNeeded))
    }
}
