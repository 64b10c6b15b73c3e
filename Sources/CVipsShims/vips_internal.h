// What the C files of CVipsShims share and Swift does not see.
#pragma once

#include <vips/vips.h>

#include "CVipsShims.h"

// libvips is not linked into imgfs: loading it and the ~70 libraries it pulls in (GLib, cairo, pango, HDF5, X11, …)
// takes about 20 ms, which every start of the daemon and of every `imgfs` command would pay, though most never make a
// thumbnail. imgfs_vips_start opens it with dlopen instead, and the functions below are called through pointers of
// exactly their declared types. A name left off the first list does not link (the library is not linked); one left
// off the second is not called through the pointer, and does not link either.
#define IMGFS_VIPS_FUNCTIONS(X) \
    X(g_free) \
    X(g_object_unref) \
    X(vips_area_unref) \
    X(vips_array_double_newv) \
    X(vips_block_untrusted_set) \
    X(vips_cache_set_max) \
    X(vips_cast_uchar) \
    X(vips_colourspace) \
    X(vips_concurrency_set) \
    X(vips_error) \
    X(vips_error_buffer_copy) \
    X(vips_error_clear) \
    X(vips_extract_band) \
    X(vips_flatten) \
    X(vips_foreign_find_load_buffer) \
    X(vips_format_sizeof) \
    X(vips_format_sizeof_unsafe) \
    X(vips_gifsave_buffer) \
    X(vips_heifsave_buffer) \
    X(vips_image_copy_memory) \
    X(vips_image_get_bands) \
    X(vips_image_get_data) \
    X(vips_image_get_format) \
    X(vips_image_get_height) \
    X(vips_image_get_int) \
    X(vips_image_get_page_height) \
    X(vips_image_get_string) \
    X(vips_image_get_typeof) \
    X(vips_image_get_width) \
    X(vips_image_hasalpha) \
    X(vips_image_new_from_buffer) \
    X(vips_image_new_from_memory_copy) \
    X(vips_init) \
    X(vips_jpegsave_buffer) \
    X(vips_min) \
    X(vips_pngsave_buffer) \
    X(vips_thread_shutdown) \
    X(vips_thumbnail_buffer) \
    X(vips_tiffsave_buffer) \
    X(vips_webpsave_buffer)

/// The libvips functions imgfs calls, set once by imgfs_vips_start (all of them, or none).
typedef struct imgfs_vips_functions {
#define IMGFS_VIPS_POINTER(name) __typeof__(name) *name;
    IMGFS_VIPS_FUNCTIONS(IMGFS_VIPS_POINTER)
#undef IMGFS_VIPS_POINTER
} imgfs_vips_functions;

extern imgfs_vips_functions imgfs_vips_library;

/// Opens libvips (the soname of the headers imgfs was built with) and looks up every function of
/// IMGFS_VIPS_FUNCTIONS; 0, or -1 with the reason in `reason`.
int imgfs_vips_open_library(char *reason, size_t reason_size);

