#ifndef IMGFS_CVIPSDESKTOP_H
#define IMGFS_CVIPSDESKTOP_H
// Thumbnails for desktop programs (the freedesktop.org Thumbnail Managing Standard): always PNG.
#include "CVipsShims.h"

/// The image in `data` scaled so that its longer side is at most `size` pixels (never enlarged), upright (EXIF
/// orientation applied), in 8-bit sRGB, first page or frame only, encoded as PNG (RGBA when the alpha channel has a
/// pixel that is not fully opaque, RGB otherwise) with no metadata at all: the caller adds the standard's text chunks.
/// Refuses before decoding any pixel when the header announces more than `max_pixels` pixels; truncated or corrupt
/// input fails rather than being padded; SVG and PDF are not rasterized. `result->format` is PNG on success.
imgfs_vips_status imgfs_vips_thumbnail_png(const void *data, size_t length, int size, int64_t max_pixels,
                                           imgfs_vips_result *result);

#endif
