/* out = A @ B mod p for 2 <= p < 2**32 with 32 x 32 -> 64-bit integer products (vpmuldq),
 * blocked the way BLIS blocks dgemm: B packed into panels of NR columns, A into panels of MR
 * rows, an MR x NR register tile of 64-bit sums per pass of KC inner terms.
 *
 * Exactness. Elements are centred, x -> x or x - p in [-h, h] for h = floor(p / 2) <= 2**31 - 1,
 * so one product is at most M = h**2 in size, and a group sum s of G = floor((2**63 - 1) / M)
 * products (G >= 2, as 2 (2**31 - 1)**2 < 2**63; 8 at 2**31 - 1) is exact in an int64 lane.
 * Each group sum is then flushed into two unsigned sums per output element: with
 * u = s + 2**63 in [0, 2**64) (the sign bit flipped),
 *     L = sum of u mod 2**64   (a plain wrapping add)
 *     H = sum of floor(u / 2**32) <= N (2**32 - 1)   for N group sums.
 * The exact total U = sum of u is 2**32 H + R with R = sum of (u mod 2**32) < N 2**32, so for
 * N <= 2**32 R is (L - 2**32 H) mod 2**64, and sum of s = 2**32 H + R - N 2**63, reduced mod p
 * once per output element. N is at most k (a group holds at least one product), so k < 2**32
 * is all the bound asks. A flush costs an xor, a shift and two additions per four outputs and
 * no multiply, and leaves nothing behind that later products must make room for.
 */
#ifndef FFCODE_MUL32_H
#define FFCODE_MUL32_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#define MUL32_SIMD 1
#else
#define MUL32_SIMD 0
#endif

#define MUL32_MR 2          /* rows of the register tile */
#define MUL32_NR 8          /* columns: two vectors of four 64-bit lanes */
#define MUL32_TILE (MUL32_MR * MUL32_NR)
#define MUL32_KC 256        /* inner terms per pass: a 16 KB panel of B stays in L1 */
#define MUL32_MC 120        /* rows per block: its A panels (120 KB per pass) stay in L2 */
#define MUL32_NC 128        /* columns per block of sums (with A's block, in L2) */
#define MUL32_ALIGN 64
#define MUL32_HUGE ((size_t)2 << 20)   /* a huge page */

typedef struct {
    uint64_t p, half;       /* canonical x > half is centred to x - p */
    int64_t group;          /* G: products per group sum */
    uint64_t c32, c32sh;    /* 2**32 mod p and its Shoup factor */
    uint64_t onesh;         /* the Shoup factor of 1 */
} mul32_field;

typedef unsigned __int128 mul32_u128;

static inline uint64_t mul32_shoup(uint64_t x, uint64_t w, uint64_t wsh, uint64_t p)
{
    /* w x mod p for any x < 2**64: the wrapped difference is in [0, 2p) (p < 2**63). */
    uint64_t q = (uint64_t)(((mul32_u128)wsh * x) >> 64);
    uint64_t r = w * x - q * p;
    return r >= p ? r - p : r;
}

static void mul32_field_init(mul32_field *f, uint64_t p)
{
    uint64_t h = p / 2;
    f->p = p;
    f->half = (p - 1) / 2;
    f->group = (int64_t)(INT64_MAX / (h * h));             /* h >= 1 as p >= 2 */
    if (f->group > MUL32_KC)                                  /* one group per pass */
        f->group = MUL32_KC;
    f->c32 = ((uint64_t)1 << 32) % p;
    f->c32sh = (uint64_t)(((mul32_u128)f->c32 << 64) / p);
    f->onesh = (uint64_t)(((mul32_u128)1 << 64) / p);
}

/* The element at byte offset off, centred; memcpy keeps any stride legal. */
static inline int64_t mul32_centred(const char *base, ptrdiff_t off, const mul32_field *f)
{
    uint32_t x;
    memcpy(&x, base + off, sizeof x);
    return (int64_t)x - (int64_t)(x > f->half ? f->p : 0);
}

/* Aligned scratch; a large buffer in transparent huge pages where the system has them on
 * request: a packed B of 32 MB otherwise takes longer to fault in than to fill. */
static void *mul32_alloc(size_t bytes)
{
    size_t align = bytes >= MUL32_HUGE ? MUL32_HUGE : MUL32_ALIGN;
    size_t size = (bytes + align - 1) / align * align;
    void *data = aligned_alloc(align, size ? size : align);
#if defined(MADV_HUGEPAGE)
    if (data != NULL && align == MUL32_HUGE)
        madvise(data, size, MADV_HUGEPAGE);         /* advice only: failure changes nothing */
#endif
    return data;
}

