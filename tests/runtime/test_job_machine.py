"""The master's job run as a state machine (runtime/master/jobrun.py), driven by events
on a fake clock (jobrun_harness): its timeouts, lost and failed workers, stops and their
acknowledgements, cancel, late packets, wrong workers and rejected messages, asserted
exactly on its instructions and its report, without processes or sleeps."""
import numpy as np
import pytest

from ffcode.errors import JobFailed, JobTimeout, VerificationError, WorkerError
from ffcode.runtime.master import events as ev
from ffcode.runtime.master.jobrun import (DRAINING, ENDED, RUNNING, STOP_GRACE,
                                          STOP_PATIENCE, TASK_PATIENCE)
from ffcode.runtime.shared.wire import Kind

from jobrun_harness import A, F, X, Harness, coded_plan, kinds


def started(**plan):
    job = Harness(coded_plan(**plan))
    assert job.start() == []
    return job


def test_tasks_go_out_in_turn_with_the_time_left():
    job = Harness(coded_plan(timeout=3.0), encode=0.5)
    job.slow = 1.0                              # each send takes a second
    assert job.start() == []
    assert job.sends == [(0, Kind.JOB, TASK_PATIENCE), (1, Kind.JOB, 1.5),
                         (2, Kind.JOB, 0.5)]    # 3 - 0.5 encoding - the sends before
    timelines = job.run.report.workers
    assert [t.share_sent for t in timelines] == [1.0, 2.0, 3.0]
    assert all(t.shipped > 0 and t.reloaded == 0 for t in timelines)
    assert job.run.state == RUNNING and job.run.sent == 3.0


def test_timeout_while_sending_the_tasks():
    job = Harness(coded_plan(timeout=1.5))
    job.slow = 1.0
    out = job.start()
    assert [s[:2] for s in job.sends] == [(0, Kind.JOB), (1, Kind.JOB), (0, Kind.STOP),
                                          (1, Kind.STOP), (2, Kind.STOP)]
    assert kinds(out) == ["Ended", "Fail"]
    error = out[-1].error
    assert isinstance(error, JobTimeout) and error.report is job.run.report
    assert str(error) == ("rank 0/2 no output within the timeout (sending the tasks); "
                          "workers 0, 1 and 2 still running")


def test_timeout_on_the_clock_and_nothing_before():
    job = started(timeout=2.0)
    assert job.tick(2.0) == [] and job.run.state == RUNNING    # at the deadline: not past
    out = job.tick(2.001)
    assert job.stops() == [0, 1, 2]
    assert [patience for *_, patience in job.sends[3:]] == [STOP_PATIENCE] * 3
    assert kinds(out) == ["Ended", "Fail"] and job.run.state == ENDED
    assert str(out[-1].error) == ("rank 0/2 no output within the timeout; workers 0, 1 and "
                                  "2 still running")
    assert job.run.report.rank == 0 and job.run.plan is None   # what it held let go


def test_timeout_counts_the_encoding():
    job = Harness(coded_plan(timeout=2.0), encode=0.75)
    job.start()
    assert job.tick(1.25) == []
    assert kinds(job.tick(1.2501)) == ["Ended", "Fail"]


def test_stops_go_out_within_the_grace():
    job = started()
    job.slow = 0.1                                  # each stop takes its patience
    job.feed(job.at(1.0).packet(0), job.packet(1))
    assert job.stops() == [0, 1, 2]
    patience = [p for place, kind, p in job.sends if kind == Kind.STOP]
    assert patience == pytest.approx([STOP_PATIENCE, STOP_PATIENCE, STOP_GRACE - 0.2])


def test_stops_the_moment_it_is_decodable_then_drains_the_acks():
    job = started()
    assert job.feed(job.at(0.5).packet(0)) == []
    assert job.stops() == []
    out = job.feed(job.at(0.75).packet(1))
    assert job.stops() == [0, 1, 2] and out == []
    run, report = job.run, job.run.report
    assert run.state == DRAINING and run.waiting == {0, 1, 2}
    assert report.compute == 0.75 and report.decode == 0.0 and report.total == 0.75
    assert job.feed(job.at(0.8).stopped(0), job.stopped(2)) == []
    assert job.tick(0.75 + STOP_GRACE - 0.001) == []       # within the grace: waits
    out = job.feed(job.stopped(1))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]
    output, outcome = out[-1].output, out[-1].report
    assert np.array_equal(output, F.matmul(A, X)) and outcome is report
    assert report.stop_latency == pytest.approx([0.05, 0.05, 0.75 + STOP_GRACE - 0.001 -
                                                 0.75])
    assert report.quiet == pytest.approx(STOP_GRACE - 0.001)
    assert [t.stopped for t in report.workers] == pytest.approx([0.8, 0.999, 0.8])
    assert report.wrong == [] and report.rank == 2 and report.cancelled is False
    speeds = out[0].speeds                 # a packet of 4 pieces' work over its time
    assert speeds == pytest.approx((4 / 0.5, 4 / 0.75, 4 / 0.75))


