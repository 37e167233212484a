"""A fake-clock harness for the master's job run (runtime/master/jobrun.py), without
processes, sockets, threads or sleeps: a plan, fake worker handles, worker messages made
with the wire format as a worker makes them, a clock that moves only when told, and the
job run's instructions, each send answered as the master's thread answers it.

    job = Harness(coded_plan())
    job.start()                          # the tasks, sent at t = 0
    job.feed(job.packet(0), job.packet(1))   # decodable: the stops go out
"""
from __future__ import annotations

import numpy as np

from ffcode import GF, MDS
from ffcode.pieces import piece_packets
from ffcode.runtime.master import events as ev
from ffcode.runtime.master.jobrun import JobRun
from ffcode.runtime.master.jobs import Options, Plan
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.wire import Header, Kind

F = GF(65521)
A, X = F.random((4, 3), seed=1), F.random(3, seed=2)
SESSION, EPOCH, WALL = 7, 1, 1_000_000.0


def coded_plan(n=3, k=2, adversaries=0, timeout=5.0, progress=None, scheme="classic",
               once=False, wait_for_stops=True):
    """An MDS(k, n) job of A (4 x 3) times x, worker i holding share i; ``once``: each
    worker answers in one message (None: as the plan decides for so small a job)."""
    options = Options(scheme=scheme, timeout=timeout, adversaries=adversaries,
                      progress=progress, wait_for_stops=wait_for_stops)
    return Plan(MDS(F, k, n), (A, X), options, assignment=tuple((i,) for i in range(n)),
                once=once)


class Worker:
    """A worker handle as a job run reads it: where it runs."""

    def __init__(self, place):
        self.host, self.pid, self.node = "fake", 1000 + place, None
        self.resident: dict = {}

    def __repr__(self):
        return f"Worker(pid {self.pid})"


class Harness:
    """One job run, its clock (``now``, seconds) and every instruction it gave (``log``).
    ``feed`` answers each Send with a Sent at the clock's time (``slow``: seconds each
    message takes; ``failing``: place -> why it cannot take a message; ``silent``: places
    that cannot acknowledge a stop) and each Resume with a Work, and returns the other
    instructions; ``sends`` keeps (place, kind, patience) of every send."""

    def __init__(self, plan, check=None, encode=0.0):
        self.plan = plan
        self.run = JobRun(plan, EPOCH, {"scheme": "test"}, session=SESSION, encode=encode,
                          check=check)
        self.now = 0.0
        self.workers = tuple(Worker(i) for i in range(self.run.count))
        self.log: list = []
        self.sends: list = []
        self.slow = 0.0
        self.failing: dict = {}
        self.silent: set = set()

    # -- the clock and the events -------------------------------------------------------

    def at(self, now):
        """Move the clock to ``now`` (it never goes back)."""
        assert now >= self.now
        self.now = now
        return self

    def feed(self, *events):
        """Each event in turn; the instructions besides sends and resumes."""
        out = []
        for event in events:
            queue = [event]
            while queue:
                for instruction in self.run.handle(queue.pop(0)):
                    self.log.append(instruction)
                    if isinstance(instruction, ev.Send):
                        queue.append(self._answer(instruction))
                    elif isinstance(instruction, ev.Resume):
                        queue.append(ev.Work(self.now))
                    else:
                        out.append(instruction)
        return out

    def _answer(self, send):
        """Each message in turn, as the shell sends it: waiting at most what the send
        allows at its turn (none sent once a task's turn comes too late)."""
        deliveries = []
        for place, frames in send.messages:
            patience = send.wait_at(self.now)
            if patience is None:
                return ev.Sent(tuple(deliveries), self.now, late=True)
            self.now += self.slow
            self.sends.append((place, send.kind, patience))
            failed = self.failing.get(place)
            deliveries.append(ev.Delivery(place, self.now, failed, answers=failed is None
                                          and place not in self.silent))
        return ev.Sent(tuple(deliveries), self.now)

    def start(self):
        return self.feed(ev.Start(self.workers, self.now, WALL))

    def tick(self, now=None):
        return self.at(self.now if now is None else now).feed(ev.Tick(self.now))

    def stops(self):
        """The places sent a stop, in order."""
        return [place for place, kind, _ in self.sends if kind == Kind.STOP]

    # -- a worker's messages --------------------------------------------------------------

    def header(self, kind, place, **fields):
        return Header(kind, SESSION, EPOCH, place, sent=WALL + self.now, **fields)

    def result(self, place):
        """Worker ``place``'s exact result: its share times x."""
        share, x = self.plan.tasks[place][1]
        return F.matmul(share, x)

    def packet(self, place, corrupt=False, index=0, header_place=None, payload=None):
        """Worker ``place``'s packet ``index`` of its result (``corrupt``: one element
        off), as a worker sends it."""
        y = self.result(place)
        packet = list(piece_packets(F, y, self.plan.pieces, place, systematic=True))[index]
        payload = packet.payload if payload is None else payload
        if corrupt:
            payload = payload.copy()
            payload.flat[0] = F.add(payload.flat[0], 1)
        sender = place if header_place is None else header_place
        header = self.header(Kind.PACKET, sender, index=index, rows=y.shape[0],
                             compute=0.01)
        frames = wire.packet_arrays(header, np.asarray(packet.coeffs, self.plan.dtype),
                                    np.asarray(payload, self.plan.dtype))
        return self.message(place, header, frames)

    def answer(self, place, count=None, corrupt=False):
        """Worker ``place``'s ANSWER: every packet of its result at once (``count``: only
        the first so many; ``corrupt``: one element of the first off), as a worker sends
        it."""
        y = self.result(place)
        packets = list(piece_packets(F, y, self.plan.pieces, place, systematic=True))
        payloads = [np.asarray(p.payload, self.plan.dtype) for p in packets][:count]
        if corrupt:
            payloads[0] = payloads[0].copy()
            payloads[0].flat[0] = F.add(payloads[0].flat[0], 1)
        header = self.header(Kind.ANSWER, place, rows=y.shape[0], compute=0.01)
        frames = wire.answer_arrays(header, [np.asarray(p.coeffs, self.plan.dtype)
                                             for p in packets][:count], payloads)
        return self.message(place, header, frames)

    def done(self, place):
        return self.message(place, self.header(Kind.DONE, place), [wire.EMPTY_META])

    def stopped(self, place):
        return self.message(place, self.header(Kind.STOPPED, place), [wire.EMPTY_META])

    def failed(self, place, error="ArithmeticError: boom"):
        header = self.header(Kind.FAILED, place)
        return self.message(place, header, wire.control(header, {"error": error})[1:])

    def message(self, place, header, frames):
        """A message as received: its header through the wire, at the clock's time."""
        return ev.message(place, Header.unpack(header.pack()), list(frames), self.now)


def kinds(instructions):
    """The instructions' class names, in order."""
    return [type(i).__name__ for i in instructions]
