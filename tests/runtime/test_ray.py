"""The Ray engine on one Ray instance (started once for this module, loopback only): every
scheme of every code exact, the report naming each worker's node, a crashed, a killed and a
hung actor replaced, a wrong worker corrected, ZeroMQ clients without the session's keys
refused, no actor left once a cluster closes, and resident data reloaded to a fresh actor."""
import os
import threading
import time

import numpy as np
import pytest
import zmq

import ffcode
from ffcode import LCC, MDS, MatDot, PolynomialCode
from ffcode.cli import commands as cli
from ffcode.runtime import Cluster, ClusterError, Faults
from ffcode.runtime.master import ray_pool
from ffcode.runtime.master.roster import WATCH_EVERY

from helpers import local_ray

import ray  # noqa: E402  (the test extra installs it)

SCHEMES = ["uncoded", "classic", "systematic", "cfs", "compfs"]
N = 4


@pytest.fixture(scope="module")
def ray_session():
    """Ray on 127.0.0.1 with a CPU per worker and no dashboard; afterwards no process of
    it is left."""
    with local_ray(N + 2) as session:
        yield session


@pytest.fixture(scope="module")
def cluster(ray_session):
    with Cluster(N, engine="ray", start_timeout=60, lost_after=1.0) as c:
        c.wait()
        yield c


def exact(output, expected):
    if isinstance(expected, list):
        return len(output) == len(expected) and all(
            o.dtype == e.dtype and np.array_equal(o, e) for o, e in zip(output, expected))
    return output.dtype == expected.dtype and np.array_equal(output, expected)


def jobs():
    F31, F61, F16 = ffcode.GF(2**31 - 1), ffcode.GF(2**61 - 1), ffcode.GF(65521)
    A31, x31 = F31.random((30, 20), seed=1), F31.random(20, seed=2)
    A61, B61 = F61.random((30, 20), seed=3), F61.random((20, 12), seed=4)
    A16, B16 = F16.random((22, 20), seed=5), F16.random((20, 9), seed=6)
    X = [F31.random((14, 6), seed=7 + j) for j in range(2)]
    return [
        ("MDS", MDS(F31, 2, N), (A31, x31), F31.matmul(A31, x31), SCHEMES),
        ("PolynomialCode", PolynomialCode(F61, 2, 1, N), (A61, B61), F61.matmul(A61, B61),
         SCHEMES),
        ("MatDot", MatDot(F16, 2, N), (A16, B16), F16.matmul(A16, B16), SCHEMES),
        ("LCC", LCC(F31, 2, 0, "ffcode.functions:square", 2, N), (X,),
         [F31.mul(x, x) for x in X], SCHEMES[:4]),
    ]


@pytest.mark.bounded(120)
def test_every_scheme_of_every_code(bounded, cluster):
    """Each job's output equals direct computation; the report names the Ray node of
    every worker (Ray's placement, not the worker's word) and the actors' processes."""
    node = ray.get_runtime_context().get_node_id()
    for name, code, inputs, expected, schemes in jobs():
        for scheme in schemes:
            output, report = cluster.run(code, *inputs, scheme=scheme, pieces=3, seed=11,
                                         timeout=30)
            assert exact(output, expected), (name, scheme)
            assert report.rank == report.needed and report.rejected == {}, (name, scheme)
            assert [w.node for w in report.workers] == [node] * N
            assert [w.pid for w in report.workers] == [h.pid for h in cluster.live()]
            assert not any(w.lost for w in report.workers)


@pytest.mark.bounded(120)
def test_jobs_in_flight_on_actors(bounded, cluster):
    """Every code and scheme submitted at once to the actors, beside jobs on resident
    data, and one job cancelled mid-stream: every other output exact."""
    F = ffcode.GF(2**31 - 1)
    A = F.random((24, 10), seed=1)
    data = cluster.load(MDS(F, 2, N), A, scheme="compfs", pieces=2)
    xs = [F.random(10, seed=20 + i) for i in range(4)]
    started = threading.Event()
    cancelled = cluster.submit(MDS(F, 2, N), A, xs[0], pieces=8, timeout=60,
                               faults=Faults(delay=(5.0, 0)),
                               progress=lambda rank, needed: started.set())
    futures = [(cluster.submit(code, *inputs, scheme=scheme, pieces=3, timeout=60), expected)
               for name, code, inputs, expected, schemes in jobs()[:2] for scheme in schemes]
    assert started.wait(30)
    assert cancelled.cancel() and cancelled.report.cancelled      # under way: 5 s a piece
    futures += [(cluster.submit(code, *inputs, scheme=scheme, pieces=3, timeout=60), expected)
                for name, code, inputs, expected, schemes in jobs()[2:] for scheme in schemes]
    futures += [(cluster.submit(data, x, timeout=60), F.matmul(A, x)) for x in xs]
    for future, expected in futures:
        assert exact(future.result(timeout=90)[0], expected)
    cluster.unload(data)


