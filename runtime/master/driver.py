"""The master's one thread on its socket, serving every job in flight.

It owns the transport and the roster: it takes each message, hands a worker's message to
the job of its epoch (another epoch's is stale), starts the jobs that
wait as soon as their workers are connected (lost workers replaced first, once for all
jobs), watches the workers, looks at each job's clock, and reduces payloads while the
socket is idle, taking the jobs in turn. Other threads never touch the socket: they ``post``
requests (load, unload, exclude, cancel), which this thread runs between messages, and a
``wake`` ends its wait for them at once. A job's future with done-callbacks is resolved
in a thread of its own (``Callbacks``), so that they never hold up the master's thread;
one without is resolved here, at once.

A job's run (runtime/master/jobrun.py) does no I/O: this thread is its shell (``Job``),
feeding it events (runtime/master/events.py) with the time and carrying out the
instructions it returns. What waits for workers, a job or a request (``Waiter``), is
started and failed through one small interface: ``count``, ``wait_for``, ``until``,
``place(roster, live)``, ``start(workers)``, ``fail(error, stop)``.

A job's error ends that job alone; closing the cluster (``shutdown``: the thread, then
the workers, the engine and the socket) ends every job in flight with ClusterError.

A request that needs workers runs once they are connected:

>>> waiter = Waiter(2, timeout=1.0, fn=len)
>>> waiter.start(["worker 0", "worker 1"])
>>> waiter.future.result()
2
"""
from __future__ import annotations

import logging
import math
import queue
import shutil
import threading
import time
from collections import Counter, deque
from concurrent.futures import Future, TimeoutError as WaitTimeout
from typing import Any, Callable, Optional

from ffcode.codes.base import Output
from ffcode.errors import ClusterError
from ffcode.runtime.master import events as ev
from ffcode.runtime.master.jobrun import ENDED, RUNNING, WAITING, JobRun
from ffcode.runtime.shared.report import Report
from ffcode.runtime.master.roster import WATCH_EVERY, Roster

Outcome = tuple[Output, Report]     # a job's: its output (LCC's: a list of arrays), its report

IDLE = 0.001                # a socket silent this long is idle: time to reduce a payload
LOOK_EVERY = 0.05           # seconds the thread waits for a message at most
NOTICE_EVERY = 0.1          # seconds a caller waits on a job before looking at its signals

log = logging.getLogger(__name__)


class JobFuture(Future[Outcome]):
    """A job in flight on a cluster, as ``Cluster.submit`` returns it: a
    ``concurrent.futures.Future`` resolving to ``(output, report)``, or raising the job's
    error (JobFailed, JobTimeout, VerificationError, WorkerError, ClusterError).
    ``report`` is the job's report, filled in as the job runs; ``number`` its number on
    the cluster. ``running()`` is true while its tasks are on the workers. ``cancel()``
    stops the job, also a running one, on every worker that holds it and frees what the
    master holds for it (its report then says ``cancelled``); False once it has ended.
    Its done-callbacks run in the cluster's callback thread, in the order the jobs end;
    they may submit jobs to the cluster (not wait for one: chain them with callbacks).
    While in flight it keeps its cluster open (``owner``), and lets go as it resolves.
    (A future without done-callbacks is resolved in the master's thread at once: nothing
    of the caller's runs there, and the hand-over to the callback thread is saved.)"""

    def __init__(self, driver: "Driver", job: "Job", owner: Any = None) -> None:
        super().__init__()
        self._driver, self._job, self._owner = driver, job, owner
        self.watch = threading.Lock()           # held while it is resolved at once
        self.watched = False                    # a done-callback was added
        super().add_done_callback(_let_go)      # first: before the user's callbacks

    def add_done_callback(self, fn: Callable[[Future], object]) -> None:
        """As Future's; the callback runs in the cluster's callback thread (or at once in
        this thread when the job has ended)."""
        with self.watch:
            self.watched = True
        super().add_done_callback(fn)

    @property
    def report(self) -> Report:
        return self._job.run.report

    @property
    def number(self) -> int:
        return self._job.run.epoch

    def result(self, timeout: Optional[float] = None) -> Outcome:
        """As ``Future.result``; Ctrl-C raises KeyboardInterrupt at once (``result_of``).
        ClusterError at once from a done-callback of the same cluster while the job is in
        flight: its resolution waits for that callback to return."""
        if not self.done():
            self._driver.callbacks.refuse("JobFuture.result")
        return result_of(self, timeout)

    def running(self) -> bool:
        """Whether the job's tasks are on its workers (it may still be cancelled)."""
        return not self.done() and self._job.run.state not in (WAITING, ENDED)

    def cancel(self) -> bool:
        if self.done():
            return self.cancelled()
        try:
            if not self._driver.call(self._job.cancel):
                return self.cancelled()
        except ClusterError:                # the cluster closed: the job failed with it
            return self.cancelled()
        cancelled = super().cancel()
        if cancelled:                       # wakes concurrent.futures.wait and as_completed
            self.set_running_or_notify_cancel()
        return cancelled

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled() else "done" if self.done() else \
            "running" if self.running() else "waiting"
        return f"<JobFuture {self.number} {self.report.scheme} {state}>"


