"""The simulator of relay hierarchies: refused topologies, sane monotony, the counting rule
against the decoder's rank tracking, and the headline topology at N = 1000."""
import math
import time
from dataclasses import replace

import numpy as np
import pytest

from ffcode.sim import Pareto, ShiftedExponential
from ffcode.sim_tree import (
    Tree,
    decode_work,
    simulate_flat,
    simulate_tree,
    sweep_group_size,
)

SMALL = dict(groups=[4, 4, 4], outer_threshold=2, inner_threshold=3, pieces=2,
             piece_time=ShiftedExponential(0.1, 0.05), uplink_rate=1e6, inner_rate=1e7,
             piece_bytes=1e4, decode_cost=1e-9)

# The headline: 1000 workers in 25 groups of 40 (R_o = 20 of 25 groups, R_i = 32 of 40
# workers: flat R = 640), m = m_o = 4 pieces of 16 KiB, 0.1 s + Exp(20 ms) a piece and two
# workers of every group 5x slow; 10 Gb/s inside a group (and the relays' and master's
# ingest), 1 Gb/s uplinks (10x slower), 50 us and 1 ms latency; 1 ns per element operation
# of decoding (ffcode's Decoder measures 0.4 to 1 ns).
HEADLINE = dict(groups=25, n_workers=1000, outer_threshold=20, inner_threshold=32, pieces=4,
                piece_time=ShiftedExponential(0.1, 0.02),
                slowdown={w: 5 for w in range(1000) if w % 40 in (0, 20)},
                inner_rate=1.25e9, inner_latency=5e-5, uplink_rate=1.25e8,
                uplink_latency=1e-3, relay_rate=1.25e9, master_rate=1.25e9,
                piece_bytes=16384, decode_cost=1e-9)


@pytest.mark.parametrize("change, error, match", [
    (dict(groups=[4, 2, 4]), ValueError, "Group 1 has 2 workers, fewer than inner"),
    (dict(outer_threshold=4), ValueError, "fewer groups than the outer code needs"),
    (dict(outer_threshold=0), ValueError, "'outer_threshold' must be at least 1"),
    (dict(inner_threshold=0), ValueError, "'inner_threshold' must be at least 1"),
    (dict(groups=3), ValueError, "needs n_workers"),
    (dict(groups=5, n_workers=12), ValueError, "cannot be split into 5 equal groups"),
    (dict(groups=[4, 4, 4], n_workers=13), ValueError, "12 workers, not n_workers = 13"),
    (dict(groups=[]), ValueError, "at least one group"),
    (dict(groups="444"), TypeError, "'groups' must be a number of groups"),
    (dict(groups=[4, 4.5, 4]), TypeError, "'groups' must be an integer"),
    (dict(pieces=0), ValueError, "'pieces' must be at least 1"),
    (dict(outer_pieces=0), ValueError, "'outer_pieces' must be at least 1"),
    (dict(uplink_rate=0), ValueError, "'uplink_rate' must be positive"),
    (dict(relay_rate=-1), ValueError, "'relay_rate' must be positive"),
    (dict(master_rate=math.nan), ValueError, "'master_rate' must be positive"),
    (dict(inner_rate=0), ValueError, "link rates positive"),
    (dict(inner_rate=[1e6] * 11), ValueError, "gives 11 values for 12 workers"),
    (dict(piece_bytes=0), ValueError, "'piece_bytes' must be positive"),
    (dict(inner_latency=-1), ValueError, "'inner_latency' must be non-negative"),
    (dict(uplink_latency=math.inf), ValueError, "'uplink_latency' must be non-negative"),
    (dict(decode_cost=-1.0), ValueError, "'decode_cost' must be non-negative"),
    (dict(decode_cost="fast"), TypeError, "'decode_cost' must be seconds per operation"),
    (dict(slowdown={20: 2}), ValueError, "names worker 20"),
    (dict(slowdown=0.5), ValueError, "Slowdowns must be >= 1"),
    (dict(piece_time=0.1), TypeError, "'piece_time' must be a ShiftedExponential"),
    (dict(element_bytes=0), ValueError, "'element_bytes' must be at least 1"),
    (dict(seed=-1), ValueError, "'seed' must be non-negative"),
])
def test_bad_trees_are_refused(change, error, match):
    with pytest.raises(error, match=match):
        Tree(**{**SMALL, **change})


