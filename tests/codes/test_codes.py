"""ffcode.codes: MDS, PolynomialCode, MatDot and any ProductCode give the exact product from
any recovery_threshold workers (a ProductCode's support and outputs follow from its
exponents), and every code (LCC too) keeps the encode/compute/decode contract: an immutable
value whose encodings each decode on their own."""
import itertools
import re

import numpy as np
import pytest

import ffcode
from ffcode import (GASP, LCC, MDS, Decoder, EntangledPolynomialCode, MatDot, PolynomialCode,
                    ProductCode, piece_packets)
from ffcode.codes import base as base_module, product as product_module

from helpers import assert_field_array, assert_output, layouts, obj_matmul, rand, to_flint

CODE_PRIMES = [65521, 2**31 - 1, 2**61 - 1]


def all_results(code, shares, *args):
    """{worker: local result} for every worker, the arguments checked against the encoding
    as the runtime checks them."""
    args = code.arguments(shares, *args)
    return {i: code.compute(share, *args) for i, share in enumerate(shares)}


def subsets(code, seed):
    """Worker subsets to decode from: the first R, the last R, and a random subset of every
    size from R to N."""
    R, N = code.recovery_threshold, code.n_workers
    rng = np.random.default_rng(seed)
    out = [list(range(R)), list(range(N - R, N))]
    out += [sorted(int(w) for w in rng.choice(N, size, replace=False)) for size in range(R, N + 1)]
    return out


