# Products with a short inner dimension, out = A @ B for A (m, k) with small k, computed
# directly as m linear combinations of B's rows. This is the shape of encoding and decoding
# a polynomial code (a workers-by-blocks matrix times the stacked data blocks): few flops
# per output element, so the limb products through BLAS would be bound by their float64
# passes over memory, while this kernel reads B once and writes out once. B's rows may be
# separate arrays, so results held apart never need stacking into one copy, or one matrix
# (taking thousands of rows one by one would cost more than combining them).
#
# combine_rows_31 serves p < 2**31 (AVX2 Shoup products, shoup32.h), combine_rows_64 every
# p < 2**63 (matmul uses it from 2**31 on) with lazily reduced 128-bit sums (mac128.h). Both
# are also the fastest way to few output rows at any k: Freivalds' check is such products.
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc

from ffcode._ext.modp cimport Wide, elem_t, reduce128, uint128_t, wide

cdef extern from "shoup32.h" nogil:
    void shoup32_axpy(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w, uint32_t p)

cdef extern from "mac128.h" nogil:
    void mac128_u32(uint128_t *acc, const uint32_t *y, Py_ssize_t n, uint64_t w)
    void mac128_u64(uint128_t *acc, const uint64_t *y, Py_ssize_t n, uint64_t w)
    void fold128(uint128_t *acc, Py_ssize_t n, uint64_t c, uint64_t csh, uint64_t p)

DEF CHUNK = 1024    # columns per pass: a k x CHUNK slab of B stays in cache across A's rows


cdef int _row_pointers(rows, Py_ssize_t n, const elem_t **B, list views) except -1:
    """B[t] = the start of B's row t, for rows a list of 1-D contiguous arrays or a
    C-contiguous matrix; views keeps their buffers alive while B points into them."""
    cdef const elem_t[::1] row
    cdef const elem_t[:, ::1] matrix
    cdef Py_ssize_t t
    if isinstance(rows, list):
        for t in range(len(rows)):
            row = rows[t]
            if row.shape[0] != n:
                raise ValueError("combine_rows: a row has the wrong length")
            views.append(row)
            B[t] = &row[0] if n else NULL
    else:
        matrix = rows
        if matrix.shape[1] != n:
            raise ValueError("combine_rows: a row has the wrong length")
        views.append(matrix)
        for t in range(matrix.shape[0]):
            B[t] = &matrix[t, 0] if n else NULL
    return 0


def combine_rows_31(const uint32_t[:, :] A, rows, uint32_t[:, ::1] out, uint32_t p,
                    int mode):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1) for p < 2**31,
    where B's k rows, each out.shape[1] long, are the 1-D contiguous uint32 arrays in the
    list rows, or rows is B, a C-contiguous uint32 matrix.
    """
    cdef Py_ssize_t m = A.shape[0], k = A.shape[1], n = out.shape[1]
    cdef Py_ssize_t i, t, j, j0, width
    cdef uint32_t w
    cdef uint32_t acc[CHUNK]
    cdef const uint32_t **B
    if p >= 2**31 or len(rows) != k or out.shape[0] != m or mode not in (-1, 0, 1):
        raise ValueError("combine_rows_31: operands do not fit together")
    views = []
    B = <const uint32_t **>malloc(max(k, 1) * sizeof(uint32_t *))
    if B == NULL:
        raise MemoryError()
    try:
        _row_pointers(rows, n, B, views)
        with nogil:
            for j0 in range(0, n, CHUNK):
                width = min(CHUNK, n - j0)
                for i in range(m):
                    for j in range(width):
                        acc[j] = out[i, j0 + j] if mode != 0 else 0
                    for t in range(k):
                        w = A[i, t]
                        if mode < 0 and w != 0:
                            w = p - w
                        if w != 0:
                            shoup32_axpy(acc, B[t] + j0, width, w, p)
                    for j in range(width):
                        out[i, j0 + j] = acc[j]
    finally:
        free(B)


DEF CHUNK64 = 4096  # accumulator elements per pass, over A's rows: 64 KiB of 128-bit sums


def combine_rows_64(const elem_t[:, :] A, rows, elem_t[:, ::1] out, uint64_t p, int mode):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1) for p < 2**63,
    with B's rows as for combine_rows_31, all of A's dtype (uint32 or uint64), every element
    canonical.

    Each output element is a 128-bit sum of products below (p - 1)**2, reduced to
    lo + (hi * 2**64 mod p) < 2**64 + p every ``fold`` terms: as many as provably never
    overflow (4 at p = 2**63 - 25, 64 at 2**61 - 1, none needed below 2**32), then mod p once.
    """
    cdef Py_ssize_t m = A.shape[0], k = A.shape[1], n = out.shape[1]
    cdef Py_ssize_t i, t, j, j0, width, fold, since
    cdef Py_ssize_t chunk = max(8, CHUNK64 // max(m, 1))
    cdef uint64_t w
    cdef Wide f
    cdef uint128_t *acc
    cdef uint128_t *a
    cdef const elem_t **B
    if elem_t is uint32_t:
        fits = p <= 2**32
    else:
        fits = True
    if not 2 <= p < 2**63 or not fits or len(rows) != k or out.shape[0] != m \
            or mode not in (-1, 0, 1):
        raise ValueError("combine_rows_64: operands do not fit together")
    f = wide(p)
    fold = min(f.fold, max(k, 1))
    views = []
    B = <const elem_t **>malloc(max(k, 1) * sizeof(elem_t *))
    acc = <uint128_t *>malloc(max(m * chunk, 1) * sizeof(uint128_t))
    try:
        if B == NULL or acc == NULL:
            raise MemoryError()
        _row_pointers(rows, n, B, views)
        with nogil:
            j0 = 0
            while j0 < n:
                width = min(chunk, n - j0)
                for i in range(m):
                    a = acc + i * chunk
                    for j in range(width):
                        a[j] = out[i, j0 + j] if mode != 0 else 0
                since = 0
                for t in range(k):      # each row of B once per pass, for all of A's rows
                    if since == fold:
                        for i in range(m):
                            fold128(acc + i * chunk, width, f.c, f.csh, p)
                        since = 0
                    for i in range(m):
                        w = A[i, t]
                        if mode < 0 and w != 0:
                            w = p - w
                        if w != 0:
                            if elem_t is uint32_t:
                                mac128_u32(acc + i * chunk, B[t] + j0, width, w)
                            else:
                                mac128_u64(acc + i * chunk, B[t] + j0, width, w)
                    since += 1
                for i in range(m):
                    a = acc + i * chunk
                    for j in range(width):
                        out[i, j0 + j] = <elem_t>reduce128(a[j], &f)
                j0 += chunk
    finally:
        free(B)
        free(acc)
