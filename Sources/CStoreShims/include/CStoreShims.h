#ifndef IMGFS_CSTORESHIMS_H
#define IMGFS_CSTORESHIMS_H
#include <stddef.h>
#include <stdint.h>

// What the disk cache needs from C: its checksum and one system call the Swift module of Glibc does not declare.

// CRC-32 as in zlib, PNG and Ethernet (reflected polynomial 0xEDB88320), computed by folding the bytes with the
// processor's carry-less multiplication: 64 bytes per step with VPCLMULQDQ on AVX-512 registers where the processor
// and the kernel allow them, 16 bytes per step with PCLMULQDQ otherwise.

// Whether this processor has carry-less multiplication (PCLMULQDQ with SSE4.1). Without it imgfs_crc32_update still
// gives the right value, a byte at a time.
int imgfs_crc32_accelerated(void);

// Extends `crc`, the CRC-32 of earlier bytes (0 for none), with `count` bytes at `bytes`, as zlib's crc32_z does:
// feeding the bytes piece by piece gives the value of feeding them at once.
uint32_t imgfs_crc32_update(uint32_t crc, const void *bytes, size_t count);

// syncfs(2): writes back everything written to the file system holding `fd` and waits for it. 0, or -1 and errno.
int imgfs_syncfs(int fd);

#endif
