#define _GNU_SOURCE
#include "CVipsShims.h"
#include "vips_internal.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_result = -1;
static char start_failure[256] = "libvips could not be initialised";

static void start_once(void) {
    char reason[200];
    if (imgfs_vips_open_library(reason, sizeof reason) != 0) {
        snprintf(start_failure, sizeof start_failure, "libvips could not be loaded: %s", reason);
        return;
    }
    // libvips prints its warnings ("error in tile …") on stderr; imgfs reports failures itself (log, xattr).
    setenv("VIPS_WARNING", "0", 0);
    if (vips_init("imgfs") != 0) return;
    // Results are cached by imgfs itself; libvips's operation cache would only hold decoded images in memory.
    vips_cache_set_max(0);
    // imgfs runs its own bounded pool; each thumbnail uses one libvips thread, so the pool size bounds the CPUs.
    vips_concurrency_set(1);
    // Loaders libvips marks untrusted (ImageMagick, PDF, SVG, FITS, …) are not run on bytes from the network.
    vips_block_untrusted_set(TRUE);
    start_result = 0;
}

int imgfs_vips_start(void) {
    pthread_once(&started, start_once);
    return start_result;
}

const char *imgfs_vips_start_failure(void) {
    return start_failure;
}

/// Moves libvips's error text (or `fallback`) into the result, on one line. The error buffer is shared by all
/// threads: a message may rarely carry another thread's concurrent failure too.
void imgfs_vips_take_error(imgfs_vips_result *result, const char *fallback) {
    char *text = vips_error_buffer_copy();
    snprintf(result->message, sizeof result->message, "%s", text != NULL && text[0] != 0 ? text : fallback);
    g_free(text);
    size_t length = strlen(result->message);
    while (length > 0 && result->message[length - 1] == '\n') result->message[--length] = 0;
    for (size_t i = 0; i < length; i++) {
        if (result->message[i] == '\n') result->message[i] = ' ';
    }
}

void imgfs_vips_release(VipsImage **image) {
    if (*image != NULL) g_object_unref(*image);
    *image = NULL;
}

imgfs_vips_status imgfs_vips_finish(imgfs_vips_status status, imgfs_vips_result *result, VipsImage **images[],
                                    int count) {
    if (status != IMGFS_VIPS_OK) {
        imgfs_vips_take_error(result, "decoding failed");
        imgfs_vips_free(result->data);
        result->data = NULL;
        result->length = 0;
    }
    for (int i = 0; i < count; i++) imgfs_vips_release(images[i]);
    // Frees the per-thread buffers libvips kept for this thread.
    vips_thread_shutdown();
    // A big decode leaves its freed rows and planes in this thread's heap (hundreds of MB after a 100-megapixel GIF,
    // below glibc's own trim threshold per arena): they go back to the system now, not at the next purge.
    if ((int64_t)result->source_width * (int64_t)result->source_height >= 4000000) malloc_trim(0);
    return status;
}

/// Whether every pixel of the last band of `image` (in memory, 8-bit) is fully opaque; -1 on error.
static int alpha_is_opaque(VipsImage *image) {
    VipsImage *alpha = NULL;
    double lowest = 0;
    if (vips_extract_band(image, &alpha, image->Bands - 1, NULL) != 0) return -1;
    int failed = vips_min(alpha, &lowest, NULL);
    g_object_unref(alpha);
    return failed ? -1 : lowest >= 255;
}

/// The encoding AUTO stands for: the original's family (JPEG, PNG, WebP), else PNG when `image` (in memory) has a
/// non-opaque alpha channel and JPEG otherwise; -1 on error.
static int chosen_format(const char *loader, VipsImage *image) {
    if (strcasestr(loader, "jpeg") != NULL) return IMGFS_VIPS_FORMAT_JPEG;
    if (strcasestr(loader, "png") != NULL) return IMGFS_VIPS_FORMAT_PNG;
    if (strcasestr(loader, "webp") != NULL) return IMGFS_VIPS_FORMAT_WEBP;
    if (!vips_image_hasalpha(image)) return IMGFS_VIPS_FORMAT_JPEG;
    int opaque = alpha_is_opaque(image);
    if (opaque < 0) return -1;
    return opaque ? IMGFS_VIPS_FORMAT_JPEG : IMGFS_VIPS_FORMAT_PNG;
}

