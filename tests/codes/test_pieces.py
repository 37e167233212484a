"""Full-speed coding, the worker side: Packet, piece_packets, and encode(..., pieces=m) with
compute_pieces give every packet exactly the combination of row pieces its coefficients say."""
import dataclasses

import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, MatDot, Packet, PieceShare, PolynomialCode, piece_packets
from ffcode.pieces import piece_results, stacked_results

from helpers import as_objects, assert_field_array, prime_id, rand, row_pieces

PIECE_PRIMES = [65521, 2**31 - 1, 4294967291, 2**61 - 1]
W_SEED = 17


def combination(p, coeffs, pieces) -> np.ndarray:
    """sum_l coeffs[l] * pieces[l] mod p, in Python ints."""
    out = np.zeros(pieces.shape[1:], dtype=object)
    for c, piece in zip(coeffs, pieces):
        out = out + int(c) * piece
    return out % p


def times_W(F, X):
    return F.matmul(X, rand(F.p, (X.shape[1], 2), W_SEED))


# -- Packet and piece_packets ----------------------------------------------------------------


def test_packet_is_a_frozen_record():
    """Packet(worker, index, coeffs, payload) keeps its four fields and cannot be changed."""
    coeffs, payload = np.array([1, 2], np.uint32), np.array([[3, 4]], np.uint32)
    packet = Packet(3, 1, coeffs, payload)
    assert (packet.worker, packet.index) == (3, 1)
    assert packet.coeffs is coeffs and packet.payload is payload
    assert packet == Packet(worker=3, index=1, coeffs=coeffs, payload=payload)
    with pytest.raises(dataclasses.FrozenInstanceError):
        packet.worker = 0


SHAPES = [(8, 3), (7, 3), (5,), (1, 2), (2, 3, 2), (0, 4)]


