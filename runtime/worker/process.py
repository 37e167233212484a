"""A worker process: ``ffcode worker --connect ENDPOINT``, or spawned by a local Cluster.

Two threads. The main thread owns the DEALER socket: it answers the master at once (a
STOP is acknowledged within a poll, even mid-computation), sends heartbeats, and sends the
packets the compute thread hands it over an inproc pipe, paced by the injected link rate
and never blocking: everything waits on one poll with a timeout. The compute thread holds
a queue of tasks, one per job in flight: it works on those of the highest priority in
turn, a share each, so that jobs share the worker fairly and a job stopped or finished
leaves the rest at once. It checks for a stop between pieces and in every injected
pause. (A share, not a piece, is a turn: the pieces a job needs most come from the
workers fast for it, and a worker's turn at one job's share, its pieces in a row, gives
them soonest.) A small job (operands under INLINE_BYTES, no injected pauses) whose f took
little time on small operands before runs in the main thread at once when the compute
thread is idle: handing it over and its packets back would cost more than the work.
Messages ready together leave together, in one multipart message. Shares the master
loads (resident data) stay in the worker's store, by id, until it unloads them; a task
names them instead of carrying them.

It logs (``logging``, logger ``ffcode.runtime.worker.process``) its connection, each job's start,
stop and end, and its exit at INFO; trouble at WARNING and ERROR.
"""
from __future__ import annotations

import logging
import functools
import itertools
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from typing import Any, NoReturn

import zmq
from zmq.utils.monitor import recv_monitor_message

from ffcode import logs
from ffcode.errors import NoMaster
from ffcode.field import GF
from ffcode.pieces import piece_packets
from ffcode.runtime.shared import keys, kinds, wire
from ffcode.runtime.shared.faults import Link
from ffcode.runtime.shared.payloads import Coded
from ffcode.runtime.shared.task import Load, Task, Unload
from ffcode.runtime.shared.transport import HANDSHAKE_REFUSED, dial
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.runtime.worker.coded import Stopped, Unable

HEARTBEAT = 0.1             # seconds between heartbeats
ZMQ_HWM = 4                 # messages queued inside zmq; the rest wait in the outbox
PIPE = "inproc://compute"
COMPUTE_NICE = 10           # the compute thread yields the CPU to the main threads and the master
NUDGE = 5.0                 # seconds without a master before saying so (a warning)
INLINE_BYTES = 64 << 10     # a task on operands this small, with an f that took at most
INLINE_SECONDS = 0.01       # this long on such operands before, runs in the main thread
TOGETHER_BYTES = 256 << 10  # ready messages leave together up to this size (small ones gain)

log = logging.getLogger(__name__)


class Job:
    """A task: its kind (runtime/shared/kinds.py) and payload, and its shares' arrays, which
    come with it or, for resident data, from ``store``. ``coded``: the coded part of a coded
    job's or a relay's payload (None for other kinds)."""

    def __init__(self, header, meta, arrays, store):
        self.session, self.epoch, self.worker = header.session, header.epoch, header.worker
        self.task = task = Task.from_meta(meta)
        self.kind = kinds.find(meta["kind"])
        self.payload = payload = task.payload
        inner = payload if isinstance(payload, Coded) else getattr(payload, "coded", None)
        self.coded: Coded | None = inner if isinstance(inner, Coded) else None
        self.data = task.data
        if self.data is None:
            self.shares, self.args = split_shares(arrays, task.counts)
        else:                           # None when not here: the job fails, saying so
            self.shares, self.args = store.get(self.data), arrays
        self.faults = task.faults
        self.max_message = task.max_message     # the master disconnects larger parts
        self.priority = task.priority
        self.stop = threading.Event()
        self.sent = 0
        self.steps = None               # the compute thread's generator, once started
        self.spent = 0.0                # seconds its steps took so far (wall: f may wait)
        self.group: list | None = None  # a relay's: its group's jobs so far, in brief
        self.in_group: Any = None       # a relay's: its group's job in flight (a JobFuture)

    def ended(self, kind):
        """Its DONE or STOPPED message: a relay's tells its group's jobs (a snapshot: the
        compute thread may add one meanwhile)."""
        if self.group is None:              # a worker's, every job: nothing to encode
            return [self.header(kind).pack(), wire.EMPTY_META]
        return wire.control(self.header(kind), {"group": list(self.group)})

    @property
    def size(self) -> int:
        """Bytes of its operands (0 when its resident data is not here)."""
        return sum(a.nbytes for share in self.shares or () for a in share) + \
            sum(a.nbytes for a in self.args)

    @property
    def paused(self) -> bool:
        """Whether faults pause its computation (injected delays or a slowdown)."""
        return self.faults.slowdown != 1 or any(self.faults.delays)

    def header(self, kind, index=0, rows=0, compute=0.0):
        return Header(kind, self.session, self.epoch, self.worker, index, rows, time.time(),
                      compute)

    def packet(self, index: int, coeffs: Any, payload: Any, rows: int = 0,
               compute: float = 0.0) -> tuple:
        """(header, frames) of packet ``index``: its coefficients and payload (arrays)."""
        header = self.header(Kind.PACKET, index, rows, compute)
        return header, wire.packet_arrays(header, coeffs, payload)

    def done(self) -> tuple:
        """(header, frames) of its DONE: no more packets will come."""
        return self.header(Kind.DONE), self.ended(Kind.DONE)[1:]


