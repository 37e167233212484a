"""Unit tests of the runtime's wire format (ffcode.runtime.shared.wire) and of its fault plans and
link pacing (ffcode.runtime.shared.faults), without processes or sockets."""
import dataclasses
import json
import struct

import numpy as np
import pytest
import zmq

import ffcode
from ffcode.runtime.shared import wire
from ffcode.errors import ClusterError, ProtocolError
from ffcode.runtime.shared.faults import Faults, Link
from ffcode.runtime.shared.wire import Header, Kind

# The documented wire layout: magic, version, kind, session, epoch, worker, index, rows,
# sent, compute, itemsize, ndim, shape (4 dims), little-endian, no padding.
LAYOUT = struct.Struct("<2sBBQIiIQddBB4Q")


def raw_header(magic=b"FC", version=wire.VERSION, kind=Kind.PACKET, session=5, epoch=1, worker=0,
               index=0, rows=0, sent=0.0, compute=0.0, itemsize=4, ndim=1,
               dims=(3, 0, 0, 0)) -> bytes:
    return LAYOUT.pack(magic, version, int(kind), session, epoch, worker, index, rows, sent,
                       compute, itemsize, ndim, *dims)


# -- Header ------------------------------------------------------------------------------------

def test_header_round_trip_every_field():
    h = Header(Kind.PACKET, 2**64 - 1, 2**32 - 1, -7, 2**32 - 1, 2**64 - 1, 1.25e9, 0.5, 8,
               (3, 4, 5, 6))
    data = h.pack()
    assert isinstance(data, bytes) and len(data) == LAYOUT.size == 82
    back = Header.unpack(data)
    assert back.kind is Kind.PACKET
    assert (back.session, back.epoch, back.worker, back.index, back.rows) == \
        (2**64 - 1, 2**32 - 1, -7, 2**32 - 1, 2**64 - 1)
    assert (back.sent, back.compute, back.itemsize, back.shape) == (1.25e9, 0.5, 8,
                                                                     (3, 4, 5, 6))


@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3), (1, 2, 3), (4, 3, 2, 1)], ids=str)
def test_header_shape_round_trip(shape):
    h = Header(Kind.PACKET, 11, 3, 2, 1, 9, itemsize=4, shape=shape)
    data = h.pack()
    assert len(data) == 82                          # fixed size whatever the shape
    back = Header.unpack(data)
    assert back.shape == shape and type(back.shape) is tuple


def test_header_matches_documented_layout():
    h = Header(Kind.DONE, 123456789, 42, 3, 9, 17, 1.5, 2.5, 8, (5, 6))
    assert h.pack() == raw_header(kind=Kind.DONE, session=123456789, epoch=42, worker=3,
                                  index=9, rows=17, sent=1.5, compute=2.5, itemsize=8,
                                  ndim=2, dims=(5, 6, 0, 0))
    back = Header.unpack(raw_header(kind=Kind.STOPPED, session=1, epoch=2, worker=-1))
    assert (back.kind, back.session, back.epoch, back.worker) == (Kind.STOPPED, 1, 2, -1)


def test_header_defaults():
    back = Header.unpack(Header(Kind.HEARTBEAT, 7, 0).pack())
    assert (back.kind, back.session, back.epoch, back.worker, back.index, back.rows,
            back.sent, back.compute, back.itemsize, back.shape) == \
        (Kind.HEARTBEAT, 7, 0, -1, 0, 0, 0.0, 0.0, 0, ())


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=lambda t: t.__name__)
def test_header_unpacks_from_any_buffer(wrap):
    data = Header(Kind.HELLO, 1, 2, 3).pack()
    back = Header.unpack(wrap(data))
    assert (back.kind, back.session, back.epoch, back.worker) == (Kind.HELLO, 1, 2, 3)


def test_header_unpacks_from_a_zmq_frame():
    back = Header.unpack(zmq.Frame(Header(Kind.JOB, 9, 8, 1).pack()))
    assert (back.kind, back.session, back.epoch, back.worker) == (Kind.JOB, 9, 8, 1)


