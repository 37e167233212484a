"""MapReduce on the runtime at its limits: a map or reduce function raising SystemExit,
KeyboardInterrupt or another BaseException fails its job alone; a shuffle message over
``max_message`` fails at once naming the sizes (and outputs larger than it still arrive);
eight jobs in flight on one cluster, each exact, the workers' memory for them bounded by
a budget named when exceeded; a job timed out, cancelled or interrupted (Ctrl-C) leaves
no run on the workers and ends within its timeout even when they are busy in user code;
a field GF does not take, a map in the master's script for remote workers, a sum-reduce of
vectors of different lengths and a map giving a dict are refused, naming what is wrong.

This module is also imported by worker processes, for the map and reduce functions below
("test_mapreduce_limits:split_map"): keep its module-level work light.
"""
import _thread
import glob
import os
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError

import numpy as np
import pytest

import ffcode
from ffcode.errors import JobTimeout, WorkerError
from ffcode.mapreduce.shuffle import Vectors
from ffcode.runtime import run_mapreduce

from helpers import shared_cluster

K = 4
cluster = shared_cluster(K)


# -- functions the workers import by path --------------------------------------------------

class Custom(BaseException):
    """A BaseException that is no Exception, as a user's code may raise."""


RAISED = {"SystemExit": lambda: SystemExit(3), "KeyboardInterrupt": KeyboardInterrupt,
          "Custom": lambda: Custom("not an Exception")}


def split_map(data, k):
    """A file's K = k[0] values: its K equal consecutive parts (bytes)."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m].tobytes() for i in range(k)]


def raising_map(data, k, which):
    """split_map, but file 0 (the one whose first byte is 0) raises RAISED[which]."""
    if data[0] == 0:
        raise RAISED[bytes(which).decode()]()
    return split_map(data, k)


def raising_reduce(values):
    raise SystemExit("reduce exits")


def whole_map(data, k):
    """Every function gets the whole file (the shuffle then carries K times the input)."""
    return [data.tobytes()] * int(k[0])


def dict_map(data, k):
    return dict(enumerate(split_map(data, k)))


def tuple_map(data, k):
    return tuple(split_map(data, k))


def vector_map(data, k):
    """A file's K parts as vectors (of GF(p)): their lengths follow the file's."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m] for i in range(k)]


def sleepy_map(data, k, ms):
    """split_map, after ms[0] milliseconds in user code."""
    time.sleep(int(ms[0]) / 1000)
    return split_map(data, k)


def sleepy_reduce(values):
    time.sleep(6)
    return values


def sleepier_reduce(values):
    """Longer than 5 times a 2 s timeout: a call that waited for it would show."""
    time.sleep(12)
    return values


# -- data and checks -----------------------------------------------------------------------

def files_of(count, m, seed, k=K):
    """count random files of k parts of m bytes, the n-th starting with byte n (so that a
    function can tell file 0)."""
    rng = np.random.default_rng(seed)
    files = [rng.integers(1, 256, k * m, dtype=np.uint8) for _ in range(count)]
    for n, f in enumerate(files):
        f[0] = n
    return files


def split_outputs(files, k=K):
    m = len(files[0]) // k
    return [b"".join(f[q * m:(q + 1) * m].tobytes() for f in files) for q in range(k)]


def peer_dirs(c) -> set:
    """The peers' ipc socket directories inside the cluster's private directory (a run
    on a worker has one; it goes with the run)."""
    return set(glob.glob(os.path.join(os.path.dirname(c.endpoint[len("ipc://"):]),
                                      "peers-*")))


def no_runs(c, within):
    """Wait until no worker holds a run (no peer directory left): True, or False after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while peer_dirs(c) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not peer_dirs(c)


def when(condition, within=20.0):
    """Wait for condition() (polled, each call once: it may act): True, or False after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def exact(c, seed=1, load=2):
    """A run on the cluster is exact (its workers serve)."""
    files = files_of(6 if load == 2 else K, 30, seed)
    outputs, _ = run_mapreduce(c, files, split_map, load=load, args=[np.array([K])],
                               timeout=30)
    return outputs == split_outputs(files)


