#define _GNU_SOURCE
#include "CVipsShims.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_result = -1;

static void start_once(void) {
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

/// Moves libvips's error text (or `fallback`) into the result, on one line. The error buffer is shared by all
/// threads: a message may rarely carry another thread's concurrent failure too.
static void take_error(imgfs_vips_result *result, const char *fallback) {
    char *text = vips_error_buffer_copy();
    snprintf(result->message, sizeof result->message, "%s", text != NULL && text[0] != 0 ? text : fallback);
    g_free(text);
    size_t length = strlen(result->message);
    while (length > 0 && result->message[length - 1] == '\n') result->message[--length] = 0;
    for (size_t i = 0; i < length; i++) {
        if (result->message[i] == '\n') result->message[i] = ' ';
    }
}

static void release(VipsImage **image) {
    if (*image != NULL) g_object_unref(*image);
    *image = NULL;
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

imgfs_vips_status imgfs_vips_thumbnail(const void *data, size_t length, int size, int64_t max_pixels, int quality,
                                       imgfs_vips_result *result) {
    memset(result, 0, sizeof *result);
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
        take_error(result, "the header cannot be read");
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
    // The loader's options go through option_string: libvips 8.14 does not pass thumbnail's own fail_on to a
    // buffer loader, and a truncated JPEG would be padded with grey.
    VipsImage *thumbnail = NULL, *srgb = NULL, *memory = NULL, *opaque = NULL;
    imgfs_vips_status status = IMGFS_VIPS_UNDECODABLE;
    if (vips_thumbnail_buffer((void *)data, length, &thumbnail, size, "height", size, "size", VIPS_SIZE_DOWN,
                              "option_string", "fail_on=error", NULL) != 0) goto done;
    if (vips_colourspace(thumbnail, &srgb, VIPS_INTERPRETATION_sRGB, NULL) != 0) goto done;
    // Decoded once, into memory (at most size x size pixels): the alpha test and the encoder both read it.
    if ((memory = vips_image_copy_memory(srgb)) == NULL) goto done;
    VipsImage *out = memory;
    if (vips_image_hasalpha(memory)) {
        int opaque_alpha = alpha_is_opaque(memory);
        if (opaque_alpha < 0) goto done;
        if (opaque_alpha) {
            if (vips_extract_band(memory, &opaque, 0, "n", memory->Bands - 1, NULL) != 0) goto done;
            out = opaque;
        } else {
            result->png = 1;
        }
    }
    int failed = result->png
        ? vips_pngsave_buffer(out, &result->data, &result->length, "strip", TRUE, NULL)
        : vips_jpegsave_buffer(out, &result->data, &result->length, "Q", quality, "strip", TRUE, NULL);
    if (failed) goto done;
    result->width = vips_image_get_width(out);
    result->height = vips_image_get_height(out);
    status = IMGFS_VIPS_OK;
done:
    if (status != IMGFS_VIPS_OK) {
        take_error(result, "decoding failed");
        imgfs_vips_free(result->data);
        result->data = NULL;
        result->length = 0;
    }
    release(&opaque);
    release(&memory);
    release(&srgb);
    release(&thumbnail);
    // Frees the per-thread buffers libvips kept for this thread.
    vips_thread_shutdown();
    // A big decode leaves its freed rows and planes in this thread's heap (hundreds of MB after a 100-megapixel GIF,
    // below glibc's own trim threshold per arena): they go back to the system now, not at the next purge.
    if ((int64_t)result->source_width * (int64_t)result->source_height >= 4000000) malloc_trim(0);
    return status;
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
    g_free(data);
}
