# Unblocked LU and triangular solves over GF(p): the base cases of ffcode's recursive LU.
#
# Rows are updated into lazily reduced sums, reduced once, wherever those are cheap: float64
# sums (vectorised multiply-adds) while every update they can take keeps them exact, below
# 2**53 (p below about 2**23), and from 2**31 on 128-bit sums (mac128.h: one 64 x 64-bit
# multiply and an add with carry per element, folded every Wide.fold updates) instead of a
# full modular product (three multiplies) per update. In between, each row update is an
# AVX2 Shoup product (shoup32.h), reduced at once.
# Rows are reached through pointers, so each must have contiguous elements; the rows
# themselves may lie anywhere (a panel of a larger matrix).
from libc.math cimport floor, fma
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc

from ffcode._ext.modp cimport (Wide, elem_t, invmod, mulmod_shoup, reduce128, shoup,
                               uint128_t, wide)

cdef extern from "shoup32.h" nogil:
    uint32_t shoup32_constant(uint32_t w, uint32_t p, double pinv)
    void shoup32_axpy_with(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w,
                           uint32_t wsh, uint32_t p)

cdef extern from "mac128.h" nogil:
    void mac128_u32(uint128_t *acc, const uint32_t *y, Py_ssize_t n, uint64_t w)
    void mac128_u64(uint128_t *acc, const uint64_t *y, Py_ssize_t n, uint64_t w)
    void fold128(uint128_t *acc, Py_ssize_t n, uint64_t c, uint64_t csh, uint64_t p)

DEF CHUNK = 1024    # right-hand-side columns per pass of the wide triangular solves


cdef inline bint _narrow(elem_t *x, uint64_t p) noexcept nogil:
    # Whether the eager AVX2 Shoup rows serve (x only selects the element type).
    return elem_t is uint32_t and p < (<uint64_t>1 << 31)


cdef inline void _axpy(elem_t *acc, const elem_t *y, Py_ssize_t n, uint64_t w, uint64_t p,
                       double pinv) noexcept nogil:
    # acc += w y mod p, for the narrow case (pinv = 1 / p: no division per row).
    if elem_t is uint32_t:
        if w:
            shoup32_axpy_with(acc, y, n, <uint32_t>w,
                              shoup32_constant(<uint32_t>w, <uint32_t>p, pinv), <uint32_t>p)


ctypedef fused sum_t:    # the lazily reduced sums
    double
    uint128_t


cdef inline bint _float_sums(elem_t *x, uint64_t p, Py_ssize_t updates) noexcept nogil:
    # Whether float64 sums hold a canonical start and that many updates below (p - 1)**2
    # exactly (x only selects the element type).
    return elem_t is uint32_t and (<uint128_t>(p - 1)) * (p - 1) * updates + p < (
        (<uint128_t>1) << 53)


cdef inline void _mac(sum_t *acc, const elem_t *y, Py_ssize_t n, uint64_t w) noexcept nogil:
    # acc += w y into the sums.
    cdef Py_ssize_t k
    cdef double wd = <double>w
    if sum_t is double:
        for k in range(n):
            acc[k] += wd * <double>y[k]
    elif elem_t is uint32_t:
        mac128_u32(acc, y, n, w)
    else:
        mac128_u64(acc, y, n, w)


cdef inline uint64_t _reduce(sum_t x, const Wide *f) noexcept nogil:
    cdef double r
    if sum_t is double:
        # exact: the floored quotient of an integer below 2**53 is off by at most one
        r = fma(-floor(x * f.pinv), <double>f.p, x)
        r = r + <double>f.p if r < 0 else r
        return <uint64_t>(r - <double>f.p if r >= <double>f.p else r)
    return reduce128(x, f)


cdef inline Py_ssize_t _fold_every(sum_t *acc, const Wide *f) noexcept nogil:
    # Updates between folds (acc only selects the sum type): float64 sums are only used
    # where they never need one.
    if sum_t is double:
        return -1
    return f.fold


cdef inline void _fold(sum_t *acc, Py_ssize_t n, const Wide *f) noexcept nogil:
    if sum_t is uint128_t:
        fold128(acc, n, f.c, f.csh, f.p)


cdef void *_buffer(Py_ssize_t n, size_t size) except NULL:
    cdef void *buffer = malloc(max(n, 1) * size)
    if buffer == NULL:
        raise MemoryError()
    return buffer


cdef _rows_contiguous(Py_ssize_t stride, size_t itemsize):
    if stride != <Py_ssize_t>itemsize:
        raise ValueError("the kernels need rows with contiguous elements")


