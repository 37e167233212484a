"""EntangledPolynomialCode and GASP on the general framework: every R results decode and no
R - 1 do (exhaustively for small N), the special cases are PolynomialCode and MatDot, the
recovery thresholds are the papers' formulas, GASP's shares of any t workers are uniform
(by the masks' rank, and by counting shares at a small prime), bad parameters and points
are refused, and both run every scheme of the runtime, verified and corrected."""
import itertools
import math

import numpy as np
import pytest

import ffcode
from ffcode import GASP, MatDot, EntangledPolynomialCode, PolynomialCode, ProductCode, sim
from ffcode.codes import gasp
from ffcode.decoding.decoder import Decoder
from ffcode.runtime import Cluster, Faults

from helpers import obj_matmul, rand, shared_cluster

F = ffcode.GF(2**31 - 1)


def product(code, seed=0, rows=7, inner=6, cols=5):
    p = code.F.p
    A, B = rand(p, (rows, inner), (seed, 1)), rand(p, (inner, cols), (seed, 2))
    shares = code.encode(A, B, seed=seed)
    results = {i: code.compute(shares[i]) for i in range(code.n_workers)}
    return A, B, shares, results, obj_matmul(p, A, B)


def decodes_from_every_subset(code, seed=0):
    """Every R-subset of workers decodes exactly; no R - 1 of them reach the rank."""
    A, B, shares, results, expected = product(code, seed)
    R, N = code.recovery_threshold, code.n_workers
    for workers in itertools.combinations(range(N), R):
        out = code.decode(shares, {w: results[w] for w in workers})
        assert np.array_equal(out.astype(object), expected), workers
    for workers in itertools.combinations(range(N), R - 1):
        decoder = Decoder(shares, 1)
        for w in workers:
            decoder.add(ffcode.Packet(w, 0, np.ones(1, code.F.dtype), results[w]))
        assert decoder.rank == R - 1 and not decoder.complete, workers
        assert code.F.rank(code.evaluations[list(workers)]) == R - 1


# -- the entangled polynomial code --------------------------------------------------------------

@pytest.mark.parametrize("p, m, n, N", [(2, 2, 1, 7), (1, 2, 2, 6), (2, 1, 1, 5), (3, 1, 2, 9),
                                        (2, 2, 2, 10)])
def test_entangled_every_r_subset_decodes(p, m, n, N):
    code = EntangledPolynomialCode(F, p, m, n, N)
    assert code.recovery_threshold == p * m * n + p - 1 and code.dense
    decodes_from_every_subset(code, seed=p * 10 + m + n)


@pytest.mark.parametrize("p, m, n", list(itertools.product(range(1, 5), range(1, 4),
                                                          range(1, 4))))
def test_entangled_threshold_is_the_papers(p, m, n):
    """R = p m n + p - 1 (Yu, Maddah-Ali, Avestimehr), and each share holds 1/(p m) of A and
    1/(p n) of B."""
    R = p * m * n + p - 1
    code = EntangledPolynomialCode(ffcode.GF(65521), p, m, n, R + 1)
    assert code.recovery_threshold == R and code.support == tuple(range(R))
    shares = code.encode(np.ones((12 * m, 12 * p), np.int64), np.ones((12 * p, 12 * n),
                                                                      np.int64))
    assert shares[0][0].shape == (12, 12) and shares[0][1].shape == (12, 12)


@pytest.mark.parametrize("m, n", [(1, 1), (2, 1), (1, 3), (3, 2)])
def test_entangled_with_p_1_is_the_polynomial_code(m, n):
    """p = 1: PolynomialCode(a=m, b=n), share for share and output for output."""
    ours, theirs = EntangledPolynomialCode(F, 1, m, n, m * n + 2), PolynomialCode(F, m, n,
                                                                                  m * n + 2)
    same_code(ours, theirs)


@pytest.mark.parametrize("s", [1, 2, 3, 4])
def test_entangled_with_m_n_1_is_matdot(s):
    """m = n = 1: MatDot(s = p), share for share and output for output."""
    same_code(EntangledPolynomialCode(F, s, 1, 1, 2 * s + 1), MatDot(F, s, 2 * s + 1))


def same_code(ours, theirs):
    assert ours.support == theirs.support
    assert np.array_equal(ours.a_exponents, theirs.a_exponents)
    assert np.array_equal(ours.b_exponents, theirs.b_exponents)
    A, B, shares, results, expected = product(ours, seed=3)
    other = theirs.encode(A, B)
    for mine, yours in zip(shares, other):
        assert all(np.array_equal(x, y) for x, y in zip(mine, yours))
    workers = range(1, ours.recovery_threshold + 1)
    out = ours.decode(shares, {w: results[w] for w in workers})
    assert np.array_equal(out, theirs.decode(other, {w: theirs.compute(other[w])
                                                     for w in workers}))
    assert np.array_equal(out.astype(object), expected)