def split_shares(arrays, counts) -> tuple:
    """(shares, the arrays after them) of a message's arrays: one share's ``counts[k]``
    arrays after another.

    >>> split_shares(["A0", "G0", "A1", "G1", "x"], (2, 2))
    ([['A0', 'G0'], ['A1', 'G1']], ['x'])
    """
    if sum(counts) > len(arrays):
        raise ValueError(f"share counts {counts!r} do not describe {len(arrays)} arrays")
    shares, at = [], 0
    for count in counts:
        shares.append(arrays[at:at + count])
        at += count
    return shares, arrays[at:]


def renice(by: int = 0, to: int | None = None):
    """Make this thread nicer by ``by`` (or set it ``to``), where the OS lets us: Linux
    sets niceness per thread, and lowering it may need privileges."""
    if hasattr(os, "setpriority"):
        thread = threading.get_native_id()
        try:
            now = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, min(19, now + by) if to is None else to)
        except OSError:
            pass


def log_to_stderr(level: int) -> None:
    """ffcode's loggers write to stderr at the master's level, a prefixed line each."""
    logs.to_stderr("ffcode worker {pid}", level)


def warm_up():
    """Pay the first-use costs (lazy imports, first kernel calls) once, before forking."""
    for p in (65521, 2**61 - 1):
        F = GF(p)
        y = F.matmul(F.random((8, 8), seed=0), F.random((8, 8), seed=1))
        for systematic in (False, True):
            for packet in piece_packets(F, y, 2, 0, seed=0, systematic=systematic):
                wire.packet(Header(Kind.PACKET, 0, 0), packet.coeffs, packet.payload)


class Queue:
    """The compute thread's tasks, one per job in flight: ``next`` gives a job of the
    highest priority, in turn with the others of that priority (round-robin), and drops
    the stopped ones; it waits while there is none."""

    def __init__(self) -> None:
        self.ready = threading.Condition()
        self.jobs: deque = deque()
        self.waiting = False            # the compute thread waits for a job

    def idle(self) -> bool:
        """Whether the compute thread waits with no job (so that it runs no f meanwhile)."""
        with self.ready:
            return self.waiting and not self.jobs

    def put(self, job) -> None:
        with self.ready:
            self.jobs.append(job)
            self.ready.notify()

    def next(self):
        with self.ready:
            while True:
                self._drop_stopped()
                if self.jobs:
                    top = max(job.priority for job in self.jobs)
                    chosen = next(job for job in self.jobs if job.priority == top)
                    self.jobs.remove(chosen)
                    self.jobs.append(chosen)    # its next turn comes after the others'
                    return chosen
                self.waiting = True
                self.ready.wait()               # holding no job meanwhile
                self.waiting = False

    def _drop_stopped(self) -> None:
        stopped = [job for job in self.jobs if job.stop.is_set()]
        for job in stopped:
            self.jobs.remove(job)
            job.steps = None        # its generator, and the shares it holds, go now

    def done(self, job) -> None:
        with self.ready:
            if job in self.jobs:
                self.jobs.remove(job)

    def wake(self) -> None:
        """Look again (a job was stopped)."""
        with self.ready:
            self.ready.notify()


def fits(job, frames) -> None:
    """ValueError for a message part larger than the master takes."""
    largest = max((memoryview(f).nbytes for f in frames), default=0)
    if largest > job.max_message:
        raise ValueError(f"a packet of {largest} bytes is larger than the master takes "
                         f"({job.max_message} bytes): use more pieces, or a Cluster with a "
                         f"larger max_message")


