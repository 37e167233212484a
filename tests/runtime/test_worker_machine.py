"""The worker's two machines without I/O (runtime/worker/taskqueue.py, runtime/worker/
outbox.py), exactly and on a fake clock: no process, socket, thread or sleep. The queue:
priorities and round-robin turns, a share's pieces in a row, the jobs a worker is fast on
first, stops acknowledged and dropped, unloads, inline quick jobs, a turn's FAILED and
DONE. The outbox: pacing at a link rate, grouping up to the byte
cap, a paced or fault-counted job's packets alone, a stop dropping a job's messages, the
crash and hang points at their packet counts, control messages first in line."""
import pytest

from ffcode.runtime.shared import wire
from ffcode.runtime.shared.wire import Kind
from ffcode.runtime.worker.outbox import (TOGETHER_BYTES, Ended, FaultPoint, Outbox, Send,
                                          Wait)
from ffcode.runtime.worker.taskqueue import (ENDED, FAILED, MORE, PIECE, STOPPED, UNABLE,
                                             Acknowledge, Done, Drop, Fail, Inline,
                                             Release, TaskQueue, Turn)


# -- the queue of jobs ---------------------------------------------------------------------------

def turns(queue, count, outcome=MORE):
    """The jobs of the next ``count`` turns, each ending ``outcome``."""
    taken = []
    for _ in range(count):
        instructions = queue.next()
        assert instructions and isinstance(instructions[-1], Turn), instructions
        taken.append(instructions[-1].job)
        assert queue.finished(taken[-1], outcome) == []
    return taken


def test_the_highest_priority_first_and_round_robin_within():
    queue = TaskQueue()
    for job, priority in [("a", 0), ("b", 0), ("c", 0)]:
        assert queue.arrived(job, priority) == []
    assert turns(queue, 4) == ["a", "b", "c", "a"]
    queue.arrived("urgent", 2)
    queue.arrived("soon", 1)
    assert turns(queue, 3) == ["urgent"] * 3           # alone at its priority: every turn
    queue.arrived("urgent too", 2)
    assert turns(queue, 4) == ["urgent", "urgent too", "urgent", "urgent too"]
    queue.next()
    assert queue.finished("urgent", ENDED) == []
    queue.next()
    assert queue.finished("urgent too", ENDED) == []
    assert turns(queue, 2) == ["soon", "soon"]
    queue.next()
    assert queue.finished("soon", ENDED) == []
    assert turns(queue, 3) == ["b", "c", "a"]        # where they were: after a's turn
    assert queue.entries.keys() == {"a", "b", "c"}


def test_a_job_arriving_during_a_turn_comes_after_the_job_turning():
    """As a deque whose chosen job goes to the back: b's turn is under way when c arrives,
    so a, b, c."""
    queue = TaskQueue()
    queue.arrived("a")
    queue.arrived("b")
    assert turns(queue, 1) == ["a"]
    assert queue.next() == [Turn("b")]
    queue.arrived("c")
    queue.finished("b", MORE)
    assert turns(queue, 4) == ["a", "b", "c", "a"]


def timed_turns(queue, count, cost, pieces=None):
    """The jobs of the next ``count`` turns, each taking cost[job] seconds; a job with
    pieces[job] pieces to its share ends its turns PIECE but every pieces[job]-th, MORE."""
    taken, done = [], {}
    for _ in range(count):
        instructions = queue.next()
        assert instructions and isinstance(instructions[-1], Turn), instructions
        job = instructions[-1].job
        done[job] = done.get(job, 0) + 1
        per = (pieces or {}).get(job)
        outcome = PIECE if per and done[job] % per else MORE
        assert queue.finished(job, outcome, spent=cost[job]) == []
        taken.append(job)
    return taken


def test_a_shares_pieces_go_on_in_a_row_and_the_share_then_goes_last():
    """Equal costs: the job keeps its place while its share goes on (PIECE), and goes to
    the back after the share's last piece (MORE)."""
    queue = TaskQueue()
    for job in "ab":
        queue.arrived(job, ranked=True)
    cost = {"a": 0.1, "b": 0.1}
    assert timed_turns(queue, 9, cost, {"a": 3, "b": 3}) == [
        "a", "b",                       # each measured once: b's first turn comes early
        "a", "a", "b", "b", "a", "a", "a"]


