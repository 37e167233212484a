"""F.matmul against galois and an exact Python-int oracle, across matmul's blocking."""
import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import ffcode
from ffcode import _matmul

from helpers import (PRIMES, as_objects, assert_field_array, extremes, layouts,
                           obj_matmul, rand, to_galois, worst_values)

SHAPES = [  # (m, k, n)
    (0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0), (0, 5, 0), (1, 1, 1), (1, 6, 1), (6, 1, 5),
    (9, 4, 2), (2, 4, 9), (17, 3, 2), (2, 3, 17), (7, 33, 5), (12, 70, 11),
]
SCHEME_LIMIT = 70_000      # the longest inner dimension taken with random operands


def galois_matmul(p, A, B):
    if A.shape[1] == 0:   # galois needs a non-empty inner dimension
        return np.zeros((A.shape[0],) + B.shape[1:], dtype=object)
    return to_galois(p, A) @ to_galois(p, B)


def operands(field, shape, seed):
    """Random A (m x k) and B (k x n) in the field for shape = (m, k, n)."""
    m, k, n = shape
    return rand(field.p, (m, k), seed), rand(field.p, (k, n), seed + 1)


def extreme_matrix(p, shape, seed):
    """Entries drawn from the extreme elements of p (largest centred values and limbs)."""
    ex = np.array(extremes(p), dtype=np.uint64)
    pick = np.random.default_rng(seed).integers(0, len(ex), size=shape)
    return ex[pick].astype(np.uint32 if p < 2**32 else np.uint64)


def block_ks(p):
    """Inner dimensions just below, at and above the exact block of the scheme matmul takes."""
    ks = {1, 2, 31, 32, 33, 63, 64, 65, 255, 256, 257}
    for k in sorted(ks):
        b = _matmul.limb_plan(p, k).block
        ks |= {b - 1, b, b + 1, 2 * b, 2 * b + 1}
    return sorted(k for k in ks if 1 <= k <= SCHEME_LIMIT)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_shapes(field, shape):
    A, B = operands(field, shape, 1)
    assert_field_array(field, field.matmul(A, B), galois_matmul(field.p, A, B))


