"""The phase model of a MapReduce job prices the bytes the shuffle moves exactly as the
shuffle moves them: per link, per worker and on a shared medium, coded and uncoded, for
every K <= 6 and load r; its phases add up, and bad arguments are refused."""
import itertools
import math

import numpy as np
import pytest

from ffcode.mapreduce import Bytes, Placement, coded_packet, uncoded_transfers
from ffcode.mapreduce.model import loads, predict

CASES = [(K, r) for K in range(2, 7) for r in range(1, K)]


@pytest.mark.parametrize("K, r", CASES)
def test_the_loads_are_the_shuffles_bytes(K, r):
    placement = Placement(K, r)
    size = 6 * r                                    # a piece splits evenly in r segments
    values = {(q, b): bytes(size) for q in range(K) for b in range(len(placement.subsets))}
    model = loads(K, r, size * K * len(placement.subsets))
    assert model.piece == size
    link = np.zeros((K, K))
    for group in placement.groups():
        for j in group:
            held = {key: v for key, v in values.items() if j in placement.subsets[key[1]]}
            payload, _ = coded_packet(placement, group, j, held, Bytes())
            for k in group:
                if k != j:
                    link[j, k] += len(payload)      # a unicast per receiver
    off = ~np.eye(K, dtype=bool)
    assert (link[off] == model.per_link).all() and (link.sum(axis=1) == model.per_worker).all()
    assert link.sum() / r == model.transmissions    # a multicast counted once
    plain = np.zeros((K, K))
    for sender, receiver, _ in uncoded_transfers(placement):
        plain[sender, receiver] += size
    assert plain.sum() == loads(K, r, size * K * len(placement.subsets), False).transmissions
    assert math.isclose(plain[off].mean(), model.per_link)     # the same bytes a link


def test_the_phases():
    phases = predict(6, 2, 6e8, link_rate=1e7, map_rate=1e8, encode_rate=1e9,
                     decode_rate=1e9, reduce_rate=5e7, input_bytes=6e8)
    assert phases.map == pytest.approx(6e8 * 2 / 6 / 1e8)
    assert phases.reduce == pytest.approx(1e8 / 5e7)
    assert phases.total == pytest.approx(sum((phases.map, phases.encode, phases.shuffle,
                                              phases.decode, phases.reduce)))
    plain = predict(6, 2, 6e8, link_rate=1e7, coded=False)
    assert plain.encode == plain.decode == 0.0
    for network, gain in (("links", 1.0), ("turns", 2.0)):     # coded against uncoded, r = 2
        ratio = predict(6, 2, 6e8, link_rate=1e7, network=network, coded=False).shuffle / \
            predict(6, 2, 6e8, link_rate=1e7, network=network).shuffle
        assert ratio == pytest.approx(gain)
    capped = predict(6, 2, 6e8, link_rate=1e9, node_rate=1e7)  # the interface binds
    assert capped.shuffle == pytest.approx(loads(6, 2, 6e8).per_worker / 1e7)
    for K, r in itertools.product((6, 8, 100), (1, 2, 3)):     # r = 1 against r, links
        ratio = predict(K, 1, 1e9, link_rate=1e7, coded=False).shuffle / \
            predict(K, r, 1e9, link_rate=1e7).shuffle
        assert ratio == pytest.approx((K - 1) / (K - r))


@pytest.mark.parametrize("arguments, error", [
    (dict(workers=1, load=1), "workers"), (dict(workers=4, load=4), "load"),
    (dict(workers=4, load=0), "load"), (dict(values=-1.0), "values"),
    (dict(link_rate=0.0), "link_rate"), (dict(network="bus"), "network"),
    (dict(map_rate=0.0), "map_rate"), (dict(node_rate=-1.0), "node_rate")])
def test_bad_arguments(arguments, error):
    given = dict(workers=4, load=2, values=1e6, link_rate=1e6) | arguments
    with pytest.raises((ValueError, TypeError), match=error):
        predict(**given)