def test_a_worker_does_the_work_of_the_jobs_it_is_fast_on_first():
    """Once measured, a job whose turns cost more than spread times the cheapest's waits;
    within the spread, jobs go in turn order; a waiting job gets a turn after patience
    turns of the others, and a job arriving is measured at its first look."""
    queue = TaskQueue(spread=1.25, patience=4)
    for job in "sfg":
        queue.arrived(job, ranked=True)
    cost = {"s": 0.4, "f": 0.1, "g": 0.12, "new": 0.1}
    assert timed_turns(queue, 3, cost) == ["s", "f", "g"]       # each measured once
    assert timed_turns(queue, 3, cost) == ["f", "g", "f"]
    assert queue.entries["s"].passed == 4      # at g's first turn too: s cost more then
    assert timed_turns(queue, 1, cost) == ["s"]                 # its patience ran out
    queue.arrived("new", ranked=True)
    assert timed_turns(queue, 4, cost) == ["new", "g", "f", "new"]


def test_jobs_whose_turns_are_not_this_workers_work_are_not_ranked():
    """An unranked job (its turns may only wait on others) takes its turns in order, and
    its cheap turns push no ranked job back."""
    queue = TaskQueue()
    queue.arrived("waits")
    queue.arrived("computes", ranked=True)
    cost = {"waits": 0.001, "computes": 1.0}
    assert timed_turns(queue, 4, cost) == ["computes", "waits", "computes", "waits"]


def test_speeds_rank_jobs_within_a_priority_only():
    queue = TaskQueue()
    queue.arrived("slow", priority=1, ranked=True)
    queue.arrived("fast", ranked=True)
    assert timed_turns(queue, 3, {"slow": 1.0, "fast": 0.01}) == ["slow"] * 3


def test_nothing_to_do_gives_no_turn_and_an_idle_queue():
    queue = TaskQueue()
    assert queue.next() == [] and queue.idle()
    queue.arrived("a")
    assert not queue.idle()
    assert queue.next() == [Turn("a")]
    assert not queue.idle()                 # its turn is under way
    assert queue.finished("a", ENDED) == []
    assert queue.idle() and queue.next() == [] and queue.entries == {}


def test_a_stop_is_acknowledged_and_the_job_dropped_at_the_next_look():
    queue = TaskQueue()
    for job in "abc":
        queue.arrived(job)
    assert turns(queue, 1) == ["a"]
    assert queue.stop("b") == [Acknowledge("b")]
    assert queue.next() == [Drop("b"), Turn("c")]
    queue.finished("c", MORE)
    assert turns(queue, 2) == ["a", "c"]
    assert queue.stop("never here") == [Acknowledge("never here")]   # ended: still said
    assert queue.stop("a", acknowledge=False) == []    # restarted by the master: no word


def test_a_job_stopped_during_its_turn_leaves_after_it():
    """A stop during a turn: the turn sees it by itself; ending MORE, the job is dropped at
    the next look; ending STOPPED, it leaves at once; in neither case does it send."""
    queue = TaskQueue()
    queue.arrived("a")
    queue.arrived("b")
    assert queue.next() == [Turn("a")]
    queue.stop("a")
    assert queue.finished("a", MORE) == []
    assert queue.next() == [Drop("a"), Turn("b")]
    queue.stop("b")
    assert queue.finished("b", FAILED, detail="ValueError: late") == []
    assert queue.next() == [] and queue.idle()


def test_a_job_stopped_then_unloaded_does_no_work():
    queue = TaskQueue()
    queue.arrived("on data", data="D")
    queue.arrived("other", data="E")
    queue.arrived("also on data", data="D")
    assert queue.stop("on data") == [Acknowledge("on data")]
    assert queue.unload("D") == [Release("on data"), Release("also on data")]
    assert queue.next() == [Drop("on data"), Turn("other")]
    queue.finished("other", ENDED)
    assert queue.next() == [Turn("also on data")]      # its steps fail: no data
    assert queue.finished("also on data", FAILED, detail="ValueError: no data") == [
        Fail("also on data", "ValueError: no data")]
    assert queue.next() == [] and queue.unload("D") == []


