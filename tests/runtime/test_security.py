"""What an attacker on the same host can do to a master, and what it is left with: joining
needs keys (or insecure=True), a worker's claims choose nothing, an oversized frame is cut
off before it is held, every dropped message is counted, and the master's private directory
does not outlive it. Also functions from the user's own script on local workers."""
import contextlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest
import zmq

import ffcode
from ffcode import GF, LCC, MDS
from ffcode.runtime import Cluster
from ffcode.runtime.shared import keys, wire
from ffcode.runtime.shared.wire import Header, Kind

from helpers import reap

LOOPBACK = "tcp://127.0.0.1:*"


class Peer:
    """A raw DEALER that says HELLO with whatever it claims about itself."""

    def __init__(self, endpoint, **claims):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.connect(endpoint)
        self.socket.send_multipart(wire.control(Header(Kind.HELLO, 0, 0), claims))

    def close(self):
        self.socket.close()
        self.context.term()


def connected(cluster, count, within=10.0):
    """Wait until count workers are admitted (the master's thread takes the HELLOs)."""
    deadline = time.monotonic() + within
    while len(cluster.live()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(cluster.live()) == count


# -- joining -----------------------------------------------------------------------------------

@pytest.mark.bounded(20)
def test_tcp_master_on_loopback_needs_keys(bounded):
    """Any process of the host reaches loopback: without CURVE keys a tcp master is refused
    unless told insecure=True."""
    with pytest.raises(ValueError, match="on loopback, where any process of this host could "
                                         "join as a worker"):
        Cluster(2, LOOPBACK)
    with Cluster(2, LOOPBACK, insecure=True) as cluster:
        assert cluster.endpoint.startswith("tcp://127.0.0.1:")


@pytest.mark.bounded(20)
def test_claimed_slot_chooses_nothing(bounded):
    """A peer that joins last claiming slot -1000 is not put ahead of the workers that were
    there first: remote workers take jobs in the order they connected."""
    with Cluster(2, LOOPBACK, insecure=True) as cluster:
        peers = []
        try:
            for pid in (11, 12):
                peers.append(Peer(cluster.endpoint, slot=-1, pid=pid, host="honest"))
                connected(cluster, len(peers))
            peers.append(Peer(cluster.endpoint, slot=-1000, pid=13, host="rogue"))
            connected(cluster, 3)
            assert [h.pid for h in cluster.wait(2)] == [11, 12]
            assert [h.host for h in cluster.live()] == ["honest", "honest", "rogue"]
            assert all(h.slot is None for h in cluster.live())
        finally:
            for peer in peers:
                peer.close()


@pytest.mark.bounded(20)
def test_local_hello_must_come_from_the_pool(bounded):
    """On a local cluster a process the pool did not fork is refused as it connects
    (counted), whatever slot and pid its HELLO names: the master would otherwise kill that
    pid as a lost worker."""
    with Cluster(2) as cluster:
        cluster.wait()
        real = [h.pid for h in cluster.live()]
        peer = Peer(cluster.endpoint, slot=0, pid=os.getpid(), host="rogue")
        try:
            deadline = time.monotonic() + 5
            while not cluster.rejected_total["refused"] and time.monotonic() < deadline:
                cluster.wait()
            assert cluster.rejected_total["refused"] == 1
            assert [h.pid for h in cluster.live()] == real
        finally:
            peer.close()


# -- what a peer can make the master hold ------------------------------------------------------

def _greeting(mechanism: bytes) -> bytes:
    """A ZMTP 3.0 greeting: signature, version, mechanism, as-server, filler (64 bytes)."""
    return b"\xff" + b"\0" * 8 + b"\x7f" + bytes([3, 0]) + mechanism.ljust(20, b"\0") + \
        b"\0" * 32


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmRSS"))


def _stream_oversized_frame(sock, mechanism, announced=1 << 30, budget=96 << 20) -> int:
    """Send a greeting and a command frame announcing `announced` bytes, then stream up to
    `budget` of them; returns how many were taken before the master hung up."""
    sock.settimeout(10)
    sock.sendall(_greeting(mechanism) + bytes([0x06]) + struct.pack(">Q", announced))
    chunk, sent = b"\0" * (1 << 20), 0
    try:
        while sent < budget:
            sock.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


@pytest.mark.bounded(60)
@pytest.mark.parametrize("transport", ["curve-tcp", "local-ipc"])
def test_oversized_frame_is_cut_off(bounded, tmp_path, transport):
    """A peer that announces a 1 GiB frame (for CURVE, in the handshake, before any key is
    checked) is disconnected at the announcement: the master does not take 96 MiB of it,
    and its memory does not grow by what was sent."""
    if transport == "curve-tcp":
        _, secret = keys.generate(str(tmp_path / "master"), "master")
        (tmp_path / "clients").mkdir()
        cluster = Cluster(1, LOOPBACK, key=secret, clients=str(tmp_path / "clients"))
    else:
        cluster = Cluster(1)
    with cluster:
        before = _rss()
        address = cluster.endpoint.split("://", 1)[1]
        if transport == "curve-tcp":
            host, port = address.rsplit(":", 1)
            sock = socket.create_connection((host, int(port)))
        else:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(address)
        with sock:
            sent = _stream_oversized_frame(sock, b"CURVE" if transport == "curve-tcp"
                                           else b"NULL")
        assert sent < 96 << 20, "the master kept reading an oversized frame"
        assert _rss() - before < 48 << 20


@pytest.mark.bounded(20)
def test_max_message_checked(bounded):
    with pytest.raises(ValueError, match="'max_message' must be at least"):
        Cluster(1, max_message=1000)
    with pytest.raises(TypeError, match="'max_message' must be an integer"):
        Cluster(1, max_message=1.5e9)


@pytest.mark.bounded(40)
def test_packet_above_max_message_fails_the_job_clearly(bounded):
    """A job whose packets are larger than the master takes fails with the worker's reason,
    not with workers lost to disconnection."""
    F = GF(65521)
    A, x = F.random((1024, 1024), seed=1), F.random((1024, 512), seed=2)  # pieces of 512 KiB
    with Cluster(2, max_message=wire.MAX_META_BYTES) as cluster:
        with pytest.raises(ffcode.runtime.WorkerError, match="larger than the master takes"):
            cluster.run(MDS(F, 1, 2), A, x, scheme="cfs", pieces=1, timeout=20)


# -- every dropped message is counted ----------------------------------------------------------

@contextlib.contextmanager
def _workers(cluster, count):
    """Worker processes started by hand ('ffcode worker --connect'), reaped afterwards."""
    procs = [subprocess.Popen([sys.executable, "-m", "ffcode", "worker", "--connect",
                               cluster.endpoint], cwd=tempfile.gettempdir())
             for _ in range(count)]
    try:
        yield procs
    finally:
        cluster.close()                 # tells them to exit
        reap(procs, grace=10)


@pytest.mark.bounded(40)
def test_junk_between_jobs_is_counted(bounded, tmp_path):
    """1000 malformed messages sent before a job by a process the master admits (one of
    this user's, on an ipc endpoint that serves workers started by hand): every one is in
    the next report (they were drained between jobs) and in the cluster's totals."""
    F = GF(65521)
    A, x = F.random((40, 8), seed=1), F.random(8, seed=2)
    with Cluster(2, f"ipc://{tmp_path}/master") as cluster, _workers(cluster, 2):
        cluster.wait()
        context = zmq.Context()
        junk = context.socket(zmq.DEALER)
        junk.linger = 0
        junk.connect(cluster.endpoint)
        try:
            for i in range(1000):
                junk.send_multipart([b"junk", str(i).encode()])
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:      # between jobs: the cluster drains them
                cluster.wait()
            y, report = cluster.run(MDS(F, 1, 2), A, x, timeout=20)
            assert np.array_equal(y, F.matmul(A, x))
            assert report.rejected == {"malformed": 1000}
            assert cluster.rejected_total["malformed"] == 1000
            y, report = cluster.run(MDS(F, 1, 2), A, x, timeout=20)
            assert report.rejected == {}            # counted once
        finally:
            junk.close()
            context.term()


# -- the master's private directory ------------------------------------------------------------

MASTER = """
import sys, time
import ffcode
cluster = ffcode.Cluster(2)
cluster.wait()
print(cluster.endpoint, flush=True)
time.sleep(60)
"""


@pytest.mark.bounded(40)
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_private_directory_removed_when_the_master_dies(bounded, tmp_path, signal_name):
    """Killing the master (not its workers) removes its ipc directory: the fork server sees
    its stdin close, removes it and takes the workers down."""
    import signal
    master = subprocess.Popen([sys.executable, "-c", MASTER], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True)
    try:
        endpoint = master.stdout.readline().strip()
        directory = os.path.dirname(endpoint[len("ipc://"):])
        assert endpoint.startswith("ipc://") and os.path.isdir(directory)
        master.send_signal(getattr(signal, signal_name))
        master.wait(10)
        deadline = time.monotonic() + 5
        while os.path.exists(directory) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(directory)
    finally:
        master.kill()
        master.wait()
        master.stdout.close()


@pytest.mark.bounded(30)
def test_stale_directories_reaped_safely(bounded, tmp_path):
    """A new local master removes the directories of dead masters, and nothing else: not a
    live master's, not a symlink's target, not other names."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = tempfile.gettempdir()
    stale = os.path.join(root, f"ffcode-{dead.pid}-stale1")
    alive = os.path.join(root, f"ffcode-{os.getpid()}-alive1")
    link = os.path.join(root, f"ffcode-{dead.pid}-link1")
    other = os.path.join(root, f"ffcode-x{dead.pid}-other1")
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("keep")
    for path in (stale, alive, other):
        os.mkdir(path)
        open(os.path.join(path, "master"), "w").close()
    os.symlink(target, link)
    try:
        with Cluster(1):
            pass
        assert not os.path.exists(stale)
        assert os.path.isdir(alive) and os.path.isdir(other)
        assert os.path.islink(link) and (target / "keep").exists()
    finally:
        for path in (stale, alive, other):
            if os.path.isdir(path):
                for name in os.listdir(path):
                    os.remove(os.path.join(path, name))
                os.rmdir(path)
        if os.path.islink(link):
            os.remove(link)


# -- f from the user's own script --------------------------------------------------------------

SCRIPT = """
import numpy as np
import ffcode
from ffcode import GF, LCC


def triple(F, X):
    return F.add(F.add(X, X), X)


def square(F, X):
    return F.mul(X, X)

{main}
    F = GF(65521)
    X = [F.random((8, 3), seed=j) for j in range(2)]
    with ffcode.Cluster(4) as cluster:
        out, report = cluster.run(LCC(F, 2, 1, triple, 1, 4, row_linear=True), X,
                                  scheme="compfs", pieces=2, timeout=30)
        assert all(np.array_equal(o, triple(F, x)) for o, x in zip(out, X))
        out, report = cluster.run(LCC(F, 2, 0, square, 2, 4), X, scheme="cfs", timeout=30)
        assert all(np.array_equal(o, F.mul(x, x)) for o, x in zip(out, X))
    print("exact")
"""


@pytest.mark.bounded(60)
def test_f_from_the_users_script(bounded, tmp_path):
    """Functions defined in the script that runs the cluster work on local workers."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT.format(main='if __name__ == "__main__":'))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exact"


@pytest.mark.bounded(60)
def test_unguarded_script_says_what_to_do(bounded, tmp_path):
    """A script without the __main__ guard would start clusters inside its workers: the
    job fails at once, saying to add the guard."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT.format(main="if True:"))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=50)
    assert done.returncode != 0
    assert "WorkerError" in done.stderr and "if __name__ ==" in done.stderr


@pytest.mark.bounded(20)
def test_remote_workers_cannot_import_the_masters_script(bounded, monkeypatch):
    def tripled(F, X):
        return F.add(F.add(X, X), X)
    tripled.__module__, tripled.__qualname__ = "__main__", "tripled"
    monkeypatch.setattr(sys.modules["__main__"], "tripled", tripled, raising=False)
    F = GF(65521)
    code = LCC(F, 2, 0, tripled, 1, 3)
    with Cluster(3, LOOPBACK, insecure=True) as cluster:
        with pytest.raises(ValueError, match="Remote workers cannot import '__main__:tripled'"):
            cluster.run(code, [F.random((4, 2), seed=j) for j in range(2)], scheme="classic")


@pytest.mark.bounded(40)
def test_interactive_f_refused(bounded):
    """In an interactive session (python -c) there is no script to run again."""
    code = textwrap.dedent("""
        import ffcode
        def f(F, X):
            return X
        try:
            ffcode.LCC(ffcode.GF(65521), 2, 0, f, 1, 3).encode([[1], [2]])
            from ffcode import functions
            functions.path_of(f)
        except ValueError as e:
            print(e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, cwd=tempfile.gettempdir())
    assert "cannot be imported by worker processes" in done.stdout, done.stderr
