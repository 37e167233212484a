"""A job as values: the ``Options`` it runs with, the ``Layout`` of its data on the workers,
and the ``Plan``: each worker's ``Task`` (runtime/shared/task.py) and the collector its packets go
to (ffcode.decoding.collectors).

A worker may hold several shares (``assignment[i]``, code indices, ffcode.allocation): it
works through them in order, numbering its packets on (task.packet_index), so that the
master files each packet under its share, every share being its own sender.

>>> from ffcode import GF, MDS
>>> F = GF(65521)
>>> options = Options(scheme="cfs", pieces=2)
>>> plan = Plan(MDS(F, 2, 3), (F.random((4, 3), seed=1), F.random(3, seed=2)), options,
...             assignment=((0,), (1,), (2,)))
>>> [task.payload.scheme for task, arrays in plan.tasks], plan.needed
(['cfs', 'cfs', 'cfs'], 4)
"""
from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ffcode import functions, schemes
from ffcode.codes import HierarchicalCode
from ffcode.codes.base import Code, Encoding, Split
from ffcode.decoding import collectors, robust
from ffcode.decoding import verify
from ffcode.errors import InvalidParameterError, VerificationError
from ffcode.runtime.master.options import (Options, check_importable, check_repair,
                                           warn_privacy)
from ffcode.runtime.shared.report import Report
from ffcode.runtime.shared.kinds import JobKind
from ffcode.runtime.shared.payloads import Coded, Forwarded, Relayed
from ffcode.runtime.shared.task import Task, filed
from ffcode.schemes import Scheme


log = logging.getLogger(__name__)

ONCE_BYTES = 64 << 10       # a worker's operands at most this big: it answers in one message
KEPT_TASKS = 16             # a resident layout keeps its jobs' tasks for this many variants
_SEEDS = random.Random()    # coefficient seeds (seeded from the OS once: a draw is cheap)


