"""ffcode.codes: MDS, PolynomialCode and MatDot give the exact product from any
recovery_threshold workers, and every code (LCC too) keeps the encode/compute/decode contract."""
import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, MatDot, PolynomialCode

from helpers import assert_field_array, layouts, obj_matmul, rand

CODE_PRIMES = [65521, 2**31 - 1, 2**61 - 1]


def all_results(code, shares, *args):
    """{worker: local result} for every worker."""
    return {i: code.compute(share, *args) for i, share in enumerate(shares)}


def subsets(code, seed):
    """Worker subsets to decode from: the first R, the last R, and a random subset of every
    size from R to N."""
    R, N = code.recovery_threshold, code.n_workers
    rng = np.random.default_rng(seed)
    out = [list(range(R)), list(range(N - R, N))]
    out += [sorted(int(w) for w in rng.choice(N, size, replace=False)) for size in range(R, N + 1)]
    return out


def assert_decodes(code, results, expected, seed=0):
    """Every subset of subsets() decodes to expected exactly."""
    F = code.F
    for workers in subsets(code, seed):
        got = code.decode({w: results[w] for w in workers})
        if isinstance(expected, list):
            assert isinstance(got, list) and len(got) == len(expected), workers
            for g, e in zip(got, expected):
                assert_field_array(F, g, e)
        else:
            assert_field_array(F, got, expected)


# -- the codes of products -------------------------------------------------------------------


@pytest.mark.parametrize("p", CODE_PRIMES)
@pytest.mark.parametrize("shape, k", [((37, 23), 4), ((12, 5), 3), ((1, 1), 1), ((1, 1), 3),
                                      ((2, 6), 5)], ids=str)