def test_a_turn_that_fails_or_can_do_no_more_says_so():
    queue = TaskQueue()
    queue.arrived("a")
    queue.arrived("b")
    queue.next()
    assert queue.finished("a", FAILED, detail="RuntimeError: f") == [
        Fail("a", "RuntimeError: f")]
    queue.next()
    assert queue.finished("b", UNABLE, detail="the group could not decode") == [
        Done("b", "the group could not decode")]
    assert queue.finished("a test's job", FAILED, detail="SystemExit: 3") == [
        Fail("a test's job", "SystemExit: 3")]
    with pytest.raises(ValueError, match="not 'late'"):
        queue.finished("a", "late")


def test_small_jobs_of_a_quick_f_run_inline_when_the_compute_thread_is_idle():
    """The first small job of f runs in its turn; its 2 ms teach that f is quick, so its
    next small job runs inline, unless a turn is under way or another job waits, or it is
    too large or may not run inline (paused, a relay's); a job that took 1 s (f waited,
    wall time) unteaches it, and a stopped job teaches nothing."""
    queue = TaskQueue(inline_bytes=1000, quick_seconds=0.01)
    assert queue.arrived("first", name="f", size=100, inline=True) == []
    assert queue.next() == [Turn("first")]
    queue.finished("first", MORE, spent=0.001)
    queue.next()
    queue.finished("first", ENDED, spent=0.001)
    assert queue.quick == {"f"}
    assert queue.arrived("small", name="f", size=1000, inline=True) == [Inline("small")]
    assert queue.arrived("meanwhile", name="f", size=1, inline=True) == []  # not idle
    assert queue.finished("small", ENDED, spent=0.002) == []
    assert queue.next() == [Turn("meanwhile")]
    queue.finished("meanwhile", ENDED, spent=0.001)
    assert queue.arrived("large", name="f", size=1001, inline=True) == []
    queue.next()
    queue.finished("large", ENDED, spent=5.0)           # large: teaches nothing
    assert queue.arrived("paused", name="f", size=1, inline=False) == []
    queue.next()
    queue.finished("paused", ENDED, spent=0.001)
    queue.arrived("stopped", name="f", size=1, inline=True)
    queue.stop("stopped")
    queue.finished("stopped", STOPPED, spent=3.0)       # stopped: teaches nothing
    assert queue.quick == {"f"}
    assert queue.arrived("waits", name="f", size=1, inline=True) == [Inline("waits")]
    queue.finished("waits", ENDED, spent=1.0)
    assert queue.quick == set()
    assert queue.arrived("again", name="f", size=1, inline=True) == []
    assert queue.next() == [Turn("again")]


# -- the outbox ----------------------------------------------------------------------------------

def drain(outbox, clock, until=100.0):
    """Run the outbox as the main thread does, on a fake clock: send what is due, wait
    while nothing is. [(time, messages)] of the sends, and the other instructions."""
    sends, said = [], []
    while clock[0] <= until:
        step = outbox.tick(clock[0])
        if step is None:
            break
        if isinstance(step, Wait):
            assert step.until > clock[0]
            clock[0] = step.until
            continue
        sends.append((clock[0], step.messages))
        said += outbox.sent(step, clock[0])
    return sends, said


def test_packets_leave_paced_at_the_link_rate():
    """No burst credit: packet k (from 1) leaves at k·size/rate, exactly; a DONE follows
    at once, ending the job."""
    outbox, clock = Outbox(), [10.0]
    size, rate = 2000, 1000.0                           # 2 s a packet
    assert outbox.started("job", link_rate=rate) == []
    for k in range(4):
        assert outbox.ready("job", Kind.PACKET, size, f"p{k}", now=10.0)
    assert outbox.ready("job", Kind.DONE, 50, "done", now=10.0)
    assert outbox.queued == 4 * size + 50
    sends, said = drain(outbox, clock)
    assert sends == [(10.0 + 2.0 * k, (f"p{k - 1}",)) for k in range(1, 5)] + [
        (18.0, ("done",))]
    assert said == [Ended("job", Kind.DONE, 4)]
    assert outbox.queued == 0 and outbox.flows == {}
    assert not outbox.ready("job", Kind.PACKET, size, "late", now=20.0)    # ended: dropped


