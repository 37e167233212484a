"""A cluster used from several threads: jobs from two threads take turns on the one socket,
closing from another thread ends a running job with a ClusterError, and a job started from
inside another job's progress callback is refused at once. Also the bounds on what a
cluster starts: its worker count, and a fork server that outlives its master."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from ffcode import GF, MDS, Faults
from ffcode.runtime import Cluster, ClusterError


F = GF(2**31 - 1)
A, X = F.random((400, 64), seed=1), F.random(64, seed=2)

TWO_THREADS = textwrap.dedent("""
    import threading
    import numpy as np
    from ffcode import GF, MDS, Cluster
    F = GF(2**31 - 1)
    A, x = F.random((400, 64), seed=1), F.random(64, seed=2)
    exact = []
    with Cluster(3) as cluster:
        def jobs():
            for _ in range(10):
                y, _ = cluster.run(MDS(F, 2, 3), A, x, timeout=60)
                exact.append(np.array_equal(y, F.matmul(A, x)))
        threads = [threading.Thread(target=jobs) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(len(exact), all(exact))
""")


@pytest.mark.bounded(120)
def test_two_threads_take_turns(bounded, tmp_path):
    """Two threads running jobs on one cluster (in a process of its own: a crash in libzmq
    would abort it): all 20 jobs return exact outputs."""
    result = subprocess.run([sys.executable, "-c", TWO_THREADS], capture_output=True,
                            text=True, timeout=100, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["20", "True"]


@pytest.mark.bounded(60)
def test_close_from_another_thread_ends_the_job(bounded):
    """close() from another thread while a job runs: the job raises ClusterError (not a
    zmq error on a closed socket), close returns once it has, and nothing is left."""
    slow = Faults(slowdown={0: 200.0, 1: 200.0, 2: 200.0})
    cluster = Cluster(3)
    cluster.wait()
    started = threading.Event()

    def progress(rank, needed):
        started.set()

    closer = threading.Thread(target=lambda: (started.wait(20), cluster.close()))
    closer.start()
    began = time.monotonic()
    with pytest.raises(ClusterError, match="closed during the job"):
        cluster.run(MDS(F, 2, 3), A, X, faults=slow, timeout=30, progress=progress)
    closer.join(10)
    assert not closer.is_alive()
    assert time.monotonic() - began < 20
    with pytest.raises(ClusterError, match="closed"):
        cluster.run(MDS(F, 2, 3), A, X)


@pytest.mark.bounded(60)
def test_job_inside_a_progress_callback_is_refused_at_once(bounded):
    """run() from inside a job's progress callback raises ClusterError at once (it used to
    make the outer job wait out its timeout); the cluster still serves the next job."""
    with Cluster(3) as cluster:
        def progress(rank, needed):
            cluster.run(MDS(F, 2, 3), A, X)

        began = time.monotonic()
        with pytest.raises(ClusterError, match="from inside a job"):
            cluster.run(MDS(F, 2, 3), A, X, timeout=30, progress=progress)
        assert time.monotonic() - began < 10
        y, _ = cluster.run(MDS(F, 2, 3), A, X)
        assert np.array_equal(y, F.matmul(A, X))


@pytest.mark.bounded(60)
def test_close_inside_a_progress_callback(bounded):
    """close() from inside a job's progress callback: the job ends with ClusterError and
    the cluster is closed as it does."""
    cluster = Cluster(3)
    with pytest.raises(ClusterError, match="closed during the job"):
        cluster.run(MDS(F, 2, 3), A, X, timeout=30,
                    progress=lambda rank, needed: cluster.close())
    assert "closed" in repr(cluster)


@pytest.mark.parametrize("n", [0, 2**70, 1025])
def test_worker_count_is_bounded(n):
    with pytest.raises(ValueError, match="n_workers"):
        Cluster(n)


def test_remote_worker_count_is_bounded():
    with pytest.raises(ValueError, match="n_workers"):
        Cluster(2**70, "tcp://127.0.0.1:*", insecure=True)


ORPHAN = textwrap.dedent("""
    import os, sys, tempfile
    from ffcode.runtime.master.pool import LocalPool
    pool = LocalPool("ipc://" + tempfile.mkdtemp() + "/none", tempfile.mkdtemp())
    for slot in range(300):             # requests still in the pipe when the master dies
        pool.server.stdin.write(f"{slot}\\n".encode())
    pool.server.stdin.flush()
    print(pool.server.pid, flush=True)
    os._exit(0)
""")


@pytest.mark.bounded(60)
def test_fork_server_forks_nothing_for_a_dead_master(bounded, tmp_path):
    """A master that dies with 300 worker requests in its fork server's pipe: the server
    forks none of them (it used to fork them all), and is gone soon after."""
    result = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True,
                            timeout=30, cwd=tmp_path)
    server = int(result.stdout)
    most, deadline = 0, time.monotonic() + 20
    while time.monotonic() < deadline:
        group = [pid for pid in _pids() if _pgid(pid) == server]
        most = max(most, len(group))
        if not group:
            break
        time.sleep(0.02)
    assert not group, "the fork server outlived its master"
    assert most <= 1, f"{most - 1} workers forked for a dead master"


def _pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _pgid(pid):
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None