cdef inline void _swap_rows(elem_t[:, :] M, Py_ssize_t i, Py_ssize_t r,
                            Py_ssize_t[::1] perm) noexcept nogil:
    cdef Py_ssize_t k, t
    cdef elem_t tmp
    for k in range(M.shape[1]):
        tmp = M[i, k]
        M[i, k] = M[r, k]
        M[r, k] = tmp
    t = perm[i]
    perm[i] = perm[r]
    perm[r] = t


def lu(elem_t[:, :] M, uint64_t p, Py_ssize_t[::1] perm, Py_ssize_t[::1] pivots,
       Py_ssize_t ncols=-1):
    """LU decomposition of M in place with first-nonzero pivoting: returns the rank r.

    Columns are taken in order, pivots searched in the first ncols (all by default) and the
    rows updated across all of M; the first row at or below the next pivot row with a
    nonzero entry becomes that pivot row (swapped up, also in perm, which must start as
    0..m-1).
    Afterwards pivots[t] is the column of pivot t, row t holds U from column pivots[t] on,
    entry (j, pivots[t]) for j > t holds the multiplier L[j, t], and every other entry left
    of a row's pivot is 0 or such a multiplier (for rows past the rank: all of their first
    ncols entries; their others are what elimination leaves there). The permuted M is L U
    with L unit lower triangular.
    """
    cdef Py_ssize_t m = M.shape[0], w = M.shape[1], rank
    cdef void *acc
    _rows_contiguous(M.strides[1], sizeof(elem_t))
    ncols = w if ncols < 0 else ncols
    if ncols > w or perm.shape[0] != m or pivots.shape[0] < min(m, ncols):
        raise ValueError("permutation, pivot buffer or pivot columns do not fit the matrix")
    if m == 0 or ncols == 0:
        return 0
    if _float_sums(&M[0, 0], p, ncols):
        acc = _buffer(m * w, sizeof(double))
        with nogil:
            rank = _lu_lazy(M, p, perm, pivots, ncols, <double *>acc)
    elif _narrow(&M[0, 0], p):
        with nogil:
            rank = _lu_narrow(M, p, perm, pivots, ncols)
        return rank
    else:
        acc = _buffer(m * w, sizeof(uint128_t))
        with nogil:
            rank = _lu_lazy(M, p, perm, pivots, ncols, <uint128_t *>acc)
    free(acc)
    return rank


cdef Py_ssize_t _lu_narrow(elem_t[:, :] M, uint64_t p, Py_ssize_t[::1] perm,
                           Py_ssize_t[::1] pivots, Py_ssize_t ncols) noexcept nogil:
    cdef Py_ssize_t m = M.shape[0], w = M.shape[1], r = 0, c, i, j
    cdef uint64_t inv, invsh, l
    cdef double pinv = 1.0 / <double>p
    for c in range(ncols):
        if r == m:
            break
        i = r
        while i < m and M[i, c] == 0:
            i = i + 1
        if i == m:
            continue
        if i != r:
            _swap_rows(M, i, r, perm)
        inv = invmod(M[r, c], p)
        invsh = shoup(inv, p)
        for j in range(r + 1, m):
            if M[j, c] != 0:
                l = mulmod_shoup(M[j, c], inv, invsh, p)
                M[j, c] = <elem_t>l
                if c + 1 < w:
                    _axpy(&M[j, c + 1], &M[r, c + 1], w - c - 1, p - l, p, pinv)
        pivots[r] = c
        r = r + 1
    return r


cdef Py_ssize_t _lu_lazy(elem_t[:, :] M, uint64_t p, Py_ssize_t[::1] perm,
                         Py_ssize_t[::1] pivots, Py_ssize_t ncols,
                         sum_t *acc) noexcept nogil:
    # acc holds the rows' sums (row i at acc + i w); M's entries left of the current column
    # are final (U, L or 0), its others are stale until a row becomes a pivot row, and past
    # the pivot columns they are written back at the end.
    cdef Py_ssize_t m = M.shape[0], w = M.shape[1], r = 0, c, i, j, k, since = 0
    cdef uint64_t inv, invsh, l, v
    cdef sum_t *row
    cdef Wide f = wide(p)
    cdef Py_ssize_t fold = _fold_every(acc, &f)
    for i in range(m):
        for k in range(w):
            acc[i * w + k] = M[i, k]
    for c in range(ncols):
        if r == m:
            break
        if since == fold:
            for i in range(r, m):
                _fold(acc + i * w + c, w - c, &f)
            since = 0
        i = r
        while i < m:
            v = _reduce(acc[i * w + c], &f)
            if v != 0:
                break
            M[i, c] = 0
            i = i + 1
        if i == m:
            continue
        if i != r:
            _swap_rows(M, i, r, perm)
            for k in range(c, w):
                acc[i * w + k], acc[r * w + k] = acc[r * w + k], acc[i * w + k]
        row = acc + r * w
        for k in range(c, w):
            M[r, k] = <elem_t>_reduce(row[k], &f)
        inv = invmod(M[r, c], p)
        invsh = shoup(inv, p)
        for j in range(r + 1, m):
            v = _reduce(acc[j * w + c], &f)
            l = mulmod_shoup(v, inv, invsh, p) if v else 0
            M[j, c] = <elem_t>l
            if l and c + 1 < w:
                _mac(acc + j * w + c + 1, &M[r, c + 1], w - c - 1, p - l)
        since = since + 1
        pivots[r] = c
        r = r + 1
    for i in range(r, m):
        for k in range(ncols, w):
            M[i, k] = <elem_t>_reduce(acc[i * w + k], &f)
    return r


