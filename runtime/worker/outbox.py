"""A worker's outbox as a state machine without I/O: events in (a job started, a message
ready, a control message that zmq had no room for, a stop, a tick of the clock, the offered
messages sent), instructions out (send these messages together now, wait until a time, a
fault point reached, a job's last message sent). No sockets, threads or clock reads: the
worker process's main thread (runtime/worker/process.py) passes the time and does the
sending.

Packets leave paced by the sending job's link rate (runtime/shared/faults.Link: the link is
the worker's, its jobs share it); messages ready together leave together, in one multipart
message up to ``together`` bytes and ``most`` messages, but a paced packet, or one of a job
whose faults count its packets (crash_after, hang_after), leaves alone:

>>> outbox = Outbox()
>>> outbox.started("job", link_rate=1000.0)
[]
>>> for k in range(3):
...     outbox.ready("job", Kind.PACKET, 500, f"packet {k}", now=0.0)
True
True
True
>>> outbox.tick(0.0)
Wait(until=0.5)
>>> send = outbox.tick(0.5); send.messages
('packet 0',)
>>> outbox.sent(send, 0.5), outbox.tick(0.5)
([], Wait(until=1.0))
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Hashable, Optional

from ffcode.runtime.shared import wire
from ffcode.runtime.shared.faults import Link
from ffcode.runtime.shared.wire import Kind

TOGETHER_BYTES = 256 << 10  # ready messages leave together up to this size (small ones gain)


@dataclass(frozen=True)
class Send:
    """Send these messages now, together in one multipart message, then say ``sent``."""
    messages: tuple
    count: int
    due: float


@dataclass(frozen=True)
class Wait:
    """Nothing may leave before ``until``."""
    until: float


@dataclass(frozen=True)
class FaultPoint:
    """The job's packet count reached its injected crash or hang: ``act`` "crash" or
    "hang"."""
    job: Any
    act: str


@dataclass(frozen=True)
class Ended:
    """The job's DONE, FAILED or ANSWER (``kind``) left after ``packets`` packets: it is
    over."""
    job: Any
    kind: Kind
    packets: int


@dataclass(frozen=True)
class Left:
    """A message of a job on a lossy link left (``kind``, ``message`` as queued): its
    delivery is tracked (runtime/worker/lossy.py), and its job's end is the tracker's to
    tell."""
    job: Any
    kind: Kind
    message: Any


@dataclass
class Flow:
    """What the outbox knows of a job: its link rate, its fault marks, packets sent,
    whether its messages' delivery is tracked."""
    link_rate: Optional[float] = None
    crash_after: Optional[int] = None
    hang_after: Optional[int] = None
    tracked: bool = False
    sent: int = 0

    @property
    def loose(self) -> bool:
        """Whether its messages may leave with others (neither paced nor counted)."""
        return self.link_rate is None and self.crash_after is None and self.hang_after is None

    def point(self, job) -> list:
        """[FaultPoint] when its packets sent reach a fault's mark."""
        return [FaultPoint(job, act) for act, mark in (("crash", self.crash_after),
                                                       ("hang", self.hang_after))
                if mark == self.sent]


@dataclass
class _Item:
    job: Any                    # None: a control message (an acknowledgement, a HELLO)
    kind: Kind
    size: int
    message: Any
    loose: bool


@dataclass
class Outbox:
    """Messages waiting to leave, in order, and the jobs they are of (by any hashable
    key). ``queued``: their bytes."""
    together: int = TOGETHER_BYTES
    most: int = wire.MAX_TOGETHER
    flows: dict = field(default_factory=dict)       # job -> Flow, from its start to its end
    items: deque = field(default_factory=deque)
    queued: int = 0
    due: Optional[float] = None                     # when the first item may leave
    link: Link = field(default_factory=lambda: Link(None))

    def started(self, job: Hashable, link_rate: Optional[float] = None,
                crash_after: Optional[int] = None, hang_after: Optional[int] = None,
                tracked: bool = False) -> list:
        """A job started: [FaultPoint] if it crashes or hangs after 0 packets."""
        flow = self.flows[job] = Flow(link_rate, crash_after, hang_after, tracked)
        return flow.point(job)

    def ready(self, job: Hashable, kind: Kind, size: int, message: Any, now: float) -> bool:
        """A job's message of ``size`` bytes, queued; False when dropped: its job was
        stopped, ended or never started here."""
        flow = self.flows.get(job)
        if flow is None:
            return False
        self.items.append(_Item(job, kind, size, message, flow.loose))
        self.queued += size
        if self.due is None:
            self._schedule(now)
        return True

    def urgent(self, kind: Kind, message: Any, now: float) -> None:
        """A control message that zmq had no room for: first in line, due now (a HELLO
        leaves alone)."""
        self.items.appendleft(_Item(None, kind, 0, message, kind != Kind.HELLO))
        self.due = now

    def stop(self, job: Hashable, now: float) -> int:
        """The job was stopped: its messages not yet sent dropped, and those of it that
        come later; the packets it sent."""
        flow = self.flows.pop(job, None)
        kept = deque(item for item in self.items if item.job is None or item.job != job)
        if len(kept) != len(self.items):
            self.items, self.queued, self.due = kept, sum(item.size for item in kept), None
            if kept:
                self._schedule(now)
        return 0 if flow is None else flow.sent

    def tick(self, now: float) -> Optional[Send | Wait]:
        """Send of the messages that leave next when they are due, else Wait until they
        are; None when there are none."""
        if self.due is None:
            return None
        if self.due > now:
            return Wait(self.due)
        count, size = 1, self.items[0].size
        if self.items[0].loose:
            while count < min(len(self.items), self.most) and \
                    size + self.items[count].size <= self.together and self.items[count].loose:
                size += self.items[count].size
                count += 1
        return Send(tuple(self.items[k].message for k in range(count)), count, self.due)

    def sent(self, send: Send, now: float) -> list:
        """The messages ``send`` offered left: [FaultPoint] and [Ended] of their jobs."""
        out: list = []
        self.due = None
        for _ in range(send.count):
            item = self.items.popleft()
            self.queued -= item.size
            flow = self.flows.get(item.job) if item.job is not None else None
            if flow is None:            # a control message
                continue
            if flow.tracked:
                out.append(Left(item.job, item.kind, item.message))
            if item.kind == Kind.PACKET:
                self.link.sent(send.due)
                flow.sent += 1
                out += flow.point(item.job)
            elif item.kind in (Kind.DONE, Kind.FAILED, Kind.ANSWER) and not flow.tracked:
                del self.flows[item.job]    # a stop for it now finds nothing to stop
                out.append(Ended(item.job, item.kind, flow.sent))
        if self.items:
            self._schedule(now)
        return out

    def _schedule(self, now: float) -> None:
        """When the first item may leave: a packet when the link, at its job's rate, has
        carried it; anything else now."""
        item = self.items[0]
        flow = self.flows.get(item.job) if item.job is not None else None
        if item.kind == Kind.PACKET and flow is not None:
            self.link.rate = flow.link_rate
            self.due = self.link.due(item.size, now)
        else:
            self.due = now
