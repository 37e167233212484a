"""Who gets in: a connection is admitted on what it proves (the kernel's uid and pid on ipc,
a CURVE key), never on what its HELLO claims; a peer that is refused can make the master
hold nothing; a message of more parts than any worker sends is dropped and counted."""
import concurrent.futures
import os
import signal
import socket
import struct
import time

import numpy as np
import pytest
import zmq

from ffcode import GF, MDS
from ffcode.runtime import Cluster, ClusterError
from ffcode.runtime.shared import wire
from ffcode.runtime.master.pool import LocalPool
from ffcode.runtime.shared.wire import Header, Kind


def _hello(endpoint, context=None, **claims):
    """A raw DEALER that connects and says HELLO claiming whatever it is given."""
    context = context or zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(endpoint)
    sock.send_multipart(wire.control(Header(Kind.HELLO, 0, 0), claims), flags=zmq.NOBLOCK)
    return sock


def _until(condition, cluster, within=5.0):
    """Wait for condition (the master's thread takes the messages meanwhile)."""
    deadline = time.monotonic() + within
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def _rss(pid="self") -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmRSS"))


def test_credentials_parse_libzmq_ipc_addresses():
    from ffcode.runtime.shared.gate import credentials
    assert credentials("localhost:1000:1000:4242") == (1000, 4242)
    assert credentials("localhost:501:20:") == (501, None)     # BSD, macOS: no pid
    assert credentials("127.0.0.1") == (None, None)
    assert credentials("") == (None, None)


def test_pool_admits_a_pid_once_and_only_on_the_kernels_word():
    """A HELLO's claimed pid chooses nothing: the pool looks at the connection's pid, and a
    process it admitted already cannot take a second slot."""
    from ffcode.runtime.shared.gate import Peer
    pool = LocalPool.__new__(LocalPool)         # the admission rule alone, no fork server
    pool.requested, pool.members = {1, 2}, set()
    pool.owns = lambda pid: pid in (100, 101)
    assert pool.admit(1, {"pid": 100}, Peer()) is None              # no credentials
    assert pool.admit(1, {"pid": 100}, Peer(pid=999)) is None       # not the pool's
    assert pool.admit(1, {"pid": 999}, Peer(pid=100)) == 100        # the claim is ignored
    assert pool.admit(2, {"pid": 101}, Peer(pid=100)) is None       # admitted already
    assert pool.admit(2, {"pid": 101}, Peer(pid=101)) == 101
    pool.requested = {3}                        # a platform that gives only the uid
    assert pool.admit(3, {"pid": 101}, Peer(uid=0)) is None          # admitted already
    assert pool.admit(3, {"pid": 999}, Peer(uid=0)) is None          # not the pool's


@pytest.mark.bounded(60)
def test_pending_slot_cannot_be_taken_by_another_process(bounded):
    """While a lost worker's slot waits for its replacement, a process of the same user
    that names that slot and an honest worker's pid in its HELLO does not get the slot:
    the gate refuses its connection (its pid is not one the pool forked), the replacement
    takes the slot and the output is exact."""
    F = GF(2**31 - 1)
    A, x = F.random((60, 12), seed=1), F.random(12, seed=2)
    with Cluster(3) as cluster:
        honest = [h.pid for h in cluster.wait()]
        server = os.getpgid(honest[0])     # the fork server leads its workers' group
        os.kill(server, signal.SIGSTOP)     # no replacement can be forked yet
        os.kill(honest[2], signal.SIGKILL)
        try:
            time.sleep(0.3)                 # silent long enough to be looked at
            with pytest.raises(ClusterError, match="Only 2 of 3 workers"):
                cluster.wait(timeout=0.5)   # slot 2 is now asked for and pending
            evil = _hello(cluster.endpoint, slot=2, pid=honest[0], host="evil")
            try:
                _until(lambda: cluster.rejected_total["refused"] >= 1 or
                       any(h.host == "evil" for h in cluster.live()), cluster)
                assert all(h.host != "evil" for h in cluster.live())
                assert cluster.rejected_total["refused"] == 1
            finally:
                evil.close()
        finally:
            os.kill(server, signal.SIGCONT)
        workers = cluster.wait()
        assert [h.slot for h in workers] == [0, 1, 2]
        assert len({h.pid for h in workers}) == 3 and honest[2] not in {h.pid for h in workers}
        y, _ = cluster.run(MDS(F, 2, 3), A, x)
        assert np.array_equal(y, F.matmul(A, x))


