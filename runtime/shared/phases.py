"""What the master's and the workers' sides of a coded MapReduce job agree on: its phases'
payloads (``Map``, ``Shuffle``, ``Check``, ``Drop``: job kinds, runtime/shared/kinds.py),
the emulated networks, the size of an output's chunks to the master, and the checks of a
job's field, memory budget, link delay and peer links' losses, made alike at both ends."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional
from urllib.parse import urlsplit

from ffcode import checks
from ffcode.channel import Loss
from ffcode.errors import InvalidParameterError, ProtocolError
from ffcode.field import GF, MAX_P
from ffcode.mapreduce.shuffle import Bytes, Placement, Vectors
from ffcode.mapreduce.verify import SEED_BITS
from ffcode.runtime.shared import meta as check

NETWORKS = ("links", "turns")
CHUNK = 16 << 20            # bytes of output per packet to the master, at most
MAX_DELAY = 3600.0          # seconds an emulated link may hold a message


def chunk_of(max_message: int) -> int:
    """Bytes of output per packet to the master: CHUNK, or less where the master takes
    less."""
    return min(CHUNK, max_message)


def prime_of(value: Any, name: str) -> int:
    """A job's field: a prime p that ffcode.GF takes (2 <= p < 2**63); ValueError naming
    ``name`` otherwise."""
    if type(value) is not int or not 2 <= value < MAX_P or not checks.is_prime(value):
        raise InvalidParameterError(
            f"Argument '{name}' must be a prime, not {value!r}: ffcode.GF's "
            f"fields are those of the primes below 2**63.")
    return value


def memory_of(value: Any) -> Optional[int]:
    """Bytes a worker's runs may hold (None: the default share of its host's memory)."""
    return None if value is None else checks.integer(value, "memory", low=1)


def delay_of(value: Any) -> float:
    """A link's delay: seconds, from 0 to MAX_DELAY."""
    delay = checks.non_negative(value, "link_delay")
    if delay > MAX_DELAY:
        raise InvalidParameterError(f"Argument 'link_delay' must be at most {MAX_DELAY:g} s, not "
                                    f"{delay:g}.")
    return delay


def peer_loss(loss: Any, burst: Any, workers: int) -> tuple:
    """The peer links' losses of a shuffle on ``workers`` workers: (each worker's loss, the
    burst), from ``loss`` (None or 0: none; p: every peer link's; {worker: p}: the links
    from and to that worker, a link between two named workers losing as the worse) and
    ``burst`` (None: independent losses; else the mean run of losses, of every lossy
    link). () when nothing is lost. InvalidParameterError naming what is wrong: a loss
    outside [0, 1), a worker the job has not, a burst too short for a link's loss (Loss).

    >>> peer_loss({1: 0.2}, 2.0, 3)
    ((0.0, 0.2, 0.0), 2.0)
    """
    if isinstance(loss, dict):
        for worker in loss:
            if type(worker) is not int or not 0 <= worker < workers:
                raise InvalidParameterError(
                    f"Argument 'link_loss' names worker {worker!r}, which the job has not "
                    f"(its workers are 0 to {workers - 1}).")
        each = tuple(float(Loss(loss.get(w, 0.0)).p) for w in range(workers))
    else:
        each = (Loss(0.0 if loss is None else loss).p,) * workers
    if max(each) >= 1.0:
        raise InvalidParameterError(
            "Argument 'link_loss' must be below 1: a peer link losing every message "
            "cannot carry the shuffle.")
    if burst is not None:
        Loss(max(each), burst)          # (checks the burst against the worst link)
    if not any(each):
        return ()
    return each, None if burst is None else float(burst)


def _listening(value: Any, name: str) -> str:
    if not (value in ("ipc", "tcp") or isinstance(value, str) and
            value.startswith("tcp://") and urlsplit(value).hostname):
        raise ProtocolError(f"a map task listens on 'ipc', 'tcp' or 'tcp://HOST', not "
                            f"{value!r}")
    return value


