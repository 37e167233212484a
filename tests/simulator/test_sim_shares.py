"""The simulator with several shares per worker: one share each keeps the one-share numbers,
hand-computed timelines, the counting rule against the rank tracking, the README's
straggler setting (what more shares buy, and the limit the piece size sets), the planner,
codes and runtime faults with shares, and the input checks."""
import math
from dataclasses import replace

import numpy as np
import pytest

from ffcode import GF, Faults, PolynomialCode, allocation, sim
from ffcode.schemes import NAMES
from ffcode.sim import Model, Pareto, Replay, ShiftedExponential, compare, plan, simulate

UNIT = ShiftedExponential(1.0, 0.0)

# Every scheme's seconds as the simulator gave them before it modelled several shares.
ONE_SHARE = [
    (dict(n_workers=5, recovery_threshold=3, pieces=3, piece_time=ShiftedExponential(0.01, 0.05),
          pause=ShiftedExponential(0.005, 0.01), slowdown={1: 2.5, 4: 4.0},
          link_rate={0: 2e6, 2: 5e5}, master_rate=3e7, piece_bytes=1e5, seed=7),
     {'uncoded': 0.5756182007294123, 'classic': 0.6700950949444594,
      'systematic': 0.6700950949444593, 'cfs': 0.6634284282777927,
      'compfs': 0.23836504928643373, 'ideal': 0.14087736070975476}),
    (dict(n_workers=8, recovery_threshold=5, pieces=2, piece_time=Pareto(0.02, 2.5),
          slowdown={6: 3.0, 7: 5.0}, link_rate=1e7, piece_bytes=1e5, seed=3),
     {'uncoded': 0.23034364728393664, 'classic': 0.10322787210570546,
      'systematic': 0.10322787210570544, 'cfs': 0.10322787210570544,
      'compfs': 0.06038553380945393, 'ideal': 0.039599720529604344}),
    (dict(n_workers=4, recovery_threshold=2, pieces=4,
          piece_time=Replay(((0.1, 0.2, 0.3), (0.05,), (0.4, 0.1))),
          pause=ShiftedExponential(0.0, 0.02), slowdown={3: 2.0}, master_rate=5e6,
          piece_bytes=1e5, seed=11),
     {'uncoded': 0.8210249564717252, 'classic': 0.9014090737178816,
      'systematic': 0.9014090737178817, 'cfs': 0.9014090737178817,
      'compfs': 0.4406424958223953, 'ideal': 0.31088094797635657}),
    (dict(n_workers=300, recovery_threshold=150, pieces=4,     # the counting rule
          piece_time=ShiftedExponential(0.01, 0.02), slowdown={w: 4.0 for w in range(30)},
          link_rate=2e8, master_rate=2e9, seed=5),
     {'uncoded': 0.3984822274074206, 'classic': 0.38522516545724894,
      'systematic': 0.42041117472502865, 'cfs': 0.37427383072503007,
      'compfs': 0.3298603478104733, 'ideal': 0.056401715436775794}),
]


@pytest.mark.parametrize("kwargs, seconds", ONE_SHARE)
def test_one_share_each_keeps_the_one_share_numbers(kwargs, seconds):
    """shares = 1, a count per worker or an empty mapping: exactly the seconds of before."""
    N = kwargs["n_workers"]
    for shares in (1, [1] * N, {}):
        assert compare(Model(**kwargs, shares=shares)) == seconds


def test_more_shares_keep_the_first_draws():
    """Worker i's first m piece times (and pauses) are those of one share each; the rest are
    fresh, and NaN past a worker's count."""
    kwargs = dict(n_workers=4, recovery_threshold=3, pieces=3,
                  piece_time=ShiftedExponential(0.1, 0.1), pause=Pareto(0.01, 3), seed=2)
    one = Model(**kwargs)
    more = Model(**kwargs, shares={1: 3, 2: 2})
    assert more.times.shape == (4, 9) and more.n_shares == 7
    assert np.array_equal(more.times[:, :3], one.times)
    assert np.array_equal(more.held.sum(axis=1), [3, 9, 6, 3])
    assert np.isnan(more.times[~more.held]).all() and np.isfinite(more.times[more.held]).all()
    assert more.assignment == allocation.dealt((1, 3, 2, 1)) == ((0,), (1, 4, 6), (2, 5), (3,))


