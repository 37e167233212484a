"""The wire format: a fixed struct header frame, then raw array frames sent zero-copy.

Every message carries the master's session id and the job's epoch, so that packets from
another master (foreign) or from an earlier job (stale) are recognised and dropped. Control
messages with arrays (a job's share) add one JSON frame describing the job and its arrays.
No pickle: a malformed message can cost a parse, never code execution.

A header makes the trip through its fixed struct, and a control message carries its meta
as one JSON frame beside raw array frames:

>>> import numpy as np
>>> header = Header(Kind.JOB, session=7, epoch=3)
>>> back = Header.unpack(header.pack())
>>> back.kind, back.session, back.epoch
(<Kind.JOB: 16>, 7, 3)
>>> frames = control(header, {"job": 1}, [np.arange(3, dtype=np.uint64)])
>>> meta, arrays = read_control(frames[1:])
>>> meta, arrays[0].tolist()
({'job': 1}, [0, 1, 2])
>>> Header.unpack(b"XX" + header.pack()[2:])
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: not an ffcode message (bad magic or version)
"""
import json
import math
import struct
from enum import IntEnum

import numpy as np

from ffcode.errors import ProtocolError

MAGIC, VERSION = b"FC", 9        # 9: a task's repair, a shuffle's lossy peer links
MAX_DIMS = 4
MAX_META_BYTES = 1 << 20


class Kind(IntEnum):
    HELLO = 1           # worker -> master: I am here (meta: slot, pid, host)
    HEARTBEAT = 2       # worker -> master: still alive
    PACKET = 3          # worker -> master: one packet (coeffs frame, payload frame)
    DONE = 4            # worker -> master: sent every packet of the job
    STOPPED = 5         # worker -> master: acknowledges STOP
    FAILED = 6          # worker -> master: the computation raised (meta: error)
    ANSWER = 7          # worker -> master: every packet of its task at once, then done
    TAKEN = 8           # worker -> master: a task on a lossy link arrived (the master stops
    #                     sending it again)
    POLL = 9            # worker -> master, on a lossy link: acknowledge now (index: its number)
    JOB = 16            # master -> worker: a task (meta: task.Task; arrays: shares, arguments)
    STOP = 17           # master -> worker: the job is decoded, stop now
    SHUTDOWN = 18       # master -> worker: exit
    LOAD = 19           # master -> worker: hold shares (meta: task.Load; arrays)
    UNLOAD = 20         # master -> worker: drop held shares (meta: task.Unload)
    ACK = 21            # master -> worker, on a lossy link: what arrived of its job so far
    #                     (meta: ranks of its shares, ended; array: a bitmap of indices)


_KINDS = {int(kind): kind for kind in Kind}     # a header's number -> its kind, at once

# A worker's messages to the master, by the data frames after their header. A worker sends
# the messages it has ready together, up to MAX_TOGETHER in one multipart message.
TO_MASTER = {Kind.HELLO: 1, Kind.HEARTBEAT: 0, Kind.PACKET: 2, Kind.DONE: 1, Kind.STOPPED: 1,
             Kind.FAILED: 1, Kind.ANSWER: 2, Kind.TAKEN: 0, Kind.POLL: 0}
MAX_TOGETHER = 32
MAX_PARTS = MAX_TOGETHER * 3        # frames of the longest multipart message a worker sends

# magic, version, kind, session, epoch, worker, index, local result rows, sent (worker's
# wall clock), compute seconds, payload itemsize, payload ndim, payload shape
_HEADER = struct.Struct(f"<2sBBQIiIQddBB{MAX_DIMS}Q")


class Header:
    """One message's header; ``shape`` and ``itemsize`` describe a PACKET's payload."""
    __slots__ = ("kind", "session", "epoch", "worker", "index", "rows", "sent", "compute",
                 "itemsize", "shape")

    def __init__(self, kind, session, epoch, worker=-1, index=0, rows=0, sent=0.0,
                 compute=0.0, itemsize=0, shape=()):
        self.kind, self.session, self.epoch = kind, session, epoch
        self.worker, self.index, self.rows = worker, index, rows
        self.sent, self.compute = sent, compute
        self.itemsize, self.shape = itemsize, tuple(shape)

    def pack(self) -> bytes:
        dims = tuple(self.shape) + (0,) * (MAX_DIMS - len(self.shape))
        return _HEADER.pack(MAGIC, VERSION, self.kind, self.session, self.epoch, self.worker,
                            self.index, self.rows, self.sent, self.compute, self.itemsize,
                            len(self.shape), *dims)

    @classmethod
    def unpack(cls, frame) -> "Header":
        data = memoryview(frame)
        if data.nbytes != _HEADER.size:
            raise ProtocolError(f"header of {data.nbytes} bytes, expected {_HEADER.size}")
        (magic, version, kind, session, epoch, worker, index, rows, sent, compute, itemsize,
         ndim, *dims) = _HEADER.unpack(data)
        if magic != MAGIC or version != VERSION:
            raise ProtocolError("not an ffcode message (bad magic or version)")
        member = _KINDS.get(kind)
        if member is None or ndim > MAX_DIMS:
            raise ProtocolError(f"unknown message kind {kind} or {ndim} dimensions")
        return cls(member, session, epoch, worker, index, rows, sent, compute, itemsize,
                   dims[:ndim])


