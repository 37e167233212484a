"""Error correction (Berlekamp-Welch for a dense support, a search for the fewest workers to
remove for a sparse one): with up to A wrong results out of R + 2A the output is exact and
exactly the wrong workers are named; with more, DecodingError, never a wrong output."""
import dataclasses

import numpy as np
import pytest

from ffcode import GF, MDS, ProductCode
from ffcode.decoding.robust import DecodingError, RobustDecoder, decode, locate

from codecases import Case
from helpers import assert_field_array, obj_matmul, prime_id, rand

PRIMES = [257, 65521, 2**31 - 1, 2**61 - 1]
NAMES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "ProductCode sparse",
         "LCC t=1", "LCC gram"]


def spoil(F, y, how, rng):
    """y replaced by random elements, or one element of it off by one."""
    if how == "random":
        return F.random(y.shape, rng)
    y = y.copy()
    k = int(rng.integers(y.size))
    y.flat[k] = F.add(y.flat[k], 1)
    return y


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("how", ["random", "one element"])
def test_one_wrong_worker_is_corrected_and_named(name, p, how):
    F = GF(p)
    case = Case(name, F, seed=3)
    R, N = case.code.recovery_threshold, case.code.n_workers
    rng = np.random.default_rng(p % 97)
    chosen = sorted(rng.choice(N, R + 2, replace=False).tolist())
    for wrong in [None] + chosen:
        results = {w: case.results[w] for w in chosen}
        if wrong is not None:
            results[wrong] = spoil(F, results[wrong], how, rng)
        output, bad = decode(case.encoding, results, adversaries=1, seed=wrong)
        case.check(output)
        assert bad == ([] if wrong is None else [wrong])


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_two_errors_corrected_with_a_2(p):
    """A = 2 needs R + 4 results; two wrong workers among them are corrected and named."""
    F = GF(p)
    case = Case("PolynomialCode", F, seed=1)            # R = 4, N = 6: not enough for A = 2
    with pytest.raises(ValueError, match="R \\+ 2A = 8"):
        decode(case.encoding, dict(enumerate(case.results)), adversaries=2)
    code = MDS(F, 2, 7)                                # R = 2, N = 7: A = 2 with 6 results
    A, x = F.random((6, 3), seed=2), F.random(3, seed=4)
    shares = code.encode(A)
    results = {i: code.compute(s, x) for i, s in enumerate(shares)}
    expected = F.matmul(A, x)
    results[1], results[5] = F.random(results[1].shape, 5), F.add(results[5], 1)
    output, bad = decode(shares, {w: results[w] for w in range(6)}, adversaries=2, seed=0)
    assert np.array_equal(output, expected) and bad == [1, 5]


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_sparse_support_is_corrected_by_subset_search(p):
    """A ProductCode of support 0, 1, 3, 4 (not 0..R-1, so no Berlekamp-Welch): locate finds
    the fewest workers whose removal leaves agreeing results, one or two wrong among
    R + 2A = 8 of 9 (A = 2), and three wrong among them fail loudly."""
    F = GF(p)
    code = ProductCode(F, 9, [[0], [1]], [[0, 3]])
    assert code.support == (0, 1, 3, 4) != tuple(range(code.recovery_threshold))
    A, B = rand(p, (7, 4), 1), rand(p, (4, 5), 2)
    shares = code.encode(A, B)
    results = {w: code.compute(s) for w, s in enumerate(shares)}
    expected = obj_matmul(p, A, B)
    rng = np.random.default_rng(p % 89)
    chosen = [0, 1, 2, 4, 5, 6, 7, 8]
    for wrong in [(), (5,), (0, 8), (2, 3), (1, 4, 6)]:
        given = {w: results[w] for w in chosen}
        for i, w in enumerate(wrong):
            if w in given:
                given[w] = spoil(F, given[w], ["random", "one element"][i % 2], rng)
        named = sorted(w for w in wrong if w in given)
        if len(named) > 2:
            with pytest.raises(DecodingError, match="more than 2 workers are wrong"):
                decode(shares, given, adversaries=2, seed=1)
            continue
        output, bad = decode(shares, given, adversaries=2, seed=1)
        assert_field_array(F, output, expected)
        assert bad == named


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2])
def test_robust_decoder_corrects_a_sparse_support(m, p):
    """RobustDecoder on the packets of a sparse-support ProductCode computed at full speed,
    one worker's packets wrong (each position, arriving first): the output is exact and that
    worker is named; with nobody wrong nobody is."""
    F = GF(p)
    code = ProductCode(F, 6, [[0], [1]], [[0, 3]])       # R = 4, N = 6: A = 1
    A, B = rand(p, (9, 4), 3), rand(p, (4, 7), 4)
    shares = code.encode(A, B, pieces=m, seed=5)
    packets = [list(code.compute_pieces(s)) for s in shares]
    expected = obj_matmul(p, A, B)
    rng = np.random.default_rng(p % 83)
    for wrong in [None, *range(code.n_workers)]:
        decoder = RobustDecoder(shares, m, adversaries=1, seed=6)
        order = ([] if wrong is None else [wrong]) + [w for w in range(6) if w != wrong]
        for w in order:
            for q in packets[w]:
                if w == wrong:
                    q = dataclasses.replace(q, payload=spoil(F, q.payload, "random", rng))
                decoder.add(q)
        assert decoder.complete
        assert_field_array(F, decoder.result(), expected)
        assert decoder.wrong == ([] if wrong is None else [wrong])


