"""Products with few columns: matmul's dot-product kernel (ext/matvec.pyx, dot_rows) against
Python integers and galois, at its fold boundaries with all-(p - 1) operands, in every mode,
with strided operands, and on both sides of matmul's switch to it."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import ffcode
from ffcode import _matmul
from ffcode._ext import matvec

from helpers import PRIMES, assert_field_array, layouts, obj_matmul, rand, to_galois

# Beside the suite's primes (whose largest, 2**63 - 25, folds every 4 terms): just above 2**31
# (uint32 elements, 128-bit sums) and a prime just below 2**62 (a fold every 16 terms).
WIDE_PRIMES = [2**31 + 11, 2**62 - 57]
CHUNK = 2048        # matvec's inner terms per pass (sums of passes add up unfolded)
ROW_BLOCK = 64      # matvec's rows per pass


def dtype_of(p):
    return np.uint32 if p < 2**32 else np.uint64


def dot_rows(p, A, B, out=None, mode=0):
    out = np.zeros((A.shape[0], B.shape[1]), dtype_of(p)) if out is None else out
    matvec.dot_rows(A, B, out, p, mode)
    return out


def full(p, shape):
    return np.full(shape, p - 1, dtype_of(p))


@pytest.mark.parametrize("p", PRIMES + WIDE_PRIMES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 7, 2), (5, 33, 3), (2, 101, 1), (4, 1000, 5),
                                   (2, CHUNK + 17, 3), (ROW_BLOCK + 3, 9, 2), (6, 16, 16)],
                         ids=lambda s: "x".join(map(str, s)))
def test_exact(p, shape):
    """Random operands against Python integers, across the kernel's passes and row blocks."""
    m, k, n = shape
    A, B = rand(p, (m, k), k), rand(p, (k, n), k + 1)
    got = dot_rows(p, A, B)
    assert_field_array(ffcode.GF(p), got, obj_matmul(p, A, B))
    if k <= 101:
        assert_field_array(ffcode.GF(p), got, to_galois(p, A) @ to_galois(p, B))


