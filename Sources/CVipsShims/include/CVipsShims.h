#ifndef IMGFS_CVIPSSHIMS_H
#define IMGFS_CVIPSSHIMS_H
// The libvips calls imgfs makes, as plain C functions with typed arguments (libvips's own are variadic and use GLib
// types). Nothing here keeps state between calls except libvips's one-time initialisation.
#include <stddef.h>
#include <stdint.h>

/// What imgfs_vips_thumbnail reports.
typedef enum imgfs_vips_status {
    IMGFS_VIPS_OK = 0,
    /// Not decodable: unknown format, corrupt or truncated data; `message` has libvips's reason.
    IMGFS_VIPS_UNDECODABLE = 1,
    /// The header announces more pixels than allowed; nothing was decoded.
    IMGFS_VIPS_TOO_MANY_PIXELS = 2,
    /// A vector or document format (SVG, PDF) that imgfs does not rasterize; `loader` names it.
    IMGFS_VIPS_NOT_RASTER = 3,
} imgfs_vips_status;

/// The result of one thumbnail.
typedef struct imgfs_vips_result {
    /// The encoded output (free it with imgfs_vips_free), NULL unless IMGFS_VIPS_OK.
    void *data;
    size_t length;
    /// 1: PNG (the output has alpha); 0: JPEG.
    int png;
    int width, height;
    /// The original's dimensions from its header (0 when not even that could be read).
    int source_width, source_height;
    /// The libvips loader that recognised the data ("" when none did).
    char loader[64];
    /// Why it failed (libvips's error text), "" on success.
    char message[1024];
} imgfs_vips_result;

/// Initialises libvips once (later calls return the first result): operation cache off, one libvips worker thread
/// per call of imgfs_vips_thumbnail, untrusted loaders (ImageMagick, PDF, SVG, …) blocked. 0 on success.
int imgfs_vips_start(void);

/// The image in `data` scaled so that its longer side is at most `size` pixels (never enlarged), upright (EXIF
/// orientation applied), in sRGB, first page or frame only, encoded as PNG when it has a non-opaque alpha channel and
/// as JPEG of quality `quality` otherwise, metadata stripped. Refuses before decoding any pixel when the header
/// announces more than `max_pixels` pixels. Truncated or corrupt input fails rather than being padded.
imgfs_vips_status imgfs_vips_thumbnail(const void *data, size_t length, int size, int64_t max_pixels, int quality,
                                       imgfs_vips_result *result);

/// Frees a result's `data`.
void imgfs_vips_free(void *data);

#endif
