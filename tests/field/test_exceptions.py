"""Bad input to every public method raises a clear TypeError / ValueError / LinAlgError /
ZeroDivisionError whose message names the problem."""
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import ffcode

from helpers import invertible, low_rank, rand

# -- GF(p) -------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0, 1, -1, -2, -7, 2**63, 2**63 + 1, 2**64 + 13, 2**100],
                         ids=str)
def test_GF_out_of_range(p):
    with pytest.raises(ValueError, match=rf"\[2, 2\*\*63\).*{p}"):
        ffcode.GF(p)


@pytest.mark.parametrize("p", [4, 6, 9, 15, 65535, 2**31, 2**32 - 1, 2**61 + 1, 2**63 - 1,
                               2**63 - 2, (2**31 - 1) ** 2], ids=str)
def test_GF_not_prime(p):
    with pytest.raises(ValueError, match=rf"prime.*{p}"):
        ffcode.GF(p)


@pytest.mark.parametrize("p", [2.0, 7.0, 65521.0, np.float64(7), np.float32(3), 7 + 0j, "7",
                               b"7", None, [7], np.array(7), Fraction(7), Decimal(7),
                               True, False, np.True_], ids=repr)
def test_GF_not_an_integer(p):
    with pytest.raises(TypeError, match="integer"):
        ffcode.GF(p)


