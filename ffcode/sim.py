"""An event-driven simulator of coded runs at scale (no processes, no sockets).

N workers each hold one coded share split in m pieces; piece j of worker i takes
``compute[i, j] * slowdown[i] + pause[i, j]`` seconds (the runtime's fault model: a slowed
worker pauses (k - 1) times its compute, and an injected pause comes on top). An uncoded
worker computes a slice, ``uncoded_work`` of a share (R/N unless given), with the same
pauses. Packets cross the worker's link one at a time (``link_rate[i]`` bytes/s) and the
master takes them in arrival order at ``master_rate`` bytes/s. A scheme is done when the
packets the master has taken decode:

  uncoded     every worker's whole slice (N slices, each R/N of a coded share's work)
  classic     R whole results
  systematic  the whole result, sent as its m plain row pieces: piece l needs R senders
  cfs         the whole result, sent as m random combinations: any m·R packets
  compfs      a random combination per piece, sent as computed: any m·R packets
  ideal       the lower bound: every worker's work counts, no coding overhead, free links

Whether packets decode is decided by ffcode's own rank tracking (the RankBasis of the
Decoder, on the coefficient vectors the runtime would send, with the equations of the
model's ``code``, if given, else of a dense code at points 1..N) when m·R is at most
``EXACT_UP_TO``, and above that by the counting rule it reduces to, which the tests check
against it. ``Model.for_code`` takes N and R from a code.

>>> model = Model(n_workers=6, recovery_threshold=4, pieces=4,
...               piece_time=ShiftedExponential(0.1, 0.0), slowdown={3: 4, 4: 4, 5: 4})
>>> {s: round(t, 2) for s, t in compare(model).items()}
{'uncoded': 1.07, 'classic': 1.6, 'systematic': 1.6, 'cfs': 1.6, 'compfs': 0.8, 'ideal': 0.43}
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from ffcode import _validate
from ffcode._types import ArrayLike

SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")
EXACT_UP_TO = 512           # m·R up to which the simulator runs the real rank tracking
_P = 2**31 - 1              # the field of the simulated coefficient vectors


@dataclass(frozen=True)
class ShiftedExponential:
    """shift + Exponential(mean) seconds per piece (the classic straggler model)."""
    shift: float
    mean: float

    def draw(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return self.shift + (rng.exponential(self.mean, shape) if self.mean else
                             np.zeros(shape))


@dataclass(frozen=True)
class Pareto:
    """Heavy-tailed piece times: scale * (1 + Lomax(alpha)), at least scale seconds."""
    scale: float
    alpha: float

    def draw(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return self.scale * (1 + rng.pareto(self.alpha, shape))


@dataclass(frozen=True)
class Replay:
    """Measured piece times: ``times[i]`` lists worker i's, reused cyclically (for example
    from a runtime report, ``Replay.from_report``, or a CSV, ``Replay.from_csv``)."""
    times: tuple[tuple[float, ...], ...]

    def draw(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        n, m = shape
        if not self.times or any(len(t) == 0 for t in self.times):
            raise ValueError("Replay needs at least one piece time for every worker.")
        rows = [self.times[i % len(self.times)] for i in range(n)]
        return np.array([[row[j % len(row)] for j in range(m)] for row in rows], float)

    @classmethod
    def from_report(cls, report: Any) -> Replay:
        """The compute seconds of every packet of a compfs run's report (one per piece): an
        ffcode.Report or its JSON as a dict."""
        workers = report["workers"] if isinstance(report, Mapping) else \
            [vars(w) for w in report.workers]
        times = [tuple(p["compute"] for p in sorted(w["packets"], key=lambda p: p["index"])
                       if p.get("compute")) for w in workers]
        return cls(tuple(t for t in times if t))

    @classmethod
    def from_csv(cls, path: Union[str, os.PathLike]) -> Replay:
        """Rows ``worker,piece,seconds`` (a header line is skipped)."""
        rows = {}
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) != 3 or not fields[0].strip().lstrip("-").isdigit():
                    continue
                rows.setdefault(int(fields[0]), []).append((int(fields[1]), float(fields[2])))
        return cls(tuple(tuple(s for _, s in sorted(rows[w])) for w in sorted(rows)))


# The piece-time distributions a Model draws from.
Distribution = Union[ShiftedExponential, Pareto, Replay]
# One value for every worker, or {worker: value} (the rest get the default); a Model keeps
# it as an array of one value per worker.
PerWorker = Union[float, Mapping[int, float], np.ndarray]


@dataclass
class Model:
    """A simulated cluster and job; ``slowdown`` and ``link_rate`` map workers to values
    (or give one value for all), rates in bytes per second (inf: free). ``piece_time`` draws
    the compute seconds per piece, ``pause`` (None: no pauses) the injected ones."""
    n_workers: int
    recovery_threshold: int
    pieces: int
    piece_time: Distribution = ShiftedExponential(1.0, 0.0)
    slowdown: PerWorker = 1.0
    link_rate: PerWorker = math.inf
    master_rate: float = math.inf
    piece_bytes: float = 1 << 20
    seed: int = 0
    pause: Optional[Distribution] = None
    uncoded_work: Optional[float] = None
    code: Any = None

    @classmethod
    def for_code(cls, code: Any, pieces: int, **kwargs: Any) -> Model:
        """The model of a job of this code (any code of the contract) in m = pieces pieces:
        its N, R and decoding equations."""
        return cls(code.n_workers, code.recovery_threshold, pieces, code=code, **kwargs)

    @classmethod
    def from_faults(cls, n_workers: int, recovery_threshold: int, pieces: int,
                    compute: ArrayLike, faults: Any, **kwargs: Any) -> Model:
        """The model of a runtime job with ``faults`` (an ``ffcode.Faults``): ``compute``
        seconds per piece (a number, or per worker and piece), the faults' slowdowns, links
        and exactly the pauses the workers will draw."""
        compute = np.broadcast_to(np.asarray(compute, float), (n_workers, pieces))
        pauses = [faults.for_worker(i, pieces)["delays"] for i in range(n_workers)]
        return cls(n_workers, recovery_threshold, pieces,
                   piece_time=Replay(tuple(map(tuple, compute))),
                   pause=Replay(tuple(map(tuple, pauses))), slowdown=dict(faults.slowdown),
                   link_rate={w: r for w, r in faults.link_rate.items()}, **kwargs)

    def __post_init__(self) -> None:
        self.n_workers = _validate.integer(self.n_workers, "n_workers")
        self.recovery_threshold = _validate.integer(self.recovery_threshold,
                                                    "recovery_threshold")
        self.pieces = _validate.integer(self.pieces, "pieces")
        if not 1 <= self.recovery_threshold <= self.n_workers or self.pieces < 1:
            raise ValueError(f"A model needs 1 <= recovery_threshold <= n_workers and "
                             f"pieces >= 1, not R = {self.recovery_threshold}, N = "
                             f"{self.n_workers}, m = {self.pieces}.")
        if not hasattr(self.piece_time, "draw"):
            raise TypeError("Argument 'piece_time' must be a ShiftedExponential, Pareto or "
                            "Replay.")
        self.slowdown = self._per_worker(self.slowdown, "slowdown", 1.0)
        self.link_rate = self._per_worker(self.link_rate, "link_rate", math.inf)
        for name in ("master_rate", "piece_bytes"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"Argument {name!r} must be positive.")
        if (self.slowdown < 1).any() or not (self.link_rate > 0).all():
            raise ValueError("Slowdowns must be >= 1 and link rates positive.")
        if self.code is not None and (
                getattr(self.code, "n_workers", None) != self.n_workers or
                getattr(self.code, "recovery_threshold", None) != self.recovery_threshold):
            raise ValueError("Argument 'code' must be a code with the model's n_workers and "
                             "recovery_threshold (Model.for_code takes them from it).")
        if self.pause is not None and not hasattr(self.pause, "draw"):
            raise TypeError("Argument 'pause' must be a ShiftedExponential, Pareto, Replay "
                            "or None.")
        if self.uncoded_work is None:
            self.uncoded_work = self.recovery_threshold / self.n_workers
        if not float(self.uncoded_work) > 0:
            raise ValueError("Argument 'uncoded_work' must be positive.")
        shape = (self.n_workers, self.pieces)
        rng = np.random.default_rng(self.seed)
        self.compute = np.asarray(self.piece_time.draw(rng, shape), float) * \
            self.slowdown[:, None]
        self.pauses = (np.zeros(shape) if self.pause is None else
                       np.asarray(self.pause.draw(np.random.default_rng([self.seed, 1]),
                                                  shape), float))
        for array in (self.compute, self.pauses):
            if (array < 0).any() or not np.isfinite(array).all():
                raise ValueError("Piece times must be finite and non-negative.")
        self.times = self.compute + self.pauses

    def _per_worker(self, value, name, default):
        out = np.full(self.n_workers, float(default))
        if isinstance(value, Mapping):
            for worker, v in value.items():
                if not 0 <= worker < self.n_workers:
                    raise ValueError(f"{name} names worker {worker}, beyond 0.."
                                     f"{self.n_workers - 1}.")
                out[worker] = float(v)
        else:
            out[:] = float(value)
        return out


def simulate(model: Model, scheme: str) -> float:
    """Seconds until the master can decode with this scheme (inf if it never can)."""
    if scheme == "ideal":
        return _ideal(model)
    if scheme not in SCHEMES:
        raise ValueError(f"Argument 'scheme' must be one of {', '.join(SCHEMES)} or ideal, "
                         f"not {scheme!r}.")
    N, R, m = model.n_workers, model.recovery_threshold, model.pieces
    times, size = model.times, model.piece_bytes
    if scheme == "uncoded":                 # N slices of uncoded_work of a share each
        work = model.uncoded_work
        ready = (model.compute.sum(axis=1) * work + model.pauses.sum(axis=1))[:, None]
        sizes = np.full((N, 1), m * size * work)
    elif scheme == "classic":
        ready, sizes = times.sum(axis=1)[:, None], np.full((N, 1), m * size)
    elif scheme == "compfs":
        ready, sizes = np.cumsum(times, axis=1), np.full((N, m), size)
    else:                                   # the whole result, then its m packets
        ready, sizes = np.repeat(times.sum(axis=1)[:, None], m, axis=1), np.full((N, m), size)
    arrivals = _links(ready, sizes, model.link_rate)
    order = np.lexsort((np.arange(arrivals.size) % arrivals.shape[1], arrivals.ravel()))
    worker, index = np.divmod(order, arrivals.shape[1])
    taken = _master(arrivals.ravel()[order], sizes.ravel()[order], model.master_rate)
    done = _decodable(scheme, worker, index, N, R, m, model.seed, model.code)
    return math.inf if done is None else float(taken[done])


def compare(model: Model) -> dict[str, float]:
    """Every scheme's time, and the ideal bound, on the same model."""
    return {scheme: simulate(model, scheme) for scheme in SCHEMES + ("ideal",)}