/// Encodes `image` as `format` into `result`; JPEG flattens any alpha onto white first. 0 on success.
static int encode(VipsImage *image, int format, int quality, imgfs_vips_result *result) {
    switch (format) {
    case IMGFS_VIPS_FORMAT_JPEG: {
        VipsImage *flat = NULL, *bytes = NULL;
        VipsImage *in = image;
        int failed = 0;
        if (vips_image_hasalpha(in)) {
            VipsArrayDouble *white = vips_array_double_newv(1, 255.0);
            failed = vips_flatten(in, &flat, "background", white, NULL);
            vips_area_unref(VIPS_AREA(white));
            in = flat;
        }
        if (!failed && vips_image_get_format(in) != VIPS_FORMAT_UCHAR) {
            failed = vips_cast_uchar(in, &bytes, NULL);
            in = bytes;
        }
        if (!failed) {
            failed = vips_jpegsave_buffer(in, &result->data, &result->length, "Q", quality, "strip", TRUE,
                                          "interlace", FALSE, NULL);
        }
        imgfs_vips_release(&bytes);
        imgfs_vips_release(&flat);
        return failed;
    }
    case IMGFS_VIPS_FORMAT_PNG:
        return vips_pngsave_buffer(image, &result->data, &result->length, "strip", TRUE, NULL);
    case IMGFS_VIPS_FORMAT_WEBP:
        return vips_webpsave_buffer(image, &result->data, &result->length, "Q", quality, "strip", TRUE, NULL);
    case IMGFS_VIPS_FORMAT_GIF:
        return vips_gifsave_buffer(image, &result->data, &result->length, "strip", TRUE, NULL);
    case IMGFS_VIPS_FORMAT_TIFF:
        return vips_tiffsave_buffer(image, &result->data, &result->length, "compression",
                                    VIPS_FOREIGN_TIFF_COMPRESSION_DEFLATE, "strip", TRUE, NULL);
    case IMGFS_VIPS_FORMAT_AVIF:
        return vips_heifsave_buffer(image, &result->data, &result->length, "compression",
                                    VIPS_FOREIGN_HEIF_COMPRESSION_AV1, "Q", quality, "effort", 2, "strip", TRUE, NULL);
    case IMGFS_VIPS_FORMAT_HEIC:
        return vips_heifsave_buffer(image, &result->data, &result->length, "compression",
                                    VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, "Q", quality, "strip", TRUE, NULL);
    default:
        vips_error("imgfs", "unknown output format %d", format);
        return -1;
    }
}