@pytest.mark.parametrize("size", [0, 1, 2, 81, 83, 164], ids=str)
def test_header_wrong_length(size):
    data = (Header(Kind.PACKET, 1, 1).pack() * 3)[:size]
    with pytest.raises(ProtocolError, match=f"header of {size} bytes, expected 82"):
        Header.unpack(data)


@pytest.mark.parametrize("magic", [b"XX", b"fc", b"CF", b"\0\0"], ids=repr)
def test_header_bad_magic(magic):
    with pytest.raises(ProtocolError, match="bad magic or version"):
        Header.unpack(raw_header(magic=magic))


@pytest.mark.parametrize("version", [0, 1, 8, 10, 255], ids=str)
def test_header_bad_version(version):
    with pytest.raises(ProtocolError, match="bad magic or version"):
        Header.unpack(raw_header(version=version))


@pytest.mark.parametrize("kind", [0, 10, 15, 22, 255], ids=str)
def test_header_unknown_kind(kind):
    with pytest.raises(ProtocolError, match=f"unknown message kind {kind}"):
        Header.unpack(raw_header(kind=kind))


@pytest.mark.parametrize("ndim", [5, 255], ids=str)
def test_header_too_many_dimensions(ndim):
    with pytest.raises(ProtocolError, match=f"{ndim} dimensions"):
        Header.unpack(raw_header(ndim=ndim))


def test_protocol_error_is_a_cluster_error():
    assert issubclass(ProtocolError, ClusterError)
    with pytest.raises(ClusterError):
        Header.unpack(b"")


def test_kinds_for_the_master():
    assert set(wire.TO_MASTER) == {Kind.HELLO, Kind.HEARTBEAT, Kind.PACKET, Kind.DONE,
                                   Kind.STOPPED, Kind.FAILED, Kind.ANSWER, Kind.TAKEN,
                                   Kind.POLL}
    assert not {Kind.JOB, Kind.STOP, Kind.SHUTDOWN, Kind.ACK} & set(wire.TO_MASTER)


# -- messages sent together --------------------------------------------------------------------

def _packet(index):
    return wire.packet(Header(Kind.PACKET, 7, 3, 1, index), np.ones(2, np.uint64),
                       np.full((2, 3), index, np.uint64))


def test_split_reads_messages_sent_together_in_order():
    failed = wire.control(Header(Kind.FAILED, 7, 3, 1), {"error": "x"})
    frames = [*_packet(0), *_packet(1), *wire.control(Header(Kind.DONE, 7, 3, 1)), *failed,
              Header(Kind.HEARTBEAT, 7, 0).pack()]
    messages = wire.split(frames)
    assert [(h.kind, h.index, len(data)) for h, data in messages] == [
        (Kind.PACKET, 0, 2), (Kind.PACKET, 1, 2), (Kind.DONE, 0, 1), (Kind.FAILED, 0, 1),
        (Kind.HEARTBEAT, 0, 0)]
    coeffs, payload = wire.read_packet(messages[1][0], messages[1][1], np.dtype(np.uint64))
    assert payload.tolist() == [[1, 1, 1]] * 2
    assert wire.read_control(messages[3][1])[0] == {"error": "x"}


@pytest.mark.parametrize("frames, why", [
    ([], "header of 0 bytes"),
    ([*_packet(0), b"stray"], "header of 5 bytes"),
    (_packet(0)[:2], "a PACKET with 1 data frames"),
    ([*_packet(0), Header(Kind.STOP, 7, 3, 1).pack()], "STOP is not for the master"),
    ([*wire.control(Header(Kind.DONE, 7, 3)), *wire.control(Header(Kind.HELLO, 0, 0), {})],
     "a HELLO with other messages"),
    (_packet(0) * (wire.MAX_TOGETHER + 1), "a message of 99 parts"),
], ids=["empty", "stray frame", "short packet", "STOP", "HELLO with others", "too many"])
def test_split_refuses_the_whole_message(frames, why):
    with pytest.raises(ProtocolError, match=why):
        wire.split(frames)


def test_split_takes_the_most_a_worker_sends():
    assert len(wire.split(_packet(0) * wire.MAX_TOGETHER)) == wire.MAX_TOGETHER


