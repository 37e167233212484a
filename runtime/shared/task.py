"""What a worker is asked to do, as typed values: a ``Task`` (its kind's payload, with its
``FaultPlan``), a ``Load`` of resident shares and an ``Unload``. Each is encoded to the
wire's JSON meta frame explicitly (``to_meta``) and decoded with every field checked
(``from_meta``, ProtocolError on anything else), so master and worker agree on one schema,
checked at both ends. A task's payload is its kind's (runtime/shared/kinds.py): the worker
finds the kind by the tag the task carries, and the payload's own ``from_meta`` checks it.

Workers never see a code object: a coded task names the code's computation by import path
(with the field), carries the operand arrays of the worker's shares (or names the resident
data that holds them) and the job's arguments, and says how to send each result. A worker
works through its shares in order and numbers its packets on (``packet_index``): share k's
piece j is packet k·m + j, which the master reads back with ``share_piece``.

>>> from ffcode.runtime.shared.payloads import Coded
>>> task = Task(Coded(f="ffcode.functions:matmul", p=65521, scheme="compfs", pieces=2,
...                   shares=1, operand=0), counts=(3,))
>>> Task.from_meta(task.to_meta()) == task, task.kind
(True, 'coded')
>>> packet_index(1, 0, pieces=2), share_piece(2, pieces=2)
(2, (1, 0))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ffcode.delivery import MOST_FRESH, REPAIRS
from ffcode.errors import ProtocolError
from ffcode.runtime.shared import kinds, meta as check, wire

CORRUPTIONS = ("random", "piece", "shape")


def packet_index(share: int, piece: int, pieces: int) -> int:
    """The number of piece j of a worker's k-th share: k·m + j."""
    return share * pieces + piece


def share_piece(index: int, pieces: int) -> tuple:
    """(k, j): the share (in the worker's order) and piece of its packet ``index``."""
    return divmod(index, pieces)


def filed(held: Any, index: int, pieces: int, fresh: bool = False) -> Optional[tuple]:
    """(share, piece) a worker's packet ``index`` is filed under: its k-th share of
    ``held``, piece j (None: it holds no k-th share); where its job takes ``fresh``
    combinations (ffcode.delivery.fresh_index), those are pieces m, m + 1, ... of their
    shares, MOST_FRESH·m of them at most (a link losing 98 % needs 50 times more).

    >>> filed(("a", "b"), 9, 3, fresh=True), filed(("a", "b"), 9, 3)
    (('b', 4), None)
    """
    k, j = divmod(index, pieces)
    if k < len(held):
        return held[k], j
    if not fresh or not held:
        return None
    t, k = divmod(index - len(held) * pieces, len(held))
    return (held[k], pieces + t) if t < MOST_FRESH * pieces else None


@dataclass(frozen=True)
class FaultPlan:
    """The faults one worker injects into a task (ffcode.Faults.for_worker): a slowdown
    factor, a pause before each piece of work (seconds), a corruption mode, a link rate
    (bytes per second), the packet counts after which it crashes or hangs, and whether
    its link to the master loses messages (it then makes sure its messages arrive:
    runtime/worker/reliable.py)."""
    slowdown: float = 1.0
    delays: tuple[float, ...] = ()
    corrupt: Optional[str] = None
    link_rate: Optional[float] = None
    crash_after: Optional[int] = None
    hang_after: Optional[int] = None
    lossy: bool = False

    def to_meta(self) -> dict:
        return dict(vars(self), delays=list(self.delays))      # shallow: asdict copies deep

    @classmethod
    def from_meta(cls, meta: Any) -> "FaultPlan":
        meta = check.fields(meta, "faults", cls)
        return cls(slowdown=check.number(meta["slowdown"], "slowdown", low=1.0),
                   delays=tuple(check.number(d, "delay")
                                for d in check.listed(meta["delays"], "delays")),
                   corrupt=check.optional(meta["corrupt"], "corrupt", _mode),
                   link_rate=check.optional(meta["link_rate"], "link_rate", check.rate),
                   crash_after=check.optional(meta["crash_after"], "crash_after",
                                              check.count),
                   hang_after=check.optional(meta["hang_after"], "hang_after", check.count),
                   lossy=check.flag(meta["lossy"], "lossy"))