def assert_decodes(code, shares, results, expected, seed=0):
    """Every subset of subsets() decodes (the encoding ``shares``) to expected exactly."""
    for workers in subsets(code, seed):
        assert_output(code.F, code.decode(shares, {w: results[w] for w in workers}), expected)


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
    assert all(isinstance(s, tuple) and len(s) == 1 for s in shares)
    assert all(s[0].shape == (-(-shape[0] // k), shape[1]) for s in shares)
    for seed, x in enumerate([rand(p, shape[1], 2), rand(p, (shape[1], 3), 3),
                              rand(p, (shape[1], 1), 4)]):
        results = all_results(code, shares, x)
        expected = obj_matmul(p, A, x if x.ndim == 2 else x[:, None])
        assert_decodes(code, shares, results, expected if x.ndim == 2 else expected[:, 0],
                       seed)


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
    assert_decodes(code, shares, all_results(code, shares), obj_matmul(p, A, B))


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
    assert_decodes(code, shares, all_results(code, shares), obj_matmul(p, A, B))


def test_product_codes_on_tiny_fields():
    """GF(2) holds one worker, GF(3) two: the codes that fit still decode exactly."""
    for p, code in [(2, MDS(ffcode.GF(2), 1, 1)), (3, MDS(ffcode.GF(3), 2, 2)),
                    (3, MDS(ffcode.GF(3), 1, 2))]:
        A, x = rand(p, (5, 4), p), rand(p, (4, 2), p + 1)
        shares = code.encode(A)
        assert_decodes(code, shares, all_results(code, shares, x), obj_matmul(p, A, x))
    F = ffcode.GF(3)
    A, B = rand(3, (5, 4), 9), rand(3, (4, 3), 10)
    for code in [PolynomialCode(F, 2, 1, 2), PolynomialCode(F, 1, 2, 2), MatDot(F, 1, 2)]:
        shares = code.encode(A, B)
        assert_decodes(code, shares, all_results(code, shares), obj_matmul(3, A, B))
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
        shares = mds.encode(la)
        assert_decodes(mds, shares, all_results(mds, shares, lx), Ax)
        shares = mds.encode(A)
        assert_decodes(mds, shares, all_results(mds, shares, B), AB)
        for code in (poly, matdot):
            shares = code.encode(la, lb)
            assert_decodes(code, shares, all_results(code, shares), AB)


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
            shares = code.encode(A)
            results = all_results(code, shares, B)
        else:
            shares = code.encode(A, B)
            results = all_results(code, shares)
        assert_decodes(code, shares, results, obj_matmul(p, A, B))


def test_mds_worker_index_types():
    """Worker indices may be numpy integers; more than R results use any R of them."""
    p = 65521
    F = ffcode.GF(p)
    code = MDS(F, 2, 4)
    A, x = rand(p, (5, 3), 16), rand(p, 3, 17)
    shares = code.encode(A)
    results = all_results(code, shares, x)
    expected = obj_matmul(p, A, x[:, None])[:, 0]
    got = code.decode(shares, {np.int64(3): results[3], np.uint8(1): results[1]})
    assert_field_array(F, got, expected)
    got = code.decode(shares, {w: r.tolist() for w, r in results.items()})
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
    shares = code.encode(A, B)
    assert_decodes(code, shares, all_results(code, shares), obj_matmul(p, A, B))


@pytest.mark.parametrize("ashape, xshape", [((0, 3), (3,)), ((0, 3), (3, 2)), ((4, 0), (0,)),
                                            ((4, 0), (0, 2)), ((4, 3), (3, 0))], ids=str)
def test_mds_zero_dimensions(ashape, xshape):
    """An empty A or x still has a well-defined product A @ x."""
    p = 65521
    F = ffcode.GF(p)
    code = MDS(F, 2, 3)
    A, x = rand(p, ashape, 20), rand(p, xshape, 21)
    expected = obj_matmul(p, A, x if x.ndim == 2 else x[:, None])
    shares = code.encode(A)
    assert_decodes(code, shares, all_results(code, shares, x),
                   expected if x.ndim == 2 else expected[:, 0])


# -- the contract, for every code --------------------------------------------------------------

def _square(F, X):
    return F.mul(X, X)


class Spec:
    """How to build and run one code: make(F, n_workers, **kw), its R, whether its support
    is sparse (not 0..R-1), and run(code, seed, grow) -> (the encoding, the results of every
    worker, the expected output), the data ``grow`` rows and columns larger."""

    def __init__(self, name, make, R, run, sparse=False):
        self.name, self.make, self.R, self.run, self.sparse = name, make, R, run, sparse

    def __repr__(self):
        return self.name


def _run_mds(code, seed=0, grow=0):
    p = code.F.p
    A, x = rand(p, (7 + grow, 5 + grow), seed), rand(p, 5 + grow, seed + 1)
    shares = code.encode(A)
    return shares, all_results(code, shares, x), obj_matmul(p, A, x[:, None])[:, 0]


def _run_product(code, seed=0, grow=0):
    p = code.F.p
    A, B = rand(p, (5 + grow, 6 + grow), seed), rand(p, (6 + grow, 4 + grow), seed + 1)
    shares = code.encode(A, B)
    return shares, all_results(code, shares), obj_matmul(p, A, B)


def _run_lcc(code, seed=0, grow=0):
    p = code.F.p
    X = [rand(p, (3 + grow, 2 + grow), (seed, j)) for j in range(code.k)]
    expected = [(x.astype(object) ** 2) % p for x in X]
    shares = code.encode(X, seed=seed)
    return shares, all_results(code, shares), expected


SPECS = [
    Spec("MDS", lambda F, N, **kw: MDS(F, 3, N, **kw), 3, _run_mds),
    Spec("PolynomialCode", lambda F, N, **kw: PolynomialCode(F, 2, 2, N, **kw), 4, _run_product),
    Spec("MatDot", lambda F, N, **kw: MatDot(F, 3, N, **kw), 5, _run_product),
    Spec("LCC", lambda F, N, **kw: LCC(F, 2, 1, _square, 2, N, **kw), 5, _run_lcc),
    Spec("ProductCode sparse",                                  # support 0, 1, 3, 4
         lambda F, N, **kw: ProductCode(F, N, [[0], [1]], [[0, 3]], **kw), 4, _run_product,
         sparse=True),
    Spec("ProductCode masked",                                  # support 0..6 and 9
         lambda F, N, **kw: ProductCode(F, N, [[0], [1]], [[0, 2]], a_masks=[4],
                                        b_masks=[5], **kw), 8, _run_product, sparse=True),
    Spec("EntangledPolynomialCode", lambda F, N, **kw: EntangledPolynomialCode(F, 2, 2, 1, N,
                                                                               **kw),
         5, _run_product),
    Spec("GASP", lambda F, N, **kw: GASP(F, 2, 2, 1, N, **kw), 8, _run_product,
         sparse=True),                                          # support 0..6 and 8
]
F_CONTRACT = ffcode.GF(65521)


@pytest.fixture(params=SPECS, ids=repr)
def spec(request):
    return request.param


def test_contract_attributes(spec):
    """recovery_threshold, n_workers and the default points 1..N; encode gives N shares,
    each a tuple of arrays."""
    code = spec.make(F_CONTRACT, spec.R + 2)
    assert code.recovery_threshold == spec.R == len(code.support)
    assert code.n_workers == spec.R + 2
    assert code.points.tolist() == list(range(1, spec.R + 3))
    assert (code.support != tuple(range(spec.R))) == spec.sparse
    shares, results, expected = spec.run(code)
    assert len(shares) == spec.R + 2 and shares.code is code
    assert all(isinstance(s, tuple) and all(isinstance(a, np.ndarray) for a in s)
               for s in shares)
    assert sorted(results) == list(range(spec.R + 2))
    assert_decodes(code, shares, results, expected)


def test_contract_evaluations(spec):
    """evaluations[i, d] = points[i] ** support[d] (Python ints), read-only like points."""
    code = spec.make(F_CONTRACT, spec.R + 2, points=list(range(7, 7 + spec.R + 2)))
    p = F_CONTRACT.p
    expected = [[pow(int(a), e, p) for e in code.support] for a in code.points]
    assert_field_array(F_CONTRACT, code.evaluations, expected)
    assert code.evaluations.shape == (code.n_workers, code.recovery_threshold)


def test_contract_immutable(spec):
    """Setting or deleting any attribute raises AttributeError, as does adding one; the
    code's arrays (points, evaluations and the rest) are read-only; encoding and decoding
    leave every attribute as it was; an Encoding is frozen too."""
    code = spec.make(F_CONTRACT, spec.R + 1)
    names = ["F", "n_workers", "points", "evaluations", "support", "recovery_threshold",
             "outputs", "function"]
    for name in names:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(code, name, getattr(code, name))
        with pytest.raises(AttributeError, match="immutable"):
            delattr(code, name)
    with pytest.raises(AttributeError, match="immutable"):
        code.new_attribute = 1
    assert not hasattr(code, "new_attribute")
    arrays = {k: v for k, v in vars(code).items() if isinstance(v, np.ndarray)}
    assert {"points", "evaluations"} <= set(arrays)
    for name, a in arrays.items():
        assert not a.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            a.reshape(-1)[0] = 1
    assert code.points.tolist() == list(range(1, spec.R + 2))
    before = dict(vars(code))
    shares, results, expected = spec.run(code)
    assert_decodes(code, shares, results, expected)
    assert vars(code).keys() == before.keys()
    assert all(vars(code)[k] is v for k, v in before.items())
    with pytest.raises(AttributeError):
        shares.shapes = ()
    with pytest.raises(AttributeError):
        shares.code = spec.make(F_CONTRACT, spec.R + 1)


def test_contract_two_encodings_in_either_order(spec):
    """Two encodings of one code, of data of different shapes, each decode to their own
    output whichever is decoded first, by decode and by two Decoders fed in turn."""
    code = spec.make(F_CONTRACT, spec.R + 2)
    first, second = spec.run(code, seed=1), spec.run(code, seed=2, grow=3)
    assert first[0].shapes != second[0].shapes
    for order in ((first, second), (second, first), (first, second)):
        for shares, results, expected in order:
            assert_decodes(code, shares, results, expected)
    m = 2
    for order in ((first, second), (second, first)):
        decoders = [Decoder(shares, m) for shares, _, _ in order]
        streams = [[q for w, y in results.items()
                    for q in piece_packets(code.F, y, m, w, seed=(w, 5))]
                   for _, results, _ in order]
        for pair in itertools.zip_longest(*streams):
            for decoder, q in zip(decoders, pair):
                if q is not None:
                    decoder.add(q)
        for decoder, (_, _, expected) in zip(decoders, order):
            assert decoder.complete
            assert_output(code.F, decoder.result(), expected)


def test_contract_another_codes_encoding(spec):
    """An encoding made by another code object, even one equal in every parameter, is
    refused by decode (and arguments) with ValueError; a non-encoding with TypeError."""
    code, twin = spec.make(F_CONTRACT, spec.R), spec.make(F_CONTRACT, spec.R)
    shares, results, expected = spec.run(code)
    with pytest.raises(ValueError, match="encoding was made by"):
        twin.decode(shares, results)
    with pytest.raises(ValueError, match="encoding was made by"):
        twin.arguments(shares, *([rand(F_CONTRACT.p, 5, 1)] if spec.name == "MDS" else []))
    twin_shares, twin_results, twin_expected = spec.run(twin)
    assert_decodes(twin, twin_shares, twin_results, twin_expected)
    assert_decodes(code, shares, results, expected)
    for not_an_encoding in (list(shares), tuple(shares), shares[0], None):
        with pytest.raises(TypeError, match="encoding"):
            code.decode(not_an_encoding, results)
    with pytest.raises(TypeError):
        code.decode(results)                            # the encoding comes first


def test_contract_n_equals_r(spec):
    """N = R works: all the workers are needed."""
    code = spec.make(F_CONTRACT, spec.R)
    shares, results, expected = spec.run(code, seed=3)
    assert_decodes(code, shares, results, expected)
    with pytest.raises(ValueError, match="1 more needed"):
        code.decode(shares, {w: results[w] for w in range(1, spec.R)})


def test_contract_too_few_results(spec):
    """Fewer than R results: ValueError saying how many more are needed."""
    code = spec.make(F_CONTRACT, spec.R + 2)
    shares, results, _ = spec.run(code)
    for have in range(spec.R):
        missing = spec.R - have
        with pytest.raises(ValueError, match=rf"\b{spec.R}\b.*\b{have}\b.*{missing} more needed"):
            code.decode(shares, {w: results[w] for w in range(2, 2 + have)})


def test_contract_bad_results(spec):
    """Results of the wrong shape or with elements >= p: ValueError."""
    code = spec.make(F_CONTRACT, spec.R + 1)
    shares, results, expected = spec.run(code)
    good = {w: results[w] for w in range(spec.R)}
    assert_decodes(code, shares, results, expected)
    wrong_shape = {**good, 1: np.zeros(results[1].shape + (2,), F_CONTRACT.dtype)}
    with pytest.raises(ValueError, match="shape"):
        code.decode(shares, wrong_shape)
    truncated = {**good, 0: results[0].reshape(-1)[:-1]}
    with pytest.raises(ValueError, match="shape"):
        code.decode(shares, truncated)
    too_big = results[1].astype(np.uint64)
    too_big.reshape(-1)[0] = F_CONTRACT.p
    with pytest.raises(ValueError, match=">= p"):
        code.decode(shares, {**good, 1: too_big})
    negative = results[1].astype(np.int64)
    negative.reshape(-1)[0] = -1
    with pytest.raises(ValueError, match="negative"):
        code.decode(shares, {**good, 1: negative})
    with pytest.raises(TypeError):
        code.decode(shares, {**good, 1: results[1].astype(np.float64)})
    # A bad result beyond the R that decoding uses is refused too, not silently ignored.
    with pytest.raises(ValueError, match=">= p"):
        code.decode(shares, {**good, spec.R: too_big})


@pytest.mark.parametrize("spec", [s for s in SPECS if s.name != "LCC"], ids=repr)
def test_contract_results_of_another_encoding(spec):
    """Results shaped for another encoding of the same code (larger data) are refused by
    shape, not decoded into a wrong output (a code of products knows a local result's shape
    from the encoding; an LCC of an f that is not row-linear cannot)."""
    code = spec.make(F_CONTRACT, spec.R)
    shares, _, _ = spec.run(code)
    _, larger, _ = spec.run(code, grow=3)
    with pytest.raises(ValueError, match="shape"):
        code.decode(shares, larger)


def test_contract_results_not_a_mapping(spec):
    code = spec.make(F_CONTRACT, spec.R)
    shares, results, _ = spec.run(code)
    for bad in (list(results.values()), tuple(results.items()), None):
        with pytest.raises(TypeError, match="mapping"):
            code.decode(shares, bad)


def test_contract_worker_index(spec):
    """Indices outside 0..N-1: ValueError; non-integer indices: TypeError."""
    N = spec.R + 1
    code = spec.make(F_CONTRACT, N)
    shares, results, _ = spec.run(code)
    good = {w: results[w] for w in range(spec.R)}
    for bad in (N, N + 5, -1):
        with pytest.raises(ValueError, match="out of range"):
            code.decode(shares, {**good, bad: results[0]})
    for bad in (1.0, "1", True):
        with pytest.raises(TypeError, match="integer"):
            code.decode(shares, {**{w: results[w] for w in range(2, spec.R + 1)},
                                 bad: results[1]})


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
    """N distinct nonzero points (plus LCC's k + t betas) must fit in GF(p). The largest
    code that fits decodes; for a sparse support it may instead be refused for singular
    points (test_product_code_refuses_singular_points), never for the field's size."""
    extra = 3 if spec.name == "LCC" else 0          # k + t of SPECS' LCC
    for p in (7, 11, 13):
        F = ffcode.GF(p)
        most = p - 1 - extra
        if most >= spec.R:
            try:
                code = spec.make(F, most)
            except ValueError as e:
                assert spec.sparse and "singular" in str(e), e
            else:
                shares, results, expected = spec.run(code)
                assert_decodes(code, shares, results, expected)
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
        with pytest.raises(ValueError, match="must be (at least 1|non-negative), not -?[0-9]"):
            make(bad)
    for bad in (2.0, "2", True, False, None, np.float64(2)):
        with pytest.raises(TypeError, match="integer"):
            make(bad)


def test_compute_needs_the_share_pair():
    """A PolynomialCode share is the pair (A_i, B_i) from encode: a list, one array, or a
    tuple of one or three arrays is refused with a TypeError about the share."""
    code = PolynomialCode(F_CONTRACT, 1, 2, 3)
    A, B = rand(F_CONTRACT.p, (2, 3), 1), rand(F_CONTRACT.p, (3, 2), 2)
    share = code.encode(A, B)[0]
    assert_field_array(F_CONTRACT, code.compute(share), obj_matmul(F_CONTRACT.p, *share))
    for bad in (list(share), share[0], share[:1], share + (share[0],)):
        with pytest.raises(TypeError, match="share"):
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


def test_mds_checks_x():
    """x must chain with A, be 1-D or 2-D and hold elements: refused by arguments(encoding,
    x) (which knows A's shape from the encoding) and by compute itself."""
    code = MDS(F_CONTRACT, 2, 3)
    shares = code.encode(rand(F_CONTRACT.p, (4, 3), 1))
    assert len(code.arguments(shares, rand(F_CONTRACT.p, 3, 2))) == 1
    for bad, match in [(rand(F_CONTRACT.p, 4, 2), "do not chain"),
                       (rand(F_CONTRACT.p, (3, 1, 1), 2), "1-D or 2-D"),
                       (np.full(3, F_CONTRACT.p, np.int64), ">= p")]:
        with pytest.raises(ValueError, match=match):
            code.arguments(shares, bad)
        with pytest.raises(ValueError, match=match):
            code.compute(shares[0], bad)
    for args in [(), (rand(F_CONTRACT.p, 3, 2),) * 2]:
        with pytest.raises(TypeError, match="one argument x"):
            code.arguments(shares, *args)


# -- ProductCode: a code of matrix products given by its exponents -----------------------------


def _exponent_sums(a, b, a_masks=(), b_masks=()):
    """Every sum of an A exponent and a B exponent (b=None: B is not encoded, exponent 0)."""
    a_all = [e for row in a for e in row] + list(a_masks)
    b_all = [0] if b is None else [e for row in b for e in row] + list(b_masks)
    return tuple(sorted({x + y for x in a_all for y in b_all}))


# (a_exponents, b_exponents, output exponents C_uw = a[u][v] + b[v][w])
EXPONENTS = [
    ([[0], [1]], [[0, 3]], [[0, 3], [1, 4]]),                   # sparse: 0, 1, 3, 4
    ([[0], [1]], [[0, 2]], [[0, 2], [1, 3]]),                   # PolynomialCode(2, 2)
    ([[0, 1, 2]], [[2], [1], [0]], [[2]]),                      # MatDot(3)
    ([[0, 1]], [[1, 3], [0, 2]], [[1, 3]]),                     # entangled: 0..4
    ([[0], [3]], [[0, 1]], [[0, 1], [3, 4]]),                   # sparse, A's blocks apart
    ([[0], [2], [5]], None, [[0], [2], [5]]),                   # sparse MDS-like
]


@pytest.mark.parametrize("p", CODE_PRIMES)
@pytest.mark.parametrize("a, b, out", EXPONENTS, ids=str)
def test_product_code_support_and_outputs_follow_from_exponents(p, a, b, out):
    """support = every sum of an A and a B exponent; output block (u, w) is the coefficient
    of out[u][w] (outputs: its row selects that exponent in the support, None when every
    coefficient is an output block, decoded in support order and placed by assemble);
    C = A @ B (or A @ x) decodes exactly."""
    F = ffcode.GF(p)
    support = _exponent_sums(a, b)
    R = len(support)
    code = ProductCode(F, R + 2, a, b)
    assert code.support == support and code.recovery_threshold == R
    assert code.output_exponents.tolist() == out
    flat = [e for row in out for e in row]
    if sorted(flat) == list(support):
        assert code.outputs is None and code.output_selection is None
    else:
        selection = np.zeros((len(flat), R), np.int64)
        selection[range(len(flat)), [support.index(e) for e in flat]] = 1
        assert code.outputs.tolist() == selection.tolist()
        assert code.output_selection.tolist() == [support.index(e) for e in flat]
    r, c = len(a), 1 if b is None else len(b[0])
    A = rand(p, (3 * r + 1, 2 * len(a[0]) + 1), 1)
    if b is None:
        x = rand(p, (A.shape[1], 3), 2)
        shares = code.encode(A)
        assert_decodes(code, shares, all_results(code, shares, x), obj_matmul(p, A, x))
    else:
        B = rand(p, (A.shape[1], 2 * c + 1), 2)
        shares = code.encode(A, B)
        assert_decodes(code, shares, all_results(code, shares), obj_matmul(p, A, B))


@pytest.mark.parametrize("p", CODE_PRIMES)
def test_named_codes_are_product_codes(p):
    """PolynomialCode, MatDot and MDS are ProductCodes of their exponents: equal support,
    evaluations and outputs, the same shares of the same data and the same output."""
    F = ffcode.GF(p)
    A, B = rand(p, (7, 6), 3), rand(p, (6, 5), 4)
    pts = [3, 1, 4, 15, 9, 2, 6, 5]
    pairs = [
        (PolynomialCode(F, 2, 3, 8, points=pts),
         ProductCode(F, 8, [[0], [1]], [[0, 2, 4]], points=pts), (A, B)),
        (MatDot(F, 3, 8, points=pts),
         ProductCode(F, 8, [[0, 1, 2]], [[2], [1], [0]], points=pts), (A, B)),
        (MDS(F, 3, 8, points=pts), ProductCode(F, 8, [[0], [1], [2]], None, points=pts), (A,)),
    ]
    for named, general, data in pairs:
        assert isinstance(named, ProductCode)
        assert named.support == general.support
        assert named.recovery_threshold == general.recovery_threshold
        assert np.array_equal(named.evaluations, general.evaluations)
        assert (named.outputs is None) == (general.outputs is None)
        if named.outputs is not None:
            assert np.array_equal(named.outputs, general.outputs)
        assert np.array_equal(named.output_exponents, general.output_exponents)
        shares = [code.encode(*data) for code in (named, general)]
        for s, t in zip(*shares):
            assert len(s) == len(t) and all(np.array_equal(u, v) for u, v in zip(s, t))
        args = () if len(data) == 2 else (B,)
        results = [all_results(code, enc, *args) for code, enc in zip((named, general), shares)]
        expected = obj_matmul(p, A, B)
        assert_decodes(named, shares[0], results[0], expected)
        assert_decodes(general, shares[1], results[1], expected)


@pytest.mark.parametrize("p", CODE_PRIMES)
def test_sparse_support_decodes_from_every_4_of_5(p):
    """Support 0, 1, 3, 4 (a_exponents [[0], [1]], b_exponents [[0, 3]]) on 5 workers:
    every 4-subset decodes exactly, by decode and by a Decoder; no 3-subset is enough (a
    Decoder given their packets stays incomplete, decode asks for one more)."""
    F = ffcode.GF(p)
    code = ProductCode(F, 5, [[0], [1]], [[0, 3]])
    assert code.support == (0, 1, 3, 4)
    A, B = rand(p, (5, 4), 5), rand(p, (4, 7), 6)
    shares = code.encode(A, B)
    results = all_results(code, shares)
    expected = obj_matmul(p, A, B)
    m = 2
    packets = {w: list(piece_packets(F, y, m, w, seed=w)) for w, y in results.items()}
    for size in (3, 4):
        for workers in itertools.combinations(range(5), size):
            decoder = Decoder(shares, m)
            for w in workers:
                for q in packets[w]:
                    decoder.add(q)
            if size == 4:
                assert_field_array(F, code.decode(shares, {w: results[w] for w in workers}),
                                   expected)
                assert decoder.complete, workers
                assert_field_array(F, decoder.result(), expected)
            else:
                assert F.rank(code.evaluations[list(workers)]) == 3
                assert not decoder.complete and decoder.rank == m * 3
                with pytest.raises(ValueError, match="1 more needed"):
                    code.decode(shares, {w: results[w] for w in workers})


@pytest.mark.parametrize("kw, match", [
    (dict(a_exponents=[[0], [1]], b_exponents=[[0, 1]]),
     r"Output blocks \(0, 1\) and \(1, 0\) are both the coefficient of x\*\*1"),
    (dict(a_exponents=[[0, 1]], b_exponents=[[1, 2], [0, 1]]),
     r"The term A_00 \* B_11 reaches x\*\*1, the exponent of output block \(0, 0\)"),
    (dict(a_exponents=[[0, 1]], b_exponents=[[1], [0]], a_masks=[0]),
     r"The term a mask \* B_00 reaches x\*\*1, the exponent of output block \(0, 0\)"),
    (dict(a_exponents=[[0], [1]], b_exponents=[[0, 2]], b_masks=[1]),
     r"The term A_00 \* a mask reaches x\*\*1, the exponent of output block \(1, 0\)"),
    (dict(a_exponents=[[0], [2]], b_exponents=None, a_masks=[2]),
     r"The term a mask \* B_00 reaches x\*\*2, the exponent of output block \(1, 0\)"),
    (dict(a_exponents=[[0, 1]], b_exponents=[[0], [1]]),
     r"Output block \(0, 0\) = sum_v A_0v B_v0 must be the coefficient of one exponent, "
     r"but its terms reach \[0, 2\]"),
    (dict(a_exponents=[[0, 2], [1, 3]], b_exponents=[[4], [3]]),
     r"Output block \(0, 0\) = sum_v A_0v B_v0 must be the coefficient of one exponent, "
     r"but its terms reach \[4, 5\]"),
], ids=["outputs collide", "term on an output", "A mask on an output", "B mask on an output",
        "mask on an output (B not encoded)", "output not one exponent",
        "output not one exponent (2 x 2)"])
def test_product_code_refuses_colliding_exponents(kw, match):
    """Exponents under which an output block is not the lone coefficient of one exponent
    (two outputs on one exponent, another term or a mask reaching an output's exponent, or
    an output's terms at different exponents) are refused at construction, naming it."""
    with pytest.raises(ValueError, match=match):
        ProductCode(F_CONTRACT, 12, **kw)


def test_product_code_refuses_bad_exponents():
    """Grids must be non-empty, rectangular, of non-negative integers, A's columns matching
    B's rows; B not encoded means one column of A and no B masks."""
    F = F_CONTRACT
    for kw, error, match in [
        (dict(a_exponents=[]), ValueError, "non-empty grid"),
        (dict(a_exponents=[[0], [1, 2]]), ValueError, "non-empty grid"),
        (dict(a_exponents=[0, 1]), ValueError, "non-empty grid"),
        (dict(a_exponents=[[0], [-1]]), ValueError, "non-negative"),
        (dict(a_exponents=[[0], [1]], b_exponents=[[0, -2]]), ValueError, "non-negative"),
        (dict(a_exponents=[[0], [1]], a_masks=[-3]), ValueError, "non-negative"),
        (dict(a_exponents=[[0], [1.5]]), TypeError, "integer"),
        (dict(a_exponents=[[0], [1]], b_masks=["2"], b_exponents=[[0, 2]]), TypeError,
         "integer"),
        (dict(a_exponents=[[0, 1]], b_exponents=[[0, 2]]), ValueError, "must match"),
        (dict(a_exponents=[[0, 1]]), ValueError, "one column"),
        (dict(a_exponents=[[0], [1]], b_masks=[3]), ValueError, "nothing to mask"),
    ]:
        with pytest.raises(error, match=match):
            ProductCode(F, 12, **kw)


def _singular_subset(p, points, support):
    """The first R-subset of the points (in combinations order) whose generalized
    Vandermonde points ** support is singular mod p, by python-flint; None if none is."""
    R = len(support)
    for chosen in itertools.combinations(range(len(points)), R):
        M = [[pow(points[i], e, p) for e in support] for i in chosen]
        if to_flint(p, M).rank() < R:
            return list(chosen)
    return None


@pytest.mark.parametrize("p", [7, 11, 13])
def test_product_code_refuses_singular_points(p):
    """At a small prime, points (found by a seeded search) where some 4 results of the
    support 0, 1, 3, 4 do not determine h are refused at construction, the message naming
    those workers; points where every 4 do are accepted and decode from every 4-subset."""
    F = ffcode.GF(p)
    rng = np.random.default_rng(p)
    found = {}
    for _ in range(200):
        points = sorted(int(v) for v in rng.choice(np.arange(1, p), 5, replace=False))
        bad = _singular_subset(p, points, (0, 1, 3, 4))
        found.setdefault(bad is None, (points, bad))
        if len(found) == 2:
            break
    points, bad = found[False]                          # GF(7) has no good 5 points
    with pytest.raises(ValueError, match=rf"results of workers {re.escape(str(bad))} do not "
                                         rf"determine.*singular in GF\({p}\)"):
        ProductCode(F, 5, [[0], [1]], [[0, 3]], points=points)
    if p == 7:
        assert True not in found
        return
    points, _ = found[True]
    code = ProductCode(F, 5, [[0], [1]], [[0, 3]], points=points)
    A, B = rand(p, (4, 3), 7), rand(p, (3, 4), 8)
    shares = code.encode(A, B)
    results = all_results(code, shares)
    for workers in itertools.combinations(range(5), 4):
        assert_field_array(F, code.decode(shares, {w: results[w] for w in workers}),
                           obj_matmul(p, A, B))


# -- masks ---------------------------------------------------------------------------------------


# (masked code, the same code unmasked, data: (A, B) or (A,) with x)
def _masked_codes(F):
    return [
        (ProductCode(F, 10, [[0], [1]], [[0, 2]], a_masks=[4], b_masks=[5]),
         PolynomialCode(F, 2, 2, 10)),
        (ProductCode(F, 8, [[0, 1]], [[1], [0]], a_masks=[3, 4], b_masks=[3]),
         MatDot(F, 2, 8)),
        (ProductCode(F, 6, [[0], [1]], None, a_masks=[2]), MDS(F, 2, 6)),
    ]


@pytest.mark.parametrize("p", CODE_PRIMES)
def test_masks_do_not_change_the_output(p):
    """Random mask blocks (a_masks, b_masks) change the shares, with every seed, but not the
    decoded output: the unmasked code's, exactly A @ B (or A @ x)."""
    F = ffcode.GF(p)
    A, B = rand(p, (5, 6), 9), rand(p, (6, 3), 10)
    expected = obj_matmul(p, A, B)
    for masked, plain in _masked_codes(F):
        data, args = ((A, B), ()) if masked.encodes == 2 else ((A,), (B,))
        assert masked.masks == len(masked.a_masks) + len(masked.b_masks)
        plain_shares = plain.encode(*data)
        plain_results = all_results(plain, plain_shares, *args)
        assert_decodes(plain, plain_shares, plain_results, expected)
        encodings = [masked.encode(*data, seed=seed) for seed in (1, 2, 1)]
        for shares in encodings:
            assert shares.masks == masked.masks
            assert_decodes(masked, shares, all_results(masked, shares, *args), expected)
        same, other = encodings[2], encodings[1]
        for s, t, u in zip(encodings[0], same, other):
            assert all(np.array_equal(x, y) for x, y in zip(s, t))      # a seed repeats
            assert not np.array_equal(s[0], u[0])                       # another does not


def test_unseeded_masks_come_from_the_csprng(monkeypatch):
    """seed=None draws the masks through secure_random (os.urandom), never F.random: two
    encodings of the same data differ in every masked operand of every share, and both
    decode exactly."""
    F = ffcode.GF(65521)
    code = ProductCode(F, 10, [[0], [1]], [[0, 2]], a_masks=[4], b_masks=[5])
    A, B = rand(F.p, (4, 5), 11), rand(F.p, (5, 6), 12)
    calls = []

    def spy(F_, size):
        calls.append(size)
        return base_module.secure_random(F_, size)

    def no_random(*args, **kwargs):
        raise AssertionError("F.random used for unseeded masks")

    monkeypatch.setattr(product_module, "secure_random", spy)
    monkeypatch.setattr(F, "random", no_random)
    first, second = code.encode(A, B), code.encode(A, B)
    assert calls == [2 * 5, 5 * 3] * 2            # one A block (2 x 5), one B block (5 x 3)
    assert first.seed is None and first.masks == 2
    for s, t in zip(first, second):
        assert not np.array_equal(s[0], t[0]) and not np.array_equal(s[1], t[1])
    for shares in (first, second):
        assert_decodes(code, shares, all_results(code, shares), obj_matmul(F.p, A, B))


def test_uncoded_splits_the_data_only():
    """uncoded takes a code's data (as encode does), and a job's arguments are checked
    against the split: MDS's x chains with A, a product code's B is data, split whole."""
    F = ffcode.GF(2**31 - 1)
    A, x, B = F.random((7, 5), seed=1), F.random(5, seed=2), F.random((5, 3), seed=3)
    mds = ffcode.MDS(F, 2, 3)
    split = mds.uncoded(A)
    assert len(split) == 3 and all(len(share) == 1 for share in split.shares)
    assert split.shapes == ((7, 5),) and split.code is mds
    (checked,) = mds.arguments(split, x)
    results = [mds.compute(share, checked) for share in split.shares]
    assert np.array_equal(split.assemble(results), F.matmul(A, x))
    with pytest.raises(ValueError, match=r"do not chain: shapes \(7, 5\) and \(4,\)"):
        mds.arguments(split, F.random(4, seed=4))
    with pytest.raises(TypeError, match="takes A alone"):
        mds.uncoded(A, x)
    with pytest.raises(ValueError, match="made by"):
        ffcode.MDS(F, 2, 3).arguments(split, x)
    product = ffcode.PolynomialCode(F, 2, 1, 3)
    split = product.uncoded(A, B)
    assert all(np.array_equal(share[1], B) for share in split.shares)
    assert np.array_equal(split.assemble([product.compute(s) for s in split.shares]),
                          F.matmul(A, B))
    with pytest.raises(TypeError, match="takes A and B"):
        product.uncoded(A)
    signed = ffcode.MDS(F, 2, 3, signed=True)
    big = F.from_real(np.full((2, 5), 2.0**14), 1)
    with pytest.raises(ValueError, match="could reach cols"):
        signed.arguments(signed.uncoded(big), F.from_real(np.full(5, 2.0**14), 1))


@pytest.mark.parametrize("params", list(itertools.product(range(1, 4), repeat=3)),
                         ids=lambda v: "-".join(map(str, v)))
def test_threshold_for_is_the_codes_recovery_threshold(params):
    """Each code's threshold_for(its parameters) is the R of the code they make (which
    follows from its support), so that callers sizing a cluster need not re-derive it."""
    x, y, z = params
    F = ffcode.GF(2**31 - 1)
    cases = [(MDS.threshold_for(x), lambda n: MDS(F, x, n)),
             (PolynomialCode.threshold_for(x, y), lambda n: PolynomialCode(F, x, y, n)),
             (MatDot.threshold_for(x), lambda n: MatDot(F, x, n)),
             (EntangledPolynomialCode.threshold_for(x, y, z),
              lambda n: EntangledPolynomialCode(F, x, y, z, n)),
             (GASP.threshold_for(x, y, z), lambda n: GASP(F, x, y, z, n)),
             (LCC.threshold_for(x, z - 1, y), lambda n: LCC(F, x, z - 1, _square, y, n))]
    for R, make in cases:
        assert make(R + 1).recovery_threshold == R
        if R > 1:
            with pytest.raises(ValueError, match="needs results from|recovery threshold"):
                make(R - 1)
    for variant in ("big", "small"):
        assert GASP(F, x, y, z, 40, variant=variant).recovery_threshold == \
            GASP.threshold_for(x, y, z, variant)
