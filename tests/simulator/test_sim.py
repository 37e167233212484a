"""The simulator: hand-computed timelines, its counting rule against the decoder's own rank
tracking, the time models (shifted exponential, Pareto, replay) and its input checks."""
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from ffcode import sim
from ffcode.schemes import NAMES
from ffcode.sim import Model, Pareto, Replay, ShiftedExponential, compare, simulate

UNIT = ShiftedExponential(1.0, 0.0)


def test_one_worker_by_hand():
    """N = R = 1, m = 2 pieces of 1 s and 1 byte over a 1 byte/s link: compfs sends piece 0
    at 1 s (arrives 2 s) and piece 1 at 2 s (arrives 3 s); cfs and systematic send both
    after 2 s (arrive 3 s and 4 s); classic sends the 2-byte whole result at 2 s (4 s)."""
    model = Model(1, 1, 2, piece_time=UNIT, link_rate=1.0, piece_bytes=1)
    assert compare(model) == {"uncoded": 4.0, "classic": 4.0, "systematic": 4.0, "cfs": 4.0,
                              "compfs": 3.0, "ideal": 2.0}


def test_master_rate_serialises_the_packets():
    """Two workers finishing together, links free, a master taking 1 byte/s: the second
    whole result (2 bytes each) is taken 2 s after the first."""
    model = Model(2, 2, 2, piece_time=UNIT, master_rate=1.0, piece_bytes=1)
    assert simulate(model, "classic") == 2.0 + 2 + 2


def test_stragglers_by_hand():
    """6 workers, R = 4, m = 4 pieces of 0.1 s, workers 3-5 four times slower: classic waits
    for a straggler's whole result (1.6 s); compfs decodes at 0.8 s, when the 3 fast workers'
    12 pieces and 4 of the stragglers' (one each at 0.4 s, 0.8 s) are in."""
    model = Model(6, 4, 4, piece_time=ShiftedExponential(0.1, 0), slowdown={3: 4, 4: 4, 5: 4})
    times = compare(model)
    assert times["classic"] == pytest.approx(1.6)
    assert times["compfs"] == pytest.approx(0.8)
    assert times["uncoded"] == pytest.approx(1.6 * 4 / 6)
    assert times["ideal"] == pytest.approx(16 / (3 * 10 + 3 * 2.5))


def test_systematic_needs_every_piece_r_times():
    """Without coding across pieces, piece l needs R senders: with links so slow that only
    piece 0 of the slow-link workers arrives in time, systematic waits where cfs does not."""
    model = Model(4, 2, 2, piece_time=UNIT, link_rate={0: 1e9, 1: 1.0, 2: 1.0, 3: 1.0},
                  piece_bytes=1)
    times = compare(model)
    # worker 0 delivers both pieces at 2 s; the others deliver piece 0 at 3 s, piece 1 at 4 s
    assert times["cfs"] == pytest.approx(3.0)          # 4 packets: 2 + 3 at 3 s, any 4
    assert times["systematic"] == pytest.approx(4.0)   # piece 1 needs a second sender


