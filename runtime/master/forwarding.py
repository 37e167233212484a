"""A relay's job on its group for an ordinary code (a cluster of relays, ``Cluster(groups=
...)``, running a flat code): the master plans the job as if the relay were a worker
holding its group's shares, already encoded, and tells it how its workers hold them, what
their faults are, and each share's decoding equation. The relay deals the shares to its
workers, who compute them exactly as without a relay, and passes their packets on to the
master as they come, only those that raise the rank of what it forwarded
(ffcode.decoding.relay.Forwarder): one connection per group at the master, and no packet
its relay knew to be dependent.

A ``Forwarding`` is that job as a value the relay's own Cluster runs
(``group.submit(forwarding)``), checked from the relay's task: nothing in it is trusted
before it is. What the master puts into a relay's task for three shares of MDS(2 of 6),
one per worker of its group:

>>> from ffcode import GF, MDS
>>> from ffcode.runtime.master.jobs import Options, Plan, forwarded
>>> from ffcode.runtime.worker.process import split_shares
>>> F = GF(65521)
>>> code = MDS(F, 2, 6)
>>> assignment, inner = forwarded(code, (3, 3), Options())
>>> plan = Plan(code, (F.random((4, 3), seed=1), F.random(3, seed=2)), Options(), assignment,
...             inner=inner)
>>> task, arrays = plan.tasks[1]
>>> task.shares, task.inner["members"], task.inner["powers"]
(3, [1, 1, 1], [[1, 4], [1, 5], [1, 6]])
>>> job = Forwarding(task, split_shares(arrays, task.counts), 3, forward=print)
>>> [t.shares for t, _ in job.plan(Options()).tasks]
[1, 1, 1]
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ffcode import checks
from ffcode.decoding.relay import Forwarder
from ffcode.field import GF
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.task import Planned, Task, filed
from ffcode.schemes import Scheme

FIELDS = {"members", "faults", "scheme", "work", "powers", "filter"}


class Forwarding(Planned):
    """A relay's task (its ``inner`` saying how its group of ``size`` workers holds its
    shares) as the job its group runs; ``shares`` are the task's arrays, a list per share,
    then ``args``; forward(packet) is handed each packet to pass on. ValueError naming
    what in the task is wrong."""

    def __init__(self, task: Task, split: tuple, size: int,
                 forward: Callable[[Any], Any]) -> None:
        inner = task.inner
        if not isinstance(inner, dict) or set(inner) != FIELDS:
            raise ValueError(f"a relay's forwarding task needs the fields {sorted(FIELDS)}")
        shares, self.args = split
        members = inner["members"]
        if not (isinstance(members, list) and len(members) == size and
                all(type(c) is int and c >= 0 for c in members) and
                sum(members) == task.shares == len(shares)):
            raise ValueError(f"the task deals {task.shares} shares over {size} workers "
                             f"in a way that does not add up: {members!r}")
        self.task, self.shares, self.members = task, shares, members
        self.F = F = GF(task.p)
        self.scheme = Scheme.parse(inner["scheme"])
        if self.scheme.send != task.send:
            raise ValueError(f"a {self.scheme} job's task sends {self.scheme.send}, not "
                             f"{task.send}")
        self.work = checks.integer(inner["work"], "work", low=1, high=1 << 16)
        powers = inner["powers"]
        if not (isinstance(powers, list) and len(powers) == task.shares and powers and
                all(isinstance(row, list) and len(row) == len(powers[0]) for row in powers)):
            raise ValueError("a relay's task needs one decoding equation per share")
        self.powers = F.elements(powers, "the shares' decoding equations")
        self.filter = checks.flag(inner["filter"], "filter")
        self.faults = Faults() if inner["faults"] is None else \
            Faults.from_dict(inner["faults"])
        self.faults.check_workers(size)
        self.forward = forward

    def plan(self, options: Any) -> "ForwardPlan":
        return ForwardPlan(self, options)


class ForwardPlan:
    """A Forwarding as the plan a job run carries out (runtime/jobrun.py): each worker of
    the group its shares' Task, numbered in the relay's order, and a Forwarder as its
    collector. ``options`` (runtime.jobs.Options): the group job's timeout and progress."""

    resident = None             # shipped with the job
    adversaries = 0             # the master corrects wrong senders
    code = None                 # nothing is decoded here
    buffer = None
    every_worker = False        # a lost worker's packets are made up by the others'

    def __init__(self, job: Forwarding, options: Any) -> None:
        task, self.options, self.F, self.faults = job.task, options, job.F, job.faults
        self.scheme, self.pieces, self.work_pieces = job.scheme, task.pieces, job.work
        self.name = f"forwarding of {task.shares} shares"
        self.collector = Forwarder(job.F, job.powers, task.pieces, job.forward, job.filter)
        self.held, self.tasks = [], []
        at = 0
        for worker, count in enumerate(job.members):
            held = list(range(at, at + count))
            self.held.append(held)
            self.tasks.append(None if not count else (dataclasses.replace(
                task, shares=count, counts=task.counts[at:at + count],
                seeds=None if task.seeds is None else task.seeds[at:at + count],
                faults=job.faults.for_worker(worker, job.work * count), inner=None),
                [a for share in job.shares[at:at + count] for a in share] + list(job.args)))
            at += count
        self.assignment = tuple(tuple(held) for held in self.held)

    @property
    def needed(self) -> int:
        return self.collector.needed

    def share_of(self, worker: int, index: int) -> Any:
        """(the relay's share, piece) of a group worker's packet ``index`` (None: none)."""
        return filed(self.held[worker], index, self.pieces)

    def settings(self, inputs: Any, verify: bool) -> dict:
        return {"code": self.name, "p": self.F.p, "scheme": self.scheme.value,
                "pieces": self.pieces, "faults": self.faults.to_dict(),
                "assignment": [list(held) for held in self.held], "filter":
                self.collector.filter}