@pytest.mark.parametrize("shape", [(5, 7, 3), (16, 40, 9), (1, 9, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_layouts(field, shape):
    """C-ordered, Fortran-ordered and strided (A[::2, 1::3]) operands, in every combination."""
    A, B = operands(field, shape, 3)
    expected = galois_matmul(field.p, A, B)
    for la in layouts(A, seed=1).values():
        for lb in layouts(B, seed=2).values():
            assert_field_array(field, field.matmul(la, lb), expected)
    assert_field_array(field, field.matmul(B.T, A.T), expected.T)


@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (9, 1), (1, 9), (0, 4), (4, 0), (0, 0)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_vector(field, shape):
    m, k = shape
    p = field.p
    A, b = rand(p, (m, k), 5), rand(p, k, 6)
    got = field.matmul(A, b)
    assert got.shape == (m,)
    expected = galois_matmul(p, A, b[:, None])[:, 0] if m else np.zeros(0, dtype=object)
    assert_field_array(field, got, expected)
    # strided vector and Fortran matrix
    bb = np.zeros(3 * k, dtype=b.dtype)
    bb[::3] = b
    assert_field_array(field, field.matmul(np.asfortranarray(A), bb[::3]), expected)


@pytest.mark.parametrize("shape", [(300, 2, 250), (1, 3000, 1), (250, 40, 3)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_larger(field, shape):
    """Many rows and columns, and one long dot product."""
    A, B = operands(field, shape, 20)
    assert_field_array(field, field.matmul(A, B), obj_matmul(field.p, A, B))


def test_matmul_identity_and_zero(field):
    p = field.p
    A = rand(p, (20, 30), 7)
    assert_field_array(field, field.matmul(np.eye(20, dtype=np.int64), A), A)
    assert_field_array(field, field.matmul(A, np.eye(30, dtype=field.dtype)), A)
    assert_field_array(field, field.matmul(A, np.zeros((30, 4), np.uint8)),
                       np.zeros((20, 4), dtype=object))


def test_matmul_other_integer_dtypes(field):
    p = field.p
    A = rand(min(p, 128), (6, 8), 8)
    B = rand(p, (8, 5), 9)
    expected = galois_matmul(p, A, B)
    for dt in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64):
        assert_field_array(field, field.matmul(A.astype(dt), B), expected)
    assert_field_array(field, field.matmul(A.tolist(), B.tolist()), expected)


def test_matmul_block_boundaries(field):
    """Inner dimensions around scheme(p, k).block: uniform and extreme entries."""
    p = field.p
    for k in block_ks(p):
        for A, B in [(rand(p, (3, k), k), rand(p, (k, 2), k + 1)),
                     (extreme_matrix(p, (3, k), k), extreme_matrix(p, (k, 2), k + 1))]:
            got = field.matmul(A, B)
            assert_field_array(field, got, obj_matmul(p, A, B))
            if k <= 300:
                assert_field_array(field, got, galois_matmul(p, A, B))


def _chosen_blocks(p):
    """(k, scheme) for every block length matmul uses for p, up to 9 million."""
    out = {}
    for k in [1, 32, 33, 64, 65, 100, 256, 257, 511, 512, 513, 2047, 2048, 10**4, 10**5, 10**6]:
        s = _matmul.limb_plan(p, k)
        if s.block <= 9 * 10**6 and _matmul.limb_plan(p, s.block) is s:
            out[s.block] = s
    return sorted(out.items(), key=lambda kv: kv[0])


def test_matmul_sums_at_the_exactness_limit(field):
    """All-extreme operands over a whole block: the float64 sums come close to 2**53.

    Row i of A is constant a_i and column j of B constant b_j, so the exact result is
    k * a_i * b_j mod p. For p = 65521 the block is about 8.4 million long.
    """
    p = field.p
    for block, s in _chosen_blocks(p):
        rows, cols = worst_values(p, s)
        if block <= 5000:
            rows = cols = extremes(p)
        for k in ([block] if block > 10**6 else [block, block + 1]):
            a = np.array(rows, dtype=np.uint64).astype(field.dtype)
            b = np.array(cols, dtype=np.uint64).astype(field.dtype)
            A = np.repeat(a[:, None], k, axis=1)
            B = np.repeat(b[None, :], k, axis=0)
            got = field.matmul(A, B)
            assert_field_array(field, got, [[k * x * y % p for y in cols] for x in rows])


def test_worst_values_reach_the_limit():
    """The sums of the previous test come within a factor 8 of the 2**53 limit (2 for most
    blocks), with odd terms, so that a block a few times too long would round."""
    for p in PRIMES:
        for block, s in _chosen_blocks(p):
            rows, cols = worst_values(p, s)
            dtype = np.uint32 if p < 2**32 else np.uint64
            fa = s.left.split(p, np.array([rows], dtype=np.uint64).astype(dtype))[:, 0, :]
            fb = s.right.split(p, np.array([cols], dtype=np.uint64).astype(dtype).T)[:, :, 0]
            terms = [np.abs(np.outer(fa[ia], fb[ib])) for ia, ib in s.products]
            assert max(t.max() for t in terms) * block <= 2**53
            odd = max(np.where(t % 2 == 1, t, 0).max() for t in terms)
            assert odd * block > 2**50, (p, block)


@pytest.mark.parametrize("p", PRIMES)
def test_every_scheme(p, monkeypatch):
    """Each of matmul's schemes (plain, split-left, Karatsuba 2, 3, 4), forced, is exact."""
    F = ffcode.GF(p)
    for s in _matmul._limb_plans(p):
        if s.block < 1:
            continue
        monkeypatch.setattr(_matmul, "limb_plan", lambda p_, k_, s=s: s)
        top = min(s.block, 3000)
        for k in sorted({1, 5, top, top + 1, 2 * top + 1}):
            for A, B in [(rand(p, (3, k), k), rand(p, (k, 4), k + 1)),
                         (extreme_matrix(p, (3, k), k), extreme_matrix(p, (k, 4), k + 1))]:
                assert_field_array(F, F.matmul(A, B), obj_matmul(p, A, B))


@pytest.mark.parametrize("negate", [False, True])
def test_matmul_into_accumulates(field, negate):
    """out += A @ B (or out -= A @ B) in place, out a strided view, over several blocks."""
    p = field.p
    for k in sorted({0, 1, 40, 2 * min(_matmul.limb_plan(p, 40).block, 1100) + 1}):
        A, B = extreme_matrix(p, (5, k), 10), rand(p, (k, 6), 11)
        big = rand(p, (10, 18), 12)
        out = big[::2, 1::3]
        before = out.astype(object)
        untouched = big.copy()
        _matmul.matmul_into(p, A, B, out, accumulate=True, negate=negate)
        prod = obj_matmul(p, A, B)
        expected = (before - prod) % p if negate else (before + prod) % p
        assert np.array_equal(out.astype(object), expected)
        mask = np.ones(big.shape, bool)
        mask[::2, 1::3] = False
        assert np.array_equal(big[mask], untouched[mask])
        # and without accumulating: out = A @ B
        _matmul.matmul_into(p, A, B, out)
        assert np.array_equal(out.astype(object), prod)


def test_inputs_are_not_modified(field):
    p = field.p
    A, B = rand(p, (8, 40), 13), rand(p, (40, 3), 14)
    A0, B0 = A.copy(), B.copy()
    out = field.matmul(A, B)
    field.matmul(A, B[:, 0])
    assert np.array_equal(A, A0) and np.array_equal(B, B0)
    assert not np.shares_memory(out, A) and not np.shares_memory(out, B)


@st.composite
def matmul_case(draw):
    p = draw(st.sampled_from(PRIMES))
    dtype = np.uint32 if p < 2**32 else np.uint64
    m, k, n = (draw(st.integers(0, 6)) for _ in range(3))
    elements = st.one_of(st.integers(0, p - 1), st.sampled_from(extremes(p)))
    A = draw(hnp.arrays(dtype, (m, k), elements=elements))
    vector = draw(st.booleans())
    B = draw(hnp.arrays(dtype, (k,) if vector else (k, n), elements=elements))
    return p, A, B


@given(case=matmul_case())
def test_matmul_hypothesis(case):
    p, A, B = case
    F = ffcode.GF(p)
    got = F.matmul(A, B)
    expected = as_objects(galois_matmul(p, A, B if B.ndim == 2 else B[:, None]))
    assert_field_array(F, got, expected if B.ndim == 2 else expected[:, 0])


def test_concurrent_calls_from_threads():
    """The kernels release the GIL: calls from several Python threads at once stay exact."""
    jobs = []
    for i, p in enumerate(PRIMES):
        F = ffcode.GF(p)
        A, B = rand(p, (60, 300), i), rand(p, (300, 50), i + 100)
        M = rand(p, (120, 110), i + 200)
        jobs.append((F, A, B, M))
    expected = [(F.matmul(A, B), F.rref(M)) for F, A, B, M in jobs]
    for F, A, B, M in jobs[:3]:   # and the sequential results are right
        assert_field_array(F, F.matmul(A, B), obj_matmul(F.p, A, B))

    def work(job):
        F, A, B, M = job
        return F.matmul(A, B), F.rref(M)

    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            for (mm, rr), (emm, err) in zip(pool.map(work, jobs), expected):
                assert np.array_equal(mm, emm) and np.array_equal(rr, err)


# -- the integer products and the passes on every core --------------------------------------------

INTEGER_PRIMES = [2**26 + 15, 2**31 - 1, 2**31 + 11, 4294967291]
ROUTED_SHAPES = [(1, 40, 5), (9, 300, 7), (33, 257, 65), (64, 64, 64)]


@pytest.mark.parametrize("p", INTEGER_PRIMES)
@pytest.mark.parametrize("shape", ROUTED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_integer_route(p, shape, monkeypatch):
    """Products that mul32's integer kernel takes (forced at every size, rows shared among
    threads): exact in all three modes, into a strided out, at extreme values."""
    monkeypatch.setattr(_matmul, "INTEGER_MIN_WORK", 0)
    monkeypatch.setattr(_matmul, "PARALLEL_WORK", 0)
    m, k, n = shape
    assert _matmul._integer_serves(p, m, k, n)
    for A, B in [(rand(p, (m, k), 1), rand(p, (k, n), 2)),
                 (extreme_matrix(p, (m, k), 3), extreme_matrix(p, (k, n), 4))]:
        check_modes(p, A, B)


@pytest.mark.parametrize("p", [65521, 1048573])
@pytest.mark.parametrize("shape", ROUTED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_plain_product_in_parts(p, shape, monkeypatch):
    """The one-dgemm product with its centring and fold run in row ranges on every core."""
    monkeypatch.setattr(_matmul, "PARALLEL_WORK", 0)
    m, k, n = shape
    for A, B in [(rand(p, (m, k), 5), rand(p, (k, n), 6)),
                 (extreme_matrix(p, (m, k), 7), extreme_matrix(p, (k, n), 8))]:
        check_modes(p, A, B)


def check_modes(p, A, B):
    F = ffcode.GF(p)
    m, n = A.shape[0], B.shape[1]
    expected = obj_matmul(p, A, B)
    assert_field_array(F, F.matmul(A, B), expected)
    assert_field_array(F, F.matmul(layouts(A, seed=9)["strided"], np.asfortranarray(B)),
                       expected)
    big = rand(p, (2 * m, 3 * n), 10)
    out = big[::2, 1::3]
    before = out.astype(object)
    _matmul.matmul_into(p, A, B, out, accumulate=True)
    assert np.array_equal(out.astype(object), (before + expected) % p)
    _matmul.matmul_into(p, A, B, out, accumulate=True, negate=True)
    assert np.array_equal(out.astype(object), before)


@pytest.mark.bounded(30)
@pytest.mark.parametrize("p", [65521, 2**31 - 1])
def test_products_in_a_forked_child(p, monkeypatch, bounded):
    """A child forked after the parent's products ran on the thread pool has none of the
    pool's threads: it makes its own and its products finish."""
    monkeypatch.setattr(_matmul, "PARALLEL_WORK", 0)
    monkeypatch.setattr(_matmul, "INTEGER_MIN_WORK", 0)
    F = ffcode.GF(p)
    A = rand(p, (64, 64), 1)
    expected = F.matmul(A, A)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert np.array_equal(pool.apply_async(F.matmul, (A, A)).get(timeout=20), expected)
