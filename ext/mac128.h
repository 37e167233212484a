/* acc[j] += w * y[j] into 128-bit sums, for y of 32- or 64-bit elements and w < 2**64,
 * and the fold that brings such sums back below 2**64 + p.
 *
 * No AVX2 here: it has no 64 x 64-bit multiply, and emulating one from 32 x 32-bit lanes
 * (four vpmuludq and the carries for four terms) costs about as many instructions per term
 * as the scalar mulx with an add-with-carry.
 *
 * One 64 x 64 -> 128-bit multiply and an add with carry per element. Kept out of line:
 * inlined into the loop nest around it, the compiler runs short of registers and keeps the
 * row pointer in memory, which costs more than the arithmetic. Unrolled by four, which
 * keeps more multiplies in flight (a fifth less time per term in cache).
 */
#ifndef FFCODE_MAC128_H
#define FFCODE_MAC128_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FFCODE_NOINLINE __attribute__((noinline))
#else
#define FFCODE_NOINLINE
#endif

typedef unsigned __int128 ffcode_u128;

#define FFCODE_MAC128(name, elem)                                                          \
    static FFCODE_NOINLINE void name(ffcode_u128 *acc, const elem *y, ptrdiff_t n,         \
                                     uint64_t w)                                           \
    {                                                                                      \
        ptrdiff_t j = 0;                                                                   \
        for (; j + 4 <= n; j += 4) {                                                       \
            acc[j] += (ffcode_u128)w * y[j];                                               \
            acc[j + 1] += (ffcode_u128)w * y[j + 1];                                       \
            acc[j + 2] += (ffcode_u128)w * y[j + 2];                                       \
            acc[j + 3] += (ffcode_u128)w * y[j + 3];                                       \
        }                                                                                  \
        for (; j < n; j++)                                                                 \
            acc[j] += (ffcode_u128)w * y[j];                                               \
    }

FFCODE_MAC128(mac128_u32, uint32_t)
FFCODE_MAC128(mac128_u64, uint64_t)

/* acc[j] = lo + (hi * 2**64 mod p) < 2**64 + p for acc[j] = hi * 2**64 + lo, p < 2**63:
 * Shoup's product hi * c for c = 2**64 mod p, csh = floor(c * 2**64 / p), whose wrapped
 * difference is in [0, 2p) and corrected once (the same as modp.pxd's mulmod_shoup). */
static FFCODE_NOINLINE void fold128(ffcode_u128 *acc, ptrdiff_t n, uint64_t c, uint64_t csh,
                                    uint64_t p)
{
    for (ptrdiff_t j = 0; j < n; j++) {
        uint64_t hi = (uint64_t)(acc[j] >> 64);
        uint64_t q = (uint64_t)(((ffcode_u128)csh * hi) >> 64);
        uint64_t r = c * hi - q * p;
        r = r >= p ? r - p : r;
        acc[j] = (ffcode_u128)(uint64_t)acc[j] + r;
    }
}

#endif
