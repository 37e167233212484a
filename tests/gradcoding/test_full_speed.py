"""Gradient coding at full speed: workers send after each partition they finish, and the
GradientDecoder completes at the first message that puts the all-ones vector in the span
(against a rank oracle), with the exact sum; the order of partitions priced and chosen
(worst_case_processed, best_orders) against a brute-force search on small cases."""
import itertools

import numpy as np
import pytest

import ffcode
from ffcode import CyclicRepetition, FractionalRepetition
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import GradientDecoder, best_orders, worst_case_processed

from helpers import prime_id


def random_run(code, rng):
    """Every (worker, done) message of every worker, each worker's in order, randomly
    interleaved (workers at random speeds; some never finish)."""
    events = [w for w in range(code.n_workers) for _ in code.assignment[w]]
    sent = [0] * code.n_workers
    order = []
    for w in rng.permutation(events):
        sent[w] += 1
        order.append((int(w), sent[w]))
    return order


def spans_ones(F, vectors) -> bool:
    """The oracle: rank([V; 1]) == rank(V)."""
    if not vectors:
        return False
    V = np.array(vectors, dtype=F.dtype)
    ones = np.ones((1, V.shape[1]), F.dtype)
    return F.rank(V) == F.rank(np.vstack([V, ones]))


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("make", [lambda F: CyclicRepetition(F, 6, 2),
                                  lambda F: CyclicRepetition(F, 5, 1),
                                  lambda F: FractionalRepetition(F, 6, 1),
                                  lambda F: CyclicRepetition(F, 4, 3)],
                         ids=["cyclic 6,2", "cyclic 5,1", "fractional 6,1", "cyclic 4,3"])
def test_complete_at_the_first_message_that_spans_the_ones(make, p):
    """On random arrival orders the decoder is complete exactly when the oracle says the
    messages so far span the all-ones vector (every partition done by some worker), not a
    message later, and its result is the exact sum, from partial work."""
    F = ffcode.GF(p)
    code = make(F)
    parts = [F.random((3,), seed=j) for j in range(code.partitions)]
    want = F.combine(np.ones((1, len(parts)), F.dtype), parts)[0]
    for seed in range(12):
        rng = np.random.default_rng(seed)
        decoder, vectors, done_parts = GradientDecoder(code), [], set()
        for worker, done in random_run(code, rng):
            held = code.assignment[worker]
            message = code.partial(worker, done, [parts[j] for j in held])
            decoder.add(worker, done, message)
            vectors.append(code.vector(worker, done).tolist())
            done_parts.add(held[done - 1])
            assert decoder.complete == spans_ones(F, vectors)
            assert decoder.complete == (len(done_parts) == code.partitions)
            if decoder.complete:
                break
        assert decoder.complete and np.array_equal(decoder.result(), want)
        assert decoder.covered() == list(range(code.partitions))


def test_partial_work_of_every_worker_decodes_where_no_worker_finished():
    """Each worker of CyclicRepetition(6, 2) does only its first partition: no worker
    finished, the classic protocol has nothing, and the sum is exact."""
    F = ffcode.GF(2**31 - 1)
    code = CyclicRepetition(F, 6, 2)
    parts = [F.random((2, 2), seed=j) for j in range(6)]
    decoder = GradientDecoder(code)
    for w in range(6):
        assert not decoder.complete
        assert decoder.add(w, 1, code.partial(w, 1, [parts[j] for j in code.assignment[w]]))
    assert decoder.complete and decoder.rank == 6
    assert np.array_equal(decoder.result(), F.combine(np.ones((1, 6), F.dtype), parts)[0])


def test_messages_add_nothing_once_complete_or_again():
    F = ffcode.GF(65521)
    code = FractionalRepetition(F, 4, 1)
    g = [F.asarray([j]) for j in range(4)]
    decoder = GradientDecoder(code)
    first = code.partial(0, 1, [g[0], g[1]])
    assert decoder.add(0, 1, first) and not decoder.add(0, 1, first)
    assert decoder.add(0, 2, code.partial(0, 2, [g[0], g[1]]))
    assert not decoder.add(1, 2, code.partial(1, 2, [g[1], g[0]]))       # in the span
    assert decoder.add(3, 1, code.partial(3, 1, [g[3], g[2]]))
    assert decoder.add(2, 1, code.partial(2, 1, [g[2], g[3]])) and decoder.complete
    assert not decoder.add(2, 2, code.partial(2, 2, [g[2], g[3]]))
    assert decoder.received == 7 and decoder.result().tolist() == [6]


