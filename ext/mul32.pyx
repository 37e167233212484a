# GF(p) matrix products for p < 2**32 on 32 x 32 -> 64-bit integer products (mul32.h): B is
# packed once (pack_b), then mul_packed multiplies any rows of A by it. The packed B is
# read-only and every call has its own scratch, without the GIL: threads may each run
# mul_packed on their own rows of A and out at the same time.
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free

import numpy as np

cdef extern from "mul32.h" nogil:
    ctypedef struct mul32_field:
        uint64_t p
        int64_t group
    enum: MUL32_SIMD
    void mul32_field_init(mul32_field *f, uint64_t p)
    void *mul32_alloc(size_t bytes)
    size_t mul32_packed_b_bytes(Py_ssize_t k, Py_ssize_t n)
    void mul32_pack_b(const char *b, Py_ssize_t rs, Py_ssize_t cs, Py_ssize_t k, Py_ssize_t n,
                      const mul32_field *f, int64_t *dst)
    int mul32_rows(const char *a, Py_ssize_t ars, Py_ssize_t acs, Py_ssize_t m, Py_ssize_t k,
                   const int64_t *bpack, Py_ssize_t n, char *out, Py_ssize_t ors,
                   Py_ssize_t ocs, const mul32_field *f, int mode, int portable)

SIMD = bool(MUL32_SIMD)     # whether the AVX2 kernel was built (portable=False uses it)


def _check_p(p):
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"Argument 'p' must be an integer, not {type(p).__name__}.")
    if not 2 <= p < 2**32:
        raise ValueError(f"Argument 'p' must be in [2, 2**32), not {p}.")


def _check_matrix(name, X, writeable=False):
    if not isinstance(X, np.ndarray):
        raise TypeError(f"Argument '{name}' must be a numpy array, not {type(X).__name__}.")
    if X.dtype != np.uint32:
        raise TypeError(f"Argument '{name}' must have dtype uint32, not {X.dtype}.")
    if X.ndim != 2:
        raise ValueError(f"Argument '{name}' must be 2-D, not {X.ndim}-D.")
    if writeable and not X.flags.writeable:
        raise ValueError(f"Argument '{name}' must be writeable.")


def group_size(p):
    """G, the products per exact 64-bit group sum at p (see mul32.h): floor((2**63 - 1) /
    floor(p / 2)**2), at most the kernel's pass of inner terms (256)."""
    _check_p(p)
    cdef mul32_field f
    mul32_field_init(&f, p)
    return f.group


cdef class PackedB:
    """B (k x n) packed for mul_packed at p: read-only once made, shareable by threads."""
    cdef int64_t *data
    cdef mul32_field field
    cdef readonly uint64_t p
    cdef readonly Py_ssize_t k, n

    def __dealloc__(self):
        free(self.data)

    @property
    def shape(self):
        return (self.k, self.n)


def pack_b(B, p):
    """B, a uint32 matrix of canonical elements (any strides), packed for mul_packed mod p
    (2 <= p < 2**32; the elements are not checked)."""
    _check_p(p)
    _check_matrix("B", B)
    cdef const uint32_t[:, :] b = B
    cdef Py_ssize_t k = b.shape[0], n = b.shape[1]
    if k >= 2**32:
        raise ValueError(f"Argument 'B' must have fewer than 2**32 rows, not {k}.")
    cdef PackedB packed = PackedB.__new__(PackedB)
    mul32_field_init(&packed.field, p)
    packed.p, packed.k, packed.n = p, k, n
    packed.data = <int64_t *>mul32_alloc(mul32_packed_b_bytes(k, n))
    if packed.data == NULL:
        raise MemoryError()
    cdef const char *base = <const char *>&b[0, 0] if k and n else NULL
    with nogil:
        mul32_pack_b(base, b.strides[0], b.strides[1], k, n, &packed.field, packed.data)
    return packed


def mul_packed(A, PackedB B not None, out, int mode, bint portable=False):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1) mod B.p, for A
    (m x k) and out (m x n) uint32 matrices with any strides and B packed by pack_b (k x n).

    Every element of A and out must be canonical (not checked: the caller checks); out must
    not overlap A. Runs without the GIL on scratch of its own, so threads may multiply
    disjoint row ranges (A[r0:r1], out[r0:r1]) by one PackedB at once. portable=True uses the
    plain C kernel even where the AVX2 one was built (the results are the same).
    """
    if B.data == NULL:
        raise ValueError("Argument 'B' must be made by pack_b.")
    _check_matrix("A", A)
    _check_matrix("out", out, writeable=True)
    if mode not in (-1, 0, 1):
        raise ValueError(f"Argument 'mode' must be 0, 1 or -1, not {mode}.")
    if A.shape[1] != B.k:
        raise ValueError(f"Arguments 'A' and 'B' must have matching inner dimensions, not "
                         f"{A.shape} @ {B.shape}.")
    if out.shape != (A.shape[0], B.n):
        raise ValueError(f"Argument 'out' must have shape {(A.shape[0], B.n)}, not {out.shape}.")
    if np.may_share_memory(A, out):
        raise ValueError("Arguments 'A' and 'out' must not overlap.")
    cdef const uint32_t[:, :] a = A
    cdef uint32_t[:, :] o = out
    cdef Py_ssize_t m = a.shape[0], k = a.shape[1], n = o.shape[1]
    if m == 0 or n == 0:
        return
    cdef const char *abase = <const char *>&a[0, 0] if k else NULL
    cdef int status
    with nogil:
        status = mul32_rows(abase, a.strides[0], a.strides[1], m, k, B.data, n,
                            <char *>&o[0, 0], o.strides[0], o.strides[1], &B.field, mode,
                            portable)
    if status != 0:
        raise MemoryError()


def matmul(A, B, out, p, int mode, bint portable=False):
    """out = A @ B, out + A @ B or out - A @ B mod p (mode 0, 1, -1): mul_packed(A,
    pack_b(B, p), out, mode, portable) on one thread."""
    mul_packed(A, pack_b(B, p), out, mode, portable)
