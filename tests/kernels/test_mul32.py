"""The integer-SIMD product for p < 2**32 (ext/mul32.pyx): against Python integers and
python-flint, at its group boundaries with the largest products of either sign, across its
register tiles and cache blocks, in every mode and layout, on both kernels (AVX2 and the
portable C one), from two threads at once, and its refusals."""
import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ffcode._ext import mul32

from helpers import flint_product, layouts, obj_matmul, rand

# Just above 2**26 (one group per pass), 2**30 + 3 (groups of 32), 2**31 - 1 (8),
# 2**31 + 11 (7), 3 * 2**30 + 1 (3), the largest uint32 prime (2), and the largest modulus
# taken, 2**32 - 1 (composite: the kernel never inverts), beside tiny ones.
PRIMES = [2, 3, 65521, 2**26 + 15, 2**30 + 3, 2**31 - 1, 2**31 + 11, 3 * 2**30 + 1,
          2**32 - 5, 2**32 - 1]
KERNELS = [False, True]     # portable=False is the AVX2 kernel where it was built
KC = 256                    # inner terms per pass (mul32.h)
MR, NR = 2, 8               # the register tile
MC, NC = 120, 128           # rows and columns of a block


def kernel_id(portable):
    return "portable" if portable else ("avx2" if mul32.SIMD else "portable-only")


def product(p, A, B, out=None, mode=0, portable=False):
    out = np.zeros((A.shape[0], B.shape[1]), np.uint32) if out is None else out
    mul32.matmul(A, B, out, p, mode, portable)
    return out


def assert_exact(p, got, expected):
    assert got.dtype == np.uint32
    assert got.shape == expected.shape
    assert np.array_equal(got.astype(object), expected), f"p = {p}"


