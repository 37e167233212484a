"""A small job's workers answer once: every packet of a worker's task in one ANSWER, done
implied, and no stop sent. The answer carries exactly the packets the worker would have
streamed, in order, for every scheme; the plan chooses it only where nothing watches the
job piece by piece; on resident data a job's tasks are made once and reused; on local
workers every output is exact and no worker is stopped."""
import contextlib
import dataclasses
import os
import signal

import numpy as np
import pytest

from ffcode import GF, MDS, Cluster, Faults, PolynomialCode
from ffcode.runtime.master.jobs import ONCE_BYTES, Options, Plan
from ffcode.runtime.master.resident import Residents
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.task import job_message, read_task
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.pieces import piece_packets
from ffcode.runtime.worker.coded import answer, compute
from ffcode.runtime.worker.process import Job
from ffcode.schemes import Scheme

from helpers import scheme_registered, shared_cluster

F = GF(2**61 - 1)
A, B = F.random((8, 6), seed=1), F.random((6, 4), seed=2)
TWO_EACH = ((0, 3), (1, 4), (2, 5), (), (), ())      # three workers, two shares each

cluster = shared_cluster(4, lost_after=5.0)


def plan(scheme="compfs", assignment=TWO_EACH, **options):
    return Plan(PolynomialCode(F, 2, 2, 6), (A, B),
                Options(scheme=scheme, pieces=2, seed=5, **options), assignment)


def sent_by(p, worker, once):
    """What ``worker`` sends for its task of plan ``p``, answering once or streaming:
    [(header as received, frames)]."""
    task, arrays = p.tasks[worker]
    task = dataclasses.replace(task, payload=dataclasses.replace(task.payload, once=once))
    header = Header(Kind.JOB, 1, 1, worker)
    job = Job(header, *read_task(job_message(header, task, arrays)[1:]), store={})
    out = []
    compute(job, lambda head, frames: out.append((Header.unpack(head.pack()), frames)))
    return out


@pytest.mark.parametrize("scheme", list(Scheme))
def test_an_answer_carries_the_packets_a_worker_streams(scheme):
    p = plan(scheme)
    for worker in (0, 2):
        streamed, answered = sent_by(p, worker, False), sent_by(p, worker, True)
        assert [h.kind for h, _ in streamed[-1:]] == [Kind.DONE]
        packets = streamed[:-1]
        assert len(packets) == 2 * p.pieces
        (head, frames), = answered
        assert head.kind == Kind.ANSWER and head.worker == worker
        coeffs, payloads = wire.read_answer(head, frames, F.dtype)
        assert len(coeffs) == len(packets)
        for r, (packet, (c, y)) in enumerate(packets):
            assert packet.index == r and head.rows == packet.rows
            assert np.array_equal(coeffs[r], c) and np.array_equal(payloads[r], y)
        assert head.compute > 0             # the time its packets took, in all


class Backwards(Scheme):
    """Whole results sent as m random combinations of their row pieces, the last first."""

    def packets_of(self, F, computed, m, worker, seed=None):
        return reversed(list(piece_packets(F, computed, m, worker, seed=seed)))


# Bound at the top level of this module: the workers import it as "<module>:BACKWARDS".
BACKWARDS = Backwards("backwards")


@pytest.fixture
def backwards():
    with scheme_registered(BACKWARDS) as scheme:
        yield scheme


def test_packets_numbered_otherwise_leave_one_by_one(backwards):
    p = plan("backwards")
    assert p.once
    sent = sent_by(p, 0, True)
    assert [h.kind for h, _ in sent] == [Kind.PACKET] * 4 + [Kind.DONE]
    assert [h.index for h, _ in sent[:-1]] == [1, 0, 3, 2]     # share 0's, then share 3's
    assert [h.index for h, _ in sent_by(p, 0, False)[:-1]] == [1, 0, 3, 2]


def test_packets_that_do_not_stack_are_not_answered_together():
    class Stub:
        def header(self, kind, index=0, rows=0, compute=0.0):
            return Header(kind, 1, 1, 0, index, rows, 0.0, compute)

    one, sent = np.ones(2, np.uint64), []
    ragged = [(index, rows, 0.0, one, one) for index, rows in enumerate((2, 3))]
    shapes = [(index, 0, 0.0, one, np.ones(n, np.uint64)) for index, n in enumerate((2, 3))]
    for packets in (ragged, shapes):
        assert not answer(Stub(), packets, lambda *message: sent.append(message))
    assert sent == []
    assert answer(Stub(), shapes[:1], lambda *message: sent.append(message))
    assert [head.kind for head, _ in sent] == [Kind.ANSWER]


@pytest.mark.bounded(60)
def test_a_scheme_defined_here_is_exact_answering_once(bounded, cluster, backwards):
    output, report = cluster.run(PolynomialCode(F, 2, 2, 4), A, B, scheme="backwards",
                                 pieces=2, timeout=30)
    assert np.array_equal(output, F.matmul(A, B)) and report.stop_latency == []


