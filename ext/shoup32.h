/* acc[j] = (acc[j] + w * y[j]) mod p for p < 2**31, w < p, canonical acc and y.
 *
 * Shoup's product with a 32-bit quotient: q = floor(wsh * y / 2**32) for
 * wsh = floor(w * 2**32 / p) leaves w * y - q * p in [0, 2p), which fits 32 bits because
 * p < 2**31, and unsigned min(r, r - p) reduces it without a branch. With AVX2 the 32x32
 * high products take two vpmuludq per 8 lanes (even and odd lanes), which compilers do not
 * find on their own; everything else is plain 32-bit lane arithmetic.
 */
#ifndef FFCODE_SHOUP32_H
#define FFCODE_SHOUP32_H

#include <stddef.h>
#include <stdint.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

static inline uint32_t shoup32_scalar(uint32_t acc, uint32_t y, uint32_t w, uint32_t wsh,
                                      uint32_t p)
{
    uint32_t q = (uint32_t)(((uint64_t)wsh * y) >> 32);
    uint32_t r = w * y - q * p;
    r = r < r - p ? r : r - p;
    uint32_t s = acc + r;
    return s < s - p ? s : s - p;
}

#if defined(__AVX2__)
/* acc + w x mod p in 8 lanes, canonical acc and x (wsh = shoup32's constant of w). */
static inline __m256i shoup32_lanes(__m256i acc, __m256i x, __m256i vw, __m256i vwsh,
                                    __m256i vp)
{
    __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(x, vwsh), 32);
    __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), vwsh);
    __m256i q = _mm256_blend_epi32(even, odd, 0xAA);
    __m256i r = _mm256_sub_epi32(_mm256_mullo_epi32(x, vw), _mm256_mullo_epi32(q, vp));
    r = _mm256_min_epu32(r, _mm256_sub_epi32(r, vp));
    __m256i s = _mm256_add_epi32(acc, r);
    return _mm256_min_epu32(s, _mm256_sub_epi32(s, vp));
}
#endif

/* wsh = floor(w * 2**32 / p) without a division, for pinv = 1.0 / p: the float quotient
 * of w * 2**32 < 2**63 is within 2**-19 of the true one, so its truncation is off by at most
 * one either way, which the remainder's sign and size tell. */
static inline uint32_t shoup32_constant(uint32_t w, uint32_t p, double pinv)
{
    uint64_t num = (uint64_t)w << 32;
    uint64_t q = (uint64_t)((double)num * pinv);
    int64_t r = (int64_t)(num - q * p);
    q -= r < 0;
    r += r < 0 ? (int64_t)p : 0;
    q += r >= (int64_t)p;
    return (uint32_t)q;
}

/* acc += w y mod p with wsh = floor(w * 2**32 / p) given. */
static inline void shoup32_axpy_with(uint32_t *acc, const uint32_t *y, ptrdiff_t n,
                                     uint32_t w, uint32_t wsh, uint32_t p)
{
    ptrdiff_t j = 0;
#if defined(__AVX2__)
    const __m256i vw = _mm256_set1_epi32((int)w), vwsh = _mm256_set1_epi32((int)wsh);
    const __m256i vp = _mm256_set1_epi32((int)p);
    for (; j + 8 <= n; j += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(y + j));
        __m256i s = shoup32_lanes(_mm256_loadu_si256((const __m256i *)(acc + j)), x, vw, vwsh, vp);
        _mm256_storeu_si256((__m256i *)(acc + j), s);
    }
    if (j < n) {    /* the last 1..7 lanes, masked: a short row costs one more step, not 7 */
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256i x = _mm256_maskload_epi32((const int *)(y + j), mask);
        __m256i a = _mm256_maskload_epi32((const int *)(acc + j), mask);
        _mm256_maskstore_epi32((int *)(acc + j), mask, shoup32_lanes(a, x, vw, vwsh, vp));
    }
#else
    for (; j < n; j++)
        acc[j] = shoup32_scalar(acc[j], y[j], w, wsh, p);
#endif
}

/* acc += w y mod p, wsh by one division. */
static inline void shoup32_axpy(uint32_t *acc, const uint32_t *y, ptrdiff_t n, uint32_t w,
                                uint32_t p)
{
    shoup32_axpy_with(acc, y, n, w, (uint32_t)(((uint64_t)w << 32) / p), p);
}

#endif
