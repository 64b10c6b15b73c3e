#define _GNU_SOURCE
#include "CStoreShims.h"

#include <unistd.h>

int imgfs_syncfs(int fd) { return syncfs(fd); }
