"""Reading the output off the payload rows: rows put in order in place when large
(``in_order``), and a deferring decoder's buffer handed on only when the output does not
live in it, so that a next decoder reusing it cannot change an output already returned."""
import numpy as np
import pytest

import ffcode
from ffcode.decoding import decoder
from ffcode.decoding.decoder import in_order

from codecases import Case
from helpers import prime_id

CASES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "ProductCode sparse",
         "LCC t=1", "LCC gram", "LCC square"]


def same(a, b) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 40])
def test_in_order_equals_indexing_for_every_kind_of_permutation(n, monkeypatch):
    """In place or copied, in_order(rows, order) is rows[order]: the identity, single
    cycles, fixed points and random permutations, rows of any dtype."""
    rng = np.random.default_rng(n)
    orders = [np.arange(n), np.roll(np.arange(n), 1), rng.permutation(n), rng.permutation(n)]
    for limit in (0, 1 << 40):                      # always in place, never in place
        monkeypatch.setattr(decoder, "IN_PLACE_BYTES", limit)
        for order in orders:
            for dtype in (np.uint32, np.uint64):
                rows = rng.integers(0, 2**31, (n, 3)).astype(dtype)
                want = rows[order]
                got = in_order(rows.copy(), order)
                assert got.dtype == dtype and np.array_equal(got, want)


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("name", CASES)
def test_outputs_read_in_place_stay_the_callers(name, p, monkeypatch):
    """With every payload put in order in place, each code decodes exactly, deferred or not;
    a deferring decoder offers its buffer only when its output does not lie in it, and a
    next decoder on an offered buffer leaves the first output as it was."""
    monkeypatch.setattr(decoder, "IN_PLACE_BYTES", 0)
    monkeypatch.setattr(decoder, "EAGER_BYTES", -1)
    F = ffcode.GF(p)
    m = 2
    case = Case(name, F, seed=3)
    packets = case.full_speed(m, seed=3) if case.full_speed_ok else case.finished(m, seed=3)
    now, later = case.decoder(m, defer=False), case.decoder(m, defer=True)
    for sent in packets:
        for packet in sent:
            now.add(packet)
            later.add(packet)
    first = later.result()
    case.check(first)
    assert same(first, now.result())
    kept = [a.copy() for a in first] if isinstance(first, list) else first.copy()
    buffer = later.buffer
    arrays = first if isinstance(first, list) else [first]
    assert buffer is None or not any(np.may_share_memory(a, buffer) for a in arrays)
    if buffer is not None:
        buffer[:] = 0                               # what a next job would write over it
    again = ffcode.Decoder(case.encoding, m, result_shape=case.result_shape, defer=True,
                           buffer=buffer)
    for sent in reversed(packets):
        for packet in sent:
            again.add(packet)
    assert same(again.result(), kept) and same(first, kept)


@pytest.mark.parametrize("defer", [False, True])
def test_an_output_that_is_one_block_keeps_its_values_after_the_buffer_is_reused(defer,
                                                                                monkeypatch):
    """MDS with k = 1 (a repetition code) decodes to its single coefficient block itself,
    uncopied: read in place, that block lies in the payload rows, so the decoder hands on
    no buffer, and a next decoder cannot write over the output returned."""
    monkeypatch.setattr(decoder, "IN_PLACE_BYTES", 0)
    monkeypatch.setattr(decoder, "EAGER_BYTES", -1)
    F = ffcode.GF(2**31 - 1)
    code = ffcode.MDS(F, 1, 3)
    A, x = F.random((6, 4), seed=1), F.random((4, 2), seed=2)
    shares = code.encode(A)
    packets = [p for w in (2, 0) for p in ffcode.piece_packets(F, code.compute(shares[w], x),
                                                                3, w, seed=w)]
    first = ffcode.Decoder(shares, 3, defer=defer, buffer=None)
    for packet in packets:
        first.add(packet)
    output = first.result()
    assert np.array_equal(output, F.matmul(A, x))
    assert first.buffer is None or not np.may_share_memory(output, first.buffer)
    again = ffcode.Decoder(shares, 3, defer=True, buffer=first.buffer)
    for packet in reversed(packets):
        again.add(packet)
    assert np.array_equal(again.result(), output)
    assert np.array_equal(output, F.matmul(A, x))
