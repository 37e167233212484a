"""ffcode.sim_gradient: each protocol's time against a replay of the same run through the
master's own decoding (GradientDecoder fed the messages in time order; the code's
tolerates() on whole messages), on random times; the models' draws; bad input refused."""
import numpy as np
import pytest

import ffcode
from ffcode import CyclicRepetition, FractionalRepetition
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import GradientDecoder
from ffcode.sim import Pareto
from ffcode.sim_gradient import GradientModel, ShiftedExponential, compare, finish, simulate

F = ffcode.GF(65521)
CODES = [CyclicRepetition(F, 6, 2), FractionalRepetition(F, 6, 1), CyclicRepetition(F, 5, 0),
         CyclicRepetition(F, 7, 3)]


def replayed(code, times, partial):
    """The time of the message that completes a GradientDecoder fed every message in time
    order (after each partition, or only after the last)."""
    decoder = GradientDecoder(code)
    events = []
    for i, order in enumerate(code.assignment):
        done = np.cumsum(times[i, :len(order)])
        for u, t in enumerate(done):
            if (partial or u == len(order) - 1) and np.isfinite(t):
                events.append((t, i, u + 1))
    for t, i, done in sorted(events):
        decoder.add(i, done, F.asarray([1]))
        if decoder.complete:
            return t
    return float("inf")


@pytest.mark.parametrize("code", CODES, ids=repr)
def test_protocol_times_match_the_decoder_on_random_runs(code):
    rng = np.random.default_rng(code.n_workers + code.stragglers)
    for _ in range(40):
        times = rng.exponential(1.0, (code.n_workers, code.stragglers + 1))
        times[rng.random(code.n_workers) < 0.2] = np.inf           # some workers never
        for protocol, partial in (("partial", True), ("original", False)):
            assert finish(code, times, protocol) == replayed(code, times, partial)
        assert finish(code, times, "uncoded") == times[:, 0].max()
        assert finish(code, times, "partial") <= finish(code, times, "original")


def test_models_draw_with_slowdowns_and_pauses():
    code = CyclicRepetition(F, 4, 1)
    model = GradientModel(code, ShiftedExponential(2.0, 0.0), slowdown={1: 3.0}, pause={2: 0.5})
    times = model.draw(np.random.default_rng(0))
    assert times.tolist() == [[2.0, 2.0], [6.0, 6.0], [2.5, 2.5], [2.0, 2.0]]
    assert compare(model) == {"uncoded": 6.0, "original": 5.0, "partial": 4.0}
    heavy = GradientModel(code, Pareto(1.0, 1.5), runs=51, seed=3)
    assert simulate(heavy, "partial") <= simulate(heavy, "original")


def test_bad_input_is_refused():
    code = CyclicRepetition(F, 4, 1)
    with pytest.raises(InvalidParameterError, match="protocol"):
        finish(code, np.ones((4, 2)), "fastest")
    with pytest.raises(InvalidParameterError, match=r"\(4, 2\), not \(4, 1\)"):
        finish(code, np.ones((4, 1)), "partial")
    with pytest.raises(InvalidParameterError, match="seconds >= 0"):
        finish(code, -np.ones((4, 2)), "partial")
    with pytest.raises(InvalidParameterError, match="worker"):
        GradientModel(code, ShiftedExponential(1.0, 0.0), slowdown={4: 2.0}).draw(
            np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="slowdown"):
        GradientModel(code, ShiftedExponential(1.0, 0.0), slowdown={0: 0}).draw(
            np.random.default_rng(0))