@pytest.mark.parametrize("scheme", ["systematic", "cfs", "compfs"])
@pytest.mark.parametrize("seed", range(6))
def test_counting_rule_equals_rank_tracking(monkeypatch, scheme, seed):
    """Above EXACT_UP_TO the simulator counts instead of running RankBasis: on random models
    both give the same time."""
    rng = np.random.default_rng(seed)
    N = int(rng.integers(2, 9))
    model = Model(N, int(rng.integers(1, N + 1)), int(rng.integers(1, 5)),
                  piece_time=ShiftedExponential(0.01, 0.05),
                  slowdown={int(w): float(rng.uniform(1, 6)) for w in rng.choice(N, N // 2)},
                  link_rate={int(w): float(rng.uniform(1e5, 1e7)) for w in range(N)},
                  master_rate=float(rng.uniform(1e6, 1e8)), piece_bytes=1e5, seed=seed)
    exact = simulate(model, scheme)
    monkeypatch.setattr(sim, "EXACT_UP_TO", 0)
    assert simulate(model, scheme) == exact


def test_at_scale():
    """N = 1000 in well under a second or two: the counting rule, every scheme finite, and
    the ideal below every scheme."""
    model = Model(1000, 200, 4, piece_time=Pareto(0.01, 2.5),
                  slowdown={w: 5 for w in range(100)}, link_rate=200e6, master_rate=2e9,
                  seed=1)
    times = compare(model)
    assert all(math.isfinite(t) for t in times.values())
    assert times["ideal"] <= min(times[s] for s in NAMES)
    assert times["compfs"] <= times["cfs"] <= times["systematic"] + 1e-12


def test_seed_fixes_the_draws():
    a = Model(5, 3, 2, piece_time=ShiftedExponential(0.1, 0.1), seed=4)
    b = Model(5, 3, 2, piece_time=ShiftedExponential(0.1, 0.1), seed=4)
    c = Model(5, 3, 2, piece_time=ShiftedExponential(0.1, 0.1), seed=5)
    assert np.array_equal(a.times, b.times) and not np.array_equal(a.times, c.times)
    assert (a.times >= 0.1).all()
    assert (Model(5, 3, 2, piece_time=Pareto(0.2, 3)).times >= 0.2).all()


def test_per_worker_values_and_replace():
    """Per-worker values may be given one per worker, as a Model keeps them: so
    dataclasses.replace works, drawing again only for a new seed."""
    model = Model(3, 2, 2, piece_time=ShiftedExponential(0.1, 0.1), slowdown={1: 2},
                  link_rate=[1e6, 2e6, 3e6])
    assert model.slowdown.tolist() == [1, 2, 1] and model.link_rate.tolist() == [1e6, 2e6, 3e6]
    same = replace(model, master_rate=1e9)
    assert np.array_equal(same.times, model.times) and same.slowdown.tolist() == [1, 2, 1]
    assert compare(replace(model, master_rate=math.inf)) == compare(model)
    assert not np.array_equal(replace(model, seed=1).times, model.times)


def test_replay_from_report_and_csv(tmp_path):
    """Replay reuses measured piece times: from a report's packets (compute seconds, in
    piece order) and from a worker,piece,seconds CSV."""
    report = {"workers": [{"packets": [{"index": 1, "compute": 0.2},
                                       {"index": 0, "compute": 0.1}]},
                          {"packets": [{"index": 0, "compute": 0.3}]}]}
    replay = Replay.from_report(json.loads(json.dumps(report)))
    assert replay.times == ((0.1, 0.2), (0.3,))
    model = Model(2, 1, 2, piece_time=replay)
    assert model.times.tolist() == [[0.1, 0.2], [0.3, 0.3]]
    path = tmp_path / "times.csv"
    path.write_text("worker,piece,seconds\n0,1,0.5\n0,0,0.25\n1,0,1.0\n")
    assert Replay.from_csv(path).times == ((0.25, 0.5), (1.0,))
    with pytest.raises(ValueError, match="at least one piece time"):
        Model(2, 1, 2, piece_time=Replay(((0.1,), ())))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_workers=3, recovery_threshold=4, pieces=1), ValueError, "recovery_threshold"),
    (dict(n_workers=3, recovery_threshold=0, pieces=1), ValueError, "recovery_threshold"),
    (dict(n_workers=3, recovery_threshold=2, pieces=0), ValueError,
     "'pieces' must be at least 1"),
    (dict(n_workers=3.0, recovery_threshold=2, pieces=1), TypeError, "n_workers"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1, piece_time=0.1), TypeError,
     "piece_time"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1, slowdown={5: 2}), ValueError,
     "worker 5"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1, slowdown=0.5), ValueError,
     "Slowdowns"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1, link_rate=0), ValueError,
     "link rates"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1, master_rate=0), ValueError,
     "master_rate"),
    (dict(n_workers=3, recovery_threshold=2, pieces=1,
          piece_time=ShiftedExponential(-1, 0)), ValueError, "non-negative"),
])
def test_bad_models(kwargs, error, match):
    with pytest.raises(error, match=match):
        Model(**kwargs)


def test_unknown_scheme():
    with pytest.raises(ValueError, match="scheme"):
        simulate(Model(2, 1, 1), "fastest")
