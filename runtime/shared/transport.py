"""The master's socket and nothing else: it binds (ipc, or tcp with CURVE), lets the gate
(runtime/shared/gate.py) admit connections, reads whole messages checked for shape, kind and
session, and sends without ever blocking for long. What the messages mean is the roster's
and the job runs' business; the transport only moves bytes and counts what it drops.

Where a master may listen: tcp only with CURVE or insecure=True, ipc always; and how
workers elsewhere dial a wildcard bind:

>>> check_endpoint("tcp://127.0.0.1:5555", secure=False)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Refusing to listen on loopback, where any process of this host could join ...
>>> check_endpoint("tcp://127.0.0.1:5555", secure=True)
>>> check_endpoint("ipc:///tmp/ffcode-example/master", secure=False)
>>> reachable("tcp://0.0.0.0:5555", "10.0.0.2")
'tcp://10.0.0.2:5555'
"""
from __future__ import annotations

import logging
import math
import os
import secrets
import time
from collections import Counter
from typing import Iterator, NamedTuple, Optional, cast
from urllib.parse import urlsplit

import zmq

from ffcode.errors import ClusterError, InvalidParameterError, ProtocolError
from ffcode.runtime.shared import keys, wire
from ffcode.runtime.shared.gate import Gate, Peer, peer
from ffcode.runtime.shared.wire import Header, Kind

CURVE_IO_THREADS = 2        # decryption is per connection: spread it over two threads
RCVHWM = 8                  # packets queued per worker inside zmq at the master
COPY_BELOW = 256 << 10      # bytes: smaller frames are copied, cheaper than zero-copy's
                            # hand-back through pyzmq's garbage-collector thread
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
POLLIN, POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)     # plain ints: a flag's & costs 20x

log = logging.getLogger(__name__)


class Message(NamedTuple):
    """A message from a peer: its routing id, its header (None: malformed, already
    counted), its data frames, and for a HELLO what its connection proves (else None)."""
    ident: bytes
    header: Optional[Header]
    frames: list
    peer: Optional[Peer] = None