/* Bytes of B (k x n) packed: ceil(n / NR) panels of k rows of NR int64 lanes. */
static size_t mul32_packed_b_bytes(ptrdiff_t k, ptrdiff_t n)
{
    return (size_t)((n + MUL32_NR - 1) / MUL32_NR) * (size_t)k * MUL32_NR * sizeof(int64_t);
}

/* Pack B, element (t, j) at byte offset t rs + j cs, centred into 64-bit lanes (the products
 * read their low halves); columns past n are zeros. A few rows at a time go to every panel:
 * one panel's rows at a time would read B a page per row (for n >= 1024). */
#define MUL32_PACK_ROWS 16
static void mul32_pack_b(const char *b, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t k, ptrdiff_t n,
                         const mul32_field *f, int64_t *dst)
{
    const uint32_t p = (uint32_t)f->p, half = (uint32_t)f->half;
    for (ptrdiff_t t0 = 0; t0 < k; t0 += MUL32_PACK_ROWS) {
        ptrdiff_t t1 = k - t0 < MUL32_PACK_ROWS ? k : t0 + MUL32_PACK_ROWS;
        for (ptrdiff_t j0 = 0; j0 < n; j0 += MUL32_NR) {
            ptrdiff_t w = n - j0 < MUL32_NR ? n - j0 : MUL32_NR;
            int64_t *panel = dst + j0 * k;             /* panel j0 / NR: k rows of NR lanes */
            for (ptrdiff_t t = t0; t < t1; t++) {
                const char *row = b + t * rs + j0 * cs;
                uint32_t x[MUL32_NR] = {0};
                if (w == MUL32_NR && cs == sizeof(uint32_t))
                    memcpy(x, row, sizeof x);
                else
                    for (ptrdiff_t j = 0; j < w; j++)
                        memcpy(x + j, row + j * cs, sizeof(uint32_t));
                for (int j = 0; j < MUL32_NR; j++)
                    panel[t * MUL32_NR + j] = (int64_t)x[j] - (int64_t)(x[j] > half ? p : 0);
            }
        }
    }
}

/* Pack rows [0, mc) of A (m x k, strides in bytes), centred: ceil(mc / MR) panels of k
 * columns of MR int32; rows past mc are zeros. */
static void mul32_pack_a(const char *a, ptrdiff_t rs, ptrdiff_t cs, ptrdiff_t mc, ptrdiff_t k,
                         const mul32_field *f, int32_t *dst)
{
    for (ptrdiff_t i0 = 0; i0 < mc; i0 += MUL32_MR) {
        ptrdiff_t h = mc - i0 < MUL32_MR ? mc - i0 : MUL32_MR;
        for (ptrdiff_t t = 0; t < k; t++, dst += MUL32_MR) {
            ptrdiff_t i = 0;
            for (; i < h; i++)
                dst[i] = (int32_t)mul32_centred(a, (i0 + i) * rs + t * cs, f);
            for (; i < MUL32_MR; i++)
                dst[i] = 0;
        }
    }
}

/* The register tile over kc inner terms: a (kc x MR), b (kc x NR), group sums of at most
 * `group` products flushed into the tile's sums lh (L: MR x NR, then H: MR x NR). */
typedef void (*mul32_kernel)(ptrdiff_t kc, int64_t group, const int32_t *a, const int64_t *b,
                             uint64_t *lh);

static void mul32_kernel_portable(ptrdiff_t kc, int64_t group, const int32_t *a,
                                  const int64_t *b, uint64_t *lh)
{
    uint64_t s[MUL32_TILE];     /* unsigned, so that even a wrap would be defined */
    for (ptrdiff_t t = 0; t < kc;) {
        ptrdiff_t stop = kc - t > group ? t + group : kc;
        memset(s, 0, sizeof s);
        for (; t < stop; t++) {
            const int32_t *at = a + MUL32_MR * t;
            const int64_t *bt = b + MUL32_NR * t;
            for (int i = 0; i < MUL32_MR; i++)
                for (int j = 0; j < MUL32_NR; j++)
                    s[i * MUL32_NR + j] += (uint64_t)(at[i] * bt[j]);
        }
        for (int l = 0; l < MUL32_TILE; l++) {
            uint64_t u = s[l] ^ ((uint64_t)1 << 63);
            lh[l] += u;
            lh[MUL32_TILE + l] += u >> 32;
        }
    }
}

