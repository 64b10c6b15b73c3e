// What the C files of CVipsShims share and Swift does not see.
#pragma once

#include <vips/vips.h>

#include "CVipsShims.h"

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
