"""RobustGradientDecoder: the exact sum despite up to A wrong workers, for every choice of
the wrong workers and both kinds of lie, whole and partial messages in random orders; it
completes, when every worker is honest, exactly when removing any A workers still leaves
the all-ones vector spanned (a brute-force oracle); bad arguments refused."""
import itertools

import numpy as np
import pytest

from ffcode import GF, CyclicRepetition, FractionalRepetition
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding.codes import ones_combination
from ffcode.gradcoding.robust import RobustGradientDecoder

F = GF(65521)
BIG = GF(2**61 - 1)


def gradients(field, k, seed, shape=(3,)):
    rng = np.random.default_rng(seed)
    return [field.random(shape, rng) for _ in range(k)]


def lie(field, message, how, rng):
    if how == "random":
        return field.random(message.shape, rng)
    off = message.copy()
    off.flat[0] = field.add(off.flat[0], 1)
    return off


def messages(code, g, done_of):
    """[(worker, done, message)] for each worker's first done_of[w] partitions."""
    out = []
    for w in range(code.n_workers):
        parts = [g[j] for j in code.assignment[w]]
        for done in range(1, done_of[w] + 1):
            out.append((w, done, code.partial(w, done, parts)))
    return out


CODES = [(CyclicRepetition, 5, 2, 1), (CyclicRepetition, 6, 3, 1), (CyclicRepetition, 7, 4, 2),
         (FractionalRepetition, 6, 2, 1)]


@pytest.mark.parametrize("field", [F, BIG])
@pytest.mark.parametrize("Code, n, s, A", CODES)
@pytest.mark.parametrize("how", ["random", "off by one"])
def test_every_choice_of_wrong_workers(field, Code, n, s, A, how):
    code = Code(field, n, s)
    g = gradients(field, code.partitions, seed=n * 10 + s)
    total = field.combine(np.ones((1, len(g)), field.dtype), g)[0]
    rng = np.random.default_rng(A)
    for liars in itertools.combinations(range(n), A):
        whole = messages(code, g, [s + 1] * n)
        wrong = [(w, d, lie(field, m, how, rng) if w in liars else m) for w, d, m in whole]
        order = rng.permutation(len(wrong))
        decoder = RobustGradientDecoder(code, A, seed=1)
        for i in order:
            decoder.add(*wrong[i])
        assert decoder.complete, liars
        assert np.array_equal(decoder.result(), total)
        assert set(decoder.wrong) <= set(liars)


@pytest.mark.parametrize("seed", range(6))
def test_partial_messages_in_random_orders(seed):
    """Each worker sends after every partition, some get only part way; one liar lies in
    every message. Whenever the decoder completes, its sum is the true one, and with
    every message in, it completes."""
    rng = np.random.default_rng(seed)
    code = CyclicRepetition(F, 6, 2)
    g = gradients(F, 6, seed)
    total = F.combine(np.ones((1, 6), F.dtype), g)[0]
    liar = int(rng.integers(6))
    done_of = [3] * 6
    slow = int(rng.integers(6))
    done_of[slow] = int(rng.integers(1, 3))
    sent = [(w, d, lie(F, m, "random", rng) if w == liar else m)
            for w, d, m in messages(code, g, done_of)]
    decoder = RobustGradientDecoder(code, 1, seed=seed)
    for i in rng.permutation(len(sent)):
        decoder.add(*sent[i])
        if decoder.complete:
            assert np.array_equal(decoder.result(), total)
    if slow == liar or done_of[slow] == 3:
        assert decoder.complete
    if decoder.complete:
        assert decoder.wrong in ([], [liar])


def oracle_certain(code, arrived, A):
    """Honest messages: the sum is certain once every removal of A workers leaves the
    all-ones vector spanned."""
    workers = sorted({w for w, _ in arrived})
    for dropped in itertools.combinations(workers, min(A, len(workers))):
        rows = [code.vector(w, d) for w, d in arrived if w not in dropped]
        if not rows or ones_combination(code.F, np.vstack(rows)) is None:
            return False
    return True


@pytest.mark.parametrize("seed", range(8))
def test_completes_at_the_first_certain_moment(seed):
    rng = np.random.default_rng(seed)
    code = CyclicRepetition(F, 7, 4)
    g = gradients(F, 7, seed)
    sent = messages(code, g, [5] * 7)
    decoder = RobustGradientDecoder(code, 2, seed=seed)
    arrived = []
    for i in rng.permutation(len(sent)):
        w, d, m = sent[i]
        decoder.add(w, d, m)
        arrived.append((w, d))
        assert decoder.complete == oracle_certain(code, arrived, 2), arrived
        if decoder.complete:
            break
    assert decoder.complete and decoder.wrong == []


def test_an_excluded_workers_messages_no_longer_count():
    code = CyclicRepetition(F, 5, 2)
    g = gradients(F, 5, 3)
    decoder = RobustGradientDecoder(code, 1)
    sent = messages(code, g, [3] * 5)
    decoder.exclude(0)
    for w, d, m in sent:
        assert decoder.add(w, d, m) is (w != 0 and not decoder.complete) or decoder.complete
    assert decoder.complete and decoder.wrong == []
    assert np.array_equal(decoder.result(), F.combine(np.ones((1, 5), F.dtype), g)[0])


def test_bad_arguments_are_refused():
    code = CyclicRepetition(F, 5, 2)
    with pytest.raises(InvalidParameterError, match="tolerates 4 stragglers"):
        RobustGradientDecoder(code, 2)
    with pytest.raises(InvalidParameterError, match="adversaries"):
        RobustGradientDecoder(code, 0)
    decoder = RobustGradientDecoder(code, 1, shape=(3,))
    with pytest.raises(ValueError):
        decoder.add(0, 1, np.array([70000, 1, 2]))
    with pytest.raises(ValueError, match="Not decidable yet"):
        decoder.result()
    assert not decoder.complete and decoder.rank == 0


@pytest.mark.parametrize("first", [True, False])
def test_no_worker_alone_decides_the_shape(first):
    """A liar whose messages have another shape, heard first or last, is named wrong and
    left out; the shape is the one two workers agree on (A + 1)."""
    code = CyclicRepetition(F, 5, 2)
    g = gradients(F, 5, 7)
    sent = messages(code, g, [3] * 5)
    liar = [(w, d, np.concatenate([m, m[:1]])) for w, d, m in sent if w == 2]
    honest = [x for x in sent if x[0] != 2]
    decoder = RobustGradientDecoder(code, 1)
    for w, d, m in (liar + honest if first else honest[:6] + liar + honest[6:]):
        decoder.add(w, d, m)
    assert decoder.complete and decoder.wrong == [2]
    assert np.array_equal(decoder.result(), F.combine(np.ones((1, 5), F.dtype), g)[0])