#if MUL32_SIMD
/* The tile's four vectors v = 2 i + j (row i, columns 4 j .. 4 j + 3): the group sums s_v
 * and L_v, H_v, all in registers. A vpmuldq takes the issue slots of two FMAs on the AMD
 * cores measured, and every vector instruction past one add per multiply costs time too:
 * a larger tile would keep L and H in memory, and their read-modify-writes at each flush
 * cost more than this tile's extra broadcasts. */
#define MUL32_VECTORS(X) X(0, 0, 0) X(1, 0, 1) X(2, 1, 0) X(3, 1, 1)
#define MUL32_LOAD(v, i, j)                                                                \
    __m256i l##v = _mm256_load_si256((const __m256i *)lh + v),                             \
            h##v = _mm256_load_si256((const __m256i *)lh + 4 + v), s##v;
#define MUL32_FIRST(v, i, j) s##v = _mm256_mul_epi32(x##i, _mm256_load_si256(bv + 2 * t + j));
#define MUL32_NEXT(v, i, j)                                                                \
    s##v = _mm256_add_epi64(s##v, _mm256_mul_epi32(x##i, _mm256_load_si256(bv + 2 * t + j)));
#define MUL32_FLUSH(v, i, j)                                                               \
    {                                                                                      \
        __m256i u = _mm256_xor_si256(s##v, sign);                                          \
        l##v = _mm256_add_epi64(l##v, u);                                                  \
        h##v = _mm256_add_epi64(h##v, _mm256_srli_epi64(u, 32));                           \
    }
#define MUL32_STORE(v, i, j)                                                               \
    _mm256_store_si256((__m256i *)lh + v, l##v);                                           \
    _mm256_store_si256((__m256i *)lh + 4 + v, h##v);

static void mul32_kernel_avx2(ptrdiff_t kc, int64_t group, const int32_t *a, const int64_t *b,
                              uint64_t *lh)
{
    const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
    const __m256i *bv = (const __m256i *)b;
    MUL32_VECTORS(MUL32_LOAD)
    ptrdiff_t t = 0;
    while (t < kc) {
        ptrdiff_t stop = kc - t > group ? t + group : kc;
        __m256i x0 = _mm256_set1_epi32(a[2 * t]), x1 = _mm256_set1_epi32(a[2 * t + 1]);
        MUL32_VECTORS(MUL32_FIRST)
        for (t++; t < stop; t++) {
            x0 = _mm256_set1_epi32(a[2 * t]);
            x1 = _mm256_set1_epi32(a[2 * t + 1]);
            MUL32_VECTORS(MUL32_NEXT)
        }
        MUL32_VECTORS(MUL32_FLUSH)
    }
    MUL32_VECTORS(MUL32_STORE)
}
#endif

/* out (h x w of a tile, strides in bytes) = the tile's sums reduced, in mode 0, 1 or -1;
 * `offset` is p - (N 2**63 mod p) mod p, which takes the N flips of the sign bit back. */
static void mul32_store(const uint64_t *lh, ptrdiff_t h, ptrdiff_t w, char *out, ptrdiff_t rs,
                        ptrdiff_t cs, const mul32_field *f, uint64_t offset, int mode)
{
    uint64_t p = f->p;
    for (ptrdiff_t i = 0; i < h; i++)
        for (ptrdiff_t j = 0; j < w; j++) {
            uint64_t low = lh[i * MUL32_NR + j], high = lh[MUL32_TILE + i * MUL32_NR + j];
            uint64_t rest = low - (high << 32);        /* R, see the top of the file */
            uint64_t v = mul32_shoup(high, f->c32, f->c32sh, p) +
                         mul32_shoup(rest, 1, f->onesh, p) + offset;    /* < 3p < 2**34 */
            v = v >= p ? v - p : v;
            v = v >= p ? v - p : v;
            uint32_t y;
            char *at = out + i * rs + j * cs;
            memcpy(&y, at, sizeof y);
            if (mode == 0)
                y = (uint32_t)v;
            else if (mode > 0)
                y = (uint32_t)(y + v >= p ? y + v - p : y + v);
            else
                y = (uint32_t)(y >= v ? y - v : y + p - v);
            memcpy(at, &y, sizeof y);
        }
}

/* out (m x n) = A (m x k) @ B, or out +/- A @ B (mode 1 / -1), for B packed by mul32_pack_b
 * with the same field; strides in bytes, every element canonical, k < 2**32. Uses only its
 * own scratch, so calls on disjoint rows of out may run at once. Returns -1 if out of memory. */
static int mul32_rows(const char *a, ptrdiff_t ars, ptrdiff_t acs, ptrdiff_t m, ptrdiff_t k,
                      const int64_t *bpack, ptrdiff_t n, char *out, ptrdiff_t ors,
                      ptrdiff_t ocs, const mul32_field *f, int mode, int portable)
{
    mul32_kernel kernel = mul32_kernel_portable;
#if MUL32_SIMD
    if (!portable)
        kernel = mul32_kernel_avx2;
#endif
    if (m == 0 || n == 0)
        return 0;
    ptrdiff_t mc_max = m < MUL32_MC ? m : MUL32_MC, nc_max = n < MUL32_NC ? n : MUL32_NC;
    ptrdiff_t ipanels_max = (mc_max + MUL32_MR - 1) / MUL32_MR;
    ptrdiff_t jpanels_max = (nc_max + MUL32_NR - 1) / MUL32_NR;
    size_t lh_bytes = (size_t)ipanels_max * jpanels_max * 2 * MUL32_TILE * sizeof(uint64_t);
    int32_t *apack = mul32_alloc((size_t)ipanels_max * MUL32_MR * k * sizeof(int32_t));
    uint64_t *lh = mul32_alloc(lh_bytes);
    if (apack == NULL || lh == NULL) {
        free(apack);
        free(lh);
        return -1;
    }
    uint64_t groups = 0;                                    /* N of every output element */
    for (ptrdiff_t pc = 0; pc < k; pc += MUL32_KC) {
        ptrdiff_t kc = k - pc < MUL32_KC ? k - pc : MUL32_KC;
        groups += (uint64_t)((kc + f->group - 1) / f->group);
    }
    uint64_t flips = (uint64_t)((mul32_u128)(groups % f->p) * (((uint64_t)1 << 63) % f->p) % f->p);
    uint64_t offset = flips ? f->p - flips : 0;

    for (ptrdiff_t ic = 0; ic < m; ic += MUL32_MC) {
        ptrdiff_t mc = m - ic < MUL32_MC ? m - ic : MUL32_MC;
        ptrdiff_t ipanels = (mc + MUL32_MR - 1) / MUL32_MR;
        mul32_pack_a(a + ic * ars, ars, acs, mc, k, f, apack);
        for (ptrdiff_t jc = 0; jc < n; jc += MUL32_NC) {
            ptrdiff_t nc = n - jc < MUL32_NC ? n - jc : MUL32_NC;
            ptrdiff_t jpanels = (nc + MUL32_NR - 1) / MUL32_NR;
            memset(lh, 0, (size_t)ipanels * jpanels * 2 * MUL32_TILE * sizeof(uint64_t));
            for (ptrdiff_t pc = 0; pc < k; pc += MUL32_KC) {
                ptrdiff_t kc = k - pc < MUL32_KC ? k - pc : MUL32_KC;
                for (ptrdiff_t jr = 0; jr < jpanels; jr++) {
                    const int64_t *bp = bpack + ((jc / MUL32_NR + jr) * k + pc) * MUL32_NR;
                    for (ptrdiff_t ir = 0; ir < ipanels; ir++)
                        kernel(kc, f->group, apack + (ir * k + pc) * MUL32_MR, bp,
                               lh + (jr * ipanels + ir) * 2 * MUL32_TILE);
                }
            }
            for (ptrdiff_t jr = 0; jr < jpanels; jr++)
                for (ptrdiff_t ir = 0; ir < ipanels; ir++) {
                    ptrdiff_t i0 = ir * MUL32_MR, j0 = jr * MUL32_NR;
                    ptrdiff_t h = mc - i0 < MUL32_MR ? mc - i0 : MUL32_MR;
                    ptrdiff_t w = nc - j0 < MUL32_NR ? nc - j0 : MUL32_NR;
                    mul32_store(lh + (jr * ipanels + ir) * 2 * MUL32_TILE, h, w,
                                out + (ic + i0) * ors + (jc + j0) * ocs, ors, ocs, f, offset,
                                mode);
                }
        }
    }
    free(apack);
    free(lh);
    return 0;
}

#endif
