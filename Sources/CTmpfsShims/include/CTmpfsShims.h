#ifndef IMGFS_CTMPFSSHIMS_H
#define IMGFS_CTMPFSSHIMS_H

// A tmpfs instance of the process's own, mounted nowhere (the new mount API: fsopen, fsconfig, fsmount, Linux 5.2+),
// so that image bodies can live in shared memory with the options imgfs chooses rather than the system's for memfds.
// Needs CAP_SYS_ADMIN, as FUSE passthrough does.

// Creates the instance with `huge` as its huge= option ("within_size": pages larger than 4 KiB for the parts of a
// file that lie within its size, as large as a write or fallocate range allows on Linux 6.14+) and no limit on its
// size or its number of files (size=0, nr_inodes=0), and returns a descriptor of its root (close-on-exec), or
// -errno: -ENOSYS on kernels without the mount API, -EPERM without the privilege, -EINVAL when the kernel does not
// know an option.
int imgfs_tmpfs_create(const char *huge);

// A new file without a name (O_TMPFILE) in the directory `directory`, open for reading and writing (close-on-exec),
// or -errno. It goes away with its last descriptor or mapping.
int imgfs_tmpfs_unnamed_file(int directory);

#endif
