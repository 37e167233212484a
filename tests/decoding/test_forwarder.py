"""Forwarder, a relay's collector for an ordinary code: it passes on exactly the packets
that raise the rank of what it forwarded (or, unfiltered, every one not seen before), in
the order they came, never more than m·R, and what it passes on decodes exactly at the
master; a malformed packet is refused and changes nothing."""
import numpy as np
import pytest

from ffcode import GF, MDS, LCC, Decoder, MatDot, Packet, PolynomialCode, piece_packets
from ffcode.decoding.relay import Forwarder

from helpers import rand

P = 2**31 - 1
F = GF(P)
A, B, X = rand(P, (12, 6), 1), rand(P, (6, 5), 2), rand(P, (6,), 3)
CODES = {"MDS": (MDS(F, 3, 8), (A, X)), "PolynomialCode": (PolynomialCode(F, 2, 2, 8), (A, B)),
         "MatDot": (MatDot(F, 3, 8), (A, B)),
         "LCC": (LCC(F, 2, 1, "ffcode.functions:square", 2, 8), ([A[:6], A[6:]],))}


def packets_of(code, shares, k, inputs, pieces, systematic):
    y = code.compute(shares[k], *code.arguments(shares, *inputs[code.encodes:]))
    return list(piece_packets(code.F, y, pieces, k, seed=k, systematic=systematic))


def rank_of(F, code, pieces, packets) -> int:
    rows = [np.kron(p.coeffs.astype(object), code.evaluations[p.worker].astype(object))
            for p in packets]
    return F.rank(np.array(rows, dtype=np.int64) % F.p) if rows else 0


@pytest.mark.parametrize("name", CODES)
@pytest.mark.parametrize("systematic", [False, True])
def test_it_forwards_exactly_the_innovative_packets_and_they_decode(name, systematic):
    code, inputs = CODES[name]
    shares = code.encode(*inputs[:code.encodes])
    held = [0, 2, 3, 5, 6, 7]           # one relay's shares, in its order
    sent = []
    relay = Forwarder(F, code.evaluations[held], pieces=3, forward=sent.append)
    rng = np.random.default_rng(7)
    arrived = [Packet(place, p.index, p.coeffs, p.payload, p.rows)
               for place, k in enumerate(held)
               for p in packets_of(code, shares, k, inputs, 3, systematic)]
    seen = []
    for i in rng.permutation(len(arrived)):
        before = rank_of(F, code, 3, [Packet(held[p.worker], 0, p.coeffs, p.payload)
                                      for p in seen])
        packet = arrived[i]
        forwarded = relay.add(packet)
        after = rank_of(F, code, 3, [Packet(held[p.worker], 0, p.coeffs, p.payload)
                                     for p in seen + [packet]])
        assert forwarded == (after > before and before < 3 * code.recovery_threshold)
        if forwarded:
            seen.append(packet)
    assert relay.complete and len(sent) == relay.rank == 3 * code.recovery_threshold
    master = Decoder(shares, pieces=3)
    assert all(master.add(Packet(held[p.worker], p.index, p.coeffs, p.payload, p.rows))
               for p in sent)
    args = code.arguments(shares, *inputs[code.encodes:])
    expected = code.decode(shares, {k: code.compute(shares[k], *args)
                                    for k in range(code.n_workers)})
    assert np.array_equal(np.asarray(master.result()), np.asarray(expected))


def test_fewer_shares_than_r_forward_all_and_complete_when_all_came():
    code, inputs = CODES["MDS"]
    shares = code.encode(A)
    sent = []
    relay = Forwarder(F, code.evaluations[[4, 1]], pieces=2, forward=sent.append)
    for place, k in enumerate((4, 1)):
        for p in packets_of(code, shares, k, inputs, 2, False):
            assert not relay.complete
            assert relay.add(Packet(place, p.index, p.coeffs, p.payload, p.rows))
    assert relay.complete and relay.needed == 4 and relay.result() == 4
    assert not relay.add(Packet(0, 0, sent[0].coeffs, sent[0].payload, sent[0].rows))