@pytest.mark.parametrize("p", PRIMES)
def test_group_size(p):
    """G is the most products of centred elements (|x| <= p // 2) an int64 holds, at most
    one pass: G h**2 < 2**63 <= (G + 1) h**2."""
    h, G = p // 2, mul32.group_size(p)
    assert G * h * h < 2**63
    assert G == KC or (G + 1) * h * h >= 2**63
    assert {2**31 - 1: 8, 2**31 + 11: 7, 3 * 2**30 + 1: 3, 2**32 - 5: 2}.get(p, G) == G


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("p", PRIMES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 9, 1), (5, 1, 3), (7, 13, 9), (2, 8, 8),
                                   (3, KC + 1, 17), (MC + 1, 3, 2), (2, 3, NC + 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_random(p, shape, portable):
    """Random operands against Python integers, on and off the tile and block edges."""
    m, k, n = shape
    A, B = rand(p, (m, k), k), rand(p, (k, n), n)
    assert_exact(p, product(p, A, B, portable=portable), obj_matmul(p, A, B))


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("p", [2**26 + 15, 2**31 - 1, 2**32 - 5])
def test_flint(p, portable):
    """A product over several blocks each way (rows, columns, passes) against python-flint."""
    A, B = rand(p, (2 * MC + 7, 3 * KC + 5), 1), rand(p, (3 * KC + 5, NC + 37), 2)
    assert_exact(p, product(p, A, B, portable=portable), flint_product(p, A, B))


def extreme_cases(p):
    """Operand values whose products are the largest of both signs: h = p // 2 is centred to
    +h and p - h to -h (h = (p - 1) / 2 and (p + 1) / 2 for odd p), and p - 1 to -1."""
    h = p // 2
    return {"h*h": (h, h), "-h*-h": (p - h, p - h), "h*-h": (h, p - h), "-1*-1": (p - 1, p - 1),
            "alternating": None}


def extreme_operands(p, case, m, k, n):
    h = p // 2
    if case == "alternating":          # +-h in a checkerboard: group sums of both signs
        A = np.where((np.arange(m)[:, None] + np.arange(k)) % 2, h, p - h)
        B = np.where((np.arange(k)[:, None] // 3 + np.arange(n)) % 2, p - h, h)
        return A.astype(np.uint32), B.astype(np.uint32)
    a, b = extreme_cases(p)[case]
    return np.full((m, k), a, np.uint32), np.full((k, n), b, np.uint32)


def boundary_ks(p):
    """Inner dimensions around the group size G and the pass KC: G - 1, G, G + 1, 2 G, ..."""
    G = mul32.group_size(p)
    ks = {G - 1, G, G + 1, 2 * G, 2 * G + 1, 3 * G - 1, KC - 1, KC, KC + 1, 2 * KC + G}
    return sorted(k for k in ks if k >= 1)


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("case", list(extreme_cases(3)))
@pytest.mark.parametrize("p", [3, 2**26 + 15, 2**31 - 1, 2**31 + 11, 3 * 2**30 + 1,
                               2**32 - 5, 2**32 - 1])
def test_extremes_at_group_boundaries(p, case, portable):
    """Every group sum as large as the bound allows, of either sign, for k at and around the
    group size and the pass; 3 x 9 crosses the tile on both sides."""
    for k in boundary_ks(p):
        A, B = extreme_operands(p, case, 3, k, 9)
        assert_exact(p, product(p, A, B, portable=portable), obj_matmul(p, A, B))


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("p", [2**31 - 1, 2**32 - 5])
def test_long_extremes(p, portable):
    """Thousands of maximal group sums into one output (the high words H take them all)."""
    k = 20 * KC + 3
    for case in ("h*h", "h*-h"):
        A, B = extreme_operands(p, case, 2, k, 3)
        assert_exact(p, product(p, A, B, portable=portable), obj_matmul(p, A, B))


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("mode", [1, -1])
@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**32 - 5])
def test_modes(p, mode, portable):
    """out + A @ B and out - A @ B from a random out, canonical."""
    A, B, C = rand(p, (9, 300), 1), rand(p, (300, 11), 2), rand(p, (9, 11), 3)
    got = product(p, A, B, C.copy(), mode, portable)
    assert_exact(p, got, (C.astype(object) + mode * obj_matmul(p, A, B)) % p)


@pytest.mark.parametrize("shape", [(0, 3, 2), (3, 0, 2), (3, 4, 0), (0, 0, 0), (1, 0, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_empty(shape):
    """m, k or n = 0: k = 0 makes out zero in mode 0 and leaves it alone otherwise."""
    m, k, n = shape
    p = 2**31 - 1
    A, B = rand(p, (m, k), 1), rand(p, (k, n), 2)
    assert np.array_equal(product(p, A, B, np.full((m, n), 7, np.uint32)), np.zeros((m, n)))
    for mode in (1, -1):
        got = product(p, A, B, np.full((m, n), 7, np.uint32), mode)
        assert np.array_equal(got, np.full((m, n), 7))
    assert mul32.pack_b(B, p).shape == (k, n)


@pytest.mark.parametrize("portable", KERNELS, ids=kernel_id)
@pytest.mark.parametrize("p", [2**31 - 1, 2**32 - 5])
def test_layouts(p, portable):
    """Transposed, strided, reversed and read-only operands, and a strided out."""
    A, B = rand(p, (11, 19), 1), rand(p, (19, 10), 2)
    expected = obj_matmul(p, A, B)
    for name_a, a in layouts(A, 3).items():
        for name_b, b in layouts(B, 4).items():
            assert_exact(p, product(p, a, b, portable=portable), expected)
    a_t = np.ascontiguousarray(A.T).T                   # a transpose's view
    big = np.zeros((30, 40), np.uint32)
    out = big[1::2, ::-4][:11, :10]                     # strides (2 rows, -4 columns)
    product(p, a_t, np.asfortranarray(B), out, 0, portable)
    assert_exact(p, out, expected)
    untouched = big.copy()
    untouched[1::2, ::-4][:11, :10] = 0
    assert not untouched.any()


def test_threads():
    """Two threads multiply disjoint rows by one packed B at once (neither holds the GIL),
    and their rows are those of the whole product."""
    p = 2**32 - 5
    A, B = rand(p, (301, 517), 1), rand(p, (517, 203), 2)
    packed = mul32.pack_b(B, p)
    out = np.zeros((301, 203), np.uint32)
    threads = [threading.Thread(target=mul32.mul_packed, args=(A[rows], packed, out[rows], 0))
               for rows in (slice(0, 150), slice(150, 301))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_exact(p, out, flint_product(p, A, B))


@given(p=st.sampled_from(PRIMES), m=st.integers(0, 12), k=st.integers(0, 40),
       n=st.integers(0, 20), mode=st.sampled_from([0, 1, -1]), portable=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_hypothesis(p, m, k, n, mode, portable, seed):
    A, B, C = rand(p, (m, k), seed), rand(p, (k, n), seed + 1), rand(p, (m, n), seed + 2)
    got = product(p, A, B, C.copy(), mode, portable)
    base = C.astype(object) if mode else 0
    assert_exact(p, got, (base + (mode or 1) * obj_matmul(p, A, B)) % p)


def test_bad_input():
    p = 2**31 - 1
    A, B, out = rand(p, (3, 4), 1), rand(p, (4, 5), 2), np.zeros((3, 5), np.uint32)
    for bad_p, error in ((1, ValueError), (2**32, ValueError), (-5, ValueError),
                         (2.0, TypeError), (True, TypeError)):
        with pytest.raises(error, match="Argument 'p'"):
            mul32.matmul(A, B, out, bad_p, 0)
        with pytest.raises(error, match="Argument 'p'"):
            mul32.group_size(bad_p)
    with pytest.raises(ValueError, match="Argument 'mode' must be 0, 1 or -1, not 2"):
        mul32.matmul(A, B, out, p, 2)
    with pytest.raises(TypeError, match="Argument 'A' must have dtype uint32, not int64"):
        mul32.matmul(A.astype(np.int64), B, out, p, 0)
    with pytest.raises(TypeError, match="Argument 'B' must be a numpy array, not list"):
        mul32.matmul(A, B.tolist(), out, p, 0)
    with pytest.raises(TypeError, match="Argument 'out' must have dtype uint32"):
        mul32.matmul(A, B, out.astype(np.uint64), p, 0)
    with pytest.raises(ValueError, match="Argument 'A' must be 2-D, not 1-D"):
        mul32.matmul(A[0], B, out, p, 0)
    with pytest.raises(ValueError, match=r"matching inner dimensions, not \(3, 4\) @ \(3, 5\)"):
        mul32.matmul(A, B[:3], out, p, 0)
    with pytest.raises(ValueError, match=r"'out' must have shape \(3, 5\), not \(3, 4\)"):
        mul32.matmul(A, B, out[:, :4], p, 0)
    read_only = out.copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="Argument 'out' must be writeable"):
        mul32.matmul(A, B, read_only, p, 0)
    square = rand(p, (4, 4), 3)
    with pytest.raises(ValueError, match="Arguments 'A' and 'out' must not overlap"):
        mul32.matmul(square, square.copy(), square, p, 0)
    with pytest.raises(TypeError):
        mul32.mul_packed(A, B, out, 0)          # B not packed
    with pytest.raises(ValueError, match="Argument 'B' must be made by pack_b"):
        mul32.mul_packed(A, mul32.PackedB(), out, 0)
    assert not out.any()
