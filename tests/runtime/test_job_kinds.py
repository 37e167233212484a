"""A job kind defined here, outside the package, runs on local workers through the same
seam as the built-in kinds: exact, beside other jobs in flight, its failures named, its
malformed tasks refused as they arrive, its jobs cancelled on the workers."""
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from ffcode import GF, MDS
from ffcode.decoding.collectors import Gather
from ffcode.errors import ProtocolError, WorkerError
from ffcode.runtime import JobKind, KindPlan, Task
from ffcode.runtime.shared import kinds

from helpers import shared_cluster

F = GF(65521)
cluster = shared_cluster(3)


@dataclass(frozen=True)
class Rows:
    """A worker's rows of A·x: its field, and what it should do ("work", "raise", "spin")."""
    p: int
    mode: str = "work"

    def to_meta(self) -> dict:
        return {"p": self.p, "mode": self.mode}

    @classmethod
    def from_meta(cls, meta: Any) -> "Rows":
        if not isinstance(meta, dict) or set(meta) != {"p", "mode"} or \
                meta["mode"] not in ("work", "raise", "spin"):
            raise ProtocolError(f"a rows task is {{p, mode}}, not {meta!r}")
        return cls(meta["p"], meta["mode"])


class RowProducts(JobKind):
    """A·x by row blocks, one block a worker (no coding: every worker's part is needed)."""
    Payload = Rows

    def __init__(self, A, x, workers, mode="work", bad=False):
        self.blocks, self.x, self.mode, self.bad = np.array_split(A, workers), x, mode, bad

    def plan(self, options):
        payload = Rows(F.p, self.mode)
        if self.bad:        # a payload its own from_meta refuses at the worker
            payload = BadRows(F.p, self.mode)
        tasks = [(Task(payload, counts=(1,)), [block, self.x]) for block in self.blocks]
        return KindPlan(tasks, Gather(F, len(tasks), np.concatenate), name="row products",
                        options=options, dtype=F.dtype)

    @staticmethod
    def steps(job, out, worker):
        if job.payload.mode == "raise":
            raise ArithmeticError("no rows today")
        while job.payload.mode == "spin" and not job.stop.is_set():
            yield                       # a turn at a time, until the master stops it
        field = GF(job.payload.p)
        (block,) = job.shares[0]
        (x,) = job.args
        y = field.matmul(block, x)
        out(*job.packet(0, np.ones(1, field.dtype), y, rows=y.shape[0]))
        out(*job.done())
        yield


class BadRows(Rows):
    """Sent as a Rows task (a subclass is its kind's payload too), with a mode its checks
    refuse."""

    def to_meta(self) -> dict:
        return {"p": self.p, "mode": "telepathy"}


@pytest.mark.bounded(60)
def test_a_kind_defined_outside_the_package_runs_exactly(bounded, cluster):
    A, x = F.random((30, 20), seed=1), F.random(20, seed=2)
    y, report = cluster.run(RowProducts(A, x, 3), timeout=30)
    assert np.array_equal(y, F.matmul(A, x))
    assert (report.code, report.scheme, report.needed, report.rank) == \
        ("row products", "row products", 3, 3)
    assert [len(w.packets) for w in report.workers] == [1, 1, 1]


@pytest.mark.bounded(60)
def test_kinds_share_the_cluster_with_coded_jobs(bounded, cluster):
    A, x = F.random((30, 20), seed=3), F.random(20, seed=4)
    futures = [cluster.submit(RowProducts(A, x, 3), timeout=30) for _ in range(3)]
    coded = cluster.submit(MDS(F, 2, 3), A, x, timeout=30)
    assert all(np.array_equal(f.result()[0], F.matmul(A, x)) for f in futures)
    assert np.array_equal(coded.result()[0], F.matmul(A, x))


@pytest.mark.bounded(60)
def test_a_kind_that_raises_fails_its_job_naming_the_worker(bounded, cluster):
    A, x = F.random((6, 4), seed=5), F.random(4, seed=6)
    with pytest.raises(WorkerError, match="failed: ArithmeticError: no rows today"):
        cluster.run(RowProducts(A, x, 3, mode="raise"), timeout=30)
    assert np.array_equal(cluster.run(RowProducts(A, x, 3), timeout=30)[0], F.matmul(A, x))


@pytest.mark.bounded(60)
def test_a_task_its_checks_refuse_fails_at_once(bounded, cluster):
    """The worker answers a task that does not check out with FAILED: no waiting for the
    timeout."""
    A, x = F.random((6, 4), seed=7), F.random(4, seed=8)
    with pytest.raises(WorkerError, match="a rows task is"):
        cluster.run(RowProducts(A, x, 3, bad=True), timeout=30)


@pytest.mark.bounded(60)
def test_a_cancelled_kind_stops_on_the_workers(bounded, cluster):
    A, x = F.random((6, 4), seed=9), F.random(4, seed=10)
    future = cluster.submit(RowProducts(A, x, 3, mode="spin"), timeout=30)
    running = threading.Event()
    while not future.running():
        running.wait(0.01)
    assert future.cancel() and future.cancelled()
    assert np.array_equal(cluster.run(RowProducts(A, x, 3), timeout=30)[0], F.matmul(A, x))


def test_a_payload_of_no_kind_is_refused():
    @dataclass(frozen=True)
    class Stray:
        def to_meta(self):
            return {}
    with pytest.raises(TypeError, match="no job kind's payload"):
        Task(Stray()).to_meta()


def test_the_tag_is_the_import_path():
    assert RowProducts.tag() == f"{__name__}:RowProducts"
    assert kinds.find(RowProducts.tag()).payload is Rows
    assert kinds.find("coded").tag == "coded"
