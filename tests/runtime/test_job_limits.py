"""A job's limits hold against slow collectors, wrong workers and absurd faults: the timeout
holds while packets keep coming, a wrong worker cannot make the master keep a collector per
shape it claims, a worker whose computation fails under adversaries is a wrong worker (not
the end of the job), and faults no worker can honour are refused."""
import math
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

import ffcode
from ffcode import GF, LCC, MDS, Faults, Packet, piece_packets
from ffcode.decoding import collectors as collect
from ffcode.decoding.robust import RobustDecoder
from ffcode.runtime.shared import wire
from ffcode.errors import JobTimeout, WorkerError
from ffcode.runtime.shared.wire import Header, Kind

from helpers import joined_dealer, reap

F = GF(2**31 - 1)
TESTS = os.path.dirname(os.path.abspath(__file__))


# -- the timeout holds while packets keep coming ------------------------------------------------

@pytest.mark.bounded(90)
def test_timeout_holds_while_packets_keep_coming(bounded):
    """m = 800 pieces: each packet costs the decoder more than the workers take to send the
    next (its rank times m·R), so messages are always waiting; and each worker pauses 50 ms
    per piece, so the m·R = 3200 packets take at least 3200 / (6 · 20/s) > 26 s to
    arrive: the job cannot finish within 1 s, and must say so within 5 times what the
    timeout and the stops' grace need."""
    m, timeout = 800, 1.0
    code = MDS(F, k=4, n_workers=6)
    A, x = F.random((4 * m, 16), seed=1), F.random((16,), seed=2)    # a row per piece
    with ffcode.Cluster(n_workers=6, lost_after=30) as cluster:
        data = cluster.load(code, A, scheme="compfs", pieces=m)   # encoded before the clock
        start = time.monotonic()
        with pytest.raises(JobTimeout, match="no output within the timeout") as e:
            cluster.run(data, x, timeout=timeout, faults=Faults(delay=(0.05, 0)))
        elapsed = time.monotonic() - start
    assert elapsed < 5 * (timeout + 0.5), f"a {timeout:g} s timeout returned after {elapsed:.1f} s"
    assert e.value.report.rank < e.value.report.needed == m * 4


# -- a sender claims one shape ------------------------------------------------------------------

def mds_job(m=2):
    """An MDS job of R = 2 on 4 workers (A = 1 corrected), its encoding and exact output."""
    code = MDS(F, k=2, n_workers=4)
    A, x = F.random((8, 5), seed=1), F.random((5, 3), seed=2)
    encoding = code.encode(A)
    return code, encoding, x, F.matmul(A, x)


def honest_packets(code, encoding, x, workers, m=2):
    return [p for w in workers
            for p in piece_packets(F, code.compute(encoding[w], x), m, w, seed=w)]


def test_shape_claims_cannot_multiply_collectors():
    """A wrong worker's 2,000 empty packets, each claiming another shape (rows known: the
    payload's other dimensions differ): its first claim gets a collector, every later one
    is invalid and excludes it. The collectors stay one per sender at most, and the honest
    packets decode exactly, naming it wrong."""
    code, encoding, x, expected = mds_job()
    vote = collect.for_job(encoding, 2, adversaries=1)
    coeffs = np.ones(2, F.dtype)
    vote.add(Packet(3, 0, coeffs, np.zeros((2, 0, 0), F.dtype)))     # its one claim
    refused = 0
    for i in range(1, 2000):
        try:
            vote.add(Packet(3, i, coeffs, np.zeros((2, 0, i), F.dtype)))
        except ValueError:
            refused += 1
    assert refused == 1999 and len(vote.collectors) == 1 and vote.excluded == {3}
    for packet in honest_packets(code, encoding, x, [0, 1, 2]):
        vote.add(packet)
    assert vote.complete and len(vote.collectors) == 2
    assert np.array_equal(vote.result(), expected)
    assert vote.wrong == [3] and not vote.counted(3, 0) and vote.counted(0, 0)


