"""An event-driven simulator of coded runs at scale (no processes, no sockets).

N workers each hold ``shares`` coded shares (one unless given; the code has a point per
share, dealt by ``allocation.dealt``) and work through them in order, each share in m
pieces: worker i's pieces, all its shares' one after another, take ``compute[i, j] *
slowdown[i] + pause[i, j]`` seconds (the runtime's fault model: a slowed worker pauses
(k - 1) times its compute, and an injected pause comes on top). An uncoded worker computes
a slice, ``uncoded_work`` of a share (R/N unless given), with the same pauses. Packets
cross the worker's link one at a time (``link_rate[i]`` bytes/s) and the master takes them
in arrival order at ``master_rate`` bytes/s. A scheme is done when the packets the master
has taken decode:

  uncoded     every worker's whole slice (N slices, each R/N of a coded share's work)
  classic     R whole results (one per share, sent when its m pieces are done)
  systematic  every share's result as its m plain row pieces: piece l needs R shares
  cfs         every share's result as m random combinations: any m·R packets
  compfs      a random combination per piece, sent as computed: any m·R packets
  ideal       the lower bound: every worker's work counts, no coding overhead, free links

Whether packets decode is decided by ffcode's own rank tracking (the RankBasis of the
Decoder, on the coefficient vectors the runtime would send, each share its own sender, with
the equations of the model's ``code``, if given, else of a dense code at points 1..n_shares)
when m·R is at most ``EXACT_UP_TO``, and above that by the counting rule it reduces to, which
the tests check against it. ``Model.for_code`` takes the shares and R from a code;
``share_cost`` charges the master's encoding and shipping per share before the workers
start. Links that lose packets (the model's ``loss``) are simulated packet by packet,
acknowledgements, losses found and what is sent again included, each worker following the
runtime's rule (``ffcode.delivery``; ``simulate_lossy``).

>>> model = Model(n_workers=6, recovery_threshold=4, pieces=4,
...               piece_time=ShiftedExponential(0.1, 0.0), slowdown={3: 4, 4: 4, 5: 4})
>>> {s: round(t, 2) for s, t in compare(model).items()}
{'uncoded': 1.07, 'classic': 1.6, 'systematic': 1.6, 'cfs': 1.6, 'compfs': 0.8, 'ideal': 0.43}

With one share each, the fast workers are done at 0.4 s and idle while compfs waits for the
stragglers' second pieces (0.8 s, 1.9x the bound) and classic for a straggler's whole
result. With two shares each they keep computing: compfs decodes at 0.5 s and classic at
0.8 s (the fast workers' second results). 0.5 s is as soon as any scheme can be done at
m = 4: by 0.4 s the fast workers have 12 pieces and the stragglers 3, one short of m·R = 16,
and the next come at 0.5 s (1.17x the bound). Smaller pieces shrink that limit: the same
work in m = 8 pieces decodes at 0.45 s with two shares (1.05x).

>>> from dataclasses import replace
>>> {s: round(t, 2) for s, t in compare(replace(model, shares=2)).items()}
{'uncoded': 1.07, 'classic': 0.8, 'systematic': 0.8, 'cfs': 0.8, 'compfs': 0.5, 'ideal': 0.43}
>>> best = plan(model)          # uniform and speed-proportional allocations, 1..8 per worker
>>> best.counts, round(best.seconds, 2), round(best.ideal, 2)
((2, 2, 2, 2, 2, 2), 0.5, 0.43)
"""
from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional, Union, cast

import numpy as np

from ffcode import allocation, channel, checks, sim_lossy
from ffcode._ext.rankbasis import RankBasis
from ffcode._types import ArrayLike
from ffcode.errors import InvalidParameterError
from ffcode.schemes import Scheme, names

IDEAL = "ideal"             # the simulator's own scheme: the lower bound of them all
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
            raise InvalidParameterError("Replay needs at least one piece time for every worker.")
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
        rows: dict[int, list[tuple[int, float]]] = {}
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) != 3 or not fields[0].strip().lstrip("-").isdigit():
                    continue
                rows.setdefault(int(fields[0]), []).append((int(fields[1]), float(fields[2])))
        return cls(tuple(tuple(s for _, s in sorted(rows[w])) for w in sorted(rows)))


