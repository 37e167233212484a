"""A relay's job on its group for an ordinary code (a cluster of relays, ``Cluster(groups=
...)``, running a flat code): the master plans the job as if the relay were a worker
holding its group's shares, already encoded, and tells it how its workers hold them, what
their faults are, and each share's decoding equation. The relay deals the shares to its
workers, who compute them exactly as without a relay, and passes their packets on to the
master as they come, only those that raise the rank of what it forwarded
(ffcode.decoding.relay.Forwarder): one connection per group at the master, and no packet
its relay knew to be dependent.

A ``Forwarding`` is that job as a job kind's value the relay's own Cluster runs
(``group.submit(forwarding)``), checked from the relay's task: nothing in it is trusted
before it is. What the master puts into a relay's task for three shares of MDS(2 of 6),
one per worker of its group:

>>> from ffcode import GF, MDS
>>> from ffcode.runtime.master.jobs import Options, Plan, forwarded
>>> F = GF(65521)
>>> code = MDS(F, 2, 6)
>>> assignment, relayed = forwarded(code, (3, 3), Options())
>>> plan = Plan(code, (F.random((4, 3), seed=1), F.random(3, seed=2)), Options(), assignment,
...             relayed=relayed)
>>> task, arrays = plan.tasks[1]
>>> task.kind, task.payload.coded.shares, task.payload.members, task.payload.powers
('forward', 3, (1, 1, 1), ((1, 4), (1, 5), (1, 6)))
>>> shares = [arrays[2 * k:2 * k + 2] for k in range(3)]
>>> job = Forwarding(task, (shares, arrays[6:]), 3, forward=print)
>>> [t.payload.shares for t, _ in job.plan(Options()).tasks]
[1, 1, 1]
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ffcode.decoding.relay import Forwarder
from ffcode.field import GF
from ffcode.runtime.master.plans import KindPlan
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.kinds import JobKind
from ffcode.runtime.shared.payloads import Forwarded
from ffcode.runtime.shared.task import Task, filed


class Forwarding(JobKind):
    """A relay's forwarding task (a Forwarded payload saying how its group of ``size``
    workers holds its shares) as the job its group runs; ``split`` is the task's arrays,
    a list per share, then the arguments; forward(packet) is handed each packet to pass on.
    ValueError naming what in the task does not fit."""

    def __init__(self, task: Task, split: tuple, size: int,
                 forward: Callable[[Any], Any]) -> None:
        payload = task.payload
        if not isinstance(payload, Forwarded):
            raise ValueError(f"a relay forwards a 'forward' task, not a {task.kind!r} one")
        shares, self.args = split
        coded = payload.coded
        if len(payload.members) != size or coded.shares != len(shares):
            raise ValueError(f"the task deals {coded.shares} shares over "
                             f"{len(payload.members)} workers, not the {len(shares)} "
                             f"shares it carries over this group's {size}")
        self.task, self.payload, self.shares = task, payload, shares
        self.F = F = GF(coded.p)
        if payload.scheme != coded.scheme:     # by name: the coded part names its object
            raise ValueError(f"a {str(payload.scheme)[:100]} job's task sends by the "
                             f"{coded.scheme} scheme")
        self.scheme = coded.strategy
        self.powers = F.elements([list(row) for row in payload.powers],
                                 "the shares' decoding equations")
        self.faults = Faults() if payload.faults is None else \
            Faults.from_dict(payload.faults)
        self.faults.check_workers(size)
        self.forward = forward

    def __repr__(self) -> str:
        return f"forwarding of {self.payload.coded.shares} shares"

    def plan(self, options: Any) -> "ForwardPlan":
        return ForwardPlan(self, options)


class ForwardPlan(KindPlan):
    """A Forwarding as the plan a job run carries out (runtime/master/jobrun.py): each
    worker of the group its shares' Task, numbered in the relay's order, and a Forwarder
    as its collector. ``options`` (runtime.jobs.Options): the group job's timeout and
    progress."""

    measure = "rank"

    def __init__(self, job: Forwarding, options: Any) -> None:
        task, payload = job.task, job.payload
        coded, m = payload.coded, payload.coded.pieces
        self.F, self.faults, self.scheme = job.F, job.faults, job.scheme
        collector = Forwarder(job.F, job.powers, m, job.forward, payload.filter)
        tasks: list = []
        held: list = []             # each worker's shares, in the relay's order
        at = 0
        for worker, count in enumerate(payload.members):
            held.append(list(range(at, at + count)))
            tasks.append(None if not count else (dataclasses.replace(
                task, payload=dataclasses.replace(
                    coded, shares=count,
                    seeds=None if coded.seeds is None else coded.seeds[at:at + count]),
                counts=task.counts[at:at + count],
                faults=job.faults.for_worker(worker, payload.work * count)),
                [a for share in job.shares[at:at + count] for a in share] + list(job.args)))
            at += count
        super().__init__(tasks, collector, name=repr(job), label=job.scheme.value,
                         every_worker=False, options=options, dtype=job.F.dtype)
        self.held = held
        self.pieces, self.work_per_packet = m, payload.work / m
        self.filter = payload.filter

    def share_of(self, worker: int, index: int) -> Any:
        """(the relay's share, piece) of a group worker's packet ``index`` (None: none)."""
        return filed(self.held[worker], index, self.pieces)

    def settings(self, inputs: Any, verify: bool) -> dict:
        return {"code": self.name, "p": self.F.p, "scheme": self.scheme.value,
                "pieces": self.pieces, "faults": self.faults.to_dict(),
                "assignment": [list(held) for held in self.held], "filter": self.filter}
