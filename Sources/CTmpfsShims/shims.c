#define _GNU_SOURCE
#include "CTmpfsShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

// Debian 12's glibc (2.36) declares fsopen and friends only beside <sys/mount.h>, which clashes with <linux/mount.h>;
// the system calls are made directly.

static int set_string(int context, const char *key, const char *value) {
    return (int)syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, key, value, 0);
}

int imgfs_tmpfs_create(const char *huge) {
    int context = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (context < 0) return -errno;
    int mount = -1;
    if (set_string(context, "huge", huge) == 0 && set_string(context, "size", "0") == 0
        && set_string(context, "nr_inodes", "0") == 0
        && syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0) {
        mount = (int)syscall(
            SYS_fsmount, context, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    }
    int error = errno;
    close(context);
    return mount >= 0 ? mount : -error;
}

int imgfs_tmpfs_unnamed_file(int directory) {
    int file = openat(directory, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    return file >= 0 ? file : -errno;
}
