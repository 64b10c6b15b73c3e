#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "CFuseShims.h"

// One mount per process: the INIT request's id and what the kernel offered, seen by the read hook.
static _Atomic uint64_t init_unique = UINT64_MAX;
static atomic_bool kernel_offers = false;
static atomic_bool granted = false;

static ssize_t hooked_read(int fd, void *buffer, size_t length, void *userdata) {
    (void)userdata;
    ssize_t count = read(fd, buffer, length);
    if (count >= (ssize_t)(sizeof(struct fuse_in_header) + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t))) {
        const struct fuse_in_header *header = buffer;
        if (header->opcode == FUSE_INIT) {
            const struct fuse_init_in *init = (const void *)(header + 1);
            atomic_store(&kernel_offers, (init->flags & FUSE_PARALLEL_DIROPS) != 0);
            atomic_store(&init_unique, header->unique);
        }
    }
    return count;
}

static ssize_t hooked_writev(int fd, struct iovec *vectors, int count, void *userdata) {
    (void)userdata;
    if (count >= 2 && vectors[0].iov_len >= sizeof(struct fuse_out_header)
        && vectors[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
        const struct fuse_out_header *header = vectors[0].iov_base;
        if (header->error == 0 && header->unique == atomic_load(&init_unique) && atomic_load(&kernel_offers)) {
            struct fuse_init_out *init = vectors[1].iov_base;
            init->flags |= FUSE_PARALLEL_DIROPS;
            atomic_store(&init_unique, UINT64_MAX);
            atomic_store(&granted, true);
        }
    }
    return writev(fd, vectors, count);
}

bool imgfs_fuse_request_parallel_dirops(struct fuse_session *session) {
    static const struct fuse_custom_io io = {.read = hooked_read, .writev = hooked_writev};
    int fd = fuse_session_fd(session);
    return fd >= 0 && fuse_session_custom_io(session, &io, fd) == 0;
}

bool imgfs_fuse_parallel_dirops_granted(void) { return atomic_load(&granted); }