/// The checks every decode starts with, before a pixel is decoded: a loader recognises the data (its name goes to
/// `result->loader`), it is a raster format, its header reads, and width x height is within `max_pixels`.
imgfs_vips_status imgfs_vips_read_header(const void *data, size_t length, int64_t max_pixels,
                                         imgfs_vips_result *result) {
    if (imgfs_vips_start() != 0) {
        snprintf(result->message, sizeof result->message, "%s", imgfs_vips_start_failure());
        return IMGFS_VIPS_UNDECODABLE;
    }
    const char *loader = vips_foreign_find_load_buffer(data, length);
    if (loader == NULL) {
        vips_error_clear();
        snprintf(result->message, sizeof result->message, "no decoder recognises the data");
        return IMGFS_VIPS_UNDECODABLE;
    }
    snprintf(result->loader, sizeof result->loader, "%s", loader);
    if (strcasestr(loader, "svg") != NULL || strcasestr(loader, "pdf") != NULL) {
        snprintf(result->message, sizeof result->message, "%s: a vector or document format is not rasterized", loader);
        return IMGFS_VIPS_NOT_RASTER;
    }
    // The header only: no pixel is decoded before the size is checked.
    VipsImage *header = vips_image_new_from_buffer(data, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (header == NULL) {
        imgfs_vips_take_error(result, "the header cannot be read");
        return IMGFS_VIPS_UNDECODABLE;
    }
    result->source_width = vips_image_get_width(header);
    result->source_height = vips_image_get_page_height(header);
    g_object_unref(header);
    if ((int64_t)result->source_width * (int64_t)result->source_height > max_pixels) {
        snprintf(result->message, sizeof result->message, "%d x %d pixels, over the limit of %lld (--tune max-pixels)",
                 result->source_width, result->source_height, (long long)max_pixels);
        return IMGFS_VIPS_TOO_MANY_PIXELS;
    }
    return IMGFS_VIPS_OK;
}

imgfs_vips_status imgfs_vips_variant(const void *data, size_t length, imgfs_vips_shape shape, int width, int height,
                                     int attention, imgfs_vips_format format, int64_t max_pixels, int quality,
                                     imgfs_vips_result *result) {
    memset(result, 0, sizeof *result);
    imgfs_vips_status checked = imgfs_vips_read_header(data, length, max_pixels, result);
    if (checked != IMGFS_VIPS_OK) return checked;
    int target_width = width > 0 ? width : 1, target_height = width > 0 ? width : 1;
    VipsSize size = VIPS_SIZE_DOWN;
    VipsInteresting crop = VIPS_INTERESTING_NONE;
    if (shape == IMGFS_VIPS_SHAPE_COVER) {
        target_height = height > 0 ? height : 1;
        size = VIPS_SIZE_BOTH;
        crop = attention ? VIPS_INTERESTING_ATTENTION : VIPS_INTERESTING_CENTRE;
    } else if (shape == IMGFS_VIPS_SHAPE_WHOLE) {
        // Never scaled: a box as large as the longer side, turned or not.
        int longer = result->source_width > result->source_height ? result->source_width : result->source_height;
        target_width = target_height = longer > 0 ? longer : 1;
    }
    // The loader's options go through option_string: libvips 8.14 does not pass thumbnail's own fail_on to a
    // buffer loader, and a truncated JPEG would be padded with grey.
    VipsImage *thumbnail = NULL, *srgb = NULL, *memory = NULL, *opaque = NULL;
    imgfs_vips_status status = IMGFS_VIPS_UNDECODABLE;
    if (vips_thumbnail_buffer((void *)data, length, &thumbnail, target_width, "height", target_height, "size", size,
                              "crop", crop, "option_string", "fail_on=error", NULL) != 0) goto done;
    if (vips_colourspace(thumbnail, &srgb, VIPS_INTERPRETATION_sRGB, NULL) != 0) goto done;
    VipsImage *out = srgb;
    // A downsized variant is decoded once, into memory (it is small): the alpha test and the encoder both read it.
    // The whole image streams from the decoder to the encoder.
    if (shape != IMGFS_VIPS_SHAPE_WHOLE) {
        if ((memory = vips_image_copy_memory(srgb)) == NULL) goto done;
        out = memory;
    }
    int chosen = format;
    if (format == IMGFS_VIPS_FORMAT_AUTO) {
        chosen = shape == IMGFS_VIPS_SHAPE_WHOLE
            ? (vips_image_hasalpha(out) ? IMGFS_VIPS_FORMAT_PNG : IMGFS_VIPS_FORMAT_JPEG)
            : chosen_format(result->loader, out);
        if (chosen < 0) goto done;
        // An alpha channel that is opaque everywhere is dropped from a JPEG chosen here.
        if (chosen == IMGFS_VIPS_FORMAT_JPEG && vips_image_hasalpha(out)) {
            if (vips_extract_band(out, &opaque, 0, "n", out->Bands - 1, NULL) != 0) goto done;
            out = opaque;
        }
    }
    if (encode(out, chosen, quality, result) != 0) goto done;
    result->format = chosen;
    result->width = vips_image_get_width(out);
    result->height = vips_image_get_height(out);
    status = IMGFS_VIPS_OK;
done:;
    VipsImage **images[] = {&opaque, &memory, &srgb, &thumbnail};
    return imgfs_vips_finish(status, result, images, 4);
}

/// a x b, or INT64_MAX when that overflows (or either is negative).
static int64_t saturating_product(int64_t a, int64_t b) {
    int64_t product;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) return INT64_MAX;
    return product;
}

