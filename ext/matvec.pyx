# Products with few columns, out = A @ B for B (k, n) with small n (n = 1 is the matrix-vector
# product), as m * n dot products of A's rows with B's columns: every element of A is read
# once per column, every product is added to a wide sum, and a sum is reduced only when it
# would otherwise overflow. The float64 limb route (limbs.pyx and dgemm) spends its time
# there converting A, which a product with few columns cannot amortise.
#
# Below 2**31 the products of two canonical elements are below 2**62: sixteen 64-bit lanes
# per dot product (four AVX2 registers of vpmuludq products, or plain multiplies). From
# 2**31 (uint32 or uint64 elements) they are 64 x 64 -> 128-bit products in 128-bit sums,
# four lanes per dot product (x86-64 has no vector multiply that wide).
# Single-threaded, like every kernel here: the caller owns the cores.
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc

from ffcode._ext.modp cimport addmod, elem_t, mulmod_shoup, shoup, submod, uint128_t

# The dot products in plain C, as fixed-width lane loops the compiler keeps in registers
# (Cython's translation of the same loops spills the lanes to memory), with AVX2 products
# below 2**31 where the build has AVX2 and the same lanes in portable C otherwise.
cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    #if defined(__AVX2__)
    #include <immintrin.h>
    #endif

    typedef unsigned __int128 matvec_u128;
    typedef struct {
        uint64_t p;
        ptrdiff_t fold;     /* lane terms that may follow a fold before the next one */
        uint64_t c, csh;    /* 2**64 mod p and its Shoup factor */
        uint64_t onesh;     /* the Shoup factor of 1 */
        uint64_t c62;       /* 2**62 mod p, for the 64-bit lanes below 2**31 */
        int mersenne;       /* p = 2**61 - 1 */
    } matvec_field;

    #define MATVEC_LANES64 16   /* four AVX2 registers of 64-bit sums */
    #define MATVEC_LANES128 4   /* 64 x 64-bit multiplies in flight */
    #define MATVEC_M61 ((((uint64_t)1) << 61) - 1)
    #define MATVEC_LOW62 ((((uint64_t)1) << 62) - 1)

    /* x mod p up to a small multiple: below 2**61 + 2**67 at 2**61 - 1 (2**61 h + l is
     * l + h mod p), otherwise below 2**64 + p (l + (h 2**64 mod p) for 2**64 h + l, the
     * latter a Shoup product whose wrapped difference is in [0, 2p), as in modp.pxd). */
    static inline matvec_u128 matvec_fold128(matvec_u128 x, const matvec_field *f)
    {
        if (f->mersenne)
            return (x & MATVEC_M61) + (x >> 61);
        uint64_t hi = (uint64_t)(x >> 64);
        uint64_t q = (uint64_t)(((matvec_u128)f->csh * hi) >> 64);
        uint64_t r = f->c * hi - q * f->p;
        r = r >= f->p ? r - f->p : r;
        return (matvec_u128)(uint64_t)x + r;
    }

    /* 2**62 h + l as l + h (2**62 mod p) < 2**62 + 3 p, for h < 4 and p < 2**31. */
    static inline uint64_t matvec_fold64(uint64_t x, uint64_t c62)
    {
        return (x & MATVEC_LOW62) + (x >> 62) * c62;
    }

    /* sum a[t] b[t] mod p up to a multiple, below 2**70, for t < n. The body goes in LANES
     * lanes, each folded after f->fold of its terms; the tail (fewer than LANES terms) and the
     * folded lanes are added up in 128 bits. */
    #define MATVEC_DOT(name, elem, acc_t, LANES, FOLD)                                     \\
        static matvec_u128 name(const elem *a, const elem *b, ptrdiff_t n,                 \\
                                const matvec_field *f)                                     \\
        {                                                                                  \\
            acc_t s[LANES] = {0};                                                          \\
            ptrdiff_t t = 0, body = n - n % LANES, step = LANES * f->fold;                 \\
            while (t < body) {                                                             \\
                ptrdiff_t stop = body - t < step ? body : t + step;                        \\
                for (; t < stop; t += LANES)                                               \\
                    for (int l = 0; l < LANES; l++)                                        \\
                        s[l] += (acc_t)a[t + l] * b[t + l];                                \\
                for (int l = 0; l < LANES; l++)                                            \\
                    s[l] = FOLD(s[l]);                                                     \\
            }                                                                              \\
            matvec_u128 total = 0;                                                         \\
            for (int l = 0; l < LANES; l++)                                                \\
                total += s[l];                                                             \\
            for (; t < n; t++)                                                             \\
                total += (matvec_u128)a[t] * b[t];                                         \\
            return total;                                                                  \\
        }

    #define MATVEC_FOLD128(x) matvec_fold128((x), f)
    #define MATVEC_FOLD64(x) matvec_fold64((x), f->c62)
    MATVEC_DOT(matvec_dot128_u32, uint32_t, matvec_u128, MATVEC_LANES128, MATVEC_FOLD128)
    MATVEC_DOT(matvec_dot128_u64, uint64_t, matvec_u128, MATVEC_LANES128, MATVEC_FOLD128)

    #if defined(__AVX2__)
    /* The same with the 32 x 32 -> 64-bit products of vpmuludq, which compilers do not find on
     * their own: even elements from each 64-bit lane's low half, odd ones shifted down. */
    static inline __m256i matvec_fold64x4(__m256i x, __m256i low62, __m256i c62)
    {
        return _mm256_add_epi64(_mm256_and_si256(x, low62),
                                _mm256_mul_epu32(_mm256_srli_epi64(x, 62), c62));
    }

    static matvec_u128 matvec_dot64(const uint32_t *a, const uint32_t *b, ptrdiff_t n,
                                    const matvec_field *f)
    {
        const __m256i low62 = _mm256_set1_epi64x((long long)MATVEC_LOW62);
        const __m256i c62 = _mm256_set1_epi64x((long long)f->c62);
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256(), _mm256_setzero_si256()};
        ptrdiff_t t = 0, body = n - n % MATVEC_LANES64, step = MATVEC_LANES64 * f->fold;
        while (t < body) {
            ptrdiff_t stop = body - t < step ? body : t + step;
            for (; t < stop; t += MATVEC_LANES64) {
                for (int h = 0; h < 2; h++) {
                    __m256i x = _mm256_loadu_si256((const __m256i *)(a + t + 8 * h));
                    __m256i y = _mm256_loadu_si256((const __m256i *)(b + t + 8 * h));
                    s[2 * h] = _mm256_add_epi64(s[2 * h], _mm256_mul_epu32(x, y));
                    s[2 * h + 1] = _mm256_add_epi64(s[2 * h + 1], _mm256_mul_epu32(
                        _mm256_srli_epi64(x, 32), _mm256_srli_epi64(y, 32)));
                }
            }
            for (int v = 0; v < 4; v++)
                s[v] = matvec_fold64x4(s[v], low62, c62);
        }
        /* folded lanes are below 2**62 + 3 p < 2**63: two of them add up without overflow */
        uint64_t lanes[8];
        _mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(s[0], s[1]));
        _mm256_storeu_si256((__m256i *)(lanes + 4), _mm256_add_epi64(s[2], s[3]));
        matvec_u128 total = 0;
        for (int l = 0; l < 8; l++)
            total += lanes[l];
        for (; t < n; t++)
            total += (uint64_t)a[t] * b[t];
        return total;
    }
    #else
    MATVEC_DOT(matvec_dot64, uint32_t, uint64_t, MATVEC_LANES64, MATVEC_FOLD64)
    #endif
    """
    ctypedef struct Field "matvec_field":
        uint64_t p
        Py_ssize_t fold
        uint64_t c, csh, onesh, c62
        bint mersenne
    uint128_t _dot64 "matvec_dot64"(const uint32_t *a, const uint32_t *b, Py_ssize_t n,
                                    const Field *f) nogil
    uint128_t _dot128_u32 "matvec_dot128_u32"(const uint32_t *a, const uint32_t *b,
                                              Py_ssize_t n, const Field *f) nogil
    uint128_t _dot128_u64 "matvec_dot128_u64"(const uint64_t *a, const uint64_t *b,
                                              Py_ssize_t n, const Field *f) nogil
    enum: MATVEC_LANES64, MATVEC_LANES128

cdef extern from *:
    """
    /* Whether any of a[0..n) is >= p: a branch-free OR the compiler vectorises. */
    #define MATVEC_ANY_AT_LEAST(name, elem)                                                \
        static int name(const elem *a, ptrdiff_t n, uint64_t p)                            \
        {                                                                                  \
            const elem q = (elem)p;     /* p fits the elements' width: a compare as wide */ \
            elem bad = 0;                                                                  \
            for (ptrdiff_t t = 0; t < n; t++)                                              \
                bad |= (elem)(a[t] >= q);                                                  \
            return bad != 0;                                                               \
        }
    MATVEC_ANY_AT_LEAST(matvec_any_at_least_u32, uint32_t)
    MATVEC_ANY_AT_LEAST(matvec_any_at_least_u64, uint64_t)
    """
    bint _any_at_least_u32 "matvec_any_at_least_u32"(const uint32_t *a, Py_ssize_t n,
                                                     uint64_t p) nogil
    bint _any_at_least_u64 "matvec_any_at_least_u64"(const uint64_t *a, Py_ssize_t n,
                                                     uint64_t p) nogil

DEF CHUNK = 2048        # inner terms per pass: a CHUNK slab of B's columns stays in cache
DEF ROW_BLOCK = 64      # rows per pass over that slab (B is read once per ROW_BLOCK rows)
DEF SLAB = CHUNK + 16   # the columns of a copied slab of B, padded apart: 2**k-spaced ones
                        # would contend for the same few cache sets
DEF MERSENNE61 = 2305843009213693951     # 2**61 - 1
DEF LOW62 = 4611686018427387903          # 2**62 - 1
DEF FOLD_CAP = 2**40    # no real k needs more lane terms between folds (and no step overflows)


cdef inline uint64_t _reduce128(uint128_t x, const Field *f) noexcept nogil:
    # x mod p for any x < 2**128: h 2**64 + l as two Shoup products with fixed factors.
    return addmod(mulmod_shoup(<uint64_t>(x >> 64), f.c, f.csh, f.p),
                  mulmod_shoup(<uint64_t>x, 1, f.onesh, f.p), f.p)


cdef Field _field(uint64_t p) noexcept:
    """The constants of p, and the fold count: a fold leaves a lane below `after`, and the
    `fold` products of at most (p - 1)**2 that may follow must keep it below the lane's
    2**64 (p < 2**31) or 2**128. That is 3 products at 2**31 - 1, 4 at 2**63 - 25, 16 at
    2**62 - 57, 64 at 2**61 - 1, and beyond any k for p < 2**32 from 2**31 (and small p)."""
    cdef Field f
    cdef uint128_t square = (<uint128_t>(p - 1)) * (p - 1), after, room
    f.p = p
    f.mersenne = p == MERSENNE61
    f.onesh = shoup(1, p)
    f.c = <uint64_t>(((<uint128_t>1) << 64) % p)
    f.csh = shoup(f.c, p)
    f.c62 = <uint64_t>(((<uint64_t>1) << 62) % p)
    if p < 2**31:
        after = LOW62 + 3 * f.c62
        room = <uint64_t>0 - 1 - <uint64_t>after
    else:
        after = MERSENNE61 + (((<uint128_t>1) << 67) - 1) if f.mersenne \
            else ((<uint128_t>1) << 64) + p - 2
        room = <uint128_t>0 - 1 - after
    f.fold = <Py_ssize_t>min(room // square, <uint128_t>FOLD_CAP)     # square >= 1: p >= 2
    return f


def folding(uint64_t p):
    """(lanes, fold) for p: each dot product runs in `lanes` lanes (inner term t in lane
    t mod lanes), and a lane takes `fold` terms between two folds (see _field)."""
    if not 2 <= p < 2**63:
        raise ValueError(f"folding: p = {p} is out of range")
    return (MATVEC_LANES64 if p < 2**31 else MATVEC_LANES128), _field(p).fold


def dot_rows(const elem_t[:, :] A, const elem_t[:, :] B, elem_t[:, :] out, uint64_t p,
             int mode, bint check_a=False):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1) mod p for A (m, k),
    B (k, n) and out (m, n) with any strides, all of one dtype (uint32 for p < 2**32 or
    uint64), every element canonical, 2 <= p < 2**63. Returns True; with check_a, False if
    an element of A is >= p (out is then meaningless): each slab of a row is checked while
    it is in cache, which saves the caller a pass over A.

    A row of A or a column of B that is not contiguous is copied a slab at a time (B's slab
    once per ROW_BLOCK rows), so that every dot product runs on contiguous memory.
    """
    cdef Py_ssize_t m = A.shape[0], k = A.shape[1], n = B.shape[1]
    cdef Py_ssize_t i0, i1, i, j, t, c0, width
    cdef bint copy_a = A.strides[1] != sizeof(elem_t), copy_b = B.strides[0] != sizeof(elem_t)
    cdef bint lanes64 = p < 2**31
    cdef uint128_t *acc
    cdef uint128_t sum
    cdef elem_t *a_slab
    cdef elem_t *b_slab
    cdef const elem_t *row
    cdef const elem_t *column
    cdef uint64_t r
    cdef Field f
    cdef bint bad = False
    if elem_t is uint32_t:
        fits = p < 2**32
    else:
        fits = True
    if not 2 <= p < 2**63 or not fits or B.shape[0] != k or out.shape[0] != m \
            or out.shape[1] != n or mode not in (-1, 0, 1):
        raise ValueError("dot_rows: operands do not fit together")
    if m == 0 or n == 0:
        return not check_a or m == 0 or k == 0 or not _any_at_least(A, p)
    f = _field(p)
    acc = <uint128_t *>malloc(ROW_BLOCK * n * sizeof(uint128_t))
    a_slab = <elem_t *>malloc(CHUNK * sizeof(elem_t))
    b_slab = <elem_t *>malloc(n * SLAB * sizeof(elem_t))
    try:
        if acc == NULL or a_slab == NULL or b_slab == NULL:
            raise MemoryError()
        with nogil:
            for i0 in range(0, m, ROW_BLOCK):
                i1 = min(i0 + ROW_BLOCK, m)
                for i in range((i1 - i0) * n):
                    acc[i] = 0
                # Sums of different slabs add up without folding: each is below 2**70 (four
                # lanes below 2**68), and k < 2**63 terms make fewer than 2**53 slabs.
                for c0 in range(0, k, CHUNK):
                    width = min(CHUNK, k - c0)
                    if copy_b:
                        for t in range(width):
                            for j in range(n):
                                b_slab[j * SLAB + t] = B[c0 + t, j]
                    for i in range(i0, i1):
                        row = &A[i, c0]
                        if copy_a:
                            for t in range(width):
                                a_slab[t] = A[i, c0 + t]
                            row = a_slab
                        for j in range(n):
                            column = b_slab + j * SLAB if copy_b else &B[c0, j]
                            if elem_t is uint64_t:
                                sum = _dot128_u64(row, column, width, &f)
                            elif lanes64:
                                sum = _dot64(row, column, width, &f)
                            else:
                                sum = _dot128_u32(row, column, width, &f)
                            acc[(i - i0) * n + j] += sum
                        if check_a:             # the slab is in cache now
                            if elem_t is uint64_t:
                                bad |= _any_at_least_u64(row, width, p)
                            else:
                                bad |= _any_at_least_u32(row, width, p)
                for i in range(i0, i1):
                    for j in range(n):
                        r = _reduce128(acc[(i - i0) * n + j], &f)
                        if mode == 0:
                            out[i, j] = <elem_t>r
                        elif mode > 0:
                            out[i, j] = <elem_t>addmod(out[i, j], r, p)
                        else:
                            out[i, j] = <elem_t>submod(out[i, j], r, p)
    finally:
        free(acc)
        free(a_slab)
        free(b_slab)
    return not bad


cdef bint _any_at_least(const elem_t[:, :] A, uint64_t p) noexcept:
    """Whether an element of A is >= p (for a product with no columns, which reads none)."""
    cdef Py_ssize_t i, t
    for i in range(A.shape[0]):
        for t in range(A.shape[1]):
            if A[i, t] >= p:
                return True
    return False