def test_the_plan_answers_once_only_where_nothing_watches_the_pieces():
    assert plan().once and all(task[0].payload.once for task in plan().tasks if task)
    assert not plan(faults=Faults(slowdown={1: 2.0})).once
    assert plan(faults=Faults(seed=9)).once             # a seed alone injects nothing
    assert not plan(progress=lambda rank, needed: None).once
    assert not plan(adversaries=1, assignment=tuple((k,) for k in range(6))).once
    big = F.random((ONCE_BYTES // 8 // 6 + 64, 6), seed=3)
    large = Plan(PolynomialCode(F, 2, 2, 6), (big, B), Options(scheme="compfs", pieces=2),
                 TWO_EACH)
    assert not large.once and not any(task[0].payload.once for task in large.tasks if task)


def test_jobs_on_resident_data_reuse_their_tasks():
    code = MDS(F, 2, 3)
    assignment = ((0,), (1,), (2,))
    data = Residents(session=1).add(code, (F.random((6, 4), seed=4),),
                                    Options(scheme="classic", pieces=2, assignment=assignment),
                                    3, [None] * 3, remote=False)
    assert data.assignment == assignment

    def on(x, **options):
        return Plan(code, (x,), Options(pieces=2, **options).resolved(Scheme.CLASSIC),
                    assignment, resident=data)

    x, y = F.random(4, seed=1), F.random(4, seed=2)
    first, second = on(x), on(y)
    for one, two in zip(first.tasks, second.tasks):
        assert one[0] is two[0] and one[1][0] is x and two[1][0] is y
    wider = on(F.random((4, 2), seed=3))                # other arguments: other tasks
    assert wider.tasks[0][0] is not first.tasks[0][0]
    faulty = on(x, faults=Faults(slowdown={0: 2.0}))
    assert faulty.tasks[0][0] is not first.tasks[0][0] and not faulty.once
    cfs = [on(x, scheme="cfs") for _ in range(2)]       # fresh coefficient seeds each job
    assert cfs[0].tasks[0][0].payload.seeds != cfs[1].tasks[0][0].payload.seeds


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["compfs", "classic", "systematic", "cfs", "uncoded"])
def test_small_jobs_answered_once_are_exact_and_stop_nobody(bounded, cluster, scheme):
    code = MDS(F, 2, 4)
    data = cluster.load(code, A, scheme=scheme if scheme in ("compfs", "uncoded")
                        else "classic", pieces=2)
    try:
        for seed in range(6):
            x = F.random(6, seed=seed)
            output, report = cluster.run(data, x, scheme=scheme, timeout=30)
            assert np.array_equal(output, F.matmul(A, x))
            assert report.stop_latency == [] and report.wasted_after_stop == 0
            assert all(w.stopped is None for w in report.workers)
            answered = [w for w in report.workers if w.packets]
            assert answered and all(w.done is not None for w in answered)
        output, report = cluster.run(code, A, F.random(6, seed=9), scheme=scheme, pieces=2,
                                     timeout=30)
        assert np.array_equal(output, F.matmul(A, F.random(6, seed=9)))
    finally:
        cluster.unload(data)


@pytest.mark.bounded(60)
def test_a_job_with_faults_still_streams_and_stops(bounded, cluster):
    code = MDS(F, 2, 4)
    x = F.random(6, seed=1)
    output, report = cluster.run(code, A, x, scheme="compfs", pieces=2, timeout=30,
                                 faults=Faults(delay={3: (2.0, 0.0)}))
    assert np.array_equal(output, F.matmul(A, x))
    assert report.workers[3].stopped is not None        # stopped in its first pause


@pytest.mark.bounded(90)
def test_small_jobs_queued_behind_a_long_one_answer_once_exactly(bounded, cluster):
    """Small jobs submitted while a long job holds every worker's compute thread wait for
    their turns there, then answer once each: all exact, the long one too; one of them
    cancelled while it waits sends nothing and the rest go on."""
    code = MDS(F, 2, 4)
    long_job = cluster.submit(code, A, F.random(6, seed=1), scheme="compfs", pieces=4,
                              timeout=60, faults=Faults(delay=(0.3, 0)))
    xs = [F.random(6, seed=10 + i) for i in range(4)]
    small = [cluster.submit(code, A, x, scheme="classic", timeout=60) for x in xs]
    assert small[1].cancel()
    for i, (future, x) in enumerate(zip(small, xs)):
        if i != 1:
            output, report = future.result(timeout=60)
            assert np.array_equal(output, F.matmul(A, x)) and report.stop_latency == []
    output, _ = long_job.result(timeout=60)
    assert np.array_equal(output, F.matmul(A, F.random(6, seed=1)))
    assert small[1].cancelled() and small[1].report.cancelled


@pytest.mark.bounded(60)
def test_a_worker_frozen_before_answering_is_given_up_on_as_the_job_ends(bounded):
    """No stop goes out to catch it: the job decodes from the others, and as it ends the
    master looks at the worker that never answered, finds its process frozen, and replaces
    it before the next job (whose share is reloaded to the new process); the heartbeats
    alone would take lost_after (30 s) to tell."""
    with Cluster(4, lost_after=30.0) as cluster:
        data = cluster.load(MDS(F, 2, 4), A)
        victim = cluster.live()[3]
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            x, y = F.random(6, seed=1), F.random(6, seed=2)
            output, report = cluster.run(data, x, timeout=30)
            assert np.array_equal(output, F.matmul(A, x)) and report.stop_latency == []
            assert report.workers[3].done is None
            output, report = cluster.run(data, y, timeout=30)
            assert np.array_equal(output, F.matmul(A, y))
            assert report.workers[3].pid != victim.pid and report.reloaded == [3]
        finally:
            with contextlib.suppress(ProcessLookupError):    # killed when given up on
                os.kill(victim.pid, signal.SIGCONT)