def _nobody_connects(endpoint, claims, seconds=3.0) -> int:
    """Fork a child that becomes uid 65534 and says HELLO at endpoint; its pid."""
    pid = os.fork()
    if pid == 0:                                # the child: never returns
        try:
            os.setgid(65534)
            os.setuid(65534)
            context = zmq.Context()
            sock = _hello(endpoint, context, **claims)
            time.sleep(seconds)
            sock.close()
            context.term()
        finally:
            os._exit(0)
    return pid


@pytest.mark.bounded(60)
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_abstract_ipc_endpoint_refuses_other_users(bounded):
    """An abstract ipc socket (ipc://@NAME) has no file permissions: a process of another
    user reaches it, and the gate refuses it on the kernel's uid. Told insecure=True, the
    master admits it."""
    name = f"ipc://@ffcode-test-{os.getpid()}-{time.monotonic_ns()}"
    for insecure in (False, True):
        with Cluster(1, name + str(insecure), insecure=insecure) as cluster:
            child = _nobody_connects(cluster.endpoint, {"slot": -1, "pid": 1, "host": "nobody"})
            try:
                if insecure:
                    assert _until(lambda: len(cluster.live()) == 1, cluster)
                    assert cluster.live()[0].host == "nobody"
                else:
                    _until(lambda: cluster.rejected_total["refused"] >= 1 or
                           cluster.live(), cluster)
                    assert cluster.live() == []
                    assert cluster.rejected_total["refused"] == 1
            finally:
                os.waitpid(child, 0)


def _unfinished_message(path, parts=8, size=16 << 20) -> socket.socket:
    """Speak ZMTP 3.0 (NULL) over the unix socket at path as a DEALER, then stream parts of
    a message whose last part never comes; returns the connection, left open."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(path)
    greeting = b"\xff" + b"\0" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\0") + \
        b"\0" * 32
    ready = b"\x05READY" + bytes([11]) + b"Socket-Type" + struct.pack(">I", 6) + b"DEALER"
    try:
        sock.sendall(greeting + bytes([0x04, len(ready)]) + ready)
        chunk = b"\0" * size
        for _ in range(parts):          # long frames, each with the more flag set
            sock.sendall(bytes([0x03]) + struct.pack(">Q", size) + chunk)
    except OSError:                     # the master hung up
        pass
    return sock


@pytest.mark.bounded(60)
def test_unadmitted_peer_cannot_make_the_master_hold_an_unfinished_message(bounded):
    """A process the local master did not start speaks ZeroMQ's wire protocol itself and
    streams the parts of a message it never ends (8 x 16 MiB): it is refused as it
    connects, so the master holds none of it, and the refusal is counted."""
    with Cluster(1) as cluster:
        cluster.wait()
        path = cluster.endpoint[len("ipc://"):]
        before = _rss()
        with concurrent.futures.ThreadPoolExecutor(1) as attacker:
            sending = attacker.submit(_unfinished_message, path)
            _until(sending.done, cluster, within=20)
            time.sleep(0.2)
            grown = _rss() - before
            sending.result().close()
        assert grown < 48 << 20, f"the master grew by {grown >> 20} MiB"
        assert _until(lambda: cluster.rejected_total["refused"] == 1, cluster)


@pytest.mark.bounded(60)
def test_message_of_too_many_parts_is_dropped_and_counted(bounded, tmp_path):
    """An admitted peer (this user's process on an ipc endpoint for hand-started workers)
    sending a message of 100 parts: dropped, counted as malformed, none of it kept."""
    with Cluster(1, f"ipc://{tmp_path}/master") as cluster:
        sock = _hello(cluster.endpoint, slot=-1, pid=os.getpid(), host="many-parts")
        try:
            assert _until(lambda: len(cluster.live()) == 1, cluster)
            header = Header(Kind.PACKET, cluster.session, cluster.epoch, 0).pack()
            sock.send_multipart([header] + [b"x"] * 99)
            assert _until(lambda: cluster.rejected_total["malformed"] == 1, cluster)
        finally:
            sock.close()
