"""A worker paused past ``lost_after`` (SIGSTOP) and resumed (SIGCONT): a hand-started one,
given up on, is admitted again as a fresh worker once it is heard from (nothing it says
about its old jobs counts); a local one, given up on, is killed and replaced, its old
process gone."""
import math
import os
import signal
import time
from collections import Counter

import numpy as np
import pytest

import ffcode
from ffcode import MDS
from ffcode.runtime import Cluster, Faults
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.gate import Peer
from ffcode.runtime.master.roster import Roster
from ffcode.runtime.shared.transport import Message
from ffcode.runtime.shared.wire import Header, Kind

from helpers import alive, reap
from test_remote import LOOPBACK, exits, start_workers

F = ffcode.GF(2**31 - 1)
A, X = F.random((24, 8), seed=1), F.random(8, seed=2)


def lost_during_a_job(cluster, victim):
    """A job (R = 2 of 3, each piece pausing 0.6 s: longer than lost_after) during which
    the victim, SIGSTOPped, is given up on; exact from the other two."""
    os.kill(victim, signal.SIGSTOP)
    output, report = cluster.run(MDS(F, 2, 3), A, X, pieces=4, faults=Faults(delay=(0.6, 0)),
                                 timeout=30)
    assert np.array_equal(output, F.matmul(A, X))
    lost = [w for w in report.workers if w.lost]
    assert [w.pid for w in lost] == [victim]
    return report


@pytest.mark.bounded(90)
def test_a_paused_remote_worker_is_admitted_again(bounded, tmp_path):
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=3, lost_after=1.0, start_timeout=30,
                     insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 3, tmp_path)
            cluster.wait(timeout=30)
            pids = {proc.pid for proc in procs}
            victim = cluster.live()[0].pid
            lost_during_a_job(cluster, victim)
            assert len(cluster.live()) == 2
            os.kill(victim, signal.SIGCONT)
            assert {h.pid for h in cluster.wait(3, timeout=10)} == pids
            output, report = cluster.run(MDS(F, 3, 3), A, X, timeout=30)   # all three
            assert np.array_equal(output, F.matmul(A, X))
            assert {w.pid for w in report.workers} == pids and report.rejected == {}
        assert exits(procs) == [0, 0, 0]
    finally:
        reap(procs)


@pytest.mark.bounded(60)
def test_a_paused_local_worker_is_replaced_and_killed(bounded):
    with Cluster(3, lost_after=1.0) as cluster:
        pids = [h.pid for h in cluster.wait()]
        victim = pids[0]
        lost_during_a_job(cluster, victim)
        deadline = time.monotonic() + 10
        while alive(victim) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(victim)            # SIGKILL reaches a stopped process too
        live = {h.pid for h in cluster.wait(3, timeout=20)}
        assert victim not in live and set(pids[1:]) < live
        output, report = cluster.run(MDS(F, 3, 3), A, X, timeout=30)
        assert np.array_equal(output, F.matmul(A, X))


@pytest.mark.bounded(90)
def test_what_a_worker_admitted_again_says_about_its_old_job_does_not_count(bounded,
                                                                            tmp_path):
    """The victim, paused as a job starts, is given up on, resumed and admitted again while
    the job still runs (the others pause 1 s a piece): the packets it then sends for that
    job are rejected, and the job completes exactly from the others."""
    procs = []
    try:
        with Cluster(endpoint=LOOPBACK, n_workers=4, lost_after=1.0, start_timeout=30,
                     insecure=True) as cluster:
            procs = start_workers(cluster.endpoint, 4, tmp_path)
            victim = cluster.wait(timeout=30)[0].pid
            os.kill(victim, signal.SIGSTOP)
            slow = Faults(delay={i: (1.0, 0) for i in (1, 2, 3)})
            future = cluster.submit(MDS(F, 3, 4), A, X, pieces=4, faults=slow, timeout=30)
            deadline = time.monotonic() + 20
            while victim in {h.pid for h in cluster.live()} and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(victim, signal.SIGCONT)
            assert not future.done()
            output, report = future.result()
            assert np.array_equal(output, F.matmul(A, X))
            assert report.workers[0].pid == victim and report.workers[0].lost
            assert report.workers[0].packets == [] and report.rejected["unknown worker"] >= 1
            assert victim in {h.pid for h in cluster.wait(4, timeout=10)}
    finally:
        reap(procs, grace=10)


