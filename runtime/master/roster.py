"""The master's workers: who is admitted (a HELLO on a connection the gate let in), who is
alive (heard from lately, its process running), who is lost, excluded or replaced, what
resident data each holds, and how fast each was in the latest job.

A worker given up on says nothing more that counts. One the engine started is killed and
replaced; a hand-started one (not excluded) that is heard from again, say paused and
resumed, is admitted again as a fresh worker: a new handle, its old jobs not its own.

A worker's ``order`` places it in jobs: a started worker's slot (checked against its
engine), a hand-started one's place in the order of arrival; never a number the worker
chose. Jobs call workers by their *place* 0..P-1 in that job.

A hand-started worker, as the master sees it: no slot, no engine to ask about it:

>>> handle = WorkerHandle(b"w1", {"pid": 4242, "host": "node7"}, order=0)
>>> handle, handle.slot, handle.gone(), handle.lost
(worker(node7, pid 4242), None, None, None)
"""
from __future__ import annotations

import logging
import math
import time
from typing import Iterator, Optional

from ffcode import checks
from ffcode.errors import ProtocolError
from ffcode.runtime.shared import wire
from ffcode.runtime.master.engines import Engine
from ffcode.runtime.shared.gate import Peer
from ffcode.runtime.master.resident import Resident
from ffcode.runtime.shared.task import Load, Unload
from ffcode.runtime.shared.transport import Transport
from ffcode.runtime.shared.wire import Header, Kind

WATCH_EVERY = 0.05          # seconds between checks of the workers' processes and silence

log = logging.getLogger(__name__)


class WorkerHandle:
    """The master's view of one connected worker: ``order`` (see above), ``member`` what its
    engine knows it by (a local pid, a Ray actor; None for a worker started by hand),
    ``resident``: resident data id -> the place whose shares it holds."""

    def __init__(self, ident: bytes, meta: dict, order: int,
                 engine: Optional[Engine] = None, member=None) -> None:
        self.ident, self.order, self.engine, self.member = ident, order, engine, member
        self.slot = order if engine is not None else None
        self.pid, self.host = meta.get("pid", 0), meta.get("host", "")
        self.node = engine.node(member) if engine is not None else None
        self.last_seen = time.monotonic()
        self.lost: Optional[str] = None
        self.excluded = False           # found wrong: never admitted again
        self.resident: dict = {}

    def __repr__(self) -> str:
        where = f"slot {self.slot}" if self.slot is not None else f"{self.host or '?'}"
        return f"worker({where}, pid {self.pid})"

    def gone(self) -> Optional[str]:
        """Why a started worker will not answer (its process exited or froze, its Ray actor
        died), or None."""
        return self.engine.gone(self.member) if self.engine is not None else None


