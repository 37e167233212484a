"""Resident data: Cluster.load encodes and ships each worker its share once, run(resident, ...)
ships only each job's arguments, a replaced worker gets its share again, unload and close
free it; bad handles and arguments are refused before any worker is asked. Local workers
here; remote tcp workers too (Ray's in test_ray.py)."""
import time

import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, PolynomialCode
from ffcode.runtime import Cluster, ClusterError, Faults
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.runtime.shared.payloads import Coded
from ffcode.runtime.shared.task import Task, job_message, read_task
from ffcode.runtime.worker.coded import compute
from ffcode.runtime.worker.process import Job

from helpers import reap, shared_cluster
from test_remote import LOOPBACK, start_workers

F = ffcode.GF(2**61 - 1)
N = 5
A = F.random((61, 17), seed=1)
SHARES = {"uncoded": ["uncoded"], "classic": ["classic", "systematic", "cfs"],
          "compfs": ["compfs"]}
OVERHEAD = 1024             # bytes of a task message beyond its arrays: header and JSON


cluster = shared_cluster(N, lost_after=1.0)


def xs(count, seed=0):
    return [F.random(17, seed=seed + i) for i in range(count)]


@pytest.mark.bounded(60)
@pytest.mark.parametrize("loaded", list(SHARES))
def test_many_jobs_ship_only_the_arguments(bounded, cluster, loaded):
    """Loaded once, the data serves 12 jobs of every scheme its shares serve, each exact;
    each job ships every worker its x and a task message of under 1 KiB, nothing more."""
    code = MDS(F, 3, N)
    data = cluster.load(code, A, scheme=loaded, pieces=3, seed=7)
    share = data.nbytes // (N if loaded != "uncoded" else N)
    assert data.loaded and data.shipped >= data.nbytes > 0
    for scheme in SHARES[loaded]:
        for x in xs(4, seed=len(scheme)):
            output, report = cluster.run(data, x, scheme=scheme, timeout=30)
            assert np.array_equal(output, F.matmul(A, x)), scheme
            assert report.scheme == scheme and report.settings["resident"] == data.ident
            assert report.reloaded == []
            for w in report.workers:
                assert x.nbytes <= w.shipped < x.nbytes + OVERHEAD < share, (scheme, w)
    cluster.unload(data)
    assert not data.loaded


@pytest.mark.bounded(60)
def test_shipping_with_the_job_costs_the_share(bounded, cluster):
    """The same job without load ships each worker its whole share with the task."""
    code, x = MDS(F, 3, N), xs(1)[0]
    data = cluster.load(code, A, scheme="compfs", pieces=3, seed=7)
    _, resident = cluster.run(data, x)
    _, shipped = cluster.run(code, A, x, pieces=3, seed=7)
    cluster.unload(data)
    assert shipped.shipped - resident.shipped >= data.nbytes
    assert shipped.settings["resident"] is None


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["classic", "compfs", "uncoded"])
def test_replaced_worker_gets_its_share_again(bounded, scheme):
    """A worker that crashes in a job is replaced before the next; that job reloads its share
    (the report says so and counts the bytes), and the job after ships arguments only."""
    with Cluster(N, lost_after=1.0) as cluster:
        code, (x, y, z) = MDS(F, 3, N), xs(3, seed=20)
        data = cluster.load(code, A, scheme=scheme, pieces=3)
        victim = cluster.live()[1]
        crash = Faults(crash_after={1: 0})     # as the job starts
        if scheme == "uncoded":         # every slice is needed: the job fails, the data stays
            with pytest.raises(ffcode.runtime.JobFailed):
                cluster.run(data, x, faults=crash, timeout=30)
        else:
            output, _ = cluster.run(data, x, faults=crash, timeout=30)
            assert np.array_equal(output, F.matmul(A, x))
        deadline = time.monotonic() + 10
        while victim.gone() is None and time.monotonic() < deadline:    # it dies after sending
            time.sleep(0.01)
        output, report = cluster.run(data, y, timeout=30)
        assert np.array_equal(output, F.matmul(A, y))
        assert report.workers[1].pid != victim.pid and report.reloaded == [1]
        share = data.layout.shares[1]
        assert report.workers[1].reloaded >= sum(a.nbytes for a in share)
        assert report.workers[1].shipped >= report.workers[1].reloaded + y.nbytes
        assert "reloaded to [1]" in report.summary()
        output, report = cluster.run(data, z, timeout=30)
        assert np.array_equal(output, F.matmul(A, z)) and report.reloaded == []
        cluster.unload(data)


