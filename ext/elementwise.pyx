# Elementwise GF(p) kernels on flat contiguous arrays of canonical elements.
from libc.stdint cimport uint64_t

from ffcode._ext.modp cimport addmod, elem_t, invmod, mulmod, submod


cdef enum Op:
    ADD, SUB, MUL


cdef void binary(const elem_t[::1] a, const elem_t[::1] b, elem_t[::1] out, uint64_t p,
                 Op op) noexcept nogil:
    """out = a op b; the operation is chosen once, outside the loop."""
    cdef Py_ssize_t i, n = out.shape[0]
    if op == ADD:
        for i in range(n):
            out[i] = <elem_t>addmod(a[i], b[i], p)
    elif op == SUB:
        for i in range(n):
            out[i] = <elem_t>submod(a[i], b[i], p)
    else:
        for i in range(n):
            out[i] = <elem_t>mulmod(a[i], b[i], p)


def add(const elem_t[::1] a, const elem_t[::1] b, elem_t[::1] out, uint64_t p):
    binary(a, b, out, p, ADD)


def sub(const elem_t[::1] a, const elem_t[::1] b, elem_t[::1] out, uint64_t p):
    binary(a, b, out, p, SUB)


def mul(const elem_t[::1] a, const elem_t[::1] b, elem_t[::1] out, uint64_t p):
    binary(a, b, out, p, MUL)


def neg(const elem_t[::1] a, elem_t[::1] out, uint64_t p):
    cdef Py_ssize_t i
    with nogil:
        for i in range(out.shape[0]):
            out[i] = <elem_t>(p - a[i] if a[i] else 0)


def inv(const elem_t[::1] a, elem_t[::1] out, uint64_t p):
    """Inverses of nonzero elements with one Euclidean inversion (Montgomery's batch trick)."""
    cdef Py_ssize_t i, n = out.shape[0]
    cdef uint64_t acc = 1, t
    if n == 0:
        return
    with nogil:
        for i in range(n):          # out[i] = a[0] * ... * a[i-1]
            out[i] = <elem_t>acc
            acc = mulmod(acc, a[i], p)
        acc = invmod(acc, p)        # 1 / (a[0] * ... * a[n-1])
        for i in range(n - 1, -1, -1):
            t = mulmod(acc, out[i], p)
            acc = mulmod(acc, a[i], p)
            out[i] = <elem_t>t