def test_mds(p, shape, k):
    """y = A @ x from every subset size, one encode reused for vectors and matrices x."""
    F = ffcode.GF(p)
    code = MDS(F, k, k + 3)
    assert (code.recovery_threshold, code.n_workers) == (k, k + 3)
    A = rand(p, shape, 1)
    shares = code.encode(A)
    assert len(shares) == k + 3
    assert all(s.shape == (-(-shape[0] // k), shape[1]) for s in shares)
    for seed, x in enumerate([rand(p, shape[1], 2), rand(p, (shape[1], 3), 3),
                              rand(p, (shape[1], 1), 4)]):
        results = all_results(code, shares, x)
        expected = obj_matmul(p, A, x if x.ndim == 2 else x[:, None])
        assert_decodes(code, results, expected if x.ndim == 2 else expected[:, 0], seed)


@pytest.mark.parametrize("p", CODE_PRIMES)
@pytest.mark.parametrize("a, b, shape", [(1, 1, (4, 5, 3)), (2, 3, (37, 23, 19)),
                                         (3, 2, (5, 4, 7)), (4, 1, (37, 2, 1)),
                                         (2, 2, (1, 1, 1))], ids=str)
def test_polynomial_code(p, a, b, shape):
    """C = A @ B with A in a row blocks and B in b column blocks, from every subset size."""
    F = ffcode.GF(p)
    m, inner, n = shape
    code = PolynomialCode(F, a, b, a * b + 3)
    assert (code.recovery_threshold, code.n_workers) == (a * b, a * b + 3)
    A, B = rand(p, (m, inner), 5), rand(p, (inner, n), 6)
    shares = code.encode(A, B)
    assert len(shares) == code.n_workers
    assert shares[0][0].shape == (-(-m // a), inner)
    assert shares[0][1].shape == (inner, -(-n // b))
    assert_decodes(code, all_results(code, shares), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", CODE_PRIMES)
@pytest.mark.parametrize("s, shape", [(1, (4, 5, 3)), (2, (6, 10, 5)), (4, (37, 23, 19)),
                                      (3, (2, 1, 2)), (2, (1, 1, 1))], ids=str)
def test_matdot(p, s, shape):
    """C = A @ B with the inner dimension in s blocks, from every subset size (R = 2s - 1)."""
    F = ffcode.GF(p)
    m, inner, n = shape
    code = MatDot(F, s, 2 * s + 2)
    assert (code.recovery_threshold, code.n_workers) == (2 * s - 1, 2 * s + 2)
    A, B = rand(p, (m, inner), 7), rand(p, (inner, n), 8)
    shares = code.encode(A, B)
    assert len(shares) == code.n_workers
    assert shares[0][0].shape == (m, -(-inner // s))
    assert shares[0][1].shape == (-(-inner // s), n)
    assert_decodes(code, all_results(code, shares), obj_matmul(p, A, B))


def test_product_codes_on_tiny_fields():
    """GF(2) holds one worker, GF(3) two: the codes that fit still decode exactly."""
    for p, code in [(2, MDS(ffcode.GF(2), 1, 1)), (3, MDS(ffcode.GF(3), 2, 2)),
                    (3, MDS(ffcode.GF(3), 1, 2))]:
        A, x = rand(p, (5, 4), p), rand(p, (4, 2), p + 1)
        assert_decodes(code, all_results(code, code.encode(A), x), obj_matmul(p, A, x))
    F = ffcode.GF(3)
    A, B = rand(3, (5, 4), 9), rand(3, (4, 3), 10)
    for code in [PolynomialCode(F, 2, 1, 2), PolynomialCode(F, 1, 2, 2), MatDot(F, 1, 2)]:
        assert_decodes(code, all_results(code, code.encode(A, B)), obj_matmul(3, A, B))
    for bigger in [lambda: MatDot(F, 2, 3), lambda: PolynomialCode(F, 1, 1, 3),
                   lambda: MDS(ffcode.GF(2), 1, 2)]:
        with pytest.raises(ValueError, match="too small"):
            bigger()


@pytest.mark.parametrize("p", [65521, 2**61 - 1])
def test_non_contiguous_inputs(p):
    """Fortran-ordered, strided, reversed and read-only operands give the same results."""
    F = ffcode.GF(p)
    A, B, x = rand(p, (9, 7), 11), rand(p, (7, 5), 12), rand(p, 7, 13)
    AB, Ax = obj_matmul(p, A, B), obj_matmul(p, A, x[:, None])[:, 0]
    mds, poly, matdot = MDS(F, 2, 4), PolynomialCode(F, 2, 2, 5), MatDot(F, 2, 4)
    for la, lb, lx in zip(layouts(A, 1).values(), layouts(B, 2).values(),
                          layouts(x, 3).values()):
        assert_decodes(mds, all_results(mds, mds.encode(la), lx), Ax)
        assert_decodes(mds, all_results(mds, mds.encode(A), B), AB)
        for code in (poly, matdot):
            assert_decodes(code, all_results(code, code.encode(la, lb)), AB)


def test_custom_points():
    """Any distinct nonzero points work, including p - 1 and large elements."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    A, B = rand(p, (6, 5), 14), rand(p, (5, 4), 15)
    pts = [p - 1, 5, 2**30, 123456789, 3]
    for code in [MDS(F, 3, 5, points=pts), PolynomialCode(F, 2, 2, 5, points=pts),
                 MatDot(F, 2, 5, points=np.array(pts, np.uint64))]:
        assert code.points.tolist() == pts
        assert code.points.dtype == F.dtype
        if isinstance(code, MDS):
            results, expected = all_results(code, code.encode(A), B), obj_matmul(p, A, B)
        else:
            results, expected = all_results(code, code.encode(A, B)), obj_matmul(p, A, B)
        assert_decodes(code, results, expected)


def test_mds_worker_index_types():
    """Worker indices may be numpy integers; more than R results use any R of them."""
    p = 65521
    F = ffcode.GF(p)
    code = MDS(F, 2, 4)
    A, x = rand(p, (5, 3), 16), rand(p, 3, 17)
    results = all_results(code, code.encode(A), x)
    expected = obj_matmul(p, A, x[:, None])[:, 0]
    got = code.decode({np.int64(3): results[3], np.uint8(1): results[1]})
    assert_field_array(F, got, expected)
    got = code.decode({w: r.tolist() for w, r in results.items()})
    assert_field_array(F, got, expected)


@pytest.mark.parametrize("m, inner, n", [(0, 3, 4), (3, 4, 0), (3, 0, 4), (0, 0, 0)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("which", ["PolynomialCode", "MatDot"])
def test_product_codes_zero_dimensions(which, m, inner, n):
    """An empty A or B still has a well-defined product (zeros of shape (m, n))."""
    p = 65521
    F = ffcode.GF(p)
    code = PolynomialCode(F, 2, 2, 5) if which == "PolynomialCode" else MatDot(F, 2, 4)
    A, B = rand(p, (m, inner), 18), rand(p, (inner, n), 19)
    assert_decodes(code, all_results(code, code.encode(A, B)), obj_matmul(p, A, B))


@pytest.mark.parametrize("ashape, xshape", [((0, 3), (3,)), ((0, 3), (3, 2)), ((4, 0), (0,)),
                                            ((4, 0), (0, 2)), ((4, 3), (3, 0))], ids=str)
def test_mds_zero_dimensions(ashape, xshape):
    """An empty A or x still has a well-defined product A @ x."""
    p = 65521
    F = ffcode.GF(p)
    code = MDS(F, 2, 3)
    A, x = rand(p, ashape, 20), rand(p, xshape, 21)
    expected = obj_matmul(p, A, x if x.ndim == 2 else x[:, None])
    assert_decodes(code, all_results(code, code.encode(A), x),
                   expected if x.ndim == 2 else expected[:, 0])


# -- the contract, for every code --------------------------------------------------------------

def _square(F, X):
    return F.mul(X, X)


class Spec:
    """How to build and run one code: make(F, n_workers, **kw), its R, and run(code, seed)
    -> (results of every worker, expected output)."""

    def __init__(self, name, make, R, run):
        self.name, self.make, self.R, self.run = name, make, R, run

    def __repr__(self):
        return self.name


def _run_mds(code, seed=0):
    p = code.F.p
    A, x = rand(p, (7, 5), seed), rand(p, 5, seed + 1)
    return all_results(code, code.encode(A), x), obj_matmul(p, A, x[:, None])[:, 0]


def _run_product(code, seed=0):
    p = code.F.p
    A, B = rand(p, (5, 6), seed), rand(p, (6, 4), seed + 1)
    return all_results(code, code.encode(A, B)), obj_matmul(p, A, B)


def _run_lcc(code, seed=0):
    p = code.F.p
    X = [rand(p, (3, 2), (seed, j)) for j in range(code.k)]
    expected = [(x.astype(object) ** 2) % p for x in X]
    return all_results(code, code.encode(X, seed=seed)), expected


SPECS = [
    Spec("MDS", lambda F, N, **kw: MDS(F, 3, N, **kw), 3, _run_mds),
    Spec("PolynomialCode", lambda F, N, **kw: PolynomialCode(F, 2, 2, N, **kw), 4, _run_product),
    Spec("MatDot", lambda F, N, **kw: MatDot(F, 3, N, **kw), 5, _run_product),
    Spec("LCC", lambda F, N, **kw: LCC(F, 2, 1, _square, 2, N, **kw), 5, _run_lcc),
]
F_CONTRACT = ffcode.GF(65521)


@pytest.fixture(params=SPECS, ids=repr)
def spec(request):
    return request.param


def test_contract_attributes(spec):
    """recovery_threshold, n_workers and the default points 1..N; encode gives N shares."""
    code = spec.make(F_CONTRACT, spec.R + 2)
    assert code.recovery_threshold == spec.R
    assert code.n_workers == spec.R + 2
    assert code.points.tolist() == list(range(1, spec.R + 3))
    results, expected = spec.run(code)
    assert sorted(results) == list(range(spec.R + 2))
    assert_decodes(code, results, expected)


def test_contract_n_equals_r(spec):
    """N = R works: all the workers are needed."""
    code = spec.make(F_CONTRACT, spec.R)
    results, expected = spec.run(code, seed=3)
    assert_decodes(code, results, expected)
    with pytest.raises(ValueError, match="1 more needed"):
        code.decode({w: results[w] for w in range(1, spec.R)})


def test_contract_too_few_results(spec):
    """Fewer than R results: ValueError saying how many more are needed."""
    code = spec.make(F_CONTRACT, spec.R + 2)
    results, _ = spec.run(code)
    for have in range(spec.R):
        missing = spec.R - have
        with pytest.raises(ValueError, match=rf"\b{spec.R}\b.*\b{have}\b.*{missing} more needed"):
            code.decode({w: results[w] for w in range(2, 2 + have)})


def test_contract_bad_results(spec):
    """Results of the wrong shape or with elements >= p: ValueError."""
    code = spec.make(F_CONTRACT, spec.R + 1)
    results, expected = spec.run(code)
    good = {w: results[w] for w in range(spec.R)}
    assert_decodes(code, results, expected)
    wrong_shape = {**good, 1: np.zeros(results[1].shape + (2,), F_CONTRACT.dtype)}
    with pytest.raises(ValueError, match="shape"):
        code.decode(wrong_shape)
    truncated = {**good, 0: results[0].reshape(-1)[:-1]}
    with pytest.raises(ValueError, match="shape"):
        code.decode(truncated)
    too_big = results[1].astype(np.uint64)
    too_big.reshape(-1)[0] = F_CONTRACT.p
    with pytest.raises(ValueError, match=">= p"):
        code.decode({**good, 1: too_big})
    negative = results[1].astype(np.int64)
    negative.reshape(-1)[0] = -1
    with pytest.raises(ValueError, match="negative"):
        code.decode({**good, 1: negative})
    with pytest.raises(TypeError):
        code.decode({**good, 1: results[1].astype(np.float64)})
    # A bad result beyond the R that decoding uses is refused too, not silently ignored.
    with pytest.raises(ValueError, match=">= p"):
        code.decode({**good, spec.R: too_big})


def test_contract_decode_before_encode(spec):
    """decode needs the shapes from encode: ValueError on a fresh code."""
    results, _ = spec.run(spec.make(F_CONTRACT, spec.R))
    fresh = spec.make(F_CONTRACT, spec.R)
    with pytest.raises(ValueError, match="encode"):
        fresh.decode(results)


def test_contract_results_not_a_mapping(spec):
    code = spec.make(F_CONTRACT, spec.R)
    results, _ = spec.run(code)
    for bad in (list(results.values()), tuple(results.items()), None):
        with pytest.raises(TypeError, match="mapping"):
            code.decode(bad)


def test_contract_worker_index(spec):
    """Indices outside 0..N-1: ValueError; non-integer indices: TypeError."""
    N = spec.R + 1
    code = spec.make(F_CONTRACT, N)
    results, _ = spec.run(code)
    good = {w: results[w] for w in range(spec.R)}
    for bad in (N, N + 5, -1):
        with pytest.raises(ValueError, match="out of range"):
            code.decode({**good, bad: results[0]})
    for bad in (1.0, "1", True):
        with pytest.raises(TypeError, match="integer"):
            code.decode({**{w: results[w] for w in range(2, spec.R + 1)}, bad: results[1]})


def test_contract_fewer_workers_than_threshold(spec):
    for N in (spec.R - 1, 1 if spec.R > 1 else None):
        if N is None:
            continue
        with pytest.raises(ValueError, match="recovery threshold"):
            spec.make(F_CONTRACT, N)
    for N in (0, -3):
        with pytest.raises(ValueError):
            spec.make(F_CONTRACT, N)
    for N in (3.0, "5", True, None):
        with pytest.raises(TypeError):
            spec.make(F_CONTRACT, N)


def test_contract_bad_points(spec):
    """Duplicate, zero, >= p, wrongly counted or 2-D points: ValueError."""
    N = spec.R + 1
    ok = list(range(2, N + 2))
    assert spec.make(F_CONTRACT, N, points=ok).points.tolist() == ok
    for bad, match in [([0] + ok[1:], "nonzero"), (ok[:-1] + [ok[0]], "distinct"),
                       (ok[:-1], "one point per worker"), (ok + [N + 5], "one point per worker"),
                       (ok[:-1] + [F_CONTRACT.p], ">= p"), ([ok], "1-D")]:
        with pytest.raises(ValueError, match=match):
            spec.make(F_CONTRACT, N, points=bad)
    with pytest.raises(TypeError):
        spec.make(F_CONTRACT, N, points=[float(v) for v in ok])


def test_contract_field_too_small(spec):
    """N distinct nonzero points (plus LCC's k + t betas) must fit in GF(p)."""
    extra = 3 if spec.name == "LCC" else 0          # k + t of SPECS' LCC
    for p in (7, 11, 13):
        F = ffcode.GF(p)
        most = p - 1 - extra
        if most >= spec.R:
            code = spec.make(F, most)
            results, expected = spec.run(code)
            assert_decodes(code, results, expected)
        with pytest.raises(ValueError, match=rf"GF\({p}\) is too small"):
            spec.make(F, max(most + 1, spec.R))


def test_contract_not_a_field(spec):
    with pytest.raises(TypeError, match="ffcode.GF"):
        spec.make(65521, spec.R)


@pytest.mark.parametrize("make", [
    lambda v: MDS(F_CONTRACT, v, 8),
    lambda v: PolynomialCode(F_CONTRACT, v, 2, 8),
    lambda v: PolynomialCode(F_CONTRACT, 2, v, 8),
    lambda v: MatDot(F_CONTRACT, v, 8),
    lambda v: LCC(F_CONTRACT, v, 1, _square, 2, 8),
    lambda v: LCC(F_CONTRACT, 1, v - 1 if isinstance(v, int) and not isinstance(v, bool)
                  else v, _square, 2, 8),
    lambda v: LCC(F_CONTRACT, 1, 1, _square, v, 8),
], ids=["MDS.k", "Poly.a", "Poly.b", "MatDot.s", "LCC.k", "LCC.t", "LCC.degree"])
def test_bad_code_parameters(make):
    """0 and negatives (t: -1 and below): ValueError; non-integers and bools: TypeError."""
    assert make(1).n_workers == 8
    assert make(np.int64(2)).n_workers == 8
    for bad in (0, -1, -5):
        with pytest.raises(ValueError, match="at least"):
            make(bad)
    for bad in (2.0, "2", True, False, None, np.float64(2)):
        with pytest.raises(TypeError, match="integer"):
            make(bad)


def test_compute_needs_the_share_pair():
    code = PolynomialCode(F_CONTRACT, 1, 2, 3)
    A, B = rand(F_CONTRACT.p, (2, 3), 1), rand(F_CONTRACT.p, (3, 2), 2)
    share = code.encode(A, B)[0]
    assert_field_array(F_CONTRACT, code.compute(share), obj_matmul(F_CONTRACT.p, *share))
    for bad in (list(share), share[0], share + (share[0],)):
        with pytest.raises(TypeError, match="pair"):
            code.compute(bad)


@pytest.mark.parametrize("make", [lambda F: PolynomialCode(F, 2, 1, 3), lambda F: MatDot(F, 2, 3)],
                         ids=["PolynomialCode", "MatDot"])
def test_encode_operands_must_chain(make):
    code = make(F_CONTRACT)
    with pytest.raises(ValueError, match="do not chain"):
        code.encode(rand(F_CONTRACT.p, (3, 4), 1), rand(F_CONTRACT.p, (5, 2), 2))
    with pytest.raises(ValueError, match="2-D"):
        code.encode(rand(F_CONTRACT.p, 4, 1), rand(F_CONTRACT.p, (4, 2), 2))
    with pytest.raises(ValueError, match=">= p"):
        code.encode(np.full((2, 2), F_CONTRACT.p, np.int64), rand(F_CONTRACT.p, (2, 2), 2))


def test_mds_compute_checks_x():
    code = MDS(F_CONTRACT, 2, 3)
    shares = code.encode(rand(F_CONTRACT.p, (4, 3), 1))
    with pytest.raises(ValueError, match="do not chain"):
        code.compute(shares[0], rand(F_CONTRACT.p, 4, 2))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        code.compute(shares[0], rand(F_CONTRACT.p, (3, 1, 1), 2))
    with pytest.raises(ValueError, match=">= p"):
        code.compute(shares[0], np.full(3, F_CONTRACT.p, np.int64))
