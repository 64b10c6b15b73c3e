#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <vips/version.h>

#define IMGFS_VIPS_LIBRARY_DEFINITION
#include "vips_internal.h"

imgfs_vips_functions imgfs_vips_library;

int imgfs_vips_open_library(char *reason, size_t reason_size) {
    char soname[32];
    snprintf(soname, sizeof soname, "libvips.so.%d", VIPS_LIBRARY_CURRENT - VIPS_LIBRARY_AGE);
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(reason, reason_size, "%s", dlerror());
        return -1;
    }
    imgfs_vips_functions found;
    memset(&found, 0, sizeof found);
    // dlsym on the handle searches libvips and the libraries it loaded (GLib's g_free, GObject's g_object_unref).
#define IMGFS_VIPS_LOOKUP(name)                                                           \
    if ((*(void **)&found.name = dlsym(handle, #name)) == NULL) {                         \
        snprintf(reason, reason_size, "%s has no %s", soname, #name);                     \
        return -1;                                                                        \
    }
    IMGFS_VIPS_FUNCTIONS(IMGFS_VIPS_LOOKUP)
#undef IMGFS_VIPS_LOOKUP
    imgfs_vips_library = found;
    return 0;
}
