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

    /// What making the variant `kind` of `original` holds in memory at once beyond what streams (the decode's cost,
    /// and for a whole image that must be turned, the image itself); nil when the header cannot be read.
    func decodeCost(of original: UnsafeRawBufferPointer, for kind: VariantKind) -> DecodeCost?
}

extension VariantMaking {
    /// The decode's cost alone (``decodeCost(of:)``).
    public func decodeCost(of original: UnsafeRawBufferPointer, for kind: VariantKind) -> DecodeCost? {
        decodeCost(of: original)
    }

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
    /// The variant's shape and encoding.
    public var kind: VariantKind
    /// Images whose header announces more pixels than this are refused undecoded (``VariantError/tooManyPixels``).
    public var maximumPixels: Int
    /// The quality of lossy output (JPEG, WebP, AVIF, HEIC; 1–100).
    public var jpegQuality: Int
    /// Where an exact size (``VariantKind/Shape/cover(width:height:)``) is cropped.
    public var crop: VariantCrop

    /// A specification of the given kind, pixel limit, quality and crop.
    public init(kind: VariantKind, maximumPixels: Int, jpegQuality: Int, crop: VariantCrop = .centre) {
        self.kind = kind
        self.maximumPixels = maximumPixels
        self.jpegQuality = jpegQuality
        self.crop = crop
    }

    /// The longest side allowed, for a downsized variant (0 for other shapes).
    public var longerSide: Int {
        if case .fit(let side) = kind.shape { return side }
        return 0
    }
}

/// Where an exact size is cropped after the image was scaled to cover it (`--tune thumb-crop`).
public enum VariantCrop: String, Sendable, CaseIterable {
    /// The middle of the image.
    case centre
    /// libvips's attention crop: the part with the most edges, skin tones and saturated colours.
    case attention
}

/// The encoding of a variant. Its extension is ``fileExtension``; ``init(fileExtension:)`` reads one.
public enum VariantFormat: String, Sendable, CaseIterable {
    case jpeg
    case png
    case webp
    case gif
    case tiff
    case avif
    case heic

    /// Its media type.
    public var contentType: String { "image/\(rawValue)" }

    /// The usual extension of the format.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        default: rawValue
        }
    }

    /// The format an extension (any case, without the dot) names, or nil when imgfs writes no such format.
    public init?(fileExtension: some StringProtocol) {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg", "jpe", "jfif": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        case "gif": self = .gif
        case "tif", "tiff": self = .tiff
        case "avif": self = .avif
        case "heic", "heif": self = .heic
        default: return nil
        }
    }

    /// The format of a media type (parameters ignored), or nil.
    public init?(contentType: String) {
        let bare = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard bare.lowercased().hasPrefix("image/") else { return nil }
        self.init(fileExtension: bare.dropFirst("image/".count))
    }
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
