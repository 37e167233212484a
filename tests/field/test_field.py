"""Constructing fields, their dtype, F.random and F.asarray."""
import pickle

import flint
import galois
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ffcode
from ffcode import PrimeField

from helpers import PRIMES, assert_field_array


# -- construction ------------------------------------------------------------------------------

def test_field_attributes(field):
    assert isinstance(field, PrimeField)
    assert type(field.p) is int
    assert repr(field) == f"GF({field.p})"
    expected = np.uint32 if field.p < 2**32 else np.uint64
    assert field.dtype == np.dtype(expected)
    assert isinstance(field.dtype, np.dtype)


@pytest.mark.parametrize("p, dtype", [
    (2, np.uint32), (4294967291, np.uint32),          # largest prime below 2**32
    (4294967311, np.uint64), (9223372036854775783, np.uint64),
])
def test_dtype_boundary(p, dtype):
    assert ffcode.GF(p).dtype == np.dtype(dtype)


def test_one_object_per_p(field):
    assert ffcode.GF(field.p) is field
    assert pickle.loads(pickle.dumps(field)) is field


@pytest.mark.parametrize("make", [np.int64, np.uint32],
                         ids=lambda t: t.__name__)
def test_numpy_integer_p_gives_the_same_field(make):
    F = ffcode.GF(65521)
    G = ffcode.GF(make(65521))
    assert type(G.p) is int and G.p == 65521
    assert G is F


def test_exactly_the_primes_below_3000_make_fields():
    for n in range(-5, 3000):
        if galois.is_prime(n):
            assert ffcode.GF(n).p == n
        else:
            with pytest.raises(ValueError, match=str(n)):
                ffcode.GF(n)


@pytest.mark.parametrize("p", [
    4294967291, 4294967311, 2**31 - 1, 2**61 - 1, 9223372036854775783,
    2**62 - 57, 1000000007, 998244353, 9223372036854775643,
])
def test_large_primes(p):
    assert flint.fmpz(p).is_prime()   # (galois.is_prime wrongly accepts 3825123056546413051)
    assert ffcode.GF(p).p == p


@pytest.mark.parametrize("factors", [
    (3, 11, 17), (5, 13, 17), (7, 13, 19), (7, 11, 13, 41),   # Carmichael numbers
    (23, 89),                        # 2047: strong pseudoprime to base 2
    (829, 1657),                     # 1373653: bases 2, 3
    (2251, 11251),                   # 25326001: bases 2, 3, 5
    (151, 751, 28351),               # 3215031751: bases 2..7
    (6763, 10627, 29947),            # 2152302898747: bases 2..11
    (1303, 16927, 157543),           # 3474749660383: bases 2..13
    (10670053, 32010157),            # 341550071728321: bases 2..17
    (149491, 747451, 34233211),      # 3825123056546413051: bases 2..23
    (2**31 - 1, 2**31 - 1), (4294967291, 2147483647), (4294967291, 2),
    (7, 7, 73, 127, 337, 92737, 649657),                       # 2**63 - 1
    (2,) * 62, (3, 3074457345618258599), (3, 3074457345618258595),
], ids=lambda f: "*".join(map(str, f)) if len(f) < 8 else "2**62")
def test_composites_are_rejected(factors):
    n = 1
    for f in factors:
        n *= f
    assert 2 <= n < 2**63
    with pytest.raises(ValueError, match=f"prime.*{n}"):
        ffcode.GF(n)


# -- random ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), 0, 7, (3, 4), (0, 5), (2, 3, 4)], ids=str)
def test_random_shape_dtype_range(field, shape):
    a = field.random(shape, seed=1)
    assert type(a) is np.ndarray
    assert a.dtype == field.dtype
    assert a.shape == ((shape,) if isinstance(shape, int) else shape)
    if a.size:
        assert int(a.max()) < field.p


def test_random_is_reproducible(field):
    a = field.random((50, 40), seed=123)
    assert np.array_equal(a, field.random((50, 40), seed=123))
    assert np.array_equal(a, field.random((50, 40), seed=np.random.default_rng(123)))
    b = field.random((50, 40), seed=124)
    if field.p > 2:
        assert not np.array_equal(a, b)


