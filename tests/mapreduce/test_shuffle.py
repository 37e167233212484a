"""Coded shuffling in one process: for every K <= 6 and load r, the placement maps each
batch on its r workers, the uncoded shuffle sends every needed value once, and the coded
shuffle delivers exactly the same values while each worker sends 1/r of the uncoded
load (exactly, for values that split evenly; up to padding otherwise), with XOR on bytes
and sums in GF(p) alike; the compressed shuffle of a sum-reduce is exact; and TeraSort
and Coded TeraSort sort exactly."""
import functools
import itertools
import math

import numpy as np
import pytest

from ffcode import GF
from ffcode.mapreduce import (Bytes, Placement, Vectors, coded_packet, decoded_segment,
                              incoming, outgoing, shuffle, uncoded_transfers)
from ffcode.mapreduce import terasort

CASES = [(K, r) for K in range(2, 7) for r in range(1, K)]


def byte_values(placement, size=None, seed=0):
    """A value per (function, batch): ``size`` bytes each, or random lengths (0 to 40)."""
    rng = np.random.default_rng(seed)
    return {(q, b): rng.integers(0, 256, size if size is not None else rng.integers(0, 41),
                                 dtype=np.uint8).tobytes()
            for q in range(placement.workers) for b in range(len(placement.subsets))}


def held_by(placement, values):
    return lambda w: {(q, b): v for (q, b), v in values.items() if w in placement.subsets[b]}


@pytest.mark.parametrize("K, r", CASES)
def test_the_placement(K, r):
    placement = Placement(K, r, files=3 * math.comb(K, r))
    assert len(placement.subsets) == math.comb(K, r) and placement.per_batch == 3
    for w in range(K):
        assert len(placement.mapped_by(w)) == math.comb(K - 1, r - 1)
    assert len(placement.groups()) == math.comb(K, r + 1)
    for group in placement.groups():
        for k in group:
            assert k not in placement.subsets[placement.needed(k, group)]
    assert sorted(f for b in range(len(placement.subsets))
                  for f in placement.batch_files(b)) == list(range(placement.files))


@pytest.mark.parametrize("K, r", CASES)
def test_the_uncoded_shuffle_sends_every_needed_value_once(K, r):
    placement = Placement(K, r)
    transfers = uncoded_transfers(placement)
    needed = {(k, b) for k in range(K) for b, subset in enumerate(placement.subsets)
              if k not in subset}
    assert sorted((k, b) for _, k, b in transfers) == sorted(needed)
    assert all(sender in placement.subsets[b] for sender, _, b in transfers)
    counts = np.bincount([sender for sender, _, _ in transfers], minlength=K)
    assert counts.sum() == K * math.comb(K - 1, r)


@pytest.mark.parametrize("K, r", CASES)
def test_the_coded_shuffle_delivers_the_same_values_at_one_rth_of_the_load(K, r):
    placement = Placement(K, r)
    even = byte_values(placement, size=12 * r, seed=K * 10 + r)   # splits evenly in r
    held = held_by(placement, even)
    coded, sent = shuffle(placement, held, Bytes())
    uncoded, sent_uncoded = shuffle(placement, held, Bytes(), coded=False)
    assert coded == uncoded
    for k in range(K):
        assert coded[k] == {b: even[(k, b)] for b, s in enumerate(placement.subsets)
                            if k not in s}
        assert sent[k] == math.comb(K - 1, r) * 12          # its load over r, exactly
    assert sum(sent_uncoded) == r * sum(sent) == K * math.comb(K - 1, r) * 12 * r
    ragged = byte_values(placement, seed=K + r)             # unequal lengths: padded
    held = held_by(placement, ragged)
    coded, sent = shuffle(placement, held, Bytes())
    assert coded == shuffle(placement, held, Bytes(), coded=False)[0]
    assert sum(sent) * r >= sum(len(v) for k in range(K) for v in coded[k].values())


