"""A job's future as ``concurrent.futures`` and asyncio see it, and the cluster's life around
it: a cancelled future is done for ``wait``, ``as_completed`` and ``asyncio.wrap_future``;
``running()`` while the job is on its workers; done-callbacks run outside the master's
thread (a slow one loses no worker; one may submit the next job); closing wakes every
submit waiting for a slot; a future in flight keeps its cluster open, and lets go."""
import asyncio
import concurrent.futures
import gc
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import ffcode
from ffcode import GF, MDS, Faults
from ffcode.runtime import Cluster, ClusterError

from helpers import descendants

F = GF(2**31 - 1)
A = F.random((48, 30), seed=1)
XS = [F.random(30, seed=10 + i) for i in range(6)]
SLOW = dict(faults=Faults(delay=(2.0, 0)), pieces=8, timeout=60)    # >= 16 s unless stopped


def exact(output, x) -> bool:
    return output.dtype == F.dtype and np.array_equal(output, F.matmul(A, x))


def until(condition, seconds: float = 20.0) -> bool:
    """Poll condition() until true, for at most ``seconds``."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def started(cluster, x, **options):
    """A slow job, once its tasks are on the workers (its first progress call)."""
    on = threading.Event()
    future = cluster.submit(MDS(F, 2, 2), A, x, progress=lambda rank, needed: on.set(),
                            **{**SLOW, **options})
    assert on.wait(20)
    return future


@pytest.fixture(scope="module")
def cluster():
    with Cluster(2) as c:
        c.wait()
        yield c


# -- item: the concurrent.futures protocol ------------------------------------------------

@pytest.mark.bounded(60)
def test_running_while_on_the_workers(bounded, cluster):
    future = started(cluster, XS[0])
    assert future.running() and not future.done() and "running" in repr(future)
    assert future.cancel() and future.cancelled()
    assert not future.running()
    quick = cluster.submit(MDS(F, 2, 2), A, XS[1], timeout=30)
    y, _ = quick.result(timeout=30)
    assert exact(y, XS[1]) and not quick.running() and quick.done()


@pytest.mark.bounded(60)
def test_a_cancelled_future_is_done_for_wait_and_as_completed(bounded, cluster):
    """cancel() of a running job: concurrent.futures.wait lists it done, as_completed
    yields it, also to a waiter that began before the cancel."""
    future = started(cluster, XS[0])
    waited = concurrent.futures.ThreadPoolExecutor(1)
    try:
        earlier = waited.submit(lambda: list(concurrent.futures.as_completed([future],
                                                                             timeout=20)))
        assert future.cancel()
        done, not_done = concurrent.futures.wait([future], timeout=10)
        assert done == {future} and not not_done
        assert list(concurrent.futures.as_completed([future], timeout=10)) == [future]
        assert earlier.result(timeout=20) == [future]
    finally:
        waited.shutdown()


@pytest.mark.bounded(60)
def test_cluster_cancel_notifies_waiters(bounded, cluster):
    futures = [started(cluster, XS[0]), cluster.submit(MDS(F, 2, 2), A, XS[1], **SLOW)]
    assert cluster.cancel() == 2
    done, not_done = concurrent.futures.wait(futures, timeout=10)
    assert done == set(futures) and not not_done
    assert all(f.cancelled() and f.report.cancelled for f in futures)


@pytest.mark.bounded(60)
def test_asyncio_wrap_future(bounded, cluster):
    """A job awaited through asyncio.wrap_future gives its output; one cancelled while
    awaited raises CancelledError to the awaiter."""
    async def both():
        y, report = await asyncio.wait_for(
            asyncio.wrap_future(cluster.submit(MDS(F, 2, 2), A, XS[2], timeout=30)), 30)
        slow = started(cluster, XS[3])
        waiting = asyncio.ensure_future(asyncio.wait_for(asyncio.wrap_future(slow), 20))
        await asyncio.sleep(0)                  # the awaiter is waiting
        assert slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return y, report

    y, report = asyncio.run(both())
    assert exact(y, XS[2]) and not report.cancelled


# -- item: done-callbacks off the master's thread ---------------------------------------

@pytest.mark.bounded(90)
def test_a_slow_done_callback_loses_no_worker(bounded):
    """A done-callback sleeping 3 lost_after long while another job runs on the workers:
    it runs outside the master's thread, no worker is given up on or replaced, and the
    other job is exact."""
    with Cluster(2, lost_after=1.5) as cluster:
        cluster.wait()
        pids = sorted(h.pid for h in cluster.live())
        seen: list = []
        quick = cluster.submit(MDS(F, 2, 2), A, XS[1], faults=Faults(delay=(0.3, 0)),
                               timeout=60)
        quick.add_done_callback(lambda f: (seen.append(threading.current_thread().name),
                                           seen.append(slow.running()), time.sleep(4.5)))
        slow = cluster.submit(MDS(F, 2, 2), A, XS[0], faults=Faults(delay=(0.6, 0)),
                              pieces=10, timeout=60)
        y, report = slow.result(timeout=60)
        assert seen[0] != "ffcode-master" and seen[1]      # the other job was running
        assert exact(y, XS[0]) and exact(quick.result()[0], XS[1])
        assert not any(t.lost for t in report.workers), [t.lost for t in report.workers]
        assert sorted(h.pid for h in cluster.live()) == pids


@pytest.mark.bounded(60)
def test_done_callbacks_run_in_the_callback_thread_or_at_once_when_done(bounded, cluster):
    """A callback added while the job runs runs in the cluster's callback thread; one added
    once it has ended runs at once, in the thread that adds it (a future nobody watches is
    resolved in the master's thread, which runs no callback of the caller's)."""
    names: list = []
    running = cluster.submit(MDS(F, 2, 2), A, XS[3], faults=Faults(delay=(0.2, 0)),
                             timeout=30)
    running.add_done_callback(lambda f: names.append(threading.current_thread().name))
    assert exact(running.result(timeout=30)[0], XS[3])
    assert until(lambda: names == ["ffcode-callbacks"]), names
    for x in XS[:3]:
        future = cluster.submit(MDS(F, 2, 2), A, x, timeout=30)
        assert exact(future.result(timeout=30)[0], x)
        future.add_done_callback(lambda f: names.append(threading.current_thread().name))
        assert names[-1] == threading.current_thread().name


@pytest.mark.bounded(60)
def test_done_callbacks_chain_three_jobs(bounded):
    """Each job's done-callback submits the next (one slot: the ended job's is free),
    three in all, each exact; the callbacks run in order, not in the master's thread."""
    with Cluster(2, max_in_flight=1) as cluster:
        futures, names, last = [], [], threading.Event()

        def chain(future):
            names.append(threading.current_thread().name)
            if len(futures) < 3:
                futures.append(cluster.submit(MDS(F, 2, 2), A, XS[len(futures)],
                                              timeout=30))
                futures[-1].add_done_callback(chain)
            else:
                last.set()

        futures.append(cluster.submit(MDS(F, 2, 2), A, XS[0], timeout=30))
        futures[0].add_done_callback(chain)
        assert last.wait(30)
        assert len(futures) == 3 and "ffcode-master" not in names
        for future, x in zip(futures, XS):
            assert exact(future.result(timeout=1)[0], x)