@pytest.mark.parametrize("make", [np.int64, np.uint64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("bad", [2.0, np.float64(2), Fraction(2)], ids=repr)
def test_GF_not_an_integer_after_a_numpy_integer(make, bad):
    """A float equal to a prime is still rejected after GF was called with a numpy int."""
    assert ffcode.GF(make(2)).p == 2
    with pytest.raises(TypeError, match="integer"):
        ffcode.GF(bad)


# -- element arrays ----------------------------------------------------------------------------

def _valid(F, method):
    """Valid positional arguments of a method, and which of them are element arrays."""
    p = F.p
    v3 = rand(p, 3, 1)
    nz3 = (rand(p - 1, 3, 2) + 1).astype(F.dtype)
    A = invertible(p, 2, 3)
    return {
        "add": ([v3, v3], [0, 1]),
        "sub": ([v3, v3], [0, 1]),
        "mul": ([v3, v3], [0, 1]),
        "neg": ([v3], [0]),
        "inv": ([nz3], [0]),
        "matmul": ([rand(p, (2, 3), 4), rand(p, (3, 2), 5)], [0, 1]),
        "matmul_vector": ([rand(p, (2, 3), 4), v3], [0, 1]),
        "rank": ([A], [0]),
        "rref": ([A], [0]),
        "solve": ([A, rand(p, (2, 3), 6)], [0, 1]),
        "solve_vector": ([A, rand(p, 2, 7)], [0, 1]),
        "matinv": ([A], [0]),
        "vandermonde": ([v3, 4], [0]),
    }[method]


METHODS = ["add", "sub", "mul", "neg", "inv", "matmul", "matmul_vector", "rank", "rref",
           "solve", "solve_vector", "matinv", "vandermonde"]
ARG_NAMES = {"add": "ab", "sub": "ab", "mul": "ab", "neg": "a", "inv": "a", "matmul": "AB",
             "matmul_vector": "AB", "rank": "A", "rref": "A", "solve": "AB",
             "solve_vector": "AB", "matinv": "A", "vandermonde": ["points"]}


def _call(F, method, args):
    return getattr(F, method.replace("_vector", ""))(*args)


def _cases(methods):
    return [(m, i) for m in methods for i in range(len(ARG_NAMES[m]))]


@pytest.fixture(params=[3, 2**61 - 1], ids=lambda p: f"p={p}")
def some_field(request):
    return ffcode.GF(request.param)


def test_valid_arguments_are_valid(field):
    """The arguments the tests below spoil are accepted as they are."""
    for m in METHODS:
        args, _ = _valid(field, m)
        _call(field, m, args)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("method, pos", _cases(METHODS), ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, bool, object,
                                   np.complex128, "U3", "datetime64[s]"], ids=str)
def test_wrong_dtype(some_field, method, pos, dtype):
    args, _ = _valid(some_field, method)
    good = args[pos]
    args[pos] = good.astype(dtype) if dtype != "datetime64[s]" else good.astype(np.int64) \
        .astype(dtype)
    name = ARG_NAMES[method][pos]
    with pytest.raises(TypeError, match=rf"'{name}'.*integers"):
        _call(some_field, method, args)


@pytest.mark.parametrize("method, pos", _cases(METHODS), ids=str)
def test_python_floats_and_bools(some_field, method, pos):
    args, _ = _valid(some_field, method)
    good = args[pos]
    for bad in (good.astype(float).tolist(), (good % 2).astype(bool).tolist()):
        args[pos] = bad
        with pytest.raises(TypeError):
            _call(some_field, method, args)


@pytest.mark.parametrize("method, pos", _cases(METHODS), ids=str)
def test_element_too_large(field, method, pos):
    p = field.p
    args, _ = _valid(field, method)
    name = ARG_NAMES[method][pos]
    good = args[pos]
    for big, dtype in [(p, np.int64), (p, np.uint64), (p + 1, np.uint64), (2**64 - 1, np.uint64),
                       (2**63 - 1, np.int64)] + ([(p, np.uint32)] if p < 2**32 else []):
        bad = good.astype(dtype)
        bad.reshape(-1)[-1] = big
        args[pos] = bad
        with pytest.raises(ValueError, match=rf"'{name}'.*>= p = {p}"):
            _call(field, method, args)


@pytest.mark.parametrize("method, pos", _cases(METHODS), ids=str)
def test_element_negative(field, method, pos):
    args, _ = _valid(field, method)
    name = ARG_NAMES[method][pos]
    good = args[pos]
    for neg, dtype in [(-1, np.int64), (-2**63, np.int64), (-1, np.int8), (-5, np.int32)]:
        bad = good.astype(dtype)
        bad.reshape(-1)[0] = neg
        args[pos] = bad
        with pytest.raises(ValueError, match=rf"'{name}'.*negative"):
            _call(field, method, args)
    args[pos] = good.astype(np.int64).tolist()
    args[pos] = np.array(args[pos]) * 0 - 1     # all negative
    with pytest.raises(ValueError, match="negative"):
        _call(field, method, args)


# -- asarray and random ------------------------------------------------------------------------

@pytest.mark.parametrize("x", [
    np.array([1.0, 2.0]), [1.5], [1.0], np.array([True, False]), [True, False], True,
    np.array([1, 2], dtype=object) * 1.0, np.array([1, None], dtype=object),
    np.array([1, True], dtype=object), np.array([1, np.True_], dtype=object),
    np.array([1, 2.0], dtype=object), np.array([1, "2"], dtype=object),
    np.array([1, Fraction(1)], dtype=object), ["1", "2"], [1j], 1.0, np.float64(2),
], ids=repr)
def test_asarray_rejects_non_integers(some_field, x):
    with pytest.raises(TypeError, match="'x'"):
        some_field.asarray(x)


def test_random_bad_shape(some_field):
    with pytest.raises((ValueError, TypeError)):
        some_field.random((-1, 3))
    with pytest.raises(TypeError):
        some_field.random(2.5)


# -- shapes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3), (2,))], ids=str)
def test_elementwise_shapes_do_not_broadcast(some_field, op, shapes):
    p = some_field.p
    a, b = rand(p, shapes[0], 1), rand(p, shapes[1], 2)
    with pytest.raises(ValueError, match="broadcast"):
        getattr(some_field, op)(a, b)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4), (1, 1, 1)], ids=str)
def test_matmul_A_not_2d(some_field, shape):
    p = some_field.p
    A = rand(p, shape, 1)
    B = rand(p, (shape[-1] if shape else 3, 2), 2)
    with pytest.raises(ValueError, match=rf"'A'.*2-D.*{len(shape)}-D"):
        some_field.matmul(A, B)


@pytest.mark.parametrize("shape", [(), (3, 2, 2)], ids=str)
def test_matmul_B_not_1d_or_2d(some_field, shape):
    p = some_field.p
    with pytest.raises(ValueError, match=r"'B'.*1-D or 2-D"):
        some_field.matmul(rand(p, (2, 3), 1), rand(p, shape, 2))


@pytest.mark.parametrize("shapes", [((2, 3), (4, 2)), ((2, 3), (2, 3)), ((2, 3), (4,)),
                                    ((2, 0), (1, 3)), ((0, 3), (0,)), ((3, 1), (3, 1))],
                         ids=str)
def test_matmul_inner_dimensions_differ(some_field, shapes):
    p = some_field.p
    with pytest.raises(ValueError, match=r"'A' and 'B'.*inner"):
        some_field.matmul(rand(p, shapes[0], 1), rand(p, shapes[1], 2))


