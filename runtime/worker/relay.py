"""A relay: the process between a group of workers and the master
(``Cluster(n_workers, groups=...)``). To its group it is a master: its ``GroupRunner`` (the
runtime's entry point gives it a local Cluster of the group's workers, processes of its own,
gone with it) runs the group's jobs. To the master
it is one worker, paced, faulted and stopped as any worker is; a stop from the master
cancels its group's job, and its acknowledgement tells what the group did.

With an ffcode.HierarchicalCode it is a worker of the outer code: it is sent the group's
outer share and answers with packets of its result in the job's scheme. Each piece of its
work is one job of the task's inner code on its group, run at full speed (compfs), so that
the group absorbs its slow and lost workers and the relay decodes the moment enough of
them have answered. The inner code and the group's injected faults come as plain values
(ProductCode.description, Faults.to_dict), checked, never pickled.

With an ordinary code it holds its group's shares, already encoded: its group computes
them as the workers of a flat cluster would, and it forwards their packets as they come,
only those that add rank (runtime/master/forwarding.py).

A plain worker refuses a relay's task (its group would have to compute it):

>>> class Plain:
...     relays = False
>>> relayed_steps(None, print, Plain())
Traceback (most recent call last):
...
ValueError: this worker is not a relay: it cannot run a task's inner code
"""
from __future__ import annotations

import concurrent.futures
import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ffcode.codes.product import ProductCode
from ffcode.errors import ClusterError, JobFailed, JobTimeout, WorkerError
from ffcode.field import GF
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.task import packet_index
from ffcode.runtime.shared.wire import Kind
from ffcode.runtime.shared.payloads import Relayed
from ffcode.runtime.worker.coded import Stopped, Unable, paused, steps, tamper
from ffcode.runtime.worker.process import Worker

LOOK_EVERY = 0.02           # seconds between looks at a stop while the group works


class GroupRunner(Protocol):
    """What a relay needs of its group (ffcode.runtime.master.group.Group): its size, a piece
    of a hierarchical code's work run as a job of the inner code, a forwarding task's shares
    dealt to it, each returning a future of the group's job (a JobFuture: ``report``,
    ``cancel``), and closing it."""

    @property
    def n_workers(self) -> int: ...

    def run(self, code: Any, operands: Sequence[Any], *, faults: Faults | None,
            priority: int) -> Future: ...

    def forward(self, task: Any, split: tuple, arrived: Callable[[Any], None], *,
                priority: int) -> Future: ...

    def gradient(self, F: Any, f: str, parts: list, args: Sequence[Any], stragglers: int,
                 bound: int | None, *, faults: Faults | None, priority: int) -> Future: ...

    def close(self) -> None: ...


