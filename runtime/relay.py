"""A relay: the process between a group of workers and the master, in hierarchical coded
computing (``Cluster(n_workers, groups=...)`` running an ffcode.HierarchicalCode).

To the master a relay is one worker of the outer code: it is sent the group's outer share
and answers with packets of its result in the job's scheme, paced, faulted and stopped as
any worker is. To its group it is a master: at start it opens a local Cluster of the
group's workers (processes of its own, gone with it), and each piece of its work is one
job of the task's inner code on that cluster, run at full speed (compfs), so that the group
absorbs its slow and lost workers and the relay decodes the moment enough of them have
answered. The inner code and the group's injected faults come as plain values
(ProductCode.description, Faults.to_dict), checked, never pickled.
A stop from the master cancels the group's job.

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
from typing import NoReturn

from ffcode import checks
from ffcode.codes.product import ProductCode
from ffcode.errors import ClusterError, JobFailed
from ffcode.field import GF
from ffcode.runtime import pool
from ffcode.runtime.cluster import Cluster
from ffcode.runtime.faults import Faults
from ffcode.runtime import worker
from ffcode.runtime.worker import Stopped, Unable, Worker

GROUP_SCHEME = "compfs"     # the inner code at full speed
GROUP_TIMEOUT = 600.0       # seconds a group's job may take (the master's job has its own)
LOOK_EVERY = 0.02           # seconds between looks at a stop while the group works
MAX_GROUP = 1024            # workers a relay starts at most (as a Cluster does)


class Relay(Worker):
    """A worker whose work its group does: ``group`` is the Cluster of its workers."""

    def __init__(self, *arguments, group: Cluster, **options) -> None:
        self.group = group
        super().__init__(*arguments, **options)

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
            future = self.group.submit(code, *operands, scheme=GROUP_SCHEME,
                                       faults=faults, timeout=GROUP_TIMEOUT)
            while True:
                try:
                    output, report = future.result(LOOK_EVERY)
                    job.group.append(report.brief())
                    return F.elements(output, "the group's output")
                except concurrent.futures.TimeoutError:
                    if job.stop.is_set():
                        future.cancel()
                        raise Stopped from None
                except JobFailed as e:     # too many of the group's workers lost
                    if e.report is not None:
                        job.group.append(e.report.brief())
                    raise Unable(f"the group could not decode: {e}") from None
                except ClusterError:
                    if job.stop.is_set():       # stopped, then shut down meanwhile
                        raise Stopped from None
                    raise
        return F, op

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
