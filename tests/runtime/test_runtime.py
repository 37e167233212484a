"""The ZeroMQ runtime end to end, on loopback: every scheme is exact for every code, and
crashed or hung workers, floods of garbage, messages of other jobs, slow links, timeouts
and exceptions are each survived (or failed clearly) without leaving processes behind.

This module is also imported by worker processes, for the LCC functions below (workers
find it on the sys.path the master had): keep its module-level imports light.
"""
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

import ffcode
from ffcode import GF, LCC, MDS, Faults, MatDot, PolynomialCode
from ffcode.runtime.shared import wire
from ffcode.errors import ClusterError, JobFailed, JobTimeout, WorkerError
from ffcode.runtime.shared.wire import Header, Kind

from helpers import alive, joined_dealer, process_state, reap, shared_cluster

P31, P16, P61 = 2**31 - 1, 65521, 2**61 - 1
SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")
WHOLE = ("uncoded", "classic")              # one whole result per worker: pieces is 1

# -- functions the workers import by path ("test_runtime:times_w") -----------------------------

W = np.random.default_rng(2024).integers(0, P16, (4, 3))     # elements of every field used


def times_w(F, X):
    """A row-linear f of degree 1: X @ W."""
    return F.matmul(X, F.asarray(W))


def broken(F, X):
    raise ArithmeticError("boom in f")


def test_workers_can_import_this_module():
    from ffcode import functions
    assert functions.path_of(times_w) == f"{__name__}:times_w"
    assert __name__ == "test_runtime"


# -- data, expected outputs and checks ---------------------------------------------------------

def data(F, shape, seed):
    """Random elements with p - 1, 0 and 1 up front."""
    a = F.random(shape, seed)
    flat = a.reshape(-1)
    extremes = [F.p - 1, 0, 1][:flat.size]
    flat[:len(extremes)] = extremes
    return a


def obj(a):
    return np.asarray(a).astype(object)


def product(p, A, B):
    """A @ B mod p on Python integers (independent of ffcode's kernels)."""
    return (obj(A) @ obj(B)) % p


def make_case(name, p):
    """(code, inputs, expected output as Python-int arrays)."""
    F = GF(p)
    if name == "mds-vector":
        A, x = data(F, (11, 7), 1), data(F, (7,), 2)
        return MDS(F, k=3, n_workers=5), (A, x), product(p, A, x)
    if name == "mds-matrix":
        A, x = data(F, (10, 7), 3), data(F, (7, 3), 4)
        return MDS(F, k=3, n_workers=5), (A, x), product(p, A, x)
    if name == "polynomial":
        A, B = data(F, (7, 5), 5), data(F, (5, 9), 6)
        return PolynomialCode(F, a=2, b=2, n_workers=6), (A, B), product(p, A, B)
    if name == "matdot":
        A, B = data(F, (6, 7), 7), data(F, (7, 5), 8)
        return MatDot(F, s=2, n_workers=5), (A, B), product(p, A, B)
    if name == "lcc-square":
        blocks = [data(F, (5, 3), 9 + j) for j in range(2)]
        code = LCC(F, k=2, t=1, f="ffcode.functions:square", degree=2, n_workers=6)
        return code, (blocks,), [obj(X) ** 2 % p for X in blocks]
    if name == "lcc-linear":
        blocks = [data(F, (7, 4), 12 + j) for j in range(3)]
        code = LCC(F, k=3, t=1, f=times_w, degree=1, n_workers=5, row_linear=True)
        return code, (blocks,), [product(p, X, W) for X in blocks]
    raise AssertionError(name)