def describe(error: BaseException) -> str:
    """How a job's error is told to the master: its type, and its message if any.

    >>> describe(SystemExit(3)), describe(KeyboardInterrupt())
    ('SystemExit: 3', 'KeyboardInterrupt')
    """
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Worker:
    """curve: (own public key, own secret key, the master's public key) for a CURVE master;
    token: a secret the master gave this worker to prove itself with in its HELLO;
    connect_timeout: seconds to wait for the master's handshake before serve raises
    NoMaster (None: forever)."""

    def __init__(self, endpoint, slot=-1, curve=None, buffer=32 << 20, parent=None,
                 connect_timeout=None, token=None):
        self.endpoint, self.connect_timeout, self.token = endpoint, connect_timeout, token
        self.context = zmq.Context()
        try:                            # the master, as any peer is dialled
            self.dealer, self.monitor = dial(self.context, endpoint, curve, ZMQ_HWM)
        except (ValueError, zmq.ZMQError):  # bad keys or endpoint: nothing left open
            self.context.destroy(linger=0)
            raise
        self.pipe = self.context.socket(zmq.PAIR)
        self.pipe.rcvhwm = 2
        self.pipe.bind(PIPE)
        self.slot, self.buffer, self.parent = slot, buffer, parent
        self.tasks = Queue()
        self.jobs: dict = {}            # epoch -> Job, from its start until it stops or ends
        self.store: dict = {}           # resident data id -> the arrays of this worker's share
        self.runs: dict = {}            # MapReduce job -> its values kept between phases
        self.handoff: deque = deque()   # (header, frames) from the compute thread
        self.outbox: deque = deque()    # [header, frames, bytes]; header None: control
        self.queued = 0                 # bytes in the outbox
        self.head_due = None            # when the outbox's first message may leave
        self.link = Link(None)          # the worker's uplink, paced at the sending job's rate
        self.quick: set = set()         # the f's whose small jobs run in the main thread
        self.interrupted = threading.Event()    # a real Ctrl-C came (``interrupt``)
        self.computer = threading.Thread(target=self._compute_loop, name="ffcode-compute",
                                         daemon=True)
        self.computer.start()

    # -- the compute thread --------------------------------------------------------------------

    relays = False                      # a relay's group computes its coded jobs

    def work(self, job, out):
        """The generator of a job's work, its kind's steps, its messages to out(header,
        frames)."""
        return job.kind.steps(job, out, self)

    def stopping(self, job) -> None:
        """A job is being stopped, before its acknowledgement leaves (a relay stops its
        group's work first, so that the acknowledgement tells it)."""

    def _compute_loop(self):
        renice(COMPUTE_NICE)                # the main thread answers the master first
        pipe = self.context.socket(zmq.PAIR)
        pipe.sndhwm = 2
        pipe.connect(PIPE)

        def out(job, header, frames):
            fits(job, frames)
            while not pipe.poll(50, zmq.POLLOUT):   # the main thread is pacing a slow link
                if job.stop.is_set():
                    raise Stopped
            self.handoff.append((header, frames))
            pipe.send(b"", copy=False)              # a wake-up: the message is in handoff

        try:
            while True:                     # no job held between turns (unload frees)
                self._turn(self.tasks.next(), out)
        except BaseException as e:          # a bug: serve sees the thread gone and exits
            if not self.interrupted.is_set():
                log.exception("the compute thread failed: %s", describe(e))

    def _turn(self, job, out) -> bool:
        """One share of a job's work, its messages to out(job, header, frames); False once
        the job has ended (it leaves the queue). A job's f that took little time on small
        operands (wall time: an f may wait without computing) is quick: its next small jobs
        run in the main thread."""
        began = time.perf_counter()
        try:
            try:
                if job.steps is None:       # a bad task may fail making its steps
                    job.steps = self.work(job, functools.partial(out, job))
                next(job.steps)
                return True                 # more to do: its next turn comes
            except StopIteration:
                pass
            except Stopped:
                raise
            except Unable as e:             # no more packets will come: the job goes on
                log.warning("job %d: no more work possible: %s", job.epoch, e)
                out(job, job.header(Kind.DONE), job.ended(Kind.DONE)[1:])
            except BaseException as e:      # even f's SystemExit: the job fails, not the worker
                if self.interrupted.is_set():
                    raise                   # a real Ctrl-C, in the main thread: we exit
                error = describe(e)
                log.warning("job %d failed: %s", job.epoch, error)
                failed = job.header(Kind.FAILED)
                out(job, failed, wire.control(failed, {"error": error})[1:])
        except Stopped:
            pass
        finally:
            job.spent += time.perf_counter() - began
        self.tasks.done(job)
        job.steps = None
        if not job.stop.is_set() and job.size <= INLINE_BYTES:
            quick = self.quick.add if job.spent <= INLINE_SECONDS else self.quick.discard
            quick(job.task.kind if job.coded is None else job.coded.f)
        return False

    # -- the main thread ----------------------------------------------------------------------

    def serve(self) -> int:
        """Serve until the master says SHUTDOWN (0), or goes away or refuses us (1); NoMaster
        if none answers within the connect timeout."""
        hello = {"slot": self.slot, "pid": os.getpid(), "host": socket.gethostname()}
        if self.token is not None:
            hello["token"] = self.token
        self._send(wire.control(Header(Kind.HELLO, 0, 0), hello))
        poller = zmq.Poller()
        poller.register(self.monitor, zmq.POLLIN)
        started = time.monotonic()
        next_beat, connected, nudged = started + HEARTBEAT, False, False
        log.info("connecting to %s%s", self.endpoint, "" if self.connect_timeout is None
                 else f" (giving up after {self.connect_timeout:g} s)")
        while True:
            if not self.computer.is_alive():    # no heartbeat more: the master replaces us
                log.error("the compute thread ended: exiting")
                return 1
            now = time.monotonic()
            if not connected:
                waited = now - started
                if self.connect_timeout is not None and waited > self.connect_timeout:
                    raise NoMaster(f"no master answered at {self.endpoint} within "
                                   f"{self.connect_timeout:g} s (is 'ffcode run ... "
                                   f"--endpoint' listening there?)")
                if waited > NUDGE and not nudged:
                    nudged = True
                    log.warning("no master at %s yet; still trying%s", self.endpoint,
                                "" if self.connect_timeout is None else
                                f" for {self.connect_timeout - waited:.0f} s")
            if now >= next_beat:
                self._send([Header(Kind.HEARTBEAT, 0, 0).pack()])
                next_beat = now + HEARTBEAT
                if self.parent is not None and os.getppid() != self.parent:
                    return 1            # the fork server (and so the master) is gone
            wait = next_beat - now
            sending = self.head_due is not None and self.head_due <= now
            if self.head_due is not None and not sending:
                wait = min(wait, self.head_due - now)
            poller.register(self.dealer, zmq.POLLIN | (zmq.POLLOUT if sending else 0))
            poller.register(self.pipe, zmq.POLLIN if self.queued < self.buffer else 0)
            events = dict(poller.poll(int(max(wait, 0) * 1000)))
            event = recv_monitor_message(self.monitor)["event"] if self.monitor in events \
                else None
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:      # said before the messages it
                event, connected = None, True               # lets in (a job may come with it)
                log.info("connected to the master at %s", self.endpoint)
            if events.get(self.dealer, 0) & zmq.POLLIN and not self._control():
                log.info("the master said shut down: exiting")
                return 0                # SHUTDOWN (read before a disconnect that follows it)
            if event is not None:
                log.error("the master %s: exiting", "refused this worker (CURVE keys)"
                          if event & HANDSHAKE_REFUSED else "went away")
                return 1
            if events.get(self.pipe, 0) & zmq.POLLIN:
                self._take()
            if events.get(self.dealer, 0) & zmq.POLLOUT:
                self._send_head()

    def interrupt(self, signum, frame) -> NoReturn:
        """SIGINT's handler: KeyboardInterrupt, known to be a real one (not f's), so that
        it ends the worker even from inside a job that runs in the main thread."""
        self.interrupted.set()
        raise KeyboardInterrupt

    def _control(self) -> bool:
        """Handle the master's messages; False on SHUTDOWN."""
        while self.dealer.poll(0):
            frames = self.dealer.recv_multipart(copy=False)
            try:
                header = Header.unpack(frames[0])
                if header.kind == Kind.SHUTDOWN:
                    return False
                if header.kind == Kind.STOP:
                    job = self.jobs.get(header.epoch)
                    if job is not None and job.session == header.session:
                        self._stop(job)
                elif header.kind == Kind.JOB:
                    self._job(header, frames)
                elif header.kind == Kind.LOAD:
                    meta, arrays = wire.read_control(frames[1:])
                    load = Load.from_meta(meta)
                    self.store[load.data], _ = split_shares(arrays, load.counts)
                    log.info("holding resident data %s: %d shares, %d bytes", load.data,
                             len(load.counts), sum(a.nbytes for a in arrays))
                elif header.kind == Kind.UNLOAD:
                    unload = Unload.from_meta(wire.read_control(frames[1:])[0])
                    if self.store.pop(unload.data, None) is not None:
                        log.info("resident data %s unloaded", unload.data)
                    for job in self.jobs.values():
                        if job.data == unload.data:
                            job.shares = None       # a job not started on them has none
            except (wire.ProtocolError, KeyError, TypeError, ValueError) as e:
                log.warning("ignored a bad message from the master: %s", e)
        return True

    def _job(self, header, frames):
        """A JOB message: its job started, or, when its task does not check out, refused
        with FAILED saying why (the master need not wait for it)."""
        try:
            job = Job(header, *wire.read_control(frames[1:]), self.store)
        except (wire.ProtocolError, KeyError, TypeError, ValueError) as e:
            log.warning("refused a bad task from the master: %s", e)
            failed = Header(Kind.FAILED, header.session, header.epoch, header.worker)
            self._send(wire.control(failed, {"error": describe(e)}))
            return
        self._start(job)

    def _start(self, job):
        earlier = self.jobs.get(job.epoch)
        if earlier is not None:             # the same job again: the master restarted it
            self._stop(earlier, ack=False)
        self.jobs[job.epoch] = job
        coded = job.coded
        if coded is None:
            log.info("job %d started: %s", job.epoch, job.task.kind)
        else:
            log.info("job %d started: %s %s in GF(%d), %d share%s of %d pieces, sending %s",
                     job.epoch, job.task.kind, coded.f, coded.p, coded.shares,
                     "s" * (coded.shares != 1), coded.pieces, coded.send)
        self._fault_point(job)          # crash or hang after 0 packets
        if job.task.kind == "coded" and not self.relays and coded is not None and \
                coded.f in self.quick and not job.paused and job.size <= INLINE_BYTES and \
                self.tasks.idle():      # one thread runs f's
            self._inline(job)
        else:
            self.tasks.put(job)

    def _inline(self, job):
        """A small job of a quick f, computed here at once: handing it to the compute
        thread and its packets back would cost more than the work."""
        def out(job, header, frames):
            fits(job, frames)
            self._queue(header, frames)
        while self._turn(job, out):
            pass

    def _stop(self, job, ack=True):
        """Stop a job: the compute thread drops it at its next turn (or pause), and its
        messages not yet sent are dropped."""
        log.info("job %d stopped after %d packets sent", job.epoch, job.sent)
        job.stop.set()
        self.tasks.wake()                   # it lets go of the job's shares at once
        self.jobs.pop(job.epoch, None)
        kept = deque(item for item in self.outbox
                     if item[0] is None or item[0].epoch != job.epoch)
        if len(kept) != len(self.outbox):
            self.queued = sum(item[2] for item in kept)
            self.outbox = kept
            self.head_due = None
            if kept:
                self._schedule_head(time.monotonic())
        if ack:
            self.stopping(job)
            self._send(job.ended(Kind.STOPPED))

    def _take(self):
        while self.queued < self.buffer and self.pipe.poll(0):
            self.pipe.recv(copy=False)          # a wake-up; the messages wait in handoff
            while self.handoff:
                self._queue(*self.handoff.popleft())

    def _queue(self, header, frames):
        """A job's message into the outbox (a stopped job's late one is dropped)."""
        job = self.jobs.get(header.epoch)
        if job is None or job.stop.is_set() or job.session != header.session:
            return
        size = sum(memoryview(f).nbytes for f in frames)
        self.outbox.append([header, frames, size])
        self.queued += size
        if self.head_due is None:
            self._schedule_head(time.monotonic())

    def _schedule_head(self, now):
        header, frames, size = self.outbox[0]
        packet = header is not None and header.kind == Kind.PACKET
        if packet:                      # the link is the worker's: its jobs share it
            self.link.rate = self.jobs[header.epoch].faults.link_rate
        self.head_due = self.link.due(size, now) if packet else now

    def _send_head(self):
        """Send the outbox's messages that are due, while zmq takes them: those ready
        together in one multipart message up to TOGETHER_BYTES (the master reads them one
        after another; its queue per worker stays bounded in bytes), but a paced packet, or
        one of a job that crashes or hangs at a packet count, alone."""
        while self.outbox and self.head_due is not None and \
                self.head_due <= time.monotonic():
            count, size = 1, self.outbox[0][2]
            if self._loose(self.outbox[0]):
                while count < min(len(self.outbox), wire.MAX_TOGETHER) and \
                        size + self.outbox[count][2] <= TOGETHER_BYTES and \
                        self._loose(self.outbox[count]):
                    size += self.outbox[count][2]
                    count += 1
            frames = []
            for header, parts, _ in itertools.islice(self.outbox, count):
                if header is not None:
                    header.sent = time.time()   # packed once, as it leaves
                    frames.append(header.pack())
                frames.extend(parts)
            try:
                self.dealer.send_multipart(frames, copy=False, flags=zmq.NOBLOCK)
            except zmq.Again:
                return
            due, self.head_due = self.head_due, None
            for _ in range(count):
                self._sent(self.outbox.popleft(), due)
            if self.outbox:
                self._schedule_head(time.monotonic())

    def _loose(self, item) -> bool:
        """Whether a message of the outbox may leave with others: an acknowledgement (a
        HELLO goes alone), or a job's message unless its faults pace it or count its
        packets."""
        header, frames, _ = item
        if header is None:
            return Header.unpack(frames[0]).kind != Kind.HELLO
        job = self.jobs.get(header.epoch)
        return job is None or job.faults.link_rate is None and \
            job.faults.crash_after is None and job.faults.hang_after is None

    def _sent(self, item, due):
        header, _, size = item
        self.queued -= size
        job = self.jobs.get(header.epoch) if header is not None else None
        if job is None:                 # a control message
            return
        if header.kind == Kind.PACKET:
            self.link.sent(due)
            job.sent += 1
            self._fault_point(job)
        elif header.kind in (Kind.DONE, Kind.FAILED):
            log.info("job %d %s: %d packets sent", job.epoch, header.kind.name.lower(),
                     job.sent)
            self.jobs.pop(job.epoch, None)  # a stop for it now finds nothing to stop

    @staticmethod
    def _fault_point(job):
        """Inject a crash or a hang once the job's packet count reaches its mark."""
        for name, act in (("crash_after", lambda: os._exit(17)),
                          ("hang_after", lambda: os.kill(os.getpid(), signal.SIGSTOP))):
            if getattr(job.faults, name) == job.sent:
                time.sleep(0.2)         # let zmq deliver what was already sent
                act()

    def _send(self, frames):
        """A control message: sent now if zmq has room, dropped otherwise (heartbeats)
        or queued first in line (acknowledgements)."""
        try:
            self.dealer.send_multipart(frames, flags=zmq.NOBLOCK)
        except zmq.Again:
            if Header.unpack(frames[0]).kind != Kind.HEARTBEAT:
                self.outbox.appendleft([None, frames, 0])   # sent as it is, first in line
                self.head_due = time.monotonic()

    def close(self):
        for run in list(self.runs.values()):   # their ipc directories go with them
            run.close()
        self.dealer.close(linger=200)


