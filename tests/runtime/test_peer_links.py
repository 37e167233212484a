"""A worker's lossy peer links (runtime/worker/peer_links.py) without processes: each
lane's messages sent again until acknowledged, lanes complete once all are, copies told
from new messages, the fates drawn from (seed, attempt, sender, receiver), a link losing as
the worse of its ends; the shuffle task's loss fields checked as they arrive (peer_loss,
Shuffle.from_meta); a peer's acknowledgement longer than its lane refused; messages cut
into segments and put back together in any order, a segment that does not fit its
message refused."""
import json

import numpy as np
import pytest

from ffcode.errors import InvalidParameterError, ProtocolError
from ffcode.mapreduce.shuffle import Message
from ffcode.runtime.shared.phases import Shuffle, peer_loss
from ffcode.runtime.worker.peer_links import (MOST_WAIT, SEGMENT, Assembly, PeerLinks,
                                              segments)


def lanes(counts, loss=(0.2, 0.2, 0.2), burst=None, seed=1, attempt=1, index=0):
    return PeerLinks(index, counts, loss, burst, seed, attempt, now=0.0)


def test_a_lane_without_messages_is_complete_at_once():
    links = lanes({1: 0, 2: 0})
    assert links.complete and links.due == float("inf")


def test_messages_acknowledged_complete_the_lane():
    links = lanes({1: 3, 2: 1})
    for seq in range(3):
        links.left(1, seq, f"m{seq}", now=0.0)
    links.left(2, 0, "n0", now=0.0)
    links.acked(1, bytes([0b111]), now=0.001)
    assert links.finished == {1} and not links.complete
    links.acked(2, bytes([1]), now=0.002)
    assert links.complete and links.resends == [] and links.resent == 0


def test_a_gap_sends_a_message_again_and_a_timeout_asks_first():
    links = lanes({1: 3})
    for seq in range(3):
        links.left(1, seq, f"m{seq}", now=0.0)
    links.acked(1, bytes([0b010]), now=0.001)       # 1 arrived: 0 overtaken, lost
    assert links.resends == [(1, 0, "m0")] and links.polls == []
    links.resends.clear()
    links.left(1, 0, "m0", now=0.001, again=True)
    links.tick(links.due)                           # the copy of 0 times out: asked about
    assert links.polls == [(1, 0)] and links.resends == []
    links.polls.clear()
    links.acked(1, bytes([0b010]), now=0.05, poll=0)    # the answer: 0 and 2 are missing
    assert links.resends == [(1, 0, "m0"), (1, 2, "m2")]
    assert links.resent == 1 and not links.complete


def test_a_poll_answered_saves_a_copy_whose_acknowledgement_was_lost():
    links = lanes({1: 1})
    links.left(1, 0, "big", now=0.0)                # arrives; its acknowledgement is lost
    links.tick(links.due)
    assert links.polls == [(1, 0)]
    links.acked(1, bytes([1]), now=0.03, poll=0)
    assert links.complete and links.resends == [] and links.resent == 0


def test_timeouts_ask_three_times_back_off_up_to_the_most_wait_and_never_give_up():
    links = lanes({1: 1})
    links.left(1, 0, "m0", now=0.0)
    now, waits, events = 0.0, [], []
    for _ in range(100):
        due = links.due
        waits.append(round(due - now, 9))
        links.tick(due)
        now = due
        events.append("poll" if links.polls else "resend")
        if links.resends:
            assert links.resends == [(1, 0, "m0")]
            links.left(1, 0, "m0", now=now, again=True)
        links.polls.clear()
        links.resends.clear()
    assert events[:4] == ["poll"] * 3 + ["resend"] and set(events[3:]) == {"resend"}
    assert waits == sorted(waits) and waits[0] < waits[-1] == pytest.approx(MOST_WAIT)
    links.acked(1, bytes([1]), now=now + 0.001)
    assert links.complete


def test_copies_are_told_from_new_messages_and_acknowledged_all_the_same():
    links = lanes({1: 0})
    assert links.received(1, 9) is True and links.received(1, 9) is False
    assert links.received(1, 0) is True
    assert bytes.fromhex(links.ack(1)) == bytes([1, 2])


def test_an_acknowledgement_longer_than_the_lane_is_refused():
    links = lanes({1: 3})
    with pytest.raises(ValueError, match="acknowledged 16 messages; it was sent 3"):
        links.acked(1, bytes(2), now=0.0)


def test_fates_follow_seed_attempt_and_pair():
    def fates(**kw):
        links = lanes({1: 0, 2: 0}, loss=(0.3, 0.3, 0.3), **kw)
        return [links.passes(1) for _ in range(64)]
    assert fates(seed=4) == fates(seed=4)
    assert fates(seed=4) != fates(seed=5)
    assert fates(seed=4) != fates(seed=4, attempt=2)
    assert fates(seed=4) != fates(seed=4, index=2)


def test_a_link_loses_as_the_worse_of_its_ends():
    links = lanes({1: 0, 2: 0}, loss=(0.0, 0.5, 0.0))
    drawn = [(links.passes(1), links.passes(2)) for _ in range(2000)]
    assert all(to_2 for _, to_2 in drawn)
    assert abs(np.mean([not to_1 for to_1, _ in drawn]) - 0.5) < 0.05
    assert links.dropped[2] == 0 and links.dropped[1] > 800