@dataclass(frozen=True)
class Task:
    """One worker's part of a job. payload: its kind's (``kind``, its tag); counts: each
    shipped share's number of arrays (empty for resident data); data: the resident data
    holding the shares (None: shipped); faults: what it injects; max_message: the largest
    message part the master takes; priority: the job's (a worker runs the tasks of its
    highest priority first, in turn); repair: how a rateless job's lost packets are made
    up (ffcode.delivery.Stream's), "sparse" only for a coded job whose packets may go
    plain (cfs)."""
    payload: Any
    counts: tuple[int, ...] = ()
    data: Optional[int] = None
    faults: FaultPlan = field(default_factory=FaultPlan)
    max_message: int = 256 << 20
    priority: int = 0
    repair: str = "dense"

    @property
    def kind(self) -> str:
        return kinds.tag_of(self.payload)

    def to_meta(self) -> dict:
        return {"kind": self.kind, "payload": self.payload.to_meta(),
                "counts": list(self.counts), "data": self.data,
                "faults": self.faults.to_meta(), "max_message": self.max_message,
                "priority": self.priority, "repair": self.repair}

    @classmethod
    def from_meta(cls, meta: Any) -> "Task":
        """The task a JOB message's meta describes; ProtocolError naming what is wrong."""
        if not isinstance(meta, dict) or set(meta) != TASK_FIELDS:
            keys = sorted(meta) if isinstance(meta, dict) else type(meta).__name__
            raise ProtocolError(f"a task needs the fields {sorted(TASK_FIELDS)}, not "
                                f"{keys}")
        kind = kinds.find(meta["kind"])
        payload = kind.payload.from_meta(meta["payload"])
        return cls(payload,
                   counts=tuple(check.count(c, "counts")
                                for c in check.listed(meta["counts"], "counts")),
                   data=check.optional(meta["data"], "data", check.count),
                   faults=FaultPlan.from_meta(meta["faults"]),
                   max_message=check.count(meta["max_message"], "max_message", low=1),
                   priority=check.signed(meta["priority"], "priority"),
                   repair=_repair(meta["repair"], payload))


TASK_FIELDS = {"kind", "payload", "counts", "data", "faults", "max_message", "priority",
               "repair"}


@dataclass(frozen=True)
class Load:
    """Resident data for a worker to hold: its id and each share's number of arrays."""
    data: int
    counts: tuple[int, ...]

    def to_meta(self) -> dict:
        return {"data": self.data, "counts": list(self.counts)}

    @classmethod
    def from_meta(cls, meta: Any) -> "Load":
        meta = check.fields(meta, "load", cls)
        return cls(check.count(meta["data"], "data"),
                   tuple(check.count(c, "counts")
                         for c in check.listed(meta["counts"], "counts")))


@dataclass(frozen=True)
class Unload:
    """Resident data for a worker to drop."""
    data: int

    def to_meta(self) -> dict:
        return {"data": self.data}

    @classmethod
    def from_meta(cls, meta: Any) -> "Unload":
        return cls(check.count(check.fields(meta, "unload", cls)["data"], "data"))


def job_message(header: Any, task: Task, arrays: Any) -> list:
    """A JOB message's frames: ``header`` (a wire.Header), the task's meta and its arrays.
    A built-in kind's task is encoded once for each distinct task and layout of its arrays
    (a job's tasks on resident data are the same job after job); any other kind's each
    time, as its payload's equality need not mean equal meta (``_kept``)."""
    arrays = wire.contiguous(arrays)
    key = (task, tuple((a.dtype.str, a.shape) for a in arrays)) if _kept(task) else None
    frame = None if key is None else _ENCODED.get(key)
    if frame is None:
        frame = wire.meta_frame(task.to_meta(), arrays)
        if key is not None:
            _remember(_ENCODED, key, frame)
    return [header.pack(), frame] + arrays


def read_task(frames: list) -> tuple[Task, kinds.Kind, list]:
    """(task, its kind, its arrays) of a JOB message's frames after the header;
    ProtocolError naming what is wrong. A meta frame read before is not parsed again (a
    worker on resident data is sent the same one job after job): the same bytes make the
    same task."""
    if not frames:
        raise ProtocolError("a task needs a meta frame")
    raw = wire.raw(frames[0])
    parsed = _PARSED.get(raw)
    if parsed is None:
        meta, layout = wire.read_meta(raw)
        task = Task.from_meta(meta)
        parsed = (task, kinds.find(meta["kind"]), layout)
        if _kept(task):
            _remember(_PARSED, raw, parsed)
    task, kind, layout = parsed
    return task, kind, wire.read_arrays(layout, frames[1:])


REMEMBERED = 64             # tasks' meta frames kept, encoded (master) or parsed (worker)
_ENCODED: dict = {}         # (task, its arrays' layout) -> its meta frame
_PARSED: dict = {}          # a meta frame -> (task, kind, layout)


def _kept(task: Task) -> bool:
    """Whether a task is remembered: a built-in kind's whose payload is immutable
    (hashable: not a relay's, which holds a dict)."""
    if not kinds.built_in(task.payload):
        return False
    try:
        hash(task)
    except TypeError:
        return False
    return True


def _remember(cache: dict, key: Any, value: Any) -> None:
    if len(cache) >= REMEMBERED:
        cache.clear()               # (a clear is one step: threads may share the cache)
    cache[key] = value


def _repair(value: Any, payload: Any) -> str:
    """A task's repair, checked against its payload: "sparse" only for a coded job of a
    scheme whose lost packets are made up by fresh combinations of pieces sent plain."""
    repair = check.choice(value, "repair", REPAIRS)
    scheme = getattr(payload, "strategy", None)     # a coded payload's scheme
    if repair == "sparse":
        try:
            if scheme is None:
                raise ValueError(f"a {type(payload).__name__} job has no scheme's packets")
            scheme.check_repair(repair)
        except ValueError as e:
            raise ProtocolError(f"a task's repair 'sparse' is for a coded job of cfs: "
                                f"{e}") from None
    return repair


def _mode(value: Any, name: str) -> str:
    return check.choice(value, name, CORRUPTIONS)