def assert_exact(F, got, expected):
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_exact(F, g, e)
        return
    assert type(got) is np.ndarray and got.dtype == F.dtype, (type(got), got.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert np.array_equal(obj(got), expected)


def needed_for(code, scheme, pieces):
    if scheme == "uncoded":
        return code.k if isinstance(code, LCC) else code.n_workers
    return (1 if scheme in WHOLE else pieces) * code.recovery_threshold


def check_report(report, code, scheme, pieces):
    """The report of a clean, successful job: its accounting adds up."""
    m = 1 if scheme in WHOLE else pieces
    needed = needed_for(code, scheme, pieces)
    assert (report.scheme, report.code, report.n_workers, report.pieces, report.needed) == \
        (scheme, repr(code), code.n_workers, m, needed)
    assert report.rank == report.used == needed
    assert sum(w.used for w in report.workers) == needed
    assert report.received == sum(len(w.packets) for w in report.workers) >= needed
    assert report.wasted == report.received - needed + report.wasted_after_stop
    assert report.rejected == {}
    assert [w.worker for w in report.workers] == list(range(code.n_workers))
    pids = [w.pid for w in report.workers]
    assert len(set(pids)) == code.n_workers and min(pids) > 0
    for w in report.workers:
        assert w.lost is None
        assert w.used <= m                          # a worker's result has m pieces
        assert w.wasted == len(w.packets) - w.used
        assert all(0 <= packet["index"] < m for packet in w.packets)
        assert sum(packet["innovative"] for packet in w.packets) == w.used
    if scheme == "classic":
        assert sorted(w.used for w in report.workers)[-needed:] == [1] * needed
    if scheme == "uncoded" and isinstance(code, LCC):        # idle workers get nothing
        for w in report.workers[code.k:]:
            assert w.share_sent is None and w.packets == []
    for value in (report.encode, report.compute, report.decode, report.total):
        assert value >= 0
    assert report.encode + report.compute + report.decode <= report.total + 1e-6


# -- clusters ----------------------------------------------------------------------------------

# Six local workers shared by the jobs that neither lose nor replace workers. lost_after is
# long: a pause between jobs must not count as silence (see test_idle_...).
cluster = shared_cluster(6, lost_after=60.0)


class Injector:
    """A raw DEALER on the master's endpoint."""

    def __init__(self, endpoint):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.connect(endpoint)

    def send(self, messages):
        for frames in messages:
            self.socket.send_multipart(frames)

    def close(self):
        self.socket.close()
        self.context.term()


@pytest.fixture(scope="module")
def open_cluster(tmp_path_factory):
    """Six workers started by hand on an ipc endpoint, which any process of this user may
    reach (the injector): a local cluster admits only its own pool's processes."""
    directory = tmp_path_factory.mktemp("open")
    with remote_cluster(6, 60.0, endpoint=f"ipc://{directory}/master", fake=False) as (c, _):
        yield c


@pytest.fixture
def injector(open_cluster):
    inj = Injector(open_cluster.endpoint)
    yield inj
    inj.close()


def once(action):
    """A progress callback that calls action() once, at the job's first progress report
    (the job is under way: cluster.epoch is the job's)."""
    done = []

    def progress(rank, needed):
        if not done:
            done.append(True)
            action()
    return progress


# -- every scheme is exact for every code ------------------------------------------------------

CASES = ("mds-vector", "mds-matrix", "polynomial", "matdot", "lcc-square", "lcc-linear")


def matrix():
    out = []
    for p in (P31, P16):
        for case in CASES:
            for scheme in SCHEMES:
                if scheme == "compfs" and case == "lcc-square":
                    continue                        # not row-linear: test_runtime_exceptions
                for pieces in ((2,) if scheme in WHOLE else (1, 3)):
                    out.append(pytest.param(p, case, scheme, pieces,
                                            id=f"{case}-{scheme}-m{pieces}-p{p}"))
    more = [(P61, "mds-matrix", "compfs", 3), (P61, "polynomial", "cfs", 2),
            (P61, "lcc-square", "systematic", 2), (P61, "matdot", "classic", 1),
            (P61, "lcc-linear", "compfs", 4), (P61, "mds-vector", "uncoded", 1),
            (P31, "mds-vector", "compfs", 6),           # more pieces than share rows
            (P31, "matdot", "systematic", 7), (P16, "polynomial", "compfs", 5)]
    out += [pytest.param(p, case, scheme, pieces, id=f"{case}-{scheme}-m{pieces}-p{p}")
            for p, case, scheme, pieces in more]
    return out


@pytest.mark.bounded(30)
@pytest.mark.parametrize("p,case,scheme,pieces", matrix())
def test_exact(bounded, cluster, p, case, scheme, pieces):
    code, inputs, expected = make_case(case, p)
    y, report = cluster.run(code, *inputs, scheme=scheme, pieces=pieces, seed=p % 97,
                            timeout=30)
    assert_exact(code.F, y, expected)
    check_report(report, code, scheme, pieces)


@pytest.mark.bounded(30)
def test_exact_with_stragglers(bounded, cluster):
    """Seeded shifted-exponential delays and a slowdown change timing, never the output."""
    code, inputs, expected = make_case("polynomial", P31)
    faults = Faults(slowdown={0: 3, 5: 2}, delay=(0.0, 0.02), seed=3)
    for scheme in ("classic", "cfs", "compfs"):
        y, report = cluster.run(code, *inputs, scheme=scheme, pieces=3, faults=faults,
                                seed=1, timeout=30)
        assert_exact(code.F, y, expected)
        check_report(report, code, scheme, 3)


@pytest.mark.bounded(30)
def test_same_code_reused_across_inputs(bounded, cluster):
    """A code object is re-encoded per run: its layout follows the latest inputs."""
    F = GF(P31)
    code = MDS(F, k=2, n_workers=4)
    for rows, cols, seed in ((9, 4, 1), (4, 6, 2), (1, 1, 3)):
        A, x = data(F, (rows, cols), seed), data(F, (cols, 2), seed + 10)
        y, report = cluster.run(code, A, x, scheme="compfs", pieces=2, seed=seed)
        assert_exact(F, y, product(P31, A, x))


@pytest.mark.bounded(30)
def test_progress(bounded, cluster):
    code, inputs, expected = make_case("mds-matrix", P31)
    calls = []
    y, report = cluster.run(code, *inputs, scheme="compfs", pieces=3,
                            progress=lambda rank, needed: calls.append((rank, needed)))
    assert_exact(code.F, y, expected)
    assert calls and calls[-1] == (9, 9)
    ranks = [rank for rank, _ in calls]
    assert ranks == sorted(set(ranks)) and ranks[0] >= 0
    assert {needed for _, needed in calls} == {9}


@pytest.mark.bounded(30)
def test_worker_error(bounded, cluster):
    """f raising in the workers fails the job with the workers' error; they survive."""
    F = GF(P31)
    code = LCC(F, k=2, t=0, f=broken, degree=1, n_workers=3)
    blocks = [data(F, (3, 2), 1), data(F, (3, 2), 2)]
    with pytest.raises(WorkerError, match=r"^rank 0/2 worker [012] failed: ArithmeticError: "
                                          r"boom in f$") as info:
        cluster.run(code, blocks, scheme="classic", timeout=30)
    assert isinstance(info.value, JobFailed)
    assert info.value.report.rank == 0
    pids = [h.pid for h in cluster.live()]
    code, inputs, expected = make_case("mds-vector", P31)
    y, report = cluster.run(code, *inputs, scheme="cfs", pieces=2)
    assert_exact(code.F, y, expected)
    assert [w.pid for w in report.workers] == pids[:5]


@pytest.mark.bounded(30)
@pytest.mark.parametrize("scheme", [
    "uncoded", "classic", "cfs"])
def test_lcc_scalar_blocks(bounded, cluster, scheme):
    """Results travel in row pieces: 0-d blocks are refused before anything is sent (or
    computed exactly as 0-d), and blocks of shape (1,) work."""
    F = GF(P31)
    code = LCC(F, k=2, t=0, f="ffcode.functions:square", degree=2, n_workers=3)
    epoch = cluster.epoch
    try:
        y, report = cluster.run(code, [F.asarray(3), F.asarray(4)], scheme=scheme)
    except ValueError as e:
        assert "give blocks at least one dimension" in str(e)
        assert cluster.epoch == epoch
    else:
        assert_exact(F, y, [obj(9), obj(16)])
    y, report = cluster.run(code, [F.asarray([3]), F.asarray([4])], scheme=scheme)
    assert_exact(F, y, [obj([9]), obj([16])])


# -- the report --------------------------------------------------------------------------------

REPORT_KEYS = {"scheme", "code", "n_workers", "pieces", "needed", "job", "cancelled", "rank",
               "encode", "compute", "decode", "total", "verify", "verified", "wrong", "stop_latency", "quiet",
               "wasted_after_stop", "stale", "rejected", "workers", "shipped", "received",
               "used", "wasted", "schema", "ffcode", "date", "settings"}
WORKER_KEYS = {"worker", "host", "pid", "node", "shares", "share_sent", "shipped", "reloaded",
               "packets", "compute", "speed", "done", "stopped", "lost", "dropped",
               "link_packets", "group", "used", "wasted"}


@pytest.mark.bounded(30)
def test_report_json_round_trip(bounded, cluster, tmp_path):
    code, inputs, expected = make_case("polynomial", P31)
    y, report = cluster.run(code, *inputs, scheme="cfs", pieces=3, seed=5)
    assert_exact(code.F, y, expected)
    path = tmp_path / "report.json"
    text = report.to_json(path)
    assert path.read_text() == text + "\n"
    assert report.to_json() == text
    data_ = json.loads(text)
    assert set(data_) == REPORT_KEYS
    assert data_ == json.loads(json.dumps(report.to_dict()))
    assert (data_["scheme"], data_["code"], data_["n_workers"], data_["pieces"],
            data_["needed"], data_["rank"]) == ("cfs", repr(code), 6, 3, 12, 12)
    assert data_["used"] == 12 == report.used
    assert data_["received"] == report.received == sum(len(w["packets"])
                                                       for w in data_["workers"])
    assert data_["wasted"] == data_["received"] - 12 + data_["wasted_after_stop"]
    assert data_["rejected"] == {} and data_["stale"] == report.stale
    assert data_["settings"] == {
        "code": repr(code), "p": P31, "inputs": [list(np.shape(x)) for x in inputs],
        "scheme": "cfs", "pieces": 3, "faults": json.loads(json.dumps(Faults().to_dict())),
        "seed": 5, "coefficient_seed": 5, "adversaries": 0,
        "verify": data_["settings"]["verify"],
        "resident": None, "assignment": [[i] for i in range(6)], "priority": 0, "repair": "dense"}
    assert data_["ffcode"] == ffcode.__version__
    assert len(data_["workers"]) == 6
    for i, w in enumerate(data_["workers"]):
        assert set(w) == WORKER_KEYS and w["worker"] == i and w["lost"] is None
        assert w["shares"] == [i] and (w["speed"] is None) == (w["share_sent"] is None)
        assert w["pid"] == report.workers[i].pid > 0
        assert w["used"] == sum(p["innovative"] for p in w["packets"]) <= 3
        assert w["wasted"] == len(w["packets"]) - w["used"]
        for p in w["packets"]:
            assert set(p) == {"index", "share", "piece", "sent", "received", "compute",
                              "innovative"}
            assert 0 <= p["index"] < 3 and p["received"] >= 0
            assert (p["share"], p["piece"]) == (i, p["index"])
        assert w["share_sent"] is not None and w["share_sent"] >= 0
    # Every worker was sent its share (A_i, B_i) and a little framing: header and JSON meta.
    share = sum(a.nbytes for a in code.encode(*inputs)[0])
    assert all(0 < w["shipped"] - share < 4096 for w in data_["workers"])
    assert data_["shipped"] == sum(w["shipped"] for w in data_["workers"]) == report.shipped
    assert sum(w["used"] for w in data_["workers"]) == 12
    assert all(isinstance(s, float) for s in data_["stop_latency"])
    assert f"packets used 12/12, wasted {report.wasted}" in report.summary()
    assert report.summary().startswith("cfs: ")


# -- garbage, foreign and stale messages -------------------------------------------------------

def garbage(seed=0):
    """Random multi-frame messages and header-sized frames that are not ffcode headers."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(40):
        frames = [rng.bytes(int(rng.integers(0, 200))) for _ in range(int(rng.integers(1, 5)))]
        frames[0] = b"\0" + frames[0]               # never the magic "FC"
        out.append(frames)
    out += [[b"\0" + rng.bytes(81)] for _ in range(10)]      # header-sized, bad magic
    out.append([b""])
    return out


@pytest.mark.bounded(30)
def test_garbage_flood(bounded, open_cluster, injector):
    """A raw DEALER floods the master during a job: every message is rejected and counted
    by reason, nothing is decoded from it, and the job is exact."""
    cluster = open_cluster
    code, inputs, expected = make_case("mds-matrix", P31)

    def flood():
        s, e = cluster.session, cluster.epoch
        shaped = [wire.packet(Header(Kind.PACKET, s, e, 0, j), np.ones(3, np.uint32),
                              np.zeros((2, 3), np.uint32)) for j in range(3)]
        wrong_sizes = []
        for j, (coeffs, payload) in enumerate([(12, 20), (11, 24), (12, 0), (0, 24),
                                               (12, 25)]):
            frames = wire.packet(Header(Kind.PACKET, s, e, j % 5), np.ones(3, np.uint32),
                                 np.zeros((2, 3), np.uint32))
            wrong_sizes.append([frames[0], b"\1" * coeffs, b"\1" * payload])
        hellos = [[Header(Kind.HELLO, 0, 0).pack(), meta] for meta in
                  (b"{not json", b"[1, 2]", b"\xff\xfe", b'{"slot": 0}', b"null")]
        hellos.append([Header(Kind.HELLO, 0, 0).pack(),
                       b'{"arrays": [], "x": "' + b"y" * (1 << 20) + b'"}'])
        wrong_kind = [[Header(kind, s, e, 0).pack()] for kind in (Kind.JOB, Kind.STOP,
                                                                  Kind.SHUTDOWN)]
        beats = [[Header(Kind.HEARTBEAT, s, e, w).pack()] for w in range(5)]
        injector.send(garbage() + wrong_sizes + shaped + hellos + wrong_kind + beats)

    y, report = cluster.run(code, *inputs, scheme="compfs", pieces=3, seed=1,
                            faults=Faults(delay=(0.15, 0)), progress=once(flood), timeout=30)
    assert_exact(code.F, y, expected)
    assert report.rejected == {"malformed": 51 + 6 + 3, "unknown sender": 5 + 3 + 5}
    assert report.stale == 0
    assert report.used == report.needed == 9
    assert [w.lost for w in report.workers] == [None] * 5
    # the next job is clean again
    y, report = cluster.run(code, *inputs, scheme="cfs", pieces=2)
    assert_exact(code.F, y, expected)
    assert report.rejected == {}


@pytest.mark.bounded(30)
@pytest.mark.parametrize("meta", [b'{"arrays": [], "slot": [1]}', b"[" * 100_000,
                                  b'{"arrays": [], "slot": 0, "pid": "x"}',
                                  b'{"arrays": [], "slot": 0, "host": 5}',
                                  b'{"arrays": [], "slot": 0.0}'],
                         ids=["slot-list", "deep-json", "pid-str", "host-int", "slot-float"])
def test_crafted_hello_does_not_crash_the_master(bounded, open_cluster, injector, meta):
    code, inputs, expected = make_case("mds-vector", P31)
    y, report = open_cluster.run(
        code, *inputs, scheme="compfs", pieces=2, faults=Faults(delay=(0.1, 0)),
        progress=once(lambda: injector.send([[Header(Kind.HELLO, 0, 0).pack(), meta]])))
    assert_exact(code.F, y, expected)
    assert report.rejected == {"malformed": 1}


class FakeWorker(threading.Thread):
    """A DEALER that joins a remote cluster as a worker (claiming slot 99, which the master
    ignores) and answers each JOB with the messages respond(header, meta, arrays) returns."""

    def __init__(self, endpoint):
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.respond = lambda header, meta, arrays: []
        self.jobs = []
        self.stopping = threading.Event()
        self.silent_on_job = False          # freeze (no heartbeat, no answer) at a JOB
        self.silent = False

    def run(self):
        context, dealer = joined_dealer(self.endpoint, "fake")
        beat = Header(Kind.HEARTBEAT, 0, 0)
        try:
            while not self.stopping.is_set():
                if self.silent:
                    time.sleep(0.05)
                    continue
                if dealer.poll(50):
                    frames = dealer.recv_multipart()
                    header = Header.unpack(frames[0])
                    if header.kind == Kind.SHUTDOWN:
                        return
                    if header.kind == Kind.STOP:
                        dealer.send_multipart(wire.control(Header(
                            Kind.STOPPED, header.session, header.epoch, header.worker)))
                    if header.kind == Kind.JOB:
                        meta, arrays = wire.read_control(frames[1:])
                        self.jobs.append(header)
                        if self.silent_on_job:
                            self.silent = True
                            continue
                        beat = Header(Kind.HEARTBEAT, header.session, header.epoch,
                                      header.worker)
                        for message in self.respond(header, meta, arrays):
                            dealer.send_multipart(message)
                try:
                    dealer.send_multipart([beat.pack()], flags=zmq.NOBLOCK)
                except zmq.Again:                   # the master is not reading: skip it
                    pass
        finally:
            dealer.close()
            context.term()


TESTS = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def remote_cluster(n_real, lost_after, endpoint="tcp://127.0.0.1:*", fake=True):
    """A cluster with n_real real workers (``ffcode worker --connect``, which can import
    this module) and, on loopback tcp by default, a fake one that is the last worker of
    every job."""
    c = ffcode.Cluster(n_real + fake, endpoint=endpoint, start_timeout=30,
                       lost_after=lost_after, insecure=endpoint.startswith("tcp://"))
    path = [TESTS, os.path.dirname(TESTS)] + [d for d in os.environ.get("PYTHONPATH", "").split(os.pathsep) if d]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    procs = [subprocess.Popen([sys.executable, "-m", "ffcode", "worker", "--connect",
                               c.endpoint], env=env, cwd=TESTS)     # not the source tree
             for _ in range(n_real)]
    fake = FakeWorker(c.endpoint) if fake else None
    try:
        c.wait(n_real)
        if fake:
            fake.start()                    # connects last: the last worker of every job
            c.wait()
        yield c, fake
    finally:
        if fake:
            fake.stopping.set()
            fake.join(5)
        c.close()
        reap(procs, grace=10)


@pytest.fixture(scope="module")
def remote():
    """Two real remote workers and the fake one, worker 2 of every 3-worker job."""
    with remote_cluster(2, lost_after=60.0) as pair:
        yield pair


@pytest.mark.bounded(40)
def test_foreign_stale_and_bad_packets_from_a_worker(bounded, remote):
    """A worker of the job sends packets of another session (foreign), of other epochs
    (stale), under another worker's index, of wrong sizes and with elements >= p: each is
    rejected and counted by reason, none is decoded, and the job is exact."""
    cluster, fake = remote
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (12, 5), 1), data(F, (5, 4), 2)         # pieces (3, 4) with m = 2
    piece = (3, 4)

    def respond(header, meta, arrays):
        s, e, w = header.session, header.epoch, header.worker

        def pk(session=s, epoch=e, worker=w, coeffs=None, payload=None, dtype=np.uint32):
            coeffs = np.ones(2, dtype) if coeffs is None else np.asarray(coeffs, dtype)
            payload = np.ones(piece, dtype) if payload is None else payload
            return wire.packet(Header(Kind.PACKET, session, epoch, worker), coeffs, payload)

        short = pk()
        short[2] = short[2].reshape(-1)[:-1].copy()     # 44 bytes, the header says 48
        return [
            short,                                              # malformed: size
            pk(dtype=np.uint64),                                # malformed: itemsize
            pk() + [b"extra"],                                  # malformed: 3 data frames
            [Header(Kind.STOP, s, e, w).pack()],                # malformed: not for master
            pk(payload=np.full(piece, P31, np.uint32)),         # invalid: elements >= p
            pk(coeffs=[P31, 1]),                                # invalid: coeffs >= p
            pk(coeffs=[1, 2, 3]),                               # invalid: 3 coefficients
            pk(payload=np.ones((2, 4), np.uint32)),             # invalid: piece shape
            pk(worker=0),                                       # another worker's index
            pk(session=(s + 2) % 2**64),                        # another master's job
            pk(epoch=e - 1),                                    # an earlier job
            pk(epoch=e + 1),                                    # not this job either
        ]

    fake.respond = respond
    y, report = cluster.run(code, A, x, scheme="compfs", pieces=2, seed=4, timeout=30,
                            faults=Faults(delay=(0.4, 0)))
    assert fake.jobs[-1].worker == 2 and fake.jobs[-1].epoch == cluster.epoch
    assert_exact(F, y, product(P31, A, x))
    assert report.rejected == {"malformed": 4, "invalid packet": 4, "unknown worker": 1,
                               "foreign": 1}
    assert report.stale == 2
    assert report.workers[2].packets == [] and report.workers[2].host == "fake"
    assert report.used == 4 == report.workers[0].used + report.workers[1].used
    assert [w.lost for w in report.workers] == [None] * 3


@pytest.mark.bounded(40)
@pytest.mark.parametrize("scheme", ["classic", "systematic"])
def test_lcc_wrongly_shaped_first_packet(bounded, remote, scheme):
    """For an LCC whose f is not declared row-linear the master learns the result shape from
    the packets: a worker claiming a wrong shape first cannot make it the output's (R = 2,
    so one worker alone never decodes)."""
    cluster, fake = remote
    F = GF(P31)
    code = LCC(F, k=2, t=0, f=times_w, degree=1, n_workers=3)        # R = 2, not row-linear
    blocks = [data(F, (5, 4), 1), data(F, (5, 4), 2)]
    m = 1 if scheme == "classic" else 2
    rows = 3 if m == 2 else 5

    def respond(h, meta, arrays):
        coeffs = np.eye(m, dtype=np.uint32)
        return [wire.packet(Header(Kind.PACKET, h.session, h.epoch, h.worker, j, 5),
                            coeffs[j], np.full((rows, 2), 7, np.uint32)) for j in range(m)]

    fake.respond = respond
    y, report = cluster.run(code, blocks, scheme=scheme, pieces=m, timeout=30,
                            faults=Faults(delay=(0.3, 0)))
    assert fake.jobs[-1].worker == 2
    assert_exact(F, y, [product(P31, X, W) for X in blocks])
    assert report.workers[2].used == 0 and len(report.workers[2].packets) == m
    assert report.used == report.needed == 2 * m
    assert report.workers[0].used + report.workers[1].used == 2 * m


@pytest.mark.bounded(40)
def test_remote_hello_with_bad_meta(bounded, remote):
    """A remote cluster admits any HELLO on loopback, but not one with a non-integer slot
    or pid: it is counted as malformed, and no worker joins."""
    cluster, fake = remote
    fake.respond = lambda h, meta, arrays: []
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    inj = Injector(cluster.endpoint)
    try:
        hello = wire.control(Header(Kind.HELLO, 0, 0), {"slot": "first", "pid": "x"})
        y, report = cluster.run(code, A, x, scheme="compfs", pieces=2, timeout=30,
                                faults=Faults(delay=(0.2, 0)),
                                progress=once(lambda: inj.send([hello])))
    finally:
        inj.close()
    assert_exact(F, y, product(P31, A, x))
    assert report.rejected == {"malformed": 1}
    assert len(cluster.live()) == 3


@pytest.mark.bounded(40)
def test_silent_remote_worker_is_lost(bounded):
    """Without a process to watch (a remote worker), a worker that falls silent is given up
    on after lost_after seconds, and the job fails naming it."""
    with remote_cluster(2, lost_after=1.0) as (cluster, fake):
        fake.silent_on_job = True
        F = GF(P31)
        A, x = data(F, (9, 5), 1), data(F, (5,), 2)
        start = time.monotonic()
        with pytest.raises(JobFailed) as info:
            cluster.run(MDS(F, k=3, n_workers=3), A, x, scheme="compfs", pieces=2, seed=1,
                        timeout=30)
        assert 0.9 <= time.monotonic() - start < 10    # its last heartbeat came just before
        assert str(info.value) == ("rank 4/6 after every live worker finished; worker 2 lost "
                                   "(2: silent for 1 s)")
        assert [w.lost for w in info.value.report.workers] == [None, None, "silent for 1 s"]
        assert info.value.report.workers[2].packets == []


# -- a slow link -------------------------------------------------------------------------------

HEADER_BYTES = len(Header(Kind.PACKET, 1, 1).pack())


@pytest.mark.bounded(30)
def test_slow_link(bounded, cluster):
    """Worker 0 sends through a 0.2 s-per-packet link: the job still completes exactly, and
    its packets arrive spaced by size / rate."""
    F = GF(P31)
    code = MDS(F, k=2, n_workers=2)             # no redundancy: every packet is needed
    A, x = data(F, (128, 16), 1), data(F, (16, 64), 2)
    m = 4
    size = HEADER_BYTES + m * 4 + (64 // m) * 64 * 4        # header, coeffs, (16, 64) payload
    rate = size / 0.2
    y, report = cluster.run(code, A, x, scheme="compfs", pieces=m, seed=2, timeout=30,
                            faults=Faults(link_rate={0: rate}))
    assert_exact(F, y, product(P31, A, x))
    check_report(report, code, "compfs", m)
    paced = report.workers[0]
    assert [p["index"] for p in paced.packets] == [0, 1, 2, 3]
    received = [p["received"] for p in paced.packets]
    step = size / rate
    assert received[0] - paced.share_sent >= 0.9 * step       # no burst credit at the start
    gaps = np.diff(received)
    assert gaps.mean() == pytest.approx(step, rel=0.25), gaps
    assert gaps.min() >= 0.4 * step, gaps
    sent = [p["sent"] for p in paced.packets]            # stamped as they leave the link
    assert np.diff(sent).mean() == pytest.approx(step, rel=0.25), sent
    assert all(r >= s_ - 0.01 for r, s_ in zip(received, sent))
    free = [p["received"] for p in report.workers[1].packets]
    assert max(free) < received[-1]
    assert report.total >= 3.6 * step


# -- lost workers ------------------------------------------------------------------------------

def pids(report):
    return [w.pid for w in report.workers]


def rerun_uncoded(cluster, n):
    """A job that needs every worker: the cluster is whole again."""
    F = GF(P31)
    A, x = data(F, (2 * n + 1, 5), 7), data(F, (5,), 8)
    y, report = cluster.run(MDS(F, k=1, n_workers=n), A, x, scheme="uncoded", timeout=30)
    assert_exact(F, y, product(P31, A, x))
    assert [w.lost for w in report.workers] == [None] * n
    return report


@pytest.mark.bounded(30)
@pytest.mark.parametrize("scheme,pieces,after,delay", [("compfs", 3, 1, 0.3),
                                                       ("classic", 1, 0, 0.6),
                                                       ("systematic", 2, 0, 0.3)])
def test_crashed_worker_survived(bounded, scheme, pieces, after, delay):
    """The crash is seen (the process is gone) while the others still work."""
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (9, 6), 1), data(F, (6, 2), 2)
    with ffcode.Cluster(3) as cluster:
        # the crash comes at 0.2 s after the packet (or the share); the others need 0.6-0.9 s
        faults = Faults(crash_after={0: after}, delay=(delay, 0))
        y, report = cluster.run(code, A, x, scheme=scheme, pieces=pieces, faults=faults,
                                seed=1, timeout=30)
        assert_exact(F, y, product(P31, A, x))
        assert report.workers[0].lost == "process exited"
        assert len(report.workers[0].packets) == after
        assert [w.lost for w in report.workers[1:]] == [None, None]
        assert report.used == report.needed == 2 * pieces
        assert "lost 0 (process exited)" in report.summary()
        before = pids(report)
        after_report = rerun_uncoded(cluster, 3)
        assert pids(after_report)[0] != before[0]           # replaced
        assert pids(after_report)[1:] == before[1:]


@pytest.mark.bounded(30)
def test_crashed_workers_fail_the_job(bounded):
    F = GF(P31)
    code = MDS(F, k=3, n_workers=4)
    A, x = data(F, (8, 5), 1), data(F, (5,), 2)
    with ffcode.Cluster(4) as cluster:
        with pytest.raises(JobFailed) as info:
            cluster.run(code, A, x, scheme="compfs", pieces=2, seed=1, timeout=30,
                        faults=Faults(crash_after={0: 0, 2: 0}))
        e = info.value
        assert type(e) is JobFailed
        assert str(e) == ("rank 4/6 after every live worker finished; workers 0 and 2 lost "
                          "(0: process exited; 2: process exited)")
        assert e.report.rank == 4 and e.report.used == 4
        assert [w.lost for w in e.report.workers] == ["process exited", None,
                                                      "process exited", None]
        before = pids(e.report)
        now = pids(rerun_uncoded(cluster, 4))
        assert now[0] != before[0] and now[2] != before[2]
        assert (now[1], now[3]) == (before[1], before[3])


@pytest.mark.bounded(30)
def test_hung_worker_survived(bounded):
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (12, 5), 1), data(F, (5, 2), 2)
    with ffcode.Cluster(3, lost_after=1.0) as cluster:
        # worker 1 freezes after its first packet (~0.5 s); the others finish at ~2 s
        faults = Faults(hang_after={1: 1}, delay=(0.5, 0))
        y, report = cluster.run(code, A, x, scheme="compfs", pieces=4, faults=faults,
                                seed=3, timeout=30)
        assert_exact(F, y, product(P31, A, x))
        assert report.workers[1].lost in ("process frozen", "silent for 1 s")
        assert f"lost 1 ({report.workers[1].lost})" in report.summary()
        assert len(report.workers[1].packets) == 1
        assert report.workers[0].lost is None and report.workers[2].lost is None
        assert report.used == report.needed == 8
        before = pids(report)
        now = pids(rerun_uncoded(cluster, 3))
        assert now[1] != before[1] and (now[0], now[2]) == (before[0], before[2])


@pytest.mark.bounded(30)
def test_hung_workers_fail_the_job(bounded):
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    with ffcode.Cluster(3, lost_after=1.0) as cluster:
        start = time.monotonic()
        with pytest.raises(JobFailed) as info:
            cluster.run(code, A, x, scheme="compfs", pieces=2, seed=1, timeout=30,
                        faults=Faults(hang_after={0: 0, 1: 0}))
        assert time.monotonic() - start < 10
        why = [w.lost for w in info.value.report.workers]
        assert why[0] and why[1] and why[2] is None
        assert str(info.value) == (f"rank 2/4 after every live worker finished; workers 0 and "
                                   f"1 lost (0: {why[0]}; 1: {why[1]})")
        before = pids(info.value.report)
        now = pids(rerun_uncoded(cluster, 3))
        assert now[0] != before[0] and now[1] != before[1] and now[2] == before[2]


@pytest.mark.bounded(30)
def test_hung_worker_reason(bounded):
    F = GF(P31)
    A, x = data(F, (4, 3), 1), data(F, (3,), 2)
    with ffcode.Cluster(2, lost_after=1.0) as cluster:
        y, report = cluster.run(MDS(F, k=1, n_workers=2), A, x, scheme="compfs", pieces=1,
                                faults=Faults(hang_after={1: 0}, delay=(1.5, 0)), timeout=30)
        assert_exact(F, y, product(P31, A, x))
        assert report.workers[1].lost and "exited" not in report.workers[1].lost


@pytest.mark.bounded(30)
def test_hang_after_the_job_decoded(bounded):
    """The job outruns the hang (workers 0 and 1 suffice at once): the frozen worker is
    replaced before the next job, which needs every worker."""
    F = GF(P31)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    with ffcode.Cluster(3, lost_after=1.0) as cluster:
        y, report = cluster.run(MDS(F, k=2, n_workers=3), A, x, scheme="compfs", pieces=2,
                                faults=Faults(hang_after={2: 0}), timeout=30)
        assert_exact(F, y, product(P31, A, x))
        before = pids(report)
        while (process_state(before[2]) or ("T",))[0] != "T":  # the hang: it stops itself
            time.sleep(0.01)
        now = pids(rerun_uncoded(cluster, 3))
        assert now[2] != before[2] and now[:2] == before[:2]


@pytest.mark.bounded(30)
def test_idle_longer_than_lost_after_between_jobs(bounded):
    """Heartbeats that queued up while no job ran count: an idle pause is not silence."""
    F = GF(P31)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    code = MDS(F, k=2, n_workers=2)
    with ffcode.Cluster(2, lost_after=0.5) as cluster:
        y, report = cluster.run(code, A, x, timeout=30)
        before = pids(report)
        time.sleep(1.0)
        y, report = cluster.run(code, A, x, timeout=30)
        assert_exact(F, y, product(P31, A, x))
        assert pids(report) == before and [w.lost for w in report.workers] == [None, None]


# -- timeouts and cleanup ----------------------------------------------------------------------

@pytest.mark.bounded(30)
def test_timeout(bounded):
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    with ffcode.Cluster(3) as cluster:
        cluster.wait()
        start = time.monotonic()
        with pytest.raises(JobTimeout) as info:
            cluster.run(code, A, x, scheme="compfs", pieces=2, timeout=0.5,
                        faults=Faults(delay=(60.0, 0)))
        elapsed = time.monotonic() - start
        assert 0.5 <= elapsed < 0.75 * 5       # the timeout and the stops' grace, 5 times
        assert isinstance(info.value, JobFailed)
        assert str(info.value) == ("rank 0/4 no output within the timeout; workers 0, 1 and 2 "
                                   "still running")
        assert info.value.report.rank == 0
        # the workers were stopped mid-pause: the next job runs at once
        before = [h.pid for h in cluster.live()]
        start = time.monotonic()
        y, report = cluster.run(code, A, x, scheme="compfs", pieces=2, timeout=30)
        assert time.monotonic() - start < 5
        assert_exact(F, y, product(P31, A, x))
        assert pids(report) == before


@pytest.mark.bounded(30)
def test_exception_inside_with_leaves_no_processes(bounded):
    from helpers import descendants
    before = descendants()
    with pytest.raises(RuntimeError, match="inside"):
        with ffcode.Cluster(3) as cluster:
            cluster.wait()
            assert len(descendants() - before) == 4         # the fork server and 3 workers
            raise RuntimeError("inside the with block")
    assert wait_gone(lambda: descendants() - before)
    with pytest.raises(ClusterError, match="closed"):
        cluster.run(MDS(GF(P31), k=1, n_workers=1), [[1]], [1])


def wait_gone(left, seconds=5.0) -> bool:
    deadline = time.monotonic() + seconds
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not left()


@pytest.mark.bounded(30)
def test_close(bounded):
    from helpers import descendants
    before = descendants()
    cluster = ffcode.Cluster(2)
    cluster.wait()
    assert "workers 2/2" in repr(cluster)
    cluster.close()
    cluster.close()                                 # idempotent
    assert "closed" in repr(cluster)
    assert wait_gone(lambda: descendants() - before)
    F = GF(P31)
    with pytest.raises(ClusterError, match="This cluster is closed"):
        cluster.run(MDS(F, k=1, n_workers=1), [[1, 2]], [3, 4])
    with pytest.raises(ClusterError, match="This cluster is closed"):
        cluster.wait()


@pytest.mark.bounded(30)
def test_garbage_collected_cluster_leaves_no_processes(bounded):
    from helpers import descendants
    before = descendants()
    cluster = ffcode.Cluster(2)
    cluster.wait()
    assert len(descendants() - before) == 3
    del cluster
    gc.collect()
    assert wait_gone(lambda: descendants() - before)


def interrupt_process():
    threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()


def interrupt_this_thread():
    """SIGINT to the calling thread alone: the master's thread (a progress callback)."""
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


