// libfuse3 low-level API. FUSE_USE_VERSION 312 makes fuse_session_loop_mt a real declaration that Swift can import
// (with 31 or 35 it is a function-like macro), and imports the fuse_loop_cfg_* functions.
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
// setxattr, for asking a running mount to act (imgfs purge).
#include <sys/xattr.h>
