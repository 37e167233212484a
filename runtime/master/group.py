"""A relay's group, as the relay reaches it (ffcode.runtime.worker.relay.GroupRunner): a
local Cluster of the group's workers, started and connected before the relay says hello
to its master. A piece of a hierarchical code's work runs as one job of its inner code at
full speed; an ordinary code's shares are forwarded (runtime/master/forwarding.py).

A group's size is checked before any process starts:

>>> Group(0)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'size' must be from 1 to 1024, not 0.
"""
from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any, Callable, Sequence

from ffcode import checks
from ffcode.gradcoding import CyclicRepetition
from ffcode.runtime.master.cluster import Cluster
from ffcode.runtime.master.forwarding import Forwarding
from ffcode.runtime.master.gradient import GradientStep
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.local import IN_POOL
from ffcode.runtime.shared.task import Task

GROUP_SCHEME = "compfs"     # the inner code at full speed
GROUP_TIMEOUT = 600.0       # seconds a group's job may take (the master's job has its own)
MAX_GROUP = 1024            # workers a relay starts at most (as a Cluster does)


class Group:
    """The ``size`` local workers of a relay (GroupRunner)."""

    def __init__(self, size: int) -> None:
        size = checks.integer(size, "size", low=1, high=MAX_GROUP)
        os.environ.pop(IN_POOL, None)       # this process starts its group's pool
        self.cluster = Cluster(size)
        try:
            self.cluster.wait()             # ready when its group is: then it says hello
        except BaseException:
            self.cluster.close()
            raise

    @property
    def n_workers(self) -> int:
        return self.cluster.n_workers

    def run(self, code: Any, operands: Sequence[Any], *, faults: Faults | None,
            priority: int) -> Future:
        """One piece of work: a job of the inner code on the group, at full speed."""
        return self.cluster.submit(code, *operands, scheme=GROUP_SCHEME, faults=faults,
                                   timeout=GROUP_TIMEOUT, priority=priority)

    def forward(self, task: Task, split: tuple, arrived: Callable[[Any], None], *,
                priority: int) -> Future:
        """The shares of a forwarding task dealt to the group, each packet that adds rank
        handed to ``arrived`` as it comes."""
        job = Forwarding(task, split, self.n_workers, arrived)
        return self.cluster.submit(job, timeout=GROUP_TIMEOUT, priority=priority)

    def gradient(self, F: Any, f: str, parts: list, args: Sequence[Any], stragglers: int,
                 bound: int | None, *, faults: Faults | None, priority: int) -> Future:
        """A partition's gradient: the sum of its parts' (one per member, ``f``'s) by a
        cyclic repetition code over the group, at full speed."""
        code = CyclicRepetition(F, self.n_workers, stragglers)
        step = GradientStep(code, f, parts, *args, bound=bound)
        return self.cluster.submit(step, faults=faults, timeout=GROUP_TIMEOUT,
                                   priority=priority)

    def close(self) -> None:
        self.cluster.close()