def test_unfiltered_it_forwards_every_new_packet():
    code, inputs = CODES["MDS"]
    shares = code.encode(A)
    sent = []
    relay = Forwarder(F, code.evaluations[:5], pieces=2, forward=sent.append, filter=False)
    for k in range(5):
        for p in packets_of(code, shares, k, inputs, 2, True):
            assert relay.add(p) and not relay.add(p)          # a repeat is not new
    assert len(sent) == 10 == relay.needed and relay.complete


def test_a_huge_prime_and_p2():
    G = GF(2**61 - 1)
    code = MDS(G, 2, 4)
    a, x = G.random((4, 3), seed=1), G.random(3, seed=2)
    shares = code.encode(a)
    sent = []
    relay = Forwarder(G, code.evaluations, pieces=1, forward=sent.append)
    for k in range(4):
        relay.add(Packet(k, 0, np.ones(1, G.dtype), code.compute(shares[k], x)))
    master = Decoder(shares, pieces=1)
    for packet in sent:
        master.add(packet)
    assert len(sent) == 2 and (master.result() == G.matmul(a, x)).all()
    two = GF(2)                         # uncoded slices: a unit vector each
    relay = Forwarder(two, np.eye(3, dtype=np.int64)[[2, 0]], pieces=1, forward=sent.append)
    for k in (1, 0, 1):
        relay.add(Packet(k, 0, np.ones(1, two.dtype), np.array([k, 1], two.dtype)))
    assert relay.rank == 2 and relay.complete and relay.received == 2


def test_malformed_packets_are_refused_and_change_nothing():
    code, inputs = CODES["MDS"]
    shares = code.encode(A)
    good = packets_of(code, shares, 0, inputs, 2, False)[0]
    sent = []
    relay = Forwarder(F, code.evaluations[:2], pieces=2, forward=sent.append)
    bad = [(Packet(2, 0, good.coeffs, good.payload), ValueError, "packet worker"),
           (Packet(-1, 0, good.coeffs, good.payload), ValueError, "packet worker"),
           (Packet(0, 2, good.coeffs, good.payload), ValueError, "packet index"),
           (Packet(0, 0, good.coeffs[:1], good.payload), ValueError, "shape"),
           (Packet(0, 0, good.coeffs + P, good.payload), ValueError, "coeffs"),
           (Packet(0, 0, good.coeffs, good.payload + P), ValueError, "payload"),
           (Packet(0, 0, good.coeffs, good.payload.tolist()), TypeError, "numpy array"),
           (Packet(0, 0, good.coeffs, np.uint32(5)), TypeError, "numpy array"),
           ("packet", TypeError, "Packet")]
    for packet, error, match in bad:
        with pytest.raises(error, match=match):
            relay.add(packet)
    assert relay.received == relay.rank == 0 and not sent
    assert relay.add(good)
    other = Packet(1, 0, good.coeffs, good.payload[:-1], good.rows)
    with pytest.raises(ValueError, match="expected"):          # the first fixed the shape
        relay.add(other)
    assert relay.rank == 1


def test_bad_arguments_are_refused():
    code = MDS(F, 2, 3)
    with pytest.raises(TypeError, match="field"):
        Forwarder("F", code.evaluations, 2, print)
    with pytest.raises(ValueError, match="non-empty"):
        Forwarder(F, code.evaluations[:0], 2, print)
    with pytest.raises(ValueError, match="powers"):
        Forwarder(F, code.evaluations + P, 2, print)
    with pytest.raises(TypeError, match="callable"):
        Forwarder(F, code.evaluations, 2, None)
    with pytest.raises(ValueError, match="pieces"):
        Forwarder(F, code.evaluations, 0, print)
    with pytest.raises(ValueError, match="trusts every sender"):
        Forwarder(F, code.evaluations, 2, print).exclude(0)