@pytest.mark.bounded(120)
def test_wrong_worker_corrected_and_replaced(bounded, cluster):
    """A corrupting worker is corrected (adversaries=1), named, and its actor replaced by a
    fresh one before the next job."""
    F = ffcode.GF(65521)
    A, x = F.random((24, 8), seed=1), F.random(8, seed=2)
    code = MDS(F, 2, N)
    pid = cluster.live()[1].pid
    later = {w: (0.1, 0) for w in (0, 2, 3)}         # the wrong worker is heard first
    output, report = cluster.run(code, A, x, adversaries=1, timeout=30,
                                 faults=Faults(corrupt={1: "random"}, delay=later))
    assert np.array_equal(output, F.matmul(A, x)) and report.wrong == [1]
    output, report = cluster.run(code, A, x, timeout=30)
    assert np.array_equal(output, F.matmul(A, x))
    assert report.workers[1].pid != pid and not report.wrong


@pytest.mark.bounded(120)
def test_lossy_links_every_scheme_exact(bounded, cluster):
    """Ray actors' links to the master lose messages (independent and in bursts): every
    scheme's output is still exact, and the report counts the drops."""
    F = ffcode.GF(65521)
    A, x = F.random((60, 8), seed=5), F.random(8, seed=6)
    dropped = 0
    for scheme in ("uncoded", "classic", "systematic", "cfs", "compfs"):
        for burst in (None, 3):
            output, report = cluster.run(MDS(F, 3, N), A, x, scheme=scheme, pieces=3,
                                         timeout=60,
                                         faults=Faults(loss=0.3, burst=burst, seed=2))
            assert np.array_equal(output, F.matmul(A, x)), (scheme, burst)
            dropped += sum(sum(w.dropped) for w in report.workers)
    assert dropped > 0


def slow_job(F):
    """MDS with R = 2 of 4, 6 pieces per worker."""
    A, x = F.random((1200, 400), seed=3), F.random((400, 60), seed=4)
    return MDS(F, 2, N), A, x


@pytest.mark.bounded(120)
@pytest.mark.parametrize("how", ["crash", "ray.kill", "hang"])
def test_lost_actor(bounded, cluster, how):
    """An actor whose process dies (crash), that is killed from outside (ray.kill) or that
    freezes (hang: found by its silence, then ray.kill-ed) is given up on during the job,
    which completes exactly from the others (they pause after each piece, so the job
    outlasts the loss); a fresh actor takes its slot next job."""
    F = ffcode.GF(2**31 - 1)
    code, A, x = slow_job(F)
    handles = cluster.live()
    victim = handles[0]
    pause = 0.5 if how == "hang" else 0.1       # hang: silent for lost_after = 1 s first
    faults = Faults(delay=(pause, 0), **{"crash": {"crash_after": {0: 1}},
                                         "hang": {"hang_after": {0: 0}},
                                         "ray.kill": {}}[how])
    killer = None
    if how == "ray.kill":
        killer = threading.Timer(0.2, lambda: ray.kill(victim.member.handle))
        killer.start()
    output, report = cluster.run(code, A, x, scheme="compfs", pieces=6, timeout=60,
                                 faults=faults)
    if killer:
        killer.join()
    assert np.array_equal(output, F.matmul(A, x))
    lost = report.workers[0].lost
    assert lost and ("silent" if how == "hang" else "Ray actor died") in lost, lost
    output, report = cluster.run(code, A, x, timeout=60)
    assert np.array_equal(output, F.matmul(A, x))
    assert report.workers[0].pid != victim.pid and not report.workers[0].lost
    assert [h.pid for h in cluster.live()][1:] == [h.pid for h in handles][1:]