def run(endpoint: str, *, key: str | None = None, server_key: str | None = None,
        timeout: float | None = 60.0, buffer: int = 32 << 20, slot: int = -1,
        parent: int | None = None, make=Worker) -> NoReturn:
    """Serve the master at endpoint, then exit the process: 0 when told to shut down, 1 when
    the master went away or refused us, 2 when no master answered within timeout seconds
    (None: wait forever; an error line). key and server_key: this worker's CURVE secret key
    file and the master's public one (both or neither). ``make`` builds the worker (a
    relay's: runtime/relay.py) with Worker's arguments."""
    sys.setswitchinterval(5e-4)     # the main thread answers a stop without waiting 5 ms
    if (key is None) != (server_key is None):
        raise ValueError("A worker's CURVE key and the master's public key go together.")
    try:
        curve = None if key is None or server_key is None else \
            keys.load_client(key, server_key)
        worker = make(endpoint, slot, curve, buffer, parent, connect_timeout=timeout)
    except zmq.ZMQError as e:
        raise ValueError(f"cannot connect to {endpoint!r}: {e} (an endpoint looks like "
                         f"tcp://HOST:PORT)") from None
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, worker.interrupt)
    status = 1
    try:
        status = worker.serve()
    except NoMaster as e:
        print(f"ffcode worker: error: {e}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        log.info("interrupted: exiting")
    worker.close()
    sys.stderr.flush()
    os._exit(status)                    # the compute thread may be inside a long product