def test_two_workers_by_hand():
    """2 workers, R = 2, m = 2 pieces of 1 s, worker 1 three times slower. One share each:
    compfs and classic wait for worker 1's second piece (6 s). Two each (worker 0 holds
    shares 0, 2, worker 1 shares 1, 3): worker 0's pieces are done at 1, 2, 3, 4 s, worker
    1's at 3, 6, ...; compfs has its 4 packets at 3 s (the bound: 4 pieces at 4/3 pieces a
    second), classic its 2 results at 2 and 4 s, cfs and systematic worker 0's two results
    at 4 s. Uncoded is unchanged (a slice per worker, here a whole share)."""
    one = Model(2, 2, 2, piece_time=UNIT, slowdown={1: 3})
    assert compare(one) == {"uncoded": 6.0, "classic": 6.0, "systematic": 6.0, "cfs": 6.0,
                            "compfs": 6.0, "ideal": pytest.approx(3.0)}
    two = replace(one, shares=2)
    assert two.assignment == ((0, 2), (1, 3))
    assert compare(two) == {"uncoded": 6.0, "classic": 4.0, "systematic": 4.0, "cfs": 4.0,
                            "compfs": 3.0, "ideal": pytest.approx(3.0)}
    assert compare(replace(one, shares={0: 2})) == compare(two)   # worker 1's second unused
    # share_cost: 4 shares of 0.5 s before the workers start (2 slices for uncoded)
    costly = compare(replace(two, share_cost=0.5))
    assert costly["compfs"] == 3.0 + 2 and costly["classic"] == 4.0 + 2
    assert costly["uncoded"] == 6.0 + 1 and costly["ideal"] == pytest.approx(3.0)


def test_a_workers_link_carries_all_its_shares():
    """Worker 0 (1 byte/s link, 1-byte packets) sends its 4 pieces of two shares one after
    another, arriving at 2, 3, 4 and 5 s; worker 1's (free link) at 3 and 6 s: the 4th
    packet arrives at 4 s."""
    model = Model(2, 2, 2, piece_time=UNIT, slowdown={1: 3}, link_rate={0: 1.0},
                  piece_bytes=1, shares=2)
    assert simulate(model, "compfs") == 4.0