def test_a_second_claim_is_invalid_without_correcting():
    """Without wrong workers to correct (an LCC whose f is not row-linear: the packets tell
    the shape), a sender's second shape is refused and changes nothing; its first stands."""
    code = LCC(F, k=2, t=0, f="ffcode.functions:square", degree=2, n_workers=3)
    blocks = [F.random((4, 3), seed=1), F.random((4, 3), seed=2)]
    encoding = code.encode(blocks)
    vote = collect.for_job(encoding, 2)
    results = [code.compute(share) for share in encoding]
    packets = [list(piece_packets(F, y, 2, w, seed=w)) for w, y in enumerate(results)]
    vote.add(packets[0][0])
    liar = Packet(0, 1, packets[0][1].coeffs, np.zeros((2, 4), F.dtype), 4)
    with pytest.raises(ValueError, match=r"Worker 0 claims a local result of shape \(4, 4\), "
                                         r"having claimed \(4, 3\)"):
        vote.add(liar)
    assert len(vote.collectors) == 1 and vote.excluded == set()
    with pytest.raises(ValueError, match="Only a correcting vote excludes"):
        vote.exclude(0)
    for packet in packets[0][1:] + packets[1] + packets[2]:
        vote.add(packet)
    assert vote.complete
    assert all(np.array_equal(got, F.mul(b, b)) for got, b in zip(vote.result(), blocks))


@pytest.mark.parametrize("worker,error", [(-1, ValueError), (1.5, TypeError),
                                          ("1", TypeError)])
def test_exclude_checks_the_worker(worker, error):
    code, encoding, x, _ = mds_job()
    with pytest.raises(error):
        collect.for_job(encoding, 2, adversaries=1).exclude(worker)
    with pytest.raises(error):
        RobustDecoder(encoding, 2, 1).exclude(worker)


def test_robust_decoder_excluded_worker_no_longer_counts():
    """A worker excluded after sending: its packets are dropped and the decoder decides on
    the rest (it may now complete); its next packets are refused."""
    code, encoding, x, expected = mds_job()
    decoder = RobustDecoder(encoding, 2, 1, seed=0)
    y = F.add(code.compute(encoding[3], x), 1)                        # worker 3 is wrong
    wrong = list(piece_packets(F, y, 2, 3, seed=3))
    packets = honest_packets(code, encoding, x, [0, 1])
    for packet in packets + wrong[:1] + honest_packets(code, encoding, x, [2])[:1]:
        decoder.add(packet)
    assert not decoder.complete                     # 3 agreeing workers of 4 not yet heard
    decoder.exclude(3)
    with pytest.raises(ValueError, match="Worker 3 is excluded"):
        decoder.add(wrong[1])
    decoder.add(honest_packets(code, encoding, x, [2])[1])
    assert decoder.complete and decoder.wrong == [3] and not decoder.counted(3, 0)
    assert np.array_equal(decoder.result(), expected)


def test_robust_whole_results_excluded_worker():
    """Whole results (classic): an excluded worker's result is dropped, the rest decide."""
    code, encoding, x, expected = mds_job(1)
    robust = collect.Robust(encoding, 1)
    results = {w: code.compute(encoding[w], x) for w in range(4)}
    robust.add(Packet(3, 0, np.ones(1, F.dtype), F.add(results[3], 1)))
    robust.add(Packet(0, 0, np.ones(1, F.dtype), results[0]))
    robust.add(Packet(1, 0, np.ones(1, F.dtype), results[1]))
    assert not robust.complete                      # 2 agree, 1 does not: undecided
    robust.exclude(3)
    robust.add(Packet(2, 0, np.ones(1, F.dtype), results[2]))
    assert robust.complete and robust.wrong == [3]
    assert np.array_equal(robust.result(), expected)
    with pytest.raises(ValueError, match="Worker 3 is excluded"):
        robust.add(Packet(3, 0, np.ones(1, F.dtype), results[3]))


