"""Short inner dimensions for p < 2**31: matmul's row-combination kernel (ext/rowcomb.pyx) on
both sides of the switch to the BLAS schemes, with worst-case values, accumulate/negate
modes and strided operands."""
import numpy as np
import pytest

import ffcode
from ffcode import _matmul
from ffcode._ext import rowcomb

from helpers import assert_field_array, obj_matmul, rand, to_galois

ROWCOMB_PRIMES = [2, 3, 65521, 1048573, 2**31 - 1]


def takes_rowcomb(p, k):
    """Whether matmul's documented rule sends an inner dimension k to rowcomb."""
    return p < 2**31 and k < _matmul.ROWCOMB_PER_PRODUCT * len(_matmul.scheme(p, k).products)


def combine_takes_rowcomb(p, k, m):
    """F.combine's rule: matmul's, or any k when the output has at most FEW_ROWS rows."""
    return takes_rowcomb(p, k) or p < 2**31 and m <= _matmul.FEW_ROWS


def inner_dimensions(p):
    """1 up to three past the last k that rowcomb serves."""
    last = max(k for k in range(1, 400) if takes_rowcomb(p, k))
    return range(1, last + 4)


def call_rowcomb(A, B, out, p, mode):
    """combine_rows_31 on A, the rows of B, and out."""
    rowcomb.combine_rows_31(A, [np.ascontiguousarray(r) for r in B], out, p, mode)


@pytest.fixture
def rowcomb_calls(monkeypatch):
    """Records the inner dimension of every call matmul makes to combine_rows_31."""
    calls = []
    real = rowcomb.combine_rows_31

    def spy(A, *args):
        calls.append(A.shape[1])
        return real(A, *args)

    monkeypatch.setattr(rowcomb, "combine_rows_31", spy)
    return calls


@pytest.mark.parametrize("p", ROWCOMB_PRIMES)
def test_short_inner_dimensions(p, rowcomb_calls):
    """Random and all-(p-1) operands for every k up to just past the switch: exact, and
    rowcomb runs exactly for the k the rule gives it (so both paths are covered)."""
    F = ffcode.GF(p)
    ks = list(inner_dimensions(p))
    for k in ks:
        rowcomb_calls.clear()
        A, B = rand(p, (5, k), k), rand(p, (k, 37), k + 1000)
        assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))
        full_A, full_B = np.full((3, k), p - 1, F.dtype), np.full((k, 21), p - 1, F.dtype)
        # (p - 1)**2 = 1 mod p, so each entry is k mod p
        assert_field_array(F, F.matmul(full_A, full_B), np.full((3, 21), k % p, dtype=object))
        assert_field_array(F, F.matmul(A, B[:, 3]), obj_matmul(p, A, B[:, 3:4])[:, 0])
        assert rowcomb_calls == ([k] * 3 if takes_rowcomb(p, k) else []), k
    assert takes_rowcomb(p, ks[0]) and not takes_rowcomb(p, ks[-1])


@pytest.mark.parametrize("p", ROWCOMB_PRIMES)
def test_short_inner_dimensions_galois(p):
    """A few sizes against galois, with rows longer than the kernel's column chunk and
    lengths that are not a multiple of the vector width."""
    F = ffcode.GF(p)
    for k, n in [(1, 1), (2, 7), (3, 9), (5, 1100), (11, 2053)]:
        A, B = rand(p, (4, k), k), rand(p, (k, n), n)
        assert_field_array(F, F.matmul(A, B), to_galois(p, A) @ to_galois(p, B))