@pytest.mark.bounded(60)
def test_wrong_worker_excluded_and_its_replacement_reloaded(bounded):
    """With adversaries=1 a corrupting worker is corrected and excluded; the worker that
    replaces it gets the share before the next job; verify=True checks resident jobs too."""
    with Cluster(N, lost_after=1.0) as cluster:
        code, (x, y) = MDS(F, 2, N), xs(2, seed=30)
        data = cluster.load(code, A, scheme="classic")
        late = {w: (0.2, 0) for w in range(N) if w != 3}     # the wrong result comes first
        output, report = cluster.run(data, x, adversaries=1, verify=True, timeout=30,
                                     faults=Faults(corrupt={3: "random"}, delay=late))
        assert np.array_equal(output, F.matmul(A, x)) and report.wrong == [3]
        assert report.verified is True
        output, report = cluster.run(data, y, scheme="cfs", timeout=30)
        assert np.array_equal(output, F.matmul(A, y)) and report.reloaded == [3]
        cluster.unload(data)


@pytest.mark.bounded(60)
def test_several_data_and_codes_at_once(bounded, cluster):
    """Two resident data sets (an MDS matrix, LCC blocks whose f takes no argument) and a
    product code whose two operands are both resident, interleaved, each exact."""
    mds = cluster.load(MDS(F, 2, 4), A, scheme="compfs", pieces=2)
    X = [F.random((6, 3), seed=40 + j) for j in range(2)]
    lcc = cluster.load(LCC(F, 2, 1, "ffcode.functions:square", 2, N), X, scheme="classic",
                       seed=1)
    B = F.random((17, 4), seed=41)
    product = cluster.load(PolynomialCode(F, 2, 2, N), A, B, scheme="cfs")
    for x in xs(3, seed=50):
        assert np.array_equal(cluster.run(mds, x)[0], F.matmul(A, x))
        squares, _ = cluster.run(lcc)
        assert all(np.array_equal(s, F.mul(b, b)) for s, b in zip(squares, X))
        C, report = cluster.run(product, scheme="systematic")
        assert np.array_equal(C, F.matmul(A, B))
        assert all(w.shipped < OVERHEAD for w in report.workers)
    for data in (mds, lcc, product):
        cluster.unload(data)


def refused(cluster, error, match, *args, **options):
    """run raises error (matching) before any job is sent."""
    epoch = cluster.epoch
    with pytest.raises(error, match=match):
        cluster.run(*args, **options)
    assert cluster.epoch == epoch


@pytest.mark.bounded(60)
def test_bad_jobs_refused_before_any_worker(bounded, cluster):
    """Arguments that do not fit the loaded data, a scheme or m its shares do not serve, an
    unloaded handle and another cluster's handle are each refused before a job starts."""
    data = cluster.load(MDS(F, 3, N), A, scheme="compfs", pieces=3)
    x = xs(1)[0]
    refused(cluster, ValueError, r"do not chain: shapes \(61, 17\) and \(16,\)", data,
            F.random(16, seed=1))
    refused(cluster, TypeError, "one argument x", data)
    refused(cluster, TypeError, "one argument x", data, x, x)
    refused(cluster, ValueError, "'x' has elements >= p", data, np.full(17, F.p))
    refused(cluster, ValueError, r"holds pieces \(loaded for compfs\), which "
                                 r"scheme='classic' cannot run on", data, x, scheme="classic")
    refused(cluster, ValueError, "loaded for compfs with pieces=3, not 4", data, x, pieces=4)
    refused(cluster, ValueError, "'scheme' must be one of", data, x, scheme="fast")
    cluster.unload(data)
    cluster.unload(data)                # a second unload does nothing
    refused(cluster, ValueError, "was unloaded: load it again", data, x)
    with Cluster(1) as other:
        foreign = other.load(MDS(F, 1, 1), A, scheme="classic")
        refused(cluster, ValueError, "loaded on another cluster", foreign, x)
        with pytest.raises(ValueError, match="loaded on another cluster"):
            cluster.unload(foreign)
    assert not foreign.loaded           # closing the cluster frees its data
    with pytest.raises(TypeError, match="what Cluster.load returned"):
        cluster.unload(A)


@pytest.mark.bounded(60)
def test_bad_loads_refused(bounded, cluster):
    """load checks its code, data, scheme and pieces before encoding or shipping."""
    code = MDS(F, 3, N)
    epoch, loads = cluster.epoch, cluster.residents.count
    with pytest.raises(TypeError, match=r"MDS's data is \(A\), got 2 arrays; its arguments "
                                        r"\(x\) go to each run"):
        cluster.load(code, A, xs(1)[0])
    with pytest.raises(TypeError, match="must be an ffcode code"):
        cluster.load("mds", A)
    with pytest.raises(ValueError, match="'scheme' must be one of"):
        cluster.load(code, A, scheme="COMPFS")
    with pytest.raises(ValueError, match="'pieces' must be at least 1"):
        cluster.load(code, A, pieces=0)
    with pytest.raises(ValueError, match="leaves share 5 without a worker"):
        cluster.load(MDS(F, 3, 6), A, assignment=[[0], [1], [2], [3], [4]])
    with pytest.raises(ValueError, match="'A' has negative elements"):
        cluster.load(code, np.full((4, 4), -1))
    assert (cluster.epoch, cluster.residents.count) == (epoch, loads)


