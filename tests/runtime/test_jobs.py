"""Many jobs in flight on one pool: ``Cluster.submit`` returns a future per job; the jobs
share the workers (each keeps a queue of tasks), and each job's packets, stops, faults,
lost and wrong workers are its own. Also the misuse cases: a closed cluster, a cancel of
a finished job, one job's error among others, close and Ctrl-C with jobs in flight, and
several threads submitting at once."""
import asyncio
import concurrent.futures
import os
import signal
import threading
import time

import numpy as np
import pytest

import ffcode
from ffcode import GF, LCC, MDS, MatDot, PolynomialCode
from ffcode.runtime import Cluster, ClusterBusy, ClusterError, Faults, JobFuture, WorkerError

from helpers import reap
from test_remote import LOOPBACK, start_workers

F = GF(2**31 - 1)
A, B = F.random((48, 30), seed=1), F.random((30, 12), seed=2)
XS = [F.random(30, seed=10 + i) for i in range(8)]


def fails_on_purpose(F, X):
    raise RuntimeError("this job's f fails")


def waits_then_copies(F, X):
    time.sleep(1.0)
    return X


def mixed_jobs():
    """(code, inputs, options, expected): 8 jobs of 4 codes and every scheme."""
    X = [F.random((10, 30), seed=20 + j) for j in range(2)]
    cases = [
        (MDS(F, 2, 4), (A, XS[0]), dict(scheme="compfs"), F.matmul(A, XS[0])),
        (MDS(F, 3, 4), (A, XS[1]), dict(scheme="classic"), F.matmul(A, XS[1])),
        (PolynomialCode(F, 2, 1, 4), (A, B), dict(scheme="cfs"), F.matmul(A, B)),
        (PolynomialCode(F, 2, 1, 4), (A, B), dict(scheme="uncoded"), F.matmul(A, B)),
        (MatDot(F, 2, 4), (A, B), dict(scheme="systematic"), F.matmul(A, B)),
        (MatDot(F, 2, 4), (A, B), dict(scheme="compfs", pieces=3), F.matmul(A, B)),
        (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), (X,), dict(scheme="classic"),
         [F.mul(x, x) for x in X]),
        (MDS(F, 2, 4), (A, XS[2]), dict(scheme="cfs", pieces=2, adversaries=0),
         F.matmul(A, XS[2])),
    ]
    return cases


def exact(output, expected):
    if isinstance(expected, list):
        return all(np.array_equal(o, e) for o, e in zip(output, expected))
    return output.dtype == expected.dtype and np.array_equal(output, expected)


@pytest.fixture(scope="module")
def cluster():
    with Cluster(4) as c:
        c.wait()
        yield c


@pytest.mark.bounded(90)
def test_eight_mixed_jobs_in_flight_are_exact(bounded, cluster):
    """8 jobs of 4 codes and 5 schemes submitted at once: every output exact, each report
    its own job's (its number, its scheme), all waited for with as_completed."""
    cases = mixed_jobs()
    futures = {cluster.submit(code, *inputs, timeout=60, **options): i
               for i, (code, inputs, options, _) in enumerate(cases)}
    assert all(isinstance(f, JobFuture) for f in futures)
    done = set()
    for future in concurrent.futures.as_completed(futures, timeout=60):
        i = futures[future]
        output, report = future.result()
        assert exact(output, cases[i][3]), cases[i][0]
        assert report is future.report and report.job == future.number
        assert report.scheme == cases[i][2]["scheme"] and not report.cancelled
        done.add(i)
    assert done == set(range(8))
    assert len({f.number for f in futures}) == 8