@pytest.mark.parametrize("p", PIECE_PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_systematic_packets_are_the_raw_pieces(p, m, shape):
    """systematic=True: packet l is piece l of the zero-padded rows, with unit vector e_l."""
    F = ffcode.GF(p)
    y = rand(p, shape, (m, len(shape)))
    packets = list(piece_packets(F, y, m, worker=4, systematic=True))
    pieces = row_pieces(y, m)
    assert len(packets) == m
    for l, packet in enumerate(packets):
        assert isinstance(packet, Packet)
        assert (packet.worker, packet.index) == (4, l)
        assert_field_array(F, packet.coeffs, np.eye(m, dtype=np.int64)[l])
        assert_field_array(F, packet.payload, pieces[l])
    # the payloads put back together are the result, then only zero rows
    whole = np.concatenate([as_objects(pk.payload) for pk in packets])
    assert np.array_equal(whole[:shape[0]], as_objects(y))
    assert not whole[shape[0]:].any()


@pytest.mark.parametrize("p", PIECE_PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_random_packets_combine_the_pieces(p, m, shape):
    """Random packets: payload j = sum_l coeffs_j[l] * (zero-padded piece l), coefficients
    are field elements, and the m coefficient vectors are independent (p is large)."""
    F = ffcode.GF(p)
    y = rand(p, shape, (m, len(shape), 1))
    packets = list(piece_packets(F, y, m, worker=2, seed=11))
    pieces = row_pieces(y, m)
    assert len(packets) == m
    for j, packet in enumerate(packets):
        assert (packet.worker, packet.index) == (2, j)
        assert packet.coeffs.shape == (m,) and packet.coeffs.dtype == F.dtype
        assert int(packet.coeffs.max()) < p
        assert_field_array(F, packet.payload, combination(p, packet.coeffs, pieces))
    assert F.rank(np.stack([pk.coeffs for pk in packets])) == m


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
def test_random_packets_are_seeded(p):
    """The same seed gives the same packets, another seed other coefficients; seed=None
    (and a Generator) give valid packets too."""
    F = ffcode.GF(p)
    y = rand(p, (7, 2), 3)

    def run(seed):
        return [(pk.coeffs.tolist(), pk.payload.tolist())
                for pk in piece_packets(F, y, 3, worker=0, seed=seed)]

    assert run(5) == run(5)
    assert run(np.random.default_rng(5)) == run(5)
    assert [c for c, _ in run(5)] != [c for c, _ in run(6)]
    pieces = row_pieces(y, 3)
    for coeffs, payload in run(None):
        assert_field_array(F, np.array(payload, F.dtype), combination(p, coeffs, pieces))


def test_piece_packets_yields_one_at_a_time():
    """piece_packets is an iterator of packets, not a list built up front."""
    F = ffcode.GF(65521)
    for systematic in (False, True):
        it = piece_packets(F, np.arange(6, dtype=np.uint32), 3, worker=1, seed=0,
                           systematic=systematic)
        assert iter(it) is it
        assert next(it).index == 0
        assert len(list(it)) == 2


def test_piece_packets_accepts_any_integer_input():
    """Lists, signed dtypes and numpy integer arguments are taken as field elements."""
    F = ffcode.GF(7)
    packets = list(piece_packets(F, [[1, 2], [3, 4], [5, 6]], np.int64(2), np.uint8(1),
                                 systematic=True))
    assert [pk.payload.tolist() for pk in packets] == [[[1, 2], [3, 4]], [[5, 6], [0, 0]]]
    assert all(pk.worker == 1 and pk.payload.dtype == F.dtype for pk in packets)


F7 = ffcode.GF(7)
Y7 = np.arange(6, dtype=np.uint32).reshape(3, 2)


@pytest.mark.parametrize("args, kwargs, error", [
    ((7, Y7, 2, 0), {}, TypeError),                        # not a field
    ((None, Y7, 2, 0), {}, TypeError),
    ((F7, Y7.astype(float), 2, 0), {}, TypeError),         # float result
    ((F7, [[1.5, 2]], 2, 0), {}, TypeError),
    ((F7, np.uint32(3), 2, 0), {}, ValueError),             # 0-d result
    ((F7, Y7 + 5, 2, 0), {}, ValueError),                   # elements >= p
    ((F7, -Y7.astype(np.int64) - 1, 2, 0), {}, ValueError),  # negative elements
    ((F7, Y7, 0, 0), {}, ValueError),                       # pieces < 1
    ((F7, Y7, -2, 0), {}, ValueError),
    ((F7, Y7, 1.5, 0), {}, TypeError),                      # pieces not an int
    ((F7, Y7, 2.0, 0), {}, TypeError),
    ((F7, Y7, True, 0), {}, TypeError),
    ((F7, Y7, "2", 0), {}, TypeError),
    ((F7, Y7, 2, -1), {}, ValueError),                      # negative worker
    ((F7, Y7, 2, 1.0), {}, TypeError),
    ((F7, Y7, 0, 0), {"systematic": True}, ValueError),
    ((F7, np.uint32(3), 2, 0), {"systematic": True}, ValueError),
    ((F7, Y7, 2, -1), {"systematic": True}, ValueError),
], ids=lambda v: None)
def test_piece_packets_rejects_bad_input(args, kwargs, error):
    """Non-field F, float or 0-d results, bad pieces and negative workers raise."""
    with pytest.raises(error):
        list(piece_packets(*args, **kwargs))


# -- encode(..., pieces=m) and compute_pieces ------------------------------------------------


def full_speed_case(name, F):
    """(code, encode arguments, compute arguments). A plain share is a tuple whose operand 0
    is the row-linear one (code.row_linear_operand): A~(a_i) or u(a_i)."""
    p = F.p
    if name == "MDS vector":
        code, data, args = MDS(F, 2, 4), (rand(p, (9, 4), 1),), (rand(p, 4, 2),)
    elif name == "MDS matrix":
        code, data, args = MDS(F, 3, 4), (rand(p, (7, 3), 1),), (rand(p, (3, 2), 2),)
    elif name == "PolynomialCode":
        code, data, args = PolynomialCode(F, 2, 2, 5), (rand(p, (9, 3), 3), rand(p, (3, 7), 4)), ()
    elif name == "MatDot":
        code, data, args = MatDot(F, 2, 4), (rand(p, (5, 6), 5), rand(p, (6, 4), 6)), ()
    else:
        t = 1 if name == "LCC t=1" else 0
        code = LCC(F, 2, t, times_W, 1, 4, row_linear=True)
        data, args = ([rand(p, (5, 3), 7), rand(p, (5, 3), 8)],), ()
    return code, data, args


FULL_SPEED = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "LCC t=0", "LCC t=1"]


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("name", FULL_SPEED)
def test_encode_pieces(name, p, m):
    """encode(..., pieces=m, seed=s) gives N PieceShares: blocks[j] = G_i[j] . (row pieces of
    the plain share's row-linear operand, operand 0), the other operands unchanged in
    ``rest``, and operands(j) the plain share's operands with block j in operand 0's place."""
    F = ffcode.GF(p)
    code, data, args = full_speed_case(name, F)
    assert code.row_linear and code.row_linear_operand == 0
    plain = code.encode(*data, seed=9)
    shares = code.encode(*data, pieces=m, seed=9)
    assert len(shares) == code.n_workers and shares.pieces == m
    Gs = []
    for i, (share, plain_share) in enumerate(zip(shares, plain)):
        assert isinstance(share, PieceShare) and isinstance(plain_share, tuple)
        assert share.worker == i and share.operand == 0
        assert share.coeffs.shape == (m, m) and share.coeffs.dtype == F.dtype
        assert int(share.coeffs.max()) < p
        pieces = row_pieces(plain_share[0], m)
        assert share.blocks.shape == (m,) + pieces.shape[1:]
        for j in range(m):
            assert_field_array(F, share.blocks[j], combination(p, share.coeffs[j], pieces))
        assert len(share.rest) == len(plain_share) - 1
        for got, want in zip(share.rest, plain_share[1:]):
            assert_field_array(F, got, want)
        for j in range(m):
            operands = share.operands(j)
            assert len(operands) == len(plain_share)
            assert np.array_equal(operands[0], share.blocks[j])
            assert all(a is b for a, b in zip(operands[1:], share.rest))
        Gs.append(share.coeffs.tolist())
    assert len({str(G) for G in Gs}) == len(Gs)        # every worker draws its own G_i
    again = code.encode(*data, pieces=m, seed=9)
    assert [s.coeffs.tolist() for s in again] == Gs
    other = code.encode(*data, pieces=m, seed=10)
    assert [s.coeffs.tolist() for s in other] != Gs


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("name", FULL_SPEED)
def test_compute_pieces(name, p, m):
    """compute_pieces yields m packets, packet j with worker i, index j, coefficients G_i[j]
    and payload G_i[j] . (row pieces of the worker's whole local result)."""
    F = ffcode.GF(p)
    code, data, args = full_speed_case(name, F)
    plain = code.encode(*data, seed=3)
    shares = code.encode(*data, pieces=m, seed=3)
    for i in (0, code.n_workers - 1):
        packets = code.compute_pieces(shares[i], *args)
        assert iter(packets) is packets
        packets = list(packets)
        pieces = row_pieces(code.compute(plain[i], *args), m)
        assert len(packets) == m
        for j, packet in enumerate(packets):
            assert isinstance(packet, Packet)
            assert (packet.worker, packet.index) == (i, j)
            assert_field_array(F, packet.coeffs, shares[i].coeffs[j])
            assert_field_array(F, packet.payload, combination(p, packet.coeffs, pieces))


@pytest.mark.parametrize("p", PIECE_PRIMES, ids=prime_id)
@pytest.mark.parametrize("operand", [0, 1])
def test_stacked_results_are_the_piece_results_in_one_call(p, operand):
    """For a row-linear f, stacked_results(compute, share) yields piece_results's packets
    exactly (the same worker, index, coefficients and payload), from one call of f on the
    stacked blocks; an f whose result has not the stacked rows is refused."""
    F = ffcode.GF(p)
    coeffs, blocks = F.random((3, 3), 1), rand(p, (3, 2, 4), 2)
    other, W = rand(p, (5, 2), 3), rand(p, (4, 6), 4)
    calls = []

    def compute(*operands):                 # X @ W, X the row-linear operand
        calls.append(operands[operand].shape)
        return F.matmul(operands[operand], W)

    share = PieceShare(7, coeffs, blocks, (other,), operand=operand)
    one, each = list(stacked_results(compute, share)), list(piece_results(compute, share))
    assert calls[0] == (6, 4) and len(calls) == 4 and len(one) == len(each) == 3
    for packet, expected in zip(one, each):
        assert (packet.worker, packet.index) == (expected.worker, expected.index)
        assert_field_array(F, packet.coeffs, expected.coeffs)
        assert_field_array(F, packet.payload, expected.payload)
    with pytest.raises(ValueError, match="not row-linear"):
        list(stacked_results(lambda *operands: F.matmul(W, W.T), share))    # 4 rows


def test_piece_results_puts_the_block_in_its_operand():
    """piece_results(compute, share) yields packet j = (worker, j, coeffs[j],
    compute(*operands)) with block j at position ``operand`` among the ``rest``, lazily: block
    j is computed only when its packet is asked for."""
    F = ffcode.GF(65521)
    coeffs = F.random((3, 3), 1)
    blocks = rand(F.p, (3, 2, 4), 2)
    left, right = rand(F.p, (5, 2), 3), rand(F.p, (4, 6), 4)
    calls = []

    def compute(*operands):
        calls.append(len(calls))
        return F.matmul(F.matmul(operands[0], operands[1]), operands[2])

    share = PieceShare(7, coeffs, blocks, (left, right), operand=1)
    for j in range(3):
        first, block, last = share.operands(j)
        assert first is left and last is right and np.array_equal(block, blocks[j])
    packets = piece_results(compute, share)
    assert iter(packets) is packets and calls == []
    for j, packet in enumerate(packets):
        assert calls == list(range(j + 1))
        assert (packet.worker, packet.index) == (7, j)
        assert_field_array(F, packet.coeffs, coeffs[j])
        assert_field_array(F, packet.payload, F.matmul(F.matmul(left, blocks[j]), right))
    block, rest = PieceShare(7, coeffs, blocks, (left,)).operands(2)     # operand 0
    assert np.array_equal(block, blocks[2]) and rest is left


def square(F, X):
    return F.mul(X, X)


def test_lcc_pieces_need_row_linear():
    """pieces= on an LCC whose f is not declared row-linear is a ValueError that says why."""
    F = ffcode.GF(65521)
    X = [rand(F.p, (4, 3), j) for j in range(2)]
    code = LCC(F, 2, 1, square, 2, 6)
    with pytest.raises(ValueError, match="row-linear"):
        code.encode(X, seed=1, pieces=2)
    assert len(code.encode(X, seed=1)) == 6                 # without pieces it still encodes
    linear = LCC(F, 2, 1, times_W, 1, 4, row_linear=True)
    with pytest.raises(ValueError):                         # 0-d blocks have no rows
        linear.encode([np.uint32(1), np.uint32(2)], seed=1, pieces=2)


@pytest.mark.parametrize("pieces, error", [(0, ValueError), (-1, ValueError),
                                           (1.5, TypeError), (True, TypeError),
                                           ("2", TypeError)], ids=str)
@pytest.mark.parametrize("name", FULL_SPEED)
def test_encode_rejects_bad_pieces(name, pieces, error):
    """pieces must be an integer >= 1."""
    code, data, _ = full_speed_case(name, ffcode.GF(65521))
    with pytest.raises(error):
        code.encode(*data, pieces=pieces, seed=1)


def test_compute_pieces_rejects_other_shares():
    """A plain share (or anything but a PieceShare) is a TypeError; a PieceShare of a worker
    the code does not have is a ValueError."""
    F = ffcode.GF(65521)
    code, data, args = full_speed_case("MDS vector", F)
    plain = code.encode(*data)
    with pytest.raises(TypeError):
        list(code.compute_pieces(plain[0], *args))
    with pytest.raises(TypeError):
        list(code.compute_pieces(None, *args))
    share = code.encode(*data, pieces=2, seed=1)[0]
    for worker in (-1, code.n_workers):
        with pytest.raises(ValueError):
            list(code.compute_pieces(dataclasses.replace(share, worker=worker), *args))
