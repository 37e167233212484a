"""Remote workers over tcp on 127.0.0.1: 'ffcode worker --connect' processes serving a Cluster
for every code and scheme, CURVE encryption and authentication, the refusal to listen beyond
loopback in the clear, and a worker killed mid-job found by its missing heartbeats."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, MatDot, PolynomialCode
from ffcode.cli import commands as cli
from ffcode.schemes import NAMES
from ffcode.runtime import Cluster, ClusterError, Faults, JobFailed
from ffcode.runtime.shared import keys

from helpers import default_ctrl_c, reap

SCHEMES = list(NAMES)
LOOPBACK = "tcp://127.0.0.1:*"
LINEAR_F = '''
def double(F, X):
    """A linear (so row-linear) f of degree 1."""
    return F.add(X, X)
'''


def start_workers(endpoint, count, cwd, *extra, pythonpath=None, env=None):
    """count 'ffcode worker --connect endpoint' processes (run outside the source tree, so
    that the installed package is imported), with Ctrl-C as in a foreground shell;
    ``env``: variables added to their environment."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", **(env or {}))
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath,
                                                          env.get("PYTHONPATH")]))
    return [subprocess.Popen([sys.executable, "-m", "ffcode", "worker", "--connect", endpoint,
                              *extra], cwd=cwd, env=env, stderr=subprocess.DEVNULL,
                             preexec_fn=default_ctrl_c)
            for _ in range(count)]


def exits(procs, within=10):
    """The exit statuses, each process given up to `within` seconds."""
    return [proc.wait(within) for proc in procs]


# -- every code and scheme ---------------------------------------------------------------------


@pytest.mark.bounded(60)
def test_remote_workers_every_scheme(bounded, tmp_path, monkeypatch):
    """Three remote workers run every scheme of MDS, PolynomialCode (p = 2**61 - 1), MatDot
    and LCC (f = square, which computes at full speed only when it is refused; and a linear f
    from a module the workers import through PYTHONPATH) to the exact output; the reports
    name the workers' processes; the workers exit with status 0 when the cluster closes."""
    (tmp_path / "ffcode_test_remote_f.py").write_text(LINEAR_F)
    monkeypatch.syspath_prepend(str(tmp_path))
    F31, F61, F16 = ffcode.GF(2**31 - 1), ffcode.GF(2**61 - 1), ffcode.GF(65521)
    A31, x31 = F31.random((30, 20), seed=1), F31.random(20, seed=2)
    A61, B61 = F61.random((30, 20), seed=3), F61.random((20, 12), seed=4)
    A16, B16 = F16.random((22, 20), seed=5), F16.random((20, 9), seed=6)
    X = [F31.random((14, 6), seed=7 + j) for j in range(2)]
    jobs = [
        ("MDS", lambda: MDS(F31, 2, 3), (A31, x31), F31.matmul(A31, x31), SCHEMES),
        ("PolynomialCode", lambda: PolynomialCode(F61, 2, 1, 3), (A61, B61),
         F61.matmul(A61, B61), SCHEMES),
        ("MatDot", lambda: MatDot(F16, 2, 3), (A16, B16), F16.matmul(A16, B16), SCHEMES),
        ("LCC square", lambda: LCC(F31, 2, 0, "ffcode.functions:square", 2, 3), (X,),
         [F31.mul(x, x) for x in X], SCHEMES[:4]),
        ("LCC linear", lambda: LCC(F31, 2, 1, "ffcode_test_remote_f:double", 1, 3,
                                   row_linear=True), (X,), [F31.add(x, x) for x in X],
         SCHEMES),
    ]
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30, insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path, pythonpath=str(tmp_path))
            handles = cluster.wait(timeout=30)
            pids = {proc.pid for proc in procs}
            assert {h.pid for h in handles} == pids
            assert all(h.slot is None and h.engine is None for h in handles)
            for name, make, inputs, expected, schemes in jobs:
                for scheme in schemes:
                    code = make()
                    output, report = cluster.run(code, *inputs, scheme=scheme, pieces=3,
                                                 seed=11, timeout=30)
                    if isinstance(expected, list):
                        assert isinstance(output, list) and len(output) == len(expected)
                        for o, e in zip(output, expected):
                            assert o.dtype == e.dtype and np.array_equal(o, e), (name, scheme)
                    else:
                        assert output.dtype == expected.dtype, (name, scheme)
                        assert np.array_equal(output, expected), (name, scheme)
                    assert report.scheme == scheme and report.rank == report.needed
                    assert report.used == report.needed, (name, scheme)
                    assert {w.pid for w in report.workers} == pids
                    assert not any(w.lost for w in report.workers)
                    assert report.rejected == {}
            with pytest.raises(ValueError, match="row-linear"):
                cluster.run(LCC(F31, 2, 0, "ffcode.functions:square", 2, 3), X,
                            scheme="compfs", timeout=30)
        assert exits(procs) == [0, 0, 0]
    finally:
        reap(procs)


