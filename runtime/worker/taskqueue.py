"""A worker's queue of jobs as a state machine without I/O: events in (a task arrived, a
stop, a turn finished, an unload), instructions out (run a turn of a job, run it inline,
acknowledge a stop, send a job's FAILED or DONE, let go of a job's work or shares). No
sockets, threads or clocks: the worker process (runtime/worker/process.py) feeds it under
a lock and carries out what it says, its compute thread waiting while ``next`` gives no
turn.

Jobs of the highest priority take turns (round-robin), a share each; a stopped job is
dropped at its next look. A small job (operands up to ``inline_bytes``) of an f that took
at most ``quick_seconds`` on a small job before may run inline, in the main thread, when
no turn is under way and none waits:

>>> queue = TaskQueue()
>>> queue.arrived("a", priority=0), queue.arrived("b", priority=0)
([], [])
>>> queue.arrived("urgent", priority=1)
[]
>>> queue.next()
[Turn(job='urgent')]
>>> queue.finished("urgent", ENDED, spent=0.001)
[]
>>> [queue.next()[0].job for _ in range(3)]
['a', 'b', 'a']
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Hashable

MORE, ENDED, UNABLE, FAILED, STOPPED = "more", "ended", "unable", "failed", "stopped"
OUTCOMES = (MORE, ENDED, UNABLE, FAILED, STOPPED)   # of a turn: the job's steps ...
# yielded (more to come), returned, could do no more (DONE after what it sent), raised
# (FAILED), or saw the stop


@dataclass(frozen=True)
class Instruction:
    """What the queue says to do about ``job``."""
    job: Any


class Turn(Instruction):
    """Run one share of the job's work (in the compute thread)."""


class Inline(Instruction):
    """Run the job to its end now, in the main thread (it is small and its f quick)."""


class Acknowledge(Instruction):
    """Send the job's STOPPED (a relay first stops its group's work)."""


class Drop(Instruction):
    """Let go of the job's work (its steps and what they hold): it was stopped."""


class Release(Instruction):
    """Let go of the job's resident shares: their data was unloaded."""


@dataclass(frozen=True)
class Say(Instruction):
    """Send the job's last word: ``text`` the error or the reason."""
    text: str


class Fail(Say):
    """Send the job's FAILED naming its error."""


class Done(Say):
    """Send the job's DONE: it can do no more (the reason), after the packets it sent."""


@dataclass
class _Entry:
    priority: int
    name: Any                   # what it computes (its f), learnt quick or not; None: too big
    data: Any                   # its resident data's id, or None
    stopped: bool = False
    spent: float = 0.0          # seconds its turns took so far


@dataclass
class TaskQueue:
    """The jobs in flight on a worker, by any hashable key. ``quick``: the names (f's)
    whose small jobs took at most ``quick_seconds``."""
    inline_bytes: int = 64 << 10
    quick_seconds: float = 0.01
    quick: set = field(default_factory=set)
    entries: dict = field(default_factory=dict)     # job -> _Entry, from arrival to its end
    order: deque = field(default_factory=deque)     # jobs in turn order (the last turn's last)
    turning: set = field(default_factory=set)       # jobs whose turn (or inline run) is under way

    def arrived(self, job: Hashable, priority: int = 0, *, name: Any = None, size: int = 0,
                inline: bool = False, data: Any = None) -> list:
        """A task: ``name`` what it computes (learnt quick from its small jobs), ``size``
        its operands' bytes, ``inline`` whether it may run in the main thread at all (a
        coded job without injected pauses, on a worker that is no relay), ``data`` its
        resident data. [Inline] when it runs in the main thread now; else it waits its
        turn."""
        small = size <= self.inline_bytes
        self.entries[job] = _Entry(priority, name if small else None, data)
        if inline and small and name in self.quick and self.idle():
            self.turning.add(job)
            return [Inline(job)]
        self.order.append(job)
        return []

    def idle(self) -> bool:
        """Whether no turn is under way and no job waits for one."""
        return not self.turning and not self.order

    def next(self) -> list:
        """The compute thread looks for work: [Drop] for each stopped job, then [Turn] of
        the first job of the highest priority in turn order, or none (it waits for an
        event)."""
        dropped = [job for job in self.order if self.entries[job].stopped]
        out: list = []
        for job in dropped:
            self.order.remove(job)
            del self.entries[job]
            out.append(Drop(job))
        if self.order:
            top = max(self.entries[job].priority for job in self.order)
            chosen = next(job for job in self.order if self.entries[job].priority == top)
            self.order.remove(chosen)
            self.order.append(chosen)       # its next turn comes after the others'
            self.turning.add(chosen)
            out.append(Turn(chosen))
        return out

    def finished(self, job: Hashable, outcome: str, spent: float = 0.0,
                 detail: str = "") -> list:
        """A turn (or an inline run) ended: ``outcome`` one of OUTCOMES, ``spent`` its
        seconds, ``detail`` the error or the reason. MORE: the job's next turn comes after
        the others' (a stopped one is dropped at the next look). Else the job leaves, its
        f learnt quick or not (unless it was stopped), with [Fail] or [Done] to send for
        FAILED and UNABLE. A job never arrived (a test's) gets its instructions too."""
        if outcome not in OUTCOMES:
            raise ValueError(f"a turn ends {' or '.join(OUTCOMES)}, not {outcome!r}")
        self.turning.discard(job)
        entry = self.entries.get(job)
        if entry is not None:
            entry.spent += spent
            if outcome == MORE:
                return []
            del self.entries[job]
            if job in self.order:
                self.order.remove(job)
            if not entry.stopped and entry.name is not None:
                learn = self.quick.add if entry.spent <= self.quick_seconds else \
                    self.quick.discard
                learn(entry.name)
        if entry is not None and entry.stopped:
            return []                   # nothing more of it leaves
        if outcome == FAILED:
            return [Fail(job, detail)]
        return [Done(job, detail)] if outcome == UNABLE else []

    def stop(self, job: Hashable, acknowledge: bool = True) -> list:
        """The master stopped the job (or restarted it: no acknowledgement): its turn under
        way, if any, sees the stop by itself; waiting, it is dropped at the next look."""
        entry = self.entries.get(job)
        if entry is not None:
            entry.stopped = True
        return [Acknowledge(job)] if acknowledge else []

    def unload(self, data: Any) -> list:
        """The master unloaded resident data: [Release] for each job on it (one not
        started on it then fails saying so, one stopped does no work)."""
        return [Release(job) for job, entry in self.entries.items() if entry.data == data]
