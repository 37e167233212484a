"""A worker's queue of jobs as a state machine without I/O: events in (a task arrived, a
stop, a turn finished, an unload), instructions out (run a turn of a job, run it inline,
acknowledge a stop, send a job's FAILED or DONE, let go of a job's work or shares). No
sockets, threads or clocks: the worker process (runtime/worker/process.py) feeds it under
a lock and carries out what it says, its compute thread waiting while ``next`` gives no
turn.

Jobs of the highest priority take turns, a piece of work each (a share whole where the
share's result is sent whole); a stopped job is dropped at its next look. Among the jobs
whose turns are this worker's own work (``ranked``) the queue is speed-aware: once each has
had a turn, those whose turns took least time go first (within ``spread`` times the least,
in turn order). A worker slow on one job and fast on another does the other's work first,
where it counts most; the job it is slow on waits at most ``patience`` turns of others.

>>> queue = TaskQueue()
>>> queue.arrived("a", ranked=True), queue.arrived("b", ranked=True)
([], [])
>>> queue.arrived("urgent", priority=1)
[]
>>> queue.next()
[Turn(job='urgent')]
>>> queue.finished("urgent", ENDED, spent=0.001)
[]
>>> def turns(count, spent):
...     for _ in range(count):
...         job = queue.next()[0].job
...         queue.finished(job, MORE, spent=spent[job])
...         yield job
>>> list(turns(5, {"a": 0.4, "b": 0.1}))      # a's turns take four times b's
['a', 'b', 'b', 'b', 'b']

A small job (operands up to ``inline_bytes``) of an f that took at most ``quick_seconds``
on a small job before may run inline, in the main thread, when no turn is under way and
none waits.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Hashable

MORE, PIECE, ENDED, UNABLE, FAILED, STOPPED = ("more", "piece", "ended", "unable", "failed",
                                              "stopped")
OUTCOMES = (MORE, PIECE, ENDED, UNABLE, FAILED, STOPPED)    # of a turn: the job's steps ...
# yielded (more to come), yielded PIECE (more of the same share to come), returned, could do
# no more (DONE after what it sent), raised (FAILED), or saw the stop


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
    turns: int = 0              # its turns so far
    passed: int = 0             # turns given to cheaper jobs since its last
    place: int = 0              # its place in turn order when its last turn began
    ranked: bool = False        # its turns are work of this worker's, to be timed

    @property
    def measured(self) -> bool:
        return self.ranked and self.turns > 0

    @property
    def cost(self) -> float:
        """Seconds a turn of it took on average (0 before its first)."""
        return self.spent / self.turns if self.turns else 0.0


@dataclass
class TaskQueue:
    """The jobs in flight on a worker, by any hashable key. ``quick``: the names (f's)
    whose small jobs took at most ``quick_seconds``; ``spread`` and ``patience``: how
    much costlier a job's turns may be and still take their turn in order, and how many
    turns a costlier job waits at most."""
    inline_bytes: int = 64 << 10
    quick_seconds: float = 0.01
    spread: float = 1.25
    patience: int = 16
    quick: set = field(default_factory=set)
    entries: dict = field(default_factory=dict)     # job -> _Entry, from arrival to its end
    order: deque = field(default_factory=deque)     # jobs in turn order (the last turn's last)
    turning: set = field(default_factory=set)       # jobs whose turn (or inline run) is under way

    def arrived(self, job: Hashable, priority: int = 0, *, name: Any = None, size: int = 0,
                inline: bool = False, data: Any = None, ranked: bool = False) -> list:
        """A task: ``name`` what it computes (learnt quick from its small jobs), ``size``
        its operands' bytes, ``inline`` whether it may run in the main thread at all (a
        coded job without injected pauses, on a worker that is no relay), ``data`` its
        resident data, ``ranked`` whether its turns are work whose time ranks it among
        the jobs (a coded job this worker computes; not one whose turns wait on others).
        [Inline] when it runs in the main thread now; else it waits its turn."""
        small = size <= self.inline_bytes
        self.entries[job] = _Entry(priority, name if small else None, data, ranked=ranked)
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
        a job of the highest priority (``choose``), or none (it waits for an event)."""
        dropped = [job for job in self.order if self.entries[job].stopped]
        out: list = []
        for job in dropped:
            self.order.remove(job)
            del self.entries[job]
            out.append(Drop(job))
        if self.order:
            top = max(self.entries[job].priority for job in self.order)
            chosen = self.choose([job for job in self.order
                                  if self.entries[job].priority == top])
            self.entries[chosen].place = self.order.index(chosen)
            self.order.remove(chosen)
            self.order.append(chosen)       # its next turn comes after the others'
            self.turning.add(chosen)
            out.append(Turn(chosen))
        return out

    def choose(self, ready: list) -> Hashable:
        """The job of the next turn among ``ready`` (in turn order): the first ranked job
        not yet measured (to learn its cost), else the first that is not ranked, passed
        over ``patience`` times or whose turns cost at most ``spread`` times the cheapest
        ranked job's; the ranked ones that cost more are passed over once more."""
        entries = self.entries
        costs = [entries[job].cost for job in ready if entries[job].measured]
        bar = self.spread * min(costs) if costs else 0.0
        chosen = next((job for job in ready if entries[job].ranked and not entries[job].turns),
                      None)
        if chosen is None:
            chosen = next(job for job in ready if not entries[job].measured or
                          entries[job].cost <= bar or entries[job].passed >= self.patience)
        for job in ready:
            if entries[job].measured and entries[job].cost > bar:
                entries[job].passed += 1
        entries[chosen].passed = 0
        return chosen

    def finished(self, job: Hashable, outcome: str, spent: float = 0.0,
                 detail: str = "") -> list:
        """A turn (or an inline run) ended: ``outcome`` one of OUTCOMES, ``spent`` its
        seconds, ``detail`` the error or the reason. MORE: the job's next turn comes after
        the others' (a stopped one is dropped at the next look); PIECE: the job keeps its
        place in turn order, its share's next piece first unless a cheaper or new job's
        comes before it (a share's pieces in a row give a job what it needs soonest). Else
        the job leaves, its f learnt quick or not (unless it was stopped), with [Fail] or
        [Done] to send for FAILED and UNABLE. A job never arrived (a test's) gets its
        instructions too."""
        if outcome not in OUTCOMES:
            raise ValueError(f"a turn ends {' or '.join(OUTCOMES)}, not {outcome!r}")
        self.turning.discard(job)
        entry = self.entries.get(job)
        if entry is not None:
            entry.spent += spent
            entry.turns += 1
            if outcome == PIECE and job in self.order:
                self.order.remove(job)
                self.order.insert(entry.place, job)
            if outcome in (MORE, PIECE):
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
