"""Echelon forms over GF(p), blocked so that almost all work is matrix products.

Columns are taken in panels. The unblocked kernel finds the panel's pivots on a copy of the
active rows; the pivot rows are moved up and normalised by the inverse of their pivot block
(identity on the pivot columns), and one product per panel clears those columns from the
rows below (and, for the reduced form, above). Pivots come out exactly as column-by-column
elimination would choose them, so the reduced form is the unique rref.
"""
import numpy as np

from ffcode._ext import echelon as _kernel
from ffcode._matmul import matmul_into

PANEL = 64        # columns per panel
UNBLOCKED = 96    # below this many rows or pivot columns the plain kernel is faster


def _unblocked(p: int, M: np.ndarray, ncols: int, reduced: bool):
    size = min(M.shape[0], ncols)
    rows, cols = np.empty(size, np.intp), np.empty(size, np.intp)
    rank = _kernel.row_echelon(M, p, ncols, reduced, rows, cols)
    return rank, rows[:rank], cols[:rank]


def _inverse_small(p: int, S: np.ndarray) -> np.ndarray:
    s = S.shape[0]
    aug = np.zeros((s, 2 * s), S.dtype)
    aug[:, :s] = S
    aug[np.arange(s), s + np.arange(s)] = 1
    rank, _, _ = _unblocked(p, aug, s, True)
    if rank != s:
        raise AssertionError("pivot block of full rank by construction")
    return aug[:, s:]


def _move_rows_up(M: np.ndarray, rows: np.ndarray, top: int) -> None:
    """Swap rows so that M[rows[t]] lands at M[top + t], in order."""
    at = np.arange(M.shape[0])        # at[i]: original index of the row now at position i
    where = np.arange(M.shape[0])     # where[j]: current position of original row j
    for t, row in enumerate(rows):
        src, dst = where[row], top + t
        if src != dst:
            M[[src, dst]] = M[[dst, src]]
            at[src], at[dst] = at[dst], at[src]
            where[at[src]], where[at[dst]] = src, dst


def echelon(p: int, M: np.ndarray, ncols: int, reduced: bool):
    """Row echelon form of a C-contiguous M in place, pivots in its first ncols columns.

    Pivot rows have a leading 1; with reduced, pivot columns are zero elsewhere too.
    Returns (rank, pivot columns).
    """
    m = M.shape[0]
    if min(m, ncols) <= UNBLOCKED:
        rank, _, cols = _unblocked(p, M, ncols, reduced)
        return rank, cols
    r, pivots = 0, []
    for c in range(0, ncols, PANEL):
        if r == m:
            break
        w = min(PANEL, ncols - c)
        s, rows, cols = _unblocked(p, np.ascontiguousarray(M[r:, c:c + w]), w, False)
        if s == 0:
            continue
        _move_rows_up(M, rows + r, r)
        pc = cols + c
        top = M[r:r + s, c:]
        top[...] = _product(p, _inverse_small(p, M[r:r + s][:, pc]), top)
        below = M[r + s:]
        if below.shape[0]:
            matmul_into(p, below[:, pc], top[:, w:], below[:, c + w:], accumulate=True,
                        negate=True)
            below[:, c:c + w] = 0
        if reduced and r:
            above = M[:r]
            matmul_into(p, above[:, pc], top, above[:, c:], accumulate=True, negate=True)
        pivots.extend(pc)
        r += s
    return r, np.array(pivots, np.intp)


def _product(p: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    out = np.empty((A.shape[0], B.shape[1]), B.dtype)
    matmul_into(p, A, B, out)
    return out


def solve(p: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X with A X = B for square A and 2-D B; numpy.linalg.LinAlgError when A is singular."""
    n = A.shape[0]
    M = np.empty((n, n + B.shape[1]), A.dtype)
    M[:, :n], M[:, n:] = A, B
    rank, _ = echelon(p, M, n, reduced=True)
    if rank < n:
        raise np.linalg.LinAlgError(f"matrix is singular (rank {rank} < {n})")
    return np.ascontiguousarray(M[:, n:])