@pytest.mark.bounded(60)
def test_run_is_submit_result_and_futures_work_with_asyncio(bounded, cluster):
    y, report = cluster.run(MDS(F, 2, 4), A, XS[3])
    assert exact(y, F.matmul(A, XS[3]))

    async def both():
        futures = [asyncio.wrap_future(cluster.submit(MDS(F, 2, 4), A, x)) for x in XS[:2]]
        return await asyncio.gather(*futures)

    outputs = asyncio.run(both())
    assert all(exact(y, F.matmul(A, x)) for (y, _), x in zip(outputs, XS[:2]))


@pytest.mark.bounded(90)
def test_faults_of_one_job_leave_the_others_exact(bounded):
    """A crash, a hang and a wrong worker, each injected by one job, while clean jobs run
    beside them: a crashed or hung worker is lost to every job it held, which decode
    from the others; the wrong worker is corrected and named in its job alone; the lost
    workers are replaced once, before the next job."""
    with Cluster(6) as cluster:
        cluster.wait()
        code = MDS(F, 2, 6)
        slow = Faults(delay=(0.05, 0))
        crashed = cluster.submit(code, A, XS[0], faults=Faults(crash_after={1: 1},
                                                               delay=(0.05, 0)), timeout=30)
        clean = [cluster.submit(code, A, x, faults=slow, timeout=30) for x in XS[1:3]]
        hung = cluster.submit(code, A, XS[3], faults=Faults(hang_after={2: 0}), timeout=30)
        # the honest workers pause, so that worker 3's results are in before any three
        # honest ones agree (R + a consistent results decode without naming anyone)
        honest_slow = {w: (0.2, 0) for w in (0, 4, 5)}
        wrong = cluster.submit(code, A, XS[4], faults=Faults(corrupt={3: "random"},
                                                             delay=honest_slow),
                               adversaries=1, timeout=30)
        for future, x in zip([crashed, *clean, hung, wrong], XS):
            y, report = future.result(timeout=60)
            assert exact(y, F.matmul(A, x))
        assert wrong.report.wrong == [3] and all(not f.report.wrong for f in clean)
        pids = {h.pid for h in cluster.live()}
        y, report = cluster.run(code, A, XS[5], timeout=30)
        assert exact(y, F.matmul(A, XS[5])) and not any(w.lost for w in report.workers)
        assert len({w.pid for w in report.workers} - pids) == 3   # 1, 2 and wrong 3 anew


@pytest.mark.bounded(60)
def test_one_jobs_error_fails_it_alone(bounded, cluster):
    """A job whose f raises fails with WorkerError; jobs in flight beside it are exact."""
    failing = cluster.submit(LCC(F, 2, 0, fails_on_purpose, 1, 4),
                             [F.random((3, 3), seed=1)] * 2, scheme="classic", timeout=30)
    others = [cluster.submit(MDS(F, 2, 4), A, x, timeout=30) for x in XS[:3]]
    with pytest.raises(WorkerError, match="this job's f fails"):
        failing.result(timeout=30)
    assert isinstance(failing.exception(), ffcode.ClusterError)
    assert all(exact(f.result(timeout=30)[0], F.matmul(A, x)) for f, x in zip(others, XS))


@pytest.mark.bounded(60)
def test_cancel_mid_stream(bounded, cluster):
    """cancel() of a job under way stops it on its workers (they acknowledge) and the
    next jobs are exact; cancel() of a finished job returns False."""
    code = MDS(F, 2, 4)
    started = threading.Event()
    slow = cluster.submit(code, A, XS[0], faults=Faults(delay=(2.0, 0)), pieces=8,
                          timeout=60, progress=lambda rank, needed: started.set())
    assert started.wait(20)                         # its tasks are on the workers
    began = time.monotonic()
    assert slow.cancel() and slow.cancelled() and slow.report.cancelled
    assert time.monotonic() - began < 2
    with pytest.raises(concurrent.futures.CancelledError):
        slow.result()
    y, report = cluster.run(code, A, XS[1], timeout=30)
    assert exact(y, F.matmul(A, XS[1]))
    assert slow.cancel() and slow.cancelled()          # as concurrent.futures: still True
    finished = cluster.submit(code, A, XS[2])
    finished.result(timeout=30)
    assert finished.cancel() is False and not finished.cancelled()