def solve_lower_unit(const elem_t[:, :] L, elem_t[:, :] B, uint64_t p):
    """B <- L^-1 B in place for L unit lower triangular (its diagonal and above are ignored)."""
    _triangular(L, B, p, False)


def solve_upper(const elem_t[:, :] U, elem_t[:, :] B, uint64_t p):
    """B <- U^-1 B in place for U upper triangular with a nonzero diagonal (below ignored)."""
    _triangular(U, B, p, True)


cdef _triangular(const elem_t[:, :] T, elem_t[:, :] B, uint64_t p, bint upper):
    cdef Py_ssize_t n = T.shape[0], width = B.shape[1]
    cdef void *acc
    if T.shape[1] != n or B.shape[0] != n:
        raise ValueError("the triangular matrix must be square with as many rows as B")
    _rows_contiguous(B.strides[1], sizeof(elem_t))
    if n == 0 or width == 0:
        return
    if _float_sums(&B[0, 0], p, n):
        acc = _buffer(min(width, CHUNK), sizeof(double))
        with nogil:
            _triangular_lazy(T, B, p, upper, <double *>acc)
    elif _narrow(&B[0, 0], p):
        with nogil:
            _triangular_narrow(T, B, p, upper)
        return
    else:
        acc = _buffer(min(width, CHUNK), sizeof(uint128_t))
        with nogil:
            _triangular_lazy(T, B, p, upper, <uint128_t *>acc)
    free(acc)


cdef inline Py_ssize_t _row_of(Py_ssize_t t, Py_ssize_t n, bint upper) noexcept nogil:
    # The t-th row to finish: top down for L, bottom up for U.
    return n - 1 - t if upper else t


cdef inline void _scale(elem_t *x, Py_ssize_t n, uint64_t d, uint64_t p) noexcept nogil:
    cdef uint64_t inv = invmod(d, p), invsh = shoup(inv, p)
    cdef Py_ssize_t j
    for j in range(n):
        x[j] = <elem_t>mulmod_shoup(x[j], inv, invsh, p)


cdef void _triangular_narrow(const elem_t[:, :] T, elem_t[:, :] B, uint64_t p,
                             bint upper) noexcept nogil:
    # Right-looking: once row k is final, it is taken from every row still to finish.
    cdef Py_ssize_t n = T.shape[0], width = B.shape[1], t, s, k, i
    cdef double pinv = 1.0 / <double>p
    for t in range(n):
        k = _row_of(t, n, upper)
        if upper:
            _scale(&B[k, 0], width, T[k, k], p)
        for s in range(t + 1, n):
            i = _row_of(s, n, upper)
            if T[i, k]:
                _axpy(&B[i, 0], &B[k, 0], width, p - T[i, k], p, pinv)


cdef void _triangular_lazy(const elem_t[:, :] T, elem_t[:, :] B, uint64_t p, bint upper,
                           sum_t *acc) noexcept nogil:
    # Left-looking: each row gathers the finished rows' multiples in lazy sums, reduced
    # once, a chunk of columns at a time.
    cdef Py_ssize_t n = T.shape[0], width = B.shape[1], t, s, k, i, j, j0, cols, since
    cdef Wide f = wide(p)
    cdef Py_ssize_t fold = _fold_every(acc, &f)
    cdef uint64_t l
    for j0 in range(0, width, CHUNK):
        cols = min(CHUNK, width - j0)
        for t in range(n):
            i = _row_of(t, n, upper)
            for j in range(cols):
                acc[j] = B[i, j0 + j]
            since = 0
            for s in range(t):
                k = _row_of(s, n, upper)
                l = T[i, k]
                if l:
                    if since == fold:
                        _fold(acc, cols, &f)
                        since = 0
                    _mac(acc, &B[k, j0], cols, p - l)
                    since = since + 1
            for j in range(cols):
                B[i, j0 + j] = <elem_t>_reduce(acc[j], &f)
            if upper:
                _scale(&B[i, j0], cols, T[i, i], p)