// library.c names the fields themselves.
#ifndef IMGFS_VIPS_LIBRARY_DEFINITION
#define g_free (imgfs_vips_library.g_free)
#define g_object_unref (imgfs_vips_library.g_object_unref)
#define vips_area_unref (imgfs_vips_library.vips_area_unref)
#define vips_array_double_newv (imgfs_vips_library.vips_array_double_newv)
#define vips_block_untrusted_set (imgfs_vips_library.vips_block_untrusted_set)
#define vips_cache_set_max (imgfs_vips_library.vips_cache_set_max)
#define vips_cast_uchar (imgfs_vips_library.vips_cast_uchar)
#define vips_colourspace (imgfs_vips_library.vips_colourspace)
#define vips_concurrency_set (imgfs_vips_library.vips_concurrency_set)
#define vips_error (imgfs_vips_library.vips_error)
#define vips_error_buffer_copy (imgfs_vips_library.vips_error_buffer_copy)
#define vips_error_clear (imgfs_vips_library.vips_error_clear)
#define vips_extract_band (imgfs_vips_library.vips_extract_band)
#define vips_flatten (imgfs_vips_library.vips_flatten)
#define vips_foreign_find_load_buffer (imgfs_vips_library.vips_foreign_find_load_buffer)
#define vips_format_sizeof (imgfs_vips_library.vips_format_sizeof)
#define vips_format_sizeof_unsafe (imgfs_vips_library.vips_format_sizeof_unsafe)
#define vips_gifsave_buffer (imgfs_vips_library.vips_gifsave_buffer)
#define vips_heifsave_buffer (imgfs_vips_library.vips_heifsave_buffer)
#define vips_image_copy_memory (imgfs_vips_library.vips_image_copy_memory)
#define vips_image_get_bands (imgfs_vips_library.vips_image_get_bands)
#define vips_image_get_data (imgfs_vips_library.vips_image_get_data)
#define vips_image_get_format (imgfs_vips_library.vips_image_get_format)
#define vips_image_get_height (imgfs_vips_library.vips_image_get_height)
#define vips_image_get_int (imgfs_vips_library.vips_image_get_int)
#define vips_image_get_page_height (imgfs_vips_library.vips_image_get_page_height)
#define vips_image_get_string (imgfs_vips_library.vips_image_get_string)
#define vips_image_get_typeof (imgfs_vips_library.vips_image_get_typeof)
#define vips_image_get_width (imgfs_vips_library.vips_image_get_width)
#define vips_image_hasalpha (imgfs_vips_library.vips_image_hasalpha)
#define vips_image_new_from_buffer (imgfs_vips_library.vips_image_new_from_buffer)
#define vips_image_new_from_memory_copy (imgfs_vips_library.vips_image_new_from_memory_copy)
#define vips_init (imgfs_vips_library.vips_init)
#define vips_jpegsave_buffer (imgfs_vips_library.vips_jpegsave_buffer)
#define vips_min (imgfs_vips_library.vips_min)
#define vips_pngsave_buffer (imgfs_vips_library.vips_pngsave_buffer)
#define vips_thread_shutdown (imgfs_vips_library.vips_thread_shutdown)
#define vips_thumbnail_buffer (imgfs_vips_library.vips_thumbnail_buffer)
#define vips_tiffsave_buffer (imgfs_vips_library.vips_tiffsave_buffer)
#define vips_webpsave_buffer (imgfs_vips_library.vips_webpsave_buffer)
#endif

/// Loads libvips (dlopen) and initialises it once (later calls return the first result): operation cache off, one
/// libvips worker thread per call of imgfs_vips_variant, untrusted loaders (ImageMagick, PDF, SVG, …) blocked. 0 on
/// success.
int imgfs_vips_start(void);

/// Why imgfs_vips_start failed, one line.
const char *imgfs_vips_start_failure(void);

/// Moves libvips's error text (or `fallback`) into `result->message`, on one line.
void imgfs_vips_take_error(imgfs_vips_result *result, const char *fallback);

/// Drops `*image` (if any) and clears it.
void imgfs_vips_release(VipsImage **image);

/// Ends a decode on its thread: on a failed `status` takes libvips's error into `result` and frees its output; drops
/// the `count` images of `images`; frees libvips's buffers for this thread and, after a large decode, returns the freed
/// heap to the system. Returns `status`.
imgfs_vips_status imgfs_vips_finish(imgfs_vips_status status, imgfs_vips_result *result, VipsImage **images[],
                                    int count);

/// The checks before any pixel is decoded: a loader recognises the data, a raster format, a readable header, and at
/// most `max_pixels` pixels. IMGFS_VIPS_OK, or the status with `result->message` set.
imgfs_vips_status imgfs_vips_read_header(const void *data, size_t length, int64_t max_pixels,
                                         imgfs_vips_result *result);