class Roster:
    """The workers of one master, reached through its transport; ``engine`` starts and
    watches them (None: they are started by hand and connect on their own)."""

    def __init__(self, transport: Transport, engine: Optional[Engine], size: int,
                 lost_after: float) -> None:
        self.transport, self.engine, self.size = transport, engine, size
        self.lost_after = lost_after
        self.handles: dict = {}             # routing id -> WorkerHandle
        self.arrivals = 0                   # hand-started workers admitted so far
        self.measured: dict = {}            # order -> speed in the latest job measuring any

    def count(self, count: int) -> int:
        """A number of workers to wait for, checked: at most the size of an engine's."""
        count = checks.integer(count, "count", low=0)
        if self.engine is not None and count > self.size:
            raise ValueError(f"This cluster has {self.size} workers, not {count}.")
        return count

    def spawn_all(self) -> None:
        """Ask the engine (if any: none for hand-started workers) for every worker."""
        if self.engine is not None:
            for slot in range(self.size):
                self.engine.spawn(slot)

    def live(self) -> list:
        """The connected workers not given up on, in order."""
        return sorted((h for h in list(self.handles.values()) if h.lost is None),
                      key=lambda h: h.order)

    def receive(self, timeout: float, epoch: Optional[int] = None,
                until: float = math.inf) -> Iterator[tuple]:
        """The transport's messages after admission and liveness: HELLOs and heartbeats
        are handled here, bad ones counted; yields (handle, header, data frames) of this
        master's session from admitted workers, and of that job (``epoch``) when one is
        given: the others are counted stale; ``until`` as in Transport.receive."""
        transport = self.transport
        for message in transport.receive(timeout, until):
            handle = self.handles.get(message.ident)
            header = message.header
            if handle is not None:
                if handle.lost is not None and header is not None and self.returns(handle):
                    handle = self._readmit(handle)
                handle.last_seen = time.monotonic()
            if header is None:
                continue
            if header.kind == Kind.HELLO:
                try:
                    self._hello(message)
                except ProtocolError:
                    transport.reject("malformed")
            elif handle is None:
                transport.reject("unknown sender")
            elif handle.lost is not None and handle.excluded and handle.engine is None:
                if header.kind != Kind.HEARTBEAT:
                    transport.reject("lost worker")
                self.shut_down(handle)      # again, heartbeats too: it missed the first
            elif header.kind == Kind.HEARTBEAT:
                continue
            elif handle.lost is not None:
                transport.reject("lost worker")
            elif header.session != transport.session:
                transport.reject("foreign")
            elif epoch is not None and header.epoch != epoch:
                transport.reject("stale")
            else:
                yield handle, header, message.frames

    def _hello(self, message) -> None:
        """Admit a worker. Who it is comes from its connection (a gate.Peer: the kernel's
        pid on ipc, the CURVE key), never from what its HELLO says."""
        if message.ident in self.handles:
            raise ProtocolError("a second HELLO from a connected worker")
        meta, _ = wire.read_control(message.frames)
        slot, pid = meta.get("slot", -1), meta.get("pid", 0)
        if type(slot) is not int or type(pid) is not int or not isinstance(
                meta.get("host", ""), str):
            raise ProtocolError("a HELLO with a non-integer slot or pid")
        member = None
        if self.engine is not None:     # a worker the engine started, not yet here
            member = self.engine.admit(slot, meta, message.peer)
            if member is None:
                raise ProtocolError("a HELLO from no worker this cluster started")
            order = slot
        else:
            order, self.arrivals = self.arrivals, self.arrivals + 1
        sender: Peer = message.peer
        if sender.pid is not None:      # the pid the kernel vouches for
            meta = dict(meta, pid=sender.pid)
        handle = self.handles[message.ident] = WorkerHandle(message.ident, meta, order,
                                                            self.engine, member)
        log.info("%r connected", handle)

    @staticmethod
    def returns(handle: WorkerHandle) -> bool:
        """Whether a worker given up on is admitted again when heard from: a hand-started
        one not excluded (one the engine started is killed and replaced instead)."""
        return handle.engine is None and not handle.excluded

    def _readmit(self, lost: WorkerHandle) -> WorkerHandle:
        """A fresh handle for a hand-started worker given up on and heard from again: the
        next place in the order of arrival, no resident data (what it held is unloaded:
        the master ships it again where needed). The jobs that held the old handle keep it,
        lost: nothing the worker says about them counts."""
        handle = WorkerHandle(lost.ident, {"pid": lost.pid, "host": lost.host},
                              self.arrivals)
        self.arrivals += 1
        self.handles[lost.ident] = handle
        log.warning("%r is back after it was given up on (%s): admitted again", handle,
                    lost.lost)
        for data in lost.resident:      # no room: it may hold them; nothing relies on it
            self.transport.send(handle.ident, wire.control(
                Header(Kind.UNLOAD, self.transport.session, 0), Unload(data).to_meta()),
                patience=0)
        return handle

    def replace_lost(self) -> None:
        if self.engine is None:                  # hand-started: none to replace
            return
        now = time.monotonic()
        for handle in self.handles.values():     # one heard from lately is alive: a job
            if handle.lost is None and now - handle.last_seen > WATCH_EVERY:
                gone = handle.gone()             # finds it if it died since
                if gone:
                    self.lose(handle, gone)
        for handle in self.handles.values():
            if handle.lost is not None:
                self.engine.spawn(handle.slot)
        self.handles = {i: h for i, h in self.handles.items() if h.lost is None}

    def watch(self, handle: WorkerHandle, now: float) -> Optional[str]:
        """Give up on a worker whose process died or that fell silent; why it is lost, or
        None. One heard from since the last look is alive: its process is not asked."""
        silent = now - handle.last_seen
        if handle.lost is None and silent > WATCH_EVERY:
            gone = handle.gone()
            if gone:
                self.lose(handle, gone)
            elif silent > self.lost_after:
                self.lose(handle, f"silent for {self.lost_after:g} s")
        return handle.lost

    def lose(self, handle: WorkerHandle, reason: str) -> None:
        """Give up on a worker; one the engine started is killed (it may be frozen)."""
        if handle.lost is None:
            handle.lost = reason
            log.warning("%r given up on: %s", handle, reason)
            if handle.engine is not None:
                handle.engine.kill(handle.member)

    def exclude(self, handle: WorkerHandle, reason: str) -> None:
        """Never give this worker another job: a started one is replaced before the next
        job, a hand-started one is told to exit (also one given up on before). A worker
        admitted again since the job that found it wrong is excluded as it is now."""
        current = self.handles.get(handle.ident)
        if current is not None and current is not handle:
            self.exclude(current, reason)
        if not handle.excluded and handle.engine is None:
            self.shut_down(handle)
        handle.excluded = True
        self.lose(handle, f"excluded: {reason}")

    def shut_down(self, handle: WorkerHandle) -> None:
        self.transport.send(handle.ident, [Header(Kind.SHUTDOWN, self.transport.session,
                                                  0).pack()], patience=0)

    def send(self, handle: WorkerHandle, frames: list, patience: float = 2.0) -> bool:
        """Send to one worker without ever blocking for long; False (and the worker lost)
        when it cannot take the message."""
        failed = self.transport.send(handle.ident, frames, patience)
        if failed:
            self.lose(handle, failed)
        return not failed

    def give(self, handle: WorkerHandle, data: Resident, place: int) -> int:
        """Ship the shares of a place of resident data to a worker (bytes sent; 0 for an
        idle place or a worker that cannot take them, which is then lost)."""
        held = data.layout.held(place)
        if not held:
            handle.resident.pop(data.ident, None)
            return 0
        shares = [share for _, share in held]
        load = Load(data.ident, tuple(len(share) for share in shares))
        message = wire.control(Header(Kind.LOAD, self.transport.session, 0), load.to_meta(),
                               [a for share in shares for a in share])
        if not self.send(handle, message):
            return 0
        handle.resident[data.ident] = place
        return sum(memoryview(f).nbytes for f in message)

    def give_all(self, data: Resident, workers: list) -> int:
        """Ship each worker the shares of its place (bytes sent)."""
        return sum(self.give(handle, data, i) for i, handle in enumerate(workers))

    def forget(self, data: Resident) -> None:
        """Free the workers' memory of resident data."""
        for handle in self.live():
            if handle.resident.pop(data.ident, None) is not None:
                self.send(handle, wire.control(Header(Kind.UNLOAD, self.transport.session, 0),
                                               Unload(data.ident).to_meta()), patience=0.1)

    def in_place(self, workers: list, data: Resident) -> list:
        """The workers for a job on resident data: each holder in the place whose shares it
        holds, the others (replacements) in the places left."""
        held = {}
        for handle in workers:
            place = handle.resident.get(data.ident)
            if place is not None and place < len(workers) and place not in held:
                held[place] = handle
        rest = [h for h in workers if h not in held.values()]
        return [held[i] if i in held else rest.pop(0) for i in range(len(workers))]

    def record_speeds(self, workers: list, speeds: list) -> None:
        """One job's speeds (all in the same units), by worker order."""
        measured = {h.order: s for h, s in zip(workers, speeds) if s}
        if measured:
            self.measured = measured

    def speeds(self) -> list:
        """Each worker's speed as measured in the latest job that measured any, in the
        order jobs place the workers; None where unknown."""
        orders = range(self.size) if self.engine is not None else \
            [h.order for h in self.live()]
        return [self.measured.get(order) for order in orders]