@pytest.mark.bounded(60)
def test_waiting_inside_a_done_callback_is_refused(bounded, cluster):
    """Waiting for a job of the same cluster inside a done-callback would never end (its
    future resolves after the callback): ClusterError at once; the job's own (done) future
    may be read."""
    seen = []

    def callback(future):
        seen.append(future.result()[0])
        for wait in (lambda: cluster.run(MDS(F, 2, 2), A, XS[1]),
                     lambda: cluster.submit(MDS(F, 2, 2), A, XS[2]).result(timeout=30)):
            try:
                wait()
            except ClusterError as e:
                seen.append(str(e))

    future = cluster.submit(MDS(F, 2, 2), A, XS[0], timeout=30)
    future.add_done_callback(callback)
    assert until(lambda: len(seen) == 3)
    assert exact(seen[0], XS[0])
    assert "Cluster.run cannot wait" in seen[1] and "JobFuture.result cannot" in seen[2]


@pytest.mark.bounded(60)
def test_close_inside_a_done_callback(bounded):
    """close() from a done-callback: the job still in flight fails with ClusterError, its
    own callback runs too (in the same thread, after), and the cluster is closed."""
    cluster = Cluster(2)
    order, closed = [], threading.Event()
    quick = cluster.submit(MDS(F, 2, 2), A, XS[1], faults=Faults(delay=(0.3, 0)),
                           timeout=30)
    quick.add_done_callback(lambda f: (order.append("quick"), cluster.close()))
    slow = cluster.submit(MDS(F, 2, 2), A, XS[0], **SLOW)
    slow.add_done_callback(lambda f: (order.append("slow"), closed.set()))
    assert closed.wait(30)
    assert exact(quick.result()[0], XS[1]) and order == ["quick", "slow"]
    with pytest.raises(ClusterError, match="closed"):
        slow.result()
    assert cluster.closed


