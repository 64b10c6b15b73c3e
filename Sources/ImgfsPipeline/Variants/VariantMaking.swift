import Foundation
import ImgfsModel

/// Makes downsized variants of images (``VariantStore`` calls it on its workers only).
///
/// Implementations must be thread safe. A call either returns a complete encoded image or fails; it never returns
/// partial output. It must refuse, before decoding any pixel, an image whose header announces more than
/// ``VariantSpecification/maximumPixels`` pixels.
public protocol VariantMaking: Sendable {
    /// The variant of the encoded image in `original` that `specification` describes.
    func makeVariant(
        of original: UnsafeRawBufferPointer, _ specification: VariantSpecification
    )
        -> Result<MadeVariant, VariantError>

    /// What decoding `original` holds in memory at once where the decoder cannot stream, from its header alone (no
    /// pixel decoded); nil when the header cannot be read (``makeVariant(of:_:)`` then says why).
    func decodeCost(of original: UnsafeRawBufferPointer) -> DecodeCost?
}

extension VariantMaking {
    /// A maker that states no cost: every decode streams.
    public func decodeCost(of original: UnsafeRawBufferPointer) -> DecodeCost? { nil }
}

/// The memory a decode holds at once for the whole image, where the decoder cannot stream it row by row
/// (interlaced PNG, progressive JPEG, GIF, HEIF), estimated from the header.
public struct DecodeCost: Equatable, Sendable, CustomStringConvertible {
    /// Bytes held at once; 0 when the decoder streams (it then keeps a few rows).
    public var bytes: Int
    /// The image's width in pixels, from its header.
    public var width: Int
    /// The image's height in pixels, from its header.
    public var height: Int
    /// What cannot stream ("interlaced PNG"); empty when it streams.
    public var what: String

    /// The cost of a decode of a `width` × `height` image that holds `bytes` at once; `what` names what cannot stream.
    public init(bytes: Int, width: Int, height: Int, what: String) {
        self.bytes = bytes
        self.width = width
        self.height = height
        self.what = what
    }

    /// The bytes needed, the size and what cannot stream, for the log.
    public var description: String {
        let needs = Quantity.describe(bytes: bytes)
        return "\(what.isEmpty ? "image" : what) of \(width) x \(height) pixels needs \(needs) to decode"
    }
}

/// What variant to make.
public struct VariantSpecification: Equatable, Sendable {
    /// The longest side of the result in pixels; smaller images keep their size (never enlarged).
    public var longerSide: Int
    /// Images whose header announces more pixels than this are refused undecoded (``VariantError/tooManyPixels``).
    public var maximumPixels: Int
    /// The quality of JPEG output (1–100).
    public var jpegQuality: Int

    /// A specification of the given longer side, pixel limit and JPEG quality.
    public init(longerSide: Int, maximumPixels: Int, jpegQuality: Int) {
        self.longerSide = longerSide
        self.maximumPixels = maximumPixels
        self.jpegQuality = jpegQuality
    }
}

/// The encoding of a variant: JPEG for opaque images, PNG where there is transparency.
public enum VariantFormat: String, Sendable {
    case jpeg
    case png

    /// Its media type.
    public var contentType: String { "image/\(rawValue)" }
}

/// A finished variant.
public struct MadeVariant: Sendable {
    /// The encoded image.
    public var bytes: [UInt8]
    /// How the bytes are encoded.
    public var format: VariantFormat
    /// The variant's width in pixels.
    public var width: Int
    /// The variant's height in pixels.
    public var height: Int

    /// A variant of `bytes` in `format`, `width` × `height` pixels.
    public init(bytes: [UInt8], format: VariantFormat, width: Int, height: Int) {
        self.bytes = bytes
        self.format = format
        self.width = width
        self.height = height
    }
}