def test_random_covers_the_field(field):
    p = field.p
    a = field.random(20000, seed=5).astype(object)
    if p <= 3:
        counts = np.bincount(a.astype(np.int64), minlength=p)
        assert len(counts) == p
        assert all(abs(c - 20000 / p) < 500 for c in counts), counts
    else:
        # uniform on [0, p): every eighth of the range is hit about equally often
        octile = np.array([v * 8 // p for v in a], dtype=np.int64)
        counts = np.bincount(octile, minlength=8)
        assert len(counts) == 8
        assert all(abs(c - 2500) < 250 for c in counts), counts
        assert max(a) >= p - p // 1000 and min(a) <= p // 1000


def test_random_default_seed_varies():
    F = ffcode.GF(2**61 - 1)
    assert not np.array_equal(F.random(8), F.random(8))


# -- asarray -----------------------------------------------------------------------------------

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              np.dtype(">i8"), np.dtype(">u4"), np.dtype(">u8")]


def _extreme_values(dtype):
    info = np.iinfo(dtype)
    vals = {int(info.min), int(info.max), 0, 1, 2, 3, int(info.max) - 1, int(info.min) + 1}
    for p in PRIMES:
        for v in (p - 1, p, p + 1, 2 * p, -p, -1 - p, p * p % (int(info.max) + 1)):
            if info.min <= v <= info.max:
                vals.add(v)
    return sorted(vals)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda t: np.dtype(t).str)
def test_asarray_reduces_every_integer_dtype(field, dtype):
    vals = _extreme_values(dtype)
    x = np.array(vals, dtype=dtype)
    got = field.asarray(x)
    assert_field_array(field, got, [v % field.p for v in vals])
    # and in 2-D, Fortran order and strided
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    native = np.dtype(dtype).newbyteorder("=")
    X = rng.integers(int(info.min), int(info.max), size=(6, 9), dtype=native,
                     endpoint=True).astype(dtype)
    exp = np.vectorize(lambda v: int(v) % field.p, otypes=[object])(X.astype(object))
    assert_field_array(field, field.asarray(np.asfortranarray(X)), exp)
    assert_field_array(field, field.asarray(X[::2, ::3]), exp[::2, ::3])


def test_asarray_python_ints_and_big_ints(field):
    p = field.p
    vals = [0, -1, 1, p, -p, p - 1, 1 - p, 2**63, -2**63, 2**64 - 1, 2**64, 2**70, -2**70,
            3**100, -(5**77), p * p, p * p + 1]
    assert_field_array(field, field.asarray(vals), [v % p for v in vals])
    assert_field_array(field, field.asarray([vals, vals[::-1]]),
                       [[v % p for v in vals], [v % p for v in vals[::-1]]])


def test_asarray_scalar_gives_0d_array(field):
    """F.asarray returns an ndarray (0-d for a scalar), like numpy.asarray."""
    for v in [0, 3, -1, 2**40 + 5, 2**63 + 1, -2**70, np.int64(-9), np.uint64(2**64 - 1),
              np.int8(-5), np.array(-4), np.array(2**64 - 1, dtype=np.uint64)]:
        got = field.asarray(v)
        assert_field_array(field, got, np.array(int(v) % field.p, dtype=object))


def test_asarray_object_arrays(field):
    p = field.p
    vals = np.array([[np.int64(-3), 2**80, np.uint64(2**64 - 1)], [7, -2**65, np.int8(-128)]],
                    dtype=object)
    exp = [[(-3) % p, 2**80 % p, (2**64 - 1) % p], [7 % p, (-2**65) % p, (-128) % p]]
    assert_field_array(field, field.asarray(vals), exp)
    assert_field_array(field, field.asarray(np.empty((2, 0), dtype=object)),
                       np.empty((2, 0), dtype=object))


def test_asarray_shapes(field):
    for shape in [(0,), (3, 0), (0, 4), (2, 3, 4)]:
        x = np.arange(np.prod(shape), dtype=np.int64).reshape(shape) - 5
        exp = np.vectorize(lambda v: int(v) % field.p, otypes=[object])(x.astype(object)) \
            if x.size else np.empty(shape, dtype=object)
        assert_field_array(field, field.asarray(x), exp)


def test_asarray_of_canonical_elements_is_unchanged(field):
    a = field.random((5, 6), seed=9)
    assert_field_array(field, field.asarray(a), a)
    assert_field_array(field, field.asarray(a.astype(np.uint64)), a)


@given(p=st.sampled_from(PRIMES),
       vals=st.lists(st.integers(min_value=-2**130, max_value=2**130), max_size=20))
def test_asarray_hypothesis(p, vals):
    F = ffcode.GF(p)
    got = F.asarray(np.array(vals, dtype=object))
    assert_field_array(F, got, np.array([v % p for v in vals], dtype=object))
    small = [v for v in vals if -2**63 <= v < 2**63]
    got = F.asarray(np.array(small, dtype=np.int64))
    assert_field_array(F, got, np.array([v % p for v in small], dtype=object))