@dataclass(frozen=True)
class Map:
    """A worker's map task: the job's run (its id on the worker), the map function ``f``
    (an import path), the placement (``workers`` K, ``load`` r, files ``per_batch``) and this
    worker's place ``index`` in it, whether the shuffle is coded, the field of its values
    (None: bytes), the reduce function's path, where it listens for its peers ("ipc",
    "tcp" or "tcp://HOST"), each worker's identity (``peers``: its pid on ipc, its CURVE
    key on tcp), this worker's CURVE pair (tcp only) and the bytes its runs may hold
    (None: the default share of its host's memory).

    >>> task = Map(run=7, f="ffcode.mapreduce.terasort:partition", workers=3, load=2,
    ...            index=1, per_batch=1, coded=True, field=None, reduce=None,
    ...            listen="ipc", peers=(11, 12, 13))
    >>> Map.from_meta(task.to_meta()) == task, task.placement.mapped_by(1)
    (True, [0, 2])
    """
    KIND: ClassVar[str] = "map"
    run: int
    f: str
    workers: int
    load: int
    index: int
    per_batch: int
    coded: bool
    field: Optional[int]
    reduce: Optional[str]
    listen: str
    peers: tuple
    keys: Optional[tuple] = None
    memory: Optional[int] = None

    @property
    def placement(self) -> Placement:
        return Placement(self.workers, self.load,
                         files=self.per_batch * len(Placement(self.workers, self.load).subsets))

    def algebra(self) -> Any:
        """What the values are: bytes, or vectors of GF(field)."""
        return Bytes() if self.field is None else Vectors(GF(self.field))

    def to_meta(self) -> dict:
        return dict(vars(self), peers=list(self.peers),
                    keys=None if self.keys is None else list(self.keys))

    @classmethod
    def from_meta(cls, meta: Any) -> "Map":
        meta = check.fields(meta, "map task", cls)
        K = check.count(meta["workers"], "workers", 1024, low=2)
        listen = _listening(meta["listen"], "listen")
        peers, pair = check.listed(meta["peers"], "peers", K), meta["keys"]
        if not all(type(p) is int and p > 0 if listen == "ipc" else
                   isinstance(p, str) and len(p) == 40 for p in peers):
            raise ProtocolError(f"a map task names its {K} workers by pid (ipc) or CURVE key")
        if (listen == "ipc") != (pair is None) or pair is not None and not (
                isinstance(pair, list) and len(pair) == 2 and
                all(isinstance(k, str) and len(k) == 40 for k in pair)):
            raise ProtocolError("a map task on tcp carries this worker's CURVE key pair")
        try:
            field = None if meta["field"] is None else prime_of(meta["field"], "field")
            memory = memory_of(meta["memory"])
        except ValueError as e:
            raise ProtocolError(f"a map task's {e}") from None
        return cls(run=check.count(meta["run"], "run"), f=check.path(meta["f"], "f"),
                   workers=K, load=check.count(meta["load"], "load", K - 1, low=1),
                   index=check.count(meta["index"], "index", K - 1),
                   per_batch=check.count(meta["per_batch"], "per_batch", 1 << 20, low=1),
                   coded=check.flag(meta["coded"], "coded"), field=field,
                   reduce=check.optional(meta["reduce"], "reduce", check.path),
                   listen=listen, peers=tuple(peers),
                   keys=None if pair is None else tuple(pair), memory=memory)


@dataclass(frozen=True)
class Shuffle:
    """A shuffle task: the run, every worker's endpoint, the emulated network (its rate
    in bytes a second, and its delay: the seconds a message takes on top of its bytes),
    the workers lost since the map (the survivors then finish by a Recovery), the
    attempt's number (a message of an earlier one is dropped), the (sender, receiver)
    pairs a check could not settle, and the peer links' losses: each worker's (``loss``,
    empty for none; a link loses as the worse of its two ends), their mean run
    (``burst``, None: independent) and the ``seed`` of their fates."""
    KIND: ClassVar[str] = "shuffle"
    run: int
    endpoints: tuple
    network: str
    rate: Optional[float]
    delay: float
    lost: tuple
    attempt: int
    distrust: tuple = ()
    loss: tuple = ()
    burst: Optional[float] = None
    seed: int = 0

    def to_meta(self) -> dict:
        return dict(vars(self), endpoints=list(self.endpoints), lost=list(self.lost),
                    distrust=[list(pair) for pair in self.distrust], loss=list(self.loss))

    def lossy(self) -> bool:
        """Whether its peer links lose messages."""
        return bool(self.loss)

    @classmethod
    def from_meta(cls, meta: Any) -> "Shuffle":
        meta = check.fields(meta, "shuffle task", cls)
        endpoints = check.listed(meta["endpoints"], "endpoints")
        K = len(endpoints)
        if not all(isinstance(e, str) and e.startswith(("tcp://", "ipc://"))
                   for e in endpoints):
            raise ProtocolError("a shuffle task names every worker's endpoint")
        lost = [check.count(w, "lost", K - 1) for w in check.listed(meta["lost"], "lost")]
        pairs = check.listed(meta["distrust"], "distrust")
        if not all(isinstance(p, list) and len(p) == 2 and p[0] != p[1] and
                   all(type(w) is int and 0 <= w < K for w in p) for p in pairs):
            raise ProtocolError(f"a shuffle task's distrusted pairs are [sender, receiver] "
                                f"of the {K} workers")
        loss = check.listed(meta["loss"], "loss")
        try:
            delay = delay_of(meta["delay"])
            if loss and (len(loss) != K or not all(type(p) in (int, float) for p in loss)):
                raise InvalidParameterError(f"loss is not one number per worker: {loss}")
            checked = peer_loss(dict(enumerate(loss)), meta["burst"], K) \
                if loss or meta["burst"] is not None else ()
            loss, burst = checked if checked else ((), None)
        except ValueError as e:
            raise ProtocolError(f"a shuffle task's {e}") from None
        return cls(check.count(meta["run"], "run"), tuple(endpoints),
                   check.choice(meta["network"], "network", NETWORKS),
                   check.optional(meta["rate"], "rate", check.rate), delay,
                   tuple(sorted(set(lost))), check.count(meta["attempt"], "attempt",
                                                         1 << 16, low=1),
                   tuple(sorted({(p[0], p[1]) for p in pairs})), loss, burst,
                   check.count(meta["seed"], "seed", (1 << 63) - 1))


@dataclass(frozen=True)
class Check:
    """A check task (ffcode.mapreduce.verify): the run, and the master's seed, drawn once
    every shuffle message had arrived."""
    KIND: ClassVar[str] = "check"
    run: int
    seed: int

    def to_meta(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_meta(cls, meta: Any) -> "Check":
        meta = check.fields(meta, "check task", cls)
        return cls(check.count(meta["run"], "run"),
                   check.count(meta["seed"], "seed", (1 << SEED_BITS) - 1))


@dataclass(frozen=True)
class Drop:
    """A drop task: the run whose values and socket a worker lets go of."""
    KIND: ClassVar[str] = "drop"
    run: int

    def to_meta(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_meta(cls, meta: Any) -> "Drop":
        return cls(check.count(check.fields(meta, "drop task", cls)["run"], "run"))