# -- packets -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint32, np.uint64], ids=lambda t: t.__name__)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (0, 2), (2, 1, 3)], ids=str)
def test_packet_round_trip(dtype, shape):
    rng = np.random.default_rng(1)
    coeffs = rng.integers(0, 1000, 3).astype(dtype)
    payload = rng.integers(0, 1000, shape).astype(dtype)
    header = Header(Kind.PACKET, 77, 4, 2, index=1, rows=9)
    frames = wire.packet(header, coeffs, payload)
    assert len(frames) == 3 and isinstance(frames[0], bytes)
    assert header.itemsize == np.dtype(dtype).itemsize and header.shape == shape
    back = Header.unpack(frames[0])
    assert (back.index, back.rows, back.itemsize, back.shape) == (1, 9, header.itemsize,
                                                                  shape)
    c, y = wire.read_packet(back, [bytes(f) for f in frames[1:]], np.dtype(dtype))
    assert c.dtype == dtype and y.dtype == dtype and y.shape == shape
    assert np.array_equal(c, coeffs) and np.array_equal(y, payload)
    assert not y.flags.writeable                    # views over the received frames


def test_packet_makes_a_strided_payload_contiguous():
    base = np.arange(60, dtype=np.uint32).reshape(6, 10)
    view = base[::2, 1::3]                          # (3, 3), not contiguous
    header = Header(Kind.PACKET, 1, 1, 0)
    frames = wire.packet(header, np.ones(2, np.uint32), view)
    assert header.shape == (3, 3)
    _, y = wire.read_packet(Header.unpack(frames[0]), frames[1:], np.dtype(np.uint32))
    assert np.array_equal(y, view)


def test_packet_keeps_a_0d_payload_0d():
    header = Header(Kind.PACKET, 1, 1, 0)
    frames = wire.packet(header, np.ones(1, np.uint64), np.array(9, np.uint64))
    assert header.shape == ()
    _, y = wire.read_packet(Header.unpack(frames[0]), frames[1:], np.dtype(np.uint64))
    assert y.shape == () and int(y) == 9


def test_packet_arrays_leave_the_header_to_be_packed_as_it_leaves():
    """packet_arrays gives the array frames (contiguous coeffs and payload) and describes
    the payload in the header without packing it: a send time set later (a paced packet
    leaves after it was made) is the one packed, every other field unchanged, and the
    frames are exactly wire.packet's."""
    header = Header(Kind.PACKET, 12, 3, 4, 5, 6, 1.0, 0.5)
    coeffs = np.arange(4, dtype=np.uint32)[::2]                 # not contiguous
    payload = np.arange(18, dtype=np.uint32).reshape(3, 6)[:, ::3]
    arrays = wire.packet_arrays(header, coeffs, payload)
    assert len(arrays) == 2 and all(a.flags.c_contiguous for a in arrays)
    assert np.array_equal(arrays[0], coeffs) and np.array_equal(arrays[1], payload)
    assert (header.itemsize, header.shape, header.sent) == (4, (3, 2), 1.0)
    header.sent = 1234.5
    back = Header.unpack(header.pack())
    assert (back.kind, back.session, back.epoch, back.worker, back.index, back.rows,
            back.sent, back.compute, back.itemsize, back.shape) == (
        Kind.PACKET, 12, 3, 4, 5, 6, 1234.5, 0.5, 4, (3, 2))
    frames = wire.packet(header, coeffs, payload)
    assert frames[0] == header.pack()
    assert all(np.array_equal(a, b) for a, b in zip(frames[1:], arrays))
    c, y = wire.read_packet(back, [bytes(a) for a in arrays], np.dtype(np.uint32))
    assert np.array_equal(c, coeffs) and np.array_equal(y, payload)


def _packet_frames(shape=(2, 3), dtype=np.uint32):
    header = Header(Kind.PACKET, 1, 1, 0)
    frames = wire.packet(header, np.arange(2, dtype=dtype), np.zeros(shape, dtype))
    return Header.unpack(frames[0]), [bytes(frames[1]), bytes(frames[2])]


@pytest.mark.parametrize("count", [0, 1, 3, 4], ids=str)
def test_read_packet_frame_count(count):
    header, frames = _packet_frames()
    frames = (frames + [b"", b""])[:count]
    with pytest.raises(ProtocolError, match=f"2 data frames, not {count}"):
        wire.read_packet(header, frames, np.dtype(np.uint32))


