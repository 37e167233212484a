"""Who may connect to the master, decided from what the connection itself proves.

ZeroMQ asks a ZAP handler (its authentication hook, ``inproc://zeromq.zap.01``) about every
new connection before it takes any message from it. The gate answers there, in a thread of
its own, from the connection's credentials, never from anything a peer says about itself:

- a CURVE peer is admitted when its public key is one of ``keys`` (a set of z85 keys,
  replaced whole, never changed in place, so the thread reads it without a lock);
- a plaintext peer on an ipc socket shows the kernel's credentials (SO_PEERCRED: its uid
  and pid, taken when it connected): it is admitted when its uid is this user's (any uid
  when ``insecure``) and, if ``processes`` is set, its pid passes that test (a local pool:
  one of the processes it forked; where the platform gives no pid, the pool checks the
  pid the HELLO names instead);
- a plaintext peer on tcp is admitted only when ``insecure`` (the user trusts the network).

A refused peer never gets as far as sending a frame, so it can make the master hold nothing.
The transport of a connection is told to the gate by the ZAP domain set for each bind.

What an ipc peer's address proves (libzmq gives it as host:uid:gid:pid; no pid on BSD
and macOS), and what a frame without a connection proves (nothing):

>>> credentials("host:1000:1000:4242")
(1000, 4242)
>>> credentials("host:1000:1000:")
(1000, None)
>>> credentials("10.0.0.2")
(None, None)
>>> peer(object())
Peer(key=None, uid=None, pid=None)
"""
from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import zmq
from zmq.utils import z85

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
IPC, TCP = "ipc", "tcp"             # ZAP domains, one per kind of bind
_CREDENTIALS = re.compile(r".*:(\d+):(\d*):(\d*)")    # libzmq's ipc peer: host:uid:gid:pid
                                                        # (no pid where LOCAL_PEERCRED: BSD, macOS)
_POLL_MS = 100                      # how often the gate's thread looks for a stop

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Peer:
    """What a connection proves about its sender: its CURVE key (z85) or, on ipc, the
    kernel's uid and pid of the process that connected; None where it proves nothing."""
    key: Optional[str] = None
    uid: Optional[int] = None
    pid: Optional[int] = None


def peer(frame) -> Peer:
    """The proven sender of a received message frame (its connection's metadata)."""
    def prop(name):
        try:
            return frame.get(name)
        except (zmq.ZMQError, AttributeError, UnicodeDecodeError):
            return None

    uid, pid = credentials(prop("Peer-Address") or "")
    return Peer(prop("User-Id") or None, uid, pid)     # the gate gives keys as user ids


def credentials(address: str) -> tuple:
    """(uid, pid) from an ipc peer's address as libzmq reports it, else (None, None); the
    pid is None where the platform tells only the uid."""
    match = _CREDENTIALS.fullmatch(address)
    if match is None:
        return None, None
    return int(match.group(1)), int(match.group(3)) if match.group(3) else None


class Gate:
    """The master context's ZAP handler (see the module's docstring). Start it before any
    bind; ``bind`` binds a socket with the domain of its transport; ``stop`` before the
    context is terminated."""

    def __init__(self, context: zmq.Context, *, keys: frozenset = frozenset(),
                 insecure: bool = False,
                 processes: Optional[Callable[[int], bool]] = None) -> None:
        self.keys, self.insecure, self.processes = frozenset(keys), insecure, processes
        self.refused = 0                # connections turned away, in all
        self._socket = context.socket(zmq.REP)
        self._socket.linger = 0
        self._socket.bind(ZAP_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="ffcode-gate", daemon=True)
        self._thread.start()            # the socket moves to the thread (a full barrier)

    def admit_key(self, key: str) -> None:
        self.keys = self.keys | {key}

    def forget_key(self, key: str) -> None:
        self.keys = self.keys - {key}

    @staticmethod
    def bind(socket, endpoint: str) -> None:
        """Bind with the ZAP domain of the endpoint's transport (options apply per bind)."""
        socket.zap_domain = (IPC if endpoint.startswith("ipc://") else TCP).encode()
        socket.bind(endpoint)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _serve(self):
        try:
            while not self._stop.is_set():
                if self._socket.poll(_POLL_MS):
                    self._answer(self._socket.recv_multipart())
        finally:
            self._socket.close(linger=0)

    def _answer(self, request):
        if len(request) < 6:            # not from libzmq: nothing to answer
            return
        version, request_id, domain, address, _, mechanism = request[:6]
        user = self._decide(domain.decode(errors="replace"), address.decode(errors="replace"),
                            mechanism, request[6:])
        if user is None:
            self.refused += 1
            log.warning("refused a connection (%s over %s from %s)",
                        mechanism.decode(errors="replace"), domain.decode(errors="replace"),
                        address.decode(errors="replace") or "?")
        status = (b"200", b"OK") if user is not None else (b"400", b"not admitted")
        self._socket.send_multipart([version, request_id, *status, (user or "").encode(), b""])

    def _decide(self, domain, address, mechanism, credentials_) -> Optional[str]:
        """The user id to admit the peer with, or None to refuse it."""
        if mechanism == b"CURVE" and len(credentials_) == 1:
            key = z85.encode(credentials_[0]).decode()
            return key if key in self.keys else None
        if mechanism != b"NULL":
            return None
        if domain == IPC:
            uid, pid = credentials(address)
            if uid is None or not (self.insecure or uid == os.getuid()):
                return None
            if self.processes is not None and pid is not None and not self.processes(pid):
                return None             # (without a pid, the pool checks the HELLO's)
            return ""
        return "" if self.insecure else None