def _links(ready, sizes, rates):
    """Arrival times: each worker's packets cross its link one after another."""
    arrivals = np.empty_like(ready)
    free = np.zeros(ready.shape[0])
    for j in range(ready.shape[1]):
        free = np.maximum(ready[:, j], free) + sizes[:, j] / rates
        arrivals[:, j] = free
    return arrivals


def _master(arrivals, sizes, rate):
    """When the master has taken each packet (in arrival order, rate bytes/s)."""
    if math.isinf(rate):
        return arrivals
    taken, free = np.empty_like(arrivals), 0.0
    for k, (t, s) in enumerate(zip(arrivals, sizes)):
        free = max(t, free) + s / rate
        taken[k] = free
    return taken


def _decodable(scheme, worker, index, N, R, m, seed, code=None):
    """The position in arrival order of the packet after which the master can decode."""
    if scheme == "uncoded":
        return N - 1
    if scheme == "classic":
        return R - 1
    if m * R <= EXACT_UP_TO:
        return _decodable_exact(scheme, worker, index, N, R, m, seed, code)
    if scheme == "systematic":              # piece l decodes from any R copies of it
        seen = np.zeros(m, int)
        for k, l in enumerate(index.tolist()):
            seen[l] += 1
            if (seen >= R).all():
                return k
        return None
    return m * R - 1 if worker.size >= m * R else None     # random: any m·R packets