def test_read_packet_itemsize_mismatch():
    header, frames = _packet_frames(dtype=np.uint64)
    with pytest.raises(ProtocolError, match="8-byte elements, expected 4"):
        wire.read_packet(header, frames, np.dtype(np.uint32))
    header, frames = _packet_frames(dtype=np.uint32)
    with pytest.raises(ProtocolError, match="4-byte elements, expected 8"):
        wire.read_packet(header, frames, np.dtype(np.uint64))


@pytest.mark.parametrize("delta", [-24, -4, -1, 1, 4, 100], ids=str)
def test_read_packet_payload_size_mismatch(delta):
    header, (coeffs, payload) = _packet_frames()          # 2 x 3 uint32: 24 bytes
    payload = (payload + b"\x01" * max(delta, 0))[:24 + delta]
    assert len(payload) == 24 + delta
    with pytest.raises(ProtocolError, match=rf"payload frame of {24 + delta} bytes, header "
                                            rf"says shape \(2, 3\)"):
        wire.read_packet(header, [coeffs, payload], np.dtype(np.uint32))


def test_read_packet_header_shape_disagrees_with_payload():
    header, frames = _packet_frames((2, 3))
    header.shape = (3, 3)
    with pytest.raises(ProtocolError, match="payload frame of 24 bytes"):
        wire.read_packet(header, frames, np.dtype(np.uint32))
    header.shape = (6,)                             # same size, other shape: read as (6,)
    _, y = wire.read_packet(header, frames, np.dtype(np.uint32))
    assert y.shape == (6,)


@pytest.mark.parametrize("shape", [(2**32, 2**32), (2**63, 2), (2**64 - 1, 2**64 - 1),
                                   (2**16,) * 4], ids=str)
def test_read_packet_shape_whose_size_overflows_int64(shape):
    """A shape whose element count wraps around in int64 (to 0, or to the frame's size)
    is malformed, not an empty or mis-shaped payload."""
    header, (coeffs, _) = _packet_frames()
    header.shape = shape
    with pytest.raises(ProtocolError, match="payload frame of 0 bytes"):
        wire.read_packet(Header.unpack(header.pack()), [coeffs, b""], np.dtype(np.uint32))


@pytest.mark.parametrize("shape", [[-1], [2, -3], [1.5], ["2"], 4, None], ids=str)
def test_read_control_array_shape_not_natural(shape):
    with pytest.raises(ProtocolError, match="malformed control message"):
        wire.read_control([_meta({"arrays": [["<u4", shape]]}), b"\0" * 16])


@pytest.mark.parametrize("extra", [1, 2, 3, 5], ids=str)
def test_read_packet_coeffs_not_whole_elements(extra):
    header, (coeffs, payload) = _packet_frames()
    with pytest.raises(ProtocolError):
        wire.read_packet(header, [coeffs + b"\0" * extra, payload], np.dtype(np.uint32))


# -- answers: every packet of a task at once -----------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 5), (2, 1, 3)])
def test_answer_round_trip(dtype, shape):
    rng = np.random.default_rng(3)
    coeffs = [rng.integers(0, 7, 4).astype(dtype) for _ in range(3)]
    payloads = [rng.integers(0, 7, shape).astype(dtype) for _ in range(3)]
    header = Header(Kind.ANSWER, 7, 3, 1, rows=9)
    arrays = wire.answer_arrays(header, coeffs, payloads)
    back = Header.unpack(header.pack())
    assert back.shape == (3, *shape) and back.rows == 9
    c, y = wire.read_answer(back, [bytes(memoryview(a)) for a in arrays], np.dtype(dtype))
    assert np.array_equal(c, np.stack(coeffs)) and np.array_equal(y, np.stack(payloads))
    assert not c.flags.writeable and not y.flags.writeable


def test_answer_arrays_refuse_what_does_not_stack():
    one = np.ones(2, np.uint64)
    for coeffs, payloads in (([], []), ([one], [one, one]), ([one, one], [one, np.ones(3)]),
                             ([one, np.ones(3, np.uint64)], [one, one]),
                             ([one], [np.ones((1, 1, 1, 1), np.uint64)])):
        with pytest.raises(ValueError):
            wire.answer_arrays(Header(Kind.ANSWER, 7, 3), coeffs, payloads)


