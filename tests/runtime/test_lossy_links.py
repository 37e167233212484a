"""The master's side of a job on lossy links (Faults(loss=...)), driven by events on a
fake clock: the emulated links drop messages both ways, tasks and stops are sent again
until answered, every message that arrives is acknowledged, and the report counts the
drops."""
import numpy as np
import pytest

from ffcode import MDS
from ffcode.channel import Loss
from ffcode.runtime.master import events as ev
from ffcode.runtime.master.jobrun import DRAINING, ENDED, STOP_GRACE
from ffcode.runtime.master.jobs import Options, Plan
from ffcode.delivery import MOST_WAIT, TASK_TRIES
from ffcode.runtime.master.links import DOWN, UP, Links
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.faults import Faults
from ffcode.runtime.shared.wire import Header, Kind
from jobrun_harness import A, F, X, Harness, kinds


def lossy_plan(loss, n=3, k=2, scheme="classic", seed=0, burst=None):
    options = Options(scheme=scheme, timeout=30.0, faults=Faults(loss=loss, burst=burst,
                                                                  seed=seed))
    return Plan(MDS(F, k, n), (A, X), options, assignment=tuple((i,) for i in range(n)))


def posted(instructions):
    """(place, kind, index) of each message the job posted."""
    return [(place, Header.unpack(frames[0]).kind, Header.unpack(frames[0]).index)
            for post in instructions if isinstance(post, ev.Post)
            for place, frames in post.messages]


def taken(job, place):
    return job.message(place, job.header(Kind.TAKEN, place), [])


def test_a_dropped_task_is_sent_again_until_its_worker_answers():
    job = Harness(lossy_plan({1: 1.0}))
    job.start()
    send = job.log[0]
    assert send.kind == Kind.JOB and send.dropped == {1}        # on its link: dropped
    assert job.run.links.tasks.keys() == {1}
    assert posted(job.tick(0.049)) == []                        # the first wait: 50 ms
    again = posted(job.tick(0.05))
    assert again == [] and job.run.links.tasks[1].tries == 2       # sent again: dropped too
    # every try waits twice as long; after TASK_TRIES the worker is lost to the job
    at = 0.05
    for tries in range(2, TASK_TRIES):
        at += min(MOST_WAIT, 0.05 * 2 ** (tries - 1))
        job.tick(at)
    assert job.run.ledger.timelines[1].lost is None
    job.tick(at + MOST_WAIT)
    assert job.run.ledger.timelines[1].lost == f"its link lost the task {TASK_TRIES} times"
    assert 1 in job.run.finished
    out = job.feed(job.at(at + 1.0).packet(0), job.packet(2))   # the others decode
    out += job.feed(job.stopped(0), job.stopped(2))
    assert kinds(out)[-2:] == ["Ended", "Resolve"]
    assert np.array_equal(out[-1].output, F.matmul(A, X))
    assert out[-1].report.workers[1].dropped == [0, TASK_TRIES]


def test_a_task_that_arrives_is_not_sent_again():
    job = Harness(lossy_plan({0: 1e-4}, seed=3))
    job.start()
    job.feed(job.at(0.01).message(0, job.header(Kind.TAKEN, 0), []))
    assert job.run.links.tasks == {} and posted(job.tick(5.0)) == []
    # its round trip, timed by the answer to the first send, sets the next waits
    assert job.run.links.timers[0].smoothed == pytest.approx(0.01)


def test_a_task_sent_again_says_so_and_arrives_as_the_link_decides():
    seed = 5
    fates = Loss(0.5).link([seed, DOWN, 0]).losses(20)
    job = Harness(lossy_plan({0: 0.5}, seed=seed))
    job.start()
    assert (0 in job.log[0].dropped) == fates[0]
    tried, at = 1, 0.0
    while tried < 4:
        at += job.run.links.timers[0].timeout
        out = posted(job.tick(at))
        tried += 1
        assert out == ([] if fates[tried - 1] else [(0, Kind.JOB, tried - 1)])


def test_messages_from_a_lossy_link_are_dropped_as_it_decides_and_counted():
    seed = 11
    fates = Loss(0.4).link([seed, UP, 0]).losses(8)
    job = Harness(lossy_plan({0: 0.4}, n=4, k=3, seed=seed))
    job.start()
    for _ in range(8):
        job.feed(job.at(job.now + 0.001).done(0))
    assert job.run.links.up[0].dropped == int(fates.sum())
    assert (0 in job.run.finished) == (not fates.all())