@pytest.mark.parametrize("p", ROWCOMB_PRIMES)
def test_extreme_values(p):
    """Entries near 0, p/2 and p - 1 mixed, over many columns (the vector lanes and the tail)."""
    F = ffcode.GF(p)
    vals = np.array(sorted(v % p for v in {0, 1, p - 1, p - 2, p // 2, p // 2 + 1}),
                    dtype=F.dtype)
    rng = np.random.default_rng(p % 1000)
    for k in (1, 4, 15):
        A = vals[rng.integers(0, len(vals), (6, k))]
        B = vals[rng.integers(0, len(vals), (k, 1037))]
        assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", ROWCOMB_PRIMES)
@pytest.mark.parametrize("negate", [False, True])
def test_matmul_into_modes(p, negate):
    """out += A @ B and out -= A @ B into a strided view of a larger array (the rest untouched),
    with strided, Fortran and reversed A and B, and out = A @ B into the same view."""
    dtype = np.uint32
    for k in (1, 3, 8):
        A0, B0 = rand(p, (5, k), 1), rand(p, (k, 9), 2)
        A0[0, :] = p - 1
        A0[1, 0] = 0
        A_big, B_big = rand(p, (10, 3 * k), 3), rand(p, (2 * k, 18), 4)
        A_big[::2, ::3] = A0
        B_big[::2, ::2] = B0
        operands = [(A0, B0), (A_big[::2, ::3], B_big[::2, ::2]),
                    (np.asfortranarray(A0), np.asfortranarray(B0)),
                    (A0[::-1, ::-1].copy()[::-1, ::-1], B0[::-1].copy()[::-1])]
        prod = obj_matmul(p, A0, B0)
        for A, B in operands:
            big = rand(p, (10, 27), 5).astype(dtype)
            out = big[::2, ::3]
            assert not out.flags.c_contiguous
            before, untouched = out.astype(object), big.copy()
            _matmul.matmul_into(p, A, B, out, accumulate=True, negate=negate)
            expected = (before - prod) % p if negate else (before + prod) % p
            assert np.array_equal(out.astype(object), expected), (k, A.strides)
            mask = np.ones(big.shape, bool)
            mask[::2, ::3] = False
            assert np.array_equal(big[mask], untouched[mask])
            _matmul.matmul_into(p, A, B, out)
            assert np.array_equal(out.astype(object), prod)
            assert np.array_equal(big[mask], untouched[mask])


@pytest.mark.parametrize("p", [3, 2**31 - 1])
def test_matmul_into_fortran_out(p):
    """A Fortran-ordered out (not C-contiguous) accumulates too."""
    A, B = rand(p, (6, 4), 6), rand(p, (4, 5), 7)
    out = np.asfortranarray(rand(p, (6, 5), 8))
    before = out.astype(object)
    _matmul.matmul_into(p, A, B, out, accumulate=True)
    assert np.array_equal(out.astype(object), (before + obj_matmul(p, A, B)) % p)
    with pytest.raises(ValueError, match="accumulate"):
        _matmul.matmul_into(p, A, B, out, negate=True)


@pytest.mark.parametrize("p", [2, 65521, 2**31 - 1])
@pytest.mark.parametrize("mode", [0, 1, -1])
def test_combine_rows_31_direct(p, mode):
    """The kernel itself in each mode, with a strided A."""
    A_big = rand(p, (8, 9), 1)
    A = A_big[::2, ::3]
    B = rand(p, (3, 1030), 2)
    out = rand(p, (4, 1030), 3)
    before = out.astype(object)
    call_rowcomb(A, B, out, p, mode)
    expected = (before * abs(mode) + mode * obj_matmul(p, A, B)) % p if mode else \
        obj_matmul(p, A, B)
    assert np.array_equal(out.astype(object), expected)


@pytest.mark.parametrize("mode", [0, 1, -1])
def test_combine_rows_31_empty(mode):
    """Zero columns and zero rows are no-ops that leave out as it is (and do not crash)."""
    p = 65521
    out = np.empty((4, 0), np.uint32)
    call_rowcomb(rand(p, (4, 3), 1), np.empty((3, 0), np.uint32), out, p, mode)
    assert out.shape == (4, 0)
    out = np.empty((0, 5), np.uint32)
    call_rowcomb(np.empty((0, 3), np.uint32), rand(p, (3, 5), 2), out, p, mode)
    assert out.shape == (0, 5)
    # no inner terms: out = 0 (mode 0), unchanged (modes +-1)
    out = rand(p, (2, 5), 3)
    before = out.copy()
    call_rowcomb(np.empty((2, 0), np.uint32), np.empty((0, 5), np.uint32), out, p, mode)
    assert np.array_equal(out, before if mode else np.zeros_like(out))


@pytest.mark.parametrize("p", [2, 3, 65521, 2**31 - 1])
def test_zero_sized_products(p):
    """F.matmul with a zero dimension and a short inner dimension."""
    F = ffcode.GF(p)
    for m, k, n in [(0, 3, 4), (3, 2, 0), (0, 1, 0), (3, 0, 4)]:
        A, B = rand(p, (m, k), 1), rand(p, (k, n), 2)
        assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", [3, 65521, 2**31 - 1, 2**61 - 1])
def test_field_combine(p, rowcomb_calls):
    """F.combine(W, arrays) is W @ stack(arrays) reshaped, through rowcomb for short k or
    few output rows (p < 2**31) and through the BLAS schemes otherwise."""
    F = ffcode.GF(p)
    for k, m in ((1, 4), (5, 4), (40, 4), (40, 5)):
        rowcomb_calls.clear()
        W = rand(p, (m, k), k)
        arrays = [rand(p, (3, 7), (k, j)) for j in range(k)]
        arrays[0] = np.asfortranarray(arrays[0])
        got = F.combine(W, arrays)
        flat = np.stack([a.reshape(-1) for a in arrays])
        assert_field_array(F, got, obj_matmul(p, W, flat).reshape(m, 3, 7))
        assert rowcomb_calls == ([k] if combine_takes_rowcomb(p, k, m) else [])
    scalars = F.combine([[1, 2]], [np.uint8(2), np.uint8(1)])
    assert scalars.shape == (1,) and scalars.tolist() == [4 % p]
    assert F.combine(rand(p, (2, 2), 1), [np.zeros((0, 3), np.uint8)] * 2).shape == (2, 0, 3)


def test_field_combine_bad_arguments():
    F = ffcode.GF(65521)
    with pytest.raises(ValueError, match="at least one"):
        F.combine(np.zeros((2, 0), np.uint32), [])
    with pytest.raises(ValueError, match="3 columns for 2 arrays"):
        F.combine(rand(F.p, (2, 3), 1), [rand(F.p, 4, 2)] * 2)
    with pytest.raises(ValueError, match="equally shaped"):
        F.combine(rand(F.p, (2, 2), 1), [rand(F.p, 4, 2), rand(F.p, 5, 3)])
    with pytest.raises(ValueError, match=">= p"):
        F.combine(rand(F.p, (1, 1), 1), [np.array([F.p])])
    with pytest.raises(ValueError, match="2-D"):
        F.combine(rand(F.p, 2, 1), [rand(F.p, 4, 2)] * 2)
