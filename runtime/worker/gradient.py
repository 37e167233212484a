"""A worker's part of a gradient-coded step (the "gradient" job kind): the gradients of its
partitions, in the order its task gives, each scaled by its coefficient and added to what
it has done so far; at full speed the running sum goes to the master after every
partition, so that a slow worker's partial work counts, else once, after the last. A
stop ends the work between partitions, and inside an injected pause.

>>> import threading
>>> from types import SimpleNamespace
>>> from ffcode.runtime.shared.faults import FaultPlan
>>> from ffcode.runtime.shared.gradient import Gradient
>>> F = GF(7)
>>> job = SimpleNamespace(payload=Gradient("ffcode.functions:square", 7, (1, 3)),
...                       shares=[[F.asarray([1, 2])], [F.asarray([3, 0])]], args=[],
...                       faults=FaultPlan(), stop=threading.Event(),
...                       packet=lambda index, c, message, compute: (index, message.tolist()),
...                       done=lambda: ("done",))
>>> sent = []
>>> for _ in gradient_steps(job, lambda *message: sent.append(message), None):
...     pass
>>> sent                        # [1, 4], then [1, 4] + 3 * [2, 0]
[(0, [1, 4]), (1, [0, 4]), ('done',)]
"""
from __future__ import annotations

import time

import numpy as np

from ffcode.field import GF
from ffcode.runtime.shared import local
from ffcode.runtime.worker.coded import paused, tamper


def gradient_steps(job, out, worker):
    """The step's turns: one partition each; every message to out(header, frames)."""
    task = job.payload
    F = GF(task.p)
    gradient_of = _gradient_of(job, F, worker)
    held = job.shares
    if held is None or len(held) != len(task.coefficients):
        raise ValueError(f"the task names {len(task.coefficients)} partitions, and "
                         f"{'none' if held is None else len(held)} came with it")
    delays, slowdown, corrupt = job.faults.delays, job.faults.slowdown, job.faults.corrupt
    rng = np.random.default_rng() if corrupt else None
    total, last, sent = None, len(held) - 1, 0
    for u, (arrays, weight) in enumerate(zip(held, task.coefficients)):
        began, cpu = time.perf_counter(), time.thread_time()
        gradient = gradient_of(arrays)
        if task.bound is not None:
            within(F, gradient, task.bound)
        spent, cpu = time.perf_counter() - began, time.thread_time() - cpu
        if paused(job, (slowdown - 1) * cpu + (delays[u] if u < len(delays) else 0.0)):
            return
        if total is not None and gradient.shape != total.shape:
            raise ValueError(f"the gradients of the partitions differ in shape: "
                             f"{total.shape} and {gradient.shape}")
        term = F.combine(np.array([[weight]], F.dtype), [gradient])[0]
        total = term if total is None else F.add(total, term)
        if task.partial or u == last:
            message = total if not corrupt else tamper(F, total, sent, corrupt, rng)
            sent += 1
            out(*job.packet(u, np.ones(1, F.dtype), message, compute=spent))
        if u < last:
            yield                       # a turn a partition: another job's may come between
    out(*job.done())
    yield


def _gradient_of(job, F, worker):
    """A partition's gradient from its arrays, checked to be field elements: the task's f
    computed here, or on a relay by its group (the task's ``group``)."""
    task = job.payload
    relays = getattr(worker, "relays", False)
    if relays != (task.group is not None):
        raise ValueError("this worker is a relay: its group computes, and the task has no "
                         "group's code" if relays else "this worker is not a relay: it "
                         "cannot run a task's group code")
    if relays:
        return worker.partition_gradient(job, F)
    f = local.load_function(task.f)
    return lambda arrays: F.elements(f(F, *arrays, *job.args), "the gradient")


def within(F, gradient, bound: int) -> None:
    """ValueError when a partition's gradient, read as signed integers, passes ``bound`` in
    magnitude: the step's sum could wrap around mod p."""
    signed = F.to_signed(gradient)
    largest = int(np.abs(signed).max()) if signed.size else 0
    if largest > bound:
        raise ValueError(f"a partition's gradient reaches magnitude {largest}, beyond the "
                         f"bound {bound} that keeps the step's sum from wrapping around mod "
                         f"p: use a smaller fixed-point scale or a larger p")
