"""F.vandermonde(points, ncols)[i, j] == points[i] ** j."""
import numpy as np
import pytest

import ffcode

from helpers import PRIMES, assert_field_array, extremes, layouts, rand, to_galois


def galois_vandermonde(p, points, ncols):
    if points.size == 0 or ncols == 0:
        return np.zeros((points.size, ncols), dtype=object)
    return to_galois(p, points)[:, None] ** np.arange(ncols)


def python_vandermonde(p, points, ncols):
    V = np.zeros((len(points), ncols), dtype=object)
    for i, x in enumerate(points):
        for j in range(ncols):
            V[i, j] = pow(int(x), j, p)
    return V


@pytest.mark.parametrize("npoints, ncols", [(0, 0), (0, 5), (4, 0), (1, 1), (5, 1), (1, 7),
                                            (6, 6), (9, 4), (4, 9), (30, 70)])
def test_vandermonde_random(field, npoints, ncols):
    p = field.p
    x = rand(p, npoints, npoints * 100 + ncols)
    V = field.vandermonde(x, ncols)
    assert V.shape == (npoints, ncols)
    assert_field_array(field, V, galois_vandermonde(p, x, ncols))
    assert_field_array(field, V, python_vandermonde(p, x, ncols))


def test_vandermonde_extremes(field):
    """0 (0**0 == 1), 1, p - 1, about p / 2 and the other extremes, long rows."""
    p = field.p
    ex = extremes(p)
    x = np.array(sorted({0, 1, 2 % p, p - 1, p - 2, p // 2, p - p // 2} | set(ex[::20])),
                 dtype=np.uint64)
    V = field.vandermonde(x, 300)
    assert_field_array(field, V, python_vandermonde(p, x, 300))
    assert_field_array(field, V, galois_vandermonde(p, x, 300))


def test_vandermonde_layouts_and_dtypes(field):
    p = field.p
    x = rand(p, 12, 1)
    expected = python_vandermonde(p, x, 8)
    for X in layouts(x, seed=2).values():
        assert_field_array(field, field.vandermonde(X, 8), expected)
    assert_field_array(field, field.vandermonde(x.astype(np.int64).tolist(), 8), expected)
    small = (x % min(p, 100)).astype(np.uint8)
    assert_field_array(field, field.vandermonde(small, np.int64(8)),
                       python_vandermonde(p, small, 8))


def test_vandermonde_fermat(field):
    """x**(p-1) == 1 for x != 0 (checked where p - 1 columns are affordable)."""
    p = field.p
    if p > 70000:
        x = rand(p, 5, 3)
        V = field.vandermonde(x, 3)
        assert_field_array(field, V, python_vandermonde(p, x, 3))
        return
    x = np.arange(1, min(p, 40), dtype=np.int64)
    V = field.vandermonde(x, p)
    assert_field_array(field, V[:, p - 1], np.ones(len(x), dtype=np.int64))
    assert_field_array(field, V[:, 1], x)


def test_vandermonde_distinct_points_is_invertible():
    for p in PRIMES:
        F = ffcode.GF(p)
        n = min(p, 40)
        x = np.arange(n, dtype=np.int64)
        V = F.vandermonde(x, n)
        assert F.rank(V) == n


def test_vandermonde_does_not_modify_points(field):
    x = rand(field.p, 10, 4)
    x0 = x.copy()
    field.vandermonde(x, 5)
    assert np.array_equal(x, x0)
