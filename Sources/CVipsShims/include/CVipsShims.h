#ifndef IMGFS_CVIPSSHIMS_H
#define IMGFS_CVIPSSHIMS_H
// The libvips calls imgfs makes, as plain C functions with typed arguments (libvips's own are variadic and use GLib
// types). Nothing here keeps state between calls except libvips's one-time initialisation.
#include <stddef.h>
#include <stdint.h>

/// What imgfs_vips_variant reports.
typedef enum imgfs_vips_status {
    IMGFS_VIPS_OK = 0,
    /// Not decodable: unknown format, corrupt or truncated data; `message` has libvips's reason.
    IMGFS_VIPS_UNDECODABLE = 1,
    /// The header announces more pixels than allowed; nothing was decoded.
    IMGFS_VIPS_TOO_MANY_PIXELS = 2,
    /// A vector or document format (SVG, PDF) that imgfs does not rasterize; `loader` names it.
    IMGFS_VIPS_NOT_RASTER = 3,
} imgfs_vips_status;

/// The encodings imgfs_vips_variant writes.
typedef enum imgfs_vips_format {
    /// Chosen from the original: JPEG for JPEG, PNG for PNG, WebP for WebP; for any other original PNG when it has a
    /// non-opaque alpha channel, JPEG otherwise.
    IMGFS_VIPS_FORMAT_AUTO = 0,
    IMGFS_VIPS_FORMAT_JPEG = 1,
    IMGFS_VIPS_FORMAT_PNG = 2,
    IMGFS_VIPS_FORMAT_WEBP = 3,
    IMGFS_VIPS_FORMAT_GIF = 4,
    IMGFS_VIPS_FORMAT_TIFF = 5,
    IMGFS_VIPS_FORMAT_AVIF = 6,
    IMGFS_VIPS_FORMAT_HEIC = 7,
} imgfs_vips_format;

/// How imgfs_vips_variant sizes its output.
typedef enum imgfs_vips_shape {
    /// Longer side at most `width` pixels, never enlarged.
    IMGFS_VIPS_SHAPE_FIT = 0,
    /// Exactly `width` x `height`: scaled to cover it (enlarged if need be), then cropped.
    IMGFS_VIPS_SHAPE_COVER = 1,
    /// The whole image at its own size.
    IMGFS_VIPS_SHAPE_WHOLE = 2,
} imgfs_vips_shape;

/// The result of one variant.
typedef struct imgfs_vips_result {
    /// The encoded output (free it with imgfs_vips_free), NULL unless IMGFS_VIPS_OK.
    void *data;
    size_t length;
    /// The encoding written (never IMGFS_VIPS_FORMAT_AUTO on success).
    int format;
    int width, height;
    /// The original's dimensions from its header (0 when not even that could be read).
    int source_width, source_height;
    /// The libvips loader that recognised the data ("" when none did).
    char loader[64];
    /// Why it failed (libvips's error text), "" on success.
    char message[1024];
} imgfs_vips_result;

// The calls below load libvips (dlopen) and start it the first time they need it: a process that makes no variant
// never loads it. Where it cannot be loaded, they fail with the reason as their message.

/// The image in `data` shaped by `shape` (`width`, `height`; `attention`: an exact size is cropped around the most
/// interesting part, libvips's attention crop, instead of the centre), upright (EXIF orientation applied), in sRGB
/// (CMYK and embedded profiles converted), first page or frame only, metadata stripped, encoded as `format` (JPEG of
/// quality `quality`, baseline, with any alpha flattened onto white; AVIF and HEIC through libheif). Refuses before
/// decoding any pixel when the header announces more than `max_pixels` pixels. Truncated or corrupt input fails
/// rather than being padded. After a variant of an image of at least 4 megapixels, the C allocator gives its free
/// memory back to the system (`malloc_trim`): a big decode leaves hundreds of MB free in the heap otherwise.
imgfs_vips_status imgfs_vips_variant(const void *data, size_t length, imgfs_vips_shape shape, int width, int height,
                                     int attention, imgfs_vips_format format, int64_t max_pixels, int quality,
                                     imgfs_vips_result *result);

/// What decoding an image costs in memory beyond the rows a streaming decode keeps.
typedef struct imgfs_vips_decode_cost {
    /// Bytes the loader holds at once for the whole image (0 when it streams: baseline JPEG, non-interlaced PNG,
    /// TIFF, WebP). Saturates at INT64_MAX instead of overflowing.
    int64_t bytes;
    /// From the header: the image's size, bands and bits per sample.
    int width, height, bands, bits;
    /// The EXIF orientation (1 when upright or unknown): any other is turned or mirrored in memory.
    int orientation;
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