@pytest.mark.parametrize("p", [2, 65521, 2**61 - 1])
@pytest.mark.parametrize("K, r", [(4, 1), (4, 2), (5, 3), (6, 2)])
def test_field_values_and_the_compressed_sum_reduce(p, K, r):
    """Each file maps to a vector per function; a batch's vectors are added up first
    (compressed), shuffled coded in GF(p), and each reducer's sum of what it mapped and
    received is the sum of its function over every file."""
    F = GF(p)
    placement = Placement(K, r, files=2 * math.comb(K, r))
    rng = np.random.default_rng(p % 1000 + K)
    mapped = {(q, n): F.random(7, rng) for q in range(K) for n in range(placement.files)}
    def total(parts):
        return functools.reduce(F.add, parts)
    batch_sum = {(q, b): total([mapped[(q, n)] for n in placement.batch_files(b)])
                 for q in range(K) for b in range(len(placement.subsets))}
    received, sent = shuffle(placement, held_by(placement, batch_sum), Vectors(F))
    for q in range(K):
        reduced = total([batch_sum[(q, b)] for b in placement.mapped_by(q)] +
                        list(received[q].values()))
        assert (reduced == total([mapped[(q, n)] for n in range(placement.files)])).all()
    groups = math.comb(K - 1, r)            # a packet a group: a segment, padded
    assert all(groups * (7 // r) <= s <= groups * math.ceil(7 / r) for s in sent)


@pytest.mark.parametrize("K, r", CASES)
@pytest.mark.parametrize("coded", [True, False], ids=["coded", "uncoded"])
def test_terasort_sorts_exactly(K, r, coded):
    """TeraSort (uncoded) and Coded TeraSort, in one process: each batch's records mapped
    into K key ranges by its r workers, shuffled, each range sorted by its worker; the
    output is the input sorted, with skewed keys too."""
    placement = Placement(K, r)
    data = terasort.records(97 * len(placement.subsets), seed=K * r, skew=2.0)
    files = np.array_split(data, placement.files)
    bounds = terasort.boundaries(data, K, seed=1)
    values = {}
    for b in range(len(placement.subsets)):
        parts = [terasort.partition(files[n], bounds) for n in placement.batch_files(b)]
        for q in range(K):
            values[(q, b)] = b"".join(part[q] for part in parts)
    received, _ = shuffle(placement, held_by(placement, values), Bytes(), coded=coded)
    outputs = [terasort.sort(b"".join([values[(q, b)] for b in placement.mapped_by(q)] +
                                      list(received[q].values()))) for q in range(K)]
    assert terasort.check(outputs, data)
    sizes = [len(o) // terasort.RECORD for o in outputs]
    assert max(sizes) < 2.5 * len(data) / K                 # balanced despite the skew


def test_the_check_catches_wrong_outputs():
    data = terasort.records(50, seed=3)
    parts = terasort.partition(data, terasort.boundaries(data, 2, seed=0))
    good = [terasort.sort(p) for p in parts]
    assert terasort.check(good, data)
    assert not terasort.check(parts, data)                  # ranges not sorted
    assert not terasort.check(good[::-1], data)             # ranges out of order
    assert not terasort.check(good[:1], data)               # records missing
    changed = bytearray(good[1])
    changed[-1] ^= 1                                        # a payload altered
    assert not terasort.check([good[0], bytes(changed)], data)
    assert not terasort.check([good[0], good[1] + good[1][-100:]], data)  # a record twice


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="r = 0|at least 1"):
        Placement(4, 0)
    with pytest.raises(ValueError, match="must be below the workers K = 4"):
        Placement(4, 4)
    with pytest.raises(ValueError, match="do not split into the 6 batches"):
        Placement(4, 2, files=7)
    with pytest.raises(ValueError, match="multiple of 100"):
        terasort.as_records(b"x" * 150)
    with pytest.raises(TypeError, match="uint8"):
        terasort.as_records(np.zeros(100, np.int64))
    placement = Placement(4, 2)
    values = byte_values(placement, size=8)
    held = held_by(placement, values)
    packet = coded_packet(placement, (0, 1, 2), 0, held(0), Bytes())
    with pytest.raises(ValueError, match="is not in group"):
        coded_packet(placement, (0, 1, 2), 3, held(3), Bytes())
    with pytest.raises(ValueError, match="not a group of 3"):
        coded_packet(placement, (0, 1), 0, held(0), Bytes())
    with pytest.raises(ValueError, match="does not receive"):
        decoded_segment(placement, (0, 1, 2), 0, 3, packet, held(3), Bytes())
    with pytest.raises(ValueError, match="segment lengths"):
        decoded_segment(placement, (0, 1, 2), 0, 1, (packet[0], [4]), held(1), Bytes())
    with pytest.raises(ValueError, match="cannot hold a segment"):
        decoded_segment(placement, (0, 1, 2), 0, 1, (packet[0][:1], [4, 4]), held(1),
                        Bytes())
    with pytest.raises(TypeError, match="field"):
        Vectors(65521)


def test_segments_of_every_length_come_back():
    algebra = Bytes()
    for length, parts in itertools.product(range(0, 12), range(1, 5)):
        value = bytes(range(length))
        segments = algebra.split(value, parts)
        assert len(segments) == parts and algebra.join(segments) == value
        packet = algebra.add(segments)
        for i, segment in enumerate(segments):
            rest = segments[:i] + segments[i + 1:]
            assert algebra.cancel(packet, rest, len(segment)) == segment


@pytest.mark.parametrize("coded", [True, False], ids=["coded", "uncoded"])
def test_a_worker_refuses_messages_missing_repeated_or_not_its_own(coded):
    placement = Placement(5, 2)
    values = byte_values(placement, size=8)
    held = held_by(placement, values)
    messages = [m for w in range(5) for m in outgoing(placement, w, held(w), Bytes(), coded)]
    mine = [m for m in messages if 0 in m.receivers]
    assert incoming(placement, 0, mine, held(0), Bytes(), coded) == {
        b: values[(0, b)] for b, s in enumerate(placement.subsets) if 0 not in s}
    with pytest.raises(ValueError, match="misses the shuffle's messages"):
        incoming(placement, 0, mine[1:], held(0), Bytes(), coded)
    with pytest.raises(ValueError, match="twice"):
        incoming(placement, 0, mine + mine[:1], held(0), Bytes(), coded)
    stranger = next(m for m in messages if 0 not in m.receivers)
    with pytest.raises(ValueError, match="does not need"):
        incoming(placement, 0, mine + [stranger], held(0), Bytes(), coded)


def test_keys_that_share_their_first_bytes_sort_and_split_by_all_ten():
    """Keys equal in their first 8 bytes (and boundaries equal to them there) are ordered by
    their last 2, as 10-byte keys are; every record lands in the range its whole key says."""
    rng = np.random.default_rng(5)
    data = terasort.records(400, seed=6)
    data[:, :8] = rng.integers(0, 3, (400, 1), dtype=np.uint8)   # three 8-byte prefixes
    data[:, 8:10] = rng.integers(0, 4, (400, 2), dtype=np.uint8)
    bounds = terasort.boundaries(data, 5, seed=1, sample=50)
    expected = np.searchsorted(bounds, terasort.keys(data), side="right")
    assert (terasort.ranges_of(data, bounds) == expected).all()
    parts = terasort.partition(data, bounds)
    assert terasort.check([terasort.sort(p) for p in parts], data)
    rows = terasort.as_records(terasort.sort(data))
    keys = [bytes(k) for k in rows[:, :10]]
    assert keys == sorted(keys)
