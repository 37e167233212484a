"""A user's f that raises any BaseException (SystemExit, KeyboardInterrupt, GeneratorExit, a
BaseException of its own) fails that job alone, naming the exception and the worker; the
worker serves the next jobs (no replacement). A worker whose compute thread dies for another
reason exits at once, and a real Ctrl-C or SIGTERM still ends a worker. MapReduce's map and
reduce functions alike."""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import ffcode
from ffcode import GF, LCC
from ffcode.errors import WorkerError
from ffcode.runtime import Cluster
from ffcode.runtime.master import mapreduce
from ffcode.runtime.shared import wire
from ffcode.runtime.master.jobs import Options, Plan
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.runtime.shared.task import job_message, read_task
from ffcode.runtime.worker.process import Job, Worker

from helpers import alive, reap, shared_cluster
import user_raises
from user_raises import RAISED
from test_remote import LOOPBACK, start_workers

F = GF(2**31 - 1)
GOOD = [F.random((3, 2), seed=1), F.random((3, 2), seed=2)]
BAD = [F.random((5, 2), seed=3), F.random((5, 2), seed=4)]     # five rows: f raises


SHOWN = {"SystemExit": "SystemExit: 3", "KeyboardInterrupt": "KeyboardInterrupt: in f",
         "GeneratorExit": "GeneratorExit: in f", "Custom": "Custom: mine"}


def code(name, n_workers=3):
    return LCC(F, 2, 0, f"user_raises:raises_{name}", 1, n_workers)


def exact(y, blocks):
    assert len(y) == len(blocks)
    for got, block in zip(y, blocks):
        assert np.array_equal(got, F.add(block, block))


def fails_then_serves(cluster, name, n_workers=3, **options):
    """A job whose f raises fails naming it and a worker; the next job on the same workers
    (same processes) is exact."""
    pids = [h.pid for h in cluster.live()]
    with pytest.raises(WorkerError, match=rf"worker [0-9]+ failed: .*{re.escape(SHOWN[name])}"):
        cluster.run(code(name, n_workers), BAD, scheme="classic", timeout=20, **options)
    y, report = cluster.run(code(name, n_workers), GOOD, scheme="classic", timeout=20,
                            **options)
    exact(y, GOOD)
    assert [h.pid for h in cluster.live()] == pids
    assert {w.pid for w in report.workers} <= set(pids)


cluster = shared_cluster(3)


@pytest.mark.bounded(90)
@pytest.mark.parametrize("name", list(RAISED))
def test_base_exceptions_fail_the_job_alone(bounded, cluster, name):
    """Twice over: the second time f is known quick, so that it may run in a worker's main
    thread, where it must be caught as well."""
    fails_then_serves(cluster, name)
    fails_then_serves(cluster, name)


@pytest.mark.bounded(90)
@pytest.mark.parametrize("name", ["SystemExit", "Custom"])
def test_base_exceptions_behind_relays(bounded, name):
    """Through relays (f runs in their groups' workers): the job fails naming the exception,
    and the next job runs on the same relays and the same group workers."""
    from test_relays import group_workers
    with Cluster(4, groups=2) as relays:
        relays.wait()
        below = {h.pid: group_workers(h.pid) for h in relays.live()}
        assert all(len(pids) == 2 for pids in below.values())
        fails_then_serves(relays, name, n_workers=4)
        assert {h.pid: group_workers(h.pid) for h in relays.live()} == below


def main_thread_job(name, blocks):
    """A worker (never connected) and a job of f = raises_<name> on blocks for its place 0,
    as the master's JOB message carries it."""
    plan = Plan(code(name), (blocks,), Options(scheme="classic"),
                assignment=((0,), (1,), (2,)))
    header = Header(Kind.JOB, 1, 1, 0)
    return Job(header, *read_task(job_message(header, *plan.tasks[0])[1:]), {})


@pytest.mark.bounded(20)
def test_a_job_in_the_main_thread_fails_alone_but_a_real_interrupt_ends_it(bounded):
    """The worker's main thread runs small quick jobs itself: there too f's exceptions fail
    the job (a FAILED message naming it), while a real Ctrl-C (the worker's SIGINT handler
    was called) goes on up, so that the worker exits."""
    worker = Worker("tcp://127.0.0.1:9")
    try:
        sent = []

        def out(job, header, frames):
            sent.append((header.kind, wire.read_control(frames)[0]))
        for name in RAISED:
            sent.clear()
            job = main_thread_job(name, BAD)
            while worker._turn(job, out):
                pass
            assert sent == [(Kind.FAILED, {"error": SHOWN[name]})]
        with pytest.raises(KeyboardInterrupt):
            worker.interrupt(signal.SIGINT, None)
        with pytest.raises(KeyboardInterrupt, match="in f"):
            worker._turn(main_thread_job("KeyboardInterrupt", BAD), out)
    finally:
        worker.close()


