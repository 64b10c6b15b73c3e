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
/// announces more than `max_pixels` pixels. Truncated or corrupt input fails rather than being padded. After the
/// thumbnail of an image of at least 4 megapixels, the C allocator gives its free memory back to the system
/// (`malloc_trim`): a big decode leaves hundreds of MB free in the heap otherwise.
imgfs_vips_status imgfs_vips_thumbnail(const void *data, size_t length, int size, int64_t max_pixels, int quality,
                                       imgfs_vips_result *result);

/// What decoding an image costs in memory beyond the rows a streaming decode keeps.
typedef struct imgfs_vips_decode_cost {
    /// Bytes the loader holds at once for the whole image (0 when it streams: baseline JPEG, non-interlaced PNG,
    /// TIFF, WebP). Saturates at INT64_MAX instead of overflowing.
    int64_t bytes;
    /// From the header: the image's size, bands and bits per sample.
    int width, height, bands, bits;
    /// What cannot stream, e.g. "interlaced PNG" ("" when it streams).
    char what[64];
} imgfs_vips_decode_cost;

/// Estimates from the header alone (no pixel decoded) the memory a decode holds at once where the loader cannot
/// stream: the whole image as the loader keeps it (width x height x bands x bytes per sample), times what was measured
/// with libvips 8.14: interlaced PNG (all passes are kept) x 5/4; progressive JPEG (the DCT coefficients of every
/// component: 2 bytes per coefficient, chroma as subsampled); GIF (a frame of 4 bytes per pixel) x 3/2; HEIF (the
/// decoded planes and the interleaved image) x 9/4. Returns 0, or -1 when the header cannot be read (the thumbnail
/// call then reports why).
int imgfs_vips_estimate_decode(const void *data, size_t length, imgfs_vips_decode_cost *cost);

/// Frees a result's `data`.
void imgfs_vips_free(void *data);

#include "CVipsDesktop.h"

#endif