def test_without_waiting_for_stops_the_output_goes_out_before_the_acks():
    """wait_for_stops=False: Resolve the moment it is decoded, the stops' acks drained
    after it into the same report, then Ended; a cancel while draining ends it quietly."""
    job = started(wait_for_stops=False)
    job.feed(job.at(0.5).packet(0))
    out = job.feed(job.at(0.75).packet(1))
    assert kinds(out) == ["Resolve"] and job.run.state == DRAINING
    report = out[0].report
    assert np.array_equal(out[0].output, F.matmul(A, X)) and report.stop_latency == []
    assert job.feed(job.at(0.8).stopped(0), job.stopped(2)) == []
    out = job.feed(job.stopped(1))
    assert kinds(out) == ["RecordSpeeds", "Ended"] and job.run.state == ENDED
    assert report.stop_latency == pytest.approx([0.05, 0.05, 0.05])
    assert [t.stopped for t in report.workers] == pytest.approx([0.8, 0.8, 0.8])
    job = started(wait_for_stops=False)
    job.feed(job.at(1.0).packet(0), job.packet(2))
    out = job.feed(ev.Cancel(1.1))
    assert kinds(out) == ["Ended"] and job.run.report.cancelled is False


def test_the_grace_ends_the_draining_without_every_ack():
    job = started()
    job.feed(job.at(1.0).packet(0), job.packet(2))
    job.feed(job.stopped(0))
    assert job.tick(1.0 + STOP_GRACE - 0.01) == []
    assert kinds(job.tick(1.0 + STOP_GRACE)) == ["RecordSpeeds", "Ended", "Resolve"]
    assert job.run.report.stop_latency == [0.0]


def test_a_worker_that_cannot_answer_is_not_waited_for():
    job = started()
    job.silent = {1}                        # its process is gone: no ack will come
    job.feed(job.at(1.0).packet(0), job.packet(2))
    assert job.run.waiting == {0, 2}
    out = job.feed(job.stopped(0), job.stopped(2))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]


def test_late_packets_after_the_stop_are_wasted():
    job = started()
    job.feed(job.at(1.0).packet(0), job.packet(1))
    job.feed(job.at(1.05).packet(2))                # the straggler's, after the stop
    job.feed(job.stopped(2), job.stopped(0), job.stopped(1))
    report = job.run.report
    assert report.wasted_after_stop == 1 and len(report.workers[2].packets) == 0
    assert report.quiet == pytest.approx(0.05)


def test_a_done_worker_is_not_stopped_and_its_done_counts():
    job = started()
    job.feed(job.at(0.5).packet(0), job.at(0.6).done(0))
    assert job.run.report.workers[0].done == 0.6 and 0 in job.run.finished
    job.feed(job.at(1.0).packet(1))
    assert job.stops() == [1, 2]


def test_a_lost_worker_fails_the_job_when_the_rest_cannot_decode():
    job = started()
    job.feed(job.at(0.5).packet(0), job.done(0))
    job.feed(ev.Lost(1, "its process exited", 0.6), ev.Lost(2, "silent for 2 s", 0.6))
    out = job.tick(0.7)
    assert kinds(out) == ["Ended", "Fail"] and job.stops() == []
    error = out[-1].error
    assert isinstance(error, JobFailed) and not isinstance(error, VerificationError)
    assert str(error) == ("rank 1/2 after every live worker finished; workers 1 and 2 lost "
                          "(1: its process exited; 2: silent for 2 s)")
    assert [t.lost for t in job.run.report.workers] == [None, "its process exited",
                                                        "silent for 2 s"]


