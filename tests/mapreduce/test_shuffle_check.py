"""The shuffle's check against a lying peer (ffcode.mapreduce.verify), in one process: the
fingerprints tell a piece one element off from the right one; every piece of a shuffle
has its sender and, at load r >= 2, another mapper to vouch for it; the judgement names
a liar that lies in its messages, its fingerprints or both, and over thousands of random
single-liar shuffles never names an honest worker; a Recovery with distrusted pairs sends
their values plain by another mapper."""
import itertools

import numpy as np
import pytest

from ffcode import GF
from ffcode.mapreduce import verify
from ffcode.mapreduce.shuffle import (Bytes, Message, Placement, Recovery, Vectors, joined,
                                      outgoing, pieces)

PRIMES = [2, 65521, 2**31 - 1, 2**61 - 1, 2**63 - 25]


@pytest.mark.parametrize("p", [None, *PRIMES])
def test_a_fingerprint_tells_one_element_off(p):
    """One element changed, a zero appended or the last element dropped: the fingerprint
    differs for every seed tried; the same value always gives the same one."""
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 64, 1001):
        if p is None:
            value = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            spoiled = bytes([value[0] ^ 1]) + value[1:]
            longer, shorter = value + b"\0", value[:-1]
        else:
            value = GF(p).random(n, seed=n)
            spoiled = value.copy()
            spoiled[-1] = (int(spoiled[-1]) + 1) % p
            longer, shorter = np.append(value, value.dtype.type(0)), value[:-1]
        for seed in range(5):
            print_ = verify.fingerprint(value, seed, 3)
            assert print_ == verify.fingerprint(memoryview(bytes(value)) if p is None
                                                else value.copy(), seed, 3)
            for other in (spoiled, longer, shorter):
                assert verify.fingerprint(other, seed, 3) != print_, (p, n, seed)


def test_a_fingerprint_depends_on_its_seed_and_piece():
    value = bytes(range(200))
    prints = {verify.fingerprint(value, s, i) for s in range(4) for i in range(4)}
    assert len(prints) == 16


@pytest.mark.parametrize("K,r", [(K, r) for K in range(2, 7) for r in range(1, K)])
@pytest.mark.parametrize("coded", [True, False])
def test_every_piece_has_its_sender_and_min_2_r_minus_1_vouchers(K, r, coded):
    """One piece per message segment a worker receives; vouchers are other mappers of its
    batch, min(2, r - 1) of them (none at r = 1: nothing can check a peer's value)."""
    placement = Placement(K, r)
    plan = verify.Plan(placement, coded)
    count = sum(r for g in placement.groups() for _ in g) if coded else \
        len(placement.subsets) * (K - r)
    assert len(plan.pieces) == count
    for p in plan.pieces:
        subset = placement.subsets[p.batch]
        assert p.sender in subset and p.receiver not in subset
        assert len(p.vouchers) == min(2, r - 1)
        assert set(p.vouchers) <= set(subset) - {p.sender}
    assert verify.checkable(placement) == (r >= 2)
    roles = [len(plan.roles(w)) for w in range(K)]
    assert sum(roles) == sum(2 + len(p.vouchers) for p in plan.pieces)


def _held(placement, values):
    return lambda w: {(q, b): values[(q, b)] for b in placement.mapped_by(w)
                      for q in range(placement.workers)}


def _values(placement, algebra, rng, length=9):
    K = placement.workers
    if isinstance(algebra, Bytes):
        return {(q, b): rng.integers(0, 256, length, dtype=np.uint8).tobytes()
                for q in range(K) for b in range(len(placement.subsets))}
    return {(q, b): algebra.F.random(length, seed=int(rng.integers(1 << 30)))
            for q in range(K) for b in range(len(placement.subsets))}


def _spoil(m, algebra):
    raw = np.frombuffer(m.payload if isinstance(algebra, Bytes) else
                        np.ascontiguousarray(m.payload).view(np.uint8), np.uint8).copy()
    if isinstance(algebra, Bytes):
        raw[0] ^= 1
        payload = raw.tobytes()
    else:
        payload = raw.view(m.payload.dtype)
        payload[0] = (int(payload[0]) + 1) % algebra.F.p
    return Message(m.sender, m.receivers, payload, m.group, m.batch, m.lengths, m.function)


