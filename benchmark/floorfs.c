// floorfs: the FUSE floor of the benchmark's small-file rows.
//
// A minimal low-level FUSE file system that does nothing but serve a list of files, named 0, 1, 2, … in its root:
// lookups and attributes answered from an array with hour-long timeouts, opens answered at once with keep_cache,
// reads answered from memory (--memory: every file read in at start) or from the source file (--disk: stat at lookup,
// open at OPEN, pread at READ, close at RELEASE). Whatever a file system built on FUSE does, it pays at least what
// floorfs pays for the same access pattern: the kernel's round trips to a daemon. The benchmark sets imgfs's
// small-file rows against it (benchmark/README.md).
//
// Usage: floorfs --memory|--disk LIST MOUNTPOINT   (LIST: one source path per line)
//
// floorfs --store LIST DIRECTORY does not mount: it reads the files into memory, then writes each into a new file
// DIRECTORY/0, 1, 2, … (create, write, close), syncs the file system once and prints the microseconds of its own CPU
// (user and system, as getrusage reports them) per file: the least a cache that keeps each image in a file of its own
// pays on that file system, set against imgfs's disk writer (benchmark/benchkit/floor.py).
// Built and run by benchmark/bench (gcc, libfuse3-dev); not part of imgfs.
#define _GNU_SOURCE  // syncfs
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT 3600.0
#define THREADS 16      // as imgfs: up to 16 request threads,
#define IDLE_THREADS 4  // of which 4 are kept when idle

struct source {
    char *path;
    char *bytes;  // --memory only
    off_t size;
};

static struct source *sources;
static size_t count;
static bool in_memory;

// Inode 1 is the root; file i is inode i + 2.
static bool file_inode(fuse_ino_t inode) { return inode >= 2 && inode - 2 < count; }

static int attributes(fuse_ino_t inode, struct stat *status) {
    memset(status, 0, sizeof *status);
    status->st_ino = inode;
    if (inode == 1) {
        status->st_mode = S_IFDIR | 0555;
        status->st_nlink = 2;
        return 0;
    }
    if (!file_inode(inode)) return ENOENT;
    struct source *source = &sources[inode - 2];
    if (!in_memory) {
        struct stat on_disk;
        if (stat(source->path, &on_disk) != 0) return errno;
        source->size = on_disk.st_size;
    }
    status->st_mode = S_IFREG | 0444;
    status->st_nlink = 1;
    status->st_size = source->size;
    return 0;
}

static void op_lookup(fuse_req_t request, fuse_ino_t parent, const char *name) {
    char *end;
    unsigned long index = strtoul(name, &end, 10);
    if (parent != 1 || *name == '\0' || *end != '\0' || index >= count) {
        fuse_reply_err(request, ENOENT);
        return;
    }
    struct fuse_entry_param entry = {.ino = index + 2, .attr_timeout = TIMEOUT, .entry_timeout = TIMEOUT};
    int error = attributes(entry.ino, &entry.attr);
    if (error) fuse_reply_err(request, error);
    else fuse_reply_entry(request, &entry);
}

static void op_getattr(fuse_req_t request, fuse_ino_t inode, struct fuse_file_info *info) {
    (void)info;
    struct stat status;
    int error = attributes(inode, &status);
    if (error) fuse_reply_err(request, error);
    else fuse_reply_attr(request, &status, TIMEOUT);
}

static void op_open(fuse_req_t request, fuse_ino_t inode, struct fuse_file_info *info) {
    if (!file_inode(inode)) {
        fuse_reply_err(request, EISDIR);
        return;
    }
    if (!in_memory) {
        int fd = open(sources[inode - 2].path, O_RDONLY);
        if (fd < 0) {
            fuse_reply_err(request, errno);
            return;
        }
        info->fh = (uint64_t)fd;
    }
    info->keep_cache = 1;
    fuse_reply_open(request, info);
}

