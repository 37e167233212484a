"""What goes into a job run (events) and what comes out of it (instructions): small frozen
values. A job run (runtime/master/jobrun.py) is a state machine without I/O: it takes one
event at a time, the time passed in with it, and returns the instructions that the
master's thread (runtime/master/driver.py) carries out against the roster, the transport
and the job's future. A send's outcome comes back as a ``Sent`` event, a ``Resume`` as a
``Work`` event with the time: so the clock is read between any two steps of work (the
messages of one send each wait for room as long as the send allows at the time of their
turn: ``Send.wait_at``).

>>> from ffcode.runtime.shared.wire import Header, Kind
>>> event = message(2, Header(Kind.DONE, 7, 1, worker=2), [], now=3.5)
>>> type(event).__name__, event.place, event.now
('Done', 2, 3.5)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ffcode.runtime.shared.wire import Header, Kind


# -- events -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Start:
    """The job's workers are there (``workers[i]`` at place i: the host, pid and node are
    read for its report), at ``now`` (monotonic) and ``wall`` (time.time(): the workers'
    send times are on that clock)."""
    workers: tuple
    now: float
    wall: float


class Message:
    """A message of the job's epoch from a worker: ``place`` is the worker's place in the
    job (None: no worker of the job sent it), ``header`` and ``frames`` as received.
    (One is made for every message: a class of slots, cheaper to make than a frozen
    dataclass.)"""
    __slots__ = ("place", "header", "frames", "now")

    def __init__(self, place: Optional[int], header: Header, frames: list,
                 now: float) -> None:
        self.place, self.header, self.frames, self.now = place, header, frames, now

    def __repr__(self) -> str:
        return f"{type(self).__name__}(place={self.place}, now={self.now})"


class Packet(Message):
    """A packet of results."""


class Answer(Message):
    """Every packet of the worker's task at once (a small job's), then done."""


class Done(Message):
    """The worker sent every packet of the job."""


class Stopped(Message):
    """The worker acknowledges a stop."""


class Failed(Message):
    """The worker's computation failed (its error in the meta frame)."""


class Taken(Message):
    """The worker's task arrived over its lossy link."""


_MESSAGES = {Kind.PACKET: Packet, Kind.ANSWER: Answer, Kind.DONE: Done, Kind.STOPPED: Stopped,
             Kind.FAILED: Failed, Kind.TAKEN: Taken}


def message(place: Optional[int], header: Header, frames: list, now: float) -> Message:
    """The event of a worker's message, by its header's kind (PACKET, ANSWER, DONE,
    STOPPED, FAILED or TAKEN; a POLL is a plain Message: the roster answers the others
    itself)."""
    return _MESSAGES.get(header.kind, Message)(place, header, frames, now)


@dataclass(frozen=True)
class Lost:
    """The master gave up on the worker at ``place`` (why: ``reason``)."""
    place: int
    reason: str
    now: float


@dataclass(frozen=True)
class Delivery:
    """One message of a ``Send`` carried out at ``now``, to the worker at ``place``:
    ``failed`` says why the worker could not take it (it is lost), ``reloaded`` the bytes
    of resident data shipped to it first, ``answers`` whether the worker can still
    acknowledge (heard from lately, or its process runs)."""
    place: int
    now: float
    failed: Optional[str] = None
    reloaded: int = 0
    answers: bool = True


@dataclass(frozen=True)
class Sent:
    """A ``Send`` carried out: each message's ``Delivery``, in turn; ``late``: the turn of
    the next one came past the send's ``until`` and the rest were not sent (tasks)."""
    deliveries: tuple
    now: float
    late: bool = False


@dataclass(frozen=True)
class Tick:
    """The clock, looked at: deadlines and the end of the draining."""
    now: float


@dataclass(frozen=True)
class Work:
    """Time for one step of work: a payload reduced (the socket is idle, or the output is
    being decoded), or the decoding carried on after a ``Resume``."""
    now: float


@dataclass(frozen=True)
class Cancel:
    """The job's future is cancelled: stop it on its workers and let go."""
    now: float


@dataclass(frozen=True)
class Abort:
    """End the job with ``error``: its workers told to stop unless not ``stop`` (the
    cluster is closing)."""
    error: BaseException
    now: float
    stop: bool = True


# -- instructions -------------------------------------------------------------------------

@dataclass(frozen=True)
class Send:
    """Send each of ``messages`` ((place, frames) pairs) in turn, each waiting for room as
    long as ``wait_at`` says at its turn; ``load`` (resident data) shipped first to a
    place whose worker does not hold it for that place; ``ack``: stops, to be
    acknowledged; ``dropped``: the places whose emulated lossy links drop their message
    (it is not sent, but delivered as far as the job knows). Answer with one ``Sent``."""
    messages: tuple
    patience: float         # seconds a message may wait for room at most,
    until: float            # and never past this time (monotonic)
    load: Any = None
    ack: bool = False
    dropped: frozenset = frozenset()

    def wait_at(self, now: float) -> Optional[float]:
        """Seconds the message whose turn comes at ``now`` may wait for room; None when it
        comes past ``until`` and is not sent (a task; a stop is, without waiting)."""
        left = self.until - now
        if left < 0 and not self.ack:
            return None
        return max(0.0, min(self.patience, left))

    @property
    def kind(self) -> Kind:
        return Header.unpack(self.messages[0][1][0]).kind


@dataclass(frozen=True)
class Post:
    """Send each of ``messages`` ((place, frames) pairs) if its worker has room now, else
    not at all: messages over lossy links that are sent again until answered (a task or a
    stop again, an acknowledgement). No answer."""
    messages: tuple


@dataclass(frozen=True)
class Resume:
    """Feed a ``Work`` event with the time at once: the job has work to do now."""


@dataclass(frozen=True)
class Progress:
    """Call the job's progress callback: ``fn(rank, needed)``."""
    fn: Callable[[int, int], Any]
    rank: int
    needed: int


@dataclass(frozen=True)
class Reject:
    """A message of the job dropped, and why (counted in the cluster's rejected_total; the
    job's report counts it already)."""
    reason: str


@dataclass(frozen=True)
class Exclude:
    """Never give the worker at ``place`` another job."""
    place: int
    reason: str


@dataclass(frozen=True)
class RecordSpeeds:
    """Each place's speed in this job (None: unknown), for the next jobs' allocation."""
    speeds: tuple


@dataclass(frozen=True)
class Ended:
    """The job ended (whichever way): the rejections of the transport since go into
    ``report``, and what it holds is let go. A ``Resolve`` or a ``Fail`` follows, unless it
    was cancelled."""
    report: Any


@dataclass(frozen=True)
class Resolve:
    """The job's future resolves to (output, report)."""
    output: Any
    report: Any


@dataclass(frozen=True)
class Fail:
    """The job's future raises ``error``."""
    error: BaseException