def _let_go(future: Any) -> None:     # a JobFuture (Future's callbacks take any Future)
    """A resolved job's future frees its slot (before its callbacks run: one may submit
    the next job) and no longer keeps its cluster open."""
    future._driver.slots.release()
    future._owner = None


def result_of(future: Future, timeout: Optional[float] = None) -> Any:
    """``future.result(timeout)``, waited for in slices of NOTICE_EVERY seconds: Ctrl-C
    raises KeyboardInterrupt at once even when the signal reached another thread (a
    lock's wait is woken only by a signal to its own thread)."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        left = NOTICE_EVERY if end is None else \
            min(NOTICE_EVERY, max(end - time.monotonic(), 0.0))
        try:
            return Future.result(future, left)
        except WaitTimeout:
            if future.done() or end is not None and time.monotonic() >= end:
                raise


class Callbacks:
    """The thread that resolves a cluster's job futures, in the order the jobs end: their
    done-callbacks run here, so that a slow one never holds up the master's thread (which
    would give up on every worker it stopped reading), and one may submit a job."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="ffcode-callbacks",
                                       daemon=True)
        self.thread.start()

    def inside(self) -> bool:
        return threading.get_ident() == self.thread.ident

    def refuse(self, what: str) -> None:
        """ClusterError for a wait on a job from inside the thread: it would never end."""
        if self.inside():
            raise ClusterError(f"{what} cannot wait for a job inside a done-callback of the "
                               f"same cluster (the job's future resolves after the callback "
                               f"returns): add a done-callback to it instead, or wait in "
                               f"another thread.")

    def settle(self, future: Future, outcome: Any, error: Optional[BaseException]) -> None:
        """``settle(future, outcome, error)``, in the thread; a JobFuture without
        done-callbacks at once, here (one added meanwhile waits, then runs at once in the
        thread that adds it, as for any future that is done)."""
        if isinstance(future, JobFuture):
            with future.watch:
                if not future.watched:
                    settle(future, outcome, error)
                    return
        self.queue.put((future, outcome, error))

    def close(self) -> None:
        """End the thread once what it was given is done."""
        self.queue.put(None)

    def join(self) -> None:
        """Wait for the thread to end (not from inside it: a callback closing the cluster)."""
        if not self.inside():
            self.thread.join()

    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            try:
                settle(*item)           # Future logs a callback's exception itself
            except Exception:
                log.exception("resolving a job's future")


class Slots:
    """The jobs a cluster holds at once: one taken by each submit, given back as the job's
    future resolves. Closing wakes every submit waiting for one, with ClusterError."""

    def __init__(self, count: int) -> None:
        self.free, self.closed = count, False
        self.condition = threading.Condition()

    def take(self, block: bool) -> bool:
        """Take a slot, waiting for one if ``block`` (in slices: Ctrl-C stays prompt, as in
        ``result_of``); False if none is free and not ``block``."""
        with self.condition:
            while block and not self.free and not self.closed:
                self.condition.wait(NOTICE_EVERY)
            if self.closed:
                raise ClusterError("This cluster is closed.")
            if not self.free:
                return False
            self.free -= 1
            return True

    def release(self) -> None:
        with self.condition:
            self.free += 1
            self.condition.notify()

    def close(self) -> None:
        with self.condition:
            self.closed = True
            self.condition.notify_all()


