"""The master's side of a job's lossy links (``Faults(loss=...)``), without I/O: the
emulated links, which drop the job's messages in both directions, and what the master
keeps so that the job gets through them. Each lossy link is a seeded Gilbert-Elliott
link per direction (ffcode.channel), its fates drawn in the order its messages go, the
same in every job of the same faults.

The master answers every message of a worker on a lossy link with an acknowledgement
(ACK): a bitmap of the packet numbers it received so far, the rank of each of the
worker's shares, and whether its last message (DONE or FAILED) came; the worker resends
or replaces what is not acknowledged in time (runtime/worker/reliable.py). Tasks and stops
the master sends again until answered, each link's wait following its measured round trip
(``RoundTrip``); a task sent ffcode.delivery.TASK_TRIES times unanswered loses its
worker for the job.

>>> from ffcode.runtime.shared.faults import Faults
>>> links = Links(Faults(loss={1: 0.5}, seed=2), places=3)
>>> links.lossy(0), links.lossy(1)
(False, True)
>>> fates = [links.arrives(1) for _ in range(1000)]
>>> links.dropped(1)[0] == fates.count(False), 400 < fates.count(False) < 600
(True, True)
>>> links.received(1, 3); links.received(1, 0)
>>> links.bitmap(1).tolist()
[9]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ffcode.channel import Link, RoundTrip
from ffcode.delivery import MOST_WAIT, TASK_TRIES
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.wire import Header, Kind

UP, DOWN = 29, 31           # the seeds' tags of a link's two directions
MOST_INDEX = 1 << 24        # packet numbers a bitmap covers (2 MiB): beyond, not acknowledged


@dataclass
class Waiting:
    """A task or a stop sent over a lossy link and not yet answered: its frames, the tries
    so far, when it was first sent and when it goes again."""
    frames: tuple
    tries: int
    sent: float
    due: float


class Links:
    """The lossy links of a job's ``places`` workers under ``faults`` (an ffcode.Faults),
    by place; a place without loss has none. ``rateless``: the job's packets are random
    combinations, and its acknowledgements carry the rank of each share."""

    def __init__(self, faults: Any, places: int, rateless: bool = False) -> None:
        self.rateless = rateless
        self.up: dict[int, Link] = {}
        self.down: dict[int, Link] = {}
        self.timers: dict[int, RoundTrip] = {}
        self.got: dict[int, bytearray] = {}
        self.ranks: dict[int, dict] = {}            # place -> {code index: rank}
        self.packets: dict[int, int] = {}           # place -> packets onto its link
        self.ended: set[int] = set()
        self.tasks: dict[int, Waiting] = {}         # by place
        self.stops: dict[int, Waiting] = {}
        for i in range(places):
            loss = faults.link_loss(i)
            if loss is not None:
                self.up[i] = loss.link([faults.seed, UP, i])
                self.down[i] = loss.link([faults.seed, DOWN, i])
                self.timers[i] = RoundTrip(most=MOST_WAIT)
                self.got[i] = bytearray()
                self.packets[i] = 0
                self.ranks[i] = {}

    @classmethod
    def none(cls) -> "Links":
        """No lossy link: a job without faults."""
        return cls(None, 0)

    def __bool__(self) -> bool:
        return bool(self.up)

    def lossy(self, place: int) -> bool:
        return place in self.up

    def arrives(self, place: int) -> bool:
        """Whether the next message from the worker at ``place`` gets through."""
        link = self.up.get(place)
        return link is None or not link.lost()

    def leaves(self, place: int) -> bool:
        """Whether the next message to the worker at ``place`` gets through."""
        link = self.down.get(place)
        return link is None or not link.lost()

    def dropped(self, place: int) -> tuple[int, int]:
        """(messages from, messages to) the worker that its link dropped."""
        if place not in self.up:
            return 0, 0
        return self.up[place].dropped, self.down[place].dropped

    def received(self, place: int, index: int, share: Any = None,
                 innovative: bool = False) -> None:
        """A packet of the worker's arrived (``innovative``: it raised share ``share``'s
        rank)."""
        got = self.got.get(place)
        if got is None or not 0 <= index < MOST_INDEX:
            return
        byte = index >> 3
        if byte >= len(got):
            got.extend(bytes(byte + 1 - len(got)))
        got[byte] |= 1 << (index & 7)
        if innovative:
            ranks = self.ranks[place]
            ranks[share] = ranks.get(share, 0) + 1

    def count(self, timelines: list, decodable: bool = False) -> None:
        """What each lossy link dropped so far into the workers' timelines (``dropped``);
        once ``decodable``, the packets each carried until then (``link_packets``)."""
        for place in self.up:
            timelines[place].dropped = list(self.dropped(place))
            if decodable:
                timelines[place].link_packets = self.packets[place]

    def bitmap(self, place: int) -> np.ndarray:
        """The packets of the worker's that arrived, bit i of byte i // 8 for packet i."""
        return np.frombuffer(bytes(self.got[place]), np.uint8)

    def ack(self, place: int, held: Any, session: int, epoch: int,
            poll: Optional[int] = None) -> Optional[tuple]:
        """The frames of the acknowledgement to the worker at ``place``, which holds the
        code indices ``held`` in its order, answering its POLL ``poll`` if given (None:
        its link drops it)."""
        if not self.leaves(place):
            return None
        ranks = self.ranks[place]
        meta = {"ranks": [ranks.get(share, 0) for share in held] if self.rateless else [],
                "ended": place in self.ended}
        if poll is not None:
            meta["poll"] = poll
        header = Header(Kind.ACK, session, epoch, place)
        return tuple(wire.control(header, meta, [self.bitmap(place)]))

    def sent(self, messages: tuple, now: float) -> frozenset:
        """Tasks or stops ((place, frames) pairs) about to go: the lossy places' kept until
        answered; the places whose links drop them now."""
        for place, frames in messages:
            if place in self.up:
                waiting = Waiting(tuple(frames), 1, now, now + self.timers[place].timeout)
                if Header.unpack(frames[0]).kind == Kind.JOB:
                    self.tasks[place] = waiting
                else:               # (a stop answers for a task not yet taken too)
                    self.tasks.pop(place, None)
                    self.stops[place] = waiting
        return frozenset(place for place, _ in messages if not self.leaves(place))

    def passes(self, place: int, kind: Kind, now: float) -> bool:
        """Whether a message of the job from the worker at ``place`` gets through its link
        (then it is heard)."""
        if kind == Kind.PACKET and place in self.packets:
            self.packets[place] += 1
        if not self.arrives(place):
            return False
        self.heard(place, kind, now)
        return True

    def heard(self, place: int, kind: Kind, now: float) -> None:
        """A message of the job from the worker at ``place`` arrived: its task arrived
        (the first send's round trip timed by its TAKEN), and after a stop, any answer
        answers it; its DONE or FAILED is acknowledged from now on."""
        task = self.tasks.pop(place, None)
        if task is not None and kind == Kind.TAKEN and task.tries == 1:
            self.timers[place].sample(now - task.sent)
        if kind in (Kind.STOPPED, Kind.DONE, Kind.FAILED):
            stop = self.stops.pop(place, None)
            if stop is not None and stop.tries == 1 and kind == Kind.STOPPED:
                self.timers[place].sample(now - stop.sent)
        if kind in (Kind.DONE, Kind.FAILED):
            self.ended.add(place)

    @property
    def due(self) -> float:
        """When a task or a stop is next sent again (inf: none waits)."""
        if not self.tasks and not self.stops:   # (the master's loop asks at every turn)
            return math.inf
        return min((w.due for w in (*self.tasks.values(), *self.stops.values())),
                   default=math.inf)

    def overdue(self, now: float, tasks: bool) -> tuple:
        """(again, lost): the tasks (while ``tasks``) and stops unanswered in time, as
        (place, frames) to send again now, their links' fates drawn (a dropped one is left
        out); and (place, why) of the workers whose task went TASK_TRIES times
        unanswered, lost to the job."""
        again, lost = [], []
        for waiting in (self.tasks, self.stops) if tasks else (self.stops,):
            for place, entry in list(waiting.items()):
                if entry.due > now:
                    continue
                timer = self.timers[place]
                timer.expired()
                if entry.tries >= TASK_TRIES:
                    del waiting[place]
                    if waiting is self.tasks:
                        lost.append((place, f"its link lost the task {entry.tries} times"))
                    continue
                entry.tries, entry.due = entry.tries + 1, now + timer.timeout
                header = Header.unpack(entry.frames[0])
                if header.kind == Kind.JOB:     # a task sent again: the worker knows it
                    header.index = entry.tries - 1
                if self.leaves(place):
                    again.append((place, (header.pack(), *entry.frames[1:])))
        return again, lost
