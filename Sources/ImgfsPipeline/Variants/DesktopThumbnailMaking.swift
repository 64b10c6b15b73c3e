import ImgfsModel

/// Makes the PNG thumbnails of the freedesktop.org Thumbnail Managing Standard (``VariantStore`` calls it on its
/// workers only).
///
/// Implementations must be thread safe. A call returns a complete PNG whose longer side is at most `longerSide` pixels
/// (never enlarged), without text chunks or other metadata (``ThumbnailPNG`` adds the standard's keys), or fails; it
/// refuses, before decoding any pixel, an image whose header announces more than `maximumPixels` pixels.
public protocol DesktopThumbnailMaking: Sendable {
    /// The PNG thumbnail of the encoded image in `original`.
    func makePNGThumbnail(
        of original: UnsafeRawBufferPointer, longerSide: Int, maximumPixels: Int
    ) -> Result<MadeVariant, VariantError>
}