def split(frames: list) -> list:
    """The (header, data frames) of the messages a worker's multipart message carries one
    after another. ProtocolError if any is malformed or not for the master, or a HELLO is
    not alone: the whole multipart message is then dropped.

    >>> done = control(Header(Kind.DONE, 7, 3))
    >>> [(h.kind.name, len(data)) for h, data in split(done + done)]
    [('DONE', 1), ('DONE', 1)]
    >>> split(done + [b"stray"])
    Traceback (most recent call last):
    ...
    ffcode.errors.ProtocolError: header of 5 bytes, expected 82
    """
    if len(frames) > MAX_PARTS:
        raise ProtocolError(f"a message of {len(frames)} parts")
    messages: list = []
    at = 0
    while at < len(frames) or not messages:
        header = Header.unpack(frames[at] if at < len(frames) else b"")
        count = TO_MASTER.get(header.kind)
        if count is None:
            raise ProtocolError(f"{header.kind.name} is not for the master")
        data = frames[at + 1:at + 1 + count]
        if len(data) != count:
            raise ProtocolError(f"a {header.kind.name} with {len(data)} data frames")
        messages.append((header, data))
        at += 1 + count
    if len(messages) > 1 and any(h.kind == Kind.HELLO for h, _ in messages):
        raise ProtocolError("a HELLO with other messages")
    return messages


def _contiguous(a) -> np.ndarray:
    """a, C-contiguous, with its shape (np.ascontiguousarray would make a 0-d array 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


def packet(header: Header, coeffs: np.ndarray, payload: np.ndarray) -> list:
    """A PACKET message; the arrays travel as raw zero-copy frames."""
    arrays = packet_arrays(header, coeffs, payload)
    return [header.pack(), *arrays]


def packet_arrays(header: Header, coeffs: np.ndarray, payload: np.ndarray) -> list:
    """The array frames of a PACKET, its header describing the payload (and packed when
    the packet leaves, with the time it left: a paced packet leaves after it was made)."""
    payload = _contiguous(payload)
    header.itemsize, header.shape = payload.dtype.itemsize, payload.shape
    return [_contiguous(coeffs), payload]


def read_packet(header: Header, frames: list, dtype: np.dtype):
    """(coeffs, payload) of a PACKET as read-only arrays over the received frames."""
    if len(frames) != 2:
        raise ProtocolError(f"a packet has 2 data frames, not {len(frames)}")
    if header.itemsize != dtype.itemsize:
        raise ProtocolError(f"payload of {header.itemsize}-byte elements, expected "
                            f"{dtype.itemsize}")
    views = (memoryview(f.buffer if hasattr(f, "buffer") else f) for f in frames)
    coeff_bytes, payload_bytes = views
    size = math.prod(header.shape) * dtype.itemsize      # Python ints: no overflow
    if payload_bytes.nbytes != size or coeff_bytes.nbytes % dtype.itemsize:
        raise ProtocolError(f"payload frame of {payload_bytes.nbytes} bytes, header says "
                            f"shape {header.shape}")
    coeffs, payload = np.frombuffer(coeff_bytes, dtype), np.frombuffer(payload_bytes, dtype)
    coeffs.flags.writeable = payload.flags.writeable = False    # views of zmq's buffers
    return coeffs, payload.reshape(header.shape)


def answer_arrays(header: Header, coeffs: list, payloads: list) -> list:
    """The array frames of an ANSWER: its packets' coefficients, one row each, and their
    payloads stacked (one shape), the header describing the stack; ValueError when the
    packets differ in coefficient count or payload shape, or the stack has more than
    MAX_DIMS dimensions (then they go one by one).

    >>> header = Header(Kind.ANSWER, 7, 3, 1)
    >>> frames = answer_arrays(header, [np.ones(2, np.uint64)] * 3, [np.zeros((2, 5))] * 3)
    >>> header.shape, frames[0].shape
    ((3, 2, 5), (3, 2))
    >>> [a.tolist() for a in read_answer(header, frames, np.dtype(np.uint64))[0]][0]
    [1, 1]
    """
    if not coeffs or len(coeffs) != len(payloads):
        raise ValueError("an answer needs one payload per coefficient vector, and some")
    if len({np.shape(c) for c in coeffs}) > 1 or len({np.shape(p) for p in payloads}) > 1:
        raise ValueError("an answer's packets must have one coefficient count and one "
                         "payload shape")
    if np.ndim(payloads[0]) >= MAX_DIMS:
        raise ValueError(f"an answer's payloads have at most {MAX_DIMS - 1} dimensions")
    return packet_arrays(header, np.stack(coeffs), np.stack(payloads))


def read_answer(header: Header, frames: list, dtype: np.dtype):
    """(coeffs, payloads) of an ANSWER: a row of coefficients and a payload per packet, as
    read-only arrays over the received frames; ProtocolError if they do not fit."""
    if not header.shape or header.shape[0] < 1:
        raise ProtocolError(f"an answer of shape {header.shape}: no packets")
    coeffs, payloads = read_packet(header, frames, dtype)
    if coeffs.size % header.shape[0] or not coeffs.size:
        raise ProtocolError(f"{coeffs.size} coefficients for {header.shape[0]} packets")
    return coeffs.reshape(header.shape[0], -1), payloads


EMPTY_META = json.dumps({"arrays": []}).encode()     # a control message with nothing to say


def control(header: Header, meta=None, arrays=()) -> list:
    """A message with a JSON meta frame and array frames (their dtypes and shapes in meta)."""
    arrays = contiguous(arrays)
    return [header.pack(), meta_frame(meta, arrays)] + arrays


def contiguous(arrays) -> list:
    """The arrays as a message's frames carry them: C-contiguous, with their shapes."""
    return [_contiguous(a) for a in arrays]


