"""A shuffle finished without lost workers (``Recovery``), in one process: for every K <= 6,
load r >= 2 and set of lost workers that leaves every batch a mapper, each survivor ends
with exactly the values of the functions it reduces (its own, and those of the lost
workers it took over), coded or not, on bytes and on GF(p) vectors; TeraSort still sorts;
losses that leave a batch unmapped are refused, naming it."""
import itertools

import numpy as np
import pytest

from ffcode import GF
from ffcode.mapreduce import Bytes, Placement, Recovery, Vectors
from ffcode.mapreduce import terasort

LOSSES = [(K, r, lost) for K in range(3, 7) for r in range(2, K)
          for n in range(1, r) for lost in itertools.combinations(range(K), n)
          if len(lost) <= 2]


def values_of(placement, seed=0):
    rng = np.random.default_rng(seed)
    return {(q, b): rng.integers(0, 256, rng.integers(0, 41), dtype=np.uint8).tobytes()
            for q in range(placement.workers) for b in range(len(placement.subsets))}


def finish(recovery, held, algebra):
    """Every survivor's received values, by (function, batch), as the runtime's would be."""
    messages = [m for w in recovery.survivors
                for m in recovery.outgoing(w, held(w), algebra)]
    assert all(m.sender not in recovery.lost and not set(m.receivers) & set(recovery.lost)
               for m in messages)
    return {w: recovery.incoming(w, [m for m in messages if w in m.receivers], held(w),
                                 algebra) for w in recovery.survivors}


@pytest.mark.parametrize("K, r, lost", LOSSES)
@pytest.mark.parametrize("coded", [True, False])
def test_every_survivor_gets_what_it_reduces(K, r, lost, coded):
    placement = Placement(K, r)
    values = values_of(placement, seed=K * 10 + r)
    held = lambda w: {key: v for key, v in values.items()          # noqa: E731
                      if w in placement.subsets[key[1]]}
    recovery = Recovery(placement, lost, coded)
    received = finish(recovery, held, Bytes())
    assert sorted(q for w in recovery.survivors for q in recovery.functions(w)) == \
        list(range(K))
    for w in recovery.survivors:
        for q in recovery.functions(w):
            for b, subset in enumerate(placement.subsets):
                got = values[(q, b)] if w in subset else received[w][(q, b)]
                assert bytes(got) == values[(q, b)]


@pytest.mark.parametrize("p", [2, 65521, 2**61 - 1])
def test_field_values_through_a_recovery(p):
    F = GF(p)
    placement = Placement(5, 3)
    values = {(q, b): F.random(7, seed=q * 100 + b) for q in range(5)
              for b in range(len(placement.subsets))}
    held = lambda w: {key: v for key, v in values.items()          # noqa: E731
                      if w in placement.subsets[key[1]]}
    recovery = Recovery(placement, [1, 4])
    received = finish(recovery, held, Vectors(F))
    for w in recovery.survivors:
        for q in recovery.functions(w):
            for b, subset in enumerate(placement.subsets):
                if w not in subset:
                    assert (received[w][(q, b)] == values[(q, b)]).all()


def test_terasort_sorts_without_a_worker():
    K, r = 5, 2
    placement = Placement(K, r)
    data = terasort.records(4000, seed=3, skew=2.0)
    files = np.array_split(data, len(placement.subsets))
    bounds = terasort.boundaries(data, K, seed=4)
    values = {}
    for b, file in enumerate(files):
        for q, part in enumerate(terasort.partition(file, bounds)):
            values[(q, b)] = part
    held = lambda w: {key: v for key, v in values.items()          # noqa: E731
                      if w in placement.subsets[key[1]]}
    recovery = Recovery(placement, [2])
    received = finish(recovery, held, Bytes())
    outputs = []
    for q in range(K):
        w = recovery.reducers[q]
        outputs.append(terasort.sort(b"".join(
            values[(q, b)] if w in subset else bytes(received[w][(q, b)])
            for b, subset in enumerate(placement.subsets))))
    assert terasort.check(outputs, data)
    assert recovery.reducers[2] != 2


def test_the_lost_functions_are_spread_over_the_survivors():
    recovery = Recovery(Placement(6, 3), [0, 1])
    assert recovery.reducers[:2] == (2, 3)
    assert recovery.functions(2) == [0, 2] and recovery.functions(3) == [1, 3]


@pytest.mark.parametrize("K, r, lost, batches", [
    (4, 1, [2], "[2]"), (4, 2, [0, 1], "[0]"), (3, 2, [0, 1, 2], None)])
def test_losses_that_leave_a_batch_unmapped_are_refused(K, r, lost, batches):
    with pytest.raises(ValueError) as e:
        Recovery(Placement(K, r), lost)
    assert (batches in str(e.value)) if batches else "No worker is left" in str(e.value)


def test_bad_lost_workers_and_stray_messages_are_refused():
    placement = Placement(4, 2)
    with pytest.raises(ValueError, match="lost"):
        Recovery(placement, [4])
    recovery = Recovery(placement, [3])
    values = values_of(placement)
    held = lambda w: {key: v for key, v in values.items()          # noqa: E731
                      if w in placement.subsets[key[1]]}
    messages = [m for w in recovery.survivors for m in recovery.outgoing(w, held(w), Bytes())]
    mine = [m for m in messages if 0 in m.receivers]
    with pytest.raises(ValueError, match="misses"):
        recovery.incoming(0, mine[1:], held(0), Bytes())
    with pytest.raises(ValueError, match="twice"):
        recovery.incoming(0, mine + mine[:1], held(0), Bytes())
    with pytest.raises(ValueError, match="does not need"):
        recovery.incoming(0, mine + [m for m in messages if 1 in m.receivers and
                                     0 not in m.receivers][:1], held(0), Bytes())