@pytest.mark.parametrize("shape,coefficients", [((), 4), ((0, 2), 0), ((2, 3), 3),
                                                ((2, 3), 0)])
def test_read_answer_refuses_what_is_not_an_answer(shape, coefficients):
    header = Header(Kind.ANSWER, 7, 3, itemsize=4, shape=shape)
    payload = np.zeros(shape, np.uint32)
    with pytest.raises(ProtocolError):
        wire.read_answer(header, [np.zeros(coefficients, np.uint32), payload],
                         np.dtype(np.uint32))


def test_split_reads_an_answer():
    header = Header(Kind.ANSWER, 7, 3, 1)
    arrays = wire.answer_arrays(header, [np.ones(2, np.uint64)], [np.ones(3, np.uint64)])
    (back, data), = wire.split([header.pack(), *arrays])
    assert back.kind == Kind.ANSWER and len(data) == 2


# -- control messages --------------------------------------------------------------------------

def test_control_round_trip():
    arrays = [np.arange(6, dtype=np.uint32).reshape(2, 3), np.zeros(0, np.uint64),
              np.array([-1, 5], np.int64), np.arange(24, dtype=np.uint64).reshape(2, 3, 4),
              np.array(7, np.uint32), np.arange(12, dtype=np.uint32).reshape(3, 4).T]
    meta = {"task": {"op": "matmul", "p": 65521}, "faults": {"delays": [0.5]}}
    frames = wire.control(Header(Kind.JOB, 3, 4, 1), meta, arrays)
    assert len(frames) == 2 + len(arrays)
    assert Header.unpack(frames[0]).kind is Kind.JOB
    back, got = wire.read_control(frames[1:])
    assert back == meta                             # "arrays" is taken out again
    assert len(got) == len(arrays)
    for a, b in zip(arrays, got):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    assert meta == {"task": {"op": "matmul", "p": 65521}, "faults": {"delays": [0.5]}}


def test_control_without_meta_or_arrays():
    frames = wire.control(Header(Kind.STOP, 1, 2))
    assert json.loads(frames[1]) == {"arrays": []}
    assert wire.read_control(frames[1:]) == ({}, [])
    assert wire.read_control([]) == ({}, [])


def _meta(obj) -> bytes:
    return json.dumps(obj).encode()


@pytest.mark.parametrize("frames", [
    [b"{not json"],
    [b"\xff\xfe\x00garbage"],
    [b""],
    [_meta([1, 2, 3])],
    [_meta("text")],
    [_meta(5)],
    [_meta(None)],
    [_meta({"no": "arrays"})],
    [_meta({"arrays": None})],
    [_meta({"arrays": 3})],
    [_meta({"arrays": [["<u4"]]}), b"\0" * 4],
], ids=["bad-json", "not-utf8", "empty", "list", "string", "number", "null", "no-arrays",
        "arrays-null", "arrays-int", "array-not-a-pair"])
def test_read_control_malformed(frames):
    with pytest.raises(ProtocolError, match="malformed control message"):
        wire.read_control(frames)


@pytest.mark.parametrize("described,count", [(0, 1), (1, 0), (1, 2), (2, 1), (3, 0)])
def test_read_control_array_count(described, count):
    meta = _meta({"arrays": [["<u4", [1]]] * described})
    with pytest.raises(ProtocolError, match="array count"):
        wire.read_control([meta] + [b"\0" * 4] * count)


@pytest.mark.parametrize("dtype", ["<f8", "<f4", "|b1", "|O", "<c16", "|V4", "<U1", "|S4",
                                   "<M8[s]", "not a dtype"])
def test_read_control_non_integer_dtype(dtype):
    with pytest.raises(ProtocolError, match="malformed control message"):
        wire.read_control([_meta({"arrays": [[dtype, [1]]]}), b"\0" * 16])


@pytest.mark.parametrize("shape,size", [([2, 3], 20), ([2, 3], 28), ([5], 0),
                                        ([1, 1], 3)], ids=str)