@pytest.mark.parametrize("scheme", ["systematic", "cfs", "compfs"])
@pytest.mark.parametrize("seed", range(8))
def test_counting_rule_equals_rank_tracking_with_shares(monkeypatch, scheme, seed):
    """Every share its own sender: on random models with random share counts, the rank
    tracking and the counting rule give the same time."""
    rng = np.random.default_rng(seed + 50)
    N = int(rng.integers(2, 7))
    counts = [int(c) for c in rng.integers(1, 5, N)]
    model = Model(N, int(rng.integers(1, sum(counts) + 1)), int(rng.integers(1, 5)),
                  piece_time=ShiftedExponential(0.01, 0.05),
                  slowdown={int(w): float(rng.uniform(1, 6)) for w in rng.choice(N, N // 2)},
                  link_rate={int(w): float(rng.uniform(1e5, 1e7)) for w in range(N)},
                  master_rate=float(rng.uniform(1e6, 1e8)), piece_bytes=1e5, seed=seed,
                  shares=counts)
    exact = simulate(model, scheme)
    monkeypatch.setattr(sim, "EXACT_UP_TO", 0)
    assert simulate(model, scheme) == exact


# -- the README's setting: 6 workers, R = 4, workers 3-5 four times slower -------------------

def _readme(shares, pieces=4):
    """A share's work is 0.4 s on a fast worker in m pieces of 0.4/m s."""
    return Model(6, 4, pieces, piece_time=ShiftedExponential(0.4 / pieces, 0.0),
                 slowdown={3: 4, 4: 4, 5: 4}, shares=shares)


def test_one_share_each_is_far_from_the_bound():
    times = compare(_readme(1))
    assert times["ideal"] == pytest.approx(16 / (3 * 10 + 3 * 2.5))      # 0.4267 s
    assert times["compfs"] == pytest.approx(0.8)
    assert times["compfs"] / times["ideal"] == pytest.approx(1.875)
    assert times["classic"] == pytest.approx(1.6)


@pytest.mark.parametrize("shares", [2, 3, 4, 8, (3, 3, 3, 1, 1, 1)])
def test_several_shares_reach_the_piece_limit(shares):
    """At m = 4 the 16th piece cannot be done before 0.5 s (at 0.4 s the fast workers have
    12 and the stragglers 3): compfs decodes exactly then, no scheme sooner; classic gets
    its 4 results at 0.8 s (the fast workers' second) instead of 1.6 s."""
    times = compare(_readme(shares))
    assert times["compfs"] == 0.5
    assert min(times[s] for s in NAMES) == 0.5
    assert times["classic"] == pytest.approx(0.8)
    assert times["compfs"] / times["ideal"] == pytest.approx(0.5 / 0.42666666, rel=1e-6)


@pytest.mark.parametrize("shares", [2, 3, 8])
def test_smaller_pieces_come_within_ten_percent_of_the_bound(shares):
    """The same work in m = 8 pieces of 0.05 s: compfs decodes at 0.45 s, 1.05x the bound
    (one share each: 0.6 s)."""
    times = compare(_readme(shares, pieces=8))
    assert times["compfs"] == pytest.approx(0.45)
    assert times["compfs"] <= 1.1 * times["ideal"]
    assert simulate(_readme(1, pieces=8), "compfs") == pytest.approx(0.6)


# -- the planner -------------------------------------------------------------------------------

def test_plan_picks_several_shares_for_the_readme_setting():
    best = plan(_readme(1))
    assert best.counts == (2, 2, 2, 2, 2, 2) and best.best == ("uniform", 2)
    assert best.seconds == 0.5 and best.ideal == pytest.approx(16 / 37.5)
    assert best.candidates["uniform", 1] == pytest.approx(0.8)
    assert set(best.candidates) == {(kind, w) for kind in ("uniform", "speed")
                                    for w in range(1, 9)}
    assert all(t >= 0.5 for t in best.candidates.values())
    assert plan(_readme(1), "classic").seconds == pytest.approx(0.8)


def test_plan_without_slowdown_uniform_is_speed():
    model = Model(5, 3, 2, piece_time=ShiftedExponential(0.01, 0.01), seed=3)
    best = plan(model, shares=[1, 2, 4], seeds=3)
    for w in (1, 2, 4):
        assert best.candidates["uniform", w] == best.candidates["speed", w]
    assert best.best[0] == "uniform" and best.counts == (best.best[1],) * 5
    assert best.seconds == min(best.candidates.values())


@pytest.mark.parametrize("slow", [dict(slowdown={1: 4}), dict(piece_time=Replay(((1.0,), (4.0,)))),
                                  dict(pause=Replay(((0.0,), (3.0,))))])
def test_plan_gives_a_persistently_slow_worker_fewer_whole_shares(slow):
    """Classic, 2 workers, R = 4, m = 1, worker 1 four times slower (by its slowdown, its
    piece times or its pauses): one result a second against one per 4 s. Uniform needs 3
    shares each (4 s, 6 shares); in proportion to speed, 3 and 1 do as well with 4 shares,
    and cost less with share_cost."""
    model = Model(2, 4, 1, **dict(dict(piece_time=UNIT), **slow), share_cost=0.01,
                  shares=2)        # plan tries its own
    best = plan(model, "classic", shares=range(1, 5), seeds=1)
    assert best.counts == (3, 1) and best.best == ("speed", 2)
    assert best.seconds == pytest.approx(4.04)
    assert best.candidates["uniform", 2] == pytest.approx(8.04)
    assert best.candidates["uniform", 3] == pytest.approx(4.06)


def test_plan_ties_go_to_fewer_shares():
    """Without share_cost the slow worker's case ties uniform 3 per worker (6 shares) with
    speed (3, 1): the fewer shares win."""
    best = plan(Model(2, 4, 1, piece_time=UNIT, slowdown={1: 4}, shares=2), "classic",
                seeds=1)
    assert best.counts == (3, 1) and best.seconds == 4.0
    assert best.candidates["uniform", 3] == 4.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(seeds=0), "'seeds' must be at least 1"),
    (dict(shares=[0, 1]), "'shares' must be at least 1"),
    (dict(shares=[]), "'shares' must give at least one count"),
    (dict(shares=[1]), "R = 4"),
    (dict(scheme="ideal"), "scheme"),
])
def test_plan_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan(Model(2, 4, 1, shares=2), **kwargs)


