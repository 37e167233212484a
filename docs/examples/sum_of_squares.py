"""A job kind of its own: the exact sum of squares of a vector over GF(p), each worker
squaring and summing its slice, the master adding up what they send."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ffcode import GF, PrimeField
from ffcode.decoding.collectors import Gather
from ffcode.errors import ProtocolError
from ffcode.runtime import JobKind, KindPlan, Task


@dataclass(frozen=True)
class Slice:
    """What a task says besides its slice (which travels as an array): the field."""
    p: int

    def to_meta(self) -> dict:
        return {"p": self.p}

    @classmethod
    def from_meta(cls, meta: Any) -> Slice:     # checked: nothing from the network is trusted
        if not isinstance(meta, dict) or set(meta) != {"p"} or type(meta["p"]) is not int:
            raise ProtocolError("a sum-of-squares task carries its field's p, and only it")
        return cls(meta["p"])


class SumOfSquares(JobKind):
    Payload = Slice

    def __init__(self, F: PrimeField, x: Any, workers: int) -> None:
        self.F, self.slices = F, np.array_split(F.elements(x, "x"), workers)

    def plan(self, options: Any) -> KindPlan:
        tasks = [(Task(Slice(self.F.p), counts=(1,)), [part]) for part in self.slices]
        total = functools.partial(functools.reduce, self.F.add)
        return KindPlan(tasks, Gather(self.F, len(tasks), total), name="sum of squares",
                        options=options, dtype=self.F.dtype)

    @staticmethod
    def steps(job: Any, out: Any, worker: Any) -> Iterator[None]:
        F = GF(job.payload.p)
        (part,) = job.shares[0]
        square_sum = F.matmul(part.reshape(1, -1), part.reshape(-1, 1)).reshape(1)
        out(*job.packet(0, np.ones(1, F.dtype), square_sum))
        out(*job.done())
        yield