# -- item: a function raising any BaseException fails its job alone ----------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("which", sorted(RAISED))
def test_a_map_raising_a_base_exception_fails_its_job_alone(bounded, cluster, which):
    """SystemExit, KeyboardInterrupt or a BaseException of the user's from a map fails the
    job at once naming it, the worker and the file; the same worker processes serve the
    next job exactly."""
    pids = sorted(h.pid for h in cluster.live())
    files = files_of(K, 30, seed=2)
    began = time.monotonic()
    with pytest.raises(WorkerError, match=rf"worker \d failed: ValueError: the map function "
                                          rf"failed on file 0: {which}") as failed:
        run_mapreduce(cluster, files, raising_map, load=1, timeout=30,
                      args=[np.array([K]), np.frombuffer(which.encode(), np.uint8)])
    assert time.monotonic() - began < 15, "the failure waited for the timeout"
    assert which != "SystemExit" or "SystemExit: 3" in str(failed.value)
    assert sorted(h.pid for h in cluster.live()) == pids     # no worker died of it
    assert exact(cluster)
    assert sorted(h.pid for h in cluster.live()) == pids


@pytest.mark.bounded(60)
def test_a_reduce_raising_system_exit_fails_its_job_alone(bounded, cluster):
    pids = sorted(h.pid for h in cluster.live())
    with pytest.raises(WorkerError, match=r"the reduce function failed on function \d's "
                                          r"values at worker \d: SystemExit: reduce exits"):
        run_mapreduce(cluster, files_of(K, 30, seed=3), split_map, raising_reduce, load=1,
                      args=[np.array([K])], timeout=30)
    assert sorted(h.pid for h in cluster.live()) == pids
    assert exact(cluster)


# -- item: a shuffle message over max_message ----------------------------------------------

@pytest.mark.bounded(60)
def test_a_shuffle_message_over_max_message_fails_at_once_naming_the_sizes(bounded):
    """Each batch's value for a function is 3 files of 400 KiB, over a max_message of 1 MiB:
    the job fails at once (not after its timeout) naming the message's size and the limit;
    with the files in smaller batches the same cluster runs it, its outputs (larger than
    max_message) arriving in parts."""
    limit, m = 1 << 20, 400 << 10
    rng = np.random.default_rng(4)
    files = [rng.integers(0, 256, m, dtype=np.uint8) for _ in range(9)]
    with ffcode.Cluster(3, max_message=limit) as c:
        c.wait()
        began = time.monotonic()
        with pytest.raises(WorkerError, match=rf"shuffle message to workers \[\d\] is "
                                              rf"{3 * m} bytes, larger than the {limit} "
                                              rf"bytes its peers take"):
            run_mapreduce(c, files, whole_map, load=1, coded=False, args=[np.array([3])],
                          timeout=40)
        assert time.monotonic() - began < 15, "the failure waited for the timeout"
        assert no_runs(c, within=10)
        outputs, _ = run_mapreduce(c, files[:6], whole_map, load=2, coded=False,
                                   args=[np.array([3])], timeout=40)
        whole = b"".join(f.tobytes() for f in files[:6])
        assert len(whole) > limit and outputs == [whole] * 3


# -- item: many jobs in flight, and the workers' memory budget -----------------------------

