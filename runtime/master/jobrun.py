"""The master's side of one job, as a state machine without I/O: events in, instructions
out (runtime/master/events.py). It sends the tasks, ingests packets as they arrive
(reducing payloads whenever the socket is idle), stops every worker the moment the
output is decodable, decodes, collects the stops' acknowledgements, verifies, and
accounts for everything in the report. It owns its state (its epoch, its report, what it
rejected); the master's thread (runtime/master/driver.py) feeds it the messages of its
epoch, the workers it lost and the clock, carries out what it returns against the
roster, the transport and the job's future, and answers each send with its outcome.

Workers are the job's places (processes); a packet is filed under the share (code index)
it belongs to, so that every share is its own sender to the decoder, and a worker found
wrong on any of its shares is named once.

The deadline holds on every path: the clock is read between any two steps of work (a
message, a payload reduced, a send), each step being an event that carries the time, so
a job ends within its timeout plus one step and the stop grace.

A job run is made from its plan before any message moves (its report knows what it
needs), and answers its events with instructions:

>>> from ffcode import GF, MDS
>>> from ffcode.runtime.master.jobs import Options, Plan
>>> from ffcode.runtime.master.events import Delivery, Sent, Start, Tick
>>> F = GF(65521)
>>> plan = Plan(MDS(F, 2, 3), (F.random((4, 3), seed=1), F.random(3, seed=2)),
...             Options(scheme="classic", timeout=5), assignment=((0,), (1,), (2,)))
>>> run = JobRun(plan, epoch=1, settings={})
>>> run.report.scheme, run.report.needed, run.state
('classic', 2, 'waiting')
>>> class Worker: host, pid, node = "here", 1, None
>>> send, = run.handle(Start((Worker(),) * 3, now=0.0, wall=0.0))
>>> [place for place, frames in send.messages], send.kind.name, send.wait_at(4.0)
([0, 1, 2], 'JOB', 1.0)
>>> run.handle(Sent(tuple(Delivery(place, now=0.1) for place in range(3)), now=0.1))
[]
>>> stop, = run.handle(Tick(now=9.0))         # past the timeout: the stops go out first
>>> out = run.handle(Sent(tuple(Delivery(place, now=9.0) for place in range(3)), now=9.0))
>>> stop.kind.name, [type(i).__name__ for i in out]
('STOP', ['Ended', 'Fail'])
>>> print(out[-1].error)
rank 0/2 no output within the timeout; workers 0, 1 and 2 still running
"""
import dataclasses
import logging
import math
from collections import Counter
from typing import Any, Callable, Optional

from ffcode import allocation
from ffcode.errors import (ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)
from ffcode.pieces import Packet
from ffcode.runtime.shared import wire
from ffcode.runtime.shared.kinds import JobPlan
from ffcode.runtime.shared.report import Report, WorkerTimeline, read_group
from ffcode.runtime.shared.task import job_message
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.runtime.master import events as ev
from ffcode.runtime.master.links import Links

REDUCE_AT_ONCE = 8          # payloads a step of decoding reduces between looks at the clock
STOP_GRACE = 0.25           # seconds to send the stops, and again to collect their acks
STOP_PATIENCE = 0.1         # seconds a stop may wait for room at one worker
TASK_PATIENCE = 2.0         # seconds a task may wait for room at one worker
WAITING, RUNNING, DECODING, DRAINING, ENDED = \
    "waiting", "running", "decoding", "draining", "ended"

log = logging.getLogger(__name__)


