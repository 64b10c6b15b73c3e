#ifndef IMGFS_CFUSESHIMS_H
#define IMGFS_CFUSESHIMS_H
#include <stdbool.h>

struct fuse_session;

// libfuse 3.14 builds the INIT reply without FUSE_PARALLEL_DIROPS even when the file system asks for it (fixed in
// libfuse 3.17.1), so the kernel serializes LOOKUP and READDIR per directory. This installs libfuse's custom I/O on the
// mounted session's descriptor: reads and writes go to /dev/fuse unchanged, except that the INIT reply gets the flag
// when the kernel offered it. Call after fuse_session_mount and before the loop; returns false if libfuse refused.
bool imgfs_fuse_request_parallel_dirops(struct fuse_session *session);

// Whether the INIT reply sent so far asked for parallel directory operations (false until INIT has been answered).
bool imgfs_fuse_parallel_dirops_granted(void);

#endif
