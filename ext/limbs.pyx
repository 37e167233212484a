# Kernels of the exact float64 route to GF(p) matrix products (DESIGN.md §5): split canonical
# elements into signed limbs held as float64 for dgemm, and fold exact float64 products back
# into canonical elements.
#
# Below 2**32 (uint32 elements) everything stays in float64, where it vectorises: limbs are
# cut with rint, and products are folded by Horner over the diagonals of the limb product.
# Above, limbs are cut with 64-bit integers and the products' weighted sum is folded from
# 128 bits.
# Single-threaded on purpose: BLAS owns the cores, and threads of another runtime spinning
# beside it slow every dgemm that follows.
from libc.math cimport floor, fma, rint
from libc.stdint cimport int64_t, uint32_t, uint64_t

from ffcode._ext.modp cimport (addmod, elem_t, int128_t, mulmod_shoup, reduce_short_quotient, shoup,
                               submod)

cdef enum:
    MAX_LIMBS = 8
    MAX_PRODUCTS = 64


cdef inline double _fold(double x, double p, double pinv) noexcept nogil:
    # x mod p for an integer-valued |x| < 2**53 and p < 2**32: the floored quotient is off
    # by at most one, and the fused multiply-add gives the remainder exactly.
    cdef double r = fma(-floor(x * pinv), p, x)
    r = r + p if r < 0 else r
    return r - p if r >= p else r


cdef void _split_row(const elem_t[:] a, double[:, :, ::1] out, Py_ssize_t i, int nlimbs,
                     const Py_ssize_t[:, ::1] pairs, uint64_t p, int bits) noexcept nogil:
    cdef Py_ssize_t j, q, n = a.shape[0], last = nlimbs - 1
    cdef int l
    cdef uint64_t half_p = p // 2
    cdef double pd = <double>p, scale, unscale, d
    cdef int64_t c, di, half, mask
    cdef const elem_t *row = &a[0] if n and a.strides[0] == sizeof(elem_t) else NULL
    if elem_t is uint32_t:
        # The centred value starts in the last limb's row and sheds one limb per pass.
        if row != NULL:         # contiguous: a loop that vectorises
            for j in range(n):
                out[last, i, j] = <double>row[j] - (pd if row[j] > half_p else 0.0)
        else:
            for j in range(n):
                out[last, i, j] = <double>a[j] - (pd if a[j] > half_p else 0.0)
        if nlimbs > 1:
            scale = <double>((<int64_t>1) << bits)
            unscale = 1.0 / scale
            for l in range(last):
                for j in range(n):
                    d = out[last, i, j] - scale * rint(out[last, i, j] * unscale)
                    out[l, i, j] = d
                    out[last, i, j] = (out[last, i, j] - d) * unscale
    else:
        half = (<int64_t>1) << (bits - 1) if nlimbs > 1 else 0
        mask = ((<int64_t>1) << bits) - 1 if nlimbs > 1 else 0
        for j in range(n):
            c = <int64_t>a[j]
            if <uint64_t>c > half_p:
                c = c - <int64_t>p
            for l in range(last):
                di = ((c + half) & mask) - half
                out[l, i, j] = <double>di
                c = (c - di) >> bits
            out[last, i, j] = <double>c
    for q in range(pairs.shape[0]):
        for j in range(n):
            out[nlimbs + q, i, j] = out[pairs[q, 0], i, j] + out[pairs[q, 1], i, j]


def split_limbs(const elem_t[:, :] a, double[:, :, ::1] out, int nlimbs,
                const Py_ssize_t[:, ::1] pairs, uint64_t p, int bits):
    """Write the centred value of a as float64 limbs, then the requested sums of two limbs.

    The centred value (a, or a - p above p // 2) is written in base 2**bits with digits of
    magnitude at most 2**(bits-1); the last digit takes what is left (with one limb, bits is
    ignored). out[l] is limb l for l < nlimbs, out[nlimbs + q] is limb pairs[q, 0] plus limb
    pairs[q, 1].
    """
    cdef Py_ssize_t i
    if not 1 <= nlimbs <= MAX_LIMBS:
        raise ValueError("between 1 and %d limbs are supported" % MAX_LIMBS)
    if nlimbs > 1 and not 1 <= bits <= 62:
        raise ValueError("limbs must have between 1 and 62 bits")
    if out.shape[0] != nlimbs + pairs.shape[0] or out.shape[1] != a.shape[0] or \
            out.shape[2] != a.shape[1]:
        raise ValueError("output does not fit the limbs")
    with nogil:
        for i in range(a.shape[0]):
            _split_row(a[i], out, i, nlimbs, pairs, p, bits)