def test_bursts_are_runs_of_the_asked_mean():
    links = lanes({1: 0}, loss=(0.4, 0.4), burst=4.0)
    lost = [not links.passes(1) for _ in range(20000)]
    runs = np.diff(np.flatnonzero(np.diff(np.r_[0, lost, 0])))[::2]
    assert abs(np.mean(lost) - 0.4) < 0.03 and abs(np.mean(runs) - 4.0) < 0.4


@pytest.mark.parametrize("loss, burst, message", [
    (1.0, None, "cannot carry the shuffle"),
    ({2: 1.0}, None, "cannot carry the shuffle"),
    ({5: 0.1}, None, "names worker 5"),
    ({True: 0.1}, None, "names worker True"),
    (0.3, 0.9, "mean run of losses >= 1"),
    (0.5, 0.99, "mean run of losses >= 1"),
    (0.8, 2.0, "too short for p = 0.8"),
    (0.2, float("inf"), "mean run of losses >= 1"),
])
def test_peer_loss_refuses_what_no_link_can_be(loss, burst, message):
    with pytest.raises(InvalidParameterError, match=message):
        peer_loss(loss, burst, 3)


def test_peer_loss_of_nothing_is_empty():
    assert peer_loss(None, None, 3) == peer_loss(0.0, None, 3) == peer_loss({}, 2.0, 3) == ()
    assert peer_loss(0.25, None, 2) == ((0.25, 0.25), None)


def shuffle_meta(**fields):
    task = Shuffle(run=1, endpoints=("ipc:///a", "ipc:///b", "ipc:///c"), network="links",
                   rate=None, delay=0.0, lost=(), attempt=1, loss=(0.1, 0.0, 0.3),
                   burst=2.0, seed=9)
    return dict(task.to_meta(), **fields)


def test_a_shuffle_task_carries_its_losses():
    meta = json.loads(json.dumps(shuffle_meta()))
    task = Shuffle.from_meta(meta)
    assert (task.loss, task.burst, task.seed, task.lossy()) == ((0.1, 0.0, 0.3), 2.0, 9, True)
    plain = Shuffle.from_meta(shuffle_meta(loss=[], burst=None))
    assert (plain.loss, plain.lossy()) == ((), False)


@pytest.mark.parametrize("fields, message", [
    ({"loss": [0.1, 0.2]}, "loss is not one number per worker"),
    ({"loss": [0.1, "x", 0.2]}, "loss is not one number per worker"),
    ({"loss": [0.1, 1.0, 0.2]}, "cannot carry the shuffle"),
    ({"loss": [0.1, -1, 0.2]}, "probability"),
    ({"burst": 0.2}, "mean run of losses >= 1"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**64}, "seed"),
    ({"loss": "0.1"}, "loss"),
])
def test_a_shuffle_tasks_bad_losses_are_refused(fields, message):
    with pytest.raises(ProtocolError, match=message):
        Shuffle.from_meta(shuffle_meta(**fields))


def test_segments_cover_a_message_exactly():
    for size in (0, 1, SEGMENT - 1, SEGMENT, SEGMENT + 1, 5 * SEGMENT + 7):
        parts = segments(size)
        assert parts[0][0] == 0 and parts[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        assert all(0 < end - start <= SEGMENT for start, end in parts) or size == 0


@pytest.mark.parametrize("kind", ["bytes", "vector"])
def test_segments_put_back_together_in_any_order(kind):
    rng = np.random.default_rng(3)
    whole = rng.integers(0, 2**31, 3 * SEGMENT // 8 + 5, dtype=np.uint64)
    raw = whole.view(np.uint8)
    cuts = [raw[a:b] for a, b in segments(raw.nbytes)]
    parts = [c.view(np.uint64) if kind == "vector" else memoryview(c.tobytes())
             for c in cuts]
    assembly = Assembly(most=1 << 24)
    order = [2, 0, 3, 1]
    done = [assembly.add(2, 10 + n, 10, 4, Message(2, (0,), parts[n], group=(0, 1, 2),
                                                    lengths=(7, 9)))
            for n in order]
    assert done[:3] == [None] * 3 and assembly.waiting == {}
    got = done[3].payload
    assert (np.array_equal(got, whole) if kind == "vector" else got == raw.tobytes())
    assert (done[3].group, done[3].lengths) == ((0, 1, 2), (7, 9))


def test_a_segment_that_does_not_fit_its_message_is_refused():
    part = Message(1, (0,), np.zeros(4, np.uint8), batch=2)
    assembly = Assembly(most=SEGMENT * 2)
    with pytest.raises(ValueError, match="segment 9 of a message of 2 from 10"):
        assembly.add(1, 9, 10, 2, part)
    with pytest.raises(ValueError, match="segment 3 of a message of 5"):
        assembly.add(1, 3, 0, 5, part)              # more parts than the most bytes allow
    assembly.add(1, 0, 0, 2, part)
    with pytest.raises(ValueError, match="segments of one message disagree"):
        assembly.add(1, 1, 0, 2, Message(1, (0,), part.payload, batch=3))
    full = Message(1, (0,), np.zeros(SEGMENT, np.uint8), batch=2)
    big = Assembly(most=SEGMENT + 6)
    big.add(1, 0, 0, 2, full)
    with pytest.raises(ValueError, match=f"a message over {SEGMENT + 6} bytes"):
        big.add(1, 1, 0, 2, full)