class JobRun:
    """One job of a plan (of any kind: runtime/shared/kinds.py's JobPlan), numbered
    ``epoch`` among its master's jobs (of transport session ``session``); ``settings`` go
    into its report as they are. ``check(output, report)`` verifies the output before it
    is returned (None: it is not verified); ``buffers``, the payload storage the plan
    hands on as it ends. ``handle(event)`` returns the instructions. ``state``: waiting
    (for its workers), running (its tasks sent), decoding (decodable: stops sent, payloads
    reduced, the output decoded), draining (collecting the stops' acknowledgements),
    ended."""

    def __init__(self, plan: JobPlan, epoch: int, settings: dict, *, session: int = 0,
                 encode: float = 0.0,
                 check: Optional[Callable[[Any, Report], None]] = None,
                 buffers: Optional[dict] = None) -> None:
        self.plan: JobPlan = plan
        self.epoch, self.session = epoch, session
        self.progress = plan.progress
        self.once = getattr(plan, "once", False)    # (a plan of an older kind may not say)
        self.count = len(plan.tasks)                # the workers it needs
        self.check, self.buffers = check, buffers
        self.state = WAITING
        self.places = 0
        self.ledger = Ledger(plan, epoch, settings, encode)
        self.report = self.ledger.report
        self.rejected = self.ledger.rejected        # this job's own drops (bad packets)
        self.owner = allocation.owners(tuple(plan.held))
        self.finished: set[int] = set()     # workers done sending (or idle, or lost)
        self.unusable: set[int] = set()     # when correcting: invalid packets or failed
        self.started = self.sent = self.decodable = math.nan
        self.deadline = math.inf            # of the job, once its tasks are sent
        self.drained = math.inf             # when collecting acknowledgements ends
        self.waiting: set[int] = set()      # decoding, draining: acknowledgements due
        self.sending: Optional[ev.Send] = None  # the send being carried out (ack: stops)
        self.then: Optional[Callable[[float], None]] = None     # once it is
        self.shipping: dict[int, int] = {}  # place -> bytes of its task
        self.last_rank = -1
        self.output: Any = None
        self.decoded = False
        self.delivered = False              # its output resolved (before it drained)
        self.out: list = []                 # the instructions of the event at hand
        faults = getattr(plan, "faults", None)      # (an optional plan field)
        self.links = Links(faults, self.count, getattr(plan, "fresh", False)) \
            if faults is not None else Links.none()

    def __repr__(self) -> str:
        return f"JobRun({self.epoch}, {self.report.scheme}, {self.state})"

    @property
    def pending(self) -> bool:
        """Payloads wait to be reduced (the master does so while its socket is idle)."""
        return self.state == RUNNING and bool(self.plan.collector.pending)

    @property
    def due(self) -> float:
        """When the job next needs the clock looked at (its deadline, or the end of its
        draining)."""
        return min(self.drained if self.state == DRAINING else self.deadline, self.links.due)

    def handle(self, event: Any) -> list:
        """The instructions in answer to one event (runtime/master/events.py). The job's
        own error (a timeout, a failure, an error of a step) ends it: its workers told to
        stop, its future to fail."""
        out: list = []
        self.out = out
        try:
            linked = self.links.up and isinstance(event, ev.Message) and \
                event.place is not None and self.links.lossy(event.place)
            if linked and not self.links.passes(event.place, event.header.kind, event.now):
                return out                          # dropped on its emulated link
            _HANDLERS[type(event)](self, event)
            if linked and self.state != ENDED and not isinstance(event, _ANSWERS):
                # (also after the output: a worker done late must hear its end arrived)
                i, header = event.place, event.header   # acknowledged, unless dropped
                ack = self.links.ack(i, self.plan.held[i], self.session, self.epoch,
                                     header.index if header.kind == Kind.POLL else None)
                if ack is not None:
                    out.append(ev.Post(((i, ack),)))
        except Exception as e:
            if self.state == ENDED:
                raise
            self._end_with(e, getattr(event, "now", math.nan))
        return out

    # -- the events ---------------------------------------------------------------------

    def _start(self, event: ev.Start) -> None:
        """Send every worker its task (an idle one is finished at once), in one send, each
        waiting for room no longer than the time left; the job's clock starts here, its
        timeout counting the encoding too."""
        plan = self.plan
        self.state = RUNNING
        self.started = event.now
        self.deadline = self.started + plan.timeout - self.report.encode
        self.places = len(event.workers)
        self.ledger.begin(event.workers, event.wall)
        log.info("job %d: %s on %d workers", self.epoch, plan.label, self.places)
        messages = []
        for i, task in enumerate(plan.tasks):
            if task is None:
                self.finished.add(i)
                continue
            frames = job_message(_header(Kind.JOB, self.session, self.epoch, i), *task)
            self.shipping[i] = sum(memoryview(f).nbytes for f in frames)
            messages.append((i, tuple(frames)))
        self._send(ev.Send(tuple(messages), TASK_PATIENCE, self.deadline,
                           load=plan.resident),
                   event.now, then=lambda now: self._progress(sent=now))

    def _send(self, send: ev.Send, now: float, then: Callable[[float], None]) -> None:
        """Carry out ``send`` (of tasks or stops), then ``then`` (at once if it sends
        nothing)."""
        if not send.messages:
            then(now)
            return
        if self.links:
            send = dataclasses.replace(send, dropped=self.links.sent(send.messages, now))
        self.sending, self.then = send, then
        self.out.append(send)

    def _sent(self, event: ev.Sent) -> None:
        """A send carried out: each task's counts in the report, a worker that could not
        take one is lost (JobTimeout if the time was up before every task went out); a
        stop is acknowledged by the workers that can still answer."""
        if self.state == ENDED:         # ended meanwhile (its progress callback raised)
            return
        send, self.sending = self.sending, None
        then, self.then = self.then, None
        for delivery in event.deliveries:
            i = delivery.place
            if send is not None and not send.ack:     # tasks
                self.ledger.shipped(i, delivery, self.shipping[i], self.started)
                if delivery.failed is not None and i not in self.finished:
                    self.ledger.timelines[i].lost = delivery.failed
                    self.finished.add(i)
            elif delivery.failed is None and delivery.answers:
                self.waiting.add(i)
        if event.late:
            raise self.ledger.failure(JobTimeout, "no output within the timeout "
                                      "(sending the tasks)", self)
        if then is not None:
            then(event.now)

    def _message(self, event: ev.Message) -> None:
        """One message of this job's epoch from one of the master's workers."""
        if self.state in (DECODING, DRAINING):
            self._drain(event)
            return
        if self.state != RUNNING:
            return
        i, header, frames = event.place, event.header, event.frames
        if i is None or header.worker != i:
            self.out.append(self.ledger.reject("unknown worker"))
            return
        timeline = self.ledger.timelines[i]
        if isinstance(event, (ev.Packet, ev.Answer)):
            self._packets(i, event)
            if not self.plan.collector.complete:
                self._progress()
                return
            # decodable: stop everyone at once, then reduce, decode, collect the acks (a
            # small job's workers each answer once and are soon done: none is stopped)
            self.decodable = event.now
            self.report.compute = self.decodable - self.sent
            self.links.count(self.ledger.timelines, decodable=True)
            self.state = DECODING
            if self.once:
                self.out.append(ev.Resume())
            else:
                self._stop_all(event.now, then=lambda now: self.out.append(ev.Resume()))
        elif isinstance(event, ev.Done):
            timeline.done = event.now - self.started
            self.finished.add(i)
            self.out.extend(self.ledger.notes(i, frames))
        elif isinstance(event, ev.Stopped):       # the worker's clock, as in _drain
            timeline.stopped = header.sent - self.ledger.wall
            self.out.extend(self.ledger.notes(i, frames))
        elif isinstance(event, ev.Failed):
            try:
                meta, _ = wire.read_control(frames)
            except ProtocolError:
                self.out.append(self.ledger.reject("malformed"))
                return
            if not self.plan.adversaries:       # a user's f that raises fails everywhere
                raise self.ledger.failure(WorkerError,
                                          f"worker {i} failed: {meta.get('error')}", self)
            self.ledger.failed[i] = str(meta.get("error"))   # unusable: as if wrong
            self._unusable(i)

    def _packets(self, i: int, event: ev.Message) -> None:
        """A packet of worker i's, or its ANSWER: every packet of its task at once, in
        order (a small job's), after which it is done. An answer is malformed from a job
        whose workers do not answer once, and invalid when it does not hold each of the
        worker's packets; when correcting, an invalid packet names its worker wrong."""
        header, answer = event.header, isinstance(event, ev.Answer)
        if answer:
            if not self.once:
                self.out.append(self.ledger.reject("malformed"))
                return
            self.ledger.timelines[i].done = event.now - self.started
            self.finished.add(i)
        if i in self.unusable:                      # nothing more of its counts: not read
            self.out.append(self.ledger.reject("wrong worker"))
            return
        try:
            if answer:
                coeffs, payloads = wire.read_answer(header, event.frames, self.plan.dtype)
                indices: Any = range(len(coeffs))
            else:
                coeff, payload = wire.read_packet(header, event.frames, self.plan.dtype)
                coeffs, payloads, indices = (coeff,), (payload,), (header.index,)
        except ProtocolError:
            self.out.append(self.ledger.reject("malformed"))
            return
        compute, received = header.compute, event.now - self.started
        links = self.links if i in self.links.got else None     # (a lossy link's)
        try:
            if answer and len(indices) != len(self.plan.held[i]) * self.plan.pieces:
                raise ValueError(f"worker {i} answered with {len(indices)} packets")
            for index, coeff, payload in zip(indices, coeffs, payloads):
                filed: Optional[tuple[int, int]] = self.plan.share_of(i, index)
                if filed is None:
                    raise ValueError(f"worker {i} has no packet {index}")
                innovative = self.plan.collector.add(Packet(*filed, coeff, payload,
                                                            header.rows or None))
                if links is not None:
                    links.received(i, index, filed[0], innovative)
                self.ledger.packet(i, index, header.sent, compute, filed, received,
                                   innovative)
                compute = 0.0               # an answer's compute is its first packet's
        except (ValueError, TypeError):
            self.out.append(self.ledger.reject("invalid packet"))
            if self.plan.adversaries:       # well-formed but not a result: a wrong worker
                self._unusable(i)

    def _lost(self, event: ev.Lost) -> None:
        """A worker the master gave up on is finished for the job."""
        if self.state == RUNNING and event.place not in self.finished:
            self.ledger.timelines[event.place].lost = event.reason
            self.finished.add(event.place)

    def _tick(self, event: ev.Tick) -> None:
        """Look at the clock: JobTimeout past the deadline, JobFailed (VerificationError)
        once no live worker is left at the job; a draining job ends when its time is up."""
        now, plan, timelines = event.now, self.plan, self.ledger.timelines
        if self.links.due <= now and self.state in (RUNNING, DRAINING):
            again, lost = self.links.overdue(now, self.state == RUNNING)
            for i, why in lost:
                if i not in self.finished:
                    timelines[i].lost = why
                    self.finished.add(i)
            if again:
                self.out.append(ev.Post(tuple(again)))
        if self.state == DRAINING:
            if now >= self.drained:
                self._finish(now)
            return
        if self.state != RUNNING or self.sending:
            return
        if now > self.deadline:
            raise self.ledger.failure(JobTimeout, "no output within the timeout", self)
        if plan.every_worker and any(t.lost and t.done is None for t in timelines):
            raise self.ledger.failure(JobFailed, "when a worker was lost: every worker's "
                                      "part is needed", self)
        if len(self.finished) == self.places:
            unexplained = plan.adversaries and sufficient(plan.collector, plan.needed)
            raise self.ledger.failure(VerificationError if unexplained else JobFailed,
                                      "after every live worker finished", self)

    def _work(self, event: ev.Work) -> None:
        """One step of work: a payload reduced while running (the socket is idle); while
        decoding, a payload reduced (within the deadline), then the output decoded, then
        the decoding's time taken and the acknowledgements collected."""
        collector = self.plan.collector if self.plan is not None else None
        if self.state == RUNNING and collector.pending:
            collector.eliminate()
            self._progress()
            return
        if self.state != DECODING or self.sending:
            return
        self.out.append(ev.Resume())
        if collector.pending:
            if event.now > self.deadline:
                raise self.ledger.failure(JobTimeout, "decodable, but its payloads were "
                                          "not reduced within the timeout", self)
            collector.eliminate(REDUCE_AT_ONCE)
        elif not self.decoded:
            if self.progress is not None:
                self.out.append(ev.Progress(self.progress, collector.rank, self.plan.needed))
            self.output = collector.result()
            wrong = {self.owner[k] for k in collector.wrong} | self.unusable
            self.ledger.decoded(sorted(wrong), collector, self.decodable - self.started)
            self.decoded = True
        else:                                   # the time it took, the acks collected
            self.out.pop()
            report = self.report
            report.decode = event.now - self.decodable
            report.total = report.encode + event.now - self.started
            report.rank = collector.rank
            self.state = DRAINING
            self.drained = event.now + STOP_GRACE
            if not getattr(self.plan, "wait_for_stops", True):   # an optional plan field
                self._finish(event.now, drained=False)
            if not self.waiting and self.state == DRAINING:
                self._finish(event.now)

    def _drain(self, event: ev.Message) -> None:
        """Stop latency and quiet time use the workers' send times (one clock on one
        host): a stop takes effect in the worker, and the master is quiet once the last
        message of the job has left its sender."""
        i = event.place
        if i is None:
            return
        self.ledger.drained(i, event, self.decodable - self.started)
        if isinstance(event, ev.Stopped):
            self.out.extend(self.ledger.notes(i, event.frames))
            self.waiting.discard(i)
        elif isinstance(event, (ev.Done, ev.Failed)):   # it ended before the stop came
            self.waiting.discard(i)
            if isinstance(event, ev.Done):
                self.out.extend(self.ledger.notes(i, event.frames))
        if not self.waiting and self.state == DRAINING:
            self._finish(event.now)

    def _end_with(self, error: Optional[BaseException], now: float,
                  stop: bool = True) -> None:
        """End the job with this error, its workers told to stop unless not ``stop`` (the
        cluster is closing); None: it is cancelled (its future is cancelled by the
        caller)."""
        if self.state == ENDED:
            return
        if self.delivered:                  # its output went out: only the drain is cut
            self.sending = self.then = None
            self._end(None)
            return
        if isinstance(error, ClusterError) and error.report is None:
            error.report = self.report
        if error is None:
            self.report.cancelled = True
            self.report.rank = self.plan.collector.rank
        if self.state == RUNNING and stop:
            self._stop_all(now, then=lambda now: self._end(error))
        else:
            self.sending = self.then = None
            self._end(error)

    # -- inside ---------------------------------------------------------------------------

    def _finish(self, now: float, drained: bool = True) -> None:
        """The output, checked where asked, to the future, once: before the job drained
        when it does not wait for its stops (not ``drained``); once drained, the report
        completed. Workers found wrong in a job whose output is returned are excluded
        from later jobs."""
        report, outcome = self.report, None
        if drained:
            self.ledger.quiet(self.decodable - self.started)
            self.out.append(ev.RecordSpeeds(tuple(t.speed for t in report.workers)))
            log.info("job %d decoded in %.3f s", self.epoch, report.total)
            if self.buffers is not None:
                self.plan.release(self.buffers)     # reused: no fresh pages next time
        if not self.delivered:
            try:
                if self.check is not None:
                    self.check(self.output, report)
            except VerificationError as e:
                self._end_with(e, now)
                return
            for i in report.wrong:              # known wrong once the output is trusted
                self.out.append(ev.Exclude(i, f"sent a wrong result in job {self.epoch}"))
            self.delivered, outcome = True, (self.output, report)
            if not drained:                     # the stops' acks fill the report in after
                self.links.count(self.ledger.timelines)
                self.out.append(ev.Resolve(*outcome))
                self.output = None
                return
        self._end(None, outcome)

    def _end(self, error: Optional[BaseException], outcome: Any = None) -> None:
        """What the job rejected into its report; what it holds let go; its outcome (or
        error) to its future, unless it was cancelled."""
        self.state = ENDED
        self.report.rejected = dict(self.rejected)
        self.links.count(self.ledger.timelines)
        # the shares, decoder and inputs let go: nothing reads the plan once it ended
        self.plan = self.check = self.output = None     # type: ignore[assignment]
        self.out.append(ev.Ended(self.report))
        if outcome is not None:
            self.out.append(ev.Resolve(*outcome))
        elif error is not None:
            self.out.append(ev.Fail(error))

    def _unusable(self, i: int) -> None:
        """When correcting: worker i sent an invalid packet or its computation failed. It is
        finished and named wrong, and its shares' packets no longer count."""
        self.unusable.add(i)
        self.finished.add(i)
        for share in self.plan.held[i]:
            self.plan.collector.exclude(share)

    def _progress(self, sent: Optional[float] = None) -> None:
        """progress(rank, needed) as the rank grows (and once at the start: ``sent``, when
        the tasks were)."""
        if sent is not None:
            self.sent = sent
        rank = self.plan.collector.rank
        if self.progress is not None and rank != self.last_rank:
            self.last_rank = rank
            self.out.append(ev.Progress(self.progress, rank, self.plan.needed))

    def _stop_all(self, now: float, then: Callable[[float], None]) -> None:
        """Tell every worker still at the job (given a task, not lost, not done) to stop,
        all within STOP_GRACE: a worker that has no room for a stop then is given up on
        (it is not reading its socket); ``then`` once they are sent."""
        messages = tuple(
            (i, (Header(Kind.STOP, self.session, self.epoch, i,
                        index=self.links.lossy(i)).pack(),))    # 1: answer it, even unknown
            for i, t in enumerate(self.ledger.timelines)
            if t.lost is None and self.plan.tasks[i] is not None and t.done is None)
        self._send(ev.Send(messages, STOP_PATIENCE, now + STOP_GRACE, ack=True), now, then)