/// `bytes` x numerator / denominator, saturating.
static int64_t scaled(int64_t bytes, int64_t numerator, int64_t denominator) {
    int64_t product = saturating_product(bytes, numerator);
    return product == INT64_MAX ? INT64_MAX : product / denominator;
}

/// Whether the header says the image is interlaced (progressive JPEG, Adam7 PNG).
static int is_interlaced(VipsImage *header) {
    int interlaced = 0;
    if (vips_image_get_typeof(header, "interlaced") == 0) return 0;
    if (vips_image_get_int(header, "interlaced", &interlaced) != 0) return 0;
    return interlaced != 0;
}

/// The JPEG's coefficients per pixel x 8: the first component in full, the others as subsampled.
static int64_t jpeg_coefficients_in_eighths(VipsImage *header, int bands) {
    const char *subsample = NULL;
    int64_t chroma = 8;
    if (vips_image_get_typeof(header, "jpeg-chroma-subsample") != 0
        && vips_image_get_string(header, "jpeg-chroma-subsample", &subsample) == 0 && subsample != NULL) {
        if (strcmp(subsample, "4:2:0") == 0) chroma = 2;
        else if (strcmp(subsample, "4:2:2") == 0) chroma = 4;
    }
    return bands <= 1 ? 8 : 8 + (int64_t)(bands - 1) * chroma;
}

int imgfs_vips_estimate_decode(const void *data, size_t length, imgfs_vips_decode_cost *cost) {
    memset(cost, 0, sizeof *cost);
    if (imgfs_vips_start() != 0) return -1;
    const char *loader = vips_foreign_find_load_buffer(data, length);
    if (loader == NULL) {
        vips_error_clear();
        return -1;
    }
    if (strcasestr(loader, "svg") != NULL || strcasestr(loader, "pdf") != NULL) return 0;
    VipsImage *header = vips_image_new_from_buffer(data, length, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (header == NULL) {
        vips_error_clear();
        return -1;
    }
    int width = vips_image_get_width(header), height = vips_image_get_page_height(header);
    int bands = vips_image_get_bands(header);
    int64_t sample = (int64_t)vips_format_sizeof(vips_image_get_format(header));
    cost->width = width;
    cost->height = height;
    cost->bands = bands;
    cost->bits = (int)(sample * 8);
    int orientation = 1;
    if (vips_image_get_typeof(header, VIPS_META_ORIENTATION) != 0
        && vips_image_get_int(header, VIPS_META_ORIENTATION, &orientation) == 0
        && orientation >= 1 && orientation <= 8) {
        cost->orientation = orientation;
    } else {
        cost->orientation = 1;
    }
    int64_t pixels = saturating_product(width, height);
    int64_t whole = saturating_product(saturating_product(pixels, bands), sample);
    if (strcasestr(loader, "png") != NULL && is_interlaced(header)) {
        snprintf(cost->what, sizeof cost->what, "interlaced PNG");
        cost->bytes = scaled(whole, 5, 4);
    } else if (strcasestr(loader, "jpeg") != NULL && is_interlaced(header)) {
        snprintf(cost->what, sizeof cost->what, "progressive JPEG");
        cost->bytes = scaled(saturating_product(pixels, jpeg_coefficients_in_eighths(header, bands)), 2, 8);
    } else if (strcasestr(loader, "gif") != NULL) {
        snprintf(cost->what, sizeof cost->what, "GIF");
        cost->bytes = scaled(saturating_product(pixels, 4), 3, 2);
    } else if (strcasestr(loader, "heif") != NULL) {
        snprintf(cost->what, sizeof cost->what, "HEIF");
        cost->bytes = scaled(whole, 9, 4);
    }
    g_object_unref(header);
    return 0;
}

void imgfs_vips_free(void *data) {
    // Only libvips's own output is freed here, so the library is loaded whenever `data` is not NULL.
    if (data != NULL) g_free(data);
}