def checked(placement, coded, values, algebra, liar=None, spoil=(), vouch=False,
            accuse=False, earlier=(), lost=(), distrust=(), seed=7):
    """A whole shuffle (or Recovery) in one process with one liar: it spoils the messages
    whose indices are in ``spoil`` (to each receiver alike), and lies in its fingerprints
    as a voucher and/or receiver; (the verdict, every worker's decoded values)."""
    K = placement.workers
    plan = verify.Plan(placement, coded, lost, distrust)
    recovery = plan.recovery
    held = _held(placement, values)
    live = [w for w in range(K) if w not in lost]
    sent = []
    for w in live:
        mine = outgoing(placement, w, held(w), algebra, coded) if recovery is None else \
            recovery.outgoing(w, held(w), algebra)
        if w == liar:
            mine = [_spoil(m, algebra) if n in spoil else m for n, m in enumerate(mine)]
        sent += mine
    prints, decoded = {}, {}
    for w in live:
        got = pieces(placement, w, [m for m in sent if w in m.receivers], held(w), algebra,
                     coded, recovery)
        decoded[w] = joined(got, algebra)
        prints[w] = verify.prints(plan, w, seed, got, held(w), algebra)
        if w == liar:
            prints[w] = [v + 1 if (role == "voucher" and vouch) or
                         (role == "receiver" and accuse) else v
                         for v, (_, role) in zip(prints[w], plan.roles(w))]
    return verify.judge(plan, prints, earlier), decoded


ALGEBRAS = [Bytes(), Vectors(GF(65521))]


@pytest.mark.parametrize("algebra", ALGEBRAS, ids=["bytes", "GF(65521)"])
@pytest.mark.parametrize("K,r,coded", [(3, 2, True), (4, 2, True), (4, 2, False),
                                       (4, 3, True), (5, 3, False)])
def test_a_liar_spoiling_every_message_is_named(algebra, K, r, coded):
    """A worker spoiling one element of each message it sends is the one worker common to
    every dispute: named, whatever it says in its fingerprints."""
    placement = Placement(K, r)
    rng = np.random.default_rng(K * 10 + r)
    values = _values(placement, algebra, rng)
    honest, _ = checked(placement, coded, values, algebra)
    assert honest.clean and honest.checked > 0 and honest.liars == []
    for liar in range(K):
        for vouch, accuse in itertools.product((False, True), repeat=2):
            verdict, _ = checked(placement, coded, values, algebra, liar, spoil=range(99),
                                 vouch=vouch, accuse=accuse)
            assert verdict.liars == [liar], (liar, vouch, accuse, verdict)


@pytest.mark.parametrize("K,r", [(4, 2), (5, 3)])
def test_one_message_spoiled_to_one_receiver_is_distrusted_then_named(K, r):
    """Plain, a liar's one spoiled value: its word against its receiver's, nobody named, the
    pair distrusted; done again without that pair, the liar spoiling its new first message
    is common to both disputes and named."""
    placement = Placement(K, r)
    values = _values(placement, Bytes(), np.random.default_rng(3))
    liar = 1
    first, _ = checked(placement, False, values, Bytes(), liar, spoil=[0])
    assert first.disputed == 1 and first.liars == [] and first.suspects == []
    (pair,) = first.distrust
    assert pair[0] == liar
    second, decoded = checked(placement, False, values, Bytes(), liar, spoil=[0],
                              earlier=first.candidates, distrust=first.distrust)
    assert second.liars == [liar]
    again = verify.Plan(placement, False, (), first.distrust)
    assert not any((p.sender, p.receiver) == pair for p in again.pieces)
    honest, decoded = checked(placement, False, values, Bytes(), distrust=first.distrust)
    assert honest.clean        # the pair's value sent by another mapper, and right
    assert all(bytes(v) == values[key] for got in decoded.values() for key, v in got.items())


