"""The payload of a gradient-coded step (a job kind, runtime/shared/kinds.py): what one
worker computes and sends of a gradient code's step, checked at both ends.

>>> task = Gradient(f="ffcode.functions:square", p=65521, coefficients=(1, 65520))
>>> Gradient.from_meta(task.to_meta()) == task
True
>>> Gradient.from_meta(dict(task.to_meta(), coefficients=[1, 65521]))
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's coefficients must be integers from 1 to p - 1 = 65520, one per partition, not [1, 65521]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Tuple

from ffcode.errors import ProtocolError
from ffcode.runtime.shared import meta as check


@dataclass(frozen=True)
class Gradient:
    """f: the import path of the gradient of one partition, f(F, *the partition's arrays,
    *the step's arguments), in GF(p); p: the field; coefficients: the worker's B[i, j] for
    its partitions in the order it processes them (their arrays come as one share per
    partition, in that order); partial: it sends its message after each partition (at
    full speed), else once, after the last; bound: the largest magnitude a partition's
    gradient may have as a signed integer (fixed point), so that the sum cannot wrap
    around mod p (None: any field elements). For a relay, ``group``: its group's inner
    code, (stragglers, the group's faults as Faults.to_dict or None): the relay's group
    computes each partition's gradient, the partition cut into the group's partitions
    (None: a worker computes its own)."""
    KIND: ClassVar[str] = "gradient"
    f: str
    p: int
    coefficients: Tuple[int, ...]
    partial: bool = True
    bound: Optional[int] = None
    group: Optional[Tuple[int, Optional[dict]]] = None

    def to_meta(self) -> dict:
        return {"f": self.f, "p": self.p, "coefficients": list(self.coefficients),
                "partial": self.partial, "bound": self.bound,
                "group": None if self.group is None else list(self.group)}

    @classmethod
    def from_meta(cls, meta: Any) -> "Gradient":
        meta = check.fields(meta, "gradient task", cls)
        p = check.count(meta["p"], "p", 1 << 64, low=2)
        weights = meta["coefficients"]
        if not (isinstance(weights, list) and weights and all(
                type(w) is int and 0 < w < p for w in weights)):
            raise ProtocolError(f"a task's coefficients must be integers from 1 to p - 1 = "
                                f"{p - 1}, one per partition, not {str(weights)[:200]}")
        bound = check.optional(meta["bound"], "bound",
                               lambda b, name: check.count(b, name, (p - 1) // 2))
        return cls(f=check.path(meta["f"], "f"), p=p, coefficients=tuple(weights),
                   partial=check.flag(meta["partial"], "partial"), bound=bound,
                   group=check.optional(meta["group"], "group", _group))


def _group(value: Any, name: str) -> tuple:
    """A relay's inner code: [its stragglers, its group's faults (a mapping) or None]."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ProtocolError(f"a task's {name} must be [stragglers, faults], not "
                            f"{str(value)[:200]}")
    return (check.count(value[0], f"{name} stragglers"),
            check.optional(value[1], f"{name} faults", check.mapping))
