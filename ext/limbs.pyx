# Kernels of the exact float64 route to GF(p) matrix products (DESIGN.md §5): split canonical
# elements into signed limbs held as float64 for dgemm, and fold exact float64 products back
# into canonical elements. Single-threaded on purpose: BLAS owns the cores, and threads of
# another runtime spinning beside it slow every dgemm that follows.
from libc.stdint cimport int64_t, uint64_t

from ffcode._ext.modp cimport addmod, elem_t, mulmod_shoup, reduce_exact_double, shoup

cdef enum:
    MAX_LIMBS = 8
    MAX_PRODUCTS = 64


cdef inline void _split_row(const elem_t[:] a, double[:, :, ::1] out, Py_ssize_t i,
                            int nlimbs, const Py_ssize_t[:, ::1] pairs, uint64_t p,
                            int bits) noexcept nogil:
    cdef Py_ssize_t j, q
    cdef int l
    cdef int64_t c, d, half = 0, mask = 0
    cdef uint64_t half_p = p // 2
    cdef int64_t digits[MAX_LIMBS]
    if nlimbs > 1:
        half = (<int64_t>1) << (bits - 1)
        mask = ((<int64_t>1) << bits) - 1
    for j in range(a.shape[0]):
        c = <int64_t>a[j]
        if <uint64_t>c > half_p:
            c = c - <int64_t>p
        for l in range(nlimbs - 1):
            d = ((c + half) & mask) - half
            digits[l] = d
            out[l, i, j] = <double>d
            c = (c - d) >> bits
        digits[nlimbs - 1] = c
        out[nlimbs - 1, i, j] = <double>c
        for q in range(pairs.shape[0]):
            out[nlimbs + q, i, j] = <double>(digits[pairs[q, 0]] + digits[pairs[q, 1]])


def split_limbs(const elem_t[:, :] a, double[:, :, ::1] out, int nlimbs,
                const Py_ssize_t[:, ::1] pairs, uint64_t p, int bits):
    """Write the centred value of a as float64 limbs, then the requested sums of two limbs.

    The centred value (a, or a - p above p // 2) is written in base 2**bits with digits in
    [-2**(bits-1), 2**(bits-1)); the last digit takes what is left (with one limb, bits is
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


cdef inline void _combine_row(const double[:, :, ::1] prods, const uint64_t[::1] weights,
                              const uint64_t* wsh, elem_t[:] out, Py_ssize_t i, uint64_t p,
                              double pinv, bint accumulate) noexcept nogil:
    cdef Py_ssize_t j, t
    cdef uint64_t acc, r
    for j in range(out.shape[0]):
        acc = <uint64_t>out[j] if accumulate else 0
        for t in range(prods.shape[0]):
            r = reduce_exact_double(prods[t, i, j], <int64_t>p, pinv)
            if weights[t] != 1:
                r = mulmod_shoup(r, weights[t], wsh[t], p)
            acc = addmod(acc, r, p)
        out[j] = <elem_t>acc


def combine_products(const double[:, :, ::1] prods, const uint64_t[::1] weights,
                     elem_t[:, :] out, uint64_t p, bint accumulate):
    """out (+)= sum_t weights[t] * prods[t] mod p, for exact integer products |prods| < 2**53."""
    cdef Py_ssize_t i, t
    cdef uint64_t wsh[MAX_PRODUCTS]
    cdef double pinv = 1.0 / <double>p
    if prods.shape[0] > MAX_PRODUCTS:
        raise ValueError("at most %d products are supported" % MAX_PRODUCTS)
    if weights.shape[0] != prods.shape[0] or prods.shape[1] != out.shape[0] or \
            prods.shape[2] != out.shape[1]:
        raise ValueError("products, weights and output do not fit together")
    for t in range(prods.shape[0]):
        wsh[t] = shoup(weights[t], p)
    with nogil:
        for i in range(out.shape[0]):
            _combine_row(prods, weights, wsh, out[i], i, p, pinv, accumulate)