def test_read_control_array_size_mismatch(shape, size):
    with pytest.raises(ProtocolError, match="malformed control message"):
        wire.read_control([_meta({"arrays": [["<u4", shape]]}), b"\0" * size])


def test_read_control_oversized_meta():
    big = _meta({"arrays": [], "pad": "x" * wire.MAX_META_BYTES})
    with pytest.raises(ProtocolError, match="oversized meta frame"):
        wire.read_control([big])


@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"a":' * 50_000, b"[" * 2000 + b"]" * 2000],
                         ids=["open-arrays", "open-objects", "closed-arrays"])
def test_read_control_deeply_nested_json(raw):
    with pytest.raises(ProtocolError, match="malformed control message"):
        wire.read_control([raw])


# -- Faults.for_worker -------------------------------------------------------------------------

def test_for_worker_without_faults():
    plan = Faults().for_worker(3, 4).to_meta()
    assert plan == {"slowdown": 1.0, "delays": [0.0] * 4, "link_rate": None,
                    "crash_after": None, "hang_after": None, "corrupt": None,
                    "lossy": False}
    json.dumps(plan)


def test_for_worker_names_only_its_own_faults():
    faults = Faults(slowdown={1: 3}, link_rate={2: 1000}, crash_after={0: 2},
                    hang_after={1: 0})
    assert faults.for_worker(0, 2).to_meta() == {"slowdown": 1.0, "delays": [0.0, 0.0],
                                       "link_rate": None, "crash_after": 2,
                                       "hang_after": None, "corrupt": None, "lossy": False}
    assert faults.for_worker(1, 2).to_meta() == {"slowdown": 3.0, "delays": [0.0, 0.0],
                                       "link_rate": None, "crash_after": None,
                                       "hang_after": 0, "corrupt": None, "lossy": False}
    assert faults.for_worker(2, 2).to_meta() == {"slowdown": 1.0, "delays": [0.0, 0.0],
                                       "link_rate": 1000.0, "crash_after": None,
                                       "hang_after": None, "corrupt": None, "lossy": False}
    assert faults.for_worker(5, 1).to_meta()["slowdown"] == 1.0
    json.dumps(faults.for_worker(1, 2).to_meta())


@pytest.mark.parametrize("pieces", [1, 2, 7, 32], ids=str)
def test_for_worker_delays_have_one_per_piece(pieces):
    faults = Faults(delay=(0.25, 0.5), seed=4)
    for worker in range(3):
        delays = faults.for_worker(worker, pieces).to_meta()["delays"]
        assert len(delays) == pieces
        assert all(type(d) is float and d >= 0.25 for d in delays)


def test_for_worker_is_deterministic_per_seed_and_worker():
    a = Faults(delay=(0.1, 0.5), seed=7)
    b = Faults(delay=(0.1, 0.5), seed=7)
    for worker in range(4):
        first = a.for_worker(worker, 6).to_meta()["delays"]
        assert a.for_worker(worker, 6).to_meta()["delays"] == first
        assert b.for_worker(worker, 6).to_meta()["delays"] == first
        # the shifted-exponential model, worker w drawing from the stream (seed, w)
        expected = 0.1 + np.random.default_rng([7, worker]).exponential(0.5, 6)
        assert first == pytest.approx(expected.tolist(), rel=0, abs=1e-12)
    per_worker = [tuple(a.for_worker(w, 6).to_meta()["delays"]) for w in range(4)]
    assert len(set(per_worker)) == 4                # every worker its own stream
    other = Faults(delay=(0.1, 0.5), seed=8).for_worker(0, 6).to_meta()["delays"]
    assert other != per_worker[0]


def test_for_worker_delay_without_randomness():
    assert Faults(delay=(0.3, 0)).for_worker(2, 3).to_meta()["delays"] == [0.3, 0.3, 0.3]
    assert Faults(delay=(0, 0)).for_worker(0, 2).to_meta()["delays"] == [0.0, 0.0]


def test_faults_normalises_values():
    faults = Faults(slowdown={np.int64(1): np.int32(3)}, link_rate={0: 10},
                    crash_after={np.uint8(2): np.int64(1)}, delay=[1, 2], seed=np.int64(5))
    assert faults.slowdown == {1: 3.0} and type(faults.slowdown[1]) is float
    assert type(next(iter(faults.slowdown))) is int
    assert faults.link_rate == {0: 10.0}
    assert faults.crash_after == {2: 1} and type(faults.crash_after[2]) is int
    assert faults.delay == (1.0, 2.0) and faults.seed == 5 and type(faults.seed) is int