@pytest.mark.bounded(90)
def test_resident_data_shared_by_concurrent_jobs(bounded, cluster):
    """Jobs in flight on the same resident data (and beside jobs on other data) are each
    exact; an unload while they run waits for them, and refuses new ones."""
    data = cluster.load(MDS(F, 2, 4), A, scheme="compfs", pieces=2)
    other = cluster.load(PolynomialCode(F, 2, 1, 4), A, B, scheme="classic")
    futures = [cluster.submit(data, x, timeout=30) for x in XS] + \
        [cluster.submit(other, timeout=30) for _ in range(2)]
    cluster.unload(data)                      # the jobs on it still finish
    for future, x in zip(futures, XS):
        assert exact(future.result(timeout=60)[0], F.matmul(A, x))
    for future in futures[len(XS):]:
        assert exact(future.result(timeout=60)[0], F.matmul(A, B))
    with pytest.raises(ValueError, match="unloaded"):
        cluster.submit(data, XS[0])
    cluster.unload(other)


@pytest.mark.bounded(60)
def test_priority_runs_first(bounded, cluster):
    """Workers run the tasks of a higher priority first (after the share at hand): a job
    submitted after four slow ones, with priority 1, finishes second at the latest, not
    fifth."""
    code = MDS(F, 2, 4)
    slow = [cluster.submit(code, A, x, faults=Faults(delay=(0.1, 0)), pieces=8,
                           timeout=60) for x in XS[:4]]
    urgent = cluster.submit(code, A, XS[4], priority=1, faults=Faults(delay=(0.1, 0)),
                            pieces=8, timeout=60)
    order = list(concurrent.futures.as_completed(slow + [urgent], timeout=60))
    assert order.index(urgent) <= 1
    assert all(exact(f.result()[0], F.matmul(A, x)) for f, x in zip(slow + [urgent], XS))
    assert urgent.report.settings["priority"] == 1
    with pytest.raises(ValueError, match="priority"):
        cluster.submit(code, A, XS[0], priority=2**40)


@pytest.mark.bounded(60)
def test_max_in_flight(bounded):
    """Beyond max_in_flight, submit waits for a job to end, or raises ClusterBusy with
    block=False; a slot frees as a job ends, also when it failed."""
    with Cluster(2, max_in_flight=2) as cluster:
        code = MDS(F, 2, 2)
        slow = [cluster.submit(code, A, x, faults=Faults(delay=(0.3, 0)), timeout=30)
                for x in XS[:2]]
        with pytest.raises(ClusterBusy, match="2 jobs in flight"):
            cluster.submit(code, A, XS[2], block=False)
        third = cluster.submit(code, A, XS[2])      # waits for one of the two
        assert any(f.done() for f in slow)
        assert exact(third.result(timeout=30)[0], F.matmul(A, XS[2]))
        with pytest.raises(TypeError):
            cluster.submit(code, A, XS[0], bad_option=1)
        for _ in range(3):                          # failed submits give their slot back
            cluster.run(code, A, XS[0])
    with pytest.raises(ValueError, match="max_in_flight"):
        Cluster(2, max_in_flight=0)