# -- item: closing wakes the submits waiting for a slot ----------------------------------

def waiting_in_submit(thread: threading.Thread) -> bool:
    """Whether the thread is inside Cluster.submit, waiting on a condition (for a slot)."""
    frame = sys._current_frames().get(thread.ident)
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return bool(names) and names[0] == "wait" and "submit" in names


@pytest.mark.parametrize("waiters", [5, 50])
@pytest.mark.bounded(60)
def test_close_wakes_every_submit_waiting_for_a_slot(bounded, waiters):
    """max_in_flight reached, many threads wait in submit: close() wakes every one with
    ClusterError (none is left blocked), and the job in flight fails as it closes."""
    cluster = Cluster(2, max_in_flight=1)
    held = cluster.submit(MDS(F, 2, 2), A, XS[0], **SLOW)
    errors: list = []

    def submitter(i):
        try:
            cluster.submit(MDS(F, 2, 2), A, XS[i % len(XS)], timeout=30)
        except BaseException as e:              # noqa: B036 (the test counts them all)
            errors.append(e)

    threads = [threading.Thread(target=submitter, args=(i,), daemon=True)
               for i in range(waiters)]
    for t in threads:
        t.start()
    assert until(lambda: all(waiting_in_submit(t) for t in threads))
    cluster.close()
    for t in threads:
        t.join(10)
    assert not [t for t in threads if t.is_alive()]
    assert len(errors) == waiters
    assert all(isinstance(e, ClusterError) and "closed" in str(e) for e in errors)
    with pytest.raises(ClusterError, match="closed"):
        held.result(timeout=10)


# -- item: a future keeps its cluster open while in flight --------------------------------

@pytest.mark.bounded(90)
def test_a_future_keeps_its_cluster_until_it_resolves(bounded):
    """No reference to the cluster but its future's: garbage collection leaves it open and
    the job is exact; once the future resolves the cluster is collected and its workers
    end."""
    before = descendants()
    future = ffcode.Cluster(2).submit(MDS(F, 2, 2), A, XS[0], timeout=60,
                                      faults=Faults(delay=(0.2, 0)), pieces=4)
    gc.collect()
    y, report = future.result(timeout=60)
    assert exact(y, XS[0])

    def collected():
        gc.collect()
        return not (descendants() - before)
    assert until(collected, 20), descendants() - before


def gone(ref) -> bool:
    gc.collect()
    return ref() is None


@pytest.mark.bounded(60)
def test_a_cancelled_future_lets_go(bounded):
    """A cancelled future no longer keeps its cluster: the cluster is collected once
    nothing else refers to it."""
    cluster = Cluster(2)
    ref = weakref.ref(cluster)
    future = started(cluster, XS[0])
    del cluster
    gc.collect()
    assert ref() is not None                    # held by the future in flight
    assert future.cancel()
    assert until(lambda: gone(ref), 10)


@pytest.mark.bounded(60)
def test_a_failed_future_lets_go(bounded):
    """A job that times out fails its future (JobTimeout), which lets its cluster go:
    collected and closed in the callback thread, its workers end."""
    before = descendants()
    cluster = Cluster(2)
    ref = weakref.ref(cluster)
    future = cluster.submit(MDS(F, 2, 2), A, XS[0], **{**SLOW, "timeout": 1.0})
    del cluster
    with pytest.raises(ffcode.JobTimeout):
        future.result(timeout=30)
    assert until(lambda: gone(ref), 10)
    assert until(lambda: not descendants() - before, 20)
