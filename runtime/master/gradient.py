"""A gradient-coded step as a job of the cluster (the "gradient" job kind): each worker is
sent its partitions' arrays, in its processing order, with its coefficients and the
step's arguments (a model's weights); the master reads the exact sum of every
partition's gradient the moment the messages that came span it (at full speed, a slow
worker's partial work counts) and stops everyone.

>>> from ffcode import GF, CyclicRepetition
>>> F = GF(65521)
>>> code = CyclicRepetition(F, 3, 1)
>>> parts = [(F.asarray([j, j + 1]),) for j in range(3)]
>>> step = GradientStep(code, "ffcode.functions:square", parts)
>>> plan = step.plan(None)
>>> task, arrays = plan.tasks[2]
>>> task.kind, task.counts, [a.tolist() for a in arrays]
('gradient', (1, 1), [[2, 3], [0, 1]])
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ffcode import checks, functions
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import GradientCode
from ffcode.gradcoding.decoder import GradientCollector
from ffcode.runtime.master.jobs import checked_group_faults
from ffcode.runtime.master.plans import KindPlan
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.gradient import Gradient
from ffcode.runtime.shared.kinds import JobKind
from ffcode.runtime.shared.task import Task


class Partitions:
    """A gradient code's partitions laid out for ``Cluster.load``: worker i holds those of
    ``code.assignment[i]``, in its order, a share each (the arrays a task of a resident
    step finds on its worker)."""
    holds = "partitions"

    def __init__(self, code: GradientCode, partitions: Sequence[Sequence[Any]]) -> None:
        self.code = checks.instance(code, "code", GradientCode, "an ffcode.GradientCode")
        self.partitions = code.partition_arrays(partitions)
        self.assignment = code.assignment
        self.nbytes = sum(a.nbytes for part in self.partitions for a in part)

    def held(self, worker: int) -> list:
        """The (partition, arrays) worker holds, in its order."""
        return [(j, self.partitions[j]) for j in self.assignment[worker]]


class GradientStep(JobKind):
    """One step of gradient coding on a cluster: ``code`` (a GradientCode over the
    cluster's first n_workers workers), ``f`` (a function or its import path:
    ``f(F, *arrays, *args)`` is the gradient of the partition of those arrays, field
    elements of one shape for every partition), ``partitions`` (each partition's arrays,
    a tuple per partition), ``args`` (the step's arrays every worker gets: the model).
    With resident partitions (``Cluster.load(code, partitions)``),
    ``GradientStep(resident, f, *args)`` ships only the arguments.
    ``partial``: each worker sends after every partition (full speed), else once, after
    its last (the original protocol). ``bound``: for gradients in signed fixed point, the
    largest magnitude a partition's may have (a worker whose gradient passes it fails the
    job, naming it); "auto" takes the most that keeps the sum of every partition from
    wrapping around mod p, ``F.max_signed // partitions``; None (the default) checks
    nothing, for gradients that are plain field elements. ``cluster.run(step)`` returns
    (the sum of every partition's gradient, the report); with ``faults=`` it injects
    them, a pause or slowdown per partition; with ``adversaries=A`` (a code tolerating
    2A stragglers) it reads the sum despite A wrong workers, named in ``report.wrong``
    (ffcode.gradcoding.robust). On a cluster of relays the code's workers are the relays:
    each cuts a partition along its arrays' first axis into its group's parts, and the
    group sums their gradients, tolerating ``group_stragglers`` members (default 1)."""

    through_relays = True       # on a cluster of relays, each relay's group computes

    def __init__(self, code: Any, f: Union[Callable, str], *data: Any,
                 partial: bool = True, bound: Union[int, str, None] = None,
                 group_stragglers: Optional[int] = None):
        layout = getattr(code, "layout", None)
        if isinstance(layout, Partitions):      # resident: the arguments only
            self.resident, self.code, self.partitions = code, layout.code, None
            args = data
        else:
            self.code = checks.instance(code, "code", GradientCode,
                                        "an ffcode.GradientCode or its resident partitions")
            if not data:
                raise InvalidParameterError(f"{self.code!r} needs its partitions (or load "
                                            "them on the cluster first).")
            self.resident, self.partitions = None, self.code.partition_arrays(data[0])
            args = data[1:]
        F = self.code.F
        self.f = f if isinstance(f, str) else functions.path_of(f)
        self.args = [np.asarray(a) for a in args]
        self.partial = checks.flag(partial, "partial")
        self.p = F.p
        most = F.max_signed // self.code.partitions
        if bound == "auto":
            bound = most
        self.bound = None if bound is None else checks.integer(bound, "bound", low=0,
                                                                high=most)
        self.group_stragglers = None if group_stragglers is None else checks.integer(
            group_stragglers, "group_stragglers", low=0)

    def __repr__(self) -> str:
        return f"a gradient step of {self.code!r}"

    def plan(self, options: Any, groups: Sequence[int] = ()) -> KindPlan:
        """Worker i's task: its partitions' arrays in its order, its coefficients, the
        arguments; a lost worker is done without (the job fails, naming the partitions
        left uncovered, only when the others cannot cover them). On a cluster of relays
        (``groups``: their groups' sizes) the code's workers are the relays, and each
        relay's group computes its partitions' gradients (see ``inner``)."""
        code = self.code
        faults = getattr(options, "faults", None) or Faults()
        faults.check_workers(code.n_workers)
        if faults.loss:
            raise InvalidParameterError("Faults 'loss' is emulated for coded jobs; a "
                                        "gradient step's links lose nothing.")
        inner = self.inner(groups, getattr(options, "group_faults", None))
        tasks = []
        for i, order in enumerate(code.assignment):
            weights = tuple(int(w) for w in code.coefficients[i, list(order)])
            payload = Gradient(self.f, self.p, weights, self.partial, self.bound,
                               inner[i] if inner else None)
            faulty = faults.for_worker(i, len(order))
            if self.partitions is None:         # resident: its partitions are on its worker
                task = Task(payload, data=self.resident.ident, faults=faulty)
                tasks.append((task, list(self.args)))
                continue
            parts = [self.partitions[j] for j in order]
            task = Task(payload, counts=tuple(len(part) for part in parts), faults=faulty)
            tasks.append((task, [a for part in parts for a in part] + self.args))
        adversaries = getattr(options, "adversaries", 0)
        plan = KindPlan(tasks, GradientCollector(code, adversaries), name=repr(code),
                        label="gradient", every_worker=False, options=options,
                        dtype=code.F.dtype)
        plan.measure = "rank"           # of the messages' span, up to one per partition
        plan.adversaries = adversaries  # named wrong (report.wrong) and excluded after
        plan.resident = self.resident
        return plan

    def inner(self, groups: Sequence[int], group_faults: Any) -> list:
        """Each relay's inner code, (stragglers, its group's faults as a dict or None): a
        partition is cut along its arrays' first axis (its samples) into a cyclic
        repetition code's partitions over the group, which tolerates ``group_stragglers``
        of its workers (by default 1, or 0 in a group of one). [] without relays."""
        if not groups:
            if group_faults is not None:
                raise InvalidParameterError("Argument 'group_faults' is for a cluster of "
                                            "relays (groups=).")
            return []
        if len(groups) != self.code.n_workers:
            raise InvalidParameterError(
                f"On a cluster of relays a gradient code's workers are the relays: "
                f"{self.code!r} has {self.code.n_workers}, the cluster {len(groups)}.")
        if self.resident is not None:
            raise InvalidParameterError("A cluster of relays ships each step's partitions.")
        faults = checked_group_faults(group_faults, tuple(groups))
        out = []
        for g, size in enumerate(groups):
            s = min(1, size - 1) if self.group_stragglers is None else self.group_stragglers
            if s >= size:
                raise InvalidParameterError(f"Argument 'group_stragglers' must be below "
                                            f"every group's size; group {g} has {size}.")
            out.append((s, faults.get(g)))
        return out
