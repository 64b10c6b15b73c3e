import CVipsShims
import ImgfsModel
import ImgfsPipeline

/// The PNG thumbnails of the freedesktop.org Thumbnail Managing Standard, made by libvips
/// (``imgfs_vips_thumbnail_png``: shrink-on-load, EXIF orientation applied, 8-bit sRGB, no metadata).
extension VipsThumbnailer: DesktopThumbnailMaking {
    /// The PNG thumbnail of `original`, longer side at most `longerSide` pixels.
    public func makePNGThumbnail(
        of original: UnsafeRawBufferPointer, longerSide: Int, maximumPixels: Int
    ) -> Result<MadeVariant, VariantError> {
        guard let base = original.baseAddress, original.count > 0 else { return .failure(.undecodable("empty body")) }
        var result = imgfs_vips_result()
        let status = imgfs_vips_thumbnail_png(
            base, original.count, Int32(clamping: longerSide), Int64(maximumPixels), &result)
        defer { imgfs_vips_free(result.data) }
        let message = Self.cText(&result.message)
        switch status {
        case IMGFS_VIPS_OK:
            let bytes = [UInt8](UnsafeRawBufferPointer(start: result.data, count: result.length))
            return .success(
                MadeVariant(bytes: bytes, format: .png, width: Int(result.width), height: Int(result.height)))
        case IMGFS_VIPS_TOO_MANY_PIXELS:
            return .failure(
                .tooManyPixels(
                    width: Int(result.source_width), height: Int(result.source_height), limit: maximumPixels))
        case IMGFS_VIPS_NOT_RASTER:
            return .failure(.notRaster(message))
        default:
            let loader = Self.cText(&result.loader)
            return .failure(.undecodable(loader.isEmpty ? message : "\(loader): \(message)"))
        }
    }

    /// A fixed-size C character array as a String (up to its NUL).
    private static func cText<T>(_ array: inout T) -> String {
        withUnsafeBytes(of: &array) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