class Transport:
    """A ROUTER socket behind a gate. key/clients: the master's CURVE secret key file and
    the directory of the admitted workers' public keys; session_keys: a fresh CURVE pair in
    memory instead (``public_key``; the gate admits keys as they are announced);
    insecure: admit plaintext tcp peers and ipc peers of any user."""

    def __init__(self, *, key: str | None = None, clients: str | None = None,
                 session_keys: bool = False, insecure: bool = False,
                 max_message: int = 256 << 20) -> None:
        self.session = secrets.randbits(63) | 1
        curve = key is not None or session_keys
        self.context = zmq.Context(io_threads=CURVE_IO_THREADS if curve else 1)
        self.router = self.context.socket(zmq.ROUTER)
        self.router.router_mandatory = 1
        self.router.linger = 0
        self.router.rcvhwm = RCVHWM
        self.router.maxmsgsize = max_message            # also bounds a handshake's frames
        self.router.copy_threshold = COPY_BELOW
        self.poller = zmq.Poller()                      # made once: a poll per receive
        self.poller.register(self.router, zmq.POLLIN)
        self._woken, self._waker = os.pipe()            # wake() ends a receive's wait
        os.set_blocking(self._woken, False)
        os.set_blocking(self._waker, False)
        self.poller.register(self._woken, zmq.POLLIN)
        self.public_key: Optional[bytes] = None
        admitted: frozenset = frozenset()
        if key is not None:
            assert clients is not None, "check_settings pairs key with clients"
            public, secret = keys.load_secret(key)
            admitted = keys.load_clients(clients)
            keys.server(self.router, public, secret)
        elif session_keys:
            self.public_key, secret = zmq.curve_keypair()
            keys.server(self.router, self.public_key, secret)
        self.gate = Gate(self.context, keys=admitted, insecure=insecure)
        self.endpoint: Optional[str] = None
        # Messages dropped since the last report (which takes them), and in all.
        self.rejected: Counter[str] = Counter()
        self.stale = 0
        self.rejected_total: Counter[str] = Counter()
        self._refused = 0                   # the gate's refusals counted so far
        self.linger = 0
        self.closing = False                # set from any thread: receiving then raises

    def bind(self, endpoint: str, plaintext: bool = False) -> str:
        """Listen at endpoint (plaintext: without CURVE, for a private ipc socket beside a
        CURVE tcp one; options apply per bind); the first bind is ``endpoint``."""
        if plaintext:
            self.router.curve_server = False
        try:
            Gate.bind(self.router, endpoint)
        except zmq.ZMQError as e:
            raise ClusterError(f"Cannot listen on {endpoint}: {e}") from None
        bound = self.router.get_string(zmq.LAST_ENDPOINT)
        self.endpoint = self.endpoint or bound
        log.info("master listening on %s", bound)
        return bound

    def receive(self, timeout: float, until: float = math.inf) -> Iterator[Message]:
        """Wait up to timeout seconds (or until ``wake``), then take the waiting messages
        one at a time, a multipart message's in a row, until the clock reads ``until``
        (monotonic; it is looked at between multipart messages). ClusterError once the
        cluster is closing (close() from another thread ends the jobs this way)."""
        self._check_open()
        refused = self.gate.refused         # connections the gate turned away meanwhile
        if refused > self._refused:
            self.reject("refused", refused - self._refused)
            self._refused = refused
        events = self.poller.poll(milliseconds(timeout))
        if not events:
            return
        if any(socket == self._woken for socket, _ in events):
            try:
                os.read(self._woken, 4096)
            except BlockingIOError:
                pass
        while ready(self.router):
            self._check_open()
            frames = _whole_message(self.router)
            ident = frames[0].bytes
            try:
                messages = wire.split(frames[1:])
            except ProtocolError:
                self.reject("malformed")
                yield Message(ident, None, [])
                continue
            for header, data in messages:
                hello = header.kind == Kind.HELLO
                yield Message(ident, header, data, peer(frames[1]) if hello else None)
            if time.monotonic() > until:
                return

    def wake(self) -> None:
        """End the wait of a receive under way, from any thread."""
        try:
            os.write(self._waker, b"!")
        except (BlockingIOError, OSError):     # awake already (a full pipe), or closed
            pass

    def _check_open(self) -> None:
        if self.closing:
            raise ClusterError("The cluster was closed during the job.")

    def send(self, ident: bytes, frames: list, patience: float = 2.0) -> Optional[str]:
        """Send to one peer without blocking longer than patience seconds: None once sent,
        else why not (no room: it is not reading; unreachable: it disconnected)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                send_now(self.router, [ident, *frames])
                return None
            except zmq.Again:
                if time.monotonic() > deadline:
                    return f"not taking messages for {patience:g} s"
                time.sleep(0.001)
            except zmq.ZMQError as e:       # EHOSTUNREACH: it disconnected
                return f"unreachable ({e})"

    def reject(self, reason: str, count: int = 1) -> None:
        """Count dropped messages by reason ("stale": of an earlier job; "refused": a
        connection the gate turned away) in the next report and in ``rejected_total``."""
        if reason == "stale":
            self.stale += count
        else:
            self.rejected[reason] += count
        self.rejected_total[reason] += count

    def take_rejected(self) -> tuple:
        """(rejected by reason, stale) since the last call, for a job's report."""
        taken = dict(self.rejected), self.stale
        self.rejected, self.stale = Counter(), 0
        return taken

    def close(self) -> None:
        self.gate.stop()                    # before the context ends under its thread
        self.router.close(linger=self.linger)
        self.context.term()
        waker, self._waker = self._waker, -1      # a late wake() writes nowhere
        os.close(waker)
        os.close(self._woken)


class Dial(NamedTuple):
    """An outgoing connection: its DEALER socket and a monitor socket that reports the
    handshake (succeeded, refused by the peer's gate) and disconnects."""
    socket: zmq.Socket
    monitor: zmq.Socket


HANDSHAKE_REFUSED = (zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL |
                     zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)