def test_only_trees_are_simulated():
    for simulate in (simulate_tree, simulate_flat):
        with pytest.raises(TypeError, match="must be a Tree"):
            simulate(SMALL)


def test_bad_sweeps_are_refused():
    with pytest.raises(ValueError, match="Group size 7 does not divide 24"):
        sweep_group_size(24, sizes=(7,), pieces=1, decode_cost=0.0)
    with pytest.raises(ValueError, match="'inner_fraction' must be in"):
        sweep_group_size(24, sizes=(4,), inner_fraction=1.5, pieces=1, decode_cost=0.0)


def test_equal_groups_and_default_outer_pieces():
    tree = Tree(**{**SMALL, "groups": 3, "n_workers": 12})
    assert tree.groups == (4, 4, 4) and tree.outer_pieces == tree.pieces == 2
    assert [list(g) for g in tree.members] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


@pytest.mark.parametrize("seed", range(4))
def test_slower_uplinks_never_make_a_job_faster(seed):
    tree = Tree(**{**SMALL, "seed": seed, "groups": [5, 4, 6, 4], "outer_threshold": 3})
    for simulate in (simulate_tree, simulate_flat):
        times = [simulate(replace(tree, groups=tree.groups, uplink_rate=rate)).seconds
                 for rate in (1e9, 1e7, 1e6, 1e5)]
        assert times == sorted(times), (simulate.__name__, times)


def test_a_straggler_group_is_absorbed_by_the_outer_code():
    """A whole group 100x slow: the other two groups decode the outer code, as fast as with
    no straggler; without a spare group the job waits for it."""
    base = Tree(**{**SMALL, "piece_time": ShiftedExponential(0.1, 0.0)})
    slow = replace(base, groups=base.groups, slowdown={w: 100 for w in range(4)})
    assert simulate_tree(slow).seconds == pytest.approx(simulate_tree(base).seconds)
    assert math.isinf(simulate_tree(slow).relay_done[0]) is False
    no_spare = replace(slow, groups=slow.groups, outer_threshold=3)
    assert simulate_tree(no_spare).seconds > 10 * simulate_tree(base).seconds


def test_a_straggler_worker_is_absorbed_by_its_inner_code():
    base = Tree(**{**SMALL, "piece_time": ShiftedExponential(0.1, 0.0)})
    slow = replace(base, groups=base.groups, slowdown={5: 100})
    assert np.allclose(simulate_tree(slow).relay_done, simulate_tree(base).relay_done)
    no_spare = replace(slow, groups=slow.groups, inner_threshold=4)
    assert simulate_tree(no_spare).relay_done[1] > 10 * simulate_tree(base).relay_done[1]


def test_a_group_without_a_spare_waits_for_its_straggler():
    """A group of exactly R_i workers, one of them 1e9 times slow: its relay decodes only
    when that worker is done, and the other two groups decode the outer code meanwhile."""
    tree = Tree(**{**SMALL, "groups": [3, 4, 4], "slowdown": {0: 1e9}})
    result = simulate_tree(tree)
    assert result.relay_done[0] > 1e6 and result.relay_work[0] > 0
    assert result.seconds < 1


@pytest.mark.parametrize("seed", range(12))
def test_counting_matches_rank_tracking(seed):
    """Random small trees: the relays and the master decode at the same packet whether the
    decoder's rank tracking (RankBasis) or the counting rule decides."""
    rng = np.random.default_rng(seed)
    groups = [int(s) for s in rng.integers(2, 6, rng.integers(2, 5))]
    R_i = int(rng.integers(1, min(groups) + 1))
    tree = Tree(groups=groups, outer_threshold=int(rng.integers(1, len(groups) + 1)),
                inner_threshold=R_i, pieces=int(rng.integers(1, 4)),
                outer_pieces=int(rng.integers(1, 4)), piece_time=Pareto(0.05, 1.5),
                slowdown={int(w): 4 for w in rng.integers(0, sum(groups), 2)},
                inner_rate=float(rng.choice([1e5, 1e7, math.inf])),
                uplink_rate=float(rng.choice([1e5, 1e6])), relay_rate=1e6, master_rate=1e6,
                piece_bytes=1e4, decode_cost=1e-9, seed=seed)
    exact, counted = simulate_tree(tree, exact=True), simulate_tree(tree, exact=False)
    assert exact.seconds == counted.seconds
    assert np.array_equal(exact.relay_done, counted.relay_done)
    assert simulate_flat(tree, exact=True).seconds == simulate_flat(tree, exact=False).seconds


