"""Random fingerprints: Freivalds' check and the bilinear projections accept the right array
and refuse any corrupted one, with as many rounds as their failure bound needs."""
import numpy as np
import pytest

from ffcode import GF
from ffcode import fingerprints

PRIMES = [2, 3, 65521, 2**31 - 1, 2**31 + 11, 2**32 - 5, 2**61 - 1, 2**63 - 25]
WIDE_PRIMES = [2**31 + 11, 2**32 - 5, 2**61 - 1, 2**63 - 25]     # the 64-bit kernel's


@pytest.mark.parametrize("p", PRIMES)
def test_product_accepts_exact_and_refuses_every_single_error(p):
    """Every one-element corruption of C is caught (2**-60 odds of a miss per case)."""
    F = GF(p)
    A, B = F.random((5, 4), seed=1), F.random((4, 3), seed=2)
    C = F.matmul(A, B)
    assert fingerprints.product(F, A, B, C, seed=3)
    for i in range(5):
        for j in range(3):
            wrong = C.copy()
            wrong[i, j] = F.add(wrong[i, j], 1)
            assert not fingerprints.product(F, A, B, wrong, seed=(i, j))


def test_rounds_reach_the_failure_bound():
    """A linear round misses with probability 1/p, a bilinear one with 2/p: each kind has
    enough rounds for 2**-FAILURE_BITS (the bilinear bound says nothing at p <= 4, where
    FAILURE_BITS rounds are taken)."""
    bits = fingerprints.FAILURE_BITS
    for p in PRIMES:
        assert fingerprints.linear_rounds(p) * np.log2(p) >= bits
        if p > 4:
            assert fingerprints.bilinear_rounds(p) * np.log2(p / 2) >= bits
            assert fingerprints.bilinear_rounds(p) >= fingerprints.linear_rounds(p)
        else:
            assert fingerprints.bilinear_rounds(p) == bits
    assert fingerprints.linear_rounds(2) == 60 and fingerprints.linear_rounds(2**61 - 1) == 1


@pytest.mark.parametrize("p", WIDE_PRIMES)
def test_product_at_wide_primes_on_larger_shapes(p):
    """Freivalds' check through the 64-bit kernel with many rows and columns (several
    column passes, folds of the 128-bit sums), non-contiguous operands and p - 1 entries:
    exact accepted, every single wrong element in a row refused."""
    F = GF(p)
    A, B = F.random((40, 300), seed=1), F.random((300, 4100), seed=2)
    A[:, ::3], B[::2] = p - 1, p - 1
    C = F.matmul(A, B)
    At, Bt = np.asfortranarray(A), B[:, ::-1].copy()[:, ::-1]
    assert fingerprints.product(F, At, Bt, C, seed=0)
    for j in (0, 1, 2047, 4099):
        wrong = C.copy()
        wrong[17, j] = F.sub(wrong[17, j], 1)
        assert not fingerprints.product(F, At, Bt, wrong, seed=j)
    zero = np.zeros((0, 5), F.dtype)
    assert fingerprints.product(F, zero, F.random((5, 3), seed=3), np.zeros((0, 3), F.dtype))
    assert fingerprints.product(F, F.random((4, 0), seed=4), np.zeros((0, 3), F.dtype),
                                np.zeros((4, 3), F.dtype))
    assert not fingerprints.product(F, F.random((4, 0), seed=4), np.zeros((0, 3), F.dtype),
                                    np.ones((4, 3), F.dtype))


def test_product_checks_its_arguments():
    F = GF(65521)
    with pytest.raises(ValueError, match="do not match"):
        fingerprints.product(F, F.random((2, 3)), F.random((3, 4)), F.random((2, 3)))
    with pytest.raises(TypeError, match="ffcode.GF"):
        fingerprints.product(65521, [[1]], [[1]], [[1]])


@pytest.mark.parametrize("p", [3, 65521, 2**61 - 1])
def test_rows_checks_a_row_linear_f(p):
    """R f(X) = f(R X): the exact f(X) passes, one changed element fails."""
    F = GF(p)
    W = F.random((3, 2), seed=1)
    X = F.random((6, 3), seed=2)
    Y = F.matmul(X, W)
    assert fingerprints.rows(F, lambda Z: F.matmul(Z, W), X, Y, np.random.default_rng(0))
    Y[4, 1] = F.add(Y[4, 1], 1)
    assert not fingerprints.rows(F, lambda Z: F.matmul(Z, W), X, Y, np.random.default_rng(0))


@pytest.mark.parametrize("p", [3, 65521, 2**31 - 1, 2**63 - 25])
@pytest.mark.parametrize("shape", [(4, 3), (5,), (2, 3, 2)], ids=str)
def test_projections_tell_every_single_change(p, shape):
    """Equal arrays project equally; any one changed element changes the projections."""
    F = GF(p)
    y = F.random(shape, seed=1)
    pairs = fingerprints.projections(F, shape, np.random.default_rng(2))
    assert pairs[0].shape[0] == pairs[1].shape[0] == fingerprints.bilinear_rounds(p)
    base = fingerprints.project(F, y, pairs)
    assert len(base) == fingerprints.bilinear_rounds(p)
    assert fingerprints.project(F, y.copy(), pairs) == base
    for i in range(y.size):
        wrong = y.copy()
        wrong.flat[i] = F.add(wrong.flat[i], 1)
        assert fingerprints.project(F, wrong, pairs) != base


def test_empty_arrays_have_no_projections():
    F = GF(65521)
    assert fingerprints.projections(F, (0, 3), np.random.default_rng(0)) is None
    assert fingerprints.project(F, np.zeros((0, 3), F.dtype), None) == []