# -- the roster's rules, without processes -----------------------------------------------------

class FakeTransport:
    """The roster's side of a transport: messages handed in, what is sent and dropped kept."""
    session = 7

    def __init__(self):
        self.inbox, self.sent, self.rejected = [], [], Counter()

    def receive(self, timeout, until=math.inf):
        inbox, self.inbox = self.inbox, []
        yield from inbox

    def send(self, ident, frames, patience=2.0):
        self.sent.append((ident, Header.unpack(frames[0]).kind))

    def reject(self, reason, count=1):
        self.rejected[reason] += count


def hello(ident):
    return Message(ident, Header(Kind.HELLO, 0, 0),
                   wire.control(Header(Kind.HELLO, 0, 0), {"slot": -1, "pid": 0,
                                                          "host": "node"})[1:], Peer())


def said(roster, ident, kind, epoch=0):
    """What roster.receive yields of one message from ident."""
    roster.transport.inbox.append(Message(ident, Header(kind, FakeTransport.session, epoch),
                                          []))
    return list(roster.receive(0))


def test_the_roster_admits_a_lost_hand_started_worker_again_as_a_fresh_one():
    transport = FakeTransport()
    roster = Roster(transport, None, 3, lost_after=1.0)
    transport.inbox = [hello(b"a"), hello(b"b")]
    assert list(roster.receive(0)) == []
    a, b = roster.live()
    a.resident[5] = 0
    roster.lose(a, "silent for 1 s")
    assert roster.live() == [b]
    assert said(roster, b"a", Kind.HEARTBEAT) == []       # heard from: admitted again
    again = roster.handles[b"a"]
    assert again is not a and again.lost is None and a.lost == "silent for 1 s"
    assert roster.live() == [b, again] and again.order == 2 and again.resident == {}
    assert transport.sent == [(b"a", Kind.UNLOAD)]        # what it held is let go
    (handle, header, _), = said(roster, b"a", Kind.PACKET, epoch=3)
    assert handle is again                # a job that gave the old handle a task knows not it

    roster.exclude(b, "sent a wrong result")              # never again, and told to exit
    assert transport.sent[-1] == (b"b", Kind.SHUTDOWN)
    assert said(roster, b"b", Kind.PACKET, epoch=3) == []
    assert roster.handles[b"b"] is b and b.lost and transport.rejected["lost worker"] == 1
    assert transport.sent[-1] == (b"b", Kind.SHUTDOWN)    # again: it may have missed it

    roster.lose(again, "silent for 1 s")                  # found wrong in a job it was lost
    roster.exclude(a, "sent a wrong result")              # from: as it is now, too
    assert again.excluded and roster.handles[b"a"] is again
    assert said(roster, b"a", Kind.HEARTBEAT) == [] and roster.handles[b"a"] is again


class FakeEngine:
    def admit(self, slot, meta, peer):
        return slot

    def node(self, member):
        return None

    def gone(self, member):
        return None

    def kill(self, member):
        self.killed = member


def test_the_roster_never_admits_again_a_worker_its_engine_started():
    transport, engine = FakeTransport(), FakeEngine()
    roster = Roster(transport, engine, 1, lost_after=1.0)
    transport.inbox = [Message(b"a", Header(Kind.HELLO, 0, 0), wire.control(
        Header(Kind.HELLO, 0, 0), {"slot": 0, "pid": 0, "host": "node"})[1:], Peer())]
    list(roster.receive(0))
    a, = roster.live()
    roster.lose(a, "silent for 1 s")
    assert engine.killed == 0
    assert said(roster, b"a", Kind.PACKET, epoch=1) == []
    assert roster.handles[b"a"] is a and transport.rejected["lost worker"] == 1
