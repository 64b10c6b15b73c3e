import CVipsShims
import ImgfsModel
import ImgfsPipeline

/// Makes variants with libvips (`vips_thumbnail_buffer`: shrink-on-load for JPEG and WebP, EXIF orientation applied,
/// CMYK and embedded profiles converted, first page only; downsized, cropped to an exact size, or whole), converted to
/// sRGB and encoded as the specification's format (JPEG baseline with alpha flattened onto white, PNG, WebP, GIF,
/// TIFF, AVIF, HEIC), or as chosen from the original (``VariantKind/format`` nil).
///
/// Guarantees: thread safe (libvips is; each call uses one libvips thread and frees its buffers before returning, and
/// after an image of 4 megapixels or more the allocator's free memory goes back to the system);
/// the header is checked against the pixel limit before any pixel is decoded; truncated or corrupt input fails with
/// the decoder's reason instead of being padded; SVG and PDF are refused, never rasterized; libvips's own operation
/// cache is off, so nothing decoded outlives a call.
public struct VipsThumbnailer: VariantMaking {
    /// A maker that loads libvips when it makes its first variant (loading it takes about 20 ms, which a daemon that
    /// makes no variant does not pay); where libvips cannot be loaded every variant fails with the loader's reason.
    public init() {}

    /// The variant of the encoded image in `original` that `specification` describes, made by libvips.
    public func makeVariant(
        of original: UnsafeRawBufferPointer, _ specification: VariantSpecification
    )
        -> Result<MadeVariant, VariantError>
    {
        guard let base = original.baseAddress, original.count > 0 else { return .failure(.undecodable("empty body")) }
        var result = imgfs_vips_result()
        let (shape, width, height) = Self.shape(specification.kind.shape)
        let status = imgfs_vips_variant(
            base, original.count, shape, width, height, specification.crop == .attention ? 1 : 0,
            Self.format(specification.kind.format), Int64(specification.maximumPixels),
            Int32(clamping: specification.jpegQuality), &result)
        defer { imgfs_vips_free(result.data) }
        let message = Self.text(&result.message)
        switch status {
        case IMGFS_VIPS_OK:
            let bytes = [UInt8](UnsafeRawBufferPointer(start: result.data, count: result.length))
            guard let format = Self.formats.first(where: { $0.value.rawValue == UInt32(result.format) })?.key else {
                return .failure(.undecodable("libvips wrote an unknown format"))
            }
            return .success(
                MadeVariant(bytes: bytes, format: format, width: Int(result.width), height: Int(result.height)))
        case IMGFS_VIPS_TOO_MANY_PIXELS:
            return .failure(
                .tooManyPixels(
                    width: Int(result.source_width), height: Int(result.source_height),
                    limit: specification.maximumPixels))
        case IMGFS_VIPS_NOT_RASTER:
            return .failure(.notRaster(message))
        default:
            let loader = Self.text(&result.loader)
            return .failure(.undecodable(loader.isEmpty ? message : "\(loader): \(message)"))
        }
    }

    /// The header's estimate of what the decode holds at once (``imgfs_vips_estimate_decode``: interlaced PNG,
    /// progressive JPEG, GIF, HEIF; 0 bytes for loaders that stream).
    public func decodeCost(of original: UnsafeRawBufferPointer) -> DecodeCost? {
        guard let base = original.baseAddress, original.count > 0 else { return nil }
        var cost = imgfs_vips_decode_cost()
        guard imgfs_vips_estimate_decode(base, original.count, &cost) == 0 else { return nil }
        return Self.cost(&cost)
    }

    /// The C shape and its sides.
    private static func shape(_ shape: VariantKind.Shape) -> (imgfs_vips_shape, Int32, Int32) {
        switch shape {
        case .fit(let side): (IMGFS_VIPS_SHAPE_FIT, Int32(clamping: side), Int32(clamping: side))
        case .cover(let width, let height): (IMGFS_VIPS_SHAPE_COVER, Int32(clamping: width), Int32(clamping: height))
        case .whole: (IMGFS_VIPS_SHAPE_WHOLE, 0, 0)
        }
    }

    private static let formats: [VariantFormat: imgfs_vips_format] = [
        .jpeg: IMGFS_VIPS_FORMAT_JPEG, .png: IMGFS_VIPS_FORMAT_PNG, .webp: IMGFS_VIPS_FORMAT_WEBP,
        .gif: IMGFS_VIPS_FORMAT_GIF, .tiff: IMGFS_VIPS_FORMAT_TIFF, .avif: IMGFS_VIPS_FORMAT_AVIF,
        .heic: IMGFS_VIPS_FORMAT_HEIC
    ]

    /// The C format (AUTO for nil).
    private static func format(_ format: VariantFormat?) -> imgfs_vips_format {
        format.flatMap { formats[$0] } ?? IMGFS_VIPS_FORMAT_AUTO
    }

    /// The decode's cost (``decodeCost(of:)``); for the whole image (`fmt/`) of an original with an EXIF orientation
    /// other than 1, at least the turned image itself (width x height x bands, 8 bits a sample after the conversion to
    /// sRGB), which libvips holds in memory to turn it.
    public func decodeCost(of original: UnsafeRawBufferPointer, for kind: VariantKind) -> DecodeCost? {
        guard let base = original.baseAddress, original.count > 0 else { return nil }
        var cost = imgfs_vips_decode_cost()
        guard imgfs_vips_estimate_decode(base, original.count, &cost) == 0 else { return nil }
        var estimate = Self.cost(&cost)
        guard kind.shape == .whole, cost.orientation > 1 else { return estimate }
        let bands = max(3, min(4, Int(cost.bands)))
        let (pixels, tooMany) = estimate.width.multipliedReportingOverflow(by: estimate.height)
        let (bytes, tooLarge) = pixels.multipliedReportingOverflow(by: bands)
        let turned = tooMany || tooLarge ? Int.max : bytes
        if turned > estimate.bytes {
            estimate.bytes = turned
            estimate.what = "image turned upright (EXIF orientation \(cost.orientation))"
        }
        return estimate
    }

    /// A C estimate as a ``DecodeCost``, every number range-checked.
    private static func cost(_ cost: inout imgfs_vips_decode_cost) -> DecodeCost {
        // Checked before conversion: the C side saturates at INT64_MAX, sizes come from a hostile header.
        let bytes = cost.bytes >= 0 && cost.bytes <= Int64(Int.max) ? Int(cost.bytes) : Int.max
        return DecodeCost(
            bytes: bytes, width: max(0, Int(cost.width)), height: max(0, Int(cost.height)), what: text(&cost.what))
    }

    /// A fixed-size C character array as a String (up to its NUL).
    private static func text<T>(_ array: inout T) -> String {
        withUnsafeBytes(of: &array) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
