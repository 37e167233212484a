"""Echelon forms and solves over GF(p) by a recursive LU, so that almost all work is matrix
products.

The LU splits the columns in two: the left half is decomposed (recursively), its row order
and its L are carried to the right half (a triangular solve for the pivot rows and one
product, the Schur update, for the rows below), and the right half's remaining rows are
decomposed in turn. A narrow enough panel is decomposed in place by the unblocked kernel.
Pivots are the first nonzero entries, column by column, as plain Gaussian elimination
would take them: the pivot columns are the column rank profile, so the reduced form is the
unique rref.
"""
import numpy as np

from ffcode._ext import echelon as _kernel
from ffcode._matmul import matmul_into

# Sizes at or below which one kernel call does the work: a panel's columns (or rows) for the
# LU, a triangle's order for the solves. The kernel's AVX2 rows below 2**31 cost about as
# much per update as a product's multiply-add there; the lazily reduced 128-bit rows above
# cost less than the products of three-limb schemes up to these sizes (minima of timings
# at n = 128, 256, 512).
BASE_31, TRIANGLE_31 = 128, 64
BASE_WIDE, TRIANGLE_WIDE = 256, 256


def _base(p: int) -> int:
    return BASE_31 if p < 2**31 else BASE_WIDE


def _triangle(p: int) -> int:
    return TRIANGLE_31 if p < 2**31 else TRIANGLE_WIDE


def _lu(p: int, M: np.ndarray, r0: int, c0: int, c1: int) -> tuple[int, np.ndarray, np.ndarray]:
    """LU of M[r0:, c0:c1] in place, those columns only: (rank, pivot columns, row order).

    The row order (indices into M[r0:]) is applied to the columns c0:c1 of M[r0:]; the
    caller carries it to the others.
    """
    rows, width = M.shape[0] - r0, c1 - c0
    if width <= _base(p) or rows <= _base(p):
        order, pivots = np.arange(rows), np.empty(min(rows, width), np.intp)
        rank = _kernel.lu(M[r0:, c0:c1], p, order, pivots)
        return rank, pivots[:rank] + c0, order
    mid = c0 + width // 2
    s1, pc1, order1 = _lu(p, M, r0, c0, mid)
    _carry(p, M, r0, s1, pc1, order1, mid, c1)
    s2, pc2, order2 = _lu(p, M, r0 + s1, mid, c1)
    lower_left = M[r0 + s1:, c0:mid]
    lower_left[...] = lower_left[order2]
    order = order1.copy()
    order[s1:] = order1[s1:][order2]
    return s1 + s2, np.concatenate([pc1, pc2]), order


def _lu_all(p: int, M: np.ndarray, ncols: int) -> tuple[int, np.ndarray]:
    """LU of M in place with pivots in its first ncols columns, carried to all of M's
    columns: (rank, pivot columns). A small M is one kernel call."""
    m, n = M.shape
    if m <= _base(p) or max(ncols, n - ncols) <= _base(p):
        pivots = np.empty(min(m, ncols), np.intp)
        rank = _kernel.lu(M, p, np.arange(m), pivots, ncols)
        return rank, pivots[:rank]
    rank, pivots, order = _lu(p, M, 0, 0, ncols)
    _carry(p, M, 0, rank, pivots, order, ncols, n)
    return rank, pivots


def _carry(p: int, M: np.ndarray, r0: int, rank: int, pivots: np.ndarray, order: np.ndarray,
           start: int, stop: int) -> None:
    """Carry an LU of M[r0:] (rank pivots, L stored at the pivot columns, row order) to the
    columns start:stop: reorder their rows, then U's rows are L11^-1 times the pivot rows,
    and the rows below lose L21 times those."""
    if start == stop:
        return
    block = M[r0:, start:stop]
    block[...] = block[order]
    if rank == 0:
        return
    top = M[r0:r0 + rank, start:stop]
    solve_triangular(p, M[r0:r0 + rank][:, pivots], top, upper=False)
    below = M[r0 + rank:]
    if below.shape[0]:
        matmul_into(p, below[:, pivots], top, below[:, start:stop], accumulate=True,
                    negate=True)


def solve_triangular(p: int, T: np.ndarray, B: np.ndarray, upper: bool) -> None:
    """B <- T^-1 B in place: T unit lower triangular (diagonal and above ignored), or upper
    triangular with a nonzero diagonal (below ignored). The half of B that needs no other
    is solved first, then taken from the rest by one product."""
    n = T.shape[0]
    if n <= _triangle(p):
        (_kernel.solve_upper if upper else _kernel.solve_lower_unit)(T, B, p)
        return
    h = n // 2
    first, then = (slice(h, None), slice(None, h)) if upper else (slice(None, h), slice(h, None))
    solve_triangular(p, T[first, first], B[first], upper)
    matmul_into(p, T[then, first], B[first], B[then], accumulate=True, negate=True)
    solve_triangular(p, T[then, then], B[then], upper)


def echelon(p: int, M: np.ndarray, ncols: int, reduced: bool) -> tuple[int, np.ndarray]:
    """An echelon form of a C-contiguous M in place, pivots in its first ncols columns.

    Returns (rank, pivot columns). The rows from rank on are the rows M's first ncols
    columns do not decide, reduced by the pivot rows: zero in those columns, and in the
    others zero exactly when they depend on the pivot rows alone. With reduced, M is the
    reduced row echelon form (the unique rref when ncols is every column); without, the
    rows above rank hold the LU factors.
    """
    m, n = M.shape
    if m == 0 or ncols == 0:
        return 0, np.empty(0, np.intp)
    rank, pivots = _lu_all(p, M, ncols)
    M[rank:, :ncols] = 0
    if reduced and rank:
        top = M[:rank]
        U = np.ascontiguousarray(top[:, pivots])
        top[np.arange(n) < pivots[:, None]] = 0          # the L factor: U is what remains
        solve_triangular(p, U, top, upper=True)
    return rank, pivots


def solve(p: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with A X = B for square A and 2-D B; numpy.linalg.LinAlgError when A is singular."""
    n = A.shape[0]
    M = np.empty((n, n + B.shape[1]), A.dtype)
    M[:, :n], M[:, n:] = A, B
    rank, _ = _lu_all(p, M, n)
    if rank < n:
        raise np.linalg.LinAlgError(f"matrix is singular (rank {rank} < {n})")
    X = M[:, n:]
    solve_triangular(p, M[:, :n], X, upper=True)
    return np.ascontiguousarray(X)
