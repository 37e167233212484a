"""GroupDecoder, a relay's decoding: each group's workers' packets (computation at full
speed on the inner code) decode the group's result as soon as their rank allows, and the
relays' packets of those results decode the output at the master with the outer code's
own Decoder, exactly, for every pair of codes; what is not its group's is refused."""
import numpy as np
import pytest

from ffcode import GF, MDS, Decoder, HierarchicalCode, MatDot, PolynomialCode, piece_packets
from ffcode.decoding.relay import GroupDecoder

from helpers import assert_field_array, obj_matmul, rand

P = 2**31 - 1
PAIRS = {
    "MDS-MDS": lambda F: HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 4)),
    "PolynomialCode-MatDot": lambda F: HierarchicalCode(PolynomialCode(F, 2, 1, 4),
                                                        MatDot(F, 2, 4)),
    "MatDot-PolynomialCode": lambda F: HierarchicalCode(MatDot(F, 2, 4),
                                                        PolynomialCode(F, 1, 2, 3)),
    "PolynomialCode-MDS": lambda F: HierarchicalCode(PolynomialCode(F, 1, 2, 3), MDS(F, 2, 3)),
}


def job(name, pieces, seed=0):
    F = GF(P)
    code = PAIRS[name](F)
    A = rand(P, (7, 6), seed)
    if code.encodes == 1:
        x = rand(P, (6,), seed + 1)
        return code, code.encode(A, pieces=pieces, seed=seed), (x,), \
            obj_matmul(P, A, x.reshape(-1, 1)).reshape(-1)
    B = rand(P, (6, 5), seed + 1)
    return code, code.encode(A, B, pieces=pieces, seed=seed), (), obj_matmul(P, A, B)


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("outer_pieces", [1, 3])
def test_relays_then_the_master_decode_exactly(name, outer_pieces):
    code, shares, args, expected = job(name, pieces=2, seed=4)
    args = code.arguments(shares, *args)
    rng = np.random.default_rng(5)
    master = Decoder(shares.outer, pieces=outer_pieces)
    for group in rng.permutation(code.groups):
        relay = GroupDecoder(shares, group)
        packets = [p for w in code.members(group)
                   for p in code.compute_pieces(shares[w], *args)]
        for k in rng.permutation(len(packets)):
            relay.add(packets[k])
            if relay.complete:
                break
        assert relay.complete and relay.rank == relay.needed == \
            2 * code.inner.recovery_threshold
        outer_args = code.outer.arguments(shares.outer, *args)
        assert_field_array(code.F, relay.result(),
                           code.outer.compute(shares.outer[int(group)], *outer_args))
        for packet in relay.packets(outer_pieces, seed=int(group)):
            master.add(packet)
        if master.complete:
            break
    assert master.rank == outer_pieces * code.outer.recovery_threshold
    assert_field_array(code.F, master.result(), expected)


def test_a_relay_needs_r_i_of_its_workers():
    """R_i - 1 workers' packets (all of them) leave the rank short; the next worker's
    complete it, and packets after that do not count."""
    code, shares, args, _ = job("MDS-MDS", pieces=2)
    relay = GroupDecoder(shares, 1)
    first, second, third = code.members(1)[:3]
    for worker in (first,):
        for packet in code.compute_pieces(shares[worker], *args):
            assert relay.add(packet)
    assert not relay.complete and relay.rank == 2
    with pytest.raises(ValueError):
        relay.result()
    for packet in code.compute_pieces(shares[second], *args):
        relay.add(packet)
    assert relay.complete
    assert not any(relay.add(p) for p in code.compute_pieces(shares[third], *args))


def test_what_is_not_the_relays_is_refused():
    code, shares, args, _ = job("MDS-MDS", pieces=2)
    relay = GroupDecoder(shares, 0)
    stranger = next(iter(code.compute_pieces(shares[code.members(2)[0]], *args)))
    with pytest.raises(ValueError, match="is in group 2, not in this relay's group 0"):
        relay.add(stranger)
    with pytest.raises(TypeError, match="Packet"):
        relay.add("packet")
    with pytest.raises(ValueError, match="Group 3 is out of range"):
        GroupDecoder(shares, 3)
    with pytest.raises(TypeError, match="HierarchicalCode.encode"):
        GroupDecoder(shares.outer, 0)
    whole = code.encode(rand(P, (7, 6), 0))
    with pytest.raises(ValueError, match="pieces"):
        GroupDecoder(whole, 0)
    relay = GroupDecoder(whole, 0, pieces=1)          # whole results: one piece each
    for worker in code.members(0)[:2]:
        y = code.compute(whole[worker], *args)
        relay.add(next(piece_packets(code.F, y, 1, worker, seed=worker)))
    assert relay.complete
