# Unblocked Gaussian elimination over GF(p): the base cases of ffcode's recursive LU and
# triangular solves, and the plain echelon kernel.
from libc.stdint cimport int64_t, uint32_t, uint64_t

import numpy as np

from ffcode._ext.modp cimport elem_t, invmod, mulmod_shoup, shoup, submod

cdef extern from "shoup32.h" nogil:
    void shoup32_axpy(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w, uint32_t p)


cdef inline bint _row_shoup(elem_t *y, uint64_t p) noexcept nogil:
    # Whether _sub_row needs the Shoup constants of y (all but AVX2's 32-bit case).
    return not (elem_t is uint32_t and p < (<uint64_t>1 << 31))


cdef inline void _shoup_row(const elem_t *y, uint64_t *ysh, Py_ssize_t n,
                            uint64_t p) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        ysh[k] = shoup(y[k], p)


cdef inline void _sub_row(elem_t *acc, const elem_t *y, const uint64_t *ysh, Py_ssize_t n,
                          uint64_t l, uint64_t p) noexcept nogil:
    # acc -= l * y mod p. Below 2**31 (32-bit lanes) Shoup's product with the 32-bit quotient
    # of l, in AVX2; else one 128-bit product per element with y's constants ysh: computing
    # l's own 128-bit constant would cost a division per row, more than a short row.
    cdef Py_ssize_t k
    if l == 0:
        return
    if elem_t is uint32_t:
        if p < (<uint64_t>1 << 31):
            shoup32_axpy(acc, y, n, <uint32_t>(p - l), <uint32_t>p)
            return
    for k in range(n):
        acc[k] = <elem_t>submod(acc[k], mulmod_shoup(l, y[k], ysh[k], p), p)


cdef _rows_contiguous(Py_ssize_t stride, size_t itemsize):
    # The kernels run along rows through pointers; rows may lie anywhere (views of a panel).
    if stride != <Py_ssize_t>itemsize:
        raise ValueError("the kernels need rows with contiguous elements")


def lu(elem_t[:, :] M, uint64_t p, Py_ssize_t[::1] perm, Py_ssize_t[::1] pivots):
    """LU decomposition of M in place with first-nonzero pivoting: returns the rank r.

    Columns are taken in order; the first row at or below the next pivot row with a nonzero
    entry becomes that pivot row (swapped up, also in perm, which must start as 0..m-1).
    Afterwards pivots[t] is the column of pivot t, row t holds U (its entries from
    pivots[t] on), and entry (j, pivots[t]) for j > t holds the multiplier L[j, t]: the
    permuted M is L U with L unit lower triangular.
    """
    cdef Py_ssize_t m = M.shape[0], w = M.shape[1]
    cdef Py_ssize_t r = 0, c, i, j, k, tmp_perm
    cdef uint64_t inv, invsh, l
    cdef elem_t tmp
    cdef uint64_t[::1] ysh = np.empty(max(w, 1), np.uint64)
    _rows_contiguous(M.strides[1], sizeof(elem_t))
    if perm.shape[0] != m or pivots.shape[0] < min(m, w):
        raise ValueError("permutation or pivot buffer does not fit the matrix")
    with nogil:
        for c in range(w):
            if r == m:
                break
            i = r
            while i < m and M[i, c] == 0:
                i = i + 1
            if i == m:
                continue
            if i != r:
                for k in range(w):
                    tmp = M[i, k]
                    M[i, k] = M[r, k]
                    M[r, k] = tmp
                tmp_perm = perm[i]
                perm[i] = perm[r]
                perm[r] = tmp_perm
            inv = invmod(M[r, c], p)
            invsh = shoup(inv, p)
            if c + 1 < w and _row_shoup(&M[r, c], p):
                _shoup_row(&M[r, c + 1], &ysh[c + 1], w - c - 1, p)
            for j in range(r + 1, m):
                if M[j, c] == 0:
                    continue
                l = mulmod_shoup(M[j, c], inv, invsh, p)
                M[j, c] = <elem_t>l
                if c + 1 < w:
                    _sub_row(&M[j, c + 1], &M[r, c + 1], &ysh[c + 1], w - c - 1, l, p)
            pivots[r] = c
            r = r + 1
    return r


def solve_lower_unit(const elem_t[:, :] L, elem_t[:, :] B, uint64_t p):
    """B <- L^-1 B in place for L unit lower triangular (its diagonal and above are ignored)."""
    cdef Py_ssize_t n = L.shape[0], width = B.shape[1], i, k
    cdef uint64_t[::1] ysh = np.empty(max(width, 1), np.uint64)
    if L.shape[1] != n or B.shape[0] != n:
        raise ValueError("L must be square with as many rows as B")
    _rows_contiguous(B.strides[1], sizeof(elem_t))
    if width == 0:
        return
    with nogil:
        for k in range(n - 1):          # row k of B is final: take it from the rows below
            if _row_shoup(&B[k, 0], p):
                _shoup_row(&B[k, 0], &ysh[0], width, p)
            for i in range(k + 1, n):
                _sub_row(&B[i, 0], &B[k, 0], &ysh[0], width, L[i, k], p)


def solve_upper(const elem_t[:, :] U, elem_t[:, :] B, uint64_t p):
    """B <- U^-1 B in place for U upper triangular with a nonzero diagonal (below ignored)."""
    cdef Py_ssize_t n = U.shape[0], width = B.shape[1], i, j, k
    cdef uint64_t inv, invsh
    cdef uint64_t[::1] ysh = np.empty(max(width, 1), np.uint64)
    if U.shape[1] != n or B.shape[0] != n:
        raise ValueError("U must be square with as many rows as B")
    _rows_contiguous(B.strides[1], sizeof(elem_t))
    if width == 0:
        return
    with nogil:
        for k in range(n - 1, -1, -1):  # row k of B, scaled by U[k, k]^-1, is final
            inv = invmod(U[k, k], p)
            invsh = shoup(inv, p)
            for j in range(width):
                B[k, j] = <elem_t>mulmod_shoup(B[k, j], inv, invsh, p)
            if k and _row_shoup(&B[k, 0], p):
                _shoup_row(&B[k, 0], &ysh[0], width, p)
            for i in range(k):
                _sub_row(&B[i, 0], &B[k, 0], &ysh[0], width, U[i, k], p)


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

