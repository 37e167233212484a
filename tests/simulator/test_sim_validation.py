"""The simulator predicts real cluster runs within 20 % when the injected faults are known
(the pieces here are cheap and the pauses tens of milliseconds; bench_simulator.py reports
the errors)."""
import statistics

import pytest

import ffcode
from ffcode import GF, Faults, PolynomialCode, sim
from ffcode.schemes import NAMES

N, R, M, SIZE = 6, 4, 4, 256


@pytest.mark.bounded(90)
def test_predictions_within_20_percent(bounded):
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, N)
    A, B = F.random((SIZE, SIZE), seed=1), F.random((SIZE, SIZE), seed=2)
    settings = [Faults(slowdown={4: 3, 5: 3}, delay=(0.04, 0.02), seed=3),
                Faults(slowdown={5: 4}, delay=(0.03, 0.01), link_rate={0: 2e6, 1: 2e6},
                       seed=9)]
    share, slice_ = (SIZE // 2) ** 2, -(-SIZE // N) * SIZE
    with ffcode.Cluster(N, lost_after=30) as cluster:
        for _ in range(2):
            _, report = cluster.run(code, A, B, scheme="compfs", pieces=M)
        piece = statistics.median(p["compute"] for w in report.workers for p in w.packets)
        for faults in settings:
            model = sim.Model.from_faults(N, R, M, piece, faults, piece_bytes=4 * share / M,
                                          uncoded_work=slice_ / share)
            predicted = sim.compare(model)
            for scheme in NAMES:
                measured = statistics.median(
                    cluster.run(code, A, B, scheme=scheme, pieces=M, faults=faults)[1].compute
                    for _ in range(2))
                assert predicted[scheme] == pytest.approx(measured, rel=0.2), (scheme, faults)


def test_from_faults_replays_the_injected_pauses():
    """The model's pauses are exactly the ones the workers draw, on top of the slowed
    compute; links come from the faults too."""
    faults = Faults(slowdown={1: 3}, delay=(0.01, 0.02), link_rate={2: 5e6}, seed=4)
    model = sim.Model.from_faults(3, 2, 4, 0.5, faults)
    for w in range(3):
        assert model.pauses[w].tolist() == list(faults.for_worker(w, 4).delays)
    assert model.compute[:, 0].tolist() == [0.5, 1.5, 0.5]
    assert model.link_rate.tolist() == [float("inf"), float("inf"), 5e6]
    assert model.uncoded_work == 2 / 3