def dial(context: zmq.Context, endpoint: str, curve: Optional[tuple] = None,
         hwm: int = 4, copy_threshold: int = COPY_BELOW) -> Dial:
    """Connect a DEALER to a peer's ROUTER (the master, or any peer listening through a
    Transport): curve is (own public key, own secret key, the peer's public key) for a
    CURVE peer, None for plaintext. Nothing is left open if the keys or the endpoint are
    bad (ValueError, zmq.ZMQError)."""
    socket = context.socket(zmq.DEALER)
    socket.linger = 1000
    socket.sndhwm = socket.rcvhwm = hwm
    socket.copy_threshold = copy_threshold
    try:
        if curve is not None:
            keys.client(socket, *curve)
        monitor = socket.get_monitor_socket(
            zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | HANDSHAKE_REFUSED)
        socket.connect(endpoint)
    except (ValueError, zmq.ZMQError):
        socket.close(linger=0)
        raise
    return Dial(socket, monitor)


def milliseconds(seconds: float) -> int:
    """A poll's timeout in whole milliseconds, rounded up: a wait under 1 ms rounded down to
    0 would return at once, again and again, until it is over.

    >>> milliseconds(0.0), milliseconds(0.0004), milliseconds(0.1), milliseconds(-1.0)
    (0, 1, 100, 0)
    """
    return math.ceil(max(seconds, 0.0) * 1000)


def ready(socket: zmq.Socket) -> bool:
    """Whether a message waits on the socket: its EVENTS option, an int (pyzmq types every
    option int | bytes), read without the poll system call that ``poll(0)`` makes."""
    return bool(cast(int, socket.get(zmq.EVENTS)) & POLLIN)


def send_now(socket: zmq.Socket, frames: list) -> None:
    """Send a multipart message without waiting (zmq.Again when there is no room: then
    nothing was sent; zmq takes a message's parts whole or not at all), zero-copy above
    the socket's copy_threshold; as ``send_multipart`` does, with the flags as plain
    numbers (its flags are enums, and combining them costs more than sending a small
    frame)."""
    last = len(frames) - 1
    for at, frame in enumerate(frames):
        socket.send(frame, _NOW if at == last else _NOW_MORE, copy=False)


_NOW, _NOW_MORE = int(zmq.NOBLOCK), int(zmq.NOBLOCK | zmq.SNDMORE)


def _whole_message(socket) -> list:
    """The frames of the next message (its routing id first), zero-copy, at most one more
    than any worker sends (so that it reads as malformed); reads each frame's more-flag
    instead of asking the socket (recv_multipart's getsockopt per frame)."""
    frame = socket.recv(copy=False)
    frames = [frame]
    while frame.more:
        frame = socket.recv(copy=False)
        if len(frames) <= wire.MAX_PARTS + 1:   # the parts past one too many are dropped
            frames.append(frame)
    return frames


def reachable(endpoint: str, host: str) -> str:
    """The endpoint as workers on other nodes dial it: a wildcard host becomes this node's
    address."""
    parts = urlsplit(endpoint)
    if parts.hostname in ("0.0.0.0", "::", "*"):
        return f"tcp://{host}:{parts.port}"
    return endpoint


def check_endpoint(endpoint: str, secure: bool) -> None:
    """A tcp or ipc endpoint, and tcp only with CURVE or insecure=True (secure)."""
    if not isinstance(endpoint, str):
        raise InvalidParameterError(
            f"Argument 'endpoint' must be a string, not {type(endpoint).__name__}.")
    parts = urlsplit(endpoint)
    host, _, port = parts.netloc.rpartition(":")
    if not (parts.scheme == "tcp" and host and (port == "*" or port.isdigit() and
                                                int(port) < 65536)
            or parts.scheme == "ipc" and len(endpoint) > len("ipc://")):
        raise InvalidParameterError(
            f"Argument 'endpoint' must look like 'tcp://HOST:PORT' (PORT a "
            f"number below 65536, or * for any free one) or 'ipc://PATH', not "
            f"{endpoint!r}.")
    if parts.scheme == "tcp" and not secure:
        where = "on loopback, where any process of this host" if host in LOOPBACK else \
            f"on {host!r}, where anyone who reaches it"
        raise InvalidParameterError(
            f"Refusing to listen {where} could join as a worker and spoil the "
            f"output: pass key= and clients= (CURVE, see 'ffcode keys'), or "
            f"insecure=True on a trusted network.")