class Waiter:
    """A request that needs ``count`` connected workers: ``fn(workers)`` runs in the
    master's thread once they are there, its result (or error) to the future."""

    def __init__(self, count: int, timeout: float, fn: Callable[[list], Any]) -> None:
        self.count, self.wait_for, self.fn = count, timeout, fn
        self.future: Future = Future()
        self.until = math.inf

    def place(self, roster: Roster, live: list) -> list:
        """The workers it gets of those connected."""
        return live[:self.count]

    def start(self, workers: list) -> None:
        try:
            self.future.set_result(self.fn(workers))
        except Exception as e:
            self.future.set_exception(e)

    def fail(self, error: BaseException, stop: bool = True) -> None:
        self.future.set_exception(error)


class Job:
    """A job run as the master's thread carries it out: its events fed in with the time,
    its instructions carried out against the roster, the transport and its future (given
    by ``settle(future, outcome, error)``: the driver's callback thread)."""

    def __init__(self, driver: "Driver", run: JobRun) -> None:
        self.driver, self.run = driver, run
        self.roster, self.transport = driver.roster, driver.transport
        self.count, self.wait_for, self.until = run.count, driver.start_timeout, math.inf
        self.resident = run.plan.resident
        self.future: Future = Future()
        self.workers: list = []
        self.index: dict = {}

    def uses(self, data: Any) -> bool:
        """Whether the job runs on this resident data."""
        return self.resident is not None and self.resident is data

    def place(self, roster: Roster, live: list) -> list:
        """Its workers: on resident data, each holder in the place whose shares it holds."""
        workers = live[:self.count]
        return workers if self.resident is None else roster.in_place(workers, self.resident)

    def start(self, workers: list) -> None:
        # by handle, not routing id: a worker admitted again since is a new handle
        self.workers, self.index = workers, {h: i for i, h in enumerate(workers)}
        self.driver.running[self.run.epoch] = self
        self.feed(ev.Start(tuple(workers), time.monotonic(), time.time()))

    def fail(self, error: BaseException, stop: bool = True) -> None:
        self.feed(ev.Abort(error, time.monotonic(), stop))

    def cancel(self) -> bool:
        """Stop the job on every worker that holds it and free what it holds (its future is
        cancelled by the caller); False once it has ended."""
        if self.run.state == ENDED:
            return False
        self.feed(ev.Cancel(time.monotonic()))
        return True

    def message(self, handle: Any, header: Any, frames: list) -> None:
        self.feed(ev.message(self.index.get(handle), header, frames, time.monotonic()))

    def watch(self, now: float) -> None:
        """The job's workers that the master gave up on are finished for it."""
        for i, handle in enumerate(self.workers):
            if i not in self.run.finished and handle.lost is not None:
                self.feed(ev.Lost(i, handle.lost, now))

    def at_work(self) -> list:
        """The job's workers still at it (not finished, not lost)."""
        return [h for i, h in enumerate(self.workers) if i not in self.run.finished and
                h.lost is None]

    def feed(self, event: Any) -> None:
        """One event, and the events its instructions answer with, in turn."""
        events: Optional[deque] = None
        while True:
            for instruction in self.run.handle(event):
                try:
                    answer = self._carry(instruction)
                except Exception as e:          # a progress callback's: the job's error,
                    events = deque() if events is None else events
                    events.appendleft(ev.Abort(e, time.monotonic()))    # before the rest
                    continue
                if answer is not None:
                    events = deque() if events is None else events
                    events.append(answer)
            if not events:
                return
            event = events.popleft()

    def _carry(self, instruction: Any) -> Any:
        """Carry out one instruction; the event that answers it, if any."""
        kind = type(instruction)
        if kind is ev.Send:
            return self._send(instruction)
        if kind is ev.Resume:
            return ev.Work(time.monotonic())
        if kind is ev.Post:
            for place, frames in instruction.messages:
                handle = self.workers[place]
                if handle.lost is None:     # no room: as if the link dropped it
                    self.transport.send(handle.ident, list(frames), patience=0.0)
        if kind is ev.Progress:
            instruction.fn(instruction.rank, instruction.needed)
        elif kind is ev.Reject:
            self.transport.rejected_total[instruction.reason] += 1
        elif kind is ev.Exclude:
            self.roster.exclude(self.workers[instruction.place], instruction.reason)
        elif kind is ev.RecordSpeeds:
            self.roster.record_speeds(self.workers, list(instruction.speeds))
        elif kind is ev.Ended:
            report = instruction.report
            rejected, report.stale = self.transport.take_rejected()
            report.rejected = dict(Counter(rejected) + Counter(report.rejected))
            self.driver._ended(self)
            if self.future.done():              # cancelled: nothing more to resolve
                self._lose_gone()
        elif kind is ev.Resolve:
            self.driver.callbacks.settle(self.future, (instruction.output,
                                                       instruction.report), None)
            self._lose_gone()
        elif kind is ev.Fail:
            self.driver.callbacks.settle(self.future, None, instruction.error)
            self._lose_gone()
        return None

    def _lose_gone(self) -> None:
        """Give up on the workers still at a job whose process is gone, when the job asked
        each for one answer and sent no stop, or returned its output before its stops
        were acknowledged: no acknowledgement will tell before the next job (looked at
        once its future is settled: the caller need not wait for it)."""
        if self.run.once or self.run.delivered:
            for handle in self.at_work():
                gone = handle.gone()
                if gone:
                    self.roster.lose(handle, gone)

    def _send(self, send: ev.Send) -> ev.Sent:
        """Each message of a send to its worker, if not given up on (resident data shipped
        first where it is not held for that place), and their outcomes."""
        deliveries: list[ev.Delivery] = []
        for place, frames in send.messages:
            patience = send.wait_at(time.monotonic())
            if patience is None:
                return ev.Sent(tuple(deliveries), time.monotonic(), late=True)
            handle, reloaded = self.workers[place], 0
            if handle.lost is None:
                if send.load is not None and \
                        handle.resident.get(send.load.ident) != place:
                    reloaded = self.roster.give(handle, send.load, place)
                if place not in send.dropped:
                    self.roster.send(handle, list(frames), patience=patience)
            now = time.monotonic()
            answers = handle.lost is None and (not send.ack or now - handle.last_seen <
                                               WATCH_EVERY or not handle.gone())
            deliveries.append(ev.Delivery(place, now, handle.lost, reloaded, answers))
        return ev.Sent(tuple(deliveries), time.monotonic())


