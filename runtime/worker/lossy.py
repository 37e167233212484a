"""A worker's jobs on a lossy link to the master (``Faults(loss=...)``): each job's
``Stream`` (ffcode.delivery) decides what must be sent again, replaced or finished; this
carries its instructions out through the worker's outbox. A job of
random combinations (cfs, compfs) keeps the packets it computed, and makes up a lost one
with a fresh random combination of them, which is as good to the master as the one lost;
the other schemes send a lost packet again. A task that arrives is answered with TAKEN
at once, and a task sent again is only answered; a stop of a job that ended here is
answered again (its first answer may have been lost).

>>> from ffcode import GF
>>> F = GF(7)
>>> kept = [(F.asarray([1, 0]), F.asarray([[3, 4]])), (F.asarray([0, 1]), F.asarray([[5, 6]]))]
>>> coeffs, payload = combination(F, kept, np.random.default_rng(1))
>>> bool((F.matmul(coeffs[None, :], F.asarray([[3, 4], [5, 6]])) == payload).all())
True
"""
from __future__ import annotations

import math
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from ffcode.channel import RoundTrip
from ffcode.delivery import END, Finish, Fresh, GiveUp, Poll, Resend, Stream
from ffcode.field import GF
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.wire import Header, Kind

RECENT = 256                # jobs ended here whose stops are answered again


def combination(F, kept: list, rng: np.random.Generator) -> tuple:
    """(coefficients, payload) of a fresh random combination of ``kept`` packets
    ((coefficients, payload) pairs of one share)."""
    weights = F.random((1, len(kept)), rng)
    return (F.combine(weights, [c for c, _ in kept])[0],
            F.combine(weights, [p for _, p in kept])[0])


class Lossy:
    """The worker's jobs on its lossy link: ``queue(job, kind, message)`` puts a message of
    a job in the outbox (False when the job is gone), ``control(frames)`` sends a control
    message now, ``let_go(job)`` drops a job whose messages all arrived, or whose master
    no longer answers."""

    def __init__(self, queue: Callable[..., bool], control: Callable[[list], None],
                 let_go: Callable[[Any], None]) -> None:
        self.queue, self.control, self.let_go = queue, control, let_go
        self.timer = RoundTrip()            # the link's, shared by its jobs
        self.jobs: dict = {}                # job -> its Stream
        self.recent: OrderedDict = OrderedDict()    # (session, epoch) -> worker
        self.rng = np.random.default_rng()

    def started(self, job) -> bool:
        """A task arrived (answered TAKEN): True when it is one sent again of a job here or
        ended here, which is only answered."""
        key = (job.session, job.epoch)
        self.control([Header(Kind.TAKEN, job.session, job.epoch, job.worker).pack()])
        if job.task_index > 0 and (key in self.recent or any(
                (j.session, j.epoch) == key for j in self.jobs)):
            return True
        coded = job.coded
        rateless = coded.strategy.rateless
        self.jobs[job] = Stream(self.timer, coded.shares, coded.pieces, rateless,
                                repair=job.task.repair)
        job.kept = {} if rateless else None
        return False

    def ended(self, job) -> None:
        """The job stopped or ended here: if it was on the lossy link, its stops are
        answered again."""
        if self.jobs.pop(job, None) is None:
            return
        self.recent[job.session, job.epoch] = job.worker
        while len(self.recent) > RECENT:
            self.recent.popitem(last=False)

    def stop_again(self, header) -> bool:
        """A stop of a job not here: answered again if it ended here lately, or when the
        stop says it came over a lossy link (index 1: its task may have been lost)."""
        worker = self.recent.get((header.session, header.epoch))
        if worker is None and header.index >= 1:
            worker = header.worker
        if worker is None:
            return False
        stopped = Header(Kind.STOPPED, header.session, header.epoch, worker)
        self.control([stopped.pack(), wire.EMPTY_META])
        return True

    def finishing(self, job, header, frames) -> bool:
        """The job's DONE or FAILED: held by its stream until nothing is outstanding (True);
        False for a job not on the lossy link."""
        stream = self.jobs.get(job)
        if stream is None:
            return False
        self.carry_out(job, stream.ended((header, frames), time.monotonic(), job.packets))
        return True

    def left(self, job, kind, message) -> None:
        """A message of the job left the worker."""
        stream = self.jobs.get(job)
        if stream is None:
            return
        now, coded = time.monotonic(), job.coded
        index = message[0].index if kind == Kind.PACKET else END
        first = coded.shares * coded.pieces
        share = None if index == END else index // coded.pieces if index < first else \
            (index - first) % coded.shares
        again = index in job.again
        job.again.discard(index)
        self.carry_out(job, stream.sent(index, share, message, now,
                                        fresh=first <= index < END, again=again))

    def acknowledged(self, job, frames) -> None:
        """The master's ACK of a job here (a bad one is the caller's to log)."""
        stream = self.jobs.get(job)
        if stream is None:
            return
        meta, arrays = wire.read_control(frames)
        if len(arrays) != 1 or arrays[0].dtype != np.uint8 or arrays[0].ndim != 1:
            raise ValueError("an acknowledgement carries one bitmap of bytes")
        ranks, ended, poll = meta.get("ranks"), meta.get("ended"), meta.get("poll")
        if not isinstance(ranks, list) or not isinstance(ended, bool):
            raise ValueError("an acknowledgement needs its ranks and whether the job ended")
        if poll is not None and (type(poll) is not int or poll < 0):
            raise ValueError(f"an acknowledgement answers a poll by its number, not {poll!r}")
        self.carry_out(job, stream.acked(arrays[0].tobytes(), ranks, ended,
                                         time.monotonic(), poll))

    @property
    def due(self) -> float:
        """When a stream next needs the clock (inf: none)."""
        if not self.jobs:                   # (the worker's loop asks at every turn)
            return math.inf
        return min((s.due for s in self.jobs.values() if s.due is not None),
                   default=math.inf)

    def tick(self, now: float) -> None:
        for job, stream in list(self.jobs.items()):
            if stream.due is not None and stream.due <= now:
                self.carry_out(job, stream.tick(now))

    def carry_out(self, job, instructions: list) -> None:
        """A stream's instructions, through the outbox; its job done once it is over."""
        for instruction in instructions:
            if isinstance(instruction, Resend):
                header, frames = instruction.message
                job.again.add(instruction.index)
                self.queue(job, header.kind, (header, frames))
            elif isinstance(instruction, Fresh):
                self.queue(job, Kind.PACKET, self.fresh(job, instruction))
            elif isinstance(instruction, Poll):
                self.control([Header(Kind.POLL, job.session, job.epoch, job.worker,
                                     instruction.number).pack()])
            elif isinstance(instruction, Finish):
                header, frames = instruction.message
                self.queue(job, header.kind, (header, frames))
        stream = self.jobs.get(job)
        if stream is not None and (stream.over or any(isinstance(i, GiveUp)
                                                      for i in instructions)):
            self.let_go(job)                # delivered, or no master answers

    def fresh(self, job, instruction) -> tuple:
        """(header, frames) of a fresh combination of a share's computed packets: those
        ``instruction.among`` names (a sparse repair's), else all."""
        kept = job.kept[instruction.share]
        chosen = [kept[i] for i in instruction.among] if instruction.among else \
            list(kept.values())
        coeffs, payload = combination(GF(job.coded.p), [(c, p) for c, p, _ in chosen],
                                      self.rng)
        return job.packet(instruction.index, coeffs, payload, rows=chosen[0][2])
