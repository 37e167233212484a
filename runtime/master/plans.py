"""``KindPlan``: the bookkeeping of a job kind's plan (ffcode.runtime.shared.kinds.JobPlan),
for the kinds that are not coded jobs: each worker a task and one share, every packet of
it filed under that share, packets of bytes unless the kind says otherwise. The coded
plan (runtime/master/jobs.py) and a relay's forwarding (runtime/master/forwarding.py) fill
in the same fields for their shares.

>>> from ffcode.decoding.collectors import Gather
>>> from ffcode import GF
>>> plan = KindPlan([None, None], Gather(GF(7), 2, list), name="two idle workers")
>>> plan.held, plan.needed, plan.share_of(1, 3)
([[0], [1]], 2, (1, 3))
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ffcode.decoding.collectors import Collector

TIMEOUT = 600.0


class KindPlan:
    """A job of ``tasks`` (worker i's (Task, arrays), or None), its packets to
    ``collector``; ``name`` and ``label`` for its report; ``every_worker``: a lost worker
    fails the job (else it ends as its other workers finish); ``options`` (ffcode.Options,
    or None): its timeout and progress; ``dtype``: its packets' payloads'."""

    adversaries = 0             # a kind of this base trusts its workers' packets
    resident = None             # its data travels with its tasks
    pieces = 1                  # a packet per share: worker i's packet k is piece k
    work_per_packet = 1.0
    measure = "results"         # each worker's answer is one of those needed
    once = False                # its workers send packets, then DONE

    def __init__(self, tasks: Sequence[Optional[tuple]], collector: Collector, *,
                 name: str, label: str = "", every_worker: bool = True,
                 options: Any = None, dtype: Any = np.uint8) -> None:
        self.tasks, self.collector, self.name = list(tasks), collector, name
        self.label = label or name
        self.every_worker, self.dtype = every_worker, np.dtype(dtype)
        self.held = [[w] for w in range(len(self.tasks))]
        self.timeout: float = getattr(options, "timeout", TIMEOUT)
        self.wait_for_stops: bool = getattr(options, "wait_for_stops", True)
        self.progress: Optional[Callable[[int, int], None]] = getattr(options, "progress",
                                                                       None)

    @property
    def needed(self) -> int:
        return self.collector.needed

    def share_of(self, worker: int, index: int) -> Optional[tuple[int, int]]:
        return worker, index

    def settings(self, inputs: Sequence[Any], verify: bool) -> dict:
        return {"code": self.name}

    def release(self, buffers: dict) -> None:
        """Nothing to hand on: its collector keeps no payload storage."""