def test_polydot_maps_onto_entangled():
    """PolyDot's A in t x s blocks, B in s x t: p = s, m = n = t, R = s t**2 + s - 1, which
    is PolyDot's t**2 (2s - 1) less (s - 1)(t**2 - 1)."""
    for s, t in itertools.product(range(1, 5), range(1, 5)):
        code = EntangledPolynomialCode(ffcode.GF(65521), s, t, t, 2 * s * t * t)
        assert code.recovery_threshold == s * t * t + s - 1
        assert t * t * (2 * s - 1) - code.recovery_threshold == (s - 1) * (t * t - 1)


# -- GASP ------------------------------------------------------------------------------------

def gasp_big(K, L, T):
    """N of GASP_big (D'Oliveira, El Rouayheb, Karpuk, Theorem for GASP_big)."""
    if L <= K:
        return (K + T) * (L + 1) - 1 if T < K else 2 * K * L + 2 * T - 1
    return (L + T) * (K + 1) - 1 if T < L else 2 * K * L + 2 * T - 1


def gasp_small(K, L, T):
    """N of GASP_small, piecewise as the paper states it (for L <= K; L > K by symmetry)."""
    if L > K:
        K, L = L, K
    if L == 1:
        return 2 * K + T * T if T < K else K * T + K + T
    if T == 1 and T < K:
        return K * L + K + L
    if 2 <= T < K:
        return K * L + K + L + T * T + T - 3
    if K <= T <= K * (L - 1) + 1:
        return K * L + K * T + L + 2 * T - 3 - (T - 2) // K
    return 2 * K * L + K * T - K + T


@pytest.mark.parametrize("K, L", list(itertools.product(range(1, 6), range(1, 6))))
def test_gasp_thresholds_are_the_papers(K, L):
    for T in range(1, 9):
        big, small = gasp_big(K, L, T), gasp_small(K, L, T)
        assert gasp.recovery_threshold(K, L, T, "big") == big, (K, L, T)
        assert gasp.recovery_threshold(K, L, T, "small") == small, (K, L, T)
        if T < min(K, L):
            assert small <= big                 # the paper's reason to prefer it there
    code = GASP(F, K, L, 2, gasp_big(K, L, 2) + 1)
    assert code.recovery_threshold == min(gasp_big(K, L, 2), gasp_small(K, L, 2))
    assert len(code.support) == code.recovery_threshold


@pytest.mark.parametrize("k, l, t, variant, N", [(2, 2, 1, "big", 10), (2, 2, 1, "small", 9),
                                                 (3, 2, 2, None, 16), (1, 3, 2, "big", 11),
                                                 (2, 1, 3, None, 10)])
def test_gasp_every_r_subset_decodes(k, l, t, variant, N):
    code = GASP(F, k, l, t, N, variant=variant)
    assert code.masks == 2 * t and len(code.support) == code.recovery_threshold
    decodes_from_every_subset(code, seed=k + l + t)


@pytest.mark.parametrize("k, l, t, variant", [(2, 2, 1, "big"), (3, 3, 2, "small"),
                                              (3, 3, 2, "big"), (2, 4, 3, "small"),
                                              (4, 2, 3, "small"), (3, 2, 4, None)])
def test_gasp_any_t_workers_see_uniform_shares(k, l, t, variant):
    """For every t workers the mask columns of their A and B encodings have full rank t (so
    that, block for block, their shares are the data plus a uniform vector), while some
    t + 1 workers' do not hide everything: the masks are exactly t."""
    R = gasp.recovery_threshold(k, l, t, variant or "big")
    code = GASP(F, k, l, t, R + 3, variant=variant)
    for masks in (code.a_masks, code.b_masks):
        E = np.array([[pow(int(x), e, F.p) for e in masks] for x in code.points], np.int64)
        for workers in itertools.combinations(range(code.n_workers), t):
            assert F.rank(E[list(workers)]) == t, workers
        assert E.shape[1] == t < t + 1


def test_gasp_shares_are_uniform_at_a_small_prime():
    """At p = 13 (k = l = 2, t = 1, 8 workers), a worker's A and B share elements over 1300
    seeded encodings are uniform (chi-square over the 13 values), for zero data and for
    fixed random data alike; the same data without masks is a point mass."""
    F13 = ffcode.GF(13)
    code = GASP(F13, 2, 2, 1, 8)
    plain = ProductCode(F13, 8, [[0], [1]], [[0, 2]])
    rng = np.random.default_rng(5)
    data = [(np.zeros((2, 1), np.int64), np.zeros((1, 2), np.int64)),
            (rng.integers(0, 13, (2, 1)), rng.integers(0, 13, (1, 2)))]
    runs = 1300
    bound = 40.0                    # chi-square, 12 degrees of freedom: p-value ~ 1e-4

    def chi2(values):
        counts = np.bincount(values, minlength=13)
        return ((counts - runs / 13) ** 2 / (runs / 13)).sum()

    for A, B in data:
        for worker in (0, 4, 7):
            for side in (0, 1):
                values = [int(code.encode(A, B, seed=s)[worker][side].flat[0])
                          for s in range(runs)]
                assert chi2(values) < bound, (worker, side)
        unmasked = [int(plain.encode(A, B, seed=s)[4][0].flat[0]) for s in range(runs)]
        assert chi2(unmasked) > 100 * bound          # the test sees data that is not hidden


