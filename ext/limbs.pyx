# Kernels of the exact float64 route to GF(p) matrix products (DESIGN.md §5): split canonical
# elements into signed limbs held as float64 for dgemm, and fold exact float64 products back
# into canonical elements. Rows are spread over threads; each row is independent.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t, uint64_t

from ffcode._ext.modp cimport addmod, elem_t, mulmod_shoup, reduce_i64, shoup

cdef enum:
    MAX_LIMBS = 8
    MAX_PRODUCTS = 64


cdef inline void _split_row(const elem_t[:] a, double[:, :, ::1] out, Py_ssize_t i,
                            const uint8_t[:, ::1] subsets, uint64_t p, int bits) noexcept nogil:
    cdef Py_ssize_t j, s
    cdef int l, nlimbs = subsets.shape[1]
    cdef int64_t c, d, half = 0, mask = 0
    cdef int64_t digits[MAX_LIMBS]
    cdef double acc
    if nlimbs > 1:
        half = (<int64_t>1) << (bits - 1)
        mask = ((<int64_t>1) << bits) - 1
    for j in range(a.shape[0]):
        c = <int64_t>a[j]
        if <uint64_t>c > p // 2:
            c = c - <int64_t>p
        for l in range(nlimbs - 1):
            d = ((c + half) & mask) - half
            digits[l] = d
            c = (c - d) >> bits
        digits[nlimbs - 1] = c
        for s in range(subsets.shape[0]):
            acc = 0
            for l in range(nlimbs):
                if subsets[s, l]:
                    acc = acc + <double>digits[l]
            out[s, i, j] = acc


def split_limbs(const elem_t[:, :] a, double[:, :, ::1] out, const uint8_t[:, ::1] subsets,
                uint64_t p, int bits):
    """out[s] = sum of the limbs named by subsets[s] of the centred value of a.

    The centred value (a, or a - p above p // 2) is written in base 2**bits with digits in
    [-2**(bits-1), 2**(bits-1)); the last digit takes what is left.
    """
    cdef Py_ssize_t i
    if not 1 <= subsets.shape[1] <= MAX_LIMBS:
        raise ValueError("between 1 and %d limbs are supported" % MAX_LIMBS)
    for i in prange(a.shape[0], nogil=True, schedule="static"):
        _split_row(a[i], out, i, subsets, p, bits)


cdef inline void _combine_row(const double[:, :, ::1] prods, const uint64_t[::1] weights,
                              const uint64_t* wsh, elem_t[:] out, Py_ssize_t i, uint64_t p,
                              double pinv, bint accumulate) noexcept nogil:
    cdef Py_ssize_t j, t
    cdef uint64_t acc
    for j in range(out.shape[0]):
        acc = <uint64_t>out[j] if accumulate else 0
        for t in range(prods.shape[0]):
            acc = addmod(acc, mulmod_shoup(
                reduce_i64(<int64_t>prods[t, i, j], <int64_t>p, pinv),
                weights[t], wsh[t], p), p)
        out[j] = <elem_t>acc


def combine_products(const double[:, :, ::1] prods, const uint64_t[::1] weights,
                     elem_t[:, :] out, uint64_t p, bint accumulate):
    """out (+)= sum_t weights[t] * prods[t] mod p, for exact integer products |prods| < 2**53."""
    cdef Py_ssize_t i, t
    cdef uint64_t wsh[MAX_PRODUCTS]
    cdef double pinv = 1.0 / <double>p
    if prods.shape[0] > MAX_PRODUCTS:
        raise ValueError("at most %d products are supported" % MAX_PRODUCTS)
    for t in range(prods.shape[0]):
        wsh[t] = shoup(weights[t], p)
    for i in prange(out.shape[0], nogil=True, schedule="static"):
        _combine_row(prods, weights, wsh, out[i], i, p, pinv, accumulate)