@pytest.mark.bounded(60)
def test_wrong_remote_worker_is_told_to_exit(bounded, tmp_path):
    """A remote worker found wrong (adversaries=1) is excluded: it is told to exit (status
    0), and a spare worker takes its place in the next job."""
    F = ffcode.GF(65521)
    A, x = F.random((12, 5), seed=1), F.random(5, seed=2)
    code = MDS(F, 1, 3)                     # R = 1, A = 1: worker 2, last, settles it
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30, insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 4, tmp_path)
            cluster.wait(4, timeout=30)
            handles = cluster.wait(3)
            output, report = cluster.run(code, A, x, scheme="classic", adversaries=1,
                                         faults=ffcode.Faults(corrupt={1: "random"},
                                                              delay={2: (0.05, 0)}),
                                         timeout=30)
            assert np.array_equal(output, F.matmul(A, x)) and report.wrong == [1]
            victim = next(proc for proc in procs if proc.pid == handles[1].pid)
            assert victim.wait(10) == 0
            output, report = cluster.run(code, A, x, scheme="classic", adversaries=1,
                                         timeout=30)
            assert np.array_equal(output, F.matmul(A, x)) and report.wrong == []
            assert {w.pid for w in report.workers} == {p.pid for p in procs} - {victim.pid}
        assert exits(procs) == [0, 0, 0, 0]
    finally:
        reap(procs)


@pytest.mark.bounded(30)
def test_unimportable_f_refused_before_sending(bounded):
    """An LCC whose f is a lambda cannot run on worker processes: refused at once, before
    waiting for workers (none ever connect here)."""
    F = ffcode.GF(65521)
    X = [F.random((4, 3), seed=j) for j in range(2)]
    with Cluster(endpoint=LOOPBACK, n_workers=3, start_timeout=30, insecure=True) as cluster:
        start = time.monotonic()
        with pytest.raises(ValueError, match="cannot be imported by worker processes"):
            cluster.run(LCC(F, 2, 0, lambda F, X: F.mul(X, X), 2, 3), X, scheme="classic")
        assert time.monotonic() - start < 5


# -- CURVE -------------------------------------------------------------------------------------