DIES = """
import sys
from ffcode.runtime.worker import process as worker

def broken(self, job, out):
    raise RuntimeError("a bug in the compute thread")

worker.Worker._turn = broken
worker.log_to_stderr(20)
worker.run(sys.argv[1], timeout=30)
"""


@pytest.mark.bounded(60)
def test_a_worker_whose_compute_thread_dies_exits(bounded, tmp_path):
    """A compute thread that dies (a bug, injected) takes its worker with it: the process
    exits with status 1, saying so, instead of heartbeating with no one to compute."""
    F61 = GF(2**61 - 1)
    A, x = F61.random((6, 4), seed=1), F61.random(4, seed=2)
    log = tmp_path / "worker.log"
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=1, lost_after=1.0, start_timeout=30,
                     insecure=True) as cluster:
            with open(log, "w") as stderr:
                procs = [subprocess.Popen([sys.executable, "-c", DIES, cluster.endpoint],
                                          cwd=tmp_path, stderr=stderr)]
            cluster.wait(timeout=30)
            future = cluster.submit(ffcode.MDS(F61, 1, 1), A, x, timeout=30)
            assert procs[0].wait(10) == 1
            with pytest.raises(ffcode.errors.JobFailed, match="worker 0 lost"):
                future.result()
        text = log.read_text()
        assert "a bug in the compute thread" in text
        assert "the compute thread ended: exiting" in text
    finally:
        reap(procs)


@pytest.mark.bounded(60)
def test_real_signals_still_end_workers(bounded, tmp_path):
    """After f raised KeyboardInterrupt in them, hand-started workers still end on a real
    SIGINT (status 1, as 'interrupted') and on SIGTERM; a local worker ends on SIGTERM and
    is replaced."""
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30,
                     insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path,
                                  pythonpath=os.path.dirname(__file__))
            cluster.wait(timeout=30)
            fails_then_serves(cluster, "KeyboardInterrupt")
            procs[0].send_signal(signal.SIGINT)
            procs[1].send_signal(signal.SIGTERM)
            assert procs[0].wait(10) == 1
            assert procs[1].wait(10) == -signal.SIGTERM
    finally:
        reap(procs)
    with Cluster(3) as local:
        pids = [h.pid for h in local.wait()]
        os.kill(pids[0], signal.SIGTERM)
        deadline = time.monotonic() + 10
        while alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(pids[0])
        y, report = local.run(code("SystemExit"), GOOD, scheme="classic", timeout=20)
        exact(y, GOOD)
        assert pids[0] not in {h.pid for h in local.wait()}


@pytest.mark.bounded(90)
@pytest.mark.parametrize("map, reduce, name", [
    (user_raises.exiting_map, None, "SystemExit"),
    (user_raises.split_map, user_raises.interrupted_reduce, "KeyboardInterrupt")],
    ids=["map", "reduce"])
def test_base_exceptions_in_mapreduce_fail_the_job_alone(bounded, cluster, map, reduce,
                                                         name):
    """A MapReduce map or reduce function raising SystemExit or KeyboardInterrupt fails its
    job naming it; the next MapReduce job on the same workers is exact."""
    K = 3
    rng = np.random.default_rng(5)
    files = [rng.integers(0, 256, K * 40, dtype=np.uint8) for _ in range(K)]
    pids = [h.pid for h in cluster.live()]
    with pytest.raises(WorkerError, match=rf"worker \d failed: .*{re.escape(SHOWN[name])}"):
        mapreduce.run(cluster, files, map, reduce, load=1, args=[np.array([K])], timeout=20)
    outputs, _ = mapreduce.run(cluster, files, user_raises.split_map, None, load=1,
                               args=[np.array([K])], timeout=20)
    assert outputs == [b"".join(f[q * 40:(q + 1) * 40].tobytes() for f in files)
                       for q in range(K)]
    assert [h.pid for h in cluster.live()] == pids