# The piece-time distributions a Model draws from.
Distribution = Union[ShiftedExponential, Pareto, Replay]
# One value for every worker, {worker: value} (the rest get the default), or one value per
# worker; a Model keeps it as an array of one value per worker.
PerWorker = Union[float, Mapping[int, float], Sequence[float], np.ndarray]
# Shares per worker, the same ways: one count for all, {worker: count} (the rest hold one)
# or one count per worker; a Model keeps it as a tuple of counts.
Shares = Union[int, Mapping[int, int], Sequence[int]]


@dataclass
class Model:
    """A simulated cluster and job; ``slowdown`` and ``link_rate`` map workers to values
    (or give one value for all), rates in bytes per second (inf: free). ``piece_time`` draws
    the compute seconds per piece, ``pause`` (None: no pauses) the injected ones.

    ``shares`` says how many shares (code points) each of the n_workers holds; worker i
    holds the code indices ``assignment[i]`` (``allocation.dealt``), ``n_shares`` in all,
    each share a whole share's work. ``share_cost`` is the master's seconds per share
    (encoding and shipping) before the workers start. ``times[i, :shares[i] * pieces]``
    are worker i's piece times, its shares' in order (NaN past them where counts differ;
    ``held`` marks the pieces there are), ``compute`` and ``pauses`` likewise, and
    ``code_index[i, k]`` is the code index of worker i's k-th share.

    ``loss`` is the long-run share of messages each worker's link loses, both ways, and
    ``burst`` the mean run of losses (None: independent), one value for all, per worker or
    {worker: value} as ``slowdown`` (each pair a ``channel.Loss``, kept in ``losses``);
    ``rtt`` is every link's round trip in seconds. With loss the workers' packets are
    acknowledged and lost ones made up for (``simulate_lossy``)."""
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
    shares: Shares = 1
    share_cost: float = 0.0
    loss: PerWorker = 0.0
    burst: Union[None, float, Mapping[int, Optional[float]], Sequence[Optional[float]]] = None
    rtt: float = 0.001

    @classmethod
    def for_code(cls, code: Any, pieces: int, shares: Shares = 1, **kwargs: Any) -> Model:
        """The model of a job of this code (any code of the contract) in m = pieces pieces:
        its R and decoding equations, its points the shares. The workers are as many as
        ``shares`` needs: code.n_workers / shares for one count for all (which must divide
        it), one per count given, or with {worker: count} (the rest one) the points left
        after the counts."""
        points = code.n_workers
        if isinstance(shares, Mapping):
            n_workers = points - sum(checks.integer(c, "shares") - 1
                                     for c in shares.values())
        elif np.ndim(shares) == 0 and not isinstance(shares, (str, bytes)):
            each = checks.integer(shares, "shares", low=1)
            if points % each:
                raise InvalidParameterError(
                    f"A code of {points} points cannot be dealt {each} shares "
                    f"per worker.")
            n_workers = points // each
        else:                           # a count per worker (np.ndim says a sequence)
            n_workers = len(cast(Sequence[int], shares))
        return cls(n_workers, code.recovery_threshold, pieces, code=code, shares=shares,
                   **kwargs)

    @classmethod
    def from_faults(cls, n_workers: int, recovery_threshold: int, pieces: int,
                    compute: ArrayLike, faults: Any, shares: Shares = 1,
                    **kwargs: Any) -> Model:
        """The model of a runtime job with ``faults`` (an ``ffcode.Faults``): ``compute``
        seconds per piece (a number, or per worker and piece: the same for each of its
        shares), the faults' slowdowns, links and exactly the pauses the workers will draw,
        worker i's for all its ``shares[i] * pieces`` pieces in order."""
        counts = _share_counts(shares, checks.integer(n_workers, "n_workers"))
        compute = np.broadcast_to(np.asarray(compute, float), (n_workers, pieces))
        pauses = [faults.for_worker(i, pieces * counts[i]).delays for i in range(n_workers)]
        return cls(n_workers, recovery_threshold, pieces,
                   piece_time=Replay(tuple(map(tuple, compute))),
                   pause=Replay(tuple(map(tuple, pauses))), slowdown=dict(faults.slowdown),
                   link_rate={w: r for w, r in faults.link_rate.items()}, shares=counts,
                   **kwargs)

    def __post_init__(self) -> None:
        self.n_workers = checks.integer(self.n_workers, "n_workers", low=1)
        self.recovery_threshold = checks.integer(self.recovery_threshold,
                                                 "recovery_threshold", low=1)
        self.pieces = checks.integer(self.pieces, "pieces", low=1)
        self.shares = _share_counts(self.shares, self.n_workers)
        self.assignment = allocation.dealt(self.shares)
        self.n_shares = sum(self.shares)
        if self.recovery_threshold > self.n_shares:
            raise InvalidParameterError(f"A model needs recovery_threshold <= its {self.n_shares} "
                                        f"shares (the code's points), not R = "
                                        f"{self.recovery_threshold}.")
        if not hasattr(self.piece_time, "draw"):
            raise InvalidParameterError(
                "Argument 'piece_time' must be a ShiftedExponential, Pareto or "
                "Replay.")
        self.slowdown = self._per_worker(self.slowdown, "slowdown", 1.0)
        self.link_rate = self._per_worker(self.link_rate, "link_rate", math.inf)
        self.master_rate = checks.positive(self.master_rate, "master_rate", finite=False)
        self.piece_bytes = checks.positive(self.piece_bytes, "piece_bytes", finite=False)
        if (self.slowdown < 1).any() or not (self.link_rate > 0).all():
            raise InvalidParameterError("Slowdowns must be >= 1 and link rates positive.")
        self.losses = self._link_losses()
        self.loss = np.array([link.p for link in self.losses])
        self.burst = tuple(link.burst for link in self.losses)
        self.rtt = checks.non_negative(self.rtt, "rtt", what="a number of seconds")
        if self.code is not None and (
                getattr(self.code, "n_workers", None) != self.n_shares or
                getattr(self.code, "recovery_threshold", None) != self.recovery_threshold):
            raise InvalidParameterError(f"Argument 'code' must be a code with a point per share "
                                        f"({self.n_shares}) and the model's recovery_threshold "
                                        f"(Model.for_code takes them from it).")
        if self.pause is not None and not hasattr(self.pause, "draw"):
            raise InvalidParameterError(
                "Argument 'pause' must be a ShiftedExponential, Pareto, Replay "
                "or None.")
        if self.uncoded_work is None:
            self.uncoded_work = self.recovery_threshold / self.n_workers
        self.uncoded_work = checks.positive(self.uncoded_work, "uncoded_work", finite=False)
        self.share_cost = checks.non_negative(self.share_cost, "share_cost")
        lengths = np.array(self.shares) * self.pieces
        self.held = np.arange(lengths.max())[None, :] < lengths[:, None]
        self.compute = _draws(self.piece_time, np.random.default_rng(self.seed), self) * \
            self.slowdown[:, None]
        self.pauses = (np.where(self.held, 0.0, np.nan) if self.pause is None else
                       _draws(self.pause, np.random.default_rng([self.seed, 1]), self))
        for array in (self.compute, self.pauses):
            if (array[self.held] < 0).any() or not np.isfinite(array[self.held]).all():
                raise InvalidParameterError("Piece times must be finite and non-negative.")
        self.times = self.compute + self.pauses
        # (-1 past a worker's count)
        self.code_index = np.full((self.n_workers, max(self.shares)), -1)
        for i, held in enumerate(self.assignment):
            self.code_index[i, :len(held)] = held

    def _per_worker(self, value: Any, name: str, default: float) -> np.ndarray:
        return np.asarray(self._spread(value, name, float(default)), float)

    def _spread(self, value: Any, name: str, default: Any) -> list:
        """One value per worker, as given (unchecked): ``value`` for all, {worker: value}
        (the rest ``default``) or a value per worker."""
        if isinstance(value, Mapping):
            out = [default] * self.n_workers
            for worker, v in value.items():
                if not 0 <= worker < self.n_workers:
                    raise InvalidParameterError(f"{name} names worker {worker}, beyond 0.."
                                                f"{self.n_workers - 1}.")
                out[worker] = v
            return out
        if np.ndim(value) == 0:
            return [value] * self.n_workers
        if len(value) != self.n_workers:
            raise InvalidParameterError(f"Argument {name!r} gives {len(value)} values for "
                                        f"{self.n_workers} workers.")
        return list(value)

    def _link_losses(self) -> tuple[channel.Loss, ...]:
        """Each worker's link loss: its loss and burst, which channel.Loss checks."""
        links = []
        for worker, (p, burst) in enumerate(zip(self._spread(self.loss, "loss", 0.0),
                                                self._spread(self.burst, "burst", None))):
            try:
                links.append(channel.Loss(p, burst))
            except InvalidParameterError as error:
                raise InvalidParameterError(f"Argument 'loss' or 'burst' of worker {worker} "
                                            f"(loss={p!r}, burst={burst!r}): {error}") from None
        return tuple(links)