def handshake(endpoint, curve):
    """What a DEALER with these CURVE keys (or none) meets at the endpoint: 'connected',
    'refused' or 'nothing' within 3 s."""
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    if curve is not None:
        dealer.curve_publickey, dealer.curve_secretkey, dealer.curve_serverkey = curve
    monitor = dealer.get_monitor_socket()
    dealer.connect(endpoint)
    dealer.send_multipart([ffcode.runtime.shared.wire.Header(
        ffcode.runtime.shared.wire.Kind.HELLO, 0, 0).pack(), b'{"arrays": [], "slot": 0}'])
    seen, deadline = "nothing", time.monotonic() + 3
    from zmq.utils.monitor import recv_monitor_message
    while time.monotonic() < deadline and seen == "nothing":
        if monitor.poll(100):
            event = recv_monitor_message(monitor)["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                seen = "connected"
            elif event & (zmq.EVENT_HANDSHAKE_FAILED_AUTH |
                          zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):
                seen = "refused"
    dealer.disable_monitor()
    monitor.close()
    dealer.close()
    context.term()
    return seen


@pytest.mark.bounded(60)
def test_clients_without_the_session_keys_are_refused(bounded, cluster):
    """The master speaks only CURVE with the keys of its current actors: a plaintext client
    and a client with its own key pair (which knows the master's public key) are refused;
    the workers stay as they were, the next job is exact, and its report counts the one
    refused by the gate (the plaintext one fails its handshake before any key is asked)."""
    before = [h.pid for h in cluster.live()]
    assert cluster.public_key is not None
    assert handshake(cluster.endpoint, None) != "connected"
    stranger = zmq.curve_keypair()
    assert handshake(cluster.endpoint, (*stranger, cluster.public_key)) == "refused"
    F = ffcode.GF(65521)
    A, x = F.random((8, 4), seed=1), F.random(4, seed=2)
    output, report = cluster.run(MDS(F, 2, N), A, x, timeout=30)
    assert np.array_equal(output, F.matmul(A, x))
    assert [h.pid for h in cluster.live()] == before and report.rejected == {"refused": 1}


@pytest.mark.bounded(120)
@pytest.mark.parametrize("options", [{}, {"insecure": True}],
                         ids=["tcp+CURVE", "insecure"])
def test_closing_leaves_no_actor(bounded, ray_session, options):
    """A second cluster in the same Ray: with an explicit tcp endpoint even the actors on
    the master's node use it (CURVE), insecure ones speak plaintext; the job is exact, and
    closing kills the actors' processes and frees their CPUs."""
    cpus = ray.available_resources().get("CPU")
    with Cluster(2, "tcp://127.0.0.1:*", engine="ray", start_timeout=30, **options) as c:
        handles = c.wait()
        pids = [h.pid for h in handles]
        assert all(h.member.endpoint == c.endpoint.replace("*", "") for h in handles)
        assert (c.public_key is None) == ("insecure" in options)
        node = ray.get_runtime_context().get_node_id()
        assert [h.node for h in handles] == [node, node]
        F = ffcode.GF(65521)
        A, x = F.random((8, 4), seed=1), F.random(4, seed=2)
        output, _ = c.run(MDS(F, 1, 2), A, x, timeout=30)
        assert np.array_equal(output, F.matmul(A, x))
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
            any(os.path.exists(f"/proc/{pid}") for pid in pids) or
            ray.available_resources().get("CPU") != cpus):
        time.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)
    assert ray.available_resources().get("CPU") == cpus


def test_actors_on_the_masters_node_use_ipc(cluster):
    """By default the actors on the master's node connect over its private ipc socket."""
    assert cluster.endpoint.startswith("tcp://127.0.0.1:")
    assert all(h.member.endpoint.startswith("ipc://") and h.member.token
               for h in cluster.live())


def test_admission():
    """A HELLO is taken for an actor's only with its proof: the token over ipc (never with
    a CURVE key, never a wrong or missing one), its own key over CURVE; an insecure
    actor's word; and never before the actor was told to serve."""
    key = zmq.curve_keypair()[0]
    near = ray_pool.Actor(0, None, serving=object(), endpoint="ipc://x", token="ab" * 16)
    far = ray_pool.Actor(1, None, serving=object(), public=key)
    plain = ray_pool.Actor(2, None, serving=object())
    assert ray_pool.admits(near, {"token": "ab" * 16}, None)
    for meta, user in [({"token": "ba" * 16}, None), ({}, None), ({"token": 7}, None),
                       ({"token": "ab" * 16}, key.decode())]:
        assert not ray_pool.admits(near, meta, user)
    assert ray_pool.admits(far, {}, key.decode())
    assert not ray_pool.admits(far, {}, zmq.curve_keypair()[0].decode())
    assert not ray_pool.admits(far, {"token": "ab" * 16}, None)
    assert ray_pool.admits(plain, {}, None)
    assert not ray_pool.admits(ray_pool.Actor(3, None, public=key), {}, key.decode())