@pytest.mark.bounded(60)
def test_two_threads_submitting_at_once(bounded, cluster):
    """Four threads submitting 5 jobs each, all in flight together: all 20 exact."""
    results = []

    def submitter(seed):
        futures = [(cluster.submit(MDS(F, 2, 4), A, XS[(seed + i) % 8]), (seed + i) % 8)
                   for i in range(5)]
        results.extend(exact(f.result(timeout=60)[0], F.matmul(A, XS[i]))
                       for f, i in futures)

    threads = [threading.Thread(target=submitter, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 20 and all(results)


@pytest.mark.bounded(60)
def test_close_with_jobs_in_flight(bounded):
    """close() with jobs in flight: each future fails with a ClusterError saying so, and
    submit on the closed cluster is refused; no process is left (bounded checks)."""
    cluster = Cluster(2)
    code = MDS(F, 2, 2)
    futures = [cluster.submit(code, A, x, faults=Faults(delay=(5.0, 0)), timeout=60)
               for x in XS[:3]]
    began = time.monotonic()
    cluster.close()
    assert time.monotonic() - began < 10
    for future in futures:
        with pytest.raises(ClusterError, match="closed"):
            future.result(timeout=10)
    with pytest.raises(ClusterError, match="closed"):
        cluster.submit(code, A, XS[0])
    assert not futures[0].cancel()


@pytest.mark.bounded(60)
def test_ctrl_c_with_jobs_in_flight(bounded):
    """SIGINT while run() waits with other jobs in flight: KeyboardInterrupt, every job
    cancelled, and the cluster usable after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with Cluster(2) as cluster:
            cluster.wait()
            code = MDS(F, 2, 2)
            others = [cluster.submit(code, A, x, faults=Faults(delay=(30.0, 0)),
                                     timeout=60) for x in XS[:2]]
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            with pytest.raises(KeyboardInterrupt):
                cluster.run(code, A, XS[2], faults=Faults(delay=(30.0, 0)), timeout=60)
            assert all(f.cancelled() and f.report.cancelled for f in others)
            y, _ = cluster.run(code, A, XS[3], timeout=30)
            assert exact(y, F.matmul(A, XS[3]))
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.bounded(90)
def test_jobs_in_flight_on_remote_workers(bounded, tmp_path):
    """Hand-started tcp workers serve several jobs in flight too, resident data
    included."""
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30,
                     insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path)
            cluster.wait(timeout=30)
            data = cluster.load(MDS(F, 2, 3), A, scheme="compfs", pieces=2)
            futures = [cluster.submit(data, x, timeout=30) for x in XS[:4]] + \
                [cluster.submit(MatDot(F, 2, 3), A, B, scheme="cfs", timeout=30)]
            for future, x in zip(futures[:4], XS):
                assert exact(future.result(timeout=60)[0], F.matmul(A, x))
            assert exact(futures[-1].result(timeout=60)[0], F.matmul(A, B))
    finally:
        reap(procs)


def test_no_job_from_inside_a_progress_callback(cluster):
    """submit() from inside a job's progress callback fails that job (its wait on the
    master's thread would never end); the cluster serves the next."""
    def progress(rank, needed):
        cluster.submit(MDS(F, 2, 4), A, XS[0])

    with pytest.raises(ClusterError, match="from inside a job"):
        cluster.run(MDS(F, 2, 4), A, XS[0], progress=progress, timeout=30)
    assert exact(cluster.run(MDS(F, 2, 4), A, XS[1])[0], F.matmul(A, XS[1]))


@pytest.mark.bounded(60)
def test_a_small_job_whose_f_waits_stays_off_the_main_thread(bounded):
    """A worker runs the small jobs of a quick f in its main thread; an f that sleeps
    1 s takes little CPU but is not quick (the worker times its turns in wall seconds):
    its second job too runs in the compute thread, the main thread keeps answering
    (heartbeats), and no worker is given up on even with lost_after=0.5. (That a job of
    1 s teaches the queue its f is not quick, job after job, is
    test_worker_machine.py's.)"""
    code = LCC(F, 2, 0, waits_then_copies, 1, 3)
    X = [F.random((4, 3), seed=j) for j in range(2)]
    with Cluster(3, lost_after=0.5) as cluster:
        for _ in range(2):
            y, report = cluster.run(code, X, scheme="classic", timeout=30)
            assert all(exact(a, b) for a, b in zip(y, X))
            assert not any(w.lost for w in report.workers), [w.lost for w in report.workers]