class Ledger:
    """A job's report as it runs: each worker's timeline (on the job's clock: seconds
    since its tasks went out; the workers' send times on ``wall``), what the job
    rejected, which workers failed, and the error that names them."""

    def __init__(self, plan: JobPlan, epoch: int, settings: dict, encode: float) -> None:
        self.report = Report(plan.label, plan.name, len(plan.tasks), plan.pieces,
                             plan.needed)
        self.report.settings, self.report.job, self.report.encode = settings, epoch, encode
        self.held, self.measure, self.needed = plan.held, plan.measure, plan.needed
        self.adversaries, self.work = plan.adversaries, plan.work_per_packet
        self.rejected: Counter[str] = Counter()
        self.timelines: list = []
        self.failed: dict[int, str] = {}    # when correcting: worker -> its error
        self.wall = math.nan
        self.last_sent: Optional[float] = None  # draining: the latest message's send time

    def begin(self, workers: tuple, wall: float) -> None:
        self.wall = wall
        self.timelines = [WorkerTimeline(i, h.host, h.pid, h.node, list(self.held[i]))
                          for i, h in enumerate(workers)]
        self.report.workers = self.timelines

    def reject(self, reason: str) -> ev.Reject:
        self.rejected[reason] += 1
        return ev.Reject(reason)

    def shipped(self, i: int, sent: ev.Delivery, nbytes: int, started: float) -> None:
        timeline = self.timelines[i]
        timeline.reloaded = sent.reloaded
        if sent.failed is None:
            timeline.share_sent = sent.now - started
            timeline.shipped = timeline.reloaded + nbytes

    def packet(self, i: int, index: int, sent: float, compute: float, filed: tuple,
               received: float, innovative: Any) -> None:
        timeline = self.timelines[i]
        timeline.packets.append({"index": index, "share": filed[0], "piece": filed[1],
                                 "sent": sent - self.wall, "received": received,
                                 "compute": compute, "innovative": bool(innovative)})
        timeline.compute += compute

    def notes(self, i: int, frames: list) -> list:
        """What a worker's DONE or STOPPED tells: a relay's group's jobs, in brief
        (report.read_group; a malformed one is rejected and left out). A worker's says
        nothing: its frame is not parsed."""
        if frames and memoryview(frames[0]) == wire.EMPTY_META:
            return []
        try:
            meta, _ = wire.read_control(frames)
            if "group" in meta:
                self.timelines[i].group = read_group(meta["group"])
        except (ProtocolError, ValueError):
            return [self.reject("malformed")]
        return []

    def decoded(self, wrong: list, collector: Any, decodable: float) -> None:
        """The workers found wrong (their kept packets did not count either), and each
        worker's speed up to when the output was decodable."""
        self.report.wrong = wrong
        for i, timeline in enumerate(self.timelines):
            for record in timeline.packets:
                record["innovative"] = record["innovative"] and i not in wrong and \
                    collector.counted(record["share"], record["piece"])
            timeline.speed = _speed(timeline, self.work, decodable)

    def drained(self, i: int, event: ev.Message, decodable: float) -> None:
        """A message after the stops: a stop's latency, a packet wasted."""
        header = event.header
        self.last_sent = max(self.last_sent or header.sent, header.sent)
        if isinstance(event, ev.Stopped):
            self.timelines[i].stopped = header.sent - self.wall
            self.report.stop_latency.append(header.sent - (self.wall + decodable))
        elif isinstance(event, ev.Packet):
            self.report.wasted_after_stop += 1

    def quiet(self, decodable: float) -> None:
        if self.last_sent is not None:
            self.report.quiet = max(self.last_sent - (self.wall + decodable), 0.0)

    def failure(self, kind: type, why: str, run: "JobRun") -> ClusterError:
        rank, needed = run.plan.collector.rank, self.needed
        lost = [i for i, t in enumerate(self.timelines) if t.lost]
        running = [i for i in range(run.places) if i not in run.finished]
        message = f"{self.measure} {rank}/{needed} {why}"
        missing = getattr(run.plan.collector, "missing", "")    # what a collector may say
        if missing:                                             # it still lacks
            message += f"; {missing}"
        if self.adversaries and sufficient(run.plan.collector, needed):
            message += (f"; the results cannot be explained with at most "
                        f"{self.adversaries} wrong workers")
        if lost:
            message += (f"; {_workers(lost)} lost (" +
                        "; ".join(f"{i}: {self.timelines[i].lost}" for i in lost) + ")")
        if self.failed:
            failed = sorted(self.failed)
            message += (f"; {_workers(failed)} failed (" +
                        "; ".join(f"{i}: {self.failed[i]}" for i in failed) + ")")
        if running and kind is JobTimeout:
            message += f"; {_workers(running)} still running"
        self.report.rank = rank
        return kind(message, report=self.report)


def _header(kind: Kind, session: int, epoch: int, worker: int) -> Header:
    return Header(kind, session, epoch, worker)


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


_ANSWERS = (ev.Taken, ev.Stopped)       # a worker's answers: not acknowledged in turn
_HANDLERS: dict = {
    ev.Start: JobRun._start, ev.Sent: JobRun._sent, ev.Lost: JobRun._lost,
    ev.Tick: JobRun._tick, ev.Work: JobRun._work,
    ev.Message: JobRun._message, ev.Packet: JobRun._message, ev.Answer: JobRun._message,
    ev.Done: JobRun._message,
    ev.Stopped: JobRun._message, ev.Failed: JobRun._message, ev.Taken: JobRun._message,
    ev.Cancel: lambda run, event: run._end_with(None, event.now),
    ev.Abort: lambda run, event: run._end_with(event.error, event.now, event.stop)}


def sufficient(collector: Any, needed: int) -> bool:
    """Whether what arrived would decode if every sender were honest: the rank needed, or
    what a collector says of itself (a gradient code's span of the all-ones vector)."""
    said = getattr(collector, "sufficient", None)
    return bool(said) if said is not None else collector.rank >= needed