@pytest.mark.parametrize("shape", [(0, 3, 2), (3, 0, 2), (3, 4, 0), (0, 0, 0), (1, 0, 1)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("p", [65521, 2**61 - 1])
def test_empty(p, shape):
    """m, k or n = 0: an empty out, or zeros (k = 0); out + 0 and out - 0 leave out alone."""
    m, k, n = shape
    A, B = rand(p, (m, k), 1), rand(p, (k, n), 2)
    assert np.array_equal(dot_rows(p, A, B, np.full((m, n), 7, dtype_of(p))), np.zeros((m, n)))
    for mode in (1, -1):
        out = np.full((m, n), 7, dtype_of(p))
        assert np.array_equal(dot_rows(p, A, B, out, mode), np.full((m, n), 7))


def test_fold_counts_are_the_largest_safe():
    """The fold count is as large as the lane width allows and no larger, from the bound
    on a folded lane (Python integers, independently of the kernel's 128-bit arithmetic)."""
    for p in PRIMES + WIDE_PRIMES:
        lanes, fold = matvec.folding(p)
        square = (p - 1) ** 2
        if p < 2**31:
            width, after = 2**64, 2**62 - 1 + 3 * (2**62 % p)
        elif p == 2**61 - 1:
            width, after = 2**128, 2**61 - 1 + 2**67 - 1
        else:
            width, after = 2**128, 2**64 + p - 2
        assert (lanes, after + fold * square < width) == (16 if p < 2**31 else 4, True)
        assert fold == 2**40 or after + (fold + 1) * square >= width, p
    assert [matvec.folding(p)[1] for p in (2**31 - 1, 2**61 - 1, 2**62 - 57, 2**63 - 25)] \
        == [3, 64, 16, 4]


@pytest.mark.parametrize("p", PRIMES + WIDE_PRIMES)
def test_worst_case_at_the_fold(p):
    """All-(p - 1) operands, whose every product is the largest, (p - 1)**2 = 1 mod p: each
    entry is k mod p. k at, one below and one above the terms before the first fold
    (lanes * fold), twice that, a whole pass and one more, where the fold is ever reached."""
    lanes, fold = matvec.folding(p)
    first = lanes * fold
    ks = {1, lanes - 1, lanes, lanes + 1, CHUNK - 1, CHUNK, CHUNK + 1}
    if first <= 10**5:
        ks |= {first - 1, first, first + 1, 2 * first + lanes - 1, first + lanes + 1}
    for k in sorted(ks):
        got = dot_rows(p, full(p, (3, k)), full(p, (k, 2)))
        assert np.array_equal(got, np.full((3, 2), k % p)), (p, k)


@pytest.mark.parametrize("p", [2**31 - 1, 2**32 - 5, 2**61 - 1, 2**63 - 25])
def test_worst_case_huge_k(p):
    """Three million inner terms of (p - 1)**2: many passes of sums and folds."""
    k = 3 * 10**6 + 7
    got = dot_rows(p, full(p, (1, k)), full(p, (k, 1)))
    assert got[0, 0] == k % p


@pytest.mark.parametrize("p", [3, 2**31 - 1, 2**32 - 5, 2**61 - 1, 2**63 - 25])
def test_modes_and_layouts(p):
    """out = / += / -= A @ B into a strided view of a larger array (the rest untouched), with
    C, Fortran, strided, reversed and read-only A and B."""
    m, k, n = 5, 70, 3
    A0, B0 = rand(p, (m, k), 3), rand(p, (k, n), 4)
    A0[0] = p - 1
    prod = obj_matmul(p, A0, B0)
    big = rand(p, (2 * m, 3 * n + 1), 5)
    for A in layouts(A0, seed=6).values():
        for B in layouts(B0, seed=7).values():
            for mode in (0, 1, -1):
                target = big.copy()
                out = target[::2, 1::3]
                before = out.astype(object)
                dot_rows(p, A, B, out, mode)
                expected = prod if mode == 0 else (before + mode * prod) % p
                assert np.array_equal(out.astype(object), expected)
                rest = np.ones(big.shape, bool)
                rest[::2, 1::3] = False
                assert np.array_equal(target[rest], big[rest])


def test_refuses_what_does_not_fit():
    A, B, out = rand(7, (3, 4), 1), rand(7, (4, 2), 2), np.zeros((3, 2), np.uint32)
    for args in [(A, B.T.copy(), out, 7, 0), (A, B, out[:, :1], 7, 0), (A, B, out, 7, 2),
                 (A, B, out, 1, 0), (A, B, out, 2**32 + 15, 0), (A, B, out, 2**63 + 29, 0)]:
        with pytest.raises(ValueError, match="dot_rows"):
            matvec.dot_rows(*args)
    with pytest.raises(ValueError, match="out of range"):
        matvec.folding(2**63 + 29)


@st.composite
def product_case(draw):
    p = draw(st.sampled_from(PRIMES + WIDE_PRIMES))
    dtype = dtype_of(p)
    m, k, n = draw(st.integers(0, 6)), draw(st.integers(0, 90)), draw(st.integers(0, 4))
    elements = st.one_of(st.integers(0, p - 1), st.sampled_from([0, 1, p - 1, p // 2]))
    A = draw(hnp.arrays(dtype, (m, k), elements=elements))
    B = draw(hnp.arrays(dtype, (k, n), elements=elements))
    return p, A, B


@given(case=product_case())
def test_hypothesis(case):
    p, A, B = case
    assert_field_array(ffcode.GF(p), dot_rows(p, A, B), obj_matmul(p, A, B))


# -- matmul's switch to dot_rows ---------------------------------------------------------------

@pytest.fixture
def dot_rows_calls(monkeypatch):
    """Records (m, k, n) of every call matmul makes to dot_rows."""
    calls = []

    def spy(A, B, out, p, mode, *check, real=matvec.dot_rows):
        calls.append((A.shape[0], A.shape[1], B.shape[1]))
        return real(A, B, out, p, mode, *check)

    monkeypatch.setattr(matvec, "dot_rows", spy)
    return calls


def switch_cases(p):
    """(m, k, n) on both sides of every threshold of the rule: the widest n served and one
    more, for short k (where rowcomb serves) and longer."""
    cases = [(m, k, n) for m in (1, 9, 70) for k in (1, 3, 8, 40, 300)
             for n in {1, 2, _matmul.few_columns(p, k), _matmul.few_columns(p, k) + 1} - {0}]
    return sorted(set(cases))


@pytest.mark.parametrize("p", PRIMES + WIDE_PRIMES)
def test_matmul_on_both_sides_of_the_switch(p, dot_rows_calls, monkeypatch):
    """F.matmul calls dot_rows exactly where _dot_rows_serves says, and gives the same exact
    products as the other paths (forced) on both sides, vectors included."""
    F = ffcode.GF(p)
    cases = switch_cases(p)
    served = [c for c in cases if _matmul._dot_rows_serves(p, *c)]
    assert served and len(served) < len(cases)
    for m, k, n in cases:
        A, B = rand(p, (m, k), m + k), rand(p, (k, n), n + k)
        dot_rows_calls.clear()
        got = F.matmul(A, B)
        assert_field_array(F, got, obj_matmul(p, A, B))
        assert dot_rows_calls == ([(m, k, n)] if (m, k, n) in served else [])
        if n == 1:
            assert_field_array(F, F.matmul(A, B[:, 0]), obj_matmul(p, A, B)[:, 0])
    monkeypatch.setattr(_matmul, "_dot_rows_serves", lambda *shape: True)
    for m, k, n in cases:
        A, B = rand(p, (m, k), m + k), rand(p, (k, n), n + k)
        assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", [65521, 2**61 - 1])
@pytest.mark.parametrize("negate", [False, True])
def test_matmul_into_modes(p, negate):
    """matmul_into's out += / -= A @ B through dot_rows into a strided view."""
    A, B = rand(p, (7, 50), 1), rand(p, (50, 2), 2)
    assert _matmul._dot_rows_serves(p, 7, 50, 2)
    big = rand(p, (14, 7), 3)
    out = big[::2, 1::3]
    before = out.astype(object)
    _matmul.matmul_into(p, A, B, out, accumulate=True, negate=negate)
    prod = obj_matmul(p, A, B)
    assert np.array_equal(out.astype(object), (before - prod if negate else before + prod) % p)


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**32 - 5, 2**61 - 1])
@pytest.mark.parametrize("mode", [0, 1, -1])
def test_column_major_a_goes_transposed(p, mode):
    """A column-major A (a transposed array) of TRANSPOSED_ROWS rows or more with few
    columns of B is combined row by row as the transposed product, exactly, in every mode."""
    F = ffcode.GF(p)
    rng = np.random.default_rng(p % 1000 + mode)
    for m, k, n in [(_matmul.TRANSPOSED_ROWS, 300, 1), (40, 5000, 2), (15, 70, 1)]:
        X = F.random((k, m), rng)
        B = F.random((k, n), rng)
        out = F.random((m, n), rng)
        expected = (np.array(out, dtype=object) * (mode != 0) +
                    (1 if mode >= 0 else -1) * np.array(X.T, dtype=object).dot(
                        np.array(B, dtype=object))) % p
        _matmul.matmul_into(p, X.T, B, out, accumulate=mode != 0, negate=mode < 0)
        assert np.array_equal(out.astype(object), expected), (m, k, n)


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**32 - 5, 2**61 - 1])
def test_matmul_checks_a_as_it_reads_it(p):
    """Where F.matmul lets the dot products check A (A of the field's dtype, few columns),
    one element >= p anywhere (each slab, the last row, the last column) is refused with the
    elements check's message; dot_rows(check_a=True) says False and nothing else changes."""
    F = ffcode.GF(p)
    A, x = rand(p, (70, 5000), 1), rand(p, (5000,), 2)
    assert _matmul.checks_left(p, A, 1)
    for i, t in [(0, 0), (3, 2047), (3, 2048), (69, 4999), (40, 1234)]:
        bad = A.copy()
        bad[i, t] = p + (i % 2) if F.dtype == np.uint64 or p + 1 < 2**32 else p
        with pytest.raises(ValueError, match=rf"Argument 'A' has elements >= p = {p}"):
            F.matmul(bad, x)
        out = np.empty((70, 1), F.dtype)
        assert matvec.dot_rows(bad, x[:, None], out, p, 0, True) is False
    out = np.empty((70, 1), F.dtype)
    assert matvec.dot_rows(A, x[:, None], out, p, 0, True) is True
    assert_field_array(F, out[:, 0], obj_matmul(p, A, x[:, None])[:, 0])
    assert_field_array(F, F.matmul(A, x), obj_matmul(p, A, x[:, None])[:, 0])
    strided = np.repeat(A, 2, axis=1)[:, ::2]           # copied a slab at a time
    strided[5, 4000] = p
    with pytest.raises(ValueError, match="has elements >= p"):
        F.matmul(strided, x)
