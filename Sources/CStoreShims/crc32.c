// CRC-32 by folding. The message is a polynomial over GF(2) whose first bit is the highest term, and its CRC depends
// only on it modulo P = x^32 + 0x04C11DB7. A block A of 128 bits followed by D more bits contributes A·x^D; replacing
// A by a shorter C ≡ A·x^D (mod P) and adding C to the block D bits later leaves the message's CRC unchanged. With
// A = a·x^64 + b (a, b of 64 bits), C = a·(x^(64+D) mod P) + b·(x^D mod P): two carry-less 64×32-bit products.
//
// Bytes are reflected (the first bit of a byte is its lowest), so a 64-bit lane loaded from memory holds its
// polynomial bit-reversed, and a carry-less product of two reversed operands is the reversed product, one bit short
// of 128: multiplying by x^(E-1) instead of x^E absorbs that bit, and the product lands where the block it is added
// to sits. The CRC register's starting value is added to the first 32 bits of the message; what is left after the
// folds, 16 bytes and a tail shorter than a block, goes through the classic byte table from a zero register.
#include "CStoreShims.h"

#include <immintrin.h>
#include <string.h>

static uint32_t byte_table[256];
static __m128i fold_by_128, fold_by_512, fold_by_2048;
static int carryless, wide_carryless;

static uint64_t power_modulo(unsigned exponent) {
    uint64_t value = 1;
    while (exponent--) {
        value <<= 1;
        if (value & 0x100000000ULL) value ^= 0x104C11DB7ULL;
    }
    return value;
}

static uint64_t reversed(uint64_t value) {
    uint64_t result = 0;
    for (int bit = 0; bit < 64; bit++) {
        result = (result << 1) | (value & 1);
        value >>= 1;
    }
    return result;
}

// Multipliers moving a block `distance` bits forward: its first lane's in the low half, its second's in the high.
static __m128i fold_constants(unsigned distance) {
    return _mm_set_epi64x((long long)reversed(power_modulo(distance - 1)),
                          (long long)reversed(power_modulo(64 + distance - 1)));
}

__attribute__((constructor)) static void prepare(void) {
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t value = index;
        for (int bit = 0; bit < 8; bit++) value = value & 1 ? (value >> 1) ^ 0xEDB88320u : value >> 1;
        byte_table[index] = value;
    }
    fold_by_128 = fold_constants(128);
    fold_by_512 = fold_constants(512);
    fold_by_2048 = fold_constants(2048);
    __builtin_cpu_init();
    carryless = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    wide_carryless = carryless && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}

// The register `state` (not inverted) after `count` more bytes.
static uint32_t by_bytes(uint32_t state, const uint8_t *bytes, size_t count) {
    while (count--) state = byte_table[(state ^ *bytes++) & 0xff] ^ (state >> 8);
    return state;
}

#define NARROW __attribute__((target("pclmul,sse4.1")))
#define WIDE __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1")))

NARROW static inline __m128i fold(__m128i block, __m128i constants) {
    return _mm_xor_si128(_mm_clmulepi64_si128(block, constants, 0x00), _mm_clmulepi64_si128(block, constants, 0x11));
}

NARROW static inline __m128i load(const uint8_t *bytes) { return _mm_loadu_si128((const __m128i *)bytes); }

// The register after `block` and then `count` bytes at `bytes`, folding 16 bytes at a time.
NARROW static uint32_t finish(__m128i block, const uint8_t *bytes, size_t count) {
    while (count >= 16) {
        block = _mm_xor_si128(fold(block, fold_by_128), load(bytes));
        bytes += 16;
        count -= 16;
    }
    uint8_t last[16];
    _mm_storeu_si128((__m128i *)last, block);
    return by_bytes(by_bytes(0, last, 16), bytes, count);
}

// count >= 16.
NARROW static uint32_t narrow_update(uint32_t state, const uint8_t *bytes, size_t count) {
    __m128i first = _mm_xor_si128(load(bytes), _mm_cvtsi32_si128((int)state));
    bytes += 16;
    count -= 16;
    if (count < 48) return finish(first, bytes, count);
    // Four blocks in flight, 64 bytes a step.
    __m128i lanes[4] = {first, load(bytes), load(bytes + 16), load(bytes + 32)};
    bytes += 48;
    count -= 48;
    while (count >= 64) {
        for (int lane = 0; lane < 4; lane++) {
            lanes[lane] = _mm_xor_si128(fold(lanes[lane], fold_by_512), load(bytes + 16 * lane));
        }
        bytes += 64;
        count -= 64;
    }
    for (int lane = 1; lane < 4; lane++) lanes[lane] = _mm_xor_si128(fold(lanes[lane - 1], fold_by_128), lanes[lane]);
    return finish(lanes[3], bytes, count);
}

WIDE static inline __m512i wide_fold(__m512i blocks, __m512i constants) {
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(blocks, constants, 0x00),
                            _mm512_clmulepi64_epi128(blocks, constants, 0x11));
}

// count >= 256.
WIDE static uint32_t wide_update(uint32_t state, const uint8_t *bytes, size_t count) {
    // Sixteen blocks in flight in four registers, 256 bytes a step.
    __m512i lanes[4];
    for (int lane = 0; lane < 4; lane++) lanes[lane] = _mm512_loadu_si512(bytes + 64 * lane);
    lanes[0] = _mm512_xor_si512(lanes[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)state)));
    bytes += 256;
    count -= 256;
    __m512i by_2048 = _mm512_broadcast_i32x4(fold_by_2048), by_512 = _mm512_broadcast_i32x4(fold_by_512);
    while (count >= 256) {
        for (int lane = 0; lane < 4; lane++) {
            lanes[lane] = _mm512_xor_si512(wide_fold(lanes[lane], by_2048), _mm512_loadu_si512(bytes + 64 * lane));
        }
        bytes += 256;
        count -= 256;
    }
    for (int lane = 1; lane < 4; lane++) {
        lanes[lane] = _mm512_xor_si512(wide_fold(lanes[lane - 1], by_512), lanes[lane]);
    }
    uint8_t last[64];
    _mm512_storeu_si512(last, lanes[3]);
    __m128i block = load(last);
    for (int piece = 1; piece < 4; piece++) block = _mm_xor_si128(fold(block, fold_by_128), load(last + 16 * piece));
    return finish(block, bytes, count);
}

int imgfs_crc32_accelerated(void) { return carryless; }

uint32_t imgfs_crc32_update(uint32_t crc, const void *bytes, size_t count) {
    uint32_t state = ~crc;
    if (wide_carryless && count >= 512) return ~wide_update(state, bytes, count);
    if (carryless && count >= 16) return ~narrow_update(state, bytes, count);
    return ~by_bytes(state, bytes, count);
}
