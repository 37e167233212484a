"""Injected stragglers, slow links and failures: seeded, so that every scheme of a
comparison meets exactly the same delays.

A worker's share of the faults; the same seed gives it the same delays in every job:

>>> plan = Faults(slowdown={1: 3.0}, delay=(0.5, 0.0)).for_worker(1, 2)
>>> plan.slowdown, plan.delays
(3.0, (0.5, 0.5))
>>> faults = Faults(delay=(0.1, 0.2), seed=5)
>>> faults.for_worker(2, 3) == Faults(delay=(0.1, 0.2), seed=5).for_worker(2, 3)
True
>>> all(pause >= 0.1 for pause in faults.for_worker(2, 3).delays)
True
>>> Faults(slowdown={0: 0.5})
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Faults 'slowdown' needs workers >= 0 and values >= 1.0, not 0: 0.5.
"""
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from numbers import Integral, Real
from typing import Any, ClassVar, Optional, Union

import numpy as np

from ffcode import checks
from ffcode.channel import Loss
from ffcode.constraints import Constraint, InstanceOf, Interval, Refusal, Spec, validate
from ffcode.errors import InvalidParameterError
from ffcode.runtime.shared.task import CORRUPTIONS, FaultPlan

MAX_SLOWDOWN = 1e6          # a worker at most a million times slower
MAX_PAUSE = 1e6             # seconds (11.6 days): a delay's shift or mean, a byte on a link
MAX_PACKETS = 2**32         # the wire numbers a worker's packets in 32 bits
# What a worker can honour: beyond these its pauses would overflow a wait (or a link
# would never carry a byte), or a packet count could never be reached.
_RANGES = {"slowdown": (1.0, MAX_SLOWDOWN), "link_rate": (1 / MAX_PAUSE, math.inf),
           "crash_after": (0, MAX_PACKETS), "hang_after": (0, MAX_PACKETS)}

_PAIR = "a pair (shift, mean) in seconds, or a mapping of worker to such pairs"


class Delay(Constraint):
    """Faults' delay: None, a pair (shift, mean), or a mapping of worker to such pairs (the
    numbers checked by ``_pause``)."""

    def refusal(self, value: Any) -> Optional[Refusal]:
        pairs = value.values() if isinstance(value, Mapping) else [value]
        if value is None or all(_is_pair(pair) for pair in pairs):
            return None
        return Refusal(_PAIR, repr(value) if isinstance(value, (tuple, list, Mapping))
                       else type(value).__name__, True)

    def __str__(self) -> str:
        return _PAIR


class Corruptions(Constraint):
    """Faults' corrupt: a mapping of worker to one of CORRUPTIONS."""

    def refusal(self, value: Any) -> Optional[Refusal]:
        if not isinstance(value, Mapping):
            return Refusal(str(self), type(value).__name__, True)
        wrong = [mode for mode in value.values() if mode not in CORRUPTIONS]
        return Refusal(str(self), repr(wrong[0]), False) if wrong else None

    def __str__(self) -> str:
        return f"a mapping of worker to one of {', '.join(map(repr, CORRUPTIONS))}"


