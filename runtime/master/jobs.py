"""A job as values: the ``Options`` it runs with, the ``Layout`` of its data on the workers,
and the ``Plan``: each worker's ``Task`` (runtime/task.py) and the collector its packets go
to (ffcode.decoding.collectors).

A worker may hold several shares (``assignment[i]``, code indices, ffcode.allocation): it
works through them in order, numbering its packets on (task.packet_index), so that the
master files each packet under its share, every share being its own sender.

>>> from ffcode import GF, MDS
>>> F = GF(65521)
>>> options = Options(scheme="cfs", pieces=2)
>>> plan = Plan(MDS(F, 2, 3), (F.random((4, 3), seed=1), F.random(3, seed=2)), options,
...             assignment=((0,), (1,), (2,)))
>>> [task.send for task, arrays in plan.tasks], plan.needed
(['random', 'random', 'random'], 4)
>>> Options(timeout=0)
Traceback (most recent call last):
...
ValueError: Argument 'timeout' must be positive, not 0.0.
"""
from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ffcode import allocation, checks, functions
from ffcode.codes import HierarchicalCode
from ffcode.codes.base import Code, Encoding, Split
from ffcode.decoding import collectors, robust
from ffcode.decoding import verify
from ffcode.errors import VerificationError
from ffcode.pieces import pieces_count
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.report import Report
from ffcode.runtime.shared.task import Planned, Task, filed
from ffcode.schemes import Scheme

