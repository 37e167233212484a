"""Short inner dimensions and few output rows: matmul's row-combination kernels
(ext/rowcomb.pyx: combine_rows_31 below 2**31, combine_rows_64 up to 2**63) on both sides of
the switch to the BLAS schemes, with worst-case values, accumulate/negate modes and strided
operands."""
import numpy as np
import pytest

import ffcode
from ffcode import _matmul
from ffcode._ext import rowcomb

from helpers import assert_field_array, obj_matmul, rand, to_galois

SMALL_PRIMES = [2, 3, 65521, 1048573, 2**31 - 1]
# Just above 2**31 (uint32 elements, products above 2**62), the largest uint32 prime, a
# Mersenne prime and the largest prime below 2**63 (a fold every 4 terms).
WIDE_PRIMES = [2**31 + 11, 2**32 - 5, 2**61 - 1, 2**63 - 25]
ROWCOMB_PRIMES = SMALL_PRIMES + WIDE_PRIMES


def kernel_name(p):
    return "combine_rows_31" if p < 2**31 else "combine_rows_64"


def takes_rowcomb(p, k):
    """Whether matmul's documented rule sends an inner dimension k to rowcomb."""
    per_product = _matmul.ROWCOMB_PER_PRODUCT if p < 2**31 else _matmul.ROWCOMB64_PER_PRODUCT
    return k < per_product * len(_matmul.limb_plan(p, k).products)


def combine_takes_rowcomb(p, k, m):
    """F.combine's rule: matmul's, or any k when the output has at most FEW_ROWS rows."""
    return takes_rowcomb(p, k) or m <= _matmul.FEW_ROWS


def inner_dimensions(p):
    """1 up to three past the last k that rowcomb serves."""
    last = max(k for k in range(1, 400) if takes_rowcomb(p, k))
    return range(1, last + 4)


def call_rowcomb(A, B, out, p, mode, kernel="combine_rows_31"):
    """A rowcomb kernel on A, the rows of B, and out."""
    getattr(rowcomb, kernel)(A, [np.ascontiguousarray(r) for r in B], out, p, mode)


@pytest.fixture
def rowcomb_calls(monkeypatch):
    """Records the inner dimension of every call matmul makes to a rowcomb kernel; the
    kernel must be the one for p (checked by the calls' p)."""
    calls = []
    for name in ("combine_rows_31", "combine_rows_64"):
        def spy(A, rows, out, p, mode, real=getattr(rowcomb, name), name=name):
            assert name == kernel_name(p), (name, p)
            calls.append(A.shape[1])
            return real(A, rows, out, p, mode)

        monkeypatch.setattr(rowcomb, name, spy)
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
    dtype = ffcode.GF(p).dtype
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


@pytest.mark.parametrize("p", [3, 2**31 - 1, 2**32 - 5, 2**61 - 1])
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


@pytest.mark.parametrize("p", [2, 3, 65521, 2**31 - 1] + WIDE_PRIMES)
def test_zero_sized_products(p):
    """F.matmul with a zero dimension and a short inner dimension."""
    F = ffcode.GF(p)
    for m, k, n in [(0, 3, 4), (3, 2, 0), (0, 1, 0), (3, 0, 4)]:
        A, B = rand(p, (m, k), 1), rand(p, (k, n), 2)
        assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", [3, 65521, 2**31 - 1, 2**32 - 5, 2**61 - 1, 2**63 - 25])
def test_field_combine(p, rowcomb_calls):
    """F.combine(W, arrays) is W @ stack(arrays) reshaped, through rowcomb for short k or
    few output rows (at every prime) and through the BLAS schemes otherwise."""
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


def test_wide_primes_are_primes():
    """The primes the 64-bit kernel is tested at are primes (GF checks), with uint32
    elements below 2**32."""
    for p in WIDE_PRIMES:
        assert ffcode.GF(p).dtype == (np.uint32 if p < 2**32 else np.uint64)


@pytest.mark.parametrize("p", WIDE_PRIMES)
@pytest.mark.parametrize("mode", [0, 1, -1])
def test_combine_rows_64_against_python_ints(p, mode):
    """Random entries mixed with p - 1 and 1, a strided A, one pass and several (the column
    chunk is 4096 // m) with tails that are not a multiple of the unrolling, k long enough
    for many folds of the 128-bit sums at 2**63 - 25 (every 4 terms) and 2**61 - 1 (64)."""
    rng = np.random.default_rng(p % 997)
    for m, k, n in [(1, 1, 1), (1, 2, 4101), (3, 7, 4099), (2, 300, 33), (5, 9, 9),
                    (4, 130, 1030)]:
        A_big = rand(p, (2 * m, 3 * k), (m, k))
        B, out = rand(p, (k, n), (k, n)), rand(p, (m, n), n)
        A_big[rng.random(A_big.shape) < 0.3] = p - 1
        A_big[rng.random(A_big.shape) < 0.1] = 1
        B[rng.random(B.shape) < 0.3] = p - 1
        A = A_big[::2, ::3]
        assert not A.flags.c_contiguous or m == k == 1
        before = out.astype(object)
        call_rowcomb(A, B, out, p, mode, "combine_rows_64")
        expected = (before + mode * obj_matmul(p, A, B)) % p if mode else obj_matmul(p, A, B)
        assert out.dtype == ffcode.GF(p).dtype
        assert np.array_equal(out.astype(object), expected), (m, k, n)