def test_a_lost_worker_is_not_needed_when_the_rest_decode():
    job = started()
    job.feed(ev.Lost(1, "its process exited", 0.2))
    assert job.tick(0.3) == []
    out = job.feed(job.at(0.5).packet(0), job.packet(2))
    assert job.stops() == [0, 2]
    out = job.feed(job.stopped(0), job.stopped(2))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]
    assert np.array_equal(out[-1].output, F.matmul(A, X))
    assert out[0].speeds[1] is None                 # lost without a packet: unknown


def test_a_worker_that_cannot_take_its_task_is_lost():
    job = Harness(coded_plan())
    job.failing = {2: "not taking messages for 2 s"}
    job.start()
    assert job.run.report.workers[2].lost == "not taking messages for 2 s"
    assert job.run.report.workers[2].share_sent is None and 2 in job.run.finished
    job.feed(job.at(0.5).packet(0), job.packet(1))
    assert job.stops() == [0, 1]


def test_cancel_stops_its_workers_and_lets_go():
    job = started()
    job.feed(job.at(0.5).packet(0))
    out = job.feed(ev.Cancel(0.6))
    assert kinds(out) == ["Ended"] and job.stops() == [0, 1, 2]
    assert job.run.report.cancelled is True and job.run.report.rank == 1
    assert job.run.state == ENDED and job.feed(ev.Cancel(0.7)) == []
    assert job.tick(9.0) == []                      # ended: the clock says nothing more


def test_cancel_before_it_starts_sends_nothing():
    job = Harness(coded_plan())
    assert kinds(job.feed(ev.Cancel(0.0))) == ["Ended"] and job.sends == []


def test_close_fails_the_job_without_stops():
    job = started()
    error = JobFailed("The cluster was closed during the job.")
    out = job.feed(ev.Abort(error, 0.5, stop=False))
    assert out == [ev.Ended(job.run.report), ev.Fail(error)] and job.stops() == []
    assert error.report is job.run.report


def test_a_failed_worker_fails_the_job_at_once_without_adversaries():
    job = started()
    out = job.feed(job.at(0.4).failed(1, "ArithmeticError: share marked 7"))
    assert kinds(out) == ["Ended", "Fail"] and job.stops() == [0, 1, 2]
    assert isinstance(out[-1].error, WorkerError)
    assert str(out[-1].error) == "rank 0/2 worker 1 failed: ArithmeticError: share marked 7"


def test_failed_workers_are_named_when_the_job_cannot_finish():
    """adversaries=1 on five workers and three computations raise: the two honest
    workers cannot decide the output, and the failure says why, with each worker's error
    (the master's side of test_job_limits' process test, which took 8 s)."""
    job = started(n=5, adversaries=1)
    job.feed(*(job.at(0.1).failed(place, f"ArithmeticError: share marked {place}")
               for place in (1, 3, 4)))
    assert job.run.unusable == {1, 3, 4} and job.run.state == RUNNING
    for place in (0, 2):
        assert job.feed(job.at(0.5).packet(place), job.done(place)) == []
    out = job.tick(0.6)
    assert kinds(out) == ["Ended", "Fail"] and isinstance(out[-1].error, JobFailed)
    assert str(out[-1].error) == (
        "rank 2/4 after every live worker finished; workers 1, 3 and 4 failed (1: "
        "ArithmeticError: share marked 1; 3: ArithmeticError: share marked 3; 4: "
        "ArithmeticError: share marked 4)")


def test_a_wrong_worker_is_excluded_after_a_verified_output():
    checked = []
    job = Harness(coded_plan(n=5, adversaries=1),
                  check=lambda output, report: checked.append(report.wrong))
    job.start()
    job.feed(*(job.at(0.5).packet(place, corrupt=place == 3) for place in (3, 0, 1, 2)))
    assert job.run.state == DRAINING and job.run.report.wrong == [3]
    out = job.feed(*(job.stopped(place) for place in job.stops()))
    assert kinds(out) == ["RecordSpeeds", "Exclude", "Ended", "Resolve"]
    assert out[1] == ev.Exclude(3, "sent a wrong result in job 1")
    assert [r["innovative"] for r in job.run.report.workers[3].packets] == [False]
    assert checked == [[3]] and np.array_equal(out[-1].output, F.matmul(A, X))


def test_a_wrong_worker_is_not_excluded_when_the_output_fails_its_check():
    def check(output, report):
        raise VerificationError("the output fails its check")
    job = Harness(coded_plan(n=5, adversaries=1), check=check)
    job.start()
    job.feed(*(job.at(0.5).packet(place, corrupt=place == 3) for place in (3, 0, 1, 2)))
    out = job.feed(*(job.stopped(place) for place in job.stops()))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Fail"]
    assert str(out[-1].error) == "the output fails its check"
    assert out[-1].error.report is job.run.report