def test_a_voucher_lying_about_two_senders_is_named_at_r_2():
    placement = Placement(4, 2)
    values = _values(placement, Vectors(GF(2**31 - 1)), np.random.default_rng(5))
    for liar in range(4):
        verdict, _ = checked(placement, True, values, Vectors(GF(2**31 - 1)), liar,
                             vouch=True)
        assert verdict.liars == [liar]


def test_two_mappers_at_odds_with_nobody_to_settle_it_are_suspects_at_r_2():
    """K = 3, r = 2, plain: the liar spoils its one value and lies as the voucher of the
    other sender's: either of the two can explain it all, so both are suspects and nobody
    is named."""
    placement = Placement(3, 2)
    values = _values(placement, Bytes(), np.random.default_rng(6))
    verdict, _ = checked(placement, False, values, Bytes(), 1, spoil=[0], vouch=True)
    assert verdict.liars == [] and verdict.suspects == [(0, 1)]


@pytest.mark.parametrize("K,r,coded", [(3, 2, True), (4, 2, False), (4, 3, True),
                                       (5, 2, True), (5, 3, False), (5, 4, True)])
def test_an_honest_worker_is_never_named(K, r, coded):
    """Random single liars (random messages spoiled, random lies in their fingerprints, over
    several checks as the master runs them): the verdict names no one else, and a value
    whose every piece passed is right."""
    placement = Placement(K, r)
    rng = np.random.default_rng(K * 100 + r * 10 + coded)
    algebra = Bytes()
    values = _values(placement, algebra, rng, length=5)
    named = 0
    for trial in range(40):
        liar = int(rng.integers(K))
        spoil = [n for n in range(60) if rng.random() < 0.2]
        vouch, accuse = bool(rng.random() < 0.3), bool(rng.random() < 0.3)
        earlier: list = []
        distrust: list = []
        for _ in range(6):
            verdict, decoded = checked(placement, coded, values, algebra, liar, spoil,
                                       vouch, accuse, earlier, distrust=distrust,
                                       seed=trial)
            assert set(verdict.liars) <= {liar}, (trial, verdict)
            named += verdict.liars == [liar]
            assert all(liar in pair for pair in verdict.suspects)
            if verdict.clean:
                for w, got in decoded.items():
                    if w != liar:
                        assert all(bytes(v) == values[key] for key, v in got.items())
                break
            if verdict.liars or verdict.suspects:
                break
            earlier += verdict.candidates
            distrust = sorted(set(distrust) | set(verdict.distrust))
            try:
                verify.Plan(placement, coded, (), distrust)
            except ValueError:
                break
    assert named >= 10              # the liars were caught, not merely never misnamed


def test_a_recovery_sends_a_distrusted_pairs_values_plain_by_another_mapper():
    placement = Placement(4, 2)
    recovery = Recovery(placement, [], distrust=[(1, 0)])
    assert all(not {0, 1} <= set(g) for g in recovery.groups)
    assert all(not (s == 1 and k == 0) for s, k, _, _ in recovery.transfers)
    assert any(k == 0 for _, k, _, _ in recovery.transfers)
    with pytest.raises(ValueError, match="No worker left may send worker 0 batch"):
        Recovery(placement, [2], distrust=[(1, 0)])     # batch {1, 2}: 2 lost, 1 distrusted
    with pytest.raises(ValueError, match="cannot distrust itself"):
        Recovery(placement, [], distrust=[(1, 1)])


def test_judge_refuses_fingerprints_that_do_not_add_up():
    plan = verify.Plan(Placement(3, 2))
    prints = {w: [1] * len(plan.roles(w)) for w in range(3)}
    with pytest.raises(ValueError, match="worker 2 reported 1 fingerprints"):
        verify.judge(plan, {**prints, 2: [1]})
    with pytest.raises(ValueError, match="no fingerprint of piece"):
        verify.judge(plan, {0: prints[0], 1: prints[1]})
    with pytest.raises(ValueError, match="fingerprints"):
        verify.judge(plan, {**prints, 0: ["x"] * len(prints[0])})
