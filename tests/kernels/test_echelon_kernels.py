"""The unblocked LU and triangular-solve kernels (ffcode._ext.echelon) against plain Python
integer elimination, with values that stress the lazily reduced sums: every update a
product near (p - 1)**2, at the largest prime float64 sums take and over more updates than
a 128-bit sum takes between folds (4 at 2**63 - 25, 64 at 2**61 - 1)."""
import numpy as np
import pytest

import ffcode
from ffcode._ext import echelon

from helpers import PRIMES, rand

def _is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def float_limit(updates):
    """The largest prime whose float64 sums still hold `updates` updates exactly."""
    p = int(((2**53 - 2**24) // updates) ** 0.5) + 1
    while not (_is_prime(p) and (p - 1)**2 * updates + p < 2**53):
        p -= 1
    return p


# The largest primes of the float64 sums for 70 updates (the next prime goes to AVX2
# Shoup rows), and primes of 128-bit sums across their fold counts.
FOLD_PRIMES = [float_limit(70), 2**31 - 1, 2**31 + 11, 4294967291, 2**61 - 1,
               9223372036854775783]


def reference_lu(p, M, ncols=None):
    """(rank, pivots, order, LU) by the kernel's rule, on Python ints: pivots in the first
    ncols columns (all by default), rows updated across all of M."""
    M = [[int(x) for x in row] for row in M]
    m, w = len(M), len(M[0]) if M else 0
    order, pivots, r = list(range(m)), [], 0
    for c in range(w if ncols is None else ncols):
        if r == m:
            break
        i = next((i for i in range(r, m) if M[i][c]), None)
        if i is None:
            continue
        M[i], M[r], order[i], order[r] = M[r], M[i], order[r], order[i]
        inv = pow(M[r][c], -1, p)
        for j in range(r + 1, m):
            if M[j][c]:
                l = M[j][c] * inv % p
                M[j][c] = l
                for k in range(c + 1, w):
                    M[j][k] = (M[j][k] - l * M[r][k]) % p
        pivots.append(c)
        r += 1
    return r, pivots, order, M


def kernel_lu(F, M, ncols=-1):
    M = np.array(M, F.dtype)
    order, pivots = np.arange(M.shape[0]), np.empty(min(M.shape), np.intp)
    rank = echelon.lu(M, F.p, order, pivots, ncols)
    return rank, list(pivots[:rank]), list(order), M


def extreme(p, n, seed):
    """Entries p - 1 and 1 mostly: multipliers and U entries near p - 1."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((n, n)) < 0.8, p - 1, 1).astype(np.uint64)


@pytest.mark.parametrize("p", PRIMES + [2**31 + 11])
@pytest.mark.parametrize("shape, rank", [((9, 9), None), ((12, 30), None), ((40, 7), None),
                                         ((25, 25), 6)])
def test_lu_kernel_matches_elimination(p, shape, rank):
    F = ffcode.GF(p)
    M = rand(p, shape, 3)
    if rank is not None:
        M = F.matmul(rand(p, (shape[0], rank), 4).astype(F.dtype),
                     rand(p, (rank, shape[1]), 5).astype(F.dtype))
    got = kernel_lu(F, M)
    expected = reference_lu(p, M)
    assert got[:3] == expected[:3]
    assert got[3].tolist() == expected[3]


@pytest.mark.parametrize("p", FOLD_PRIMES)
@pytest.mark.parametrize("ncols", [70, 40])
def test_lu_kernel_extreme_values(p, ncols):
    """70 x 70 (every column a pivot column) and pivots in the first 40 columns only, the
    others carried along (their lazy sums written back at the end)."""
    F = ffcode.GF(p)
    M = extreme(p, 70, 1)
    got, expected = kernel_lu(F, M, ncols), reference_lu(p, M, ncols)
    assert got[:3] == expected[:3]
    assert got[3].tolist() == expected[3]


@pytest.mark.parametrize("p", PRIMES)
def test_lu_kernel_pivot_columns(p):
    """Pivots searched in the first columns, the rows updated across the rest; rows past
    the rank hold the rest's Schur complement."""
    F = ffcode.GF(p)
    M = np.concatenate([F.matmul(rand(p, (20, 5), 6).astype(F.dtype),
                                 rand(p, (5, 12), 7).astype(F.dtype)),
                        rand(p, (20, 18), 8).astype(F.dtype)], axis=1)
    got, expected = kernel_lu(F, M, 12), reference_lu(p, M, 12)
    assert got[:3] == expected[:3]
    assert got[3].tolist() == expected[3]
    assert got[0] == min(5, p) or p <= 3


def reference_lower_unit(p, L, B):
    X = [[int(x) for x in row] for row in B]
    for i in range(len(X)):
        for k in range(i):
            X[i] = [(a - int(L[i][k]) * b) % p for a, b in zip(X[i], X[k])]
    return X


def reference_upper(p, U, B):
    X = [[int(x) for x in row] for row in B]
    for i in reversed(range(len(X))):
        for k in range(i + 1, len(X)):
            X[i] = [(a - int(U[i][k]) * b) % p for a, b in zip(X[i], X[k])]
        inv = pow(int(U[i][i]), -1, p)
        X[i] = [a * inv % p for a in X[i]]
    return X


@pytest.mark.parametrize("p", FOLD_PRIMES + [65521, 2])
@pytest.mark.parametrize("n, width", [(70, 5), (3, 1030), (1, 4)])
def test_triangular_kernels_extreme_values(p, n, width):
    """L and U's entries 1 (every update adds p - 1 times a row), B's mostly p - 1, more
    columns than a pass takes (1030): against Python integers."""
    F = ffcode.GF(p)
    T = np.ones((n, n), F.dtype)
    B = np.full((n, width), p - 1, F.dtype)
    B[::2, ::3] = 1
    X = B.copy()
    echelon.solve_lower_unit(T, X, p)
    assert X.tolist() == reference_lower_unit(p, T.tolist(), B.tolist())
    X = B.copy()
    echelon.solve_upper(T, X, p)
    assert X.tolist() == reference_upper(p, T.tolist(), B.tolist())


def test_kernels_refuse_what_does_not_fit():
    F = ffcode.GF(65521)
    M = F.random((4, 6), seed=1)
    with pytest.raises(ValueError, match="permutation"):
        echelon.lu(M, F.p, np.arange(3), np.empty(4, np.intp))
    with pytest.raises(ValueError, match="contiguous"):
        echelon.lu(M[:, ::2], F.p, np.arange(4), np.empty(4, np.intp))
    with pytest.raises(ValueError, match="square"):
        echelon.solve_upper(M, M.copy(), F.p)
    with pytest.raises(ValueError, match="contiguous"):
        echelon.solve_lower_unit(M[:, :4], M[:, ::2].copy()[:, ::2], F.p)
    assert echelon.lu(M[:0], F.p, np.arange(0), np.empty(0, np.intp)) == 0