def test_a_wrong_workers_later_packets_are_not_read():
    job = started(n=5, adversaries=1)
    job.feed(job.at(0.2).packet(3, payload=np.zeros((1, 1), np.uint32)))
    assert job.run.unusable == {3}
    assert job.feed(job.packet(3)) == [ev.Reject("wrong worker")]
    assert job.run.report.rejected == {}            # counted as the job ends
    job.feed(ev.Cancel(0.3))
    assert job.run.report.rejected == {"invalid packet": 1, "wrong worker": 1}


@pytest.mark.parametrize("make,reason", [
    (lambda job: job.message(None, job.header(Kind.DONE, 0), []), "unknown worker"),
    (lambda job: job.packet(1, header_place=2), "unknown worker"),
    (lambda job: job.message(1, job.header(Kind.FAILED, 1), [b"{not json"]), "malformed"),
    (lambda job: job.message(1, job.header(Kind.DONE, 1), [b"[1]"]), "malformed"),
    (lambda job: job.message(1, job.header(Kind.PACKET, 1, itemsize=8, shape=(2,)),
                             [b"\0" * 4, b"\0" * 16]), "malformed"),
    (lambda job: job.packet(1, index=0, payload=np.zeros((5,), np.uint32)), "invalid packet"),
], ids=["no worker of the job", "another place's", "failed, garbled", "done, garbled",
        "payload of 8-byte elements", "wrong shape"])
def test_a_bad_message_is_rejected_with_its_reason(make, reason):
    job = started()
    assert job.feed(make(job)) == [ev.Reject(reason)]
    assert job.run.state == RUNNING and job.run.rejected == {reason: 1}


def test_a_packet_of_no_share_of_the_worker_is_invalid():
    job = started()
    header = job.header(Kind.PACKET, 1, index=5, rows=2, itemsize=4, shape=(2,))
    out = job.feed(job.message(1, header, [np.ones(1, np.uint32), np.ones(2, np.uint32)]))
    assert out == [ev.Reject("invalid packet")]


def test_progress_as_the_rank_grows_and_once_decoded():
    job = Harness(coded_plan(progress=lambda rank, needed: None))
    out = job.start()
    assert [(p.rank, p.needed) for p in out] == [(0, 2)]
    assert [(p.rank, p.needed) for p in job.feed(job.at(0.2).packet(0))] == [(1, 2)]
    assert job.feed(job.packet(0)) == []            # no rank added: no call
    out = job.feed(job.at(0.3).packet(1))
    assert [(p.rank, p.needed) for p in out] == [(2, 2)]


def test_every_message_of_a_started_job_answers_only_with_instructions():
    """A fuzz of the machine's inputs: whatever comes, it answers with instructions and
    never raises."""
    rng = np.random.default_rng(0)
    for trial in range(20):
        job = started(n=5, adversaries=int(rng.integers(2)))
        for step in range(30):
            place = int(rng.integers(5))
            make = [lambda: job.packet(place, corrupt=bool(rng.integers(2))),
                    lambda: job.done(place), lambda: job.stopped(place),
                    lambda: job.failed(place), lambda: ev.Lost(place, "gone", job.now),
                    lambda: ev.Tick(job.now), lambda: ev.Work(job.now)][rng.integers(7)]
            job.at(job.now + float(rng.random()) / 10)
            assert all(isinstance(i, (ev.Progress, ev.Reject, ev.Exclude, ev.RecordSpeeds,
                                      ev.Ended, ev.Resolve, ev.Fail))
                       for i in job.feed(make()))
        assert sum(isinstance(i, ev.Ended) for i in job.log) <= 1


def test_a_garbled_failed_message_is_counted_and_the_job_goes_on():
    """A FAILED message whose meta is not JSON is counted as malformed, not raised, and
    the job decodes (moved here from a process test of test_runtime)."""
    job = started()
    garbled = job.message(2, job.header(Kind.FAILED, 2), [b"{not json"])
    assert job.feed(job.at(0.1).packet(0), garbled) == [ev.Reject("malformed")]
    job.feed(job.at(0.3).packet(1))
    out = job.feed(*(job.stopped(place) for place in job.stops()))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]
    assert np.array_equal(out[-1].output, F.matmul(A, X))
    assert job.run.report.rejected == {"malformed": 1}


