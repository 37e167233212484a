"""F.add, F.sub, F.mul, F.neg and F.inv against galois."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import ffcode

from helpers import (PRIMES, assert_field_array, extremes, layouts, rand,
                           to_galois)

BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
}
UNARY = {
    "neg": lambda x: -x,
    "inv": lambda x: x ** -1,
}
PYTHON = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: a * b % p,
    "neg": lambda a, p: -a % p,
    "inv": lambda a, p: pow(a, -1, p),
}


def nonzero(p, shape, seed):
    return (rand(p - 1, shape, seed).astype(np.uint64) + 1).astype(
        np.uint32 if p < 2**32 else np.uint64)


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shape", [(), (1,), (17,), (5, 7), (2, 3, 4), (0,), (4, 0)], ids=str)
def test_binary_random(field, galois_field, op, shape):
    p = field.p
    a, b = rand(p, shape, 1), rand(p, shape, 2)
    got = getattr(field, op)(a, b)
    ga, gb = galois_field(a.tolist()), galois_field(b.tolist())
    assert ga.shape == a.shape
    assert_field_array(field, got, BINARY[op](ga, gb))


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("shape", [(1,), (17,), (5, 7), (2, 3, 4), (0,), (4, 0)], ids=str)
def test_unary_random(field, galois_field, op, shape):
    p = field.p
    a = nonzero(p, shape, 3) if op == "inv" else rand(p, shape, 3)
    got = getattr(field, op)(a)
    assert_field_array(field, got, UNARY[op](galois_field(a.tolist())))


@pytest.mark.parametrize("op", BINARY)
def test_binary_extremes(field, op):
    """Every pair of the extreme elements (0, 1, p - 1, about p / 2, ...)."""
    p = field.p
    ex = np.array(extremes(p), dtype=np.uint64).astype(field.dtype)
    a, b = np.meshgrid(ex, ex, indexing="ij")
    got = getattr(field, op)(a, b)
    expected = [[PYTHON[op](int(x), int(y), p) for y in ex] for x in ex]
    assert_field_array(field, got, expected)
    assert_field_array(field, got, BINARY[op](to_galois(p, a), to_galois(p, b)))


@pytest.mark.parametrize("op", UNARY)
def test_unary_extremes(field, op):
    p = field.p
    ex = np.array([v for v in extremes(p) if v or op != "inv"], dtype=np.uint64)
    ex = ex.astype(field.dtype)
    got = getattr(field, op)(ex)
    assert_field_array(field, got, [PYTHON[op](int(x), p) for x in ex])
    assert_field_array(field, got, UNARY[op](to_galois(p, ex)))


def test_inv_is_inverse(field):
    a = nonzero(field.p, 1000, 4)
    inv = field.inv(a)
    assert_field_array(field, field.mul(a, inv), np.ones(1000, dtype=object))
    assert_field_array(field, field.inv(inv), a)


def test_inv_of_all_small_elements():
    for p in [2, 3, 5, 7, 11, 13, 65521]:
        F = ffcode.GF(p)
        a = np.arange(1, min(p, 3000), dtype=np.int64)
        assert_field_array(F, F.inv(a), [pow(int(x), -1, p) for x in a])


def test_neg_is_additive_inverse(field):
    a = rand(field.p, 500, 5)
    assert_field_array(field, field.add(a, field.neg(a)), np.zeros(500, dtype=object))
    assert_field_array(field, field.sub(np.zeros_like(a), a), field.neg(a))


@pytest.mark.parametrize("op", list(BINARY) + list(UNARY))
def test_zero_dimensional_inputs_give_zero_dimensional_output(op):
    """Elementwise operations keep the shape of their input, () included (as numpy does)."""
    for p in PRIMES:
        F = ffcode.GF(p)
        a = np.array(p - 1, dtype=F.dtype)
        if op in BINARY:
            got = getattr(F, op)(a, np.array(1 % p, dtype=F.dtype))
            exp = PYTHON[op](p - 1, 1 % p, p)
        else:
            got = getattr(F, op)(a)
            exp = PYTHON[op](p - 1, p)
        assert_field_array(F, got, np.array(exp, dtype=object))


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", [((4, 1), (1, 5)), ((3,), (2, 3)), ((), (3, 2)),
                                    ((2, 1, 3), (4, 1)), ((0, 1), (1, 3)), ((5,), ())],
                         ids=str)
def test_binary_broadcasting(field, op, shapes):
    p = field.p
    a, b = rand(p, shapes[0], 6), rand(p, shapes[1], 7)
    got = getattr(field, op)(a, b)
    assert got.shape == np.broadcast_shapes(*shapes)
    assert_field_array(field, got, BINARY[op](to_galois(p, a), to_galois(p, b)))


@pytest.mark.parametrize("op", list(BINARY) + list(UNARY))
def test_layouts(field, op):
    """Fortran-ordered and strided inputs give the same as C-ordered ones."""
    p = field.p
    a = nonzero(p, (6, 5), 8) if op == "inv" else rand(p, (6, 5), 8)
    b = rand(p, (6, 5), 9)
    fun = getattr(field, op)
    for name_a, la in layouts(a, seed=1).items():
        for name_b, lb in layouts(b, seed=2).items():
            got = fun(la, lb) if op in BINARY else fun(la)
            exp = BINARY[op](to_galois(p, a), to_galois(p, b)) if op in BINARY \
                else UNARY[op](to_galois(p, a))
            assert_field_array(field, got, exp)
    # a transposed (Fortran-ordered view) operand
    got = fun(a.T, b.T) if op in BINARY else fun(a.T)
    exp = BINARY[op](to_galois(p, a.T), to_galois(p, b.T)) if op in BINARY \
        else UNARY[op](to_galois(p, a.T))
    assert_field_array(field, got, exp)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64, np.uint64, ">u4", ">i8", ">u8"],
                         ids=lambda t: np.dtype(t).str)
def test_other_integer_dtypes(field, dtype):
    """Any integer dtype (either byte order) holding elements in [0, p) is accepted; the
    output has F.dtype."""
    p = field.p
    top = min(p, np.iinfo(dtype).max + 1)
    a = rand(top, (4, 6), 10).astype(dtype)
    b = rand(top, (4, 6), 11).astype(dtype)
    for op in BINARY:
        assert_field_array(field, getattr(field, op)(a, b),
                           BINARY[op](to_galois(p, a), to_galois(p, b)))
        # mixed with the field's own dtype and with Python lists
        assert_field_array(field, getattr(field, op)(a, b.astype(field.dtype)),
                           BINARY[op](to_galois(p, a), to_galois(p, b)))
        assert_field_array(field, getattr(field, op)(a.tolist(), b),
                           BINARY[op](to_galois(p, a), to_galois(p, b)))
    assert_field_array(field, field.neg(a), -to_galois(p, a))
    a[a == 0] = 1
    assert_field_array(field, field.inv(a), to_galois(p, a) ** -1)


def test_inputs_are_not_modified(field):
    p = field.p
    a, b = nonzero(p, (5, 6), 12), rand(p, (5, 6), 13)
    a0, b0 = a.copy(), b.copy()
    for op in BINARY:
        out = getattr(field, op)(a, b)
        assert not np.shares_memory(out, a) and not np.shares_memory(out, b)
    field.neg(a)
    field.inv(a)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@st.composite
def elementwise_case(draw):
    p = draw(st.sampled_from(PRIMES))
    dtype = np.uint32 if p < 2**32 else np.uint64
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    elements = st.one_of(st.integers(0, p - 1), st.sampled_from(extremes(p)))
    a = draw(hnp.arrays(dtype, shape, elements=elements))
    b = draw(hnp.arrays(dtype, shape, elements=elements))
    return p, a, b


@given(case=elementwise_case(), op=st.sampled_from(sorted(BINARY) + sorted(UNARY)))
def test_elementwise_hypothesis(case, op):
    p, a, b = case
    F = ffcode.GF(p)
    if op in BINARY:
        got = getattr(F, op)(a, b)
        exp = BINARY[op](to_galois(p, a), to_galois(p, b))
    else:
        if op == "inv":
            a = np.where(a == 0, 1, a).astype(a.dtype)
        got = getattr(F, op)(a)
        exp = UNARY[op](to_galois(p, a))
    if a.ndim == 0:   # the 0-d shape is checked in its own test
        got = np.asarray(got).reshape(())
    assert_field_array(F, got, exp)
