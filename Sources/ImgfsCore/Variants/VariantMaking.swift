import Foundation

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
}

/// What variant to make.
public struct VariantSpecification: Equatable, Sendable {
    /// The longest side of the result in pixels; smaller images keep their size (never enlarged).
    public var longerSide: Int
    /// Images whose header announces more pixels than this are refused undecoded (``VariantError/tooManyPixels``).
    public var maximumPixels: Int
    /// The quality of JPEG output (1–100).
    public var jpegQuality: Int

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
    public var format: VariantFormat
    public var width: Int
    public var height: Int

    public init(bytes: [UInt8], format: VariantFormat, width: Int, height: Int) {
        self.bytes = bytes
        self.format = format
        self.width = width
        self.height = height
    }
}