def _is_pair(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2


def _validated(values: Mapping[str, Any]) -> dict[str, Any]:
    """``validate`` against Faults' constraints, naming a field as "Faults 'name'"."""
    try:
        return validate(Faults._parameter_constraints, values)
    except InvalidParameterError as error:
        message = str(error)
        raise InvalidParameterError(message.replace("Argument ", "Faults ", 1)
                                    if message.startswith("Argument ") else message) from None


@dataclass(frozen=True)
class Faults:
    """What to inject into a job, per worker (0-based code indices)::

        slowdown     {worker: k}: the worker computes k times slower (each piece's compute,
                     its CPU time, is followed by (k - 1) times as long a pause) but keeps
                     making progress.
        delay        (shift, mean) seconds: every piece of every worker is followed by a pause
                     shift + Exponential(mean), the shifted-exponential straggler model; or
                     {worker: (shift, mean)} for pauses that differ between workers.
        link_rate    {worker: bytes per second}: the worker's sends are paced by a token bucket.
        crash_after  {worker: j}: the worker process dies right after sending j packets.
        hang_after   {worker: j}: the worker freezes (SIGSTOP) right after sending j packets.
        corrupt      {worker: "random" | "piece" | "shape"}: a malicious worker; "random" sends
                     random field elements as every payload, "piece" adds 1 to one element of
                     its first piece only (a targeted, well-formed corruption), "shape" claims a
                     result with one random row too many.
        loss         p, or {worker: p}: the worker's link to the master loses the share p of
                     the job's messages, in each direction (ffcode.channel.Loss); 1.0 loses
                     all of them (the worker is lost to the job). A job on lossy links
                     delivers what it must: tasks and stops are sent again until answered,
                     packets acknowledged, and a worker replaces a lost packet (fresh random
                     combinations for cfs and compfs, copies for the other schemes).
        burst        b, or {worker: b}: losses come in runs of mean length b (a
                     Gilbert-Elliott link); None: independent losses.
        seed         seeds the delays and the losses: worker w draws from (seed, w), the same
                     in every job.

    Values a worker cannot honour are refused (InvalidParameterError, a ValueError): a
    slowdown above MAX_SLOWDOWN (1e6), a delay's shift or mean above MAX_PAUSE (1e6 s), a
    link_rate below 1 / MAX_PAUSE bytes per second, a crash_after or hang_after above
    MAX_PACKETS (2**32).

    A whole-result scheme computes a worker's m pieces at once and pauses for all of them
    before sending; computation at full speed pauses after each piece.
    """
    slowdown: Mapping = field(default_factory=dict)
    delay: Union[tuple, Mapping, None] = None
    link_rate: Mapping = field(default_factory=dict)
    crash_after: Mapping = field(default_factory=dict)
    hang_after: Mapping = field(default_factory=dict)
    seed: int = 0
    corrupt: Mapping = field(default_factory=dict)
    loss: Union[float, Mapping] = field(default_factory=dict)
    burst: Union[float, Mapping, None] = None

    # ffcode.constraints: what each field may be; the values per worker (with what a
    # worker can honour, _RANGES) are checked by the code after them, worker by worker.
    _parameter_constraints: ClassVar[Mapping[str, Spec]] = {
        **dict.fromkeys(("slowdown", "link_rate", "crash_after", "hang_after"),
                        InstanceOf(Mapping, what="a mapping of worker to value")),
        "delay": Delay(),
        "seed": Interval(Integral, 0, None),
        "corrupt": Corruptions(),
        "loss": InstanceOf(Mapping, Real, what="a probability, or a mapping of worker to one"),
        "burst": [InstanceOf(Mapping, Real, what="a mean run of losses, or a mapping of worker "
                             "to one"), None]}

    def __post_init__(self) -> None:
        checked = _validated(vars(self))
        for name, least, kind in (("slowdown", 1.0, float), ("link_rate", 0.0, float),
                                  ("crash_after", 0, int), ("hang_after", 0, int)):
            values = {}
            for worker, value in checked[name].items():
                worker = checks.integer(worker, f"{name} worker")
                value = (checks.integer(value, name) if kind is int
                         else _number(value, name, f"worker {worker}"))
                if worker < 0 or value < least or (name == "link_rate" and value == 0):
                    raise InvalidParameterError(
                        f"Faults {name!r} needs workers >= 0 and values "
                        f"{'> 0' if name == 'link_rate' else f'>= {least}'}, not {worker}: "
                        f"{value}.")
                values[worker] = _honoured(name, worker, value)
            checked[name] = values
        checked["corrupt"] = {checks.integer(w, "corrupt worker"): mode
                              for w, mode in checked["corrupt"].items()}
        if any(w < 0 for w in checked["corrupt"]):
            raise InvalidParameterError("Faults 'corrupt' needs workers >= 0.")
        delay = checked["delay"]
        if isinstance(delay, Mapping):
            workers = [checks.integer(w, "delay worker") for w in delay]
            if any(w < 0 for w in workers):
                raise InvalidParameterError("Faults 'delay' needs workers >= 0.")
            checked["delay"] = {w: _pause(pair, f"worker {w}")
                                for w, pair in zip(workers, delay.values())}
        elif delay is not None:
            checked["delay"] = _pause(delay, "every worker")
        checked["loss"], checked["burst"] = _losses(checked["loss"], checked["burst"])
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def link_loss(self, worker: int) -> Optional[Loss]:
        """The loss on the worker's link to the master (None: it loses nothing).

        >>> Faults(loss=0.2, burst={1: 4}).link_loss(1)
        Loss(p=0.2, burst=4.0)
        >>> Faults(loss={0: 0.1}).link_loss(1) is None
        True
        """
        p = self.loss.get(worker, 0.0) if isinstance(self.loss, Mapping) else self.loss
        if not p:
            return None
        burst = self.burst.get(worker) if isinstance(self.burst, Mapping) else self.burst
        return Loss(p, burst)

    @property
    def injects(self) -> bool:
        """Whether these faults inject anything into a job (a seed alone does not).

        >>> Faults(seed=3).injects, Faults(slowdown={1: 2.0}).injects
        (False, True)
        """
        return any(getattr(self, name) for name in _INJECTED if name != "burst")

    def check_workers(self, n_workers: int):
        """Refuse faults aimed at workers the job does not have."""
        for name in ("slowdown", "link_rate", "crash_after", "hang_after", "delay",
                     "corrupt", "loss", "burst"):
            given = getattr(self, name)
            beyond = sorted(w for w in given if w >= n_workers) if isinstance(
                given, Mapping) else []
            if beyond:
                raise InvalidParameterError(f"Faults {name!r} names workers {beyond}, but the "
                                            f"job has workers 0..{n_workers - 1}.")

    def to_dict(self) -> dict:
        """The faults as JSON-ready data (worker keys become strings in JSON)."""
        out: dict[str, object] = {name: dict(getattr(self, name)) for name in (
            "slowdown", "link_rate", "crash_after", "hang_after", "corrupt")}
        delay = self.delay
        out["delay"] = ({w: list(pair) for w, pair in delay.items()}
                        if isinstance(delay, Mapping) else delay and list(delay))
        out["seed"] = self.seed
        for name in ("loss", "burst"):
            given = getattr(self, name)
            out[name] = dict(given) if isinstance(given, Mapping) else given
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Faults":
        """The Faults ``to_dict`` gave (worker keys strings after JSON), every value checked
        as the constructor checks it: it may come from the network.

        >>> import json
        >>> faults = Faults(delay={1: (0.5, 0.0)}, corrupt={0: "random"})
        >>> Faults.from_dict(json.loads(json.dumps(faults.to_dict()))) == faults
        True
        """
        fields = {"slowdown", "link_rate", "crash_after", "hang_after", "corrupt", "delay",
                  "seed", "loss", "burst"}
        if not isinstance(data, dict) or set(data) != fields:
            raise InvalidParameterError(f"Faults as data need the fields {sorted(fields)}.")

        def keyed(given, name):
            if not isinstance(given, dict):
                raise InvalidParameterError(f"Faults {name!r} must be a mapping of worker to "
                                            f"value.")
            return {int(w) if isinstance(w, str) and w.isdigit() and len(w) < 10 else w: v
                    for w, v in given.items()}
        either = {name: keyed(data[name], name) if isinstance(data[name], dict) else data[name]
                  for name in ("delay", "loss", "burst")}
        return cls(**{name: keyed(data[name], name) for name in fields - {"seed", *either}},
                   **either, seed=data["seed"])

    def by_group(self, sizes: Sequence[int]) -> dict:
        """These faults, naming the workers of a cluster of relays as one list in group
        order (group 0's ``sizes[0]`` workers first), as ``group_faults``: {group: its
        workers' faults, numbered within the group}; a pause for every worker goes to every
        group, and groups without faults are left out.

        >>> by = Faults(slowdown={1: 4, 5: 2}, crash_after={2: 0}).by_group([2, 4])
        >>> sorted(by), by[1].slowdown, by[1].crash_after
        ([0, 1], {3: 2.0}, {0: 0})
        """
        starts = [sum(sizes[:g]) for g in range(len(sizes))]
        self.check_workers(sum(sizes))

        def part(mapping, g):
            return {w - starts[g]: v for w, v in mapping.items()
                    if starts[g] <= w < starts[g] + sizes[g]}
        out = {}
        for g in range(len(sizes)):
            delay, loss, burst = (part(given, g) or None if isinstance(given, Mapping) else
                                  given for given in (self.delay, self.loss, self.burst))
            faults = Faults(**{name: part(getattr(self, name), g) for name in (
                "slowdown", "link_rate", "crash_after", "hang_after", "corrupt")},
                delay=delay, loss=loss or {}, burst=burst,     # type: ignore[arg-type]
                seed=self.seed)
            if faults.injects:
                out[g] = faults
        return out

    def for_worker(self, worker: int, pieces: int) -> FaultPlan:
        """The faults one worker injects into its task of ``pieces`` pieces of work."""
        delays = [0.0] * pieces
        pause = self.delay.get(worker) if isinstance(self.delay, Mapping) else self.delay
        if pause is not None:
            shift, mean = pause
            rng = np.random.default_rng([self.seed, worker])
            delays = (shift + rng.exponential(mean, pieces)).tolist() if mean else \
                [shift] * pieces
        return FaultPlan(slowdown=float(self.slowdown.get(worker, 1.0)), delays=tuple(delays),
                         corrupt=self.corrupt.get(worker),
                         link_rate=self.link_rate.get(worker),
                         crash_after=self.crash_after.get(worker),
                         hang_after=self.hang_after.get(worker),
                         lossy=self.link_loss(worker) is not None)


_INJECTED = tuple(f.name for f in fields(Faults) if f.name != "seed")   # what ``injects`` reads


def _losses(loss, burst) -> tuple:
    """(loss, burst) checked: each a number for every worker or {worker: number}; a loss
    for every worker below 1 (a job could never end), each pair a Loss."""
    def keyed(given, name):
        return {checks.integer(w, f"{name} worker", low=0): v for w, v in given.items()} \
            if isinstance(given, Mapping) else given
    loss, burst = keyed(loss, "loss"), keyed(burst, "burst")
    if not isinstance(loss, Mapping) and _number(loss, "loss", "every worker") >= 1:
        raise InvalidParameterError(f"Faults 'loss' for every worker must be below 1, not "
                                    f"{loss}: no job could get through.")
    workers = set(loss) if isinstance(loss, Mapping) else set()
    workers |= set(burst) if isinstance(burst, Mapping) else set()
    for worker in sorted(workers) or [None]:    # each pair checked as a Loss
        p = loss.get(worker, 0.0) if isinstance(loss, Mapping) else loss
        b = burst.get(worker) if isinstance(burst, Mapping) else burst
        try:
            Loss(p, b)
        except InvalidParameterError as e:
            who = "every worker" if worker is None else f"worker {worker}"
            said = str(e).replace("Loss 'p'", "Faults 'loss'").replace("Loss ", "Faults ")
            raise InvalidParameterError(f"{said[:-1]} ({who}).") from None
    loss = {w: float(p) for w, p in loss.items() if p} if isinstance(loss, Mapping) else \
        float(loss)
    burst = {w: float(b) for w, b in burst.items()} if isinstance(burst, Mapping) else \
        burst if burst is None else float(burst)
    return loss, burst


def _pause(pair, who: str) -> tuple:
    """(shift, mean) of the delay of ``who`` ("worker 3", "every worker"), a pair (Delay),
    its numbers checked."""
    shift, mean = (_number(v, "delay", who) for v in pair)
    if shift < 0 or mean < 0:
        raise InvalidParameterError(f"Faults 'delay' needs shift, mean >= 0, not "
                                    f"{tuple(pair)} ({who}).")
    if max(shift, mean) > MAX_PAUSE:
        raise InvalidParameterError(f"Faults 'delay' for {who} needs shift, mean <= "
                                    f"{MAX_PAUSE:g} s, not {tuple(pair)}: no worker can honour "
                                    f"a longer pause.")
    return shift, mean


def _honoured(name: str, worker: int, value):
    """A per-worker fault's value, refused when no worker can honour it (_RANGES)."""
    least, most = _RANGES[name]
    if not least <= value <= most:
        bound = f"at most {most}" if value > most else f"at least {least:g}"
        raise InvalidParameterError(f"Faults {name!r} for worker {worker} must be {bound}, "
                                    f"not {value}: no worker can honour it.")
    return value


def _number(value, name: str, who: str) -> float:
    """A finite float of a fault of ``who`` (a huge int too is refused, not overflowed)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"Faults {name!r} values must be numbers, not "
                                    f"{type(value).__name__}.")
    try:
        value = float(value)
    except OverflowError:
        raise InvalidParameterError(f"Faults {name!r} values must be finite, not an integer "
                                    f"of {int(value).bit_length()} bits ({who}).") from None
    if not math.isfinite(value):
        raise InvalidParameterError(f"Faults {name!r} values must be finite, not {value} "
                                    f"({who}).")
    return value


class Link:
    """A sender-side token bucket: a message of s bytes leaves when the link, busy until
    ``free_at``, would have carried it at ``rate`` bytes per second (no burst credit)."""

    def __init__(self, rate):
        self.rate = rate
        self.free_at = None

    def due(self, nbytes: int, now: float) -> float:
        """When a message of nbytes may leave (now when the link is not capped)."""
        if self.rate is None:
            return now
        start = now if self.free_at is None else max(now, self.free_at)
        return start + nbytes / self.rate

    def sent(self, due: float):
        if self.rate is not None:
            self.free_at = due