def test_worker_without_the_data_fails_the_job():
    """A task naming resident data the worker does not hold fails, saying so (the master
    reports it as the job's WorkerError), unless it was stopped before it started: the
    master unloads after its last job, whose stop may reach a worker first."""
    header = Header(Kind.JOB, 1, 1, 0)
    task = Task(Coded(f="ffcode.functions:matmul", p=F.p, scheme="classic", pieces=1,
                      shares=1),
                data=3, faults=Faults().for_worker(0, 1), max_message=1 << 20)
    frames = job_message(header, task, [xs(1)[0]])[1:]
    job = Job(header, *read_task(frames), store={})
    with pytest.raises(ValueError, match="holds no resident data 3"):
        compute(job, lambda header, frames: None)
    stopped = Job(header, *read_task(frames), store={})
    stopped.stop.set()                  # stopped, then its data unloaded, before it started
    compute(stopped, lambda header, frames: pytest.fail("a stopped job sent a message"))
    held = Job(header, *read_task(frames), store={3: [[A]]})
    sent = []
    compute(held, lambda header, frames: sent.append(frames))
    assert np.array_equal(sent[0][1], F.matmul(A, xs(1)[0]))


@pytest.mark.bounded(30)
def test_closed_cluster_frees_its_data(bounded):
    with Cluster(2) as c:
        data = c.load(MDS(F, 2, 2), A)
        assert data.loaded
    assert not data.loaded
    with pytest.raises(ClusterError, match="closed"):
        c.run(data, xs(1)[0])


@pytest.mark.bounded(60)
def test_remote_workers_hold_resident_data(bounded, tmp_path):
    """Remote tcp workers hold resident data too; one killed is replaced by a new remote
    worker, which takes its place and gets its share (the others keep theirs)."""
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30, insecure=True,
                     lost_after=1.0) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path)
            cluster.wait(timeout=30)
            data = cluster.load(MDS(F, 2, 3), A, scheme="compfs", pieces=2)
            for x in xs(3, seed=60):
                output, report = cluster.run(data, x, timeout=30)
                assert np.array_equal(output, F.matmul(A, x)) and report.reloaded == []
            victim = cluster.live()[0]
            next(p for p in procs if p.pid == victim.pid).kill()
            time.sleep(1.3)                 # silent beyond lost_after: lost at the next job
            x = xs(1, seed=70)[0]
            output, report = cluster.run(data, x, timeout=30)      # from the other two
            assert np.array_equal(output, F.matmul(A, x)) and report.workers[0].lost
            procs += start_workers(cluster.endpoint, 1, tmp_path)
            output, report = cluster.run(data, x, timeout=30)
            assert np.array_equal(output, F.matmul(A, x))
            assert report.reloaded == [0] and report.workers[0].pid == procs[-1].pid
    finally:
        reap(procs)


def _rss(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmRSS"))


@pytest.mark.bounded(20)
def test_a_dropped_job_is_let_go_while_the_compute_thread_waits(bounded):
    """A job stopped before its turn is dropped at the compute thread's next look, and
    nothing of it stays referenced while that thread waits for work: its shares go with
    an unload at once (a reference left in the wait kept 64 MiB until the next job)."""
    import threading
    import weakref

    from ffcode.runtime.worker.process import Tasks

    class Stopped:
        shares = steps = None

    tasks, job = Tasks(), Stopped()
    job.shares = [[np.zeros(8, np.uint64)]]
    share = weakref.ref(job.shares[0][0])
    tasks.tell("arrived", job, 0, data=3)
    tasks.tell("stop", job, False)
    del job
    waiting = threading.Thread(target=tasks.next, daemon=True)
    waiting.start()                     # drops the job, then waits: no turn to take
    deadline = time.monotonic() + 10
    while share() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert share() is None and waiting.is_alive()
    tasks.tell("arrived", Stopped(), 0)     # a turn for it: next() returns
    waiting.join(10)
    assert not waiting.is_alive()


@pytest.mark.bounded(60)
def test_unload_frees_the_workers_memory(bounded):
    """After a job on resident data, unload gives the workers' memory back at once (the
    last job's task held the shares until the next job came)."""
    G = ffcode.GF(2**31 - 1)
    big = G.random((4096, 4096), seed=3)          # 64 MiB: each worker holds it all (k = 1)
    with Cluster(2) as cluster:
        pids = [h.pid for h in cluster.wait()]
        data = cluster.load(MDS(G, 1, 2), big, scheme="classic")
        y, _ = cluster.run(data, G.random(4096, seed=4))
        held = [_rss(pid) for pid in pids]
        cluster.unload(data)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and \
                any(held[i] - _rss(pid) < 48 << 20 for i, pid in enumerate(pids)):
            time.sleep(0.05)
        freed = [(held[i] - _rss(pid)) >> 20 for i, pid in enumerate(pids)]
        assert all(f >= 48 for f in freed), f"MiB freed by each worker: {freed}"
