"""Job kinds: the one seam through which every kind of work reaches the workers.

A kind is three things. Its **payload**: the typed, frozen value that a task carries to
one worker (``to_meta``/``from_meta``, checked at both ends). Its **plan**, on the master:
each worker's task and the collector its packets go to (``JobPlan``; the runtime's job run
carries it out, whatever the kind). Its **steps**, on a worker: a generator that computes
the payload's work and hands each message to ``out``, yielding between turns so that other
jobs in flight take theirs. A task names its kind by a tag, found here: the built-in kinds
(a coded job, a relay's two jobs, the MapReduce phases, a gradient-coded step and a
multi-task training's step) by name; a kind defined
outside ffcode (a ``JobKind`` subclass) by its import path, which the worker imports as it
imports a job's function.

>>> from ffcode.runtime.shared.payloads import Coded
>>> find("coded").payload is Coded, tag_of(Coded("m:f", 2, "classic", 1, 1))
(True, 'coded')
>>> find("nope")
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's kind must be one of coded, relay, forward, map, shuffle, check, drop, gradient, mtl, mtl-user or the import path of an ffcode.runtime.JobKind, not 'nope'
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator, Optional, Protocol, Sequence

from ffcode import functions
from ffcode.decoding.collectors import Collector
from ffcode.errors import InvalidParameterError, ProtocolError
from ffcode.runtime.shared import local

Steps = Callable[[Any, Callable, Any], Iterator[None]]   # (job, out, worker) -> turns


class JobPlan(Protocol):
    """What the master's job run needs of a job of any kind: ``tasks[i]``, worker i's
    (Task, the arrays it carries), or None for no work; ``held[i]``, the shares (senders to
    the collector) worker i's packets are filed under, ``share_of`` saying which share
    and piece a packet index is; the ``collector`` and how many packets it ``needed``;
    ``measure``, what the collector's rank counts ("rank", or "results" when each
    worker's part is needed); ``label`` and ``name``, what the report calls the job and
    its code; ``pieces``, packets
    per share; ``work_per_packet``, pieces of work a packet took (a worker's speed);
    ``dtype``, the packets' payloads'; ``every_worker``, whether a lost worker fails the
    job; ``once``, whether each worker answers in one ANSWER (every packet of its shares,
    done implied) and is sent no stop (a plan without it: False); ``adversaries``, how
    many wrong workers the collector corrects; ``timeout`` and ``progress`` (rank,
    needed); ``resident``, the resident data it runs on (None:
    shipped); ``settings``, what its report says it was; ``release(buffers)``, its payload
    storage handed on to the next job. A plan may also say ``wait_for_stops`` (default
    True; see ffcode.Options)."""
    @property
    def tasks(self) -> Sequence[Optional[tuple]]: ...

    @property
    def held(self) -> Sequence[Sequence[int]]: ...

    @property
    def collector(self) -> Collector: ...

    @property
    def needed(self) -> int: ...

    @property
    def measure(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def pieces(self) -> int: ...

    @property
    def work_per_packet(self) -> float: ...

    @property
    def dtype(self) -> Any: ...

    @property
    def every_worker(self) -> bool: ...

    @property
    def once(self) -> bool: ...

    @property
    def adversaries(self) -> int: ...

    @property
    def timeout(self) -> float: ...

    @property
    def progress(self) -> Optional[Callable[[int, int], None]]: ...

    @property
    def resident(self) -> Any: ...

    def share_of(self, worker: int, index: int) -> Optional[tuple[int, int]]: ...

    def settings(self, inputs: Sequence[Any], verify: bool) -> dict: ...

    def release(self, buffers: dict) -> None: ...


class JobKind:
    """The base of a job kind defined outside ffcode: a subclass names its ``Payload`` (a
    frozen dataclass with ``to_meta`` and ``from_meta``), makes the master's ``plan`` of a
    job (a JobPlan: ffcode.runtime.KindPlan does the bookkeeping), and gives a worker's
    ``steps``. ``Cluster.submit(kind_instance)`` runs it; the workers find it by its import
    path (``tag``), so it lives in a module they can import."""
    Payload: ClassVar[type]
    through_relays: ClassVar[bool] = False  # True: plan(options, groups=sizes) on relays

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        if "Payload" in vars(cls):
            _BY_PAYLOAD[cls.Payload] = cls.tag()

    @classmethod
    def tag(cls) -> str:
        """What a task calls the kind: its import path."""
        return f"{cls.__module__}:{cls.__qualname__}"

    def plan(self, options: Any) -> JobPlan:
        """The master's plan of this job, with the cluster's ``options`` (ffcode.Options:
        its timeout and progress)."""
        raise NotImplementedError

    @staticmethod
    def steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
        """A worker's work on one task: ``job.payload`` its payload, ``job.shares`` and
        ``job.args`` the arrays it came with, ``job.stop`` set when the master stops it;
        each message to ``out(*job.packet(index, coefficients, payload))``, then
        ``out(*job.done())``; yield between turns."""
        raise NotImplementedError


@dataclass(frozen=True)
class Kind:
    """A kind as a worker finds it: its payload's type and its steps, each given itself or
    by import path (a built-in kind's: loaded on first use, so that a worker imports only
    what it runs)."""
    tag: str
    payload_at: Any     # the payload's type (its from_meta checks a task's), or its path
    steps_at: Any       # the steps (job, out, worker) -> turns, or their path

    @property
    def payload(self) -> Any:
        return _loaded(self.payload_at)

    @property
    def steps(self) -> Steps:
        return _loaded(self.steps_at)


def _loaded(where: Any) -> Any:
    if not isinstance(where, str):
        return where
    found = _LOADED.get(where)
    if found is None:
        module, _, name = where.partition(":")
        found = _LOADED[where] = getattr(importlib.import_module(module), name)
    return found


_LOADED: dict = {}      # import path -> what a built-in kind loaded from it (once)


_SHARED, _WORKER = "ffcode.runtime.shared", "ffcode.runtime.worker"
_BUILT_IN = {kind.tag: kind for kind in (
    Kind("coded", f"{_SHARED}.payloads:Coded", f"{_WORKER}.coded:coded_steps"),
    Kind("relay", f"{_SHARED}.payloads:Relayed", f"{_WORKER}.relay:relayed_steps"),
    Kind("forward", f"{_SHARED}.payloads:Forwarded", f"{_WORKER}.relay:forwarded_steps"),
    Kind("map", f"{_SHARED}.phases:Map", f"{_WORKER}.shuffler:map_steps"),
    Kind("shuffle", f"{_SHARED}.phases:Shuffle", f"{_WORKER}.shuffler:shuffle_steps"),
    Kind("check", f"{_SHARED}.phases:Check", f"{_WORKER}.shuffler:check_steps"),
    Kind("drop", f"{_SHARED}.phases:Drop", f"{_WORKER}.shuffler:drop_steps"),
    Kind("gradient", f"{_SHARED}.gradient:Gradient", f"{_WORKER}.gradient:gradient_steps"),
    Kind("mtl", f"{_SHARED}.mtl:MultiTask", f"{_WORKER}.mtl:mtl_steps"),
    Kind("mtl-user", f"{_SHARED}.mtl:UserStep", f"{_WORKER}.mtl:user_steps"))}
_BY_PAYLOAD: dict = {}      # a JobKind subclass's Payload -> its tag


def tag_of(payload: Any) -> str:
    """The tag of the kind a payload (or its base class) belongs to; TypeError for a payload
    of none."""
    tag = next((_BY_PAYLOAD[cls] for cls in type(payload).__mro__ if cls in _BY_PAYLOAD),
               None) or _built_in_tag(type(payload))
    if tag is None:
        raise InvalidParameterError(
            f"{type(payload).__name__} is no job kind's payload: name it as a "
            f"ffcode.runtime.JobKind subclass's Payload.")
    return tag


def built_in(payload: Any) -> bool:
    """Whether a payload is a built-in kind's."""
    return _built_in_tag(type(payload)) is not None


def _built_in_tag(cls: type) -> Optional[str]:
    """The tag a built-in payload's class carries (KIND), if it is that kind's payload."""
    tag = getattr(cls, "KIND", None)
    return tag if tag in _BUILT_IN and _BUILT_IN[tag].payload is cls else None


def find(tag: Any) -> Kind:
    """The kind a task's tag names: a built-in one, or a JobKind subclass by its import
    path (imported here, as a job's function is); ProtocolError otherwise."""
    kind = _BUILT_IN.get(tag) if isinstance(tag, str) else None
    if kind is not None:
        return kind
    try:
        if not isinstance(tag, str) or ":" not in tag:
            raise ValueError("no import path")
        if tag.startswith("__main__:"):
            local.import_main()             # a kind defined in the master's script
        found = functions.load(tag)
    except Exception as e:
        raise ProtocolError(f"a task's kind must be one of {', '.join(_BUILT_IN)} or the "
                            f"import path of an ffcode.runtime.JobKind, not "
                            f"{str(tag)[:200]!r}" + ("" if ":" not in str(tag) else
                                                     f" ({e})")) from None
    if not (isinstance(found, type) and issubclass(found, JobKind) and
            "Payload" in vars(found)):
        raise ProtocolError(f"{tag!r} is not an ffcode.runtime.JobKind with a Payload")
    return Kind(tag, found.Payload, found.steps)
