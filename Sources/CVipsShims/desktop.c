#define _GNU_SOURCE
#include "CVipsDesktop.h"
#include "vips_internal.h"

#include <stdio.h>
#include <string.h>
#include <vips/vips.h>

imgfs_vips_status imgfs_vips_thumbnail_png(const void *data, size_t length, int size, int64_t max_pixels,
                                           imgfs_vips_result *result) {
    memset(result, 0, sizeof *result);
    imgfs_vips_status checked = imgfs_vips_read_header(data, length, max_pixels, result);
    if (checked != IMGFS_VIPS_OK) return checked;
    VipsImage *thumbnail = NULL, *srgb = NULL, *memory = NULL, *bands = NULL, *bare = NULL;
    imgfs_vips_status status = IMGFS_VIPS_UNDECODABLE;
    if (vips_thumbnail_buffer((void *)data, length, &thumbnail, size, "height", size, "size", VIPS_SIZE_DOWN,
                              "option_string", "fail_on=error", NULL) != 0) goto done;
    if (vips_colourspace(thumbnail, &srgb, VIPS_INTERPRETATION_sRGB, NULL) != 0) goto done;
    if ((memory = vips_image_copy_memory(srgb)) == NULL) goto done;
    VipsImage *out = memory;
    if (vips_image_hasalpha(memory)) {
        VipsImage *alpha = NULL;
        double lowest = 0;
        if (vips_extract_band(memory, &alpha, memory->Bands - 1, NULL) != 0) goto done;
        int failed = vips_min(alpha, &lowest, NULL);
        g_object_unref(alpha);
        if (failed) goto done;
        if (lowest >= 255) {
            if (vips_extract_band(memory, &bands, 0, "n", memory->Bands - 1, NULL) != 0) goto done;
            out = bands;
        }
    }
    // A fresh image of the same pixels carries no metadata (ICC profile, EXIF, XMP): the PNG holds pixels only.
    VipsImage *flat = vips_image_copy_memory(out);
    if (flat == NULL) goto done;
    size_t pixels_length = 0;
    const void *pixels = vips_image_get_data(flat) ? vips_image_get_data(flat) : NULL;
    pixels_length = VIPS_IMAGE_SIZEOF_IMAGE(flat);
    bare = vips_image_new_from_memory_copy(pixels, pixels_length, flat->Xsize, flat->Ysize, flat->Bands,
                                           VIPS_FORMAT_UCHAR);
    g_object_unref(flat);
    if (bare == NULL || pixels == NULL) goto done;
    bare->Type = VIPS_INTERPRETATION_sRGB;
    if (vips_pngsave_buffer(bare, &result->data, &result->length, "compression", 6, "strip", TRUE, NULL) != 0) {
        goto done;
    }
    result->format = IMGFS_VIPS_FORMAT_PNG;
    result->width = bare->Xsize;
    result->height = bare->Ysize;
    status = IMGFS_VIPS_OK;
done:;
    VipsImage **images[] = {&bare, &bands, &memory, &srgb, &thumbnail};
    return imgfs_vips_finish(status, result, images, 5);
}