def test_every_packet_that_arrives_is_acknowledged_with_the_ranks():
    job = Harness(lossy_plan({0: 0.0001, 1: 0.0001}, scheme="systematic", seed=2))
    job.start()
    pieces = job.plan.pieces
    out = job.feed(job.at(0.1).packet(0, index=pieces - 1))
    (place, kind, _), = posted(out)
    assert (place, kind) == (0, Kind.ACK)
    frames = [f for post in out if isinstance(post, ev.Post) for _, f in post.messages][0]
    meta, (bitmap,) = wire.read_control(frames[1:])
    assert meta == {"ranks": [], "ended": False}
    assert np.unpackbits(bitmap, bitorder="little")[:pieces].tolist() == \
        [0] * (pieces - 1) + [1]
    out = job.feed(job.at(0.2).done(0))
    meta, _ = wire.read_control([f for post in out if isinstance(post, ev.Post)
                                 for _, f in post.messages][0][1:])
    assert meta["ended"] is True
    assert posted(job.feed(job.packet(2))) == []            # a link without loss: no acks


def test_a_poll_is_answered_with_its_number():
    """A worker whose packet timed out asks (POLL, numbered in the header's index): the
    acknowledgement carries the number back, with what arrived so far."""
    job = Harness(lossy_plan({0: 1e-4}, scheme="cfs", seed=2))
    job.start()
    job.feed(job.at(0.1).packet(0, index=1))
    out = job.feed(job.message(0, job.header(Kind.POLL, 0, index=3), []))
    (place, kind, _), = posted(out)
    frames = [f for post in out if isinstance(post, ev.Post) for _, f in post.messages][0]
    meta, (bitmap,) = wire.read_control(frames[1:])
    assert (place, kind, meta["poll"]) == (0, Kind.ACK, 3)
    assert bitmap.tolist() == [2] and meta["ranks"] == [1]


def test_fresh_combinations_are_filed_per_share_and_bounded():
    """On a lossy link a cfs worker's packets past its first m are fresh combinations of
    its share, up to MOST_FRESH·m of them; a number past those is refused, not filed, and
    its bit is never set (a worker cannot grow the acknowledgements)."""
    from ffcode.delivery import MOST_FRESH, fresh_index
    job = Harness(lossy_plan({0: 1e-4}, scheme="cfs", seed=2))
    job.start()
    m = job.plan.pieces
    assert job.plan.share_of(0, fresh_index(1, m, 0, 5)) == (0, m + 5)
    beyond = fresh_index(1, m, 0, MOST_FRESH * m)
    assert job.plan.share_of(0, beyond) is None
    real = job.at(0.1).packet(0)                     # packet 0, numbered past the bound
    header = Header.unpack(real.header.pack())
    header.index = beyond
    out = job.feed(job.message(0, header, real.frames))
    assert kinds(out)[0] == "Reject" and out[0].reason == "invalid packet"
    assert len(job.run.links.got[0]) == 0


def test_stops_are_sent_again_until_answered():
    job = Harness(lossy_plan({0: 1.0, 1: 0.0001}, seed=1))
    job.start()
    for place in (0, 1):
        job.run.links.tasks.pop(place)                      # (their tasks arrived)
    job.feed(job.at(0.5).packet(1), job.packet(2))          # worker 0's link drops all
    assert job.run.state == DRAINING and job.run.waiting == {0, 1, 2}
    assert job.run.links.stops.keys() == {0, 1}
    job.feed(job.stopped(2), job.at(0.51).stopped(1))
    assert job.run.links.stops.keys() == {0}
    again = posted(job.tick(0.5 + job.run.links.timers[0].timeout))
    assert again == []                                      # dropped: sent, not received
    assert job.run.links.stops[0].tries == 2
    out = job.tick(0.5 + STOP_GRACE)                        # the grace ends the drain
    assert job.run.state == ENDED and kinds(out)[-1] == "Resolve"
    assert out[-1].report.workers[0].dropped[1] >= 3        # its task, stop and stop again


def test_links_without_faults_are_none():
    links = Links.none()
    assert not links and links.due == float("inf") and not links.lossy(0)
    assert links.passes(0, Kind.PACKET, 0.0) and links.dropped(0) == (0, 0)


@pytest.mark.parametrize("faults, message", [
    (dict(loss=-0.1), "Faults 'loss' must be a probability in [0, 1], not -0.1"),
    (dict(loss={0: 1.5}), "Faults 'loss' must be a probability in [0, 1], not 1.5 (worker 0)"),
    (dict(loss=1.0), "Faults 'loss' for every worker must be below 1"),
    (dict(loss=float("nan")), "must be finite"),
    (dict(loss="0.1"), "Faults 'loss' must be a probability, or a mapping"),
    (dict(loss=0.2, burst=0.5), "Faults 'burst' must be a mean run of losses >= 1"),
    (dict(loss={1: 0.8}, burst=2), "too short for p = 0.8"),
    (dict(loss={-1: 0.2}), "loss worker"),
])
def test_bad_losses_are_refused(faults, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)").replace("]", r"\]")):
        Faults(**faults)


def test_loss_names_workers_the_job_has():
    with pytest.raises(ValueError, match=r"Faults 'loss' names workers \[5\]"):
        Faults(loss={5: 0.1}).check_workers(3)
