"""F.points, F.vandermonde_inverse and F.lagrange: the structured matrices that encode and
decode the codes, against python-flint, galois and a plain Python Lagrange formula."""
import numpy as np
import pytest

import ffcode

from helpers import (GALOIS_JIT, PRIMES, as_objects, assert_field_array, layouts, obj_matmul,
                     rand, to_flint, to_galois)

SIZES = [0, 1, 2, 3, 5, 12, 40]    # (those that fit in GF(p))


def distinct_points(p, n, seed):
    """n distinct elements of GF(p) in random order, 0, 1 and p - 1 among them when n allows."""
    rng = np.random.default_rng(seed)
    dtype = np.uint32 if p < 2**32 else np.uint64
    if p <= 64:
        return rng.permutation(p)[:n].astype(dtype)
    fixed = [0, 1, p - 1][:n]
    rest = set(fixed)
    while len(rest) < n:
        rest.add(int(rng.integers(0, p, dtype=np.uint64)))
    values = fixed + sorted(rest - set(fixed))
    return np.array(values, dtype=np.uint64)[rng.permutation(n)].astype(dtype)


def python_lagrange(p, nodes, targets):
    """L[t, j] = prod_{k != j} (x_t - x_k) / (x_j - x_k) on Python ints."""
    nodes, targets = [int(v) for v in nodes], [int(v) for v in targets]
    L = np.zeros((len(targets), len(nodes)), dtype=object)
    for t, x in enumerate(targets):
        for j, xj in enumerate(nodes):
            num = den = 1
            for k, xk in enumerate(nodes):
                if k != j:
                    num, den = num * (x - xk) % p, den * (xj - xk) % p
            L[t, j] = num * pow(den, -1, p) % p
    return L


# -- vandermonde_inverse -----------------------------------------------------------------------


def test_vandermonde_inverse(field):
    """V^-1 V = V V^-1 = I and V^-1 equals python-flint's inverse (and galois's below 2**31)."""
    p = field.p
    for n in SIZES:
        if n <= p:
            check_vandermonde_inverse(field, n)


def check_vandermonde_inverse(field, n):
    p = field.p
    x = distinct_points(p, n, n)
    V = field.vandermonde(x, n)
    Vinv = field.vandermonde_inverse(x)
    assert Vinv.shape == (n, n)
    eye = np.eye(n, dtype=object)
    assert np.array_equal(obj_matmul(p, Vinv, V), eye)
    assert np.array_equal(obj_matmul(p, V, Vinv), eye)
    if n:
        assert_field_array(field, Vinv, as_objects(to_flint(p, V).inv()))
        if p < GALOIS_JIT:
            assert_field_array(field, Vinv, np.linalg.inv(to_galois(p, V)))
    else:
        assert_field_array(field, Vinv, np.zeros((0, 0), dtype=object))