def test_the_link_is_the_workers_and_a_busy_link_delays_the_next_packet():
    """A packet ready while the link is still busy leaves when the link has carried it
    too: the link is free at 12, the next packet of 1000 bytes leaves at 13; one ready
    after the link is free waits only its own time."""
    outbox, clock = Outbox(), [10.0]
    outbox.started("job", link_rate=1000.0)
    outbox.ready("job", Kind.PACKET, 2000, "p0", now=10.0)
    assert drain(outbox, clock)[0] == [(12.0, ("p0",))]
    outbox.ready("job", Kind.PACKET, 1000, "p1", now=11.5)     # a fake clock behind
    assert drain(outbox, [11.5])[0] == [(13.0, ("p1",))]
    outbox.ready("job", Kind.PACKET, 500, "p2", now=20.0)
    assert drain(outbox, [20.0])[0] == [(20.5, ("p2",))]


def test_ready_messages_leave_together_up_to_the_byte_cap():
    outbox, clock = Outbox(together=1000, most=4), [0.0]
    outbox.started("a")
    outbox.started("b")
    for k, size in enumerate([400, 300, 300, 1, 2000, 10, 10, 10, 10, 10]):
        outbox.ready("ab"[k % 2], Kind.PACKET, size, k, now=0.0)
    sends, said = drain(outbox, clock)
    assert sends == [(0.0, (0, 1, 2)),              # 1000 bytes: the next would exceed
                     (0.0, (3,)),                   # 2000 bytes after it: too many
                     (0.0, (4,)),                   # alone, larger than the cap
                     (0.0, (5, 6, 7, 8)),           # at most four together
                     (0.0, (9,))]
    assert said == [] and outbox.flows["a"].sent == 5 and outbox.flows["b"].sent == 5


def test_the_default_cap_is_together_bytes_and_wire_max_together():
    outbox = Outbox()
    assert (outbox.together, outbox.most) == (TOGETHER_BYTES, wire.MAX_TOGETHER)
    outbox.started("job")
    for k in range(wire.MAX_TOGETHER + 1):
        outbox.ready("job", Kind.PACKET, 1, k, now=0.0)
    sends, _ = drain(outbox, [0.0])
    assert [len(messages) for _, messages in sends] == [wire.MAX_TOGETHER, 1]


@pytest.mark.parametrize("faults", [{"link_rate": 1e12}, {"crash_after": 99},
                                    {"hang_after": 99}])
def test_a_paced_or_fault_counted_jobs_packets_leave_alone(faults):
    """Beside a free job's small messages, which group around them."""
    outbox = Outbox()
    outbox.started("free")
    outbox.started("counted", **faults)
    for k, job in enumerate(["free", "free", "counted", "counted", "free", "free"]):
        outbox.ready(job, Kind.PACKET, 10, k, now=0.0)
    assert [messages for _, messages in drain(outbox, [0.0])[0]] == [
        (0, 1), (2,), (3,), (4, 5)]


@pytest.mark.parametrize("act", ["crash", "hang"])
def test_fault_points_come_at_their_packet_counts(act):
    """crash_after j / hang_after j: the point is reached as packet j has left (0: as the
    job starts), an instruction (the shell exits or stops); other jobs' packets do not
    count."""
    outbox = Outbox()
    assert outbox.started("at start", **{f"{act}_after": 0}) == [FaultPoint("at start", act)]
    assert outbox.started("job", **{f"{act}_after": 3}) == []
    outbox.started("other")
    for k in range(5):
        outbox.ready("other", Kind.PACKET, 10, f"o{k}", now=0.0)
        outbox.ready("job", Kind.PACKET, 10, f"j{k}", now=0.0)
    said = []
    sends = 0
    while isinstance(step := outbox.tick(0.0), Send):
        sends += 1
        now_said = outbox.sent(step, 0.0)
        if now_said:
            said.append((step.messages, now_said))
    assert said == [(("j2",), [FaultPoint("job", act)])]
    assert outbox.flows["job"].sent == 5 and sends == 10    # none grouped with a counted one


def test_crash_comes_before_hang_at_the_same_count():
    outbox = Outbox()
    assert outbox.started("job", crash_after=0, hang_after=0) == [
        FaultPoint("job", "crash"), FaultPoint("job", "hang")]