@pytest.mark.bounded(120)
def test_eight_jobs_in_flight_on_one_cluster_are_each_exact(bounded, cluster):
    """Eight run_mapreduce calls from threads at once on one cluster of four workers (each
    holding a run of every job in flight): every output exact; no run left after."""
    results, errors = {}, {}

    def job(i):
        files = files_of(6, 50 + i, seed=10 + i)
        try:
            outputs, _ = run_mapreduce(cluster, files, split_map, load=2, coded=i % 2 == 0,
                                       args=[np.array([K])], timeout=90)
            results[i] = outputs == split_outputs(files)
        except BaseException as e:          # reported below, naming the job
            errors[i] = e

    threads = [threading.Thread(target=job, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert results == {i: True for i in range(8)}
    assert no_runs(cluster, within=10)


@pytest.mark.bounded(60)
def test_a_run_over_the_memory_budget_fails_naming_it(bounded, cluster):
    """A job whose mapped values and messages exceed ``memory`` fails naming the budget
    and what it would hold; the same job with room for it runs exactly."""
    files = files_of(6, 1000, seed=5)
    with pytest.raises(WorkerError, match=r"worker \d would hold \d+ bytes of MapReduce "
                                          r"jobs \(this one's \d+, and \d+ of \d+ others "
                                          r"in flight\), over its budget of 5000 bytes"):
        run_mapreduce(cluster, files, split_map, load=2, args=[np.array([K])], timeout=30,
                      memory=5000)
    assert no_runs(cluster, within=10)
    outputs, _ = run_mapreduce(cluster, files, split_map, load=2, args=[np.array([K])],
                               timeout=30, memory=1 << 20)
    assert outputs == split_outputs(files)
    with pytest.raises(ValueError, match="'memory' must be"):
        run_mapreduce(cluster, files, split_map, load=2, args=[np.array([K])], memory=0)


# -- item: timed out, cancelled or interrupted runs leave the workers ----------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("busy", ["map", "reduce"])
def test_a_timeout_ends_the_call_in_time_and_the_runs_go(bounded, cluster, busy):
    """Workers busy in user code (a slow map, or a slow reduce once the runs exist) when the
    timeout comes: the call ends within the timeout (+2 s), and every run goes once the
    user code returns."""
    assert no_runs(cluster, within=10)
    files = files_of(K, 30, seed=6)
    timeout = 1.0 if busy == "map" else 2.0     # the reduce comes after a map and a shuffle
    map_ms = 6000 if busy == "map" else 0
    began = time.monotonic()
    with pytest.raises(JobTimeout):
        run_mapreduce(cluster, files, sleepy_map, sleepier_reduce if busy == "reduce" else None,
                      load=1, args=[np.array([K]), np.array([map_ms])], timeout=timeout)
    took = time.monotonic() - began
    assert took <= 5 * timeout, f"{took:.1f} s for a timeout of {timeout} s"
    assert no_runs(cluster, within=20), "a run stayed on the workers"
    assert exact(cluster, seed=7)


def slow_job_in_flight(c, outcome):
    """A run_mapreduce whose reduce is slow, in a thread: its error to outcome."""
    files = files_of(K, 30, seed=8)

    def target():
        try:
            run_mapreduce(c, files, split_map, sleepy_reduce, load=1, args=[np.array([K])],
                          timeout=30)
            outcome["error"] = None
        except BaseException as e:
            outcome["error"] = e
    thread = threading.Thread(target=target)
    thread.start()
    return thread


@pytest.mark.bounded(60)
def test_a_cancelled_run_leaves_no_run_on_the_workers(bounded, cluster):
    assert no_runs(cluster, within=10)
    outcome: dict = {}
    thread = slow_job_in_flight(cluster, outcome)
    assert when(lambda: len(peer_dirs(cluster)) == K), "the runs never started"
    assert when(lambda: cluster.cancel() >= 1)  # (none in flight between the phases)
    thread.join(20)
    assert not thread.is_alive() and isinstance(outcome["error"], CancelledError)
    assert no_runs(cluster, within=20), "a cancelled run stayed on the workers"
    assert exact(cluster, seed=9)


@pytest.mark.bounded(60)
def test_an_interrupted_run_leaves_no_run_on_the_workers(bounded, cluster):
    """Ctrl-C (KeyboardInterrupt in the caller's thread) while run_mapreduce waits: it
    raises, and the workers let go of the run."""
    assert no_runs(cluster, within=10)
    files = files_of(K, 30, seed=11)

    def interrupt():
        if when(lambda: len(peer_dirs(cluster)) == K):
            _thread.interrupt_main()
    # Python's own SIGINT handler for the test's length: a test started as a background
    # job (pytest &) has SIGINT ignored, and interrupt_main then does nothing
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    helper = threading.Thread(target=interrupt)
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_mapreduce(cluster, files, split_map, sleepy_reduce, load=1,
                          args=[np.array([K])], timeout=30)
    finally:
        helper.join(30)
        signal.signal(signal.SIGINT, previous)
    assert no_runs(cluster, within=20), "an interrupted run stayed on the workers"
    assert exact(cluster, seed=12)


# -- item: arguments refused up front, and what a map gives --------------------------------

@pytest.mark.bounded(30)
@pytest.mark.parametrize("p", [2**127 - 1, 2**64 + 13, 2**63 + 29, 1, 0, 65520, True])
def test_a_field_that_gf_does_not_take_is_refused_at_once(bounded, cluster, p):
    epoch = cluster.epoch
    began = time.monotonic()
    with pytest.raises(ValueError, match="'field' must be a prime"):
        run_mapreduce(cluster, files_of(K, 30, seed=13), vector_map, load=1, field=p,
                      args=[np.array([K])], timeout=20)
    assert time.monotonic() - began < 2 and cluster.epoch == epoch


@pytest.mark.bounded(60)
@pytest.mark.parametrize("per_batch", [1, 2])
def test_a_sum_reduce_of_vectors_of_different_lengths_is_refused(bounded, cluster,
                                                                per_batch):
    """File 1's vectors are twice as long as the others': within a batch (2 files a
    batch) the map's worker refuses them, across batches the reducers do, naming the
    lengths."""
    sizes = [40] * (K * per_batch)
    sizes[1] = 80
    rng = np.random.default_rng(14)
    files = [rng.integers(0, 200, n, dtype=np.uint8) for n in sizes]
    with pytest.raises(WorkerError, match=r"are vectors of different lengths \[10, 20\]: a "
                                          r"sum-reduce adds vectors of one length"):
        run_mapreduce(cluster, files, vector_map, load=1, field=257, args=[np.array([K])],
                      timeout=30)
    assert no_runs(cluster, within=10)


def test_vectors_total_refuses_different_lengths():
    algebra = Vectors(ffcode.GF(7))
    assert algebra.total([np.array([1, 2], np.uint32), np.array([6, 6], np.uint32)],
                         "values").tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"The values are vectors of different lengths "
                                         r"\[1, 2\]"):
        algebra.total([np.array([1], np.uint32), np.array([1, 2], np.uint32)], "values")


@pytest.mark.bounded(60)
def test_a_map_gives_a_list_or_tuple_and_a_dict_is_refused(bounded, cluster):
    files = files_of(K, 30, seed=15)
    with pytest.raises(WorkerError, match=r"TypeError: the map function gave a dict for file "
                                          r"\d, not a list or tuple of its 4 values"):
        run_mapreduce(cluster, files, dict_map, load=1, args=[np.array([K])], timeout=30)
    outputs, _ = run_mapreduce(cluster, files, tuple_map, load=1, args=[np.array([K])],
                               timeout=30)
    assert outputs == split_outputs(files)


@pytest.mark.bounded(30)
def test_a_map_in_the_masters_script_is_refused_for_remote_workers(bounded, monkeypatch):
    """As Cluster.run refuses a code whose f is in the master's script when the workers
    are remote, so does run_mapreduce, before waiting for any worker."""
    def main_map(data, k):
        return split_map(data, k)
    main_map.__module__, main_map.__qualname__ = "__main__", "ffcode_test_main_map"
    monkeypatch.setattr(sys.modules["__main__"], "ffcode_test_main_map", main_map,
                        raising=False)
    with ffcode.Cluster(2, endpoint="tcp://127.0.0.1:0", insecure=True,
                        start_timeout=20) as c:
        began = time.monotonic()
        with pytest.raises(ValueError, match=r"Remote workers cannot import "
                                             r"'__main__:ffcode_test_main_map'"):
            run_mapreduce(c, files_of(2, 30, seed=16, k=2), main_map, load=1,
                          args=[np.array([2])], timeout=10)
        with pytest.raises(ValueError, match=r"Remote workers cannot import"):
            run_mapreduce(c, files_of(2, 30, seed=16, k=2), split_map,
                          "__main__:ffcode_test_main_map", load=1, args=[np.array([2])],
                          timeout=10)
        assert time.monotonic() - began < 2 and c.epoch == 0