def _share_counts(shares: Shares, n_workers: int) -> tuple[int, ...]:
    """Shares per worker, one count each: ``shares`` one count for all, {worker: count}
    (the rest hold one) or a count per worker; every count an integer >= 1."""
    if isinstance(shares, Mapping):
        counts = [1] * n_workers
        for worker, count in shares.items():
            worker = checks.integer(worker, "shares")
            if not 0 <= worker < n_workers:
                raise InvalidParameterError(f"Argument 'shares' names worker {worker}, beyond 0.."
                                            f"{n_workers - 1}.")
            counts[worker] = count
    elif isinstance(shares, (str, bytes)):
        raise InvalidParameterError(
            f"Argument 'shares' must be a count, a mapping of worker to count or "
            f"a count per worker, not {type(shares).__name__}.")
    elif np.ndim(shares) == 0:
        counts = [cast(int, shares)] * n_workers
    else:                               # np.ndim says a sequence
        counts = list(cast(Sequence[int], shares))
        if len(counts) != n_workers:
            raise InvalidParameterError(
                f"Argument 'shares' gives {len(counts)} counts for {n_workers} "
                f"workers.")
    # every worker holds at least one share
    return tuple(checks.integer(c, "shares", low=1) for c in counts)


def _draws(distribution: Distribution, rng: np.random.Generator, model: Model) -> np.ndarray:
    """Every worker's piece times for all its shares, NaN past its count. The first m are
    drawn as with one share each (so that such a model keeps its numbers); the rest are
    columns m.. of a draw of every piece position (a Replay continues its rows in order)."""
    n, m = model.n_workers, model.pieces
    first = np.asarray(distribution.draw(rng, (n, m)), float)
    if model.held.shape[1] == m:
        return first
    every = np.asarray(distribution.draw(rng, model.held.shape), float)
    return np.where(model.held, np.hstack([first, every[:, m:]]), np.nan)