def test_a_stop_drops_the_jobs_queued_messages_and_its_later_ones():
    """The others' messages stay, in order; the head is paced again from the stop (the
    stopped job's packet no longer holds the link); the count sent is told."""
    outbox, clock = Outbox(), [0.0]
    outbox.started("stopped", link_rate=100.0)
    outbox.started("other", link_rate=1000.0)
    outbox.ready("stopped", Kind.PACKET, 100, "s0", now=0.0)
    outbox.ready("other", Kind.PACKET, 1000, "o0", now=0.0)
    outbox.ready("stopped", Kind.PACKET, 100, "s1", now=0.0)
    outbox.ready("other", Kind.DONE, 10, "o-done", now=0.0)
    assert outbox.tick(0.0) == Wait(1.0)                 # s0: 100 bytes at 100 B/s
    sends, _ = drain(outbox, clock, until=1.0)
    assert sends == [(1.0, ("s0",))]
    assert outbox.stop("stopped", now=1.5) == 1
    assert outbox.queued == 1010
    assert not outbox.ready("stopped", Kind.PACKET, 100, "late", now=1.5)
    sends, said = drain(outbox, [1.5])
    assert sends == [(2.5, ("o0",)), (2.5, ("o-done",))]
    assert said == [Ended("other", Kind.DONE, 1)]
    assert outbox.stop("other", now=3.0) == 0           # ended: nothing to stop


def test_a_stopped_jobs_messages_all_gone_leave_nothing_due():
    outbox = Outbox()
    outbox.started("job", link_rate=1.0)
    outbox.ready("job", Kind.PACKET, 10, "p", now=0.0)
    assert outbox.stop("job", now=0.0) == 0
    assert outbox.tick(5.0) is None and outbox.queued == 0


def test_control_messages_go_first_in_line_and_a_hello_alone():
    """An acknowledgement zmq had no room for leaves before the packets queued, at once
    even while a paced packet waits its time; with the free messages behind it, together;
    a HELLO alone."""
    outbox = Outbox()
    outbox.started("paced", link_rate=10.0)
    outbox.ready("paced", Kind.PACKET, 100, "p", now=0.0)
    assert outbox.tick(0.0) == Wait(10.0)
    outbox.urgent(Kind.STOPPED, "ack", now=1.0)
    sends, _ = drain(outbox, [1.0])
    assert sends == [(1.0, ("ack",)), (11.0, ("p",))]
    outbox.started("free")
    outbox.ready("free", Kind.PACKET, 10, "f0", now=20.0)
    outbox.urgent(Kind.STOPPED, "ack", now=20.0)
    outbox.urgent(Kind.HELLO, "hello", now=20.0)
    assert [m for _, m in drain(outbox, [20.0])[0]] == [("hello",), ("ack", "f0")]


def test_a_failed_message_ends_its_job_too():
    outbox = Outbox()
    outbox.started("job")
    outbox.ready("job", Kind.PACKET, 10, "p", now=0.0)
    outbox.ready("job", Kind.FAILED, 10, "failed", now=0.0)
    sends, said = drain(outbox, [0.0])
    assert sends == [(0.0, ("p", "failed"))] and said == [Ended("job", Kind.FAILED, 1)]


# -- the shell's glue, without threads -----------------------------------------------------------

class Held:
    """A job as the worker's Tasks sees it: its steps and shares, let go on instruction."""

    def __init__(self, name):
        self.name, self.steps, self.shares = name, iter(()), ["share"]

    def __repr__(self):
        return self.name


def test_the_workers_tasks_carry_out_drops_and_releases():
    """Tasks (runtime/worker/process.py) lets go of a stopped job's steps as the queue
    drops it, and of an unloaded job's shares; the rest it hands on."""
    from ffcode.runtime.worker.process import Tasks
    tasks = Tasks()
    a, b = Held("a"), Held("b")
    assert tasks.tell("arrived", a, 0, data="D") == []
    assert tasks.tell("arrived", b, 0, data="E") == []
    assert tasks.tell("stop", a) == [Acknowledge(a)]
    assert tasks.tell("unload", "D") == [] and a.shares is None and b.shares == ["share"]
    assert tasks.next() is b and a.steps is None and b.steps is not None
    assert tasks.finished(b, FAILED, 0.0, "ValueError: bad") == [Fail(b, "ValueError: bad")]
    assert tasks.queue.idle()
