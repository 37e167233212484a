"""Echelon forms and solves over GF(p) by a recursive LU, so that almost all work is matrix
products.

The LU splits the columns in two: the left half is decomposed (recursively), its row order
and its L are carried to the right half (a triangular solve for the pivot rows and one
product, the Schur update, for the rows below), and the right half's remaining rows are
decomposed in turn. Below BASE columns the unblocked kernel decomposes a panel in place.
Pivots are the first nonzero entries, column by column, as plain Gaussian elimination
would take them: the pivot columns are the column rank profile, so the reduced form is the
unique rref.
"""
import numpy as np

from ffcode._ext import echelon as _kernel
from ffcode._matmul import matmul_into

BASE = 64           # columns (or rows) below which the unblocked kernel decomposes a panel
TRIANGLE = 64       # triangular solves of this order or less are one kernel call


def _lu(p: int, M: np.ndarray, r0: int, c0: int, c1: int):
    """LU of M[r0:, c0:c1] in place, those columns only: (rank, pivot columns, row order).

    The row order (indices into M[r0:]) is applied to the columns c0:c1 of M[r0:]; the
    caller carries it to the others.
    """
    rows, width = M.shape[0] - r0, c1 - c0
    if width <= BASE or rows <= BASE:
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
    solve_lower_unit(p, M[r0:r0 + rank][:, pivots], top)
    below = M[r0 + rank:]
    if below.shape[0]:
        matmul_into(p, below[:, pivots], top, below[:, start:stop], accumulate=True,
                    negate=True)


def solve_lower_unit(p: int, L: np.ndarray, B: np.ndarray) -> None:
    """B <- L^-1 B in place, L unit lower triangular (diagonal and above ignored)."""
    n = L.shape[0]
    if n <= TRIANGLE:
        _kernel.solve_lower_unit(L, B, p)
        return
    h = n // 2
    solve_lower_unit(p, L[:h, :h], B[:h])
    matmul_into(p, L[h:, :h], B[:h], B[h:], accumulate=True, negate=True)
    solve_lower_unit(p, L[h:, h:], B[h:])


def solve_upper(p: int, U: np.ndarray, B: np.ndarray) -> None:
    """B <- U^-1 B in place, U upper triangular with a nonzero diagonal (below ignored)."""
    n = U.shape[0]
    if n <= TRIANGLE:
        _kernel.solve_upper(U, B, p)
        return
    h = n // 2
    solve_upper(p, U[h:, h:], B[h:])
    matmul_into(p, U[:h, h:], B[h:], B[:h], accumulate=True, negate=True)
    solve_upper(p, U[:h, :h], B[:h])


def echelon(p: int, M: np.ndarray, ncols: int, reduced: bool):
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
    rank, pivots, order = _lu(p, M, 0, 0, ncols)
    _carry(p, M, 0, rank, pivots, order, ncols, n)
    M[rank:, :ncols] = 0
    if reduced and rank:
        top = M[:rank]
        U = np.ascontiguousarray(top[:, pivots])
        top[np.arange(n) < pivots[:, None]] = 0          # the L factor: U is what remains
        solve_upper(p, U, top)
    return rank, pivots


def solve(p: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with A X = B for square A and 2-D B; numpy.linalg.LinAlgError when A is singular."""
    n = A.shape[0]
    M = np.empty((n, n + B.shape[1]), A.dtype)
    M[:, :n], M[:, n:] = A, B
    rank, pivots, order = _lu(p, M, 0, 0, n)
    if rank < n:
        raise np.linalg.LinAlgError(f"matrix is singular (rank {rank} < {n})")
    _carry(p, M, 0, rank, pivots, order, n, M.shape[1])
    X = M[:, n:]
    solve_upper(p, M[:, :n], X)
    return np.ascontiguousarray(X)