def settle(future: Future, outcome: Any, error: Optional[BaseException]) -> None:
    """A job's outcome, or its error, to its future (nothing if it was cancelled)."""
    if future.set_running_or_notify_cancel():
        if error is None:
            future.set_result(outcome)
        else:
            future.set_exception(error)


class Driver:
    """The master's thread (see the module's docstring). ``slots``: one is released as each
    job's future resolves (a submit waiting for one sees a job done), all closed as the
    thread ends; ``start_timeout`` bounds a job's wait for its workers; ``on_exit()`` gives
    a function (or None) to run in the thread when it ends because the cluster was closed
    from inside it (a job's progress callback)."""

    def __init__(self, roster: Roster, endpoint: Optional[str], start_timeout: float,
                 slots: Slots) -> None:
        self.roster, self.transport = roster, roster.transport
        self.endpoint, self.start_timeout, self.slots = endpoint, start_timeout, slots
        self.flight: dict[int, Job] = {}        # epoch -> job not ended, waiting or not
        self.running: dict[int, Job] = {}       # epoch -> job, its tasks sent
        self.waiting: list = []                 # jobs and requests waiting for workers
        self.unloads: list = []                 # resident data to forget once unused
        self.requests: deque = deque()          # (fn, args, future) from other threads
        self.lock = threading.Lock()            # guards ``open`` with ``requests``
        self.open = True
        self.on_exit: Optional[Callable[[], Any]] = None    # gives the function, or None
        self.closed_inside = False          # the cluster was closed from inside the thread
        self.watched = self.checked = 0.0
        self.turn = 0                           # the next job to reduce a payload of
        self.callbacks = Callbacks()            # resolves the jobs' futures
        self.thread = threading.Thread(target=self._loop, name="ffcode-master", daemon=True)
        self.thread.start()

    # -- from any thread --------------------------------------------------------------------

    def inside(self) -> bool:
        """Whether the caller is the master's thread (a job's progress callback)."""
        return threading.get_ident() == self.thread.ident

    def outside(self, what: str) -> "Driver":
        """This driver, for a call that waits on its thread: refused from inside it (a
        job's progress callback), where the wait would never end."""
        if self.inside():
            raise ClusterError(f"{what} cannot be called from inside a job on the same "
                               f"cluster (its progress callback): call it after the job "
                               f"returns, or from another thread.")
        return self

    def post(self, fn: Callable, *args: Any) -> Future:
        """Run fn(*args) in the master's thread; its result (or error) to the future
        returned. At once from inside that thread; ClusterError once it has ended."""
        future: Future = Future()
        if self.inside():
            try:
                future.set_result(fn(*args))
            except Exception as e:
                future.set_exception(e)
            return future
        with self.lock:
            if not self.open:
                raise ClusterError("This cluster is closed.")
            self.requests.append((fn, args, future))
        self.transport.wake()
        return future

    def call(self, fn: Callable, *args: Any) -> Any:
        """fn(*args) run in the master's thread, waited for."""
        return result_of(self.post(fn, *args))

    def submit(self, run: JobRun, owner: Any = None) -> JobFuture:
        """The job, queued for its workers; its future keeps ``owner`` (its cluster) until
        it resolves."""
        job = Job(self, run)
        job.future = future = JobFuture(self, job, owner)
        self.post(self._enqueue, job, job)
        return future

    def when_ready(self, count: int, timeout: float, fn: Callable[[list], Any]) -> Future:
        """A future of fn(workers) run once ``count`` workers are connected (ClusterError
        after timeout seconds)."""
        waiter = Waiter(count, timeout, fn)
        self.post(self._enqueue, waiter)
        return waiter.future

    def jobs(self) -> list:
        """The jobs in flight (waiting or running), in the master's thread."""
        return list(self.flight.values())

    def unload(self, data: Any) -> None:
        """Free the workers' memory of resident data now, or as the last job on it ends
        (in the master's thread)."""
        if any(job.uses(data) for job in self.jobs()):
            self.unloads.append(data)
        else:
            self.roster.forget(data)

    def stop(self) -> None:
        """End the thread (the transport is closing): every job in flight fails, its future
        resolved once this returns (unless called from inside one of the two threads)."""
        self.transport.closing = True
        self.transport.wake()
        if self.inside():
            self.closed_inside = True
        else:
            self.thread.join()
            self.callbacks.join()

    # -- the thread ---------------------------------------------------------------------------

    def _enqueue(self, item: Any, job: Optional[Job] = None) -> None:
        """What waits for workers (a job, also in flight, or a request), queued."""
        item.until = time.monotonic() + item.wait_for
        self.waiting.append(item)
        if job is not None:
            self.flight[job.run.epoch] = job

    def _ended(self, job: Job) -> None:
        self.running.pop(job.run.epoch, None)
        self.flight.pop(job.run.epoch, None)
        if job in self.waiting:
            self.waiting.remove(job)
        for data in list(self.unloads):
            if not any(other.uses(data) for other in self.jobs()):
                self.unloads.remove(data)
                self.roster.forget(data)

    def _loop(self) -> None:
        error = ClusterError("The cluster was closed during the job.")
        try:
            while not self.transport.closing:
                self._serve()
                now = time.monotonic()
                if self.waiting:
                    self._admit(now)
                if now - self.watched >= WATCH_EVERY:
                    self.watched = now
                    self._watch(now)
                for job in list(self.running.values()):
                    job.feed(ev.Tick(now))
                self._ingest(now)
        except ClusterError:                    # the transport is closing
            pass
        except BaseException as e:             # a bug: no job may wait forever for it
            log.exception("the master's thread failed")
            error = ClusterError(f"The master's thread failed: {type(e).__name__}: {e}")
        finally:
            with self.lock:
                self.open = False
                requests, self.requests = list(self.requests), deque()
            for fn, args, future in requests:
                future.set_exception(ClusterError("This cluster is closed."))
                if fn == self._enqueue:             # a job or request not yet taken in
                    self.waiting.append(args[0])
            for item in self.waiting + list(self.running.values()):
                try:
                    item.fail(error, stop=False)
                except Exception:               # the others still fail
                    log.exception("ending a job as the cluster closed")
            self.slots.close()
            self.callbacks.close()
            close = self.on_exit() if self.on_exit is not None and self.closed_inside \
                else None
            if close is not None:
                close()

    def _serve(self) -> None:
        while self.requests:
            fn, args, future = self.requests.popleft()
            try:
                future.set_result(fn(*args))
            except Exception as e:
                future.set_exception(e)

    def _admit(self, now: float) -> None:
        """Start what waits for workers once enough are connected (lost workers that the
        engine started are replaced first); ClusterError to what waited too long."""
        engine = self.roster.engine
        if engine is not None:
            if now - self.checked >= WATCH_EVERY:
                self.checked = now
                try:
                    engine.check()
                except ClusterError as e:
                    for item in self.waiting:
                        item.fail(e)
                    self.waiting = []
                    return
            self.roster.replace_lost()
        live = self.roster.live()
        for item in list(self.waiting):
            if len(live) >= item.count:
                self.waiting.remove(item)
                item.start(item.place(self.roster, live))
            elif now > item.until:
                self.waiting.remove(item)
                item.fail(ClusterError(
                    f"Only {len(live)} of {item.count} workers connected to {self.endpoint} "
                    f"within {item.wait_for:g} s." +
                    (engine.missing() if engine is not None else "")))

    def _watch(self, now: float) -> None:
        """Give up on the workers at a job whose process died or that fell silent, for
        every job they hold (idle ones are looked at as a job is about to start)."""
        running = [job for job in self.running.values() if job.run.state == RUNNING]
        busy = {handle for job in running for handle in job.at_work()}
        for handle in busy:
            self.roster.watch(handle, now)
        for job in running:
            job.watch(now)

    def _ingest(self, now: float) -> None:
        """Take the messages waiting (for at most WATCH_EVERY, so that the clock is looked
        at even while they keep coming); when none came, reduce a payload of a job."""
        pending = [job for job in self.running.values() if job.run.pending]
        due = min((job.run.due for job in self.running.values()), default=math.inf)
        timeout = 0.0 if self.requests else IDLE if pending else \
            min(LOOK_EVERY, max(0.0, due - now))
        busy = False
        for handle, header, frames in self.roster.receive(timeout, until=now + WATCH_EVERY):
            busy = True
            job = self.running.get(header.epoch)
            if job is None:
                self.transport.reject("stale")
            else:
                job.message(handle, header, frames)
        if not busy and pending:
            job = pending[self.turn % len(pending)]
            self.turn += 1
            if job.run.pending:
                job.feed(ev.Work(time.monotonic()))


def shutdown(owned: dict) -> None:
    """Close what a cluster owns: stop the master's thread (every job in flight fails),
    tell the workers to exit, kill what the engine started, release the socket and the
    private directory."""
    driver, roster = owned.get("driver"), owned.get("roster")
    if driver is not None:
        driver.stop()
    if roster is not None:
        for handle in roster.live():
            roster.shut_down(handle)
    owned["transport"].linger = 0 if owned.get("engine") else 500    # SHUTDOWNs leave
    if owned.get("engine") is not None:
        owned["engine"].close()
    owned["transport"].close()
    if owned["tmpdir"]:
        shutil.rmtree(owned["tmpdir"], ignore_errors=True)