def test_work_is_rank_squared_times_columns():
    tree = Tree(**SMALL)
    hierarchy, flat = simulate_tree(tree), simulate_flat(tree)
    assert flat.master_work == decode_work(2 * 6, 1e4 / 4)
    assert hierarchy.master_work == decode_work(2 * 2, 2 * 3 * 1e4 / 4 / 2)
    assert hierarchy.relay_work.tolist() == [decode_work(2 * 3, 1e4 / 4)] * 3
    assert flat.relay_work.size == flat.relay_done.size == 0


@pytest.mark.bounded(60)
def test_a_thousand_workers_in_a_hierarchy(bounded):
    """The headline topology: the hierarchy is done in at most 0.6x the flat run's time
    and its master decodes with at least 10x less work; a generous hang guard on the
    simulator's own time."""
    tree = Tree(**HEADLINE)
    start = time.perf_counter()
    hierarchy = simulate_tree(tree)
    assert time.perf_counter() - start < 10
    flat = simulate_flat(tree)
    assert hierarchy.seconds <= 0.6 * flat.seconds
    assert flat.master_work >= 10 * hierarchy.master_work
    assert np.isfinite(hierarchy.relay_done).all()
    assert hierarchy.bytes_uplink >= 20 * 4 * 32 * 16384        # R_o groups' results


def test_free_decoding_favours_the_flat_run():
    """With decoding free, the relays' store-and-forward only delays: the flat run, which
    streams every piece as computed, is faster."""
    tree = Tree(**{**HEADLINE, "decode_cost": 0.0})
    assert simulate_flat(tree).seconds < simulate_tree(tree).seconds


def test_sweep_has_flat_and_hierarchical_runs():
    runs = sweep_group_size(24, sizes=(4, 6, 12), pieces=2, decode_cost=1e-9,
                            piece_bytes=1e4)
    assert list(runs) == [4, 6, 12]
    for flat, hierarchy in runs.values():
        assert flat.relay_done.size == 0 and hierarchy.relay_done.size > 0
        assert hierarchy.master_work < flat.master_work


def test_shares_are_shipped_before_their_workers_start():
    """The flat master ships one share after another; in the hierarchy the master ships the
    relays' and each relay then its group's: a worker starts once its share is there."""
    tree = Tree(groups=[2, 2], outer_threshold=2, inner_threshold=2, pieces=1,
                piece_time=ShiftedExponential(1.0, 0.0), decode_cost=0.0, share_cost=0.1,
                outer_share_cost=0.5, inner_share_cost=0.1)
    assert np.allclose(tree.starts(flat=True), [0.1, 0.2, 0.3, 0.4])
    assert np.allclose(tree.starts(flat=False), [0.6, 0.7, 1.1, 1.2])
    assert np.isclose(simulate_flat(tree).seconds, 1.4)
    hierarchy = simulate_tree(tree)
    assert np.allclose(hierarchy.relay_done, [1.7, 2.2]) and np.isclose(hierarchy.seconds, 2.2)
    free = Tree(groups=[2, 2], outer_threshold=2, inner_threshold=2, pieces=1,
                piece_time=ShiftedExponential(1.0, 0.0), decode_cost=0.0)
    assert np.isclose(simulate_tree(free).seconds, 1.0) and not free.starts(False).any()


@pytest.mark.parametrize("name", ["share_cost", "outer_share_cost", "inner_share_cost"])
def test_a_negative_share_cost_is_refused(name):
    with pytest.raises(ValueError, match=name):
        Tree(groups=[2, 2], outer_threshold=1, inner_threshold=1, pieces=1, decode_cost=0.0,
             **{name: -0.1})