static void op_read(fuse_req_t request, fuse_ino_t inode, size_t size, off_t offset, struct fuse_file_info *info) {
    struct source *source = &sources[inode - 2];
    if (in_memory) {
        size_t length = offset >= source->size ? 0 : (size_t)(source->size - offset);
        fuse_reply_buf(request, source->bytes + (offset < source->size ? offset : 0), length < size ? length : size);
        return;
    }
    char *buffer = malloc(size);
    ssize_t read = buffer ? pread((int)info->fh, buffer, size, offset) : -1;
    if (read < 0) fuse_reply_err(request, buffer ? errno : ENOMEM);
    else fuse_reply_buf(request, buffer, (size_t)read);
    free(buffer);
}

static void op_release(fuse_req_t request, fuse_ino_t inode, struct fuse_file_info *info) {
    (void)inode;
    if (!in_memory) close((int)info->fh);
    fuse_reply_err(request, 0);
}

static bool load(const char *list_path) {
    FILE *list = fopen(list_path, "r");
    if (!list) return false;
    size_t capacity = 0;
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &line_capacity, list)) > 0) {
        if (line[length - 1] == '\n') line[--length] = '\0';
        if (length == 0) continue;
        if (count == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            sources = realloc(sources, capacity * sizeof *sources);
        }
        struct source *source = &sources[count++];
        *source = (struct source){.path = strdup(line)};
        if (!in_memory) continue;
        FILE *file = fopen(line, "rb");
        struct stat status;
        if (!file || fstat(fileno(file), &status) != 0) return false;
        source->size = status.st_size;
        source->bytes = malloc((size_t)status.st_size + 1);
        if (fread(source->bytes, 1, (size_t)status.st_size, file) != (size_t)status.st_size) return false;
        fclose(file);
    }
    free(line);
    fclose(list);
    return true;
}

/// The number in the environment variable `name`, else `fallback`.
static unsigned setting(const char *name, unsigned fallback) {
    const char *text = getenv(name);
    return text && *text ? (unsigned)strtoul(text, NULL, 10) : fallback;
}

static double cpu_microseconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
}

/// --store: each source into a new file of `directory`, one sync, the CPU per file on stdout.
static int store(const char *directory) {
    int directory_fd = open(directory, O_RDONLY | O_DIRECTORY);
    if (directory_fd < 0) return perror("floorfs: the store directory"), 1;
    double start = cpu_microseconds();
    char name[32];
    for (size_t index = 0; index < count; index++) {
        snprintf(name, sizeof name, "%zu", index);
        int fd = openat(directory_fd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || write(fd, sources[index].bytes, (size_t)sources[index].size) != sources[index].size ||
            close(fd) != 0)
            return perror("floorfs: storing"), 1;
    }
    if (syncfs(directory_fd) != 0) return perror("floorfs: syncfs"), 1;
    printf("%.3f\n", (cpu_microseconds() - start) / (double)count);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--store") == 0) {
        in_memory = true;
        if (!load(argv[2])) return perror("floorfs: reading the list"), 1;
        return store(argv[3]);
    }
    if (argc != 4 || (strcmp(argv[1], "--memory") != 0 && strcmp(argv[1], "--disk") != 0)) {
        fprintf(stderr, "usage: floorfs --memory|--disk LIST MOUNTPOINT | --store LIST DIRECTORY\n");
        return 2;
    }
    in_memory = strcmp(argv[1], "--memory") == 0;
    if (!load(argv[2])) {
        perror("floorfs: reading the list");
        return 1;
    }
    static const struct fuse_lowlevel_ops operations = {
        .lookup = op_lookup, .getattr = op_getattr, .open = op_open, .read = op_read, .release = op_release};
    char *arguments[] = {argv[0], "-o", "fsname=floorfs", NULL};
    struct fuse_args fuse_arguments = FUSE_ARGS_INIT(3, arguments);
    struct fuse_session *session = fuse_session_new(&fuse_arguments, &operations, sizeof operations, NULL);
    if (!session || fuse_set_signal_handlers(session) != 0 || fuse_session_mount(session, argv[3]) != 0) return 1;
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, setting("FLOORFS_THREADS", THREADS));
    fuse_loop_cfg_set_idle_threads(config, setting("FLOORFS_IDLE", IDLE_THREADS));
    int result = fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return result ? 1 : 0;
}
