#define FUSE_USE_VERSION 312
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "CFuseShims.h"

// Passthrough (kernel 6.9, FUSE protocol 7.40) is newer than Debian 12's <linux/fuse.h>: its constants are spelled
// out here as the kernel defines them.
#define IMGFS_FUSE_PASSTHROUGH_FLAGS2 (1u << 5) /* FUSE_PASSTHROUGH is bit 37 of the 64 INIT flags */
#define IMGFS_FOPEN_PASSTHROUGH (1u << 7)
// FUSE_DIRECT_IO_ALLOW_MMAP (kernel 6.6, protocol 7.39) is bit 36 of the INIT flags: files opened with direct_io may
// then be mapped shared too.
#define IMGFS_FUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2 (1u << 4)
struct imgfs_backing_map {
    int32_t fd;
    uint32_t flags;
    uint64_t padding;
};
#define IMGFS_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct imgfs_backing_map)
#define IMGFS_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

// One mount per process: the INIT request's id and what the kernel offered, seen by the read hook.
static _Atomic uint64_t init_unique = UINT64_MAX;
static atomic_bool offers_parallel_dirops = false;
static atomic_bool offers_passthrough = false;
static atomic_bool offers_direct_io_mmap = false;
static atomic_bool wants_passthrough = false;
static atomic_bool granted_parallel_dirops = false;
static atomic_bool granted_passthrough = false;
static atomic_bool granted_direct_io_mmap = false;
// The backing id the open reply being sent on this thread must carry (0: none).
static _Thread_local int32_t pending_backing_id = 0;
static _Thread_local bool pending_backing_sent = false;

// MARK: the rewriting, on the kernel's wire format only (no state: unit-tested on byte buffers)

struct imgfs_init_offer imgfs_fuse_read_init_offer(const void *request, size_t length) {
    struct imgfs_init_offer offer = {
        .is_init = false, .unique = 0, .parallel_dirops = false, .passthrough = false, .direct_io_mmap = false};
    if (length < sizeof(struct fuse_in_header) + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t)) return offer;
    const struct fuse_in_header *header = request;
    if (header->opcode != FUSE_INIT) return offer;
    const struct fuse_init_in *init = (const void *)(header + 1);
    offer.is_init = true;
    offer.unique = header->unique;
    offer.parallel_dirops = (init->flags & FUSE_PARALLEL_DIROPS) != 0;
    // flags2 exists only in requests of protocol 7.36+, which say so with FUSE_INIT_EXT.
    bool extended = length >= sizeof(struct fuse_in_header) + offsetof(struct fuse_init_in, flags2) + sizeof(uint32_t)
                    && (init->flags & FUSE_INIT_EXT) != 0;
    offer.passthrough = extended && (init->flags2 & IMGFS_FUSE_PASSTHROUGH_FLAGS2) != 0;
    offer.direct_io_mmap = extended && (init->flags2 & IMGFS_FUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2) != 0;
    return offer;
}

struct imgfs_init_grant imgfs_fuse_amend_init_reply(void *body, size_t length, struct imgfs_init_offer offer,
                                                    bool wants_passthrough) {
    struct imgfs_init_grant grant = {.parallel_dirops = false, .passthrough = false, .direct_io_mmap = false};
    if (length < offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) return grant;
    struct fuse_init_out *init = body;
    if (offer.parallel_dirops) {
        init->flags |= FUSE_PARALLEL_DIROPS;
        grant.parallel_dirops = true;
    }
    // max_stack_depth is the word after flags2 (unused[0] in this header): 1 lets files of a file system that is
    // not itself stacked (a memfd) back our files. The kernel refuses passthrough with a writeback cache.
    if (wants_passthrough && offer.passthrough && length >= sizeof(struct fuse_init_out)
        && (init->flags & FUSE_WRITEBACK_CACHE) == 0) {
        init->flags |= FUSE_INIT_EXT;
        init->flags2 |= IMGFS_FUSE_PASSTHROUGH_FLAGS2;
        init->unused[0] = 1;
        grant.passthrough = true;
    }
    if (offer.direct_io_mmap && length >= sizeof(struct fuse_init_out)) {
        init->flags |= FUSE_INIT_EXT;
        init->flags2 |= IMGFS_FUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2;
        grant.direct_io_mmap = true;
    }
    return grant;
}

bool imgfs_fuse_amend_open_reply(void *body, size_t length, int32_t backing_id) {
    if (length != sizeof(struct fuse_open_out) || backing_id <= 0) return false;
    struct fuse_open_out *open = body;
    // Only these flags may go with passthrough (the kernel fails the open otherwise).
    open->open_flags = (open->open_flags & (FOPEN_DIRECT_IO | FOPEN_NOFLUSH)) | IMGFS_FOPEN_PASSTHROUGH;
    open->padding = (uint32_t)backing_id; /* backing_id in protocol 7.40 */
    return true;
}