class Relay(Worker):
    """A worker whose work its group does: ``group`` runs its group's jobs."""

    relays = True

    def __init__(self, *arguments, group: GroupRunner, **options) -> None:
        self.group = group
        self.noting = threading.Lock()      # a group job's brief is noted once
        super().__init__(*arguments, **options)

    def note(self, job, future) -> None:
        """The brief of the job's group job ``future`` (ended, or cancelled) into the notes
        that its DONE or STOPPED message carries, once."""
        with self.noting:
            if job.in_group is future:
                job.in_group = None
                job.group.append(future.report.brief())

    def operation(self, job):
        """(F, op): op runs the task's inner code on the group, waiting for its output and
        cancelling it on a stop. A group that cannot decode (more of its workers lost than
        its code absorbs) ends this relay's part of the job: it says DONE after the
        packets it sent, a straggler of the outer code."""
        payload: Relayed = job.payload
        F = GF(payload.coded.p)
        code = ProductCode.from_description(F, payload.code)
        faults = None if payload.faults is None else Faults.from_dict(payload.faults)
        if code.n_workers != self.group.n_workers:
            raise ValueError(f"the inner code has {code.n_workers} workers, this relay's "
                             f"group {self.group.n_workers}")

        job.group = []

        def op(*operands):
            return self.awaited(job, F, self.group.run(code, operands, faults=faults,
                                                       priority=job.priority))
        return F, op

    def partition_gradient(self, job, F):
        """op(arrays): a gradient step's partition's gradient, computed by the group: the
        arrays cut along their first axis (samples) into one part per member, summed by a
        cyclic repetition code over the group that absorbs the task's group stragglers,
        each part's gradient bounded so that their sum stays within the task's bound."""
        task = job.payload
        stragglers, chosen = task.group
        faults = None if chosen is None else Faults.from_dict(chosen)
        size = self.group.n_workers
        if stragglers >= size:
            raise ValueError(f"the group's code tolerates {stragglers} stragglers, and this "
                             f"relay's group has {size} workers")
        bound = None if task.bound is None else task.bound // size
        job.group = []

        def op(arrays):
            parts = samples_cut(arrays, size)
            return self.awaited(job, F, self.group.gradient(
                F, task.f, parts, job.args, stragglers, bound, faults=faults,
                priority=job.priority))
        return op

    def awaited(self, job, F, future):
        """The field elements the group's job ``future`` gives, cancelled on a stop."""
        job.in_group = future
        while True:
            try:
                return F.elements(self.settled(job, future, LOOK_EVERY), "the group's output")
            except concurrent.futures.TimeoutError:
                if job.stop.is_set():
                    future.cancel()
                    raise Stopped from None

    def settled(self, job, future, wait=None):
        """The output of the job's group job ``future``, its brief noted, once it ended
        (concurrent.futures.TimeoutError while it runs after ``wait`` seconds). Unable when
        more of the group's workers were lost than its job absorbs; Stopped when the relay
        was stopped meanwhile (and the group shut down); a worker's failing f, or the
        group's timeout, is the relay's job's error."""
        try:
            output, _ = future.result(wait)
        except JobFailed as e:
            if isinstance(e, (JobTimeout, WorkerError)):
                raise
            self.note(job, future)
            raise Unable(f"the group could not decode: {e}") from None
        except (ClusterError, concurrent.futures.CancelledError):
            if job.stop.is_set():
                raise Stopped from None
            raise
        self.note(job, future)
        return output

    def forward(self, job, out):
        """Deal the task's shares to the group and send the master each packet the group's
        Forwarder passes on, as it comes (yielding while none does, so that other jobs take
        their turns), then DONE: once nothing more could add rank, or every live worker of
        the group finished. The relay's own faults pause before each packet it forwards
        (a slowdown has no computation here to slow), corrupt its payloads, pace its link,
        or crash or hang it at a packet count."""
        task, coded = job.task, job.coded
        arrived: queue.SimpleQueue = queue.SimpleQueue()
        F, m = GF(coded.p), coded.pieces
        delays, corrupt = job.faults.delays, job.faults.corrupt
        per = len(delays) // (coded.shares * m)    # pieces of work per packet
        rng = np.random.default_rng() if corrupt else None
        job.group = []
        future = job.in_group = self.group.forward(task, (job.shares, job.args), arrived.put,
                                                   priority=job.priority)
        try:
            while True:
                done = future.done()        # first: all it forwarded is queued by then
                try:
                    packet = arrived.get(timeout=0 if done else LOOK_EVERY)
                except queue.Empty:
                    if done:
                        break
                    if job.stop.is_set():
                        raise Stopped from None
                    yield
                    continue
                at = packet_index(packet.worker, packet.index, m)
                if paused(job, sum(delays[at * per:(at + 1) * per])):
                    raise Stopped
                header = job.header(Kind.PACKET, at, packet.rows or 0)
                out(header, wire.packet_arrays(header, packet.coeffs, tamper(
                    F, packet.payload, packet.index, corrupt, rng)))
        finally:                        # stopped, or dropped: the group stops too
            if not future.done():
                future.cancel()
        try:
            self.settled(job, future)
        except Unable:                  # workers lost: it forwarded what the rest sent
            pass
        out(job.header(Kind.DONE), job.ended(Kind.DONE)[1:])

    def stopping(self, job) -> None:
        """The group's job in flight is cancelled before the acknowledgement leaves, so that
        the acknowledgement tells what the group did."""
        future = job.in_group
        if future is not None:
            future.cancel()
            self.note(job, future)

    def close(self) -> None:
        super().close()
        self.group.close()


def samples_cut(arrays: Sequence[np.ndarray], parts: int) -> list:
    """A partition's arrays cut along their first axis (its samples) into ``parts``
    partitions, a tuple of arrays each (ValueError when their lengths differ).

    >>> [tuple(a.tolist() for a in p) for p in samples_cut([np.arange(5)], 2)]
    [([0, 1, 2],), ([3, 4],)]
    """
    lengths = {len(a) if np.ndim(a) else None for a in arrays}
    if len(lengths) != 1 or None in lengths:
        raise ValueError("a relay's group cuts a partition along its arrays' first axis "
                         "(its samples): they must all have one, of one length, not "
                         f"{sorted(lengths, key=str)}")
    return list(zip(*(np.array_split(a, parts) for a in arrays)))


def maker(group: GroupRunner) -> Callable[..., Relay]:
    """A maker of relays (Worker's arguments) whose work ``group`` does, closed with them."""
    def make(*arguments, **options) -> Relay:
        try:
            return Relay(*arguments, group=group, **options)
        except BaseException:
            group.close()
            raise
    return make


def relayed_steps(job, out, worker):
    """A hierarchical code's task (a Relayed payload): its coded steps, each piece of work
    a job of the inner code on the relay's group; refused by a worker that is no relay."""
    if not worker.relays:
        raise ValueError("this worker is not a relay: it cannot run a task's inner code")
    return steps(job, out, worker.operation(job))


def forwarded_steps(job, out, worker):
    """An ordinary code's task on a relay (a Forwarded payload): its group's packets
    forwarded; refused by a worker that is no relay."""
    if not worker.relays:
        raise ValueError("this worker is not a relay: it cannot forward a group's packets")
    return worker.forward(job, out)