class Layout:
    """A job's data as the workers hold it, as ``scheme.encode_data`` encodes it for a job
    in m = ``pieces`` pieces: ``encoding`` (an Encoding, or the uncoded Split),
    ``shares[k]``, the arrays of the code's share k (None: no work), and ``assignment[i]``,
    the shares worker i holds (ffcode.allocation). ``holds`` says which schemes it serves
    (Scheme.holds); ``pieces`` is m for piece-combined shares (None otherwise)."""

    def __init__(self, code: Code, data: Sequence[Any], scheme: Scheme, pieces: int,
                 seed: Optional[int], assignment: tuple) -> None:
        self.code, self.holds, self.assignment = code, scheme.holds, assignment
        self.encoding: Encoding | Split = scheme.encode_data(code, data, pieces, seed)
        self.pieces = getattr(self.encoding, "pieces", None)    # a Split has none
        shares = [_arrays(share) for share in self.encoding]
        if isinstance(self.encoding, Encoding):
            _check_rows(self.encoding.blocks)
        else:
            _check_rows(np.shape(a) for share in shares for a in share)
        self.shares = shares + [None] * (code.n_workers - len(shares))
        self.nbytes = sum(a.nbytes for share in shares for a in share)
        self.tasks: dict = {}       # resident data: its jobs' tasks, kept (Plan._tasks)

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
    (``wrong_shares``). ``relayed``: for a cluster of relays, relayed(plan, relay, held,
    coded) is the payload of a relay's task, held being the code indices of its shares with
    work and coded its coded part (``through_relays``, where the code is then the outer
    code, and ``forwarded``). ``once``: whether each worker answers in one message and is
    sent no stop (None: where the job is small and nothing watches it piece by piece)."""

    every_worker = False        # a lost worker's shares are made up by the others'

    def __init__(self, code: Code, inputs: Sequence[Any], options: Options,
                 assignment: tuple, resident: Any = None, buffer: Any = None,
                 max_message: int = 256 << 20,
                 relayed: Optional[Callable[["Plan", int, list, Coded], Any]] = None,
                 once: Optional[bool] = None) -> None:
        if not isinstance(code, Code):
            raise InvalidParameterError(f"Argument 'code' must be an ffcode code, not "
                                        f"{type(code).__name__}.")
        options = options.resolved(schemes.default())
        scheme, work_pieces = options.scheme, options.pieces
        assert isinstance(scheme, Scheme) and work_pieces is not None, "resolved: set"
        self.code, self.F, self.options = code, code.F, options
        self.scheme = scheme
        # The faults pause per piece of work, m pieces in every scheme (so that a comparison
        # meets the same delays); whole-result schemes send their m pieces as one packet.
        self.work_pieces = work_pieces
        self.pieces = scheme.packets(work_pieces)
        self.adversaries = options.adversaries
        scheme.check_adversaries(self.adversaries)
        path = functions.path_of(code.function)    # before any work: workers import it
        self.scheme_path = schemes.path_of(scheme)  # None: the workers know it by name
        self.resident, self.assignment, self.relayed = resident, assignment, relayed
        self.name = repr(code)          # what the report calls the job's code
        self.label, self.dtype = scheme.value, code.F.dtype
        self.measure = scheme.measure
        self.work_per_packet = work_pieces / self.pieces
        self.timeout, self.progress = options.timeout, options.progress
        self.wait_for_stops = options.wait_for_stops
        self.faults = options.faults            # a lossy link's packets: fresh ones too
        self.fresh = scheme.rateless and bool(options.faults.loss)
        if options.faults.loss and relayed is not None:
            raise InvalidParameterError("Faults 'loss' is emulated on the links of a cluster's "
                                        "own workers, not through relays.")
        check_repair(options.repair, scheme, relayed is not None)
        counts = sorted((len(held) for held in assignment), reverse=True)
        self.wrong_shares = sum(counts[:self.adversaries])
        robust.check_correctable(code.recovery_threshold, code.n_workers, self.wrong_shares,
                                 self.adversaries, code.every_r_decodes)
        self.layout, args = self._layout(code, inputs, scheme, options.seed)
        self.arguments = args           # the job's arguments, as every task carries them
        # The packets' random coefficients (cfs): a fresh seed per job unless one is given.
        self.coefficient_seed = _SEEDS.getrandbits(63) if options.seed is None else \
            options.seed
        # held: each worker's shares with work, in order
        self.held, self.tasks, self.once = self._tasks(path, args, max_message, once)
        # enough packets for any A wrong workers (m·R when nobody may be wrong)
        encoding = self.layout.encoding
        self.collector: collectors.Collector = scheme.collector(
            code, encoding, work_pieces, self.wrong_shares, buffer)
        self.needed = scheme.needed(code, encoding, work_pieces, self.wrong_shares)

    def _layout(self, code, inputs, scheme, seed) -> tuple:
        """The data's layout (encoded here, or the resident data's) and the job's arguments
        as the workers get them."""
        resident = self.resident
        if resident is None:
            code.check_inputs(inputs)
            layout = Layout(code, inputs[:code.encodes], scheme, self.work_pieces, seed,
                            self.assignment)
            inputs = inputs[code.encodes:]
        else:
            layout = resident.layout
            if not layout.serves(scheme):
                raise InvalidParameterError(
                    
                    f"The resident data holds {layout.holds} (loaded for "
                    f"{', '.join(s for s in schemes.registered() if layout.serves(s))}), which "
                    f"scheme={scheme.value!r} cannot run on: load it for {scheme.value!r}.")
            if layout.pieces not in (None, self.work_pieces):
                raise InvalidParameterError(f"The resident data was loaded for compfs with "
                                            f"pieces={layout.pieces}, not {self.pieces}.")
        return layout, [np.asarray(a) for a in code.arguments(layout.encoding, *inputs)]

    def _tasks(self, path: str, args: list, max_message: int, once: Optional[bool]) -> tuple:
        """(held, tasks, once): each worker's shares with work, its task with the arrays it
        carries (None: idle), and whether every worker answers once. On resident data, a
        job's tasks that draw no coefficient seeds and inject no faults are the same job
        after job but for the arguments: they are kept on the layout, by what they depend
        on, and reused."""
        key = None
        if self.resident is not None and self.relayed is None and \
                not self.options.faults.injects and \
                self.scheme.coefficient_seeds(self.coefficient_seed, [0]) is None:
            key = (path, self.scheme_path, self.scheme.value, self.pieces, max_message,
                   self.options.priority, self.progress is None, self.adversaries, once,
                   self.options.repair,
                   tuple((a.dtype.str, a.shape) for a in args))
            kept = self.layout.tasks.get(key)
            if kept is not None:
                held, tasks, once = kept
                return held, [None if t is None else (t, list(args)) for t in tasks], once
        helds = [self.layout.held(worker) for worker in range(len(self.assignment))]
        once = self._small(helds, args) if once is None else once
        tasks = [self._task(path, worker, held, args, max_message, once) if held else None
                 for worker, held in enumerate(helds)]
        held = [[k for k, _ in shares] for shares in helds]
        if key is not None:
            if len(self.layout.tasks) >= KEPT_TASKS:
                self.layout.tasks.clear()
            self.layout.tasks[key] = (held, [t and t[0] for t in tasks], once)
        return held, tasks, once

    def _small(self, helds: list, args: list) -> bool:
        """Whether every worker answers in one message (ANSWER, done implied) and is sent no
        stop: a job on small operands (at most ONCE_BYTES per worker) that nothing watches
        piece by piece: no faults, no progress callback, no wrong workers to correct, no
        relays. (A check of the decoded output reads no packet: it does not matter.)"""
        if self.relayed is not None or self.progress is not None or self.adversaries or \
                self.options.faults.injects:
            return False
        extra = sum(a.nbytes for a in args)
        return all(extra + sum(a.nbytes for _, share in held for a in share) <= ONCE_BYTES
                   for held in helds)

    def _task(self, path, worker, held, args, max_message, once) -> tuple:
        """(Task, the arrays it carries) of a worker holding shares ``held``."""
        resident, scheme = self.resident, self.scheme
        coded = Coded(f=path, p=self.F.p, scheme=scheme.value, pieces=self.pieces,
                      shares=len(held),
                      operand=self.layout.encoding[0].operand if scheme.piecewise else None,
                      seeds=scheme.coefficient_seeds(self.coefficient_seed,
                                                     [k for k, _ in held]),
                      scheme_path=self.scheme_path, once=once)
        task = Task(coded if self.relayed is None else
                    self.relayed(self, worker, [k for k, _ in held], coded),
                    counts=() if resident else tuple(len(share) for _, share in held),
                    data=None if resident is None else resident.ident,
                    faults=self.options.faults.for_worker(worker,
                                                          self.work_pieces * len(held)),
                    max_message=max_message, priority=self.options.priority,
                    repair=self.options.repair)
        shipped = [] if resident else [a for _, share in held for a in share]
        return task, [*shipped, *args]

    def share_of(self, worker: int, index: int) -> Optional[tuple[int, int]]:
        """(code index, piece) of a worker's packet ``index`` (None: it has no such
        packet)."""
        return filed(self.held[worker], index, self.pieces, self.fresh)

    def release(self, buffers: dict) -> None:
        """The payload storage the decoder used, for the next job to reuse (dtype ->
        storage)."""
        if self.collector.buffer is not None:
            buffers[self.dtype] = self.collector.buffer

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
                "priority": options.priority, "repair": options.repair}


def prepare(code: Any, inputs: tuple, options: Options, n_workers: int, speeds: list,
            remote: bool, buffers: dict, max_message: int, resident: bool = False,
            groups: tuple = ()) -> tuple:
    """(plan, inputs, check) of a job on a cluster of n_workers: ``code`` is a job kind's
    job (planned by itself), a code, or resident data (runtime.resident.Resident, checked
    to be the cluster's) whose assignment, scheme and pieces it keeps; ``inputs`` come
    back with the resident data in front; check(output, report) verifies the output
    (None: it is not verified). The decoder takes payload storage that
    an earlier job left in ``buffers`` (dtype -> storage; a job returns it as it ends).
    ``groups``: the group sizes of a cluster of relays (its n_workers relays), which runs
    a hierarchical code's outer code (``through_relays``)."""
    if isinstance(code, JobKind):       # a relay's forwarding, a MapReduce phase, ...
        if options.repair != "dense":
            raise InvalidParameterError(f"repair={options.repair!r} is for coded jobs (a "
                                        f"code's cfs packets), not {code!r}.")
        if not groups:
            return code.plan(options), (), None
        if not code.through_relays:
            raise InvalidParameterError(f"A cluster of relays (groups=...) cannot run {code!r}.")
        relayed: Any = code             # its plan takes the groups: their relays compute
        return relayed.plan(options, groups=groups), (), None
    relayed, asked, assignment = None, code, None
    if groups and isinstance(code, HierarchicalCode):
        code, carried = through_relays(code, groups, options.group_faults)
        relayed = lambda plan, relay, held, coded: Relayed(    # noqa: E731
            coded, carried[relay]["code"], carried[relay]["faults"])
    elif groups:
        assignment, relayed = forwarded(code, groups, options, remote)
    elif options.group_faults is not None:
        raise InvalidParameterError(
            "Argument 'group_faults' is for a cluster of relays (groups=).")
    data = None
    if resident:
        data = code
        if not isinstance(data.code, Code):     # a gradient code's partitions
            raise InvalidParameterError(f"{data!r} holds a gradient code's partitions: run "
                                        f"ffcode.runtime.GradientStep(data, f, *args) on it.")
        if options.assignment is not None or options.allocate is not None:
            raise InvalidParameterError("Resident data keeps the assignment it was loaded with: "
                                        "give assignment or allocate to load, not to run.")
        code, assignment = data.code, data.assignment
        options = options.resolved(data.scheme, data.pieces)
    elif assignment is None:
        assignment = options.assignment_for(code, n_workers, speeds, remote=remote)
    options.faults.check_workers(len(assignment))
    buffer = buffers.pop(code.F.dtype, None)    # one job's at a time
    plan = Plan(code, inputs, options, assignment, data, buffer, max_message, relayed)
    if asked is not code:
        plan.name = repr(asked)         # the hierarchical code, its outer one at the master
    inputs = inputs if data is None else (*data.data, *inputs)
    if not verification(options.verify, code, inputs, options.adversaries):
        return plan, inputs, None
    return plan, inputs, lambda output, report: verify_output(code, inputs, output, report)


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
        raise InvalidParameterError(
            f"A cluster of relays (groups=...) runs hierarchical codes "
            f"(ffcode.HierarchicalCode), not {type(code).__name__}: run it on a "
            f"cluster without groups.")
    if code.groups != len(groups):
        raise InvalidParameterError(
            f"{code!r} has {code.groups} groups (its outer code's points), "
            f"this cluster {len(groups)}.")
    inner, group_faults = code.inner, checked_group_faults(group_faults, groups)
    for g, size in enumerate(groups):
        if size < inner.recovery_threshold:
            raise InvalidParameterError(
                f"Group {g} has {size} workers, fewer than the inner code's "
                f"recovery threshold {inner.recovery_threshold}: it could "
                f"never decode.")
        if size != inner.n_workers:
            raise InvalidParameterError(f"Group {g} has {size} workers, the inner code "
                                        f"{inner.n_workers} points: give each group a worker per "
                                        f"point.")
    description = inner.description()
    return code.outer, [{"code": description, "faults": group_faults.get(g)}
                        for g in range(len(groups))]


def forwarded(code: Any, groups: tuple, options: Options, remote: bool = False) -> tuple:
    """(each relay's shares, relayed) of an ordinary code on a cluster of relays whose
    groups have these sizes: the shares are dealt over the groups' workers (as
    ``assignment`` and ``allocate`` say, over all of them: uniform by default), a relay
    holding its workers' shares in their order; relayed(plan, relay, held, coded) is its
    task's payload (a Forwarded, runtime/master/forwarding.py): how many of them each of
    its workers holds, its group's faults, the scheme, each share's decoding equation (a
    unit vector per slice when uncoded), and whether it forwards only what adds rank (not
    when the master corrects wrong senders, which needs their redundancy)."""
    if isinstance(options.allocate, str) and options.allocate == "speed":
        raise InvalidParameterError(
            "allocate='speed' measures relays, not their workers: pass each "
            "worker's speed (allocate=[...]) or an assignment.")
    if not isinstance(code, Code):
        raise InvalidParameterError(f"Argument 'code' must be an ffcode code, not "
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

    def relayed(plan: Plan, relay: int, held: list, coded: Coded) -> Forwarded:
        working = set(held)
        if plan.scheme.holds == "slices":
            slices = len(plan.layout.encoding.shares)
            powers = [[int(k == s) for s in range(slices)] for k in held]
        else:
            powers = plan.code.evaluations[held].tolist()
        return Forwarded(coded, tuple(sum(k in working for k in shares)
                                      for shares in members[relay]),
                         plan.scheme.value, plan.work_pieces,
                         tuple(tuple(int(x) for x in row) for row in powers),
                         filter=not plan.adversaries, faults=group_faults.get(relay))
    return assignment, relayed


def checked_group_faults(group_faults: Any, groups: tuple) -> dict:
    """{group: its faults as data (Faults.to_dict)}, each checked against its group's size."""
    group_faults = group_faults or {}
    beyond = sorted(g for g in group_faults if g >= len(groups))
    if beyond:
        raise InvalidParameterError(
            f"group_faults names groups {beyond}, but the cluster has groups "
            f"0..{len(groups) - 1}.")
    for g, faults in group_faults.items():
        faults.check_workers(groups[g])
        if faults.loss:
            raise InvalidParameterError("Faults 'loss' is emulated on the links of a "
                                        "cluster's own workers, not in relays' groups.")
    return {g: faults.to_dict() for g, faults in group_faults.items()}


def _arrays(share) -> list:
    """A share as the list of arrays a worker holds: for full speed, the m blocks, their
    coefficients, then the other operands."""
    if isinstance(share, tuple):
        return [np.asarray(a) for a in share]
    return [share.blocks, share.coeffs, *share.rest]


def _check_rows(shapes) -> None:
    if any(len(shape) == 0 for shape in shapes):
        raise InvalidParameterError(
            "The runtime sends results in row pieces: give blocks at least one "
            "dimension (a scalar as shape (1,)).")



def verification(asked, code, inputs, adversaries) -> bool:
    """Whether to check the output: as asked (True, False), or for "auto" as
    ffcode.decoding.verify.by_default says."""
    if asked == "auto":
        return verify.by_default(code, inputs, adversaries)
    if asked and verify.cost(code, inputs) is None:
        raise InvalidParameterError(
            f"{code!r} cannot be verified: its outputs have no check (an LCC "
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
        raise InvalidParameterError("Resident data is for a cluster without groups: a cluster of "
                                    "relays ships each job's data.")
    if isinstance(code, Code) and len(data) != code.encodes:
        names = ", ".join(code.inputs[:code.encodes])
        rest = ", ".join(code.inputs[code.encodes:])
        raise InvalidParameterError(
            f"{type(code).__name__}'s data is ({names}), got {len(data)} "
            f"array{'s' if len(data) != 1 else ''}" +
            (f"; its arguments ({rest}) go to each run" if rest else "") + ".")