@pytest.mark.parametrize("method", ["rank", "rref", "matinv"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 2, 2), (0,)], ids=str)
def test_matrix_methods_need_2d(some_field, method, shape):
    with pytest.raises(ValueError, match=r"'A'.*2-D"):
        getattr(some_field, method)(rand(some_field.p, shape, 1))


@pytest.mark.parametrize("method", ["solve", "matinv"])
@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (1, 0), (0, 1), (130, 131)], ids=str)
def test_solve_matinv_need_square(some_field, method, shape):
    p = some_field.p
    args = [rand(p, shape, 1)] + ([rand(p, shape[0], 2)] if method == "solve" else [])
    with pytest.raises(ValueError, match=rf"'A'.*square.*{shape[0]}, {shape[1]}"):
        getattr(some_field, method)(*args)


def test_solve_A_not_2d(some_field):
    p = some_field.p
    for shape in [(), (3,), (3, 3, 3)]:
        with pytest.raises(ValueError, match=r"'A'.*2-D"):
            some_field.solve(rand(p, shape, 1), rand(p, 3, 2))


@pytest.mark.parametrize("bshape", [(), (3, 1, 1), (2,), (4,), (2, 1), (4, 3), (0, 3)],
                         ids=str)
def test_solve_B_shape(some_field, bshape):
    p = some_field.p
    A = invertible(p, 3, 1)
    with pytest.raises(ValueError, match="'B'"):
        some_field.solve(A, rand(p, bshape, 2))


@pytest.mark.parametrize("shape", [(), (2, 3), (1, 1), (2, 2, 2)], ids=str)
def test_vandermonde_points_not_1d(some_field, shape):
    with pytest.raises(ValueError, match=r"'points'.*1-D"):
        some_field.vandermonde(rand(some_field.p, shape, 1), 3)


@pytest.mark.parametrize("ncols", [-1, -100, np.int64(-2)], ids=repr)
def test_vandermonde_negative_ncols(some_field, ncols):
    with pytest.raises(ValueError, match=r"'ncols'.*non-negative"):
        some_field.vandermonde(rand(some_field.p, 3, 1), ncols)


@pytest.mark.parametrize("ncols", [3.0, np.float64(3), True, np.True_, "3", None, [3],
                                   Fraction(3)], ids=repr)
def test_vandermonde_ncols_not_an_integer(some_field, ncols):
    with pytest.raises(TypeError, match=r"'ncols'.*integer"):
        some_field.vandermonde(rand(some_field.p, 3, 1), ncols)


# -- singular matrices and zero inverses ---------------------------------------------------------

def _singular(p):
    dup = rand(p, (5, 5), 3)
    dup[4] = dup[1]
    col = rand(p, (130, 130), 4)
    col[:, 100] = 0
    last = rand(p, (130, 130), 5)
    last[-1] = 0
    return {
        "zero1x1": np.zeros((1, 1), np.uint32),
        "zero3x3": np.zeros((3, 3), np.uint32),
        "2x2": np.array([[1, 2], [2, 4]], np.int64) % p if p > 2 else np.ones((2, 2), np.int64),
        "dup_row5x5": dup,
        "rank4_6x6": low_rank(p, 6, 6, 4, 6),
        "zero_col130": col,                              # blocked echelon path
        "zero_last_row130": last,
        "rank30_200": low_rank(p, 200, 200, 30, 7),
        "rank199_200": low_rank(p, 200, 200, 199, 8),
    }


def test_solve_singular(field):
    p = field.p
    for name, A in _singular(p).items():
        n = A.shape[0]
        for B in (rand(p, n, 1), rand(p, (n, 3), 2), np.zeros((n, 0), np.uint32)):
            with pytest.raises(np.linalg.LinAlgError, match="singular"):
                field.solve(A, B)


def test_matinv_singular(field):
    for name, A in _singular(field.p).items():
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            field.matinv(A)


def test_inv_of_zero(field):
    p = field.p
    cases = [np.array([0]), np.array([1 % p, 0, p - 1]), np.zeros((2, 3), np.uint64),
             np.array([[1, 1], [1, 0]]), np.array(0)]
    for a in cases:
        with pytest.raises(ZeroDivisionError, match="zero"):
            field.inv(a)
    with pytest.raises(ZeroDivisionError, match=r"index \[1, 0\]"):
        field.inv(np.array([[1, 1], [0, 1]]))