def test_plan_refuses_a_model_with_a_code():
    code = PolynomialCode(GF(2**31 - 1), 2, 2, 6)
    with pytest.raises(ValueError, match="without a code"):
        plan(Model.for_code(code, 2))


# -- codes and runtime faults with shares -------------------------------------------------------

def test_for_code_deals_the_points_to_the_workers():
    """A 12-point code with 2 shares each is 6 workers; its equations decode as the dense
    code's (both MDS); {worker: count} leaves the rest one each."""
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, 12)
    kwargs = dict(piece_time=ShiftedExponential(0.01, 0.02), slowdown={4: 3, 5: 3}, seed=1)
    model = Model.for_code(code, 3, shares=2, **kwargs)
    assert model.n_workers == 6 and model.n_shares == 12
    assert compare(model) == compare(Model(6, 4, 3, shares=2, **kwargs))
    assert Model.for_code(code, 3, shares={0: 3, 1: 2}).shares == (3, 2) + (1,) * 7
    assert Model.for_code(code, 3, shares=[6, 6]).n_workers == 2
    with pytest.raises(ValueError, match="cannot be dealt 5 shares"):
        Model.for_code(code, 3, shares=5)


def test_from_faults_with_shares():
    """Worker i draws the pauses of all its shares' pieces in order, as the runtime gives
    them (faults.for_worker(i, pieces * count)); the compute per piece is a share's."""
    faults = Faults(slowdown={1: 3}, delay=(0.01, 0.02), seed=4)
    model = Model.from_faults(3, 2, 4, 0.5, faults, shares={0: 2, 2: 3})
    assert model.shares == (2, 1, 3) and model.n_shares == 6
    for w, count in enumerate(model.shares):
        assert model.pauses[w, :4 * count].tolist() == \
            list(faults.for_worker(w, 4 * count).delays)
        assert model.compute[w, :4 * count].tolist() == [[0.5, 1.5, 0.5][w]] * 4 * count
    assert math.isfinite(simulate(model, "compfs"))


# -- input checks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(shares=0), ValueError, "'shares' must be at least 1, not 0"),
    (dict(shares=[1, 0, 2]), ValueError, "'shares' must be at least 1, not 0"),
    (dict(shares={1: -1}), ValueError, "'shares' must be at least 1, not -1"),
    (dict(shares=1.5), TypeError, "'shares' must be an integer, not float"),
    (dict(shares=[1, 2.0, 1]), TypeError, "'shares' must be an integer"),
    (dict(shares=True), TypeError, "'shares' must be an integer, not bool"),
    (dict(shares="2"), TypeError, "'shares' must be a count"),
    (dict(shares=[1, 2]), ValueError, "2 counts for 3 workers"),
    (dict(shares={3: 2}), ValueError, "names worker 3"),
    (dict(recovery_threshold=7, shares=2), ValueError, "recovery_threshold <= its 6 shares"),
    (dict(recovery_threshold=0), ValueError, "'recovery_threshold' must be at least 1"),
    (dict(share_cost=-1.0), ValueError, "share_cost"),
    (dict(share_cost="1"), TypeError, "share_cost"),
    (dict(slowdown=[1, 2]), ValueError, "2 values for 3 workers"),
])
def test_bad_shares(kwargs, error, match):
    with pytest.raises(error, match=match):
        Model(**dict(dict(n_workers=3, recovery_threshold=2, pieces=2), **kwargs))


def test_code_needs_a_point_per_share():
    code = PolynomialCode(GF(2**31 - 1), 2, 2, 6)
    with pytest.raises(ValueError, match=r"a point per share \(12\)"):
        Model(6, 4, 2, code=code, shares=2)
    assert Model(3, 4, 2, code=code, shares=2).n_shares == 6