def test_faults_are_frozen():
    faults = Faults()
    with pytest.raises(dataclasses.FrozenInstanceError):
        faults.seed = 1


def test_check_workers():
    faults = Faults(slowdown={3: 2}, hang_after={1: 0, 4: 1, 6: 0})
    faults.check_workers(7)
    with pytest.raises(ValueError, match=r"'hang_after' names workers \[4, 6\], but the job "
                                         r"has workers 0\.\.3"):
        Faults(hang_after={1: 0, 4: 1, 6: 0}).check_workers(4)
    with pytest.raises(ValueError, match=r"'slowdown' names workers \[3\]"):
        faults.check_workers(3)


def test_faults_reexported():
    assert ffcode.Faults is Faults


# -- Link pacing -------------------------------------------------------------------------------

@pytest.mark.parametrize("size,rate", [(100, 1000.0), (4194, 20970.0), (1, 3.0)])
def test_link_back_to_back_messages_leave_at_k_size_over_rate(size, rate):
    link = Link(rate)
    for k in range(1, 9):
        due = link.due(size, 0.0)
        assert due == pytest.approx(k * size / rate, rel=1e-12)
        link.sent(due)


def test_link_due_is_a_query_until_sent():
    link = Link(1000.0)
    assert link.due(500, 2.0) == pytest.approx(2.5)
    assert link.due(500, 2.0) == pytest.approx(2.5)     # nothing sent yet
    link.sent(2.5)
    assert link.due(500, 2.0) == pytest.approx(3.0)


def test_link_has_no_burst_credit():
    link = Link(100.0)
    link.sent(link.due(50, 0.0))                        # leaves at 0.5
    assert link.due(50, 10.0) == pytest.approx(10.5)    # idle since: no credit saved up
    link.sent(10.5)
    assert link.due(200, 10.4) == pytest.approx(12.5)   # busy until 10.5, then 2 s
    assert link.due(200, 10.6) == pytest.approx(12.6)   # free since 10.5: from now


def test_link_mixed_sizes():
    link, now, expected = Link(1000.0), 0.0, 0.0
    for size in (10, 250, 0, 1000, 40):
        expected += size / 1000.0
        due = link.due(size, now)
        assert due == pytest.approx(expected)
        link.sent(due)


def test_link_uncapped():
    link = Link(None)
    assert link.due(10**9, 5.0) == 5.0
    link.sent(7.0)
    assert link.due(10**9, 6.0) == 6.0 and link.free_at is None


def test_link_from_a_fault_plan():
    plan = Faults(link_rate={0: 2000}).for_worker(0, 3).to_meta()
    link = Link(plan["link_rate"])
    dues = []
    for _ in range(3):
        dues.append(link.due(400, 1.0))
        link.sent(dues[-1])
    assert dues == pytest.approx([1.2, 1.4, 1.6])


def test_per_worker_pauses():
    """delay may map workers to their own (shift, mean): others pause nothing; workers
    beyond the job and bad pairs are refused."""
    faults = Faults(delay={1: (0.5, 0.0), 3: (0.1, 0.2)}, seed=2)
    assert faults.for_worker(0, 3).to_meta()["delays"] == [0.0, 0.0, 0.0]
    assert faults.for_worker(1, 3).to_meta()["delays"] == [0.5, 0.5, 0.5]
    drawn = faults.for_worker(3, 3).to_meta()["delays"]
    assert all(d >= 0.1 for d in drawn) and drawn == faults.for_worker(3, 3).to_meta()["delays"]
    faults.check_workers(4)
    with pytest.raises(ValueError, match="'delay' names workers \\[3\\]"):
        faults.check_workers(3)
    for bad, error in [({0: 0.5}, TypeError), ({0: (-1, 0)}, ValueError),
                       ({-1: (0, 0)}, ValueError), ({"a": (0, 0)}, TypeError)]:
        with pytest.raises(error):
            Faults(delay=bad)
