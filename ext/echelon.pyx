# Unblocked Gaussian elimination over GF(p): the base case of ffcode's blocked echelon forms.
from libc.stdint cimport int64_t, uint32_t, uint64_t

import numpy as np

from ffcode._ext.modp cimport elem_t, invmod, mulmod_shoup, shoup, submod


cdef inline void _eliminate(elem_t[:, ::1] M, Py_ssize_t j, Py_ssize_t r, Py_ssize_t c,
                            uint64_t p) noexcept nogil:
    # Row j -= M[j, c] * row r, from column c on (row r has a unit at c and zeros before it).
    cdef uint64_t f = M[j, c], fsh, q
    cdef int64_t t
    cdef Py_ssize_t k
    if f == 0:
        return
    if elem_t is uint32_t:
        # Shoup with a 32-bit quotient: only 32x32->64 products, which vectorise.
        fsh = (f << 32) // p
        for k in range(c, M.shape[1]):
            q = (fsh * M[r, k]) >> 32
            t = <int64_t>M[j, k] - <int64_t>(f * M[r, k] - q * p)
            t += <int64_t>p & (t >> 63)
            t += <int64_t>p & (t >> 63)
            M[j, k] = <uint32_t>t
    else:
        fsh = shoup(f, p)
        for k in range(c, M.shape[1]):
            M[j, k] = submod(M[j, k], mulmod_shoup(M[r, k], f, fsh, p), p)


def row_echelon(elem_t[:, ::1] M, uint64_t p, Py_ssize_t ncols, bint reduced,
                Py_ssize_t[::1] pivot_rows, Py_ssize_t[::1] pivot_cols):
    """Bring M to row echelon form in place, with pivots searched in its first ncols columns.

    Pivot rows get a leading 1; with reduced, pivot columns are cleared above too (reduced
    row echelon form). pivot_rows[t] is the original index of the row that became the t-th
    pivot row and pivot_cols[t] its column. Returns the rank.
    """
    cdef Py_ssize_t m = M.shape[0], n = M.shape[1]
    cdef Py_ssize_t r = 0, c, i, j, k, tmp_perm
    cdef uint64_t a, ainv, ash
    cdef elem_t tmp
    cdef Py_ssize_t[::1] perm
    if ncols > n or pivot_rows.shape[0] < min(m, ncols) or pivot_cols.shape[0] < min(m, ncols):
        raise ValueError("pivot buffers or column count do not fit the matrix")
    perm = np.arange(m, dtype=np.intp)
    with nogil:
        for c in range(ncols):
            if r == m:
                break
            i = r
            while i < m and M[i, c] == 0:
                i = i + 1
            if i == m:
                continue
            if i != r:
                for k in range(c, n):
                    tmp = M[i, k]
                    M[i, k] = M[r, k]
                    M[r, k] = tmp
                tmp_perm = perm[i]
                perm[i] = perm[r]
                perm[r] = tmp_perm
            a = M[r, c]
            ainv = invmod(a, p)
            ash = shoup(ainv, p)
            for k in range(c, n):
                M[r, k] = <elem_t>mulmod_shoup(M[r, k], ainv, ash, p)
            for j in range(0 if reduced else r + 1, m):
                if j != r:
                    _eliminate(M, j, r, c, p)
            pivot_rows[r] = perm[r]
            pivot_cols[r] = c
            r = r + 1
    return r

