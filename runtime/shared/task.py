"""What a worker is asked to do, as typed values: a ``Task`` (with its ``FaultPlan``), a
``Load`` of resident shares and an ``Unload``. Each is encoded to the wire's JSON meta frame explicitly
(``to_meta``) and decoded with every field checked (``from_meta``, ProtocolError on anything
else), so master and worker agree on one schema, checked at both ends.

Workers never see a code object: a task names the code's computation by import path (with
the field), carries the operand arrays of the worker's shares (or names the resident data
that holds them) and the job's arguments, and says how to send each result. A worker works
through its shares in order and numbers its packets on (``packet_index``): share k's piece j
is packet k·m + j, which the master reads back with ``share_piece``.

>>> task = Task(f="ffcode.functions:matmul", p=65521, send="pieces", pieces=2, shares=1,
...             counts=(3,), operand=0)
>>> Task.from_meta(task.to_meta()) == task
True
>>> packet_index(1, 0, pieces=2), share_piece(2, pieces=2)
(2, (1, 0))
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

from ffcode.errors import ProtocolError

SENDS = ("whole", "systematic", "random", "pieces")
CORRUPTIONS = ("random", "piece", "shape")
MAX_COUNT = 1 << 32             # packets, shares, pieces: the wire numbers packets in 32 bits


def packet_index(share: int, piece: int, pieces: int) -> int:
    """The number of piece j of a worker's k-th share: k·m + j."""
    return share * pieces + piece


def share_piece(index: int, pieces: int) -> tuple:
    """(k, j): the share (in the worker's order) and piece of its packet ``index``."""
    return divmod(index, pieces)


def filed(held: Any, index: int, pieces: int) -> Optional[tuple]:
    """(share, piece) a worker's packet ``index`` is filed under: its k-th share of
    ``held``, piece j (None: it holds no k-th share)."""
    k, j = divmod(index, pieces)
    return (held[k], j) if k < len(held) else None