def test_more_wrong_workers_than_it_corrects_fail_the_job_naming_nobody():
    job = started(n=5, adversaries=1)
    for place in range(5):
        job.feed(job.at(0.5).packet(place, corrupt=place in (0, 1)), job.done(place))
    out = job.tick(0.6)
    assert kinds(out) == ["Ended", "Fail"] and job.stops() == []
    assert not any(isinstance(i, ev.Exclude) for i in job.log)
    error = out[-1].error
    assert isinstance(error, VerificationError) and error.report.wrong == []
    assert str(error) == ("rank 5/4 after every live worker finished; the results cannot "
                          "be explained with at most 1 wrong workers")


def test_a_replacements_reload_counts_in_what_it_was_shipped():
    """The shell ships resident data to a replacement before its task (Send.load) and
    says how many bytes it took: its timeline counts them, within what it was shipped."""
    job = Harness(coded_plan())
    send, = job.run.handle(ev.Start(job.workers, 0.0, 0.0))
    assert send.load is None                        # shipped data: nothing to reload
    task_bytes = sum(memoryview(f).nbytes for f in send.messages[0][1])
    job.run.handle(ev.Sent((ev.Delivery(0, 0.5, reloaded=4096),), 0.5))
    timeline = job.run.report.workers[0]
    assert (timeline.reloaded, timeline.shipped, timeline.share_sent) == \
        (4096, 4096 + task_bytes, 0.5)


# -- a small job whose workers answer once (one ANSWER each, done implied, no stops) ----


def test_a_small_job_is_answered_once_by_every_worker():
    plan = coded_plan(once=None)            # as the plan decides: 4 x 3, nothing watched
    assert plan.once and all(task.payload.once for task, _ in plan.tasks)
    assert not coded_plan(once=None, progress=lambda rank, needed: None).once
    assert not coded_plan(once=None, adversaries=1, n=5).once


def test_answers_decode_at_once_without_stops_or_acks():
    job = started(once=True)
    assert job.feed(job.at(0.5).answer(2)) == []
    assert job.run.report.workers[2].done == 0.5 and 2 in job.run.finished
    out = job.feed(job.at(0.7).answer(0))
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]   # decoded: resolved now
    assert job.stops() == [] and np.array_equal(out[-1].output, F.matmul(A, X))
    report = out[-1].report
    assert report.compute == 0.7 and report.rank == 2 and report.stop_latency == []
    assert [len(t.packets) for t in report.workers] == [1, 0, 1]
    assert report.workers[0].packets[0]["compute"] == 0.01


def test_an_answer_after_the_output_is_not_read():
    job = started(once=True)
    job.feed(job.at(0.5).answer(0), job.answer(1))
    assert job.run.state == ENDED
    assert job.feed(job.answer(2)) == []


def test_answers_of_too_few_or_too_many_packets_are_invalid():
    job = started(once=True, scheme="systematic")      # 4 packets a worker
    assert job.feed(job.answer(0, count=3)) == [ev.Reject("invalid packet")]
    assert 0 in job.run.finished and job.run.plan.collector.rank == 0
    out = job.feed(job.answer(1, corrupt=True), job.answer(2))   # no adversaries: kept
    assert kinds(out) == ["RecordSpeeds", "Ended", "Resolve"]
    assert not np.array_equal(out[-1].output, F.matmul(A, X))   # as a packet would be


def test_an_answer_to_a_job_that_streams_is_malformed():
    job = started()
    assert job.feed(job.answer(0)) == [ev.Reject("malformed")]
    assert 0 not in job.run.finished


def test_a_garbled_answer_is_malformed_and_its_worker_done():
    job = started(once=True)
    header = job.header(Kind.ANSWER, 1, itemsize=4, shape=(1, 2))   # 2 elements, not 3
    out = job.feed(job.message(1, header, [np.ones(3, np.uint32), np.ones(3, np.uint32)]))
    assert out == [ev.Reject("malformed")] and 1 in job.run.finished


def test_a_job_answered_once_still_stops_its_workers_on_a_timeout():
    job = started(once=True)
    job.feed(job.at(0.5).answer(0))
    out = job.tick(6.0)
    assert job.stops() == [1, 2] and kinds(out) == ["Ended", "Fail"]
    assert isinstance(out[-1].error, JobTimeout)