// MARK: the hooks on /dev/fuse (process-global state: one mount per process)

static ssize_t hooked_read(int fd, void *buffer, size_t length, void *userdata) {
    (void)userdata;
    ssize_t count = read(fd, buffer, length);
    if (count > 0) {
        struct imgfs_init_offer offer = imgfs_fuse_read_init_offer(buffer, (size_t)count);
        if (offer.is_init) {
            atomic_store(&offers_parallel_dirops, offer.parallel_dirops);
            atomic_store(&offers_passthrough, offer.passthrough);
            atomic_store(&offers_direct_io_mmap, offer.direct_io_mmap);
            atomic_store(&init_unique, offer.unique);
        }
    }
    return count;
}

static ssize_t hooked_writev(int fd, struct iovec *vectors, int count, void *userdata) {
    (void)userdata;
    if (count >= 2 && vectors[0].iov_len >= sizeof(struct fuse_out_header)) {
        const struct fuse_out_header *header = vectors[0].iov_base;
        if (header->error == 0 && header->unique == atomic_load(&init_unique)) {
            struct imgfs_init_offer offer = {.is_init = true, .unique = header->unique,
                                             .parallel_dirops = atomic_load(&offers_parallel_dirops),
                                             .passthrough = atomic_load(&offers_passthrough),
                                             .direct_io_mmap = atomic_load(&offers_direct_io_mmap)};
            struct imgfs_init_grant grant = imgfs_fuse_amend_init_reply(vectors[1].iov_base, vectors[1].iov_len, offer,
                                                                        atomic_load(&wants_passthrough));
            atomic_store(&granted_parallel_dirops, grant.parallel_dirops);
            atomic_store(&granted_passthrough, grant.passthrough);
            atomic_store(&granted_direct_io_mmap, grant.direct_io_mmap);
            atomic_store(&init_unique, UINT64_MAX);
        } else if (header->error == 0 && pending_backing_id != 0) {
            pending_backing_sent = imgfs_fuse_amend_open_reply(vectors[1].iov_base, vectors[1].iov_len,
                                                               pending_backing_id);
        }
    }
    return writev(fd, vectors, count);
}

bool imgfs_fuse_install_init_hooks(struct fuse_session *session, bool passthrough) {
    static const struct fuse_custom_io io = {.read = hooked_read, .writev = hooked_writev};
    atomic_store(&wants_passthrough, passthrough);
    int fd = fuse_session_fd(session);
    return fd >= 0 && fuse_session_custom_io(session, &io, fd) == 0;
}

bool imgfs_fuse_parallel_dirops_granted(void) { return atomic_load(&granted_parallel_dirops); }

bool imgfs_fuse_passthrough_offered(void) { return atomic_load(&offers_passthrough); }

bool imgfs_fuse_passthrough_granted(void) { return atomic_load(&granted_passthrough); }

bool imgfs_fuse_direct_io_mmap_granted(void) { return atomic_load(&granted_direct_io_mmap); }

int imgfs_fuse_backing_open(struct fuse_session *session, int fd) {
    struct imgfs_backing_map map = {.fd = fd, .flags = 0, .padding = 0};
    int id = ioctl(fuse_session_fd(session), IMGFS_DEV_IOC_BACKING_OPEN, &map);
    return id < 0 ? -errno : id;
}

int imgfs_fuse_backing_close(struct fuse_session *session, int backing_id) {
    uint32_t id = (uint32_t)backing_id;
    return ioctl(fuse_session_fd(session), IMGFS_DEV_IOC_BACKING_CLOSE, &id) < 0 ? -errno : 0;
}

int imgfs_fuse_reply_open_passthrough(fuse_req_t request, const struct fuse_file_info *info, int backing_id) {
    struct fuse_file_info answer = *info;
    answer.keep_cache = 0;
    pending_backing_id = backing_id;
    pending_backing_sent = false;
    int result = fuse_reply_open(request, &answer);
    bool sent = pending_backing_sent;
    pending_backing_id = 0;
    return result != 0 ? result : (sent ? 0 : -EPROTO);
}

static void imgfs_fuse_woken(int signal) { (void)signal; }

void imgfs_fuse_accept_wake(void) {
    struct sigaction action = {0};
    action.sa_handler = imgfs_fuse_woken;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
}

int imgfs_fuse_wake(unsigned long thread) { return pthread_kill((pthread_t)thread, SIGUSR2); }