@pytest.mark.parametrize("p", WIDE_PRIMES)
@pytest.mark.parametrize("mode", [0, 1, -1])
def test_combine_rows_64_worst_case(p, mode):
    """Every element p - 1 (out too): the largest products and sums the lazy reduction must
    hold, across the fold boundaries; with mode -1 the multiplier p - 1 comes from A = 1."""
    for k in (1, 3, 4, 5, 8, 63, 64, 65, 129, 257):
        A = np.full((2, k), 1 if mode < 0 else p - 1, rand(p, 1, 0).dtype)
        B = np.full((k, 13), p - 1, A.dtype)
        out = np.full((2, 13), p - 1, A.dtype)
        call_rowcomb(A, B, out, p, mode, "combine_rows_64")
        # (p - 1)**2 = 1: each entry is k (mode 0), p - 1 + k (mode 1), p - 1 + k (mode -1)
        expected = k % p if mode == 0 else (p - 1 + k) % p
        assert np.array_equal(out.astype(object), np.full((2, 13), expected, object)), k


@pytest.mark.parametrize("mode", [0, 1, -1])
def test_combine_rows_64_empty(mode):
    """Zero columns, zero rows and no inner terms, as for combine_rows_31."""
    for p in (2**32 - 5, 2**61 - 1):
        out = rand(p, (4, 0), 0)
        call_rowcomb(rand(p, (4, 3), 1), rand(p, (3, 0), 0), out, p, mode, "combine_rows_64")
        assert out.shape == (4, 0)
        out = rand(p, (0, 5), 0)
        call_rowcomb(rand(p, (0, 3), 1), rand(p, (3, 5), 2), out, p, mode, "combine_rows_64")
        assert out.shape == (0, 5)
        out = rand(p, (2, 5), 3)
        before = out.copy()
        call_rowcomb(rand(p, (2, 0), 0), rand(p, (0, 5), 0), out, p, mode, "combine_rows_64")
        assert np.array_equal(out, before if mode else np.zeros_like(out))


def test_combine_rows_64_rejects_what_does_not_fit():
    A, B, out = rand(2**61 - 1, (2, 3), 1), rand(2**61 - 1, (3, 5), 2), rand(2**61 - 1, (2, 5), 3)
    for p in (2**63 + 29, 2**64 - 59, 1):
        with pytest.raises(ValueError, match="do not fit"):
            rowcomb.combine_rows_64(A, list(B), out, p, 0)
    small = [x.astype(np.uint32) for x in (A % 7, B % 7, out % 7)]
    with pytest.raises(ValueError, match="do not fit"):      # uint32 cannot hold p - 1
        rowcomb.combine_rows_64(small[0], list(small[1]), small[2], 2**32 + 15, 0)
    with pytest.raises(ValueError, match="do not fit"):
        rowcomb.combine_rows_64(A, list(B[:2]), out, 2**61 - 1, 0)
    with pytest.raises(ValueError, match="do not fit"):
        rowcomb.combine_rows_64(A, list(B), out, 2**61 - 1, 2)
    with pytest.raises(ValueError, match="wrong length"):
        rowcomb.combine_rows_64(A, [B[0], B[1], B[2, :4]], out, 2**61 - 1, 0)
    with pytest.raises(ValueError, match="dtype mismatch"):  # one dtype for all operands
        rowcomb.combine_rows_64(A.astype(np.uint32), list(B), out, 2**61 - 1, 0)


@pytest.mark.parametrize("p", WIDE_PRIMES)
def test_few_rows_any_inner_dimension(p, rowcomb_calls):
    """F.combine with up to FEW_ROWS output rows takes the 64-bit kernel for any k, from
    non-contiguous arrays, against galois."""
    F = ffcode.GF(p)
    for m, k in ((1, 1), (2, 150), (4, 333)):
        W = rand(p, (m, k), k)
        arrays = [rand(p, (5, 6), (k, j)).T for j in range(k)]
        rowcomb_calls.clear()
        got = F.combine(W, arrays)
        assert rowcomb_calls == [k]
        flat = np.stack([a.reshape(-1) for a in arrays])
        assert_field_array(F, got.reshape(m, -1), to_galois(p, W) @ to_galois(p, flat))


@pytest.mark.parametrize("p", [65521, 2**31 - 1] + WIDE_PRIMES)
@pytest.mark.parametrize("mode", [0, 1, -1])
def test_rows_as_one_matrix(p, mode):
    """Both kernels take B itself (C-contiguous) as well as the list of its rows, with the
    same result; _matmul.combine passes a matrix on whole."""
    kernel = getattr(rowcomb, kernel_name(p))
    A, B = rand(p, (3, 40), 1), rand(p, (40, 1031), 2)
    B[::3] = p - 1
    start = rand(p, (3, 1031), 3)
    from_rows, from_matrix = start.copy(), start.copy()
    kernel(A, list(B), from_rows, p, mode)
    kernel(A, B, from_matrix, p, mode)
    assert np.array_equal(from_rows, from_matrix)
    expected = (start.astype(object) + mode * obj_matmul(p, A, B)) % p if mode else \
        obj_matmul(p, A, B)
    assert np.array_equal(from_matrix.astype(object), expected)
    with pytest.raises(ValueError, match="wrong length"):
        kernel(A, B[:, :-1].copy(), from_matrix, p, mode)
    with pytest.raises(ValueError, match="contiguous"):
        kernel(A, np.asfortranarray(B), from_matrix, p, mode)
    got = _matmul.combine(p, A, np.asfortranarray(B), A.dtype)     # copied to C order
    assert np.array_equal(got.astype(object), obj_matmul(p, A, B))