@pytest.mark.bounded(60)
def test_curve(bounded, tmp_path, capsys):
    """'ffcode keys' writes a key pair; a Cluster with the server's secret key and a clients
    directory admits exactly the worker whose public key is there and that trusts the
    server's key: an unauthorised key, a wrong server key and a plaintext worker never
    register (wait raises ClusterError), the job on the admitted worker is exact, and all
    four processes are gone once the cluster closes."""
    assert cli.main(["keys", str(tmp_path / "server"), "server"]) == 0
    printed = capsys.readouterr().out.split()
    server_public, server_secret = (str(tmp_path / "server" / name)
                                    for name in ("server.key", "server.key_secret"))
    assert printed == [server_public, server_secret]
    assert "secret-key" in open(server_secret).read()
    assert "secret-key" not in open(server_public).read()
    client_public, client_secret = keys.generate(str(tmp_path / "client"), "client")
    _, intruder_secret = keys.generate(str(tmp_path / "intruder"), "intruder")
    other_public, _ = keys.generate(str(tmp_path / "other"), "other")
    clients = tmp_path / "clients"
    clients.mkdir()
    shutil.copy(client_public, clients)

    F = ffcode.GF(2**31 - 1)
    A, x = F.random((20, 8), seed=1), F.random(8, seed=2)
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=2, key=server_secret, clients=str(clients),
                     start_timeout=30) as cluster:
            endpoint = cluster.endpoint
            procs = (start_workers(endpoint, 1, tmp_path, "--key", client_secret,
                                   "--server-key", server_public) +
                     start_workers(endpoint, 1, tmp_path, "--key", intruder_secret,
                                   "--server-key", server_public) +
                     start_workers(endpoint, 1, tmp_path, "--key", client_secret,
                                   "--server-key", other_public) +
                     start_workers(endpoint, 1, tmp_path))
            with pytest.raises(ClusterError, match="Only 1 of 2 workers connected"):
                cluster.wait(timeout=3)
            assert [h.pid for h in cluster.live()] == [procs[0].pid]
            output, report = cluster.run(MDS(F, 1, 1), A, x, pieces=2, timeout=30)
            assert np.array_equal(output, F.matmul(A, x))
            assert report.workers[0].pid == procs[0].pid
            assert cluster.transport.rejected == {}
            assert procs[0].poll() is None          # the admitted worker still serves
        assert exits(procs)[0] == 0                 # (the refused ones have left too)
    finally:
        reap(procs)


