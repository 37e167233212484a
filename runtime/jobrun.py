"""The master's side of one job: send the tasks, ingest packets as they arrive (reducing
payloads whenever the socket is idle), watch the workers, stop them all the moment the
output is decodable, and account for everything in the report. A job run owns its state
(its epoch, its report, what it rejected) and reaches the workers through the roster only.

Workers are the job's places (processes); a packet is filed under the share (code index)
it belongs to, so that every share is its own sender to the decoder, and a worker found
wrong on any of its shares is named once.

The deadline holds on every path: the clock is read between any two steps of work (a
message, a payload reduced, a stop sent), so a job ends within its timeout plus one step
and the stop grace.

A job run is made from its plan before any message moves (its report knows what it needs):

>>> from ffcode import GF, MDS
>>> from ffcode.runtime.jobs import Options, Plan
>>> F = GF(65521)
>>> plan = Plan(MDS(F, 2, 3), (F.random((4, 3), seed=1), F.random(3, seed=2)),
...             Options(scheme="classic"), assignment=((0,), (1,), (2,)))
>>> run = JobRun(plan, workers=[], roster=None, epoch=1, settings={})
>>> run.report.scheme, run.report.needed
('classic', 2)
"""
import math
import time

from collections import Counter

from ffcode import allocation
from ffcode.errors import JobFailed, JobTimeout, ProtocolError, VerificationError, WorkerError
from ffcode.pieces import Packet
from ffcode.runtime import wire
from ffcode.runtime.jobs import Plan
from ffcode.runtime.report import Report, WorkerTimeline
from ffcode.runtime.roster import WATCH_EVERY, Roster
from ffcode.runtime.wire import Header, Kind

STOP_GRACE = 0.25           # seconds to send the stops, and again to collect their acks
STOP_PATIENCE = 0.1         # seconds a stop may wait for room at one worker
TASK_PATIENCE = 2.0         # seconds a task may wait for room at one worker
IDLE = 0.001                # a socket silent this long is idle: time to reduce a payload