class Planned:
    """A job that makes its own plan (a relay's forwarding, a MapReduce phase):
    ``Cluster.submit(job)`` carries out ``job.plan(options)`` (runtime/jobrun.py)."""

    def plan(self, options: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class FaultPlan:
    """The faults one worker injects into a task (ffcode.Faults.for_worker): a slowdown
    factor, a pause before each piece of work (seconds), a corruption mode, a link rate
    (bytes per second), and the packet counts after which it crashes or hangs."""
    slowdown: float = 1.0
    delays: Tuple[float, ...] = ()
    corrupt: Optional[str] = None
    link_rate: Optional[float] = None
    crash_after: Optional[int] = None
    hang_after: Optional[int] = None

    def to_meta(self) -> dict:
        return dict(vars(self), delays=list(self.delays))      # shallow: asdict copies deep

    @classmethod
    def from_meta(cls, meta: Any) -> "FaultPlan":
        meta = _object(meta, "faults", cls)
        plan = cls(slowdown=_number(meta["slowdown"], "slowdown", low=1.0),
                   delays=tuple(_number(d, "delay") for d in _list(meta["delays"], "delays")),
                   corrupt=_optional(meta["corrupt"], "corrupt", _mode),
                   link_rate=_optional(meta["link_rate"], "link_rate", _rate),
                   crash_after=_optional(meta["crash_after"], "crash_after", _count),
                   hang_after=_optional(meta["hang_after"], "hang_after", _count))
        return plan


@dataclass(frozen=True)
class Task:
    """One worker's part of a job. f: the computation's import path; p: the field; send:
    how results travel ("whole", "systematic", "random" combinations or "pieces" as
    computed: ffcode.schemes.Scheme.send); pieces: m; shares: how many shares it works
    through; counts: each shipped share's number of arrays (empty for resident data);
    operand: the row-linear operand's place (full speed); data: the resident data holding
    the shares (None: shipped); seeds: each share's packet-coefficient seed (random);
    faults: what it injects; max_message: the largest message part the master takes;
    priority: the job's (a worker runs the tasks of its highest priority first, in turn);
    inner: for a relay, {"code": the inner code (ProductCode.description), "faults": its
    group's (Faults.to_dict, or None)}, which its group runs on each piece of work instead
    of f (None: the worker computes f itself)."""
    f: str
    p: int
    send: str
    pieces: int
    shares: int
    counts: Tuple[int, ...] = ()
    operand: Optional[int] = None
    data: Optional[int] = None
    seeds: Optional[Tuple[Tuple[int, ...], ...]] = None
    faults: FaultPlan = field(default_factory=FaultPlan)
    max_message: int = 256 << 20
    priority: int = 0
    inner: Optional[dict] = None

    @property
    def work(self) -> int:
        """Pieces of work in the task: m per share (a fault's pause comes before each)."""
        return self.pieces * self.shares

    def to_meta(self) -> dict:
        return dict(vars(self), counts=list(self.counts), faults=self.faults.to_meta(),
                    seeds=None if self.seeds is None else [list(s) for s in self.seeds])

    @classmethod
    def from_meta(cls, meta: Any) -> "Task":
        """The task a JOB message's meta describes; ProtocolError naming what is wrong."""
        meta = _object(meta, "task", cls)
        if not isinstance(meta["f"], str) or ":" not in meta["f"]:
            raise ProtocolError(f"a task's f must be an import path, not {meta['f']!r}")
        if meta["send"] not in SENDS:
            raise ProtocolError(f"a task's send must be one of {SENDS}, not {meta['send']!r}")
        shares = _count(meta["shares"], "shares")
        seeds = _optional(meta["seeds"], "seeds", lambda s, name: tuple(
            tuple(_count(x, name, MAX_COUNT ** 2) for x in _list(pair, name, 2))
            for pair in _list(s, name, shares)))
        return cls(f=meta["f"], p=_count(meta["p"], "p", 1 << 64), send=meta["send"],
                   pieces=_count(meta["pieces"], "pieces", low=1), shares=shares,
                   counts=tuple(_count(c, "counts") for c in _list(meta["counts"], "counts")),
                   operand=_optional(meta["operand"], "operand", _count),
                   data=_optional(meta["data"], "data", _count), seeds=seeds,
                   faults=FaultPlan.from_meta(meta["faults"]),
                   max_message=_count(meta["max_message"], "max_message", low=1),
                   priority=_signed(meta["priority"], "priority"),
                   inner=_optional(meta["inner"], "inner", _mapping))


@dataclass(frozen=True)
class Load:
    """Resident data for a worker to hold: its id and each share's number of arrays."""
    data: int
    counts: Tuple[int, ...]

    def to_meta(self) -> dict:
        return {"data": self.data, "counts": list(self.counts)}

    @classmethod
    def from_meta(cls, meta: Any) -> "Load":
        meta = _object(meta, "load", cls)
        return cls(_count(meta["data"], "data"),
                   tuple(_count(c, "counts") for c in _list(meta["counts"], "counts")))


@dataclass(frozen=True)
class Unload:
    """Resident data for a worker to drop."""
    data: int

    def to_meta(self) -> dict:
        return {"data": self.data}

    @classmethod
    def from_meta(cls, meta: Any) -> "Unload":
        return cls(_count(_object(meta, "unload", cls)["data"], "data"))


def _object(meta, what, cls) -> dict:
    """meta as a dict with exactly the fields of cls."""
    fields = set(cls.__dataclass_fields__)
    if not isinstance(meta, dict) or set(meta) != fields:
        keys = sorted(meta) if isinstance(meta, dict) else type(meta).__name__
        raise ProtocolError(f"a {what} needs the fields {sorted(fields)}, not {keys}")
    return meta


def _count(value, name, high=MAX_COUNT, low=0) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ProtocolError(f"a task's {name} must be an integer from {low} to {high}, "
                            f"not {value!r}")
    return value


def _signed(value, name) -> int:
    if type(value) is not int or not -MAX_COUNT <= value <= MAX_COUNT:
        raise ProtocolError(f"a task's {name} must be an integer from {-MAX_COUNT} to "
                            f"{MAX_COUNT}, not {value!r}")
    return value


def _number(value, name, low=0.0) -> float:
    if type(value) not in (int, float) or not low <= value < math.inf:
        raise ProtocolError(f"a task's {name} must be a finite number >= {low}, not "
                            f"{value!r}")
    return float(value)


def _rate(value, name) -> float:
    rate = _number(value, name)
    if rate == 0:
        raise ProtocolError(f"a task's {name} must be positive")
    return rate


def _mode(value, name) -> str:
    if value not in CORRUPTIONS:
        raise ProtocolError(f"a task's {name} must be one of {CORRUPTIONS}, not {value!r}")
    return value


def _list(value, name, length=None) -> list:
    if not isinstance(value, list) or len(value) > MAX_COUNT or \
            length is not None and len(value) != length:
        raise ProtocolError(f"a task's {name} must be a list" +
                            (f" of {length}" if length is not None else ""))
    return value


def _mapping(value, name) -> dict:
    if not isinstance(value, dict):
        raise ProtocolError(f"a task's {name} must be an object")
    return value


def _optional(value, name, check):
    return None if value is None else check(value, name)