def test_locate_takes_worker_indices():
    """locate(code, workers, projected, errors) gives positions in ``workers``, for a dense
    support (Berlekamp-Welch) and a sparse one (subset search), or None beyond errors."""
    F = GF(65521)
    rng = np.random.default_rng(4)
    for code in (MDS(F, 3, 8), ProductCode(F, 8, [[0], [2]], None)):
        R = code.recovery_threshold
        coeffs = F.random((R, 2), rng)                      # two rounds: two polynomials
        values = F.matmul(code.evaluations, coeffs)         # h(points[i]) per round
        workers = [7, 1, 4, 2, 6, 0, 5]
        projected = [[int(v) for v in values[w]] for w in workers]
        assert locate(code, workers, projected, 2) == set()
        projected[2][1] = (projected[2][1] + 1) % F.p       # worker 4, second round
        projected[5][0] = (projected[5][0] + 3) % F.p       # worker 0, first round
        assert locate(code, workers, projected, 2) == {2, 5}
        projected[0][0] = (projected[0][0] + 1) % F.p       # a third wrong worker
        assert locate(code, workers, projected, 2) is None


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_too_many_wrong_workers_fail_loudly(p):
    F = GF(p)
    case = Case("PolynomialCode", F, seed=2)
    rng = np.random.default_rng(5)
    results = dict(enumerate(case.results))             # R + 2 = 6 results, A = 1
    results[0] = F.random(results[0].shape, rng)
    results[3] = F.random(results[3].shape, rng)
    with pytest.raises(DecodingError, match="more than 1 workers are wrong"):
        decode(case.encoding, results, adversaries=1, seed=0)


def test_bad_arguments():
    F = GF(65521)
    case = Case("MDS vector", F)
    results = dict(enumerate(case.results))
    for kwargs, error in [(dict(adversaries=-1), ValueError), (dict(adversaries=1.5), TypeError),
                          (dict(adversaries=2), ValueError)]:
        with pytest.raises(error):
            decode(case.encoding, results, **kwargs)
    with pytest.raises(TypeError, match="mapping"):
        decode(case.encoding, list(results.values()), adversaries=0)
    for not_an_encoding in ("mds", case.code, list(case.encoding)):
        with pytest.raises(TypeError, match="encoding"):
            decode(not_an_encoding, results, adversaries=0)
    output, bad = decode(case.encoding, results, adversaries=0)
    case.check(output)
    assert bad == []