class JobRun:
    """One job of a plan on its workers (place -> WorkerHandle), numbered ``epoch`` among
    its master's jobs; ``settings`` go into its report as they are."""

    def __init__(self, plan: Plan, workers: list, roster: Roster, epoch: int,
                 settings: dict) -> None:
        self.plan, self.roster, self.epoch = plan, roster, epoch
        self.progress = plan.options.progress
        self.workers = workers
        self.index = {h.ident: i for i, h in enumerate(workers)}
        code = plan.code
        self.report = Report(plan.scheme.value, repr(code), len(workers), plan.pieces,
                             plan.needed)
        self.report.settings = settings
        self.rejected: Counter[str] = Counter()     # this job's own drops (bad packets)
        self.owner = allocation.owners(plan.assignment)
        self.timelines = [WorkerTimeline(i, h.host, h.pid, h.node, list(plan.held[i]))
                          for i, h in enumerate(workers)]
        self.report.workers = self.timelines
        self.finished: set[int] = set()     # workers done sending (or idle, or lost)
        self.unusable: set[int] = set()     # when correcting: invalid packets or failed
        self.failed: dict[int, str] = {}    # when correcting: worker -> its error
        self.decodable = math.nan           # when the output became decodable

    def header(self, kind, worker=-1):
        return Header(kind, self.roster.transport.session, self.epoch, worker)

    def reject(self, reason):
        self.rejected[reason] += 1
        self.roster.transport.rejected_total[reason] += 1

    def clock(self):
        return time.monotonic() - self.start

    def run(self, encode, timeout):
        """Send the tasks, ingest until decodable or failed, stop everyone, decode; the
        total counts the encoding plus this, not the bookkeeping after the output. The
        report counts what was dropped meanwhile, also when the job fails."""
        try:
            return self._run(encode, timeout)
        finally:
            rejected, self.report.stale = self.roster.transport.take_rejected()
            self.report.rejected = dict(Counter(rejected) + self.rejected)

    def _run(self, encode, timeout):
        self.start, self.wall = time.monotonic(), time.time()
        deadline = self.start + timeout
        self.report.encode = encode
        plan = self.plan
        try:
            self._send_tasks(deadline)
            sent = time.monotonic()
            self._ingest(deadline)
            self.decodable = time.monotonic()
            self.report.compute = self.decodable - sent
        finally:
            self._stop_all()
        self._reduce(deadline)
        if self.progress is not None:
            self.progress(self.collector.rank, self.plan.needed)
        output = self.collector.result()
        wrong = {self.owner[k] for k in self.collector.wrong} | self.unusable
        self.report.wrong = sorted(wrong)       # their kept packets did not count either
        for i, timeline in enumerate(self.timelines):
            for record in timeline.packets:
                record["innovative"] = record["innovative"] and i not in wrong and \
                    self.collector.counted(record["share"], record["piece"])
            timeline.speed = _speed(timeline, plan.work_pieces / plan.pieces,
                                    self.decodable - self.start)
        done = time.monotonic()
        self.report.decode = done - self.decodable
        self.report.total = encode + done - self.start
        self._drain()
        self.report.rank = self.collector.rank
        return output, self.report

    @property
    def collector(self):
        return self.plan.collector

    def _send_tasks(self, deadline):
        """Send every worker its task (an idle one is finished at once), each send waiting
        for room no longer than the time left."""
        plan, roster = self.plan, self.roster
        for i, handle in enumerate(self.workers):
            task = plan.tasks[i]
            if task is None:
                self.finished.add(i)
                continue
            left = deadline - time.monotonic()
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

    def _ingest(self, deadline):
        """Handle messages until the output is decodable: JobTimeout past the deadline,
        JobFailed (VerificationError) once no live worker is left at the job. The clock and
        the workers are looked at every WATCH_EVERY seconds even while messages keep
        coming (a collector can be slower than the wire), and only then is the socket
        idle enough to reduce a payload."""
        last_rank, watched = -1, 0.0
        collector = self.collector
        while not collector.complete:
            now = time.monotonic()
            if now > deadline:
                raise self._failure(JobTimeout, "no output within the timeout")
            if now - watched > WATCH_EVERY:
                self._watch(now)
                watched = now
            if len(self.finished) == len(self.workers):
                unexplained = self.plan.adversaries and collector.rank >= self.plan.needed
                raise self._failure(VerificationError if unexplained else JobFailed,
                                    "after every live worker finished")
            busy, until = False, min(deadline, now + WATCH_EVERY)
            for handle, header, frames in self.roster.receive(
                    IDLE if collector.pending else min(0.05, deadline - now), self.epoch):
                busy = True
                self._message(handle, header, frames)
                if collector.complete:
                    return                          # decodable: stop everyone at once
                if time.monotonic() > until:
                    break                           # time to look at the clock again
            if not busy and collector.pending:
                collector.eliminate()               # the socket is idle: reduce a payload
            if self.progress is not None and collector.rank != last_rank:
                last_rank = collector.rank
                self.progress(last_rank, self.plan.needed)

    def _message(self, handle, header, frames):
        i = self.index.get(handle.ident)
        if i is None or header.worker != i:
            self.reject("unknown worker")
            return
        timeline = self.timelines[i]
        if header.kind == Kind.PACKET:
            self._packet(i, header, frames)
        elif header.kind == Kind.DONE:
            timeline.done = self.clock()
            self.finished.add(i)
        elif header.kind == Kind.STOPPED:             # the worker's clock, as in _drain
            timeline.stopped = header.sent - self.wall
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
        filed = self.plan.share_of(i, header.index)
        try:
            if filed is None:
                raise ValueError(f"worker {i} has no packet {header.index}")
            coeffs, payload = wire.read_packet(header, frames, self.plan.F.dtype)
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

    def _watch(self, now):
        """Give up on workers whose process died or that fell silent. A worker heard from
        since the last look is alive: its process (a /proc read, a Ray call) is not asked."""
        for i, handle in enumerate(self.workers):
            if i in self.finished:
                continue
            if self.roster.watch(handle, now) is not None:
                self.timelines[i].lost = handle.lost
                self.finished.add(i)

    def _failure(self, kind, why):
        rank, needed = self.collector.rank, self.plan.needed
        what = "results" if self.plan.scheme == "uncoded" else "rank"
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

    def _reduce(self, deadline):
        """Reduce the payloads still pending (the output reads them all), one at a time
        within the deadline."""
        while self.collector.pending:
            if time.monotonic() > deadline:
                raise self._failure(JobTimeout, "decodable, but its payloads were not "
                                                "reduced within the timeout")
            self.collector.eliminate()

    def _drain(self):
        """Collect the stop acknowledgements (briefly). Stop latency and quiet time use the
        workers' send times (one clock on one host): a stop takes effect in the worker, and
        the master is quiet once the last message of the job has left its sender."""
        now = time.monotonic()
        waiting = {i for i in self._stopping()     # a worker heard from lately is alive
                   if now - self.workers[i].last_seen < WATCH_EVERY or
                   not self.workers[i].gone()}
        decodable = self.wall + (self.decodable - self.start)
        last = None
        deadline = time.monotonic() + STOP_GRACE
        while waiting and time.monotonic() < deadline:
            for handle, header, frames in self.roster.receive(deadline - time.monotonic(),
                                                             self.epoch):
                i = self.index.get(handle.ident)
                if i is None:
                    continue
                last = max(last or header.sent, header.sent)
                if header.kind == Kind.STOPPED:
                    self.timelines[i].stopped = header.sent - self.wall
                    self.report.stop_latency.append(header.sent - decodable)
                    waiting.discard(i)
                elif header.kind == Kind.PACKET:
                    self.report.wasted_after_stop += 1
                if time.monotonic() > deadline:
                    break                   # acknowledgements still coming: enough
        if last is not None:
            self.report.quiet = max(last - decodable, 0.0)


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