def test_vandermonde_inverse_examples():
    """A one-point inverse is [[1]], whatever the point; and the docstring example."""
    for p in PRIMES:
        F = ffcode.GF(p)
        for x in {0, 1, p - 1, p // 2}:
            assert_field_array(F, F.vandermonde_inverse([x]), [[1]])
    assert ffcode.GF(7).vandermonde_inverse([1, 2]).tolist() == [[2, 6], [6, 1]]
    F = ffcode.GF(3)
    assert_field_array(F, F.vandermonde_inverse([0, 1, 2]),
                       as_objects(to_flint(3, F.vandermonde([0, 1, 2], 3)).inv()))


def test_vandermonde_inverse_layouts():
    p = 2**61 - 1
    F = ffcode.GF(p)
    x = distinct_points(p, 9, 1)
    expected = F.vandermonde_inverse(x)
    for lx in layouts(x, 2).values():
        assert_field_array(F, F.vandermonde_inverse(lx), expected)
    assert_field_array(F, F.vandermonde_inverse([int(v) for v in x]), expected)


@pytest.mark.parametrize("bad, err, match", [
    ([3, 5, 3], ValueError, "distinct"), ([[1, 2], [3, 4]], ValueError, "1-D"),
    (5, ValueError, "1-D"), ([1, 65521], ValueError, ">= p"), ([1, -2], ValueError, "negative"),
    ([1.0, 2.0], TypeError, "integers"), ([True, False], TypeError, "integers")], ids=repr)
def test_vandermonde_inverse_bad_points(bad, err, match):
    with pytest.raises(err, match=match):
        ffcode.GF(65521).vandermonde_inverse(bad)


# -- lagrange ------------------------------------------------------------------------------------


def test_lagrange(field):
    """L equals the product formula; L @ values evaluates the interpolating polynomial
    (coefficients from vandermonde_inverse), and rows sum to 1."""
    p = field.p
    for n in SIZES:
        if n <= p:
            check_lagrange(field, n)


def check_lagrange(field, n):
    p = field.p
    nodes = distinct_points(p, n, 10 + n)
    targets = rand(p, 7, n)
    L = field.lagrange(nodes, targets)
    assert L.shape == (7, n)
    assert_field_array(field, L, python_lagrange(p, nodes, targets))
    values = rand(p, (n, 3), 20 + n)
    coefficients = obj_matmul(p, field.vandermonde_inverse(nodes), values)
    evaluated = obj_matmul(p, field.vandermonde(targets, n), coefficients)
    assert np.array_equal(obj_matmul(p, L, values), evaluated)
    if n:
        assert np.array_equal(L.astype(object).sum(axis=1) % p, np.ones(7, dtype=object))


def test_lagrange_at_the_nodes(field):
    """A target equal to node j gives the unit row e_j; L(nodes, nodes) = I."""
    p = field.p
    n = min(p, 6)
    nodes = distinct_points(p, n, 3)
    assert_field_array(field, field.lagrange(nodes, nodes), np.eye(n, dtype=object))
    targets = np.array([nodes[n - 1], 0, nodes[0]], dtype=nodes.dtype)
    L = field.lagrange(nodes, targets)
    assert_field_array(field, L[[0, 2]], np.eye(n, dtype=object)[[n - 1, 0]])
    assert_field_array(field, L, python_lagrange(p, nodes, targets))


def test_lagrange_empty():
    """No targets: a (0, n) matrix; no nodes: a (T, 0) matrix."""
    F = ffcode.GF(65521)
    none = np.zeros(0, np.int64)
    assert F.lagrange([1, 2, 3], none).shape == (0, 3)
    assert F.lagrange([1, 2, 3], none).dtype == F.dtype
    assert F.lagrange(none, [1, 2]).shape == (2, 0)
    assert F.lagrange(none, none).shape == (0, 0)


def test_lagrange_examples_and_layouts():
    assert ffcode.GF(7).lagrange([1, 2], [0, 2, 3]).tolist() == [[2, 6], [0, 1], [6, 2]]
    p = 2**31 - 1
    F = ffcode.GF(p)
    nodes, targets = distinct_points(p, 8, 4), rand(p, 9, 5)
    expected = python_lagrange(p, nodes, targets)
    for ln, lt in zip(layouts(nodes, 1).values(), layouts(targets, 2).values()):
        assert_field_array(F, F.lagrange(ln, lt), expected)
    assert_field_array(F, F.lagrange(nodes.tolist(), targets.astype(np.int64)), expected)


def test_lagrange_repeated_targets():
    """Targets need not be distinct: equal targets give equal rows."""
    F = ffcode.GF(65521)
    L = F.lagrange([3, 9, 27], [5, 5, 3, 3])
    assert np.array_equal(L[0], L[1]) and np.array_equal(L[2], L[3])
    assert L[2].tolist() == [1, 0, 0]


@pytest.mark.parametrize("nodes, targets, err, match", [
    ([1, 2, 1], [3], ValueError, "distinct"), ([[1, 2]], [3], ValueError, "1-D"),
    ([1, 2], [[3, 4]], ValueError, "1-D"), ([1, 2], 3, ValueError, "1-D"),
    ([1, 2], [65521], ValueError, ">= p"), ([1, 65521], [3], ValueError, ">= p"),
    ([1, 2], [-1], ValueError, "negative"), ([1.0, 2.0], [3], TypeError, "integers"),
    ([1, 2], [3.5], TypeError, "integers")], ids=repr)
def test_lagrange_bad_arguments(nodes, targets, err, match):
    with pytest.raises(err, match=match):
        ffcode.GF(65521).lagrange(nodes, targets)


# -- points --------------------------------------------------------------------------------------


def test_points(field):
    """Distinct points come back as a flat array of F.dtype, in the given order."""
    p = field.p
    x = distinct_points(p, min(p, 10), 6)
    for lx in layouts(x, 1).values():
        got = field.points(lx, "pts")
        assert_field_array(field, got, x)
        assert got.flags.c_contiguous
    assert field.points(np.zeros(0, np.uint8), "pts").shape == (0,)


@pytest.mark.parametrize("bad, err, match", [
    ([4, 7, 4, 4], ValueError, r"'pts'.*distinct.*4 appears 3 times"),
    ([[1, 2]], ValueError, "'pts'.*1-D"), (np.uint32(3), ValueError, "'pts'.*1-D"),
    ([1, 65521], ValueError, "'pts'.*>= p"), ([-1, 2], ValueError, "'pts'.*negative"),
    ([1.0, 2.0], TypeError, "'pts'.*integers"), (["1"], TypeError, "'pts'")], ids=repr)
def test_points_bad(bad, err, match):
    with pytest.raises(err, match=match):
        ffcode.GF(65521).points(bad, "pts")