def simulate(model: Model, scheme: str) -> float:
    """Seconds until the master can decode with this scheme (inf if it never can),
    ``share_cost`` per share (per slice for uncoded) included. The scheme (its object,
    ffcode.schemes) says when its packets are ready and how large (``packet_times``), and
    which of them decode (``decodable``); here they cross the links and reach the master."""
    if checks.choice(scheme, "scheme", names() + (IDEAL,)) == IDEAL:
        return _ideal(model)
    scheme = Scheme.parse(scheme)
    if any(link.p for link in model.losses):
        return simulate_lossy(model, scheme).seconds
    ready, sizes, held = scheme.packet_times(model)
    arrivals = link_arrivals(ready, sizes, model.link_rate)
    column = np.broadcast_to(np.arange(ready.shape[1]), ready.shape)[held]
    row = np.broadcast_to(np.arange(model.n_workers)[:, None], ready.shape)[held]
    arrived = arrivals[held]
    order = np.lexsort((column, arrived))   # ties: a worker's earlier packets, lower workers
    row, column = row[order], column[order]
    q = scheme.packets(model.pieces)        # a share's packets, one after another
    taken = _decoded(scheme, model, arrived[order], sizes[held][order],
                     model.code_index[row, column // q], column % q)[1]
    return taken + model.share_cost * scheme.shipped(model)


@dataclass(frozen=True)
class LossyRun:
    """What ``simulate_lossy`` found: the ``seconds`` until the master could decode (as
    ``simulate``'s), the packets the workers had ``sent`` by then (originals, copies sent
    again and fresh combinations, lost ones included), how many of those were ``lost``,
    and the packets the scheme ``needed`` (``Scheme.packets_needed``: m·R for cfs and
    compfs, R for classic, m·R pieces for systematic, N for uncoded)."""
    seconds: float
    sent: int
    lost: int
    needed: int


def simulate_lossy(model: Model, scheme: str, repair: str = "dense") -> LossyRun:
    """``simulate`` on links that lose packets (the model's ``loss``, ``burst`` and
    ``rtt``), packet by packet (``sim_lossy.worker_sends``): each worker's task comes over
    its link too (sent again after a wait while lost: the worker starts when it gets
    through, or never), the master acknowledges every packet, and each worker follows the
    runtime's rule (``ffcode.delivery.Stream``): it deems a packet lost when an
    acknowledgement covers one sent after it and not it, or when its timeout is up, and
    sends it again (uncoded, classic, systematic), or sends a fresh combination of its
    share instead (cfs, compfs: rateless; one for each loss found, nothing ahead of the
    losses; at a rateless packet's timeout the worker first polls the master, whose answer
    shows whether the packet or only its acknowledgement was lost). Without loss, and with
    rtt up to a second (the longest timeout: the workers' timers have measured the round
    trip, and wait three), it sends what ``simulate`` does, in the same seconds.

    Twelve workers, eight pieces of 10 ms each, R = 8, each link losing a fifth of its
    messages (every task gets through at once): cfs decodes when the whole results arrive,
    at 0.08 s as without loss (the redundant workers make up for the losses), after 83
    packets sent of the 64 needed (64 / 0.8 = 80); compfs at 0.06 s, also as without
    loss, after 84, every one that arrived counting. (Without polls, compfs sent 88: its
    packets go one by one, each alone in flight, and one whose acknowledgement alone was
    lost was made up at its timeout, by a combination of pieces the master already had,
    wasted.)

    >>> model = Model(n_workers=12, recovery_threshold=8, pieces=8, loss=0.2, seed=1,
    ...               piece_time=ShiftedExponential(0.01, 0.0))
    >>> [(round(r.seconds, 2), r.sent, r.lost, r.needed)
    ...  for r in (simulate_lossy(model, "cfs"), simulate_lossy(model, "compfs"))]
    [(0.08, 83, 19, 64), (0.06, 84, 20, 64)]
    >>> simulate_lossy(replace(model, loss=0.0), "compfs").sent
    64

    ``repair="sparse"`` (cfs: ``Scheme.check_repair``) runs the runtime's sparse repairs:
    each share's pieces sent plain, and each fresh combination mixing only the pieces the
    worker found lost (``delivery.Fresh.among``), its coefficients random on those alone
    in the master's rank tracking. Plain pieces are a systematic scheme's: the master
    needs each piece from R shares, and one from another share comes in vain, where a
    dense combination would have counted.

    >>> run = simulate_lossy(model, "cfs", repair="sparse")
    >>> run.sent >= run.needed
    True
    """
    scheme = Scheme.parse(scheme)
    scheme.check_repair(repair)
    ready, sizes, held = scheme.packet_times(model)
    sends = [sim_lossy.worker_sends(model, w, scheme, ready[w, held[w]], sizes[w, held[w]],
                                    repair)
             for w in range(model.n_workers)]
    every = {name: np.concatenate([getattr(s, name) for s in sends])
             for name in ("left", "lost", "share", "piece", "size", "counts")}
    worker = np.repeat(np.arange(model.n_workers), [len(s.left) for s in sends])
    seq = np.concatenate([np.arange(len(s.left)) for s in sends])
    order = np.lexsort((worker, seq, every["left"]))    # ties as simulate's
    left, lost = every["left"][order], every["lost"][order]
    came = np.flatnonzero(~lost)            # positions in order of the packets that arrived
    pick = order[came]
    among = None
    if repair == "sparse":                  # the pieces each mixes; () for a plain one
        mixed = [a for s in sends for a in s.among]
        among = [mixed[i] for i in pick.tolist()]
    at, taken = _decoded(scheme, model, every["left"][pick], every["size"][pick],
                         model.code_index[worker[pick], every["share"][pick]],
                         every["piece"][pick], every["counts"][pick], among)
    # sent by then: the packets up to the one that decoded, in the order of ties, and any
    # other that left before the master had taken it
    last = len(order) if at is None else int(came[at]) + 1
    by_then = (np.arange(len(order)) < last) | (left < taken)
    return LossyRun(taken + model.share_cost * scheme.shipped(model), int(by_then.sum()),
                    int((by_then & lost).sum()), scheme.packets_needed(model))


def compare(model: Model) -> dict[str, float]:
    """Every scheme's time (the registered ones' too), and the ideal bound, on the same
    model."""
    return {scheme: simulate(model, scheme) for scheme in names() + (IDEAL,)}


@dataclass(frozen=True)
class SharePlan:
    """What ``plan`` found: the best shares per worker (``counts``), how they were chosen
    (``best``: ("uniform" | "speed", shares per worker)), its expected seconds, the ideal
    bound's on the same draws, and every candidate's expected seconds."""
    counts: tuple[int, ...]
    best: tuple[str, int]
    seconds: float
    ideal: float
    candidates: dict[tuple[str, int], float]


def plan(model: Model, scheme: str = "compfs", shares: Iterable[int] = range(1, 9),
         seeds: int = 5) -> SharePlan:
    """The allocation of shares to the model's workers with the least expected time for
    ``scheme``: for every w in ``shares``, w shares per worker ("uniform") and w·N shares
    in proportion to the workers' speeds ("speed", ``allocation.proportional``; a speed is
    1 / (slowdown × mean piece time + mean pause), the median where a mean is infinite),
    each averaged over ``seeds`` seeds from the model's (its own shares are not used).
    Candidates with fewer shares than R are skipped; ties go to fewer shares in all, then
    uniform.

    Speed allocation helps when the speed differences are persistent and known (the same
    workers slow in every job, as a slowdown models), above all for whole-result schemes
    (classic, systematic, cfs), which can use only whole shares: the fast workers' extra
    shares arrive in time, the slow workers' would not. Uniform is better when straggling
    is random or transient (which workers are slow changes from job to job, as random piece
    times model: the speeds are then equal and both allocations the same), and compfs with
    enough shares is already near the bound either way; fewer shares also cost less
    encoding and shipping (``share_cost``)."""
    if model.code is not None:
        raise InvalidParameterError(
            "plan varies the code's number of points: give it a model without "
            "a code.")
    scheme = Scheme.parse(scheme)
    seeds = checks.integer(seeds, "seeds", low=1)
    candidates = sorted({checks.integer(w, "shares", low=1) for w in shares})
    if not candidates:
        raise InvalidParameterError("Argument 'shares' must give at least one count of shares per "
                                    "worker.")
    N = model.n_workers
    means = _means(model.piece_time, N) * model.slowdown + (
        0.0 if model.pause is None else _means(model.pause, N))
    speeds = 1 / np.maximum(means, 1e-300)
    allocations, expected = {}, {}             # by candidate: counts; by counts: seconds

    def mean(counts: tuple[int, ...], which: Any) -> float:
        return statistics.fmean(simulate(replace(model, shares=counts, seed=model.seed + k),
                                         which) for k in range(seeds))

    for w in candidates:
        if w * N < model.recovery_threshold:
            continue
        allocations["uniform", w] = (w,) * N
        allocations["speed", w] = allocation.proportional(w * N, speeds)
    if not allocations:
        raise InvalidParameterError(
            f"No candidate has the R = {model.recovery_threshold} shares the "
            f"code needs: give more shares per worker.")
    for counts in allocations.values():
        if counts not in expected:
            expected[counts] = mean(counts, scheme)
    seconds = {key: expected[counts] for key, counts in allocations.items()}
    least = min(seconds.values())
    best = min((key for key, t in seconds.items()
                if t == least or math.isclose(t, least, rel_tol=1e-9)),
               key=lambda key: (sum(allocations[key]), key[0] != "uniform", key[1]))
    counts = allocations[best]
    return SharePlan(counts, best, expected[counts], mean(counts, IDEAL), seconds)


def _means(distribution: Distribution, n_workers: int) -> np.ndarray:
    """Each worker's mean seconds per draw (a Pareto's median if its mean is infinite)."""
    if isinstance(distribution, ShiftedExponential):
        return np.full(n_workers, distribution.shift + distribution.mean)
    if isinstance(distribution, Pareto):
        a = distribution.alpha
        return np.full(n_workers, distribution.scale * (a / (a - 1) if a > 1 else 2 ** (1 / a)))
    if isinstance(distribution, Replay):
        rows = distribution.times
        return np.array([np.mean(rows[i % len(rows)]) for i in range(n_workers)])
    return np.asarray(distribution.draw(np.random.default_rng(0), (n_workers, 1024)),
                      float).mean(axis=1)


def link_arrivals(ready: np.ndarray, sizes: np.ndarray, rates: Any) -> np.ndarray:
    """Arrival times of packets ``ready[i, j]`` (seconds) of ``sizes[i, j]`` bytes: each
    sender's cross its link (``rates[i]`` bytes/s, or one rate for all) one after another.

    >>> link_arrivals(np.array([[0.0, 0.1]]), np.array([[100.0, 100.0]]), 500.0).tolist()
    [[0.2, 0.4]]
    """
    arrivals = np.empty_like(ready)
    free = np.zeros(ready.shape[0])
    for j in range(ready.shape[1]):
        free = np.maximum(ready[:, j], free) + sizes[:, j] / rates
        arrivals[:, j] = free
    return arrivals


def taken_in_order(arrivals: np.ndarray, sizes: np.ndarray, rate: float) -> np.ndarray:
    """When a receiver taking packets in arrival order at ``rate`` bytes/s (the master's
    ingest) has taken each of these (``arrivals`` sorted, ``sizes`` bytes).

    >>> taken_in_order(np.array([0.0, 0.0, 1.0]), np.array([10.0, 10.0, 10.0]), 20.0).tolist()
    [0.5, 1.0, 1.5]
    """
    if math.isinf(rate):
        return arrivals
    taken, free = np.empty_like(arrivals), 0.0
    for k, (t, s) in enumerate(zip(arrivals, sizes)):
        free = max(t, free) + s / rate
        taken[k] = free
    return taken


def _decoded(scheme: Scheme, model: Model, arrived: np.ndarray, sizes: np.ndarray,
             share: np.ndarray, index: np.ndarray,
             counts: Optional[np.ndarray] = None,
             among: Optional[list] = None) -> tuple[Optional[int], float]:
    """When the master, taking these packets in their order of arrival (``arrived``
    seconds, ``sizes`` bytes, from these shares, code indices, with these piece indices),
    can decode: the position of the packet after which, and when the master has taken it
    (share_cost not included); (None, inf) if never. ``counts`` marks the packets that
    count (default all): a copy that came again, or a combination adding nothing to what
    the master has of its share, is taken but not counted. ``among``: sparse repairs, the
    pieces each packet mixes (() for a plain piece)."""
    counted = np.arange(len(arrived)) if counts is None else np.flatnonzero(counts)
    done = _decodable(scheme, share[counted], index[counted], model,
                      None if among is None else [among[i] for i in counted.tolist()])
    if done is None or done >= len(counted):    # (a rule that counts on every packet)
        return None, math.inf
    at = int(counted[done])                 # the master need take no more
    return at, float(taken_in_order(arrived[:at + 1], sizes[:at + 1], model.master_rate)[at])


def _decodable(scheme: Scheme, share: np.ndarray, index: np.ndarray, model: Model,
               among: Optional[list] = None) -> Any:
    """The position in arrival order of the packet after which the master can decode, the
    packets from these shares (code indices) with these piece indices: the scheme's rule,
    by the rank tracking where m·R is at most EXACT_UP_TO (``among``: sparse repairs',
    tracked exactly there; beyond, counted as the scheme's, which is optimistic for their
    plain pieces)."""
    exact = None
    if scheme.packets(model.pieces) * model.recovery_threshold <= EXACT_UP_TO:
        exact = lambda: _decodable_exact(scheme, share, index, model, among)   # noqa: E731
    return scheme.decodable(share, index, model, exact)


def _decodable_exact(scheme: Scheme, share: np.ndarray, index: np.ndarray,
                     model: Model, among: Optional[list] = None) -> Any:
    """The same, by the decoder's own rank tracking on the vectors the runtime sends (each
    packet's coefficients as the scheme says; sparse repairs', ``among``, plain pieces and
    random combinations of the pieces each names)."""
    R, q, code = model.recovery_threshold, scheme.packets(model.pieces), model.code
    if code is None:
        p = _P
        powers = np.array([[pow(a, d, p) for d in range(R)]
                           for a in range(1, model.n_shares + 1)], np.uint64)
    else:
        p, powers = code.F.p, code.evaluations.astype(np.uint64)
    basis = RankBasis(powers, q, p)
    rng = np.random.default_rng([model.seed, 17])

    def draw(count: int) -> np.ndarray:
        return rng.integers(0, p, count, dtype=np.uint64)

    for k, (s, l) in enumerate(zip(share.tolist(), index.tolist())):
        if among is None:
            coeffs = scheme.coefficients(l, q, draw)
        else:                               # plain, or random on the pieces it mixes
            coeffs = np.zeros(q, np.uint64)
            mixed = list(among[k]) or [l]
            coeffs[mixed] = draw(len(mixed)) if among[k] else 1
        if basis.probe(coeffs, s) >= 0 and basis.commit() == q * R:
            return k
    return None


def _ideal(model: Model) -> Any:
    """The least T at which the workers, all computing from 0 (each cycling through its own
    piece times, all its shares'), have done m·R pieces of work between them;
    communication and share_cost free."""
    times, need = np.where(model.held, model.times, 0.0), model.pieces * model.recovery_threshold
    if not times.sum():
        return 0.0
    lengths = model.held.sum(axis=1)
    per_cycle = times.sum(axis=1)
    cum = np.cumsum(times, axis=1)
    rows = np.arange(len(times))

    def work(T: float) -> float:
        cycles = np.floor(np.divide(T, per_cycle, out=np.full_like(per_cycle, np.inf),
                                    where=per_cycle > 0))
        rest = T - cycles * per_cycle
        full = np.minimum((cum <= rest[:, None]).sum(axis=1), lengths)
        prev = np.where(full > 0, cum[rows, full - 1], 0.0)
        current = np.where(full < lengths, times[rows, np.minimum(full, lengths - 1)], 1.0)
        frac = np.where(current > 0, (rest - prev) / current, 0)
        return np.where(per_cycle > 0, cycles * lengths + full + np.minimum(frac, 1),
                        np.inf).sum()

    lo, hi = 0.0, need * times.max() + 1e-12
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if work(mid) < need else (lo, mid)
    return float(hi)
