"""Reed-Solomon error correction: with up to A wrong results out of R + 2A the output is
exact and exactly the wrong workers are named; with more, DecodingError, never a wrong
output."""
import numpy as np
import pytest

from ffcode import GF
from ffcode.byzantine import DecodingError, decode

from codecases import Case
from helpers import prime_id

PRIMES = [257, 65521, 2**31 - 1, 2**61 - 1]
NAMES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "LCC t=1", "LCC gram"]


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
    code, R, N = case.code, case.code.recovery_threshold, case.code.n_workers
    rng = np.random.default_rng(p % 97)
    chosen = sorted(rng.choice(N, R + 2, replace=False).tolist())
    for wrong in [None] + chosen:
        results = {w: case.results[w] for w in chosen}
        if wrong is not None:
            results[wrong] = spoil(F, results[wrong], how, rng)
        output, bad = decode(code, results, adversaries=1, seed=wrong)
        case.check(output)
        assert bad == ([] if wrong is None else [wrong])


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_two_errors_corrected_with_a_2(p):
    """A = 2 needs R + 4 results; two wrong workers among them are corrected and named."""
    F = GF(p)
    case = Case("PolynomialCode", F, seed=1)            # R = 4, N = 6: not enough for A = 2
    with pytest.raises(ValueError, match="R \\+ 2A = 8"):
        decode(case.code, dict(enumerate(case.results)), adversaries=2)
    from ffcode import MDS
    code = MDS(F, 2, 7)                                # R = 2, N = 7: A = 2 with 6 results
    A, x = F.random((6, 3), seed=2), F.random(3, seed=4)
    results = {i: code.compute(s, x) for i, s in enumerate(code.encode(A))}
    expected = F.matmul(A, x)
    results[1], results[5] = F.random(results[1].shape, 5), F.add(results[5], 1)
    output, bad = decode(code, {w: results[w] for w in range(6)}, adversaries=2, seed=0)
    assert np.array_equal(output, expected) and bad == [1, 5]


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_too_many_wrong_workers_fail_loudly(p):
    F = GF(p)
    case = Case("PolynomialCode", F, seed=2)
    rng = np.random.default_rng(5)
    results = dict(enumerate(case.results))             # R + 2 = 6 results, A = 1
    results[0] = F.random(results[0].shape, rng)
    results[3] = F.random(results[3].shape, rng)
    with pytest.raises(DecodingError, match="more than 1 workers are wrong"):
        decode(case.code, results, adversaries=1, seed=0)


def test_bad_arguments():
    F = GF(65521)
    case = Case("MDS vector", F)
    results = dict(enumerate(case.results))
    for kwargs, error in [(dict(adversaries=-1), ValueError), (dict(adversaries=1.5), TypeError),
                          (dict(adversaries=2), ValueError)]:
        with pytest.raises(error):
            decode(case.code, results, **kwargs)
    with pytest.raises(TypeError, match="mapping"):
        decode(case.code, list(results.values()), adversaries=0)
    with pytest.raises(TypeError, match="code"):
        decode("mds", results, adversaries=0)
    output, bad = decode(case.code, results, adversaries=0)
    case.check(output)
    assert bad == []
