"""A relay: the process between a group of workers and the master
(``Cluster(n_workers, groups=...)``). To its group it is a master: at start it opens a
local Cluster of the group's workers (processes of its own, gone with it). To the master
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
only those that add rank (runtime/forwarding.py).

What a relay's task carries, as the master plans a job on three groups of four:

>>> from ffcode import GF, MDS, HierarchicalCode
>>> from ffcode.runtime.jobs import through_relays
>>> F = GF(65521)
>>> outer, carried = through_relays(HierarchicalCode(MDS(F, 2, 3), MDS(F, 3, 4)), (4, 4, 4))
>>> outer.recovery_threshold, len(carried), carried[0]["code"]["points"], carried[0]["faults"]
(2, 3, [1, 2, 3, 4], None)
"""
from __future__ import annotations

import concurrent.futures
import os
import queue
import threading
from typing import NoReturn

import numpy as np

from ffcode import checks
from ffcode.codes.product import ProductCode
from ffcode.errors import ClusterError, JobFailed, JobTimeout, WorkerError
from ffcode.field import GF
from ffcode.runtime import pool, wire
from ffcode.runtime.cluster import Cluster
from ffcode.runtime.faults import Faults
from ffcode.runtime.forwarding import Forwarding
from ffcode.runtime import worker
from ffcode.runtime.task import packet_index
from ffcode.runtime.wire import Kind
from ffcode.runtime.worker import Stopped, Unable, Worker, paused, tamper

GROUP_SCHEME = "compfs"     # the inner code at full speed
GROUP_TIMEOUT = 600.0       # seconds a group's job may take (the master's job has its own)
LOOK_EVERY = 0.02           # seconds between looks at a stop while the group works
MAX_GROUP = 1024            # workers a relay starts at most (as a Cluster does)


class Relay(Worker):
    """A worker whose work its group does: ``group`` is the Cluster of its workers."""

    def __init__(self, *arguments, group: Cluster, **options) -> None:
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
        task = job.task
        if task.inner is None:
            raise ValueError("this worker is a relay: it runs a hierarchical code's inner "
                             "code, and the task has none")
        F = GF(task.p)
        if not isinstance(task.inner, dict) or set(task.inner) != {"code", "faults"}:
            raise ValueError("a relay's task needs its inner code and its group's faults")
        code = ProductCode.from_description(F, task.inner["code"])
        faults = None if task.inner["faults"] is None else \
            Faults.from_dict(task.inner["faults"])
        if code.n_workers != self.group.n_workers:
            raise ValueError(f"the inner code has {code.n_workers} workers, this relay's "
                             f"group {self.group.n_workers}")

        job.group = []

        def op(*operands):
            future = job.in_group = self.group.submit(
                code, *operands, scheme=GROUP_SCHEME, faults=faults, timeout=GROUP_TIMEOUT,
                priority=job.priority)
            while True:
                try:
                    return F.elements(self.settled(job, future, LOOK_EVERY),
                                      "the group's output")
                except concurrent.futures.TimeoutError:
                    if job.stop.is_set():
                        future.cancel()
                        raise Stopped from None
        return F, op

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

    def work(self, job, out):
        """A forwarding task's work (an ordinary code's), else its inner code's steps."""
        if isinstance(job.task.inner, dict) and "members" in job.task.inner:
            return self.forward(job, out)
        return super().work(job, out)

    def forward(self, job, out):
        """Deal the task's shares to the group and send the master each packet the group's
        Forwarder passes on, as it comes (yielding while none does, so that other jobs take
        their turns), then DONE: once nothing more could add rank, or every live worker of
        the group finished. The relay's own faults pause before each packet it forwards
        (a slowdown has no computation here to slow), corrupt its payloads, pace its link,
        or crash or hang it at a packet count."""
        task = job.task
        arrived: queue.SimpleQueue = queue.SimpleQueue()
        forwarding = Forwarding(task, (job.shares, job.args), self.group.n_workers,
                                arrived.put)
        F, m = forwarding.F, task.pieces
        delays, corrupt = job.faults.delays, job.faults.corrupt
        per = len(delays) // (task.shares * m)     # pieces of work per packet
        rng = np.random.default_rng() if corrupt else None
        job.group = []
        future = job.in_group = self.group.submit(forwarding, timeout=GROUP_TIMEOUT,
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


def with_group(size: int):
    """A maker of relays (Worker's arguments) with a group of ``size`` local workers,
    started and connected first."""
    size = checks.integer(size, "size", low=1, high=MAX_GROUP)
    os.environ.pop(pool.IN_POOL, None)     # this process starts its group's pool
    group = Cluster(size)
    try:
        group.wait()                    # ready when its group is: then it says hello
    except BaseException:
        group.close()
        raise

    def make(*arguments, **options) -> Relay:
        try:
            return Relay(*arguments, group=group, **options)
        except BaseException:
            group.close()
            raise
    return make


def run(endpoint: str, *, size: int, **options) -> NoReturn:
    """Start a group of ``size`` local workers and, once they are connected, serve the
    master at endpoint as their relay; then exit the process. The other arguments are
    ffcode.runtime.worker.run's (CURVE keys, timeout, buffer): ``ffcode worker --connect
    ENDPOINT --group SIZE`` starts one by hand."""
    worker.run(endpoint, make=with_group(size), **options)
