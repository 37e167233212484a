"""Hierarchies of relays, simulated: coded runs through one relay per group of workers.

N workers in G groups, each group with a relay (a sub-master). A hierarchical code has an
outer code across the groups (any R_o of the G suffice) and an inner code inside each group
(any R_i of its workers suffice), so each worker does 1/(R_o·R_i) of the job, the work of a
flat code with R = R_o·R_i. Worker i computes its share in m pieces, each taking
``compute[i, j] * slowdown[i] + pause[i, j]`` seconds as in ``ffcode.sim``, and sends a
random combination per piece as computed (compfs) over its link to its relay
(``inner_rate``, one packet at a time, then ``inner_latency``). The relay takes packets in
arrival order at ``relay_rate`` and decodes once it holds m·R_i independent ones, paying
its decode cost; then it sends m_o random combinations of its group's result (cfs: each
1/m_o of it, m·R_i·piece_bytes / m_o bytes) over its uplink (``uplink_rate``, then
``uplink_latency``). The master takes them at ``master_rate`` and decodes the outer code
once it holds m_o·R_o independent ones, paying its own decode cost.

Counting rule. Each sender's packets are c ⊗ v: random piece coefficients c (m of them, or
m_o) times the sender's code vector v (any R of which are independent), so one sender
gives at most m independent packets, and m is all it sends. With random coefficients any
m·R packets are then independent, however they are spread over the senders: the master
needs m_o·R_o packets from the relays, not m_o from each of R_o of them (a packet of a
third relay stands in for one a second relay has not sent yet). Up to m·R =
``sim.EXACT_UP_TO`` the decoder's own rank tracking (RankBasis) decides instead, and the
tests check that the two agree.

Decoding r unknowns with payloads of c elements costs r²·(r + c) element operations (each
packet reduced against up to r rows of coefficients and payload), at ``decode_cost``
seconds each, or what a function of (r, c) says: by default ``measure_decode_cost()``,
ffcode's Decoder timed where it runs (its operations and its r packets), paid after the
last packet needed (an upper bound: the runtime's decoder
eliminates while it waits). The master's decode work is counted in operations either way.

The flat run of the same job (``simulate_flat``) has the same workers and piece times and
a flat code of R = R_o·R_i: every packet crosses the worker's link, then its group's uplink
(shared by the group's workers, in the order their packets come), and the master decodes
m·R of them. Both layers carry the same bytes to the master (R_o groups' results are R
workers' results); what a hierarchy saves is the master's decoding, which it spreads over
the relays: R_i times less payload work and (m_o·R_o)³ instead of (m·R)³ coefficient work.

>>> tree = Tree(groups=[4, 4, 4], outer_threshold=2, inner_threshold=3, pieces=2,
...             piece_time=ShiftedExponential(0.1, 0.0), slowdown={0: 5, 5: 5},
...             uplink_rate=1e6, piece_bytes=1e4, decode_cost=1e-9)
>>> hierarchy, flat = simulate_tree(tree), simulate_flat(tree)
>>> np.round(hierarchy.relay_done, 3).tolist(), round(hierarchy.seconds, 3)
([0.2, 0.2, 0.2], 0.26)
>>> round(flat.seconds, 3), round(flat.master_work / hierarchy.master_work, 1)
(0.21, 3.0)

Each relay decodes at 0.2 s from its three fast workers; the master then waits for their
30 kB packets to cross the uplinks (0.26 s), while the flat run streamed its pieces as they
were computed (0.21 s). The hierarchy pays once the master's decoding would dominate: large
R, large pieces, slow uplinks carrying the same bytes either way.
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union, cast

import numpy as np

from ffcode import checks, sim
from ffcode._ext.rankbasis import RankBasis
from ffcode.codes import MDS
from ffcode.decoding.decoder import Decoder
from ffcode.errors import InvalidParameterError
from ffcode.field import GF
from ffcode.pieces import piece_packets
from ffcode.sim import Distribution, PerWorker, ShiftedExponential

# Seconds to decode r unknowns from packets of c payload elements: a function (r, c), or
# seconds per element operation (r²·(r + c) of them).
DecodeCost = Union[float, Callable[[int, float], float]]


@dataclass(frozen=True)
class DecodeTimes:
    """Seconds to decode r unknowns from packets of c payload elements: ``per_operation``
    for each of the r²·(r + c) element operations, ``per_packet`` for each of the r
    packets (taking it in, checks, bookkeeping)."""
    per_operation: float
    per_packet: float

    def __call__(self, rank: int, columns: float) -> float:
        return self.per_operation * decode_work(rank, columns) + self.per_packet * rank


@functools.lru_cache(maxsize=None)
def measure_decode_cost(repeats: int = 5) -> DecodeTimes:
    """ffcode's Decoder's DecodeTimes, timed where it runs: the fastest of ``repeats``
    decodes of 32 unknowns from packets of one element (the packets' own cost) and of 128
    unknowns from packets of 1024 (the rest, over its operations). Measured once (about
    0.2 s).

    >>> times = measure_decode_cost(repeats=1)
    >>> 0 < times.per_operation < 1e-6 and 0 < times.per_packet < 1e-2
    True
    """
    repeats = checks.integer(repeats, "repeats", low=1)
    per_packet = _decode_seconds(32, 1, repeats) / 32
    large = _decode_seconds(128, 1024, repeats)
    per_operation = max(large - 128 * per_packet, large / 10) / decode_work(128, 1024)
    return DecodeTimes(per_operation, per_packet)


def _decode_seconds(rank: int, columns: int, repeats: int) -> float:
    """The fastest of ``repeats`` decodes of ``rank`` unknowns (an MDS code of R = rank/4 in
    4 pieces, over GF(2**31 - 1)) from packets of ``columns`` payload elements."""
    F, m = GF(2**31 - 1), 4
    k = rank // m
    code = MDS(F, k=k, n_workers=k)
    shares = code.encode(F.random((k * m, columns), seed=1))
    identity = np.eye(columns, dtype=F.dtype)      # each result: its share's m rows
    packets = [p for w in range(k) for p in
               piece_packets(F, code.compute(shares[w], identity), m, w, seed=w)]
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        decoder = Decoder(shares, pieces=m)
        for packet in packets:
            decoder.add(packet)
        decoder.result()
        best = min(best, time.perf_counter() - start)
    return best


def decode_work(rank: int, columns: float) -> float:
    """Element operations to decode ``rank`` unknowns from payloads of ``columns`` elements.

    >>> decode_work(4, 10)
    224
    """
    return rank * rank * (rank + columns)


@dataclass
class Tree:
    """A hierarchy of relays and its job. ``groups`` gives the workers of each group (its
    size; workers are numbered group by group) or a number G of equal groups of
    ``n_workers`` / G. ``outer_threshold`` R_o groups and, in each, ``inner_threshold`` R_i
    workers suffice; ``pieces`` m per worker and ``outer_pieces`` m_o per relay (m unless
    given). ``piece_time``, ``slowdown`` and ``pause`` are ``sim.Model``'s, per worker
    (``workers`` is that model: its ``times`` are every worker's piece times); ``inner_rate``
    may be per worker too. Rates are bytes per second (inf: free), latencies seconds;
    ``piece_bytes`` is one inner packet's payload, of ``element_bytes`` per element.
    ``decode_cost`` (None: ``measure_decode_cost()``) prices the relays' and the master's
    decoding. Before a worker starts, its share is encoded and shipped, one share after
    another: by the flat master ``share_cost`` seconds a worker; in the hierarchy by the
    master ``outer_share_cost`` a relay, then by each relay ``inner_share_cost`` a worker
    of its group (all 0: every worker starts at once). ``members[g]`` are group g's
    workers."""
    groups: Union[int, Sequence[int]]
    outer_threshold: int
    inner_threshold: int
    pieces: int
    outer_pieces: Optional[int] = None
    n_workers: Optional[int] = None
    piece_time: Distribution = ShiftedExponential(1.0, 0.0)
    slowdown: PerWorker = 1.0
    pause: Optional[Distribution] = None
    inner_rate: PerWorker = math.inf
    inner_latency: float = 0.0
    uplink_rate: float = math.inf
    uplink_latency: float = 0.0
    relay_rate: float = math.inf
    master_rate: float = math.inf
    piece_bytes: float = 1 << 20
    element_bytes: int = 4
    decode_cost: Optional[DecodeCost] = None
    seed: int = 0
    share_cost: float = 0.0
    outer_share_cost: float = 0.0
    inner_share_cost: float = 0.0

    def __post_init__(self) -> None:
        self.groups = _group_sizes(self.groups, self.n_workers)
        self.n_workers, G = sum(self.groups), len(self.groups)
        self.outer_threshold = checks.integer(self.outer_threshold, "outer_threshold", low=1)
        self.inner_threshold = checks.integer(self.inner_threshold, "inner_threshold", low=1)
        if self.outer_threshold > G:
            raise InvalidParameterError(
                f"A tree of {G} groups cannot have outer_threshold "
                f"{self.outer_threshold}: fewer groups than the outer code "
                f"needs.")
        small = [g for g, size in enumerate(self.groups) if size < self.inner_threshold]
        if small:
            raise InvalidParameterError(
                f"Group {small[0]} has {self.groups[small[0]]} workers, fewer "
                f"than inner_threshold {self.inner_threshold}.")
        self.pieces = checks.integer(self.pieces, "pieces", low=1)
        self.outer_pieces = checks.integer(
            self.pieces if self.outer_pieces is None else self.outer_pieces,
            "outer_pieces", low=1)
        for name in ("uplink_rate", "relay_rate", "master_rate", "piece_bytes"):
            setattr(self, name, checks.positive(getattr(self, name), name, finite=False))
        for name in ("inner_latency", "uplink_latency", "share_cost", "outer_share_cost",
                     "inner_share_cost"):
            setattr(self, name, checks.non_negative(getattr(self, name), name))
        self.element_bytes = checks.integer(self.element_bytes, "element_bytes", low=1)
        self.seed = checks.integer(self.seed, "seed", low=0)
        if self.decode_cost is None:
            self.decode_cost = measure_decode_cost()
        elif not callable(self.decode_cost):
            self.decode_cost = checks.non_negative(self.decode_cost, "decode_cost",
                                                   "seconds per operation or a function")
        self.workers = sim.Model(self.n_workers, self.outer_threshold * self.inner_threshold,
                                 self.pieces, piece_time=self.piece_time,
                                 slowdown=self.slowdown, pause=self.pause,
                                 link_rate=self.inner_rate, seed=self.seed)
        ends = np.cumsum(self.groups)
        self.members = [np.arange(end - size, end) for end, size in zip(ends, self.groups)]

    def starts(self, flat: bool) -> np.ndarray:
        """When each worker starts computing: its share encoded and shipped after those
        before it (in the flat run by the master; in the hierarchy by its relay, once the
        master has shipped the relay's)."""
        if flat:
            return self.share_cost * np.arange(1, len(self.workers.times) + 1)
        return np.concatenate([self.outer_share_cost * (g + 1) + self.inner_share_cost *
                               np.arange(1, len(members) + 1)
                               for g, members in enumerate(self.members)])

    def decode_seconds(self, rank: int, columns: float) -> float:
        """The seconds of one decode of ``rank`` unknowns, payloads of ``columns`` elements."""
        cost = self.decode_cost
        assert cost is not None, "__post_init__ measures it"
        return float(cost(rank, columns) if callable(cost) else
                     cost * decode_work(rank, columns))


def _group_sizes(groups: Union[int, Sequence[int]], n_workers: Optional[int]) -> tuple:
    """The size of every group: ``groups`` sizes (summing to n_workers, if given) or a count
    of equal groups of n_workers."""
    if isinstance(groups, (str, bytes)) or np.ndim(groups) > 1:
        raise InvalidParameterError(
            "Argument 'groups' must be a number of groups or a list of group "
            "sizes.")
    if np.ndim(groups) == 0:
        count = checks.integer(groups, "groups", low=1)
        if n_workers is None:
            raise InvalidParameterError("A number of groups needs n_workers, to size them.")
        n_workers = checks.integer(n_workers, "n_workers", low=1)
        if n_workers % count:
            raise InvalidParameterError(
                f"{n_workers} workers cannot be split into {count} equal groups.")
        return (n_workers // count,) * count
    sizes = tuple(checks.integer(s, "groups", low=1) for s in cast(Sequence[int], groups))
    if not sizes:
        raise InvalidParameterError("Argument 'groups' must list at least one group.")
    if n_workers is not None and checks.integer(n_workers, "n_workers") != sum(sizes):
        raise InvalidParameterError(
            f"The groups hold {sum(sizes)} workers, not n_workers = {n_workers}.")
    return sizes


@dataclass(frozen=True)
class TreeResult:
    """What a simulated run gives: ``seconds`` until the master has decoded (inf if it never
    can), the master's and every relay's decode work in element operations (``relay_work``
    and ``relay_done``, when each relay had decoded, inf if never, are empty in a flat run),
    and the bytes sent on each layer: every packet handed to a link before its receiver
    held enough packets (a worker stops when its relay has, a relay when the master has).
    In a flat run every packet crosses both layers."""
    seconds: float
    master_work: float
    relay_work: np.ndarray
    relay_done: np.ndarray
    bytes_inner: float
    bytes_uplink: float


def simulate_tree(tree: Tree, exact: Optional[bool] = None) -> TreeResult:
    """The hierarchical run of the tree's job. ``exact`` (None: where m·R <= EXACT_UP_TO)
    decides decodability by rank tracking rather than by counting packets."""
    if not isinstance(tree, Tree):
        raise InvalidParameterError(f"Argument 'tree' must be a Tree, not {type(tree).__name__}.")
    m, R_i, size = tree.pieces, tree.inner_threshold, tree.piece_bytes
    ready = tree.starts(flat=False)[:, None] + np.cumsum(tree.workers.times, axis=1)
    arrivals = sim.link_arrivals(ready, np.full(ready.shape, size), tree.workers.link_rate) + \
        tree.inner_latency
    columns = size / tree.element_bytes
    G = len(tree.members)
    enough, relay_done, relay_work = np.full(G, math.inf), np.full(G, math.inf), np.zeros(G)
    for g, members in enumerate(tree.members):
        enough[g] = _enough(arrivals[members], size, tree.relay_rate, R_i, exact,
                            [tree.seed, 1, g])
        if enough[g] < math.inf:
            relay_work[g] = decode_work(m * R_i, columns)
            relay_done[g] = enough[g] + tree.decode_seconds(m * R_i, columns)
    m_o, R_o = cast(int, tree.outer_pieces), tree.outer_threshold   # set: __post_init__
    outer = m * R_i * size / m_o                # a relay's packet: 1/m_o of its result
    up = sim.link_arrivals(np.repeat(relay_done[:, None], m_o, axis=1),
                           np.full((G, m_o), outer), tree.uplink_rate) + tree.uplink_latency
    done = _enough(up, outer, tree.master_rate, R_o, exact, [tree.seed, 2])
    sent_inner = sum(int((ready[members] < enough[g]).sum())
                     for g, members in enumerate(tree.members))
    seconds, work = math.inf, 0.0
    if done < math.inf:
        work = decode_work(m_o * R_o, outer / tree.element_bytes)
        seconds = done + tree.decode_seconds(m_o * R_o, outer / tree.element_bytes)
    return TreeResult(seconds, work, relay_work, relay_done, sent_inner * size,
                      m_o * int((relay_done < done).sum()) * outer)


def simulate_flat(tree: Tree, exact: Optional[bool] = None) -> TreeResult:
    """The flat run of the same job on the same workers: a code of R = R_o·R_i, every
    packet over the worker's link and its group's shared uplink to the master."""
    if not isinstance(tree, Tree):
        raise InvalidParameterError(f"Argument 'tree' must be a Tree, not {type(tree).__name__}.")
    m, size = tree.pieces, tree.piece_bytes
    R = tree.outer_threshold * tree.inner_threshold
    ready = tree.starts(flat=True)[:, None] + np.cumsum(tree.workers.times, axis=1)
    local = sim.link_arrivals(ready, np.full(ready.shape, size), tree.workers.link_rate) + \
        tree.inner_latency
    arrivals = np.empty_like(local)
    for members in tree.members:             # each group's packets share its uplink
        order = np.argsort(local[members], axis=None, kind="stable")
        crossed = sim.taken_in_order(local[members].ravel()[order], np.full(order.size, size),
                              tree.uplink_rate)
        group = np.empty(order.size)
        group[order] = crossed
        arrivals[members] = group.reshape(len(members), m)
    arrivals += tree.uplink_latency
    done = _enough(arrivals, size, tree.master_rate, R, exact, [tree.seed, 3])
    sent = int((ready < done).sum()) * size
    columns = size / tree.element_bytes
    seconds, work = math.inf, 0.0
    if done < math.inf:
        work = decode_work(m * R, columns)
        seconds = done + tree.decode_seconds(m * R, columns)
    return TreeResult(seconds, work, np.zeros(0), np.zeros(0), sent, sent)


def _enough(arrivals: np.ndarray, size: float, rate: float, threshold: int,
            exact: Optional[bool], seed: list) -> float:
    """When a receiver taking packets in arrival order at ``rate`` bytes/s holds enough to
    decode a code of this threshold (inf if it never does): ``arrivals[s, j]`` is sender
    s's j-th packet's (inf: never sent), each ``size`` bytes."""
    senders, pieces = arrivals.shape
    arrived = arrivals.ravel()
    index = np.flatnonzero(np.isfinite(arrived))
    # in arrival order; ties: a sender's earlier packets, lower senders
    index = index[np.lexsort((index % pieces, arrived[index]))]
    need = pieces * threshold
    if exact if exact is not None else need <= sim.EXACT_UP_TO:
        last = _rank_reached(index // pieces, senders, threshold, pieces, seed)
    else:
        last = need - 1 if index.size >= need else None
    if last is None:
        return math.inf
    taken = sim.taken_in_order(arrived[index[:last + 1]], np.full(last + 1, size), rate)
    return float(taken[last])


def _rank_reached(sender: np.ndarray, senders: int, threshold: int, pieces: int,
                  seed: list) -> Optional[int]:
    """The position of the packet after which these senders' packets (random piece
    coefficients on a Vandermonde code of this threshold) have full rank, by the decoder's
    rank tracking; None if they never do."""
    F = GF(2**31 - 1)
    points = F.vandermonde(np.arange(1, senders + 1), threshold).astype(np.uint64)
    basis = RankBasis(points, pieces, F.p)
    rng = np.random.default_rng(seed)
    for k, s in enumerate(sender.tolist()):
        coefficients = rng.integers(0, F.p, pieces, dtype=np.uint64)
        if basis.probe(coefficients, s) >= 0 and basis.commit() == pieces * threshold:
            return k
    return None


def sweep_group_size(n_workers: int = 1000, sizes: Iterable[int] = (10, 20, 25, 40, 50, 100),
                     outer_fraction: float = 0.8, inner_fraction: float = 0.8,
                     **tree: Any) -> dict[int, tuple[TreeResult, TreeResult]]:
    """Flat against hierarchical for every group size: ``{size: (flat, hierarchical)}``, with
    n_workers / size groups, R_o = round(outer_fraction × groups) and R_i =
    round(inner_fraction × size) (at least 1), the other arguments the Tree's.

    >>> runs = sweep_group_size(24, sizes=(4, 6), pieces=2, decode_cost=1e-9)
    >>> {s: round(flat.master_work / tree.master_work, 1) for s, (flat, tree) in runs.items()}
    {4: 3.0, 6: 5.0}
    """
    n_workers = checks.integer(n_workers, "n_workers", low=1)
    for name, fraction in (("outer_fraction", outer_fraction),
                           ("inner_fraction", inner_fraction)):
        if not 0 < checks.real(fraction, name) <= 1:
            raise InvalidParameterError(f"Argument {name!r} must be in (0, 1], not {fraction}.")
    runs = {}
    for size in sizes:
        size = checks.integer(size, "sizes", low=1)
        if n_workers % size:
            raise InvalidParameterError(f"Group size {size} does not divide {n_workers} workers.")
        groups = n_workers // size
        model = Tree(groups=groups, n_workers=n_workers,
                     outer_threshold=max(1, round(outer_fraction * groups)),
                     inner_threshold=max(1, round(inner_fraction * size)), **tree)
        runs[size] = (simulate_flat(model), simulate_tree(model))
    return runs