def meta_frame(meta, arrays: list) -> bytes:
    """The JSON meta frame of a control message: ``meta`` and the arrays' dtypes and
    shapes."""
    described = [[a.dtype.str, list(a.shape)] for a in arrays]
    return json.dumps(dict(meta or {}, arrays=described)).encode()


def read_control(frames: list) -> tuple[dict, list]:
    """(meta, arrays) of a control message; the arrays are read-only views of the frames."""
    if not frames:
        return {}, []
    meta, layout = read_meta(raw(frames[0]))
    return meta, read_arrays(layout, frames[1:])


def raw(frame) -> bytes:
    """A frame's bytes (a zmq frame's, or any buffer's)."""
    return frame.bytes if hasattr(frame, "bytes") else bytes(frame)


def read_meta(raw: bytes) -> tuple[dict, tuple]:
    """(meta, layout) of a control message's meta frame: the layout is each array's
    (dtype, shape), checked; ProtocolError if the frame is malformed."""
    if len(raw) > MAX_META_BYTES:
        raise ProtocolError("oversized meta frame")
    try:
        meta = json.loads(raw)
        if not isinstance(meta, dict):
            raise ValueError("meta is not an object")
        described = meta.pop("arrays")
        if not isinstance(described, list):
            raise ValueError("array count")
        layout = []
        for dtype, shape in described:
            dtype = np.dtype(dtype)
            if dtype.kind not in "iu":
                raise ValueError("non-integer array")
            if not isinstance(shape, list) or not all(type(s) is int and s >= 0
                                                      for s in shape):
                raise ValueError(f"array shape {shape!r}")
            layout.append((dtype, tuple(shape)))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        raise ProtocolError(f"malformed control message: {e}") from None
    return meta, tuple(layout)


def read_arrays(layout: tuple, frames: list) -> list:
    """The arrays of a control message's frames after its meta, as its ``layout`` says
    (read_meta): read-only views of the frames; ProtocolError if they do not fit it."""
    if len(layout) != len(frames):
        raise ProtocolError("malformed control message: array count")
    try:
        return [np.frombuffer(memoryview(frame.buffer if hasattr(frame, "buffer") else
                                         frame), dtype).reshape(shape)
                for (dtype, shape), frame in zip(layout, frames)]
    except (ValueError, TypeError) as e:
        raise ProtocolError(f"malformed control message: {e}") from None