@pytest.mark.bounded(30)
@pytest.mark.parametrize("send", [interrupt_process, interrupt_this_thread])
def test_ctrl_c_during_a_job(bounded, send):
    """SIGINT once a job is under way (its first progress report; every worker pauses 60 s
    after each piece, so the job is still running) raises KeyboardInterrupt out of run,
    and the cluster runs the next job. Whichever thread the signal reaches: sent to the
    master's thread alone, it does not wake the caller's wait, which must look for it. The
    job's timeout (60 s) is beyond the test's bound: only a prompt KeyboardInterrupt passes.
    SIGINT is handled as Python does by default for the test's length: a test started as a
    background job (pytest &, nohup) has it ignored."""
    F = GF(P31)
    code = MDS(F, k=2, n_workers=2)
    A, x = data(F, (6, 5), 1), data(F, (5,), 2)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ffcode.Cluster(2) as cluster:
            cluster.wait()
            with pytest.raises(KeyboardInterrupt):
                cluster.run(code, A, x, faults=Faults(delay=(60.0, 0)), timeout=60,
                            progress=once(send))
            y, report = cluster.run(code, A, x, timeout=30)     # still usable
            assert_exact(F, y, product(P31, A, x))
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.bounded(40)
def test_killed_master_takes_its_workers_along(bounded):
    """SIGKILL to the master's process: no cleanup code runs, yet the fork server sees its
    stdin close and kills the workers."""
    from helpers import descendants
    script = ("import ffcode, sys\n"
              "c = ffcode.Cluster(2)\n"
              "c.wait()\n"
              "print('ready', flush=True)\n"
              "sys.stdin.read()\n")
    master = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd=TESTS)   # not the source tree
    try:
        assert master.stdout.readline() == b"ready\n"
        pool = descendants(master.pid)
        assert len(pool) == 3                       # the fork server and 2 workers
    finally:
        master.kill()
        master.wait()
        master.stdin.close()
        master.stdout.close()
    assert wait_gone(lambda: [pid for pid in pool if alive(pid)])


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["uncoded", "classic", "systematic", "cfs", "compfs"])
def test_every_scheme_meets_all_m_pauses(bounded, cluster, scheme):
    """The injected pause is per piece of work, m pieces in every scheme: a whole-result
    scheme (even classic, which sends one packet) pauses for all m before sending, so no
    worker's first packet can arrive before m * shift."""
    F = GF(P31)
    code = MDS(F, k=2, n_workers=3)
    A, x = data(F, (8, 4), 1), data(F, (4,), 2)
    y, report = cluster.run(code, A, x, scheme=scheme, pieces=4,
                            faults=Faults(delay=(0.05, 0)), timeout=30)
    assert_exact(F, y, product(P31, A, x))
    first = min(p["received"] - w.share_sent for w in report.workers for p in w.packets)
    assert first >= (0.05 if scheme == "compfs" else 4 * 0.05)