class Flooder(threading.Thread):
    """A DEALER that joins a remote cluster as a worker and answers its JOB with ``count``
    empty packets (pieces of ``rows`` rows, m = ``pieces``), each claiming another shape."""

    def __init__(self, endpoint, count, pieces, rows):
        super().__init__(daemon=True)
        self.endpoint, self.count, self.pieces, self.rows = endpoint, count, pieces, rows
        self.stopping = threading.Event()

    def run(self):
        context, dealer = joined_dealer(self.endpoint, "flooder")
        try:
            while not self.stopping.is_set():
                if not dealer.poll(50):
                    continue
                frames = dealer.recv_multipart()
                header = Header.unpack(frames[0])
                if header.kind == Kind.SHUTDOWN:
                    return
                if header.kind == Kind.STOP:
                    dealer.send_multipart(wire.control(Header(
                        Kind.STOPPED, header.session, header.epoch, header.worker)))
                if header.kind == Kind.JOB:
                    self.flood(dealer, header)
        finally:
            dealer.close()
            context.term()

    def flood(self, dealer, job):
        m, piece = self.pieces, -(-self.rows // self.pieces)
        for i in range(self.count):
            message = wire.packet(Header(Kind.PACKET, job.session, job.epoch, job.worker,
                                         i % m, self.rows),
                                  np.ones(m, F.dtype), np.zeros((piece, 0, i), F.dtype))
            while not dealer.poll(50, zmq.POLLOUT):     # the master is not reading
                if self.stopping.is_set():
                    return
            dealer.send_multipart(message)


@pytest.mark.bounded(90)
def test_a_flood_of_shape_claims_costs_the_master_nothing(bounded):
    """adversaries=1: worker 3 answers with 8,000 empty packets, each claiming another
    shape, while the honest workers take 0.5 s. Its first claim is kept (its own shape),
    its second is invalid and makes it a wrong worker, and everything after is dropped
    unread: the output is exact, and it is named wrong."""
    code = MDS(F, k=2, n_workers=4)                 # R = 2: A = 1 needs 4
    A, x = F.random((8, 5), seed=1), F.random((5, 3), seed=2)
    cluster = ffcode.Cluster(4, endpoint="tcp://127.0.0.1:*", start_timeout=60,
                             lost_after=60, insecure=True)
    procs = [subprocess.Popen([sys.executable, "-m", "ffcode", "worker", "--connect",
                               cluster.endpoint], cwd=TESTS) for _ in range(3)]
    flooder = Flooder(cluster.endpoint, 8000, pieces=2, rows=4)
    try:
        cluster.wait(3)
        flooder.start()                             # the last to connect: worker 3
        cluster.wait()
        slow = Faults(delay={w: (0.25, 0) for w in range(3)})
        output, report = cluster.run(code, A, x, scheme="compfs", pieces=2, adversaries=1,
                                     faults=slow, timeout=30)
    finally:
        flooder.stopping.set()
        flooder.join(5)
        cluster.close()
        reap(procs, grace=10)
    assert np.array_equal(output, F.matmul(A, x))
    assert report.wrong == [3] and report.workers[3].host == "flooder"
    assert len(report.workers[3].packets) == 1 and report.workers[3].used == 0
    assert report.rejected["invalid packet"] == 1 and report.rejected["wrong worker"] >= 1


# -- a worker that fails under adversaries is a wrong worker -------------------------------------

def marked(F, X):
    """X * X, except on a marked share (its first element in MARKS): it raises."""
    first = int(np.asarray(X).flat[0])
    if first in MARKS:
        raise ArithmeticError(f"share marked {first}")
    return F.mul(X, X)


# The workers import this module: the marks are fixed here, for two jobs' data. t = 0: the
# shares are the same at every encoding.
CODE = LCC(F, k=2, t=0, f=marked, degree=2, n_workers=6)     # R = 3; A = 1 needs 5
FAILING = {1: {3}, 3: {1, 3, 4}}                # one job's data -> the workers that fail
DATA = {n: [F.random((4, 3), seed=10 * n), F.random((4, 3), seed=10 * n + 1)]
        for n in FAILING}
FIRSTS = {n: [int(np.asarray(share[0]).flat[0]) for share in CODE.encode(blocks)]
          for n, blocks in DATA.items()}
MARKS = {FIRSTS[n][w] for n, workers in FAILING.items() for w in workers}


def run_marked(cluster, failing, **options):
    """Run on the data whose ``failing`` workers' computations raise; the others wait
    1 s first, so that the failures arrive before the job could decode without them."""
    workers = FAILING[failing]
    assert {w for w in range(6) if FIRSTS[failing][w] in MARKS} == workers
    slow = Faults(delay={w: (0.5, 0) for w in range(6) if w not in workers})  # per piece
    return cluster.run(CODE, DATA[failing], scheme="cfs", pieces=2, timeout=30,
                       faults=slow, **options)


@pytest.fixture
def cluster(bounded):
    with ffcode.Cluster(n_workers=6, lost_after=30) as cluster:
        yield cluster


@pytest.mark.bounded(60)
def test_failed_worker_under_adversaries_is_wrong(cluster):
    """adversaries=1: worker 3's computation raises; the honest five suffice, so the job
    returns the exact output, names worker 3 wrong and the cluster excludes it."""
    before = {h.slot: h for h in cluster.wait(6)}
    output, report = run_marked(cluster, 1, adversaries=1)
    assert all(np.array_equal(got, F.mul(b, b)) for got, b in zip(output, DATA[1]))
    assert report.wrong == [3] and report.workers[3].used == 0
    assert before[3].lost.startswith("excluded")
    assert all(before[i].lost is None for i in range(6) if i != 3)


@pytest.mark.bounded(60)
def test_failed_worker_without_adversaries_fails_fast(cluster):
    """adversaries=0: a computation that raises fails the job at once (a user's f that
    raises fails everywhere)."""
    with pytest.raises(WorkerError, match=r"worker 3 failed: ArithmeticError: share marked"):
        run_marked(cluster, 1)


# -- faults no worker can honour ------------------------------------------------------------------

@pytest.mark.parametrize("faults,message", [
    ({"slowdown": {0: 1e308}}, r"'slowdown' for worker 0 must be at most 1000000.0, not 1e\+308"),
    ({"slowdown": {2: 1e6 + 1}}, r"'slowdown' for worker 2 must be at most"),
    ({"slowdown": {1: 10**400}}, r"'slowdown' values must be finite, not an integer of 1329 "
                                 r"bits \(worker 1\)"),
    ({"slowdown": {3: math.inf}}, r"'slowdown' values must be finite, not inf \(worker 3\)"),
    ({"link_rate": {1: 1e-9}}, r"'link_rate' for worker 1 must be at least 1e-06"),
    ({"link_rate": {4: 10**400}}, r"'link_rate' values must be finite.*\(worker 4\)"),
    ({"crash_after": {0: 10**30}}, r"'crash_after' for worker 0 must be at most 4294967296"),
    ({"hang_after": {5: 2**32 + 1}}, r"'hang_after' for worker 5 must be at most 4294967296"),
    ({"delay": (1e308, 0)}, r"'delay' for every worker needs shift, mean <= 1e\+06 s"),
    ({"delay": {2: (0, 1e7)}}, r"'delay' for worker 2 needs shift, mean <= 1e\+06 s"),
    ({"delay": {2: (math.nan, 0)}}, r"'delay' values must be finite, not nan \(worker 2\)"),
], ids=lambda v: str(v)[:40])
def test_faults_no_worker_can_honour_are_refused(faults, message):
    with pytest.raises(ValueError, match=message):
        Faults(**faults)


def test_faults_at_their_limits_are_accepted():
    faults = Faults(slowdown={0: 1e6}, link_rate={0: 1e-6}, crash_after={1: 2**32},
                    hang_after={2: 2**32}, delay={3: (1e6, 1e6)})
    assert faults.slowdown == {0: 1e6} and faults.delay == {3: (1e6, 1e6)}
    plan = faults.for_worker(3, 2)
    assert all(1e6 <= pause < math.inf for pause in plan.delays)