@pytest.mark.bounded(30)
def test_refused_worker_says_so(bounded, tmp_path):
    """'ffcode worker' with a key the master does not admit exits non-zero and says why."""
    _, server_secret = keys.generate(str(tmp_path / "server"), "server")
    _, intruder_secret = keys.generate(str(tmp_path / "intruder"), "intruder")
    (tmp_path / "clients").mkdir()
    with Cluster(endpoint=LOOPBACK, n_workers=1, key=server_secret,
                 clients=str(tmp_path / "clients")) as cluster:
        proc = subprocess.Popen([sys.executable, "-m", "ffcode", "worker", "--connect",
                                 cluster.endpoint, "--key", intruder_secret, "--server-key",
                                 str(tmp_path / "server" / "server.key")],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            out, err = proc.communicate(timeout=15)
        finally:
            reap([proc])
        with pytest.raises(ClusterError):
            cluster.wait(timeout=0.1)
    assert proc.returncode != 0
    assert any(word in err.lower() for word in ("refused", "auth", "key")), err


@pytest.mark.bounded(30)
def test_refuses_cleartext_tcp(bounded):
    """Listening on tcp without CURVE is refused before any socket exists, on loopback too
    (any process of the host could join); so are endpoints of other transports and key
    without clients."""
    threads = threading.active_count()
    for endpoint in ("tcp://0.0.0.0:*", "tcp://*:*", "tcp://192.0.2.1:5555",
                     "tcp://127.0.0.1.example.com:*", "tcp://[::]:*"):
        with pytest.raises(ValueError, match="where anyone who reaches it could join"):
            Cluster(endpoint=endpoint, n_workers=2)
    for endpoint in (LOOPBACK, "tcp://localhost:*", "tcp://[::1]:*"):
        with pytest.raises(ValueError, match="on loopback, where any process of this host "
                                             "could join as a worker"):
            Cluster(endpoint=endpoint, n_workers=2)
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        Cluster(endpoint="udp://127.0.0.1:5555", n_workers=2)
    with pytest.raises(TypeError):
        Cluster(endpoint=5555, n_workers=2)
    with pytest.raises(ValueError, match="go together"):
        Cluster(endpoint="tcp://0.0.0.0:*", n_workers=2, key="server.key_secret")
    with pytest.raises(ValueError, match="go together"):
        Cluster(endpoint=LOOPBACK, n_workers=2, clients=".")
    assert threading.active_count() == threads


@pytest.mark.bounded(30)
def test_bad_key_files(bounded, tmp_path):
    """A missing secret key, a public key given as the secret one, or a missing clients
    directory: ValueError, and no authenticator thread or socket is left behind."""
    public, secret = keys.generate(str(tmp_path / "server"), "server")
    threads = threading.active_count()
    for key, clients, message in [
        (str(tmp_path / "nope.key_secret"), str(tmp_path), "does not exist"),
        (public, str(tmp_path), "holds no secret key"),
        (secret, str(tmp_path / "no-such-dir"), "clients directory"),
    ]:
        with pytest.raises(ValueError, match=message):
            Cluster(endpoint=LOOPBACK, n_workers=1, key=key, clients=clients)
    assert threading.active_count() == threads


@pytest.mark.bounded(30)
def test_loopback_names_accepted(bounded):
    """localhost is loopback: bound in the clear when told insecure=True, and closed again."""
    with Cluster(endpoint="tcp://localhost:*", n_workers=1, insecure=True) as cluster:
        assert cluster.endpoint.startswith("tcp://127.0.0.1:")
        with pytest.raises(ClusterError, match="Only 0 of 1"):
            cluster.wait(timeout=0.2)
    with pytest.raises(ClusterError, match="closed"):
        cluster.wait()


# -- a worker killed mid-job -----------------------------------------------------------------


@pytest.mark.bounded(60)
def test_killed_worker_detected_by_heartbeat(bounded, tmp_path):
    """SIGKILL of a remote worker's process during a job (each piece pauses 0.6 s): after
    lost_after = 1 s of silence it is given up on; with 3 workers and R = 2 the job still
    completes exactly from the other two, and the report names the lost worker; then with 2
    workers and R = 2 a second kill fails the job, naming the lost worker."""
    F = ffcode.GF(2**31 - 1)
    A, x = F.random((24, 8), seed=1), F.random(8, seed=2)
    slow = Faults(delay=(0.6, 0))
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, lost_after=1.0,
                     start_timeout=30, insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path)
            cluster.wait(timeout=30)
            by_pid = {proc.pid: proc for proc in procs}

            def killer(victim):
                """A progress callback that kills the victim once the first packet is in."""
                def progress(rank, needed):
                    if rank >= 1 and victim.poll() is None:
                        victim.kill()
                return progress

            victim = by_pid[cluster.live()[0].pid]
            output, report = cluster.run(MDS(F, 2, 3), A, x, pieces=4, faults=slow,
                                         progress=killer(victim), timeout=30)
            assert victim.wait(5) == -signal.SIGKILL
            assert np.array_equal(output, F.matmul(A, x))
            assert report.workers[0].lost == "silent for 1 s"
            assert [w.lost for w in report.workers[1:]] == [None, None]
            assert report.used == 8 and report.workers[0].used <= 1
            assert "lost 0 (silent for 1 s)" in report.summary()
            assert len(cluster.live()) == 2 and victim.pid not in {h.pid for h in
                                                                   cluster.live()}

            victim = by_pid[cluster.live()[1].pid]
            with pytest.raises(JobFailed) as failed:
                cluster.run(MDS(F, 2, 2), A, x, pieces=4, faults=slow,
                            progress=killer(victim), timeout=30)
            assert victim.wait(5) == -signal.SIGKILL
            message = str(failed.value)
            assert "/8 after every live worker finished" in message
            assert "worker 1 lost (1: silent for 1 s)" in message
            assert failed.value.report.workers[1].lost == "silent for 1 s"
            assert failed.value.report.workers[0].lost is None
            survivor = [proc for proc in procs if proc.poll() is None]
            assert len(survivor) == 1
        assert exits(survivor) == [0]
    finally:
        reap(procs)
