# Header-only modular arithmetic shared by every kernel (cimport ffcode._ext.modp).
# Elements are canonical integers in [0, p) with p < 2**63, so a + b never overflows 64 bits
# and the top bit of a wrapped difference is its sign. Corrections are branch-free masks:
# whether a correction is needed is a coin toss, and a mispredicted branch costs more than
# the arithmetic.
from libc.stdint cimport int64_t, uint32_t, uint64_t

cdef extern from *:
    ctypedef unsigned long long uint128_t "unsigned __int128"
    ctypedef long long int128_t "__int128"

ctypedef fused elem_t:
    uint32_t
    uint64_t


cdef inline uint64_t _plus_p_if_negative(uint64_t x, uint64_t p) noexcept nogil:
    return x + (p & (0 - (x >> 63)))


cdef inline uint64_t addmod(uint64_t a, uint64_t b, uint64_t p) noexcept nogil:
    return _plus_p_if_negative(a + b - p, p)


cdef inline uint64_t submod(uint64_t a, uint64_t b, uint64_t p) noexcept nogil:
    return _plus_p_if_negative(a - b, p)


cdef inline uint64_t mulmod(uint64_t a, uint64_t b, uint64_t p) noexcept nogil:
    return <uint64_t>((<uint128_t>a * b) % p)


cdef inline uint64_t shoup(uint64_t w, uint64_t p) noexcept nogil:
    # floor(w * 2**64 / p): lets w * a mod p be computed with multiplications only.
    return <uint64_t>((<uint128_t>w << 64) // p)


cdef inline uint64_t mulmod_shoup(uint64_t a, uint64_t w, uint64_t wshoup,
                                  uint64_t p) noexcept nogil:
    # w * a mod p for w < p < 2**63 and any a < 2**64; the wrapped difference is in [0, 2p).
    cdef uint64_t q = <uint64_t>((<uint128_t>wshoup * a) >> 64)
    return _plus_p_if_negative(w * a - q * p - p, p)


cdef inline uint64_t reduce_short_quotient(int64_t x, int64_t p, double pinv) noexcept nogil:
    # x mod p when |x / p| < 2**24: the truncated float quotient is then within one unit of
    # the true one, so two branch-free corrections up and one down finish the remainder.
    cdef int64_t r = x - <int64_t>(<double>x * pinv) * p
    r += p & (r >> 63)
    r += p & (r >> 63)
    r -= p & ~((r - p) >> 63)
    return <uint64_t>r


cdef inline uint64_t invmod(uint64_t a, uint64_t p) noexcept nogil:
    # Inverse of a nonzero a < p by the extended Euclidean algorithm (p < 2**63 fits int64).
    cdef int64_t t = 0, newt = 1, q, tmp
    cdef int64_t r = <int64_t>p, newr = <int64_t>a
    while newr != 0:
        q = r // newr
        tmp = t - q * newt
        t = newt
        newt = tmp
        tmp = r - q * newr
        r = newr
        newr = tmp
    return <uint64_t>(t + <int64_t>p if t < 0 else t)


# Lazily reduced 128-bit sums of products (mac128.h): the constants that fold and reduce
# them, and how many products of at most (p - 1)**2 a sum takes between folds. A fold
# leaves at most 2**64 + p - 2 (a fresh sum holds less than p), and the products that
# follow must keep it below 2**128: 4 at p = 2**63 - 25, 64 at 2**61 - 1, more than any
# real count below 2**32.
cdef struct Wide:
    uint64_t p
    uint64_t c          # 2**64 mod p
    uint64_t csh        # shoup(c, p)
    uint64_t onesh      # shoup(1, p)
    double pinv         # 1 / p
    Py_ssize_t fold


cdef inline Wide wide(uint64_t p) noexcept nogil:
    cdef Wide f
    cdef uint128_t room = (<uint128_t>0 - 1 - ((<uint128_t>1) << 64) - (p - 2)) // (
        (<uint128_t>(p - 1)) * (p - 1))
    f.p = p
    f.c = <uint64_t>(((<uint128_t>1) << 64) % p)
    f.csh = shoup(f.c, p)
    f.onesh = shoup(1, p)
    f.pinv = 1.0 / <double>p
    f.fold = <Py_ssize_t>room if room < (<uint128_t>1 << 62) else (<Py_ssize_t>1 << 62)
    return f


cdef inline uint64_t reduce128(uint128_t x, const Wide *f) noexcept nogil:
    # x mod p for any x < 2**128 as hi * (2**64 mod p) + lo: two Shoup products with fixed
    # multipliers.
    return addmod(mulmod_shoup(<uint64_t>(x >> 64), f.c, f.csh, f.p),
                  mulmod_shoup(<uint64_t>x, 1, f.onesh, f.p), f.p)