def test_gasp_refusals():
    with pytest.raises(ValueError, match=r"GASP_big\(k=2, l=2, t=1\) needs results from R = 8 "
                                         r"workers \(its recovery threshold\), but n_workers "
                                         r"is 7"):
        GASP(F, 2, 2, 1, 7)
    with pytest.raises(ValueError, match="Argument 't' must be at least 1, not 0"):
        GASP(F, 2, 2, 0, 9)
    with pytest.raises(ValueError, match="'variant' must be one of 'big', 'small'; not"):
        GASP(F, 2, 2, 1, 9, variant="huge")
    with pytest.raises(TypeError):
        GASP(F, 2.0, 2, 1, 9)
    with pytest.raises(ValueError, match=r"GF\(31\) has only 10 distinct values of x\*\*3, "
                                         r"and GASP_small's masks need one per worker \(18\)"):
        GASP(ffcode.GF(31), 3, 3, 2, 18)
    omega = 13                              # 13**3 = 1 in GF(61)
    points = [1, omega] + [x for x in range(2, 61) if x != omega][:16]
    with pytest.raises(ValueError, match=r"Workers 0 and 1 \(points 1 and 13\) have the same "
                                         r"x\*\*3 in GF\(61\)"):
        GASP(ffcode.GF(61), 3, 3, 2, 18, points=points)
    with pytest.raises(ValueError, match=r"GF\(7\) is too small for 8 workers"):
        GASP(ffcode.GF(7), 2, 2, 1, 8)


def test_entangled_refusals():
    with pytest.raises(ValueError, match=r"needs results from R = p\*m\*n \+ p - 1 = 9 workers "
                                         r"\(its recovery threshold\), but n_workers is 8"):
        EntangledPolynomialCode(F, 2, 2, 2, 8)
    for name, args in (("p", (0, 1, 1)), ("m", (1, 0, 1)), ("n", (1, 1, -1))):
        with pytest.raises(ValueError, match=f"Argument '{name}' must be at least 1"):
            EntangledPolynomialCode(F, *args, 6)
    with pytest.raises(ValueError, match=r"GF\(5\) is too small for 5 workers"):
        EntangledPolynomialCode(ffcode.GF(5), 2, 1, 1, 5)


def test_gasp_singular_points_refused():
    """A sparse support can be singular at some points of a small field: the construction
    says which workers' results would not determine the product."""
    refused = 0
    for p in (17, 19, 23, 29, 31, 37, 41, 43):
        try:
            GASP(ffcode.GF(p), 2, 2, 1, 10)
        except ValueError as e:
            assert "do not determine the code's polynomial" in str(e) and "singular" in str(e)
            refused += 1
    assert refused >= 1


def test_gasp_simulated_with_its_own_equations():
    """The simulator's exact rank tracking runs on GASP's own (sparse) equations."""
    code = GASP(F, 2, 2, 1, 10)
    model = sim.Model.for_code(code, 2, piece_time=sim.ShiftedExponential(0.01, 0.0),
                               slowdown={8: 5, 9: 5})
    times = sim.compare(model)
    assert times["compfs"] <= times["classic"] < math.inf


# -- on the runtime ---------------------------------------------------------------------------

cluster = shared_cluster(10, lost_after=2.0)


CODES = {"entangled": lambda: EntangledPolynomialCode(F, 2, 2, 1, 8),
         "gasp": lambda: GASP(F, 2, 2, 1, 10)}


@pytest.mark.bounded(90)
@pytest.mark.parametrize("name", list(CODES))
@pytest.mark.parametrize("scheme", ["uncoded", "classic", "systematic", "cfs", "compfs"])
def test_every_scheme_on_the_runtime(bounded, cluster, name, scheme):
    code = CODES[name]()
    A, B = F.random((40, 24), seed=1), F.random((24, 30), seed=2)
    output, report = cluster.run(code, A, B, scheme=scheme, pieces=2, verify=True,
                                 faults=Faults(slowdown={0: 3}), timeout=60)
    assert np.array_equal(output, F.matmul(A, B)) and report.verified


@pytest.mark.bounded(90)
@pytest.mark.parametrize("name", list(CODES))
@pytest.mark.parametrize("scheme", ["classic", "compfs"])
def test_wrong_worker_corrected(bounded, name, scheme):
    """One malicious worker, heard first: corrected, named and the output exact."""
    code = {"entangled": lambda: EntangledPolynomialCode(F, 2, 1, 1, 6),     # R = 3
            "gasp": lambda: GASP(F, 2, 1, 1, 7)}[name]()                     # R = 5
    A, B = F.random((40, 24), seed=3), F.random((24, 30), seed=4)
    honest = {w: (0.03, 0.0) for w in range(code.n_workers) if w != 1}
    with Cluster(code.n_workers) as c:
        output, report = c.run(code, A, B, scheme=scheme, pieces=2, adversaries=1,
                               faults=Faults(corrupt={1: "random"}, delay=honest), timeout=60)
    assert np.array_equal(output, F.matmul(A, B)) and report.wrong == [1]