def test_bad_messages_are_refused_and_change_nothing():
    F = ffcode.GF(65521)
    code = CyclicRepetition(F, 4, 1)
    decoder = GradientDecoder(code, shape=(2,))
    with pytest.raises(InvalidParameterError, match="worker"):
        decoder.add(4, 1, F.asarray([1, 2]))
    with pytest.raises(InvalidParameterError, match="done"):
        decoder.add(0, 3, F.asarray([1, 2]))
    with pytest.raises(InvalidParameterError, match="done"):
        decoder.add(0, 0, F.asarray([1, 2]))
    with pytest.raises(InvalidParameterError, match=r"shape \(3,\), expected \(2,\)"):
        decoder.add(0, 1, F.asarray([1, 2, 3]))
    with pytest.raises(InvalidParameterError):
        decoder.add(0, 1, np.array([1, 65521], np.int64))
    assert decoder.rank == 0 and not decoder.complete
    with pytest.raises(ValueError, match=r"cover partitions \[\] of 4"):
        decoder.result()
    with pytest.raises(InvalidParameterError, match="GradientCode"):
        GradientDecoder(object())
    assert decoder.add(0, 1, F.asarray([1, 2])) and decoder.covered() == [0]


# -- the order of the partitions -------------------------------------------------------------


def brute_worst(assignment) -> int:
    """1 + the most partitions the workers can have done (each a prefix of its order) with
    some partition still undone: every state looked at."""
    k = len({j for parts in assignment for j in parts})
    worst = 0
    for state in itertools.product(*(range(len(parts) + 1) for parts in assignment)):
        done = {j for parts, c in zip(assignment, state) for j in parts[:c]}
        if len(done) < k:
            worst = max(worst, sum(state))
    return worst + 1


def all_orders(assignment):
    return itertools.product(*(itertools.permutations(parts) for parts in assignment))


ASSIGNMENTS = [
    [(0, 1), (1, 2), (2, 0)],
    [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)],
    [(0, 1), (1, 0), (2, 3), (3, 2)],
    [(0, 2), (1, 3), (2, 0), (3, 1)],                       # a regular one of two cycles
    [(0, 1), (2, 3), (0, 3), (1, 2)],
    [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)],
    [(0,), (1,), (0, 1)],                                   # not regular: priced only
]


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=str)
def test_worst_case_processed_against_every_state(assignment):
    for orders in all_orders(assignment):
        assert worst_case_processed(orders) == brute_worst(orders), orders


@pytest.mark.parametrize("assignment", ASSIGNMENTS[:-1], ids=str)
def test_best_orders_reach_the_least_worst_case(assignment):
    """best_orders keeps each worker's partitions and reaches the minimum over every
    ordering, found by trying them all."""
    best = best_orders(assignment)
    assert [sorted(b) for b in best] == [sorted(a) for a in assignment]
    least = min(brute_worst(orders) for orders in all_orders(assignment))
    assert worst_case_processed(best) == least


def test_the_codes_orders_are_best():
    """Both codes' own orders put each partition at each place once: no order is better."""
    F = ffcode.GF(65521)
    for code in (CyclicRepetition(F, 7, 3), FractionalRepetition(F, 8, 3),
                 CyclicRepetition(F, 6, 0)):
        n, d = code.n_workers, code.stragglers + 1
        assert worst_case_processed(code.assignment) == 1 + (n - d) * d + d * (d - 1) // 2
        assert worst_case_processed(best_orders(code.assignment)) == \
            worst_case_processed(code.assignment)


def test_best_orders_for_thousands_of_workers():
    """The matchings are found without recursion: 3000 workers of the cyclic assignment
    (3 partitions each) in shuffled orders get their least worst case back, as three do."""
    n = 3000
    cyclic = [(i, (i + 1) % n, (i + 2) % n) for i in range(n)]
    rng = np.random.default_rng(3)
    shuffled = [tuple(rng.permutation(order).tolist()) for order in cyclic]
    assert worst_case_processed(shuffled) > worst_case_processed(cyclic)
    assert worst_case_processed(best_orders(shuffled)) == worst_case_processed(cyclic)


def test_bad_assignments_are_refused():
    with pytest.raises(InvalidParameterError, match="distinct"):
        worst_case_processed([(0, 0), (1, 0)])
    with pytest.raises(InvalidParameterError, match=r"Partitions \[1\] are on no worker"):
        worst_case_processed([(0, 2), (2, 0)])
    with pytest.raises(InvalidParameterError, match="at least one worker"):
        worst_case_processed([])
    with pytest.raises(InvalidParameterError, match="sequence"):
        worst_case_processed([None])
    with pytest.raises(InvalidParameterError, match="same number"):
        best_orders([(0,), (1,), (0, 1)])