@pytest.mark.bounded(60)
def test_too_few_cpus(bounded, ray_session):
    """More workers than the Ray cluster has CPUs: a clear error at once."""
    with pytest.raises(ClusterError, match="CPUs; 64 workers need one each"):
        Cluster(64, engine="ray")


@pytest.mark.bounded(120)
def test_cli_engine_ray(bounded, ray_session, capsys, tmp_path):
    """'ffcode run ... --engine ray' runs every scheme on Ray workers (here in the Ray this
    process is connected to) and says where they run; the report names their nodes."""
    report = tmp_path / "report.json"
    assert cli.main(["run", "matmul", "--n", "64", "--workers", "2", "--a", "1", "--b", "1",
                     "--stragglers", "1", "--engine", "ray", "--compare", "--no-progress",
                     "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "Ray workers, CURVE keys made for this run" in out
    assert "2 workers ready at tcp://127.0.0.1:" in out and "on 1 Ray node in" in out
    assert "run passed" in out
    import json
    node = ray.get_runtime_context().get_node_id()
    runs = json.loads(report.read_text())["runs"]
    assert len(runs) == 5 and all(w["node"] == node for r in runs for w in r["workers"])


@pytest.mark.bounded(120)
def test_resident_data_on_actors(bounded, cluster):
    """Actors hold resident data: jobs ship only x; an actor killed between jobs is replaced
    by a fresh one, which gets its share before its first job."""
    F = ffcode.GF(2**61 - 1)
    A = F.random((40, 12), seed=5)
    data = cluster.load(MDS(F, 2, N), A, scheme="compfs", pieces=2)
    for seed in range(3):
        x = F.random(12, seed=seed)
        output, report = cluster.run(data, x, timeout=30)
        assert np.array_equal(output, F.matmul(A, x)) and report.reloaded == []
        assert all(w.shipped < x.nbytes + 1024 for w in report.workers)
    victim = cluster.live()[2]
    ray.kill(victim.member.handle)
    deadline = time.monotonic() + 30
    while victim.gone() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2 * WATCH_EVERY)     # a worker heard from within WATCH_EVERY counts as alive
    output, report = cluster.run(data, x, timeout=60)
    assert np.array_equal(output, F.matmul(A, x))
    assert report.reloaded == [2] and report.workers[2].pid != victim.pid
    cluster.unload(data)


@pytest.mark.bounded(120)
def test_several_shares_on_actors(bounded, cluster):
    """Actors hold several shares each (a code of 3N points): every scheme decodes exactly,
    and the speed allocation of the next job follows the speeds the actors showed."""
    F = ffcode.GF(2**31 - 1)
    A, x = F.random((60, 16), seed=6), F.random((16, 2), seed=7)
    code = MDS(F, 3, 3 * N)
    for scheme in ("classic", "cfs", "compfs"):
        output, report = cluster.run(code, A, x, scheme=scheme, pieces=2, timeout=60)
        assert np.array_equal(output, F.matmul(A, x))
        assert [w.shares for w in report.workers] == [[i, i + N, i + 2 * N]
                                                      for i in range(N)]
    output, report = cluster.run(code, A, x, allocate=[3] + [1] * (N - 1), timeout=60)
    assert np.array_equal(output, F.matmul(A, x))
    counts = [len(w.shares) for w in report.workers]
    assert sum(counts) == 3 * N and counts[0] == max(counts) > counts[1]


@pytest.mark.bounded(120)
def test_gradient_steps_on_actors(bounded, cluster):
    """A gradient-coded step runs on Ray actors as on local workers: the exact sum, shipped
    or from resident partitions, at full speed and in the original protocol."""
    from ffcode import CyclicRepetition
    from ffcode.runtime import GradientStep

    F = ffcode.GF(2**61 - 1)
    code = CyclicRepetition(F, N, 1)
    parts = [(F.random((6, 3), seed=40 + j),) for j in range(N)]
    want = F.combine(np.ones((1, N), F.dtype),
                     [F.mul(F.mul(X, X), X) for (X,) in parts])[0]
    output, _ = cluster.run(GradientStep(code, "ffcode.functions:cube", parts), timeout=30)
    assert exact(output, want)
    data = cluster.load(code, parts)
    output, report = cluster.run(GradientStep(data, "ffcode.functions:cube", partial=False),
                                 timeout=30)
    assert exact(output, want) and all(w.shipped < 4096 for w in report.workers)
    cluster.unload(data)
