"""Cluster.run(adversaries=A) on real workers: with up to A malicious workers the output is
exact, exactly they are named and excluded from later jobs; with more the job fails with
VerificationError and never returns a wrong output, even when they collude."""
import numpy as np
import pytest

from ffcode import GF, PolynomialCode

F = GF(2**31 - 1)
CODE = PolynomialCode(F, 2, 2, 6)           # R = 4; A = 1 needs m·(R + 2) = 6 workers' worth
A_, B_ = F.random((24, 8), seed=1), F.random((8, 12), seed=2)
PRODUCT = F.matmul(A_, B_)
SCHEMES = ("classic", "systematic", "cfs", "compfs")
# Worker 5 straggles (50 ms per piece): the others' packets (the wrong worker's among them)
# arrive first, so the job must correct, not merely outrun, the wrong worker.
SLOW = {5: (0.05, 0.0)}


@pytest.fixture
def cluster(bounded):
    """Six local workers of the test's own: excluding one replaces its process."""
    import ffcode
    with ffcode.Cluster(6, lost_after=30) as cluster:
        yield cluster


def run(cluster, scheme, **kwargs):
    return cluster.run(CODE, A_, B_, scheme=scheme, adversaries=1, timeout=30, **kwargs)


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("mode", ["random", "piece", "shape"])
def test_one_wrong_worker_is_corrected_named_and_excluded(cluster, scheme, mode):
    """Also a worker whose packets claim a wrong shape: rejected as invalid, and named."""
    from ffcode import Faults
    before = {h.slot: h for h in cluster.wait(6)}
    output, report = run(cluster, scheme, verify=False,
                         faults=Faults(corrupt={3: mode}, delay=SLOW))
    assert np.array_equal(output, PRODUCT)
    assert report.wrong == [3]
    assert before[3].lost.startswith("excluded: sent a wrong result")
    assert all(before[i].lost is None for i in range(6) if i != 3)
    after = {h.slot: h for h in cluster.wait(6)}           # a fresh process in slot 3
    assert after[3] is not before[3] and after[3].pid != before[3].pid
    output, report = run(cluster, scheme)                  # the fresh worker is honest
    assert np.array_equal(output, PRODUCT) and report.wrong == []


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme,m", [("classic", 1), ("cfs", 4), ("compfs", 4)])
def test_stops_early_when_nobody_is_wrong(cluster, scheme, m):
    """Nobody wrong: m·(R + A) packets (R + A whole results) decide, not the m·(R + 2A) that
    any A wrong need."""
    output, report = run(cluster, scheme, pieces=4)
    assert np.array_equal(output, PRODUCT) and report.wrong == []
    assert report.needed == m * (4 + 2)
    assert report.used == m * (4 + 1) <= report.received


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme,message", [
    ("classic", "cannot be explained with at most 1 wrong workers"),
    ("cfs", "cannot be explained with at most 1 wrong workers"),
    ("compfs", "cannot be explained with at most 1 wrong workers")])
def test_more_wrong_workers_fail_the_job(cluster, scheme, message):
    from ffcode import Faults
    from ffcode.runtime import VerificationError
    before = cluster.wait(6)
    with pytest.raises(VerificationError, match=message) as e:
        run(cluster, scheme, verify=False, faults=Faults(corrupt={0: "random", 4: "piece"}))
    assert e.value.report is not None and e.value.report.wrong == []
    assert all(h.lost is None for h in before)             # nobody is known wrong


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["classic", "cfs"])
def test_colluding_workers_are_caught_by_the_check(scheme):
    """Two workers (A = 1) of a repetition code (R = 1) spoil the same element alike: their
    results agree on a wrong output and outvote the honest worker (heard first), which no
    decoder can tell. The check, on by default when correcting, refuses the output and nobody is
    excluded; unchecked, the forged output would have come back with the honest worker
    named."""
    import ffcode
    from ffcode import MDS, Faults
    from ffcode.runtime import VerificationError
    code, x = MDS(F, 1, 3), F.random((8, 3), seed=3)
    colluding = Faults(corrupt={1: "piece", 2: "piece"}, delay={1: (0.05, 0), 2: (0.05, 0)})
    with ffcode.Cluster(3, lost_after=30) as cluster:
        before = cluster.wait(3)
        with pytest.raises(VerificationError, match="failed its check") as e:
            cluster.run(code, A_, x, scheme=scheme, adversaries=1, faults=colluding)
        assert e.value.report.verified is False
        assert all(h.lost is None for h in before)
        output, report = cluster.run(code, A_, x, scheme=scheme, adversaries=1,
                                     faults=colluding, verify=False)
        assert not np.array_equal(output, F.matmul(A_, x)) and report.wrong == [0]


@pytest.mark.bounded(30)
def test_refusals(cluster):
    with pytest.raises(ValueError, match="redundancy"):
        run(cluster, "uncoded")
    for scheme in SCHEMES:
        with pytest.raises(ValueError, match="R \\+ 2A = 8 workers"):
            cluster.run(CODE, A_, B_, scheme=scheme, adversaries=2)
    with pytest.raises(ValueError, match="non-negative"):
        cluster.run(CODE, A_, B_, adversaries=-1)


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["classic", "cfs"])
def test_lcc_not_row_linear(scheme):
    """LCC with f = square (privacy t = 1, R = 5): one malicious worker of 7 is corrected
    and named, also when it claims a result of another shape."""
    import ffcode
    from ffcode import LCC, Faults
    code = LCC(F, 2, 1, "ffcode.functions:square", 2, 7)
    X = [F.random((6, 4), seed=10 + j) for j in range(2)]
    with ffcode.Cluster(7, lost_after=30) as cluster:
        for corrupt in ({2: "random"}, {4: "piece"}, {1: "shape"}):
            output, report = cluster.run(code, X, scheme=scheme, adversaries=1,
                                         faults=Faults(corrupt=corrupt, delay=SLOW))
            assert all(np.array_equal(o, F.mul(x, x)) for o, x in zip(output, X))
            assert report.wrong == list(corrupt)
