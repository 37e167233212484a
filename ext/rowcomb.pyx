# Products with a short inner dimension, out = A @ B for A (m, k) with small k, computed
# directly as m linear combinations of B's rows. This is the shape of encoding and decoding
# a polynomial code (a workers-by-blocks matrix times the stacked data blocks): few flops
# per output element, so the limb products through BLAS would be bound by their float64
# passes over memory, while this kernel reads B once and writes out once. B's rows are
# separate arrays, so results held apart never need stacking into one copy.
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc

cdef extern from "shoup32.h" nogil:
    void shoup32_axpy(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w, uint32_t p)

DEF CHUNK = 1024    # columns per pass: a k x CHUNK slab of B stays in cache across A's rows


def combine_rows_31(const uint32_t[:, :] A, list rows, uint32_t[:, ::1] out, uint32_t p,
                    int mode):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1) for p < 2**31,
    where B's k rows are the 1-D contiguous uint32 arrays in rows, each out.shape[1] long.
    """
    cdef Py_ssize_t m = A.shape[0], k = A.shape[1], n = out.shape[1]
    cdef Py_ssize_t i, t, j, j0, width
    cdef uint32_t w
    cdef uint32_t acc[CHUNK]
    cdef const uint32_t[::1] row
    cdef const uint32_t **B
    if p >= 2**31 or len(rows) != k or out.shape[0] != m or mode not in (-1, 0, 1):
        raise ValueError("combine_rows_31: operands do not fit together")
    views = []                  # keeps every row's buffer alive while B points into it
    B = <const uint32_t **>malloc(max(k, 1) * sizeof(uint32_t *))
    if B == NULL:
        raise MemoryError()
    try:
        for t in range(k):
            row = rows[t]
            if row.shape[0] != n:
                raise ValueError("combine_rows_31: a row has the wrong length")
            views.append(row)
            B[t] = &row[0] if n else NULL
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