ALLOCATE = ("uniform", "speed")
MAX_PRIORITY = 1 << 31

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    """How a job runs: ``Cluster.run``'s (and ``load``'s) keyword arguments, checked as they
    are made. seed: the encoding's masks and the packets' random coefficients (default:
    fresh randomness for every job).

    scheme: "uncoded" (every worker's slice), "classic" (the R fastest whole results),
    "systematic" (whole results sent as m plain row pieces), "cfs" (whole results sent
    as m random combinations of their pieces), "compfs" (a packet per piece as it is
    computed; the default). pieces is m (default 4); faults (ffcode.Faults) are
    injected; progress(rank, needed) is called as the rank grows. Raises JobFailed (the
    report attached as .report) when the remaining work cannot decode, JobTimeout after
    timeout seconds.

    assignment, allocate: which shares (the code's points) each worker holds; a worker
    with several works through them in order, so that a fast one keeps computing while
    stragglers are waited for (every share is its own sender to the decoder). By default
    ("uniform") they are dealt round-robin over the cluster's workers: worker i holds
    shares i, i + P, ... of a code with more points than the P workers, and share i of
    one with at most P (the rest idle). allocate="speed" gives each worker a number of
    shares in proportion to its speed measured in the latest job (``speeds()``; an
    unmeasured one counts as the median), allocate=[s_0, ...] to given speeds, each
    worker at least one share; assignment=[[0, 6], [1, 7], ...] names each worker's
    shares. Faults and the report name workers by their place 0..P-1 in the job.
    More shares cost more encoding and bytes shipped (the report's ``encode`` and
    ``shipped``; paid once with resident data, whose ``load`` fixes the assignment).

    priority: with several jobs in flight (``Cluster.submit``), each worker runs the tasks
    of the highest priority first, and those of equal priority in turn, a share each
    (default 0, for all).

    group_faults: on a cluster of relays (``groups=``), {group: ffcode.Faults} injected
    into the group's workers (numbered 0..size-1 in their group) on every piece of work
    its relay gives them; ``faults`` are the relays'.

    verify: check the output before returning it (ffcode.decoding.verify: Freivalds' check for
    products, a random projection for row-linear LCC), raising VerificationError if a
    worker's wrong result got into it. "auto" (the default) checks where the check costs
    at most 5 % of the job's multiply-adds (ffcode.decoding.verify.cheap), at every prime:
    products from about n = 60 * rounds(p) (120 at 2**31 - 1, 60 from 2**60), row-linear
    LCC blocks from 20 * rounds(p) rows, and with adversaries every checkable output but
    MDS with a vector x (a recomputation); True and False force it.

    adversaries: decode despite up to A workers sending wrong results (ffcode.decoding.robust),
    named in report.wrong (a worker with several shares is wrong on all of them: the
    shares the A workers holding the most hold are corrected). Every scheme but uncoded stops once what arrived decides
    the output with any A workers wrong: classic at R + A whole results when they
    agree, by R + 2A otherwise (Berlekamp-Welch); systematic, cfs and compfs at about
    m·(R + A) random combinations when all agree, by m·(R + 2A) otherwise. More wrong
    workers make the job fail with VerificationError: their results cannot be
    explained, or, if they collude to forge a consistent wrong output, it fails the
    check. Workers found wrong in a job whose output is returned are excluded from
    later jobs (``exclude``).
    """
    scheme: Optional[Union[Scheme, str]] = None
    pieces: Optional[int] = None
    faults: Faults = Faults()
    timeout: float = 600.0
    seed: Optional[int] = None
    progress: Optional[Callable[[int, int], None]] = None
    verify: Union[bool, str] = "auto"
    adversaries: int = 0
    assignment: Optional[Sequence[Sequence[int]]] = None
    allocate: Optional[Union[str, Sequence[float]]] = None
    priority: int = 0
    group_faults: Optional[Mapping[int, Faults]] = None

    def __post_init__(self) -> None:
        if self.scheme is not None:
            object.__setattr__(self, "scheme", Scheme.parse(self.scheme))
        if self.pieces is not None:
            object.__setattr__(self, "pieces", pieces_count(self.pieces))
        if self.faults is None:
            object.__setattr__(self, "faults", Faults())
        if not isinstance(self.faults, Faults):
            raise TypeError(f"Argument 'faults' must be an ffcode.Faults, not "
                            f"{type(self.faults).__name__}.")
        object.__setattr__(self, "timeout", checks.seconds(self.timeout, "timeout"))
        if self.verify != "auto" and not isinstance(self.verify, bool):
            raise TypeError(f"Argument 'verify' must be True, False or 'auto', not "
                            f"{self.verify!r}.")
        if self.progress is not None and not callable(self.progress):
            raise TypeError("Argument 'progress' must be callable as progress(rank, needed).")
        object.__setattr__(self, "adversaries",
                           checks.integer(self.adversaries, "adversaries", low=0))
        if self.assignment is not None and self.allocate is not None:
            raise ValueError("Give either 'assignment' or 'allocate', not both.")
        object.__setattr__(self, "priority", checks.integer(
            self.priority, "priority", low=-MAX_PRIORITY, high=MAX_PRIORITY))
        if self.group_faults is not None:
            if not isinstance(self.group_faults, Mapping) or not all(
                    isinstance(f, Faults) for f in self.group_faults.values()):
                raise TypeError("Argument 'group_faults' must map groups to ffcode.Faults.")
            object.__setattr__(self, "group_faults", {
                checks.integer(g, "group_faults group", low=0): f
                for g, f in self.group_faults.items()})

    def assignment_for(self, code: Code, size: int, speeds: Sequence[Any],
                       remote: bool = False) -> tuple:
        """The shares each of a cluster's size workers holds: as given, or allocated
        (uniform by default; by ``speeds``, the latest job's, for allocate="speed").
        remote: the workers import the code's computation by its path."""
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code or the data load "
                            f"returned, not {type(code).__name__}.")
        if remote:
            check_importable(code)
        assignment = self._allocated(code, size, speeds)
        warn_privacy(code, assignment)
        return assignment

    def _allocated(self, code: Code, size: int, speeds: Sequence[Any]) -> tuple:
        allocate = self.allocate
        if self.assignment is not None:
            return allocation.checked(self.assignment, code.n_workers, size)
        if allocate is None or isinstance(allocate, str) and allocate == "uniform":
            return allocation.uniform(code.n_workers, size)
        if isinstance(allocate, str):
            checks.choice(allocate, "allocate", ALLOCATE)
            known = sorted(s for s in speeds if s is not None)
            if not known:
                raise ValueError("allocate='speed' needs speeds measured in an earlier job "
                                 "on this cluster: run one first, or pass the speeds.")
            median = known[len(known) // 2]
            measured: Sequence[Any] = [median if s is None else s for s in speeds]
        else:
            measured = allocation.checked_speeds(allocate, "allocate")
            if len(measured) != size:
                raise ValueError(f"Argument 'allocate' gives {len(measured)} speeds; the "
                                 f"cluster has {size} workers.")
        return allocation.dealt(allocation.proportional(code.n_workers, measured))

    def resolved(self, scheme: Scheme = Scheme.COMPFS, pieces: int = 4) -> "Options":
        """These options with the scheme and pieces filled in where left out."""
        return Options(**dict(vars(self), scheme=self.scheme or scheme,
                              pieces=self.pieces or pieces))


class Layout:
    """A job's data as the workers hold it: ``encoding`` (an Encoding, or the uncoded
    Split), ``shares[k]``, the arrays of the code's share k (None: no work), and
    ``assignment[i]``, the shares worker i holds (ffcode.allocation). ``holds`` says which
    schemes it serves (Scheme.holds); ``pieces`` is m for piece-combined shares."""

    def __init__(self, code: Code, data: Sequence[Any], scheme: Scheme,
                 pieces: Optional[int], seed: Optional[int], assignment: tuple) -> None:
        self.code, self.holds, self.assignment = code, scheme.holds, assignment
        self.pieces = pieces if self.holds == "pieces" else None
        self.encoding: Encoding | Split
        if self.holds == "slices":
            self.encoding = code.uncoded(*data)
        else:
            encoding = code.encode(*data, pieces=self.pieces, seed=seed)
            _check_rows(encoding.blocks)
            self.encoding = encoding
        shares = [_arrays(share) for share in self.encoding]
        if self.holds == "slices":
            _check_rows(np.shape(a) for share in shares for a in share)
        self.shares = shares + [None] * (code.n_workers - len(shares))
        self.nbytes = sum(a.nbytes for share in shares for a in share)

    def serves(self, scheme: Scheme) -> bool:
        return scheme.holds == self.holds

    def held(self, worker: int) -> list:
        """The (code index, arrays) of the shares worker holds that have work."""
        return [(k, self.shares[k]) for k in self.assignment[worker]
                if self.shares[k] is not None]


class Plan:
    """One job: each worker's Task (None: idle) with the arrays it carries, and the
    collector of the shares' packets. ``inputs`` are the code's inputs, data and arguments;
    for ``resident`` data (runtime.resident.Resident) just the arguments, on the assignment
    it was loaded with. A wrong worker is wrong on every share it holds, so the collector
    corrects as many shares as the A workers holding the most hold between them
    (``wrong_shares``). ``inner``: for a cluster of relays, inner(plan, relay, held) is
    what a relay's task carries, held being the code indices of its shares with work
    (``through_relays``, where the code is then the outer code, and ``forwarded``)."""

    every_worker = False        # a lost worker's shares are made up by the others'

    def __init__(self, code: Code, inputs: Sequence[Any], options: Options,
                 assignment: tuple, resident: Any = None, buffer: Any = None,
                 max_message: int = 256 << 20,
                 inner: Optional[Callable[["Plan", int, list], dict]] = None) -> None:
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        options = options.resolved()
        scheme, work_pieces = options.scheme, options.pieces
        assert isinstance(scheme, Scheme) and work_pieces is not None, "resolved: set"
        self.code, self.F, self.options = code, code.F, options
        self.scheme = scheme
        # The faults pause per piece of work, m pieces in every scheme (so that a comparison
        # meets the same delays); whole-result schemes send their m pieces as one packet.
        self.work_pieces = work_pieces
        self.pieces = scheme.packets(work_pieces)
        self.adversaries = options.adversaries
        if self.adversaries and not scheme.coded:
            raise ValueError("Correcting wrong results (adversaries > 0) needs redundancy, "
                             "which scheme='uncoded' has none of: use classic, systematic, "
                             "cfs or compfs.")
        path = functions.path_of(code.function)    # before any work: workers import it
        self.resident, self.assignment, self.inner = resident, assignment, inner
        self.name = repr(code)          # what the report calls the job's code
        counts = sorted((len(held) for held in assignment), reverse=True)
        self.wrong_shares = sum(counts[:self.adversaries])
        robust.check_correctable(code.recovery_threshold, code.n_workers, self.wrong_shares,
                                 self.adversaries, code.every_r_decodes)
        self.layout, args = self._layout(code, inputs, scheme, options.seed)
        self.arguments = args           # the job's arguments, as every task carries them
        # The packets' random coefficients (cfs): a fresh seed per job unless one is given.
        self.coefficient_seed = secrets.randbits(63) if options.seed is None else options.seed
        self.held, self.tasks = [], []      # held: each worker's shares with work, in order
        for worker in range(len(assignment)):
            held = self.layout.held(worker)
            self.held.append([k for k, _ in held])
            self.tasks.append(self._task(path, worker, held, args, max_message)
                              if held else None)
        self.collector: collectors.Collector
        if scheme == Scheme.UNCODED:
            split = self.layout.encoding
            assert isinstance(split, Split), "the uncoded scheme holds slices"
            self.collector = collectors.Gather(self.F, len(split.shares), split.assemble)
            self.needed = self.collector.needed
        else:   # enough packets for any A wrong workers (m·R when nobody may be wrong)
            self.needed = self.pieces * (code.recovery_threshold + 2 * self.wrong_shares)
            self.collector = collectors.for_job(self.layout.encoding, self.pieces,
                                                self.wrong_shares,
                                                whole=scheme == Scheme.CLASSIC, buffer=buffer)

    def _layout(self, code, inputs, scheme, seed) -> tuple:
        """The data's layout (encoded here, or the resident data's) and the job's arguments
        as the workers get them."""
        resident = self.resident
        if resident is None:
            code.check_inputs(inputs)
            layout = Layout(code, inputs[:code.encodes], scheme, self.pieces, seed,
                            self.assignment)
            inputs = inputs[code.encodes:]
        else:
            layout = resident.layout
            if not layout.serves(scheme):
                raise ValueError(
                    f"The resident data holds {layout.holds} (loaded for "
                    f"{', '.join(s for s in Scheme if layout.serves(s))}), which "
                    f"scheme={scheme.value!r} cannot run on: load it for {scheme.value!r}.")
            if layout.pieces not in (None, self.pieces):
                raise ValueError(f"The resident data was loaded for compfs with "
                                 f"pieces={layout.pieces}, not {self.pieces}.")
        return layout, [np.asarray(a) for a in code.arguments(layout.encoding, *inputs)]

    def _task(self, path, worker, held, args, max_message) -> tuple:
        """(Task, the arrays it carries) of a worker holding shares ``held``."""
        resident, scheme = self.resident, self.scheme
        seeds = None
        if scheme == Scheme.CFS:        # each share's coefficients: its own stream of the seed
            seeds = tuple(tuple(int(s) for s in np.random.SeedSequence(
                [self.coefficient_seed, k]).generate_state(2)) for k, _ in held)
        task = Task(f=path, p=self.F.p, send=scheme.send, pieces=self.pieces,
                    shares=len(held),
                    counts=() if resident else tuple(len(share) for _, share in held),
                    operand=self.layout.encoding[0].operand if scheme == Scheme.COMPFS
                    else None,
                    data=None if resident is None else resident.ident, seeds=seeds,
                    faults=self.options.faults.for_worker(worker,
                                                          self.work_pieces * len(held)),
                    max_message=max_message, priority=self.options.priority,
                    inner=None if self.inner is None else
                    self.inner(self, worker, [k for k, _ in held]))
        shipped = [] if resident else [a for _, share in held for a in share]
        return task, [*shipped, *args]

    def share_of(self, worker: int, index: int) -> Optional[tuple[int, int]]:
        """(code index, piece) of a worker's packet ``index`` (None: it has no such
        packet)."""
        return filed(self.held[worker], index, self.pieces)

    @property
    def buffer(self) -> Any:
        """The payload storage the decoder used, for the next job to reuse."""
        return self.collector.buffer

    def settings(self, inputs: Sequence[Any], verify: bool) -> dict:
        """What a report says the job was (JSON-ready); ``resident``: the id of the resident
        data it ran on (null: shipped with the job); ``assignment``: each worker's shares;
        ``coefficient_seed``: where the packets' random coefficients came from."""
        def shapes(x):
            return [shapes(y) for y in x] if isinstance(x, (list, tuple)) else \
                list(np.shape(x))

        options = self.options
        return {"code": self.name, "p": self.F.p, "inputs": [shapes(x) for x in inputs],
                "scheme": self.scheme.value, "pieces": self.pieces,
                "faults": options.faults.to_dict(), "seed": options.seed,
                "coefficient_seed": self.coefficient_seed,
                "adversaries": self.adversaries, "verify": verify,
                "resident": None if self.resident is None else self.resident.ident,
                "assignment": [list(held) for held in self.assignment],
                "priority": options.priority}


def prepare(code: Any, inputs: tuple, options: Options, n_workers: int, speeds: list,
            remote: bool, buffers: dict, max_message: int, resident: bool = False,
            groups: tuple = ()) -> tuple:
    """(plan, inputs, check) of a job on a cluster of n_workers: ``code`` is a code, or
    resident data (runtime.resident.Resident, checked to be the cluster's) whose
    assignment, scheme and pieces it keeps; ``inputs`` come back with the resident data in
    front; check: whether to verify the output. The decoder takes payload storage that
    an earlier job left in ``buffers`` (dtype -> storage; a job returns it as it ends).
    ``groups``: the group sizes of a cluster of relays (its n_workers relays), which runs
    a hierarchical code's outer code (``through_relays``)."""
    if isinstance(code, Planned):           # a relay's forwarding, a MapReduce phase
        if groups:
            raise ValueError(f"A cluster of relays (groups=...) cannot run {code!r}.")
        return code.plan(options), (), False
    inner, asked, assignment = None, code, None
    if groups and isinstance(code, HierarchicalCode):
        code, carried = through_relays(code, groups, options.group_faults)
        inner = lambda plan, relay, held: carried[relay]    # noqa: E731
    elif groups:
        assignment, inner = forwarded(code, groups, options, remote)
    elif options.group_faults is not None:
        raise ValueError("Argument 'group_faults' is for a cluster of relays (groups=).")
    data = None
    if resident:
        data = code
        if options.assignment is not None or options.allocate is not None:
            raise ValueError("Resident data keeps the assignment it was loaded with: "
                             "give assignment or allocate to load, not to run.")
        code, assignment = data.code, data.assignment
        options = options.resolved(data.scheme, data.pieces)
    elif assignment is None:
        assignment = options.assignment_for(code, n_workers, speeds, remote=remote)
    options.faults.check_workers(len(assignment))
    buffer = buffers.pop(code.F.dtype, None)    # one job's at a time
    plan = Plan(code, inputs, options, assignment, data, buffer, max_message, inner)
    if asked is not code:
        plan.name = repr(asked)         # the hierarchical code, its outer one at the master
    inputs = inputs if data is None else (*data.data, *inputs)
    return plan, inputs, verification(options.verify, code, inputs, options.adversaries)


def through_relays(code: Any, groups: tuple, group_faults: Any = None) -> tuple:
    """(the outer code, what each relay's task carries: the inner code's description and
    its group's faults) of a job on a cluster of relays whose groups have these sizes: a
    HierarchicalCode with a group per relay and, in each group, a worker per point of its
    inner code. On three groups of four:

    >>> from ffcode import GF, MDS, HierarchicalCode
    >>> F = GF(65521)
    >>> code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 3, 4))
    >>> outer, carried = through_relays(code, (4, 4, 4))
    >>> outer.recovery_threshold, len(carried), carried[0]["code"]["points"]
    (2, 3, [1, 2, 3, 4])
    """
    if not isinstance(code, HierarchicalCode):
        raise TypeError(f"A cluster of relays (groups=...) runs hierarchical codes "
                        f"(ffcode.HierarchicalCode), not {type(code).__name__}: run it on a "
                        f"cluster without groups.")
    if code.groups != len(groups):
        raise ValueError(f"{code!r} has {code.groups} groups (its outer code's points), "
                         f"this cluster {len(groups)}.")
    inner, group_faults = code.inner, checked_group_faults(group_faults, groups)
    for g, size in enumerate(groups):
        if size < inner.recovery_threshold:
            raise ValueError(f"Group {g} has {size} workers, fewer than the inner code's "
                             f"recovery threshold {inner.recovery_threshold}: it could "
                             f"never decode.")
        if size != inner.n_workers:
            raise ValueError(f"Group {g} has {size} workers, the inner code "
                             f"{inner.n_workers} points: give each group a worker per "
                             f"point.")
    description = inner.description()
    return code.outer, [{"code": description, "faults": group_faults.get(g)}
                        for g in range(len(groups))]


def forwarded(code: Any, groups: tuple, options: Options, remote: bool = False) -> tuple:
    """(each relay's shares, inner) of an ordinary code on a cluster of relays whose groups
    have these sizes: the shares are dealt over the groups' workers (as ``assignment``
    and ``allocate`` say, over all of them: uniform by default), a relay holding its
    workers' shares in their order; inner(plan, relay, held) is what its task carries for
    runtime/forwarding.py: how many of them each of its workers holds, its group's faults,
    the scheme, each share's decoding equation (a unit vector per slice when uncoded), and
    whether it forwards only what adds rank (not when the master corrects wrong senders,
    which needs their redundancy)."""
    if isinstance(options.allocate, str) and options.allocate == "speed":
        raise ValueError("allocate='speed' measures relays, not their workers: pass each "
                         "worker's speed (allocate=[...]) or an assignment.")
    if not isinstance(code, Code):
        raise TypeError(f"Argument 'code' must be an ffcode code, not "
                        f"{type(code).__name__}.")
    if remote:
        check_importable(code)
    group_faults = checked_group_faults(options.group_faults, groups)
    workers = options._allocated(code, sum(groups), [None] * sum(groups))
    workers += ((),) * (sum(groups) - len(workers))     # those an assignment leaves idle
    starts = np.cumsum((0,) + groups)
    members = [workers[starts[g]:starts[g + 1]] for g in range(len(groups))]
    assignment = tuple(tuple(k for held in group for k in held) for group in members)
    warn_privacy(code, assignment)

    def inner(plan: Plan, relay: int, held: list) -> dict:
        working = set(held)
        if plan.scheme == Scheme.UNCODED:
            slices = len(plan.layout.encoding.shares)
            powers = [[int(k == s) for s in range(slices)] for k in held]
        else:
            powers = plan.code.evaluations[held].tolist()
        return {"members": [sum(k in working for k in shares) for shares in members[relay]],
                "faults": group_faults.get(relay), "scheme": plan.scheme.value,
                "work": plan.work_pieces, "powers": powers, "filter": not plan.adversaries}
    return assignment, inner


def checked_group_faults(group_faults: Any, groups: tuple) -> dict:
    """{group: its faults as data (Faults.to_dict)}, each checked against its group's size."""
    group_faults = group_faults or {}
    beyond = sorted(g for g in group_faults if g >= len(groups))
    if beyond:
        raise ValueError(f"group_faults names groups {beyond}, but the cluster has groups "
                         f"0..{len(groups) - 1}.")
    for g, faults in group_faults.items():
        faults.check_workers(groups[g])
    return {g: faults.to_dict() for g, faults in group_faults.items()}


def _arrays(share) -> list:
    """A share as the list of arrays a worker holds: for full speed, the m blocks, their
    coefficients, then the other operands."""
    if isinstance(share, tuple):
        return [np.asarray(a) for a in share]
    return [share.blocks, share.coeffs, *share.rest]


def _check_rows(shapes) -> None:
    if any(len(shape) == 0 for shape in shapes):
        raise ValueError("The runtime sends results in row pieces: give blocks at least one "
                         "dimension (a scalar as shape (1,)).")



def warn_privacy(code, assignment) -> None:
    """Say so when a private code's workers hold several shares, as its t counts shares:
    a warning when even a single worker may see more than t."""
    t, most = getattr(code, "t", 0), max(len(held) for held in assignment)
    if t and most > 1:
        log.log(logging.WARNING if t < most else logging.INFO,
                "%r keeps the data from any %d shares, and a worker holds up to %d: any %d "
                "workers learn nothing (for t workers, build it with privacy t × %d)", code,
                t, most, t // most, most)


def check_importable(code) -> None:
    """Remote workers import a code's computation by its path: not from the master's
    script."""
    check_remote_path(functions.path_of(code.function))


def check_remote_path(path: str) -> None:
    """ValueError for a function path remote workers cannot import: one in the master's
    script ("__main__:name")."""
    if path.startswith("__main__:"):
        raise ValueError(f"Remote workers cannot import {path!r} from the master's script: "
                         f"put f in a module the workers can import (on their PYTHONPATH) "
                         f"and pass it or 'package.module:function'.")


def verification(asked, code, inputs, adversaries) -> bool:
    """Whether to check the output: as asked (True, False), or for "auto" as
    ffcode.decoding.verify.by_default says."""
    if asked == "auto":
        return verify.by_default(code, inputs, adversaries)
    if asked and verify.cost(code, inputs) is None:
        raise ValueError(f"{code!r} cannot be verified: its outputs have no check (an LCC "
                         f"whose f is not row-linear).")
    return asked


def verify_output(code, inputs, output, report: Report) -> None:
    """Check the output (fresh randomness), its time counted in the report."""
    start = time.monotonic()
    report.verified = verify.output(code, inputs, output)
    report.verify = time.monotonic() - start
    report.total += report.verify
    if not report.verified:
        raise VerificationError(
            f"The decoded output failed its check ({type(code).__name__}, "
            f"{verify.rounds(code.F.p)} random columns): a worker sent a wrong "
            f"result, so the output is not returned.", report=report)


def check_data(code, data, groups: tuple = ()) -> None:
    """data is what the code encodes (``code.inputs[:code.encodes]``), for Cluster.load
    (on a cluster without groups)."""
    if groups:
        raise ValueError("Resident data is for a cluster without groups: a cluster of "
                         "relays ships each job's data.")
    if isinstance(code, Code) and len(data) != code.encodes:
        names = ", ".join(code.inputs[:code.encodes])
        rest = ", ".join(code.inputs[code.encodes:])
        raise TypeError(f"{type(code).__name__}'s data is ({names}), got {len(data)} "
                        f"array{'s' if len(data) != 1 else ''}" +
                        (f"; its arguments ({rest}) go to each run" if rest else "") + ".")
