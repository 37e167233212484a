"""The master's side of one job: send the tasks, ingest packets as they arrive (reducing
payloads whenever the socket is idle), stop every worker the moment the output is
decodable, decode, collect the stops' acknowledgements, verify, and account for
everything in the report. A job run owns its state (its epoch, its report, what it
rejected) and reaches the workers through the roster only. It is driven by events: the
master's thread (runtime/driver.py) hands it the messages of its epoch and the clock, with
other jobs in flight beside it, and it ends by resolving its future.

Workers are the job's places (processes); a packet is filed under the share (code index)
it belongs to, so that every share is its own sender to the decoder, and a worker found
wrong on any of its shares is named once.

The deadline holds on every path: the clock is read between any two steps of work (a
message, a payload reduced, a stop sent), so a job ends within its timeout plus one step
and the stop grace.

A job run is made from its plan before any message moves (its report knows what it needs):

>>> from ffcode import GF, MDS
>>> from ffcode.runtime.master.jobs import Options, Plan
>>> F = GF(65521)
>>> plan = Plan(MDS(F, 2, 3), (F.random((4, 3), seed=1), F.random(3, seed=2)),
...             Options(scheme="classic"), assignment=((0,), (1,), (2,)))
>>> run = JobRun(plan, roster=None, epoch=1, settings={})
>>> run.report.scheme, run.report.needed, run.state
('classic', 2, 'waiting')
"""
import logging
import math
import time
from collections import Counter
from concurrent.futures import Future
from typing import Any, Callable, Optional

from ffcode import allocation
from ffcode.errors import (ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)
from ffcode.pieces import Packet
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.kinds import JobPlan
from ffcode.runtime.shared.report import Report, WorkerTimeline, read_group
from ffcode.runtime.master.roster import WATCH_EVERY, Roster
from ffcode.runtime.shared.wire import Header, Kind

STOP_GRACE = 0.25           # seconds to send the stops, and again to collect their acks
STOP_PATIENCE = 0.1         # seconds a stop may wait for room at one worker
TASK_PATIENCE = 2.0         # seconds a task may wait for room at one worker
WAITING, RUNNING, DRAINING, ENDED = "waiting", "running", "draining", "ended"

log = logging.getLogger(__name__)


