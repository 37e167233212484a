"""F.rank, F.rref, F.solve and F.matinv: against galois, and (for the recursive LU on
larger matrices) against python-flint's exact nmod_mat."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import ffcode
from ffcode import _linalg

from helpers import (PRIMES, as_objects, assert_field_array, flint_product, invertible,
                           layouts, low_rank, obj_matmul, rand, to_flint, to_galois)


def galois_rref(p, A):
    if A.size == 0:
        return np.zeros(A.shape, dtype=object)
    return to_galois(p, A).row_reduce()


def galois_rank(p, A):
    if A.size == 0:
        return 0
    return int(np.linalg.matrix_rank(to_galois(p, A)))


def with_zero_columns(A, cols):
    A = A.copy()
    A[:, cols] = 0
    return A


# -- small matrices against galois -------------------------------------------------------------

SMALL = {
    "0x0": lambda p: rand(p, (0, 0), 0),
    "0x4": lambda p: rand(p, (0, 4), 0),
    "4x0": lambda p: rand(p, (4, 0), 0),
    "1x1": lambda p: rand(p - 1, (1, 1), 1) + 1,
    "1x1zero": lambda p: np.zeros((1, 1), np.uint32),
    "1x5": lambda p: rand(p, (1, 5), 2),
    "5x1": lambda p: rand(p, (5, 1), 3),
    "zeros3x4": lambda p: np.zeros((3, 4), np.uint64),
    "wide3x7": lambda p: rand(p, (3, 7), 4),
    "tall7x3": lambda p: rand(p, (7, 3), 5),
    "square10": lambda p: rand(p, (10, 10), 6),
    "tall16x9": lambda p: rand(p, (16, 9), 7),
    "wide9x16": lambda p: rand(p, (9, 16), 8),
    "rank4_12x12": lambda p: low_rank(p, 12, 12, 4, 9),
    "rank3_14x10_zero_cols": lambda p: with_zero_columns(low_rank(p, 14, 10, 3, 10), [0, 4, 9]),
    "dup_rows": lambda p: np.repeat(rand(p, (4, 8), 11), 3, axis=0),
    "identity6": lambda p: np.eye(6, dtype=np.uint32),
}


@pytest.mark.parametrize("case", SMALL)
def test_rank_rref_small(field, case):
    p = field.p
    A = np.asarray(SMALL[case](p)).astype(field.dtype)
    rank = field.rank(A)
    assert type(rank) is int
    assert rank == galois_rank(p, A)
    R = field.rref(A)
    assert_field_array(field, R, galois_rref(p, A))
    assert np.count_nonzero(R.any(axis=1)) == rank


@pytest.mark.parametrize("case", ["wide3x7", "tall16x9", "rank3_14x10_zero_cols"])
def test_rank_rref_layouts(field, case):
    p = field.p
    A = np.asarray(SMALL[case](p)).astype(field.dtype)
    R, rank = galois_rref(p, A), galois_rank(p, A)
    for name, X in layouts(A, seed=3).items():
        assert field.rank(X) == rank, name
        assert_field_array(field, field.rref(X), R)
    # other integer dtypes and nested lists
    assert field.rank(A.astype(np.int64)) == rank
    assert_field_array(field, field.rref(A.tolist()), R)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
@pytest.mark.parametrize("bshape", ["vector", "n x 0", "n x 1", "n x 4"])
def test_solve_small(field, n, bshape):
    p = field.p
    A = invertible(p, n, n)
    B = rand(p, {"vector": (n,), "n x 0": (n, 0), "n x 1": (n, 1), "n x 4": (n, 4)}[bshape],
             (n, 5))
    X = field.solve(A, B)
    assert X.shape == B.shape
    if n and B.size:
        assert_field_array(field, X, np.linalg.solve(to_galois(p, A), to_galois(p, B)))
    else:
        assert_field_array(field, X, np.zeros(B.shape, dtype=object))
    assert np.array_equal(obj_matmul(p, A, X), as_objects(B))


def test_solve_layouts(field):
    """C-ordered, strided, reversed and read-only A and B (Fortran-ordered B included)."""
    p = field.p
    A, B = invertible(p, 9, 1), rand(p, (9, 4), 2)
    expected = np.linalg.solve(to_galois(p, A), to_galois(p, B))
    for name, la in layouts(A, seed=1).items():
        if name == "F":
            continue       # test_solve_fortran_ordered_A
        for lb in layouts(B, seed=2).values():
            assert_field_array(field, field.solve(la, lb), expected)
        for lb in layouts(B[:, 0], seed=4).values():
            assert_field_array(field, field.solve(la, lb), expected[:, 0])
    assert_field_array(field, field.solve(A.astype(np.int64).tolist(), B.astype(np.int64)),
                       expected)


@pytest.mark.parametrize("bkind", ["C matrix", "F matrix", "strided matrix", "one column",
                                   "vector", "strided vector"])
def test_solve_fortran_ordered_A(bkind):
    """A Fortran-ordered A (e.g. a transposed matrix) works with every kind of B."""
    for p in PRIMES:
        F = ffcode.GF(p)
        A, B = invertible(p, 9, 1), rand(p, (9, 4), 2)
        expected = as_objects(np.linalg.solve(to_galois(p, A), to_galois(p, B)))
        b, exp = {
            "C matrix": (B, expected),
            "F matrix": (np.asfortranarray(B), expected),
            "strided matrix": (layouts(B)["strided"], expected),
            "one column": (B[:, :1].copy(), expected[:, :1]),
            "vector": (B[:, 0].copy(), expected[:, 0]),
            "strided vector": (B[:, 0], expected[:, 0]),
        }[bkind]
        assert_field_array(F, F.solve(np.asfortranarray(A), b), exp)
        assert_field_array(F, F.solve(np.ascontiguousarray(A.T).T, b), exp)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 15])
def test_matinv_small(field, n):
    p = field.p
    A = invertible(p, n, n + 100)
    X = field.matinv(A)
    assert_field_array(field, X, np.linalg.inv(to_galois(p, A)) if n
                       else np.zeros((0, 0), dtype=object))
    assert np.array_equal(obj_matmul(p, A, X), np.eye(n, dtype=np.int64).astype(object))
    assert np.array_equal(obj_matmul(p, X, A), np.eye(n, dtype=np.int64).astype(object))


def test_matinv_layouts(field):
    p = field.p
    A = invertible(p, 8, 3)
    expected = np.linalg.inv(to_galois(p, A))
    for X in layouts(A, seed=5).values():
        assert_field_array(field, field.matinv(X), expected)


def test_linalg_inputs_are_not_modified(field):
    p = field.p
    for A in [rand(p, (12, 9), 1), invertible(p, 130, 2), low_rank(p, 120, 110, 20, 3)]:
        A0 = A.copy()
        field.rank(A)
        R = field.rref(A)
        assert not np.shares_memory(R, A)
        assert np.array_equal(A, A0)
    A = invertible(p, 100, 4)
    B = rand(p, (100, 3), 5)
    A0, B0 = A.copy(), B.copy()
    field.solve(A, B)
    field.solve(A, B[:, 0])
    field.matinv(A)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)


def test_rref_is_idempotent(field):
    p = field.p
    for A in [rand(p, (6, 9), 1), low_rank(p, 130, 140, 50, 2)]:
        R = field.rref(A)
        assert_field_array(field, field.rref(R), R)
        assert field.rank(R) == field.rank(A)


@st.composite
def small_matrix(draw):
    p = draw(st.sampled_from(PRIMES))
    dtype = np.uint32 if p < 2**32 else np.uint64
    m, n = draw(st.integers(0, 7)), draw(st.integers(0, 7))
    r = draw(st.integers(0, min(m, n)))
    seed = draw(st.integers(0, 2**32))
    if draw(st.booleans()):    # low rank, so that p > 3 sees rank-deficient matrices too
        A = low_rank(p, m, n, r, seed)
    else:
        A = draw(hnp.arrays(dtype, (m, n), elements=st.sampled_from(
            sorted({0, 1, p - 1, p // 2}))))
    return p, A.astype(dtype)


@given(case=small_matrix())
def test_rank_rref_hypothesis(case):
    p, A = case
    F = ffcode.GF(p)
    assert F.rank(A) == galois_rank(p, A)
    assert_field_array(F, F.rref(A), galois_rref(p, A))


@st.composite
def small_system(draw):
    p = draw(st.sampled_from(PRIMES))
    n = draw(st.integers(0, 6))
    seed = draw(st.integers(0, 2**32))
    A = invertible(p, n, seed)
    if draw(st.booleans()):     # permute the rows so that pivoting is needed
        A = A[np.random.default_rng(seed).permutation(n)]
    B = rand(p, draw(st.sampled_from([(n,), (n, 1), (n, 3)])), seed + 1)
    return p, A, B


@given(case=small_system())
def test_solve_matinv_hypothesis(case):
    p, A, B = case
    F = ffcode.GF(p)
    X = F.solve(A, B)
    Ainv = F.matinv(A)
    if A.size:
        assert_field_array(F, X, np.linalg.solve(to_galois(p, A), to_galois(p, B)))
        assert_field_array(F, Ainv, np.linalg.inv(to_galois(p, A)))
    assert np.array_equal(obj_matmul(p, A, X), as_objects(B))
    assert np.array_equal(obj_matmul(p, A, Ainv), np.eye(len(A), dtype=np.int64).astype(object))


# -- large matrices: the recursive LU -------------------------------------------------------------


@pytest.fixture(params=["shipped", "deep"])
def panels(request, monkeypatch):
    """The LU and triangular solves with the shipped panel sizes, and with tiny ones, which
    recurse many levels deep on the matrices below (odd sizes: uneven halves)."""
    if request.param == "deep":
        monkeypatch.setattr(_linalg, "BASE_31", 7)
        monkeypatch.setattr(_linalg, "BASE_WIDE", 7)
        monkeypatch.setattr(_linalg, "TRIANGLE_31", 5)
        monkeypatch.setattr(_linalg, "TRIANGLE_WIDE", 5)
    return request.param


def _zero_cols_200(p):
    A = rand(p, (200, 200), 20)
    cols = list(range(70)) + list(range(75, 200, 5)) + list(range(128, 140))
    return with_zero_columns(A, cols)      # the first panel has no pivot at all


def _dup_rows(p):
    A = rand(p, (75, 140), 21)
    perm = np.random.default_rng(22).permutation(75)
    return np.concatenate([A, A[perm]])


def _deficient_zero_cols(p):
    B = low_rank(p, 200, 180, 30, 23)
    A = np.zeros((200, 220), B.dtype)
    keep = np.sort(np.random.default_rng(24).choice(220, 180, replace=False))
    A[:, keep] = B
    return A


def _zero_rows_first(p):
    A = rand(p, (200, 150), 25)
    A[:120] = 0
    A[:120:7] = rand(p, (18, 150), 26)
    return A


def _permutation(p):
    return np.eye(130, dtype=np.uint32)[np.random.default_rng(27).permutation(130)]


def _reversed_triangular(p):
    # pivots of column j in row n - 1 - j: a row swap at every step, across the whole matrix
    A = np.triu(rand(p, (160, 160), 28))
    A[np.arange(160), np.arange(160)] = 1
    return A[::-1].copy()


LARGE = {
    "square97": lambda p: rand(p, (97, 97), 10),
    "square130": lambda p: rand(p, (130, 130), 11),
    "rank30_200x180": lambda p: low_rank(p, 200, 180, 30, 13),     # (200x30) @ (30x180)
    "rank100_130x130": lambda p: low_rank(p, 130, 130, 100, 14),
    "wide130x400": lambda p: rand(p, (130, 400), 15),
    "wide100x300": lambda p: rand(p, (100, 300), 16),              # full row rank early
    "tall400x130": lambda p: rand(p, (400, 130), 17),
    "tall193x129": lambda p: low_rank(p, 193, 129, 120, 18),
    "zero_cols200": _zero_cols_200,
    "dup_rows150x140": _dup_rows,
    "rank30_zero_cols200x220": _deficient_zero_cols,
    "zero_rows_first200x150": _zero_rows_first,
    "permutation130": _permutation,
    "reversed_triangular160": _reversed_triangular,
    # one panel: at most 96 rows or pivot columns
    "unblocked_wide96x800": lambda p: low_rank(p, 96, 800, 90, 29),
    "unblocked_tall1000x90": lambda p: rand(p, (1000, 90), 30),
}


def flint_rref(p, A):
    R, rank = to_flint(p, A).rref()
    return as_objects(R), rank


@pytest.mark.parametrize("case", LARGE)
def test_rank_rref_blocked(field, case, panels):
    p = field.p
    A = np.asarray(LARGE[case](p)).astype(field.dtype)
    R_ref, rank_ref = flint_rref(p, A)
    assert field.rank(A) == rank_ref
    if case.startswith("rank30"):
        assert rank_ref == 30 or p <= 3
    R = field.rref(A)
    assert_field_array(field, R, R_ref)
    if p == 2:   # galois (its GF(2) special case) is affordable here
        assert_field_array(field, R, galois_rref(p, A))
        assert rank_ref == galois_rank(p, A)


@pytest.mark.parametrize("case", ["rank30_zero_cols200x220"])
def test_rank_rref_blocked_layouts(field, case):
    p = field.p
    A = np.asarray(LARGE[case](p)).astype(field.dtype)
    R_ref, rank_ref = flint_rref(p, A)
    for name in ("F", "strided", "reversed", "read-only"):
        X = layouts(A, seed=6)[name]
        assert field.rank(X) == rank_ref
        assert_field_array(field, field.rref(X), R_ref)
    assert field.rank(A.T) == rank_ref


@pytest.mark.parametrize("n", [97, 160])
def test_solve_and_matinv_blocked(field, n, panels):
    p = field.p
    A = invertible(p, n, n)
    A[:, 5] = rand(p, n, 1)      # less structured: still invertible almost surely...
    if to_flint(p, A).rank() < n:
        A = invertible(p, n, n)  # ... and otherwise back to the triangular product
    FA = to_flint(p, A)
    B = rand(p, (n, 7), 2)
    X = field.solve(A, B)
    assert_field_array(field, X, as_objects(FA.solve(to_flint(p, B))))
    assert np.array_equal(flint_product(p, A, X), as_objects(B))
    x = field.solve(np.asfortranarray(A), B[:, 3])     # [A | b] Fortran-ordered, blocked
    assert_field_array(field, x, X[:, 3])
    Ainv = field.matinv(A)
    assert_field_array(field, Ainv, as_objects(FA.inv()))
    assert np.array_equal(flint_product(p, A, Ainv), np.eye(n, dtype=np.int64).astype(object))
    if p == 2:
        assert_field_array(field, Ainv, np.linalg.inv(to_galois(p, A)))


@pytest.mark.parametrize("n, ncols", [(100, 300), (96, 700)])
def test_solve_wide_right_hand_side(field, n, ncols, panels):
    """Many right-hand sides: the carried LU and the triangular solves run over a matrix
    [A | B] much wider than A."""
    p = field.p
    A = invertible(p, n, 40)
    A[:, 0], A[0, :] = A[:, -1], A[-1, :]   # scramble the triangular structure a little
    if to_flint(p, A).rank() < n:
        A = invertible(p, n, 40)
    B = layouts(rand(p, (n, ncols), 41), seed=3)["strided"]
    X = field.solve(A, B)
    assert_field_array(field, X, as_objects(to_flint(p, A).solve(to_flint(p, B))))
