#ifndef IMGFS_CFUSESHIMS_H
#define IMGFS_CFUSESHIMS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fuse_session;
struct fuse_req;
struct fuse_file_info;

// libfuse 3.14 builds the INIT reply without FUSE_PARALLEL_DIROPS even when the file system asks for it (fixed in
// libfuse 3.17.1), so the kernel serializes LOOKUP and READDIR per directory; and it knows nothing of passthrough
// (kernel 6.9: the kernel reads an open file's bytes from a file the daemon registered, without READ requests). This
// installs libfuse's custom I/O on the mounted session's descriptor: reads and writes go to /dev/fuse unchanged,
// except that the INIT reply gets FUSE_PARALLEL_DIROPS when the kernel offered it, FUSE_PASSTHROUGH when the kernel
// offered it and `passthrough` is true, and FUSE_DIRECT_IO_ALLOW_MMAP (kernel 6.6: files opened with direct_io may be
// mapped shared) when the kernel offered it; and that an open answered by imgfs_fuse_reply_open_passthrough carries
// its backing file. Call after fuse_session_mount and before the loop; returns false if libfuse refused.
bool imgfs_fuse_install_init_hooks(struct fuse_session *session, bool passthrough);

// Whether the INIT reply sent so far asked for parallel directory operations (false until INIT has been answered).
bool imgfs_fuse_parallel_dirops_granted(void);

// Whether the INIT request offered passthrough (known while INIT is being answered).
bool imgfs_fuse_passthrough_offered(void);

// Whether the INIT reply sent so far turned passthrough on (false until INIT has been answered).
bool imgfs_fuse_passthrough_granted(void);

// Whether the INIT reply sent so far let files opened with direct_io be mapped shared (false until INIT has been
// answered, and on kernels before 6.6).
bool imgfs_fuse_direct_io_mmap_granted(void);

// Registers `fd` as a backing file (needs CAP_SYS_ADMIN): the backing id (> 0), or -errno.
int imgfs_fuse_backing_open(struct fuse_session *session, int fd);

// Drops a backing id (files opened with it keep their backing file): 0 or -errno.
int imgfs_fuse_backing_close(struct fuse_session *session, int backing_id);

// fuse_reply_open for an open the kernel serves from backing file `backing_id` (passthrough must have been granted;
// keep_cache is dropped, direct_io kept: then reads still come to the daemon and only mmap uses the backing file).
// Returns fuse_reply_open's result, or -EPROTO when the hook did not see the reply.
int imgfs_fuse_reply_open_passthrough(struct fuse_req *request, const struct fuse_file_info *info, int backing_id);

// The rewriting the hooks do, on the kernel's wire format (<linux/fuse.h>) and nothing else; pure functions, so that
// they can be tested on byte buffers. Limits: written against FUSE protocol 7.40 (passthrough's constants are spelled
// out in shims.c because Debian 12's header predates them); a request or reply shorter than the fields read or
// written (an older kernel or a libfuse whose structs differ) is left untouched and nothing is granted.

// What a request read from /dev/fuse offers, when it is an INIT request.
struct imgfs_init_offer {
    bool is_init;
    uint64_t unique;
    bool parallel_dirops;
    bool passthrough;
    bool direct_io_mmap;
};
struct imgfs_init_offer imgfs_fuse_read_init_offer(const void *request, size_t length);

// What an INIT reply body (struct fuse_init_out, after the out header) was changed to ask for.
struct imgfs_init_grant {
    bool parallel_dirops;
    bool passthrough;
    bool direct_io_mmap;
};
struct imgfs_init_grant imgfs_fuse_amend_init_reply(void *body, size_t length, struct imgfs_init_offer offer,
                                                    bool wants_passthrough);

// Turns an OPEN reply body (struct fuse_open_out) into a passthrough open of `backing_id` (> 0); false, untouched,
// when the body is not of that size.
bool imgfs_fuse_amend_open_reply(void *body, size_t length, int32_t backing_id);

// fuse_session_loop_mt's thread waits in sem_wait until a worker ends or a signal interrupts it; after
// fuse_session_exit nothing ends a worker that waits for a request. This lets SIGUSR2 interrupt the calling thread (a
// handler that does nothing, without SA_RESTART, and SIGUSR2 unblocked here only): call it on the thread that runs the
// loop, before the loop.
void imgfs_fuse_accept_wake(void);

// Sends SIGUSR2 to `thread` (one that called imgfs_fuse_accept_wake): its sem_wait returns and the loop sees that the
// session has exited. 0, or an errno.
int imgfs_fuse_wake(unsigned long thread);

#endif