cdef void _horner_row(double[:, :, ::1] prods, const int64_t[:, ::1] diagonals, double scale,
                      uint32_t[:] out, Py_ssize_t i, double p, int mode,
                      double[::1] acc) noexcept nogil:
    # Fold each product mod p in place, then value = sum_s scale**s sum_t D[s, t] P_t by
    # Horner: every intermediate stays below p * scale + 8 p < 2**53.
    cdef Py_ssize_t j, t, s, n = out.shape[0]
    cdef double pinv = 1.0 / p, c
    if prods.shape[0] == 1 and diagonals.shape[0] == 1 and diagonals[0, 0] == 1:
        for j in range(n):      # the plain product: one fold per element, one pass
            c = _fold(prods[0, i, j], p, pinv)
            if mode != 0:
                c = _fold(<double>out[j] + mode * c, p, pinv)
            out[j] = <uint32_t><int64_t>c
        return
    for t in range(prods.shape[0]):
        for j in range(n):
            prods[t, i, j] = _fold(prods[t, i, j], p, pinv)
    for j in range(n):
        acc[j] = 0.0
    for s in range(diagonals.shape[0] - 1, -1, -1):
        for j in range(n):
            acc[j] = acc[j] * scale
        for t in range(prods.shape[0]):
            c = <double>diagonals[s, t]
            if c != 0:
                for j in range(n):
                    acc[j] = acc[j] + c * prods[t, i, j]
        for j in range(n):
            acc[j] = _fold(acc[j], p, pinv)
    if mode != 0:
        for j in range(n):
            acc[j] = _fold(<double>out[j] + mode * acc[j], p, pinv)
    for j in range(n):
        out[j] = <uint32_t><int64_t>acc[j]


cdef void _weighted_row(const double[:, :, ::1] prods, const uint64_t[::1] weights,
                        uint64_t wrap, uint64_t wrap_shoup, uint64_t one_shoup,
                        elem_t[:] out, Py_ssize_t i, uint64_t p, int mode) noexcept nogil:
    # For p >= 2**32: h = sum_t w_t P_t exactly in 128 bits (|h| < 64 * 2**63 * 2**53), then
    # h = hi 2**64 + lo is folded as hi (2**64 mod p) + lo with one short division and two
    # Shoup products, instead of folding every product on its own.
    cdef Py_ssize_t j, t
    cdef int128_t h
    cdef uint64_t acc
    cdef double pinv = 1.0 / <double>p
    for j in range(out.shape[0]):
        h = 0
        for t in range(prods.shape[0]):
            h = h + <int128_t><int64_t>weights[t] * <int128_t><int64_t>prods[t, i, j]
        acc = addmod(
            mulmod_shoup(reduce_short_quotient(<int64_t>(h >> 64), <int64_t>p, pinv),
                         wrap, wrap_shoup, p),
            mulmod_shoup(<uint64_t>h, 1, one_shoup, p), p)
        if mode == 1:
            acc = addmod(<uint64_t>out[j], acc, p)
        elif mode == -1:
            acc = submod(<uint64_t>out[j], acc, p)
        out[j] = <elem_t>acc


def combine_products(double[:, :, ::1] prods, const int64_t[:, ::1] diagonals, int bits,
                     elem_t[:, :] out, uint64_t p, int mode):
    """Fold exact integer products |prods| < 2**53 into out, mod p:

        value = sum_s 2**(bits s) sum_t diagonals[s, t] prods[t]

    and out = value (mode 0), out + value (mode 1) or out - value (mode -1). prods is used
    as scratch. Diagonal coefficients must be small (sum_t |D[s, t]| <= 8).
    """
    cdef Py_ssize_t i
    cdef uint64_t wrap, wrap_shoup, one_shoup
    cdef uint64_t[::1] weights
    cdef double[::1] acc
    if prods.shape[0] > MAX_PRODUCTS:   # keeps the 128-bit weighted sum below 2**122
        raise ValueError("at most %d products are supported" % MAX_PRODUCTS)
    if diagonals.shape[1] != prods.shape[0] or prods.shape[1] != out.shape[0] or \
            prods.shape[2] != out.shape[1]:
        raise ValueError("products, diagonals and output do not fit together")
    if mode not in (-1, 0, 1):
        raise ValueError("mode must be -1, 0 or 1")
    if elem_t is uint32_t:
        if p >= 2**32 or not 0 <= bits <= 20:
            raise ValueError("32-bit elements need p < 2**32 and diagonals at most 2**20 apart")
        import numpy as np
        acc = np.empty(out.shape[1])
        with nogil:
            for i in range(out.shape[0]):
                _horner_row(prods, diagonals, <double>((<int64_t>1) << bits), out[i], i,
                            <double>p, mode, acc)
    else:
        if p < 2**32:
            raise ValueError("64-bit elements are for p >= 2**32")
        weights = _weights(diagonals, bits, p)
        wrap = pow(2, 64, p)
        wrap_shoup, one_shoup = shoup(wrap, p), shoup(1, p)
        with nogil:
            for i in range(out.shape[0]):
                _weighted_row(prods, weights, wrap, wrap_shoup, one_shoup, out[i], i, p,
                              mode)


def _weights(diagonals, bits, p):
    """Weight mod p of each product: sum_s D[s, t] 2**(bits s)."""
    import numpy as np
    D = np.asarray(diagonals)
    return np.array([sum(int(D[s, t]) * pow(2, bits * s, p) for s in range(D.shape[0])) % p
                     for t in range(D.shape[1])], np.uint64)