def _decodable_exact(scheme, worker, index, N, R, m, seed, code=None):
    """The same, by the decoder's own rank tracking on the vectors the runtime sends."""
    from ffcode._ext.rankbasis import RankBasis
    if code is None:
        p = _P
        powers = np.array([[pow(a, d, p) for d in range(R)] for a in range(1, N + 1)],
                          np.uint64)
    else:
        p, powers = code.F.p, code.evaluations.astype(np.uint64)
    basis = RankBasis(powers, m, p)
    rng = np.random.default_rng([seed, 17])
    for k, (w, l) in enumerate(zip(worker.tolist(), index.tolist())):
        if scheme == "systematic":
            coeffs = np.zeros(m, np.uint64)
            coeffs[l] = 1
        else:
            coeffs = rng.integers(0, p, m, dtype=np.uint64)
        if basis.probe(coeffs, w) >= 0 and basis.commit() == m * R:
            return k
    return None


def _ideal(model):
    """The least T at which the workers, all computing from 0 (each cycling through its own
    piece times), have done m·R pieces of work between them; communication free."""
    times, need = model.times, model.pieces * model.recovery_threshold
    if not times.sum():
        return 0.0
    per_cycle = times.sum(axis=1)

    def work(T):
        cycles = np.floor(np.divide(T, per_cycle, out=np.full_like(per_cycle, np.inf),
                                    where=per_cycle > 0))
        rest = T - cycles * per_cycle
        done = cycles * times.shape[1]
        cum = np.cumsum(times, axis=1)
        full = (cum <= rest[:, None]).sum(axis=1)
        prev = np.take_along_axis(np.hstack([np.zeros((len(cum), 1)), cum]),
                                  full[:, None], axis=1)[:, 0]
        current = np.take_along_axis(np.hstack([times, np.ones((len(cum), 1))]),
                                     full[:, None], axis=1)[:, 0]
        frac = np.where(current > 0, (rest - prev) / current, 0)
        return np.where(per_cycle > 0, done + full + np.minimum(frac, 1), np.inf).sum()

    lo, hi = 0.0, need * times.max() + 1e-12
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if work(mid) < need else (lo, mid)
    return float(hi)