class JobRun:
    """One job of a plan (of any kind: runtime/shared/kinds.py's JobPlan), numbered
    ``epoch`` among its master's jobs; ``settings`` go into its report as they are.
    ``check(output, report)`` verifies the output before it is returned (None: it is not
    verified). ``future`` resolves to (output, report) or to
    the job's error, given by ``settle(future, outcome, error)`` (the driver's resolves it
    in a thread of its own; by default, at once); ``ended(run)`` is called once as it
    ends, whichever way, before its future resolves. ``state``:
    waiting (for its workers), running (its tasks sent), draining (decoded, collecting the
    stops' acknowledgements), ended."""

    def __init__(self, plan: JobPlan, roster: Roster, epoch: int, settings: dict, *,
                 encode: float = 0.0,
                 check: Optional[Callable[[Any, Report], None]] = None,
                 future: Optional[Future] = None,
                 ended: Optional[Callable[["JobRun"], None]] = None,
                 buffers: Optional[dict] = None) -> None:
        self.plan: JobPlan = plan
        self.roster, self.epoch = roster, epoch
        self.progress = plan.progress
        self.timeout = plan.timeout
        self.wait_for = math.inf            # seconds it may wait for its workers
        self.until = math.inf               # and until when
        self.count = len(plan.tasks)                # the workers it needs
        self.check = check
        self.future = future if future is not None else Future()
        self.settle: Callable[[Future, Any, Optional[BaseException]], None] = settle
        self.ended, self.buffers = ended, buffers
        self.state = WAITING
        self.workers: list = []
        self.index: dict = {}
        self.report = Report(plan.label, plan.name, self.count, plan.pieces, plan.needed)
        self.report.settings = settings
        self.report.job = epoch
        self.report.encode = encode
        self.rejected: Counter[str] = Counter()     # this job's own drops (bad packets)
        self.owner = allocation.owners(tuple(plan.held))
        self.timelines: list = []
        self.finished: set[int] = set()     # workers done sending (or idle, or lost)
        self.unusable: set[int] = set()     # when correcting: invalid packets or failed
        self.failed: dict[int, str] = {}    # when correcting: worker -> its error
        self.decodable = math.nan           # when the output became decodable
        self.deadline = math.inf            # of the job, once its tasks are sent
        self.drained = math.inf             # when collecting acknowledgements ends
        self.waiting: set[int] = set()      # draining: acknowledgements still due
        self.last_rank = -1
        self.output: Any = None
        self.last_sent: Optional[float] = None  # draining: the latest message's send time

    def __repr__(self) -> str:
        return f"JobRun({self.epoch}, {self.report.scheme}, {self.state})"

    def header(self, kind, worker=-1):
        return Header(kind, self.roster.transport.session, self.epoch, worker)

    def reject(self, reason):
        self.rejected[reason] += 1
        self.roster.transport.rejected_total[reason] += 1

    def clock(self):
        return time.monotonic() - self.started

    @property
    def collector(self):
        return self.plan.collector

    @property
    def pending(self) -> bool:
        """Payloads wait to be reduced (the master does so while its socket is idle)."""
        return self.state == RUNNING and bool(self.collector.pending)

    @property
    def due(self) -> float:
        """When the job next needs the clock looked at (its deadline, or the end of its
        draining)."""
        return self.drained if self.state == DRAINING else self.deadline

    def uses(self, data) -> bool:
        """Whether the job runs on this resident data."""
        return self.plan is not None and self.plan.resident is data

    # -- the steps, as the master's thread calls them --------------------------------------

    def start(self, workers: list) -> None:
        """Send every worker its task (an idle one is finished at once), each send waiting
        for room no longer than the time left; the job's clock starts here, its timeout
        counting the encoding too."""
        plan, roster = self.plan, self.roster
        self.state = RUNNING
        self.started, self.wall = time.monotonic(), time.time()
        self.deadline = self.started + self.timeout - self.report.encode
        self.workers = workers
        # by handle, not routing id: a worker admitted again since is a new handle
        self.index = {h: i for i, h in enumerate(workers)}
        self.timelines = [WorkerTimeline(i, h.host, h.pid, h.node, list(plan.held[i]))
                          for i, h in enumerate(workers)]
        self.report.workers = self.timelines
        log.info("job %d: %s on %d workers", self.epoch, plan.label, len(workers))
        for i, handle in enumerate(workers):
            task = plan.tasks[i]
            if task is None:
                self.finished.add(i)
                continue
            left = self.deadline - time.monotonic()
            if left < 0:
                raise self._failure(JobTimeout, "no output within the timeout (sending "
                                                "the tasks)")
            timeline = self.timelines[i]
            if plan.resident is not None and \
                    handle.resident.get(plan.resident.ident) != i:  # a replacement
                timeline.reloaded = roster.give(handle, plan.resident, i)
            task, arrays = task
            message = wire.control(self.header(Kind.JOB, i), task.to_meta(), arrays)
            if roster.send(handle, message, patience=min(TASK_PATIENCE, left)):
                timeline.share_sent = self.clock()
                timeline.shipped = timeline.reloaded + \
                    sum(memoryview(f).nbytes for f in message)
        self.sent = time.monotonic()
        self.watch()                        # a worker lost while sending
        self._progress()

    def _progress(self) -> None:
        """progress(rank, needed) as the rank grows (and once at the start)."""
        if self.progress is not None and self.collector.rank != self.last_rank:
            self.last_rank = self.collector.rank
            self.progress(self.last_rank, self.plan.needed)

    def message(self, handle, header, frames) -> None:
        """One message of this job's epoch from one of the master's workers."""
        if self.state == DRAINING:
            self._drain(handle, header, frames)
            return
        if self.state != RUNNING:
            return
        i = self.index.get(handle)
        if i is None or header.worker != i:
            self.reject("unknown worker")
            return
        timeline = self.timelines[i]
        if header.kind == Kind.PACKET:
            self._packet(i, header, frames)
            if self.collector.complete:
                self._decoded()
            else:
                self._progress()
        elif header.kind == Kind.DONE:
            timeline.done = self.clock()
            self.finished.add(i)
            self._notes(i, frames)
        elif header.kind == Kind.STOPPED:             # the worker's clock, as in _drain
            timeline.stopped = header.sent - self.wall
            self._notes(i, frames)
        elif header.kind == Kind.FAILED:
            try:
                meta, _ = wire.read_control(frames)
            except ProtocolError:
                self.reject("malformed")
                return
            if not self.plan.adversaries:             # a user's f that raises fails everywhere
                raise self._failure(WorkerError, f"worker {i} failed: {meta.get('error')}")
            self.failed[i] = str(meta.get("error"))   # its results are unusable: as if wrong
            self._unusable(i)

    def tick(self, now: float) -> None:
        """Look at the clock: JobTimeout past the deadline, JobFailed (VerificationError)
        once no live worker is left at the job; a draining job ends when its time is up."""
        if self.state == DRAINING:
            if now >= self.drained:
                self._finish()
            return
        if self.state != RUNNING:
            return
        if now > self.deadline:
            raise self._failure(JobTimeout, "no output within the timeout")
        if self.plan.every_worker and any(t.lost and t.done is None for t in self.timelines):
            raise self._failure(JobFailed, "when a worker was lost: every worker's part is "
                                           "needed")
        if len(self.finished) == len(self.workers):
            unexplained = self.plan.adversaries and self.collector.rank >= self.plan.needed
            raise self._failure(VerificationError if unexplained else JobFailed,
                                "after every live worker finished")

    def reduce(self) -> None:
        """Reduce one pending payload (the socket is idle)."""
        self.collector.eliminate()
        self._progress()

    def at_work(self) -> list:
        """The job's workers still at it (not finished, not lost)."""
        return [h for i, h in enumerate(self.workers) if i not in self.finished and
                h.lost is None]

    def watch(self) -> None:
        """The job's workers that the master gave up on are finished for it."""
        for i, handle in enumerate(self.workers):
            if i not in self.finished and handle.lost is not None:
                self.timelines[i].lost = handle.lost
                self.finished.add(i)

    def fail(self, error: BaseException, stop: bool = True) -> None:
        """End the job with this error (its workers told to stop unless not ``stop``: the
        cluster is closing)."""
        if self.state == ENDED:
            return
        if self.state == RUNNING and stop:
            self._stop_all()
        if isinstance(error, ClusterError) and error.report is None:
            error.report = self.report
        self._end()
        self.settle(self.future, None, error)

    def cancel(self) -> bool:
        """Stop the job on every worker that holds it and free what it holds (its future is
        cancelled by the caller); False once it has ended."""
        if self.state == ENDED:
            return False
        if self.state == RUNNING:
            self._stop_all()
        self.report.cancelled = True
        self.report.rank = self.collector.rank
        self._end()
        return True

    # -- inside ---------------------------------------------------------------------------

    def _decoded(self) -> None:
        """Decodable: stop everyone at once, reduce what is pending, decode, and start
        collecting the stops' acknowledgements."""
        self.decodable = time.monotonic()
        self.report.compute = self.decodable - self.sent
        self._stop_all()
        while self.collector.pending:
            if time.monotonic() > self.deadline:
                raise self._failure(JobTimeout, "decodable, but its payloads were not "
                                                "reduced within the timeout")
            self.collector.eliminate()
        if self.progress is not None:
            self.progress(self.collector.rank, self.plan.needed)
        self.output = self.collector.result()
        plan = self.plan
        wrong = {self.owner[k] for k in self.collector.wrong} | self.unusable
        self.report.wrong = sorted(wrong)       # their kept packets did not count either
        for i, timeline in enumerate(self.timelines):
            for record in timeline.packets:
                record["innovative"] = record["innovative"] and i not in wrong and \
                    self.collector.counted(record["share"], record["piece"])
            timeline.speed = _speed(timeline, plan.work_per_packet,
                                    self.decodable - self.started)
        done = time.monotonic()
        self.report.decode = done - self.decodable
        self.report.total = self.report.encode + done - self.started
        self.report.rank = self.collector.rank
        # Collect the acknowledgements, briefly. A worker heard from lately is alive.
        self.waiting = {i for i in self._stopping()
                        if done - self.workers[i].last_seen < WATCH_EVERY or
                        not self.workers[i].gone()}
        self.state = DRAINING
        self.drained = done + STOP_GRACE
        if not self.waiting:
            self._finish()

    def _notes(self, i, frames) -> None:
        """What a worker's DONE or STOPPED tells: a relay's group's jobs, in brief
        (report.read_group; a malformed one is rejected and left out). A worker's says
        nothing: its frame is not parsed."""
        if frames and memoryview(frames[0]) == wire.EMPTY_META:
            return
        try:
            meta, _ = wire.read_control(frames)
            if "group" in meta:
                self.timelines[i].group = read_group(meta["group"])
        except (ProtocolError, ValueError):
            self.reject("malformed")

    def _drain(self, handle, header, frames) -> None:
        """Stop latency and quiet time use the workers' send times (one clock on one
        host): a stop takes effect in the worker, and the master is quiet once the last
        message of the job has left its sender."""
        i = self.index.get(handle)
        if i is None:
            return
        decodable = self.wall + (self.decodable - self.started)
        self.last_sent = max(self.last_sent or header.sent, header.sent)
        if header.kind == Kind.STOPPED:
            self.timelines[i].stopped = header.sent - self.wall
            self._notes(i, frames)
            self.report.stop_latency.append(header.sent - decodable)
            self.waiting.discard(i)
        elif header.kind == Kind.PACKET:
            self.report.wasted_after_stop += 1
        elif header.kind in (Kind.DONE, Kind.FAILED):   # it ended before the stop came
            self.waiting.discard(i)
            if header.kind == Kind.DONE:
                self._notes(i, frames)
        if not self.waiting:
            self._finish()

    def _finish(self) -> None:
        """The output, checked where asked, to the future; workers found wrong in a job
        whose output is returned are excluded from later jobs."""
        if self.last_sent is not None:
            decodable = self.wall + (self.decodable - self.started)
            self.report.quiet = max(self.last_sent - decodable, 0.0)
        plan, report = self.plan, self.report
        output = self.output
        self.roster.record_speeds(self.workers, [t.speed for t in report.workers])
        log.info("job %d decoded in %.3f s", self.epoch, report.total)
        if self.buffers is not None:
            plan.release(self.buffers)      # reused: no fresh pages next time
        try:
            if self.check is not None:
                self.check(output, report)
        except VerificationError as e:
            self.fail(e)
            return
        for i in report.wrong:                  # known wrong once the output is trusted
            self.roster.exclude(self.workers[i], f"sent a wrong result in job {self.epoch}")
        self._end()
        self.settle(self.future, (output, report), None)

    def _end(self) -> None:
        """What the job rejected into its report; what it holds let go."""
        self.state = ENDED
        rejected, self.report.stale = self.roster.transport.take_rejected()
        self.report.rejected = dict(Counter(rejected) + self.rejected)
        # the shares, decoder and inputs let go: nothing reads the plan once it ended
        self.plan = self.check = self.output = None     # type: ignore[assignment]
        if self.ended is not None:
            self.ended(self)

    def _unusable(self, i):
        """When correcting: worker i sent an invalid packet or its computation failed. It is
        finished and named wrong, and its shares' packets no longer count."""
        self.unusable.add(i)
        self.finished.add(i)
        for share in self.plan.held[i]:
            self.collector.exclude(share)

    def _packet(self, i, header, frames):
        if i in self.unusable:                      # nothing more of its counts: not read
            self.reject("wrong worker")
            return
        filed: Optional[tuple[int, int]] = self.plan.share_of(i, header.index)
        try:
            if filed is None:
                raise ValueError(f"worker {i} has no packet {header.index}")
            coeffs, payload = wire.read_packet(header, frames, self.plan.dtype)
            innovative = self.collector.add(Packet(*filed, coeffs, payload,
                                                   header.rows or None))
        except ProtocolError:
            self.reject("malformed")
            return
        except (ValueError, TypeError):
            self.reject("invalid packet")
            if self.plan.adversaries:       # well-formed but not a result: a wrong worker
                self._unusable(i)
            return
        self.timelines[i].packets.append({"index": header.index, "share": filed[0],
                                          "piece": filed[1],
                                          "sent": header.sent - self.wall,
                                          "received": self.clock(),
                                          "compute": header.compute,
                                          "innovative": bool(innovative)})
        self.timelines[i].compute += header.compute

    def _failure(self, kind, why):
        rank, needed = self.collector.rank, self.plan.needed
        what = self.plan.measure
        lost = [i for i, t in enumerate(self.timelines) if t.lost]
        running = [i for i in range(len(self.workers)) if i not in self.finished]
        message = f"{what} {rank}/{needed} {why}"
        if self.plan.adversaries and rank >= needed:
            message += (f"; the results cannot be explained with at most "
                        f"{self.plan.adversaries} wrong workers")
        if lost:
            message += (f"; {_workers(lost)} lost (" +
                        "; ".join(f"{i}: {self.timelines[i].lost}" for i in lost) + ")")
        if self.failed:
            message += (f"; {_workers(sorted(self.failed))} failed (" +
                        "; ".join(f"{i}: {self.failed[i]}" for i in sorted(self.failed)) +
                        ")")
        if running and kind is JobTimeout:
            message += f"; {_workers(running)} still running"
        self.report.rank = rank
        return kind(message, report=self.report)

    def _stopping(self) -> list:
        """The workers still at the job: given a task, not lost, not done."""
        return [i for i, h in enumerate(self.workers) if h.lost is None and
                self.plan.tasks[i] is not None and self.timelines[i].done is None]

    def _stop_all(self):
        """Tell every worker still at the job to stop, all within STOP_GRACE: a worker
        that has no room for a stop then is given up on (it is not reading its socket)."""
        until = time.monotonic() + STOP_GRACE
        for i in self._stopping():
            patience = max(0.0, min(STOP_PATIENCE, until - time.monotonic()))
            self.roster.send(self.workers[i], [self.header(Kind.STOP, i).pack()],
                              patience=patience)


def settle(future: Future, outcome: Any, error: Optional[BaseException]) -> None:
    """A job's outcome, or its error, to its future (nothing if it was cancelled)."""
    if future.set_running_or_notify_cancel():
        if error is None:
            future.set_result(outcome)
        else:
            future.set_exception(error)


def _speed(timeline, work, decodable):
    """Pieces of work per second the worker delivered: its packets (each ``work`` pieces)
    over the time from its task's sending to its last packet's arrival. A worker stopped
    before its first packet gets the most it can have been: one packet's work over its
    time at the job. None for a worker given no task or lost without a packet."""
    if timeline.share_sent is None or timeline.lost and not timeline.packets:
        return None
    count, until = len(timeline.packets), decodable
    if count:
        until = timeline.packets[-1]["received"]
    elapsed = until - timeline.share_sent
    return max(count, 1) * work / elapsed if elapsed > 0 else None


def _workers(indices) -> str:
    """'worker 3', 'workers 2 and 5', 'workers 1, 2 and 5'."""
    names = [str(i) for i in indices]
    if len(names) == 1:
        return f"worker {names[0]}"
    return f"workers {', '.join(names[:-1])} and {names[-1]}"
