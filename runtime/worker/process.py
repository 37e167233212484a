"""A worker process: ``ffcode worker --connect ENDPOINT``, or spawned by a local Cluster.

Two threads. The main thread owns the DEALER socket: it answers the master at once (a
STOP is acknowledged within a poll, even mid-computation), sends heartbeats, and sends the
packets the compute thread hands it over an inproc pipe, paced by the injected link rate
and never blocking: everything waits on one poll with a timeout. The compute thread holds
a queue of tasks, one per job in flight: it works on those of the highest priority in
turn, a piece at a time, so that jobs share the worker and a job stopped or finished
leaves the rest at once. A share's pieces go on in a row, as they give a job what it needs
soonest, unless a job this worker has been markedly faster on waits: it does that job's
work first, where it counts most (runtime/worker/taskqueue.py). It checks for a stop
between pieces and in every injected pause. A small job (operands under INLINE_BYTES, no
injected pauses) whose f took little time on small operands before runs in the main
thread at once when the compute thread is idle: handing it over and its packets back
would cost more than the work.
Messages ready together leave together, in one multipart message. Shares the master
loads (resident data) stay in the worker's store, by id, until it unloads them; a task
names them instead of carrying them.

The decisions are two machines without I/O, fed events and carried out here: whose turn it
is, what a stop, an unload or a turn's end says (runtime/worker/taskqueue.py), and what
leaves when, paced, grouped, dropped, or reaching a fault point (runtime/worker/outbox.py).

It logs (``logging``, logger ``ffcode.runtime.worker.process``) its connection, each job's start,
stop and end, and its exit at INFO; trouble at WARNING and ERROR.
"""
from __future__ import annotations

import logging
import functools
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
from ffcode.errors import InvalidParameterError, NoMaster
from ffcode.field import GF
from ffcode.pieces import piece_packets
from ffcode.runtime.shared import keys, wire
from ffcode.runtime.shared.payloads import Coded
from ffcode.runtime.shared.task import Load, Unload, read_task
from ffcode.runtime.shared.transport import (HANDSHAKE_REFUSED, POLLIN, POLLOUT, dial,
                                             milliseconds, ready, send_now)
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.runtime.worker.coded import Stopped, Unable
from ffcode.runtime.worker.lossy import Lossy
from ffcode.runtime.worker.outbox import (TOGETHER_BYTES, Ended, FaultPoint, Left, Outbox, Send,
                                          Wait)
from ffcode.runtime.worker.taskqueue import (ENDED, FAILED, MORE, PIECE, STOPPED, UNABLE,
                                             Fail, Inline, Release, TaskQueue, Turn)

HEARTBEAT = 0.1             # seconds between heartbeats
ZMQ_HWM = 4                 # messages queued inside zmq; the rest wait in the outbox
PIPE = "inproc://compute"
COMPUTE_NICE = 10           # the compute thread yields the CPU to the main threads and the master
NUDGE = 5.0                 # seconds without a master before saying so (a warning)
INLINE_BYTES = 64 << 10     # a task on operands this small, with an f that took at most
INLINE_SECONDS = 0.01       # this long on such operands before, runs in the main thread

log = logging.getLogger(__name__)


class Job:
    """A task (runtime/shared/task.py's read_task: the task, its kind and its arrays): its
    payload, and its shares' arrays, which come with it or, for resident data, from
    ``store``. ``coded``: the coded part of a coded
    job's or a relay's payload (None for other kinds)."""

    def __init__(self, header, task, kind, arrays, store):
        self.session, self.epoch, self.worker = header.session, header.epoch, header.worker
        self.task, self.kind = task, kind
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
        self.steps = None               # the compute thread's generator, once started
        self.spent = 0.0                # seconds its steps took so far (wall: f may wait)
        self.together = False           # run at once in the main thread: its packets
        #                                 leave together, so its pieces come in one product
        self.group: list | None = None  # a relay's: its group's jobs so far, in brief
        self.in_group: Any = None       # a relay's: its group's job in flight (a JobFuture)
        self.task_index = header.index  # > 0: its task sent again (over a lossy link)
        self.kept: dict | None = None   # on a lossy link: share -> its packets so far, for
        self.again: set = set()         # fresh combinations; packets being sent again;
        self.packets = 0                # packets the compute thread handed over

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


class Tasks:
    """The queue of jobs (runtime/worker/taskqueue.py) between the two threads: the main
    thread tells it of arrivals, stops and unloads, the compute thread takes turns, waiting
    while there is none; what it says is carried out here (letting go of a stopped job's
    work, of an unloaded job's shares)."""

    def __init__(self) -> None:
        self.ready = threading.Condition()
        self.queue = TaskQueue(INLINE_BYTES, INLINE_SECONDS)

    def tell(self, event: str, *arguments, **options) -> list:
        """An event of the main thread (``arrived``, ``stop``, ``unload``): the compute
        thread looks again; the instructions it gives that are not carried out here."""
        with self.ready:
            instructions = getattr(self.queue, event)(*arguments, **options)
            if not any(isinstance(i, Inline) for i in instructions):
                self.ready.notify()         # (a job run here at once needs no wake-up)
        for instruction in instructions:
            if isinstance(instruction, Release):
                instruction.job.shares = None   # a job not started on them has none
        return [i for i in instructions if not isinstance(i, Release)]

    def next(self) -> Job:
        """The job of the compute thread's next turn (holding none while it waits)."""
        with self.ready:
            while True:
                job = self._take_turn()
                if job is not None:
                    return job
                self.ready.wait()

    def _take_turn(self) -> Job | None:
        """The job whose turn it is, if any; a stopped job the queue drops lets go of its
        generator and its shares (no reference to it outlives this call, so the wait that
        follows holds none: an unload frees the memory at once)."""
        for instruction in self.queue.next():
            if isinstance(instruction, Turn):
                return instruction.job
            instruction.job.steps = instruction.job.shares = None   # Drop: no more work
        return None

    def finished(self, job, outcome: str, spent: float, detail: str) -> list:
        with self.ready:
            return self.queue.finished(job, outcome, spent, detail)


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
    NoMaster (None: forever).

    The shell around two machines without I/O: ``tasks`` (the queue of jobs,
    runtime/worker/taskqueue.py) decides whose turn it is and what a stop or a turn's end
    sends; ``outbox`` (runtime/worker/outbox.py) decides what leaves when. The threads,
    the poll loop and the sockets are here."""

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
        self.tasks = Tasks()
        self.jobs: dict = {}            # epoch -> Job, from its start until it stops or ends
        self.store: dict = {}           # resident data id -> the arrays of this worker's share
        self.runs: dict = {}            # MapReduce job -> its values kept between phases
        self.handoff: deque = deque()   # (job, header, frames) from the compute thread
        self.outbox = Outbox(TOGETHER_BYTES)    # messages: (header, frames); None: control
        self.lossy = Lossy(lambda job, kind, message: self.outbox.ready(
            job, kind, sum(memoryview(f).nbytes for f in message[1]), message,
            time.monotonic()), self._send, lambda job: self._stop(job, ack=False))
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
            self.handoff.append((job, header, frames))
            pipe.send(b"", copy=False)              # a wake-up: the message is in handoff

        try:
            while True:                     # no job held between turns (unload frees)
                self._turn(self.tasks.next(), out)
        except BaseException as e:          # a bug: serve sees the thread gone and exits
            if not self.interrupted.is_set():
                log.exception("the compute thread failed: %s", describe(e))

    def _turn(self, job, out, through: bool = False) -> bool:
        """One turn of a job's work (a piece or a share), or with ``through`` all of it,
        its messages to out(job, header, frames); False once the job has ended (it leaves
        the queue, which learns from the time its turns took, wall time, whether its f is
        quick: an f may wait without computing). A job that fails or can do no more says
        so, as the queue instructs."""
        began = time.perf_counter()
        outcome, detail = MORE, ""
        try:
            if job.steps is None:           # a bad task may fail making its steps
                job.steps = self.work(job, functools.partial(out, job))
            said = next(job.steps)
            while through:                  # until StopIteration
                next(job.steps)
            if said is PIECE:
                outcome = PIECE
        except StopIteration:
            outcome = ENDED
        except Stopped:
            outcome = STOPPED
        except Unable as e:                 # no more packets will come: the job goes on
            outcome, detail = UNABLE, str(e)
        except BaseException as e:          # even f's SystemExit: the job fails, not the worker
            if self.interrupted.is_set():
                raise                       # a real Ctrl-C, in the main thread: we exit
            outcome, detail = FAILED, describe(e)
        if outcome not in (MORE, PIECE):
            job.steps = None
        for say in self.tasks.finished(job, outcome, time.perf_counter() - began, detail):
            if isinstance(say, Fail):
                log.warning("job %d failed: %s", job.epoch, say.text)
                header = job.header(Kind.FAILED)
                frames = wire.control(header, {"error": say.text})[1:]
            else:
                log.warning("job %d: no more work possible: %s", job.epoch, say.text)
                header, frames = job.done()
            try:
                out(job, header, frames)
            except Stopped:
                pass
        return outcome in (MORE, PIECE)

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
            if self.lossy.jobs:
                self.lossy.tick(now)
            wait = min(next_beat, self.lossy.due) - now
            step = self.outbox.tick(now)
            if isinstance(step, Wait):
                wait = min(wait, step.until - now)
            poller.register(self.dealer, POLLIN | (POLLOUT if isinstance(step, Send) else 0))
            poller.register(self.pipe, POLLIN if self.outbox.queued < self.buffer else 0)
            events = dict(poller.poll(milliseconds(wait)))
            event = recv_monitor_message(self.monitor)["event"] if self.monitor in events \
                else None
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:      # said before the messages it
                event, connected = None, True               # lets in (a job may come with it)
                log.info("connected to the master at %s", self.endpoint)
            if events.get(self.dealer, 0) & POLLIN and not self._control():
                log.info("the master said shut down: exiting")
                return 0                # SHUTDOWN (read before a disconnect that follows it)
            if event is not None:
                log.error("the master %s: exiting", "refused this worker (CURVE keys)"
                          if event & HANDSHAKE_REFUSED else "went away")
                return 1
            if events.get(self.pipe, 0) & POLLIN:
                self._take()
            if events:                  # what is due leaves now (a job run here at once has
                self._send_head()       # its packets ready): no poll round for the room

    def interrupt(self, signum, frame) -> NoReturn:
        """SIGINT's handler: KeyboardInterrupt, known to be a real one (not f's), so that
        it ends the worker even from inside a job that runs in the main thread."""
        self.interrupted.set()
        raise KeyboardInterrupt

    def _control(self) -> bool:
        """Handle the master's messages; False on SHUTDOWN."""
        while ready(self.dealer):
            frames = self.dealer.recv_multipart(copy=False)
            try:
                header = Header.unpack(frames[0])
                if header.kind == Kind.SHUTDOWN:
                    return False
                if header.kind == Kind.STOP:
                    job = self.jobs.get(header.epoch)
                    if job is not None and job.session == header.session:
                        self._stop(job)
                    else:               # answered again, if its answer may have been lost
                        self.lossy.stop_again(header)
                elif header.kind == Kind.ACK:
                    job = self.jobs.get(header.epoch)
                    if job is not None and job.session == header.session:
                        self.lossy.acknowledged(job, frames[1:])
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
                    self.tasks.tell("unload", unload.data)
            except (wire.ProtocolError, KeyError, TypeError, ValueError) as e:
                log.warning("ignored a bad message from the master: %s", e)
        return True

    def _job(self, header, frames):
        """A JOB message: its job started (a small one of a quick f computed here at once,
        when the compute thread is idle: handing it over and its packets back would cost
        more than the work), or, when its task does not check out, refused with FAILED
        saying why (the master need not wait for it)."""
        try:
            job = Job(header, *read_task(frames[1:]), self.store)
        except (wire.ProtocolError, KeyError, TypeError, ValueError) as e:
            log.warning("refused a bad task from the master: %s", e)
            failed = Header(Kind.FAILED, header.session, header.epoch, header.worker)
            self._send(wire.control(failed, {"error": describe(e)}))
            return
        coded, faults = job.coded, job.faults
        lossy = faults.lossy and coded is not None and job.task.kind == "coded"
        if lossy and self.lossy.started(job):
            return                          # a task sent again: answered, and no more
        earlier = self.jobs.get(job.epoch)
        if earlier is not None:             # the same job again: the master restarted it
            self._stop(earlier, ack=False)
        self.jobs[job.epoch] = job
        if coded is None:
            log.info("job %d started: %s", job.epoch, job.task.kind)
        elif log.isEnabledFor(logging.INFO):    # (its arguments cost more than the check)
            log.info("job %d started: %s%s in GF(%d), %d share%s of %d pieces, by %s",
                     job.epoch, "" if job.task.kind == "coded" else f"a {job.task.kind} of ",
                     coded.f, coded.p, coded.shares, "s" * (coded.shares != 1),
                     coded.pieces, coded.scheme)
        for point in self.outbox.started(job, faults.link_rate, faults.crash_after,
                                         faults.hang_after, tracked=lossy):
            self._carry_out(point)          # crash or hang after 0 packets
        computed = job.task.kind == "coded" and not self.relays and coded is not None
        if self.tasks.tell("arrived", job, job.priority, size=job.size,
                           inline=computed and not job.paused,  # one thread runs f's
                           data=job.data, ranked=computed,
                           name=job.task.kind if coded is None else coded.f):
            job.together = True
            self._turn(job, self._queue, through=True)

    def _stop(self, job, ack=True):
        """Stop a job: the compute thread drops it at its next turn (or pause), and its
        messages not yet sent are dropped; acknowledged unless the master restarts it."""
        job.stop.set()
        epoch = job.epoch
        if self.jobs.get(epoch) is job:     # (not a newer task of the same job)
            del self.jobs[epoch]
        self.lossy.ended(job)
        packets = self.outbox.stop(job, time.monotonic())
        log.info("job %d stopped after %d packets sent", job.epoch, packets)
        for _ in self.tasks.tell("stop", job, ack):     # Acknowledge
            self.stopping(job)
            self._send(job.ended(Kind.STOPPED))

    def _take(self):
        while self.outbox.queued < self.buffer and ready(self.pipe):
            self.pipe.recv(copy=False)          # a wake-up; the messages wait in handoff
            while self.handoff:
                self._queue(*self.handoff.popleft())

    def _queue(self, job, header, frames):
        """A job's message into the outbox (a stopped job's late one is dropped); a part
        larger than the master takes is the job's error (in the compute thread, ``fits``
        said so before the handover)."""
        fits(job, frames)
        if header.kind == Kind.PACKET:
            job.packets += 1
        elif header.kind in (Kind.DONE, Kind.FAILED) and self.lossy.finishing(job, header,
                                                                              frames):
            return                          # it leaves once nothing is outstanding
        size = sum(memoryview(f).nbytes for f in frames)
        self.outbox.ready(job, header.kind, size, (header, frames), time.monotonic())

    def _send_head(self):
        """Send what the outbox says is due, while zmq takes it (messages of one send in
        one multipart message: the master reads them one after another)."""
        while True:
            send = self.outbox.tick(time.monotonic())
            if not isinstance(send, Send):
                return
            frames: list = []
            for header, parts in send.messages:
                if header is not None:
                    header.sent = time.time()   # packed once, as it leaves
                    frames.append(header.pack())
                frames.extend(parts)
            try:
                send_now(self.dealer, frames)
            except zmq.Again:
                return
            for instruction in self.outbox.sent(send, time.monotonic()):
                self._carry_out(instruction)

    def _carry_out(self, instruction):
        """The outbox's FaultPoint (inject a crash or a hang, once zmq delivered what was
        already sent) or Ended (a job's DONE or FAILED left)."""
        if isinstance(instruction, FaultPoint):
            time.sleep(0.2)                 # let zmq deliver what was already sent
            if instruction.act == "crash":
                os._exit(17)
            os.kill(os.getpid(), signal.SIGSTOP)
        elif isinstance(instruction, Left):
            self.lossy.left(instruction.job, instruction.kind, instruction.message)
        elif isinstance(instruction, Ended):
            job, epoch = instruction.job, instruction.job.epoch
            if instruction.kind == Kind.ANSWER:
                log.info("job %d done: every packet sent in one answer", epoch)
            else:
                log.info("job %d %s: %d packets sent", epoch, instruction.kind.name.lower(),
                         instruction.packets)
            if self.jobs.get(epoch) is job:
                del self.jobs[epoch]        # a stop for it now finds nothing to stop

    def _send(self, frames):
        """A control message: sent now if zmq has room, dropped otherwise (heartbeats)
        or queued first in line (acknowledgements)."""
        try:
            self.dealer.send_multipart(frames, flags=zmq.NOBLOCK)
        except zmq.Again:
            kind = Header.unpack(frames[0]).kind
            if kind != Kind.HEARTBEAT:
                self.outbox.urgent(kind, (None, frames), time.monotonic())

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
    relay's: runtime/worker/relay.py) with Worker's arguments."""
    sys.setswitchinterval(5e-4)     # the main thread answers a stop without waiting 5 ms
    if (key is None) != (server_key is None):
        raise InvalidParameterError(
            "A worker's CURVE key and the master's public key go together.")
    try:
        curve = None if key is None or server_key is None else \
            keys.load_client(key, server_key)
        worker = make(endpoint, slot, curve, buffer, parent, connect_timeout=timeout)
    except zmq.ZMQError as e:
        raise InvalidParameterError(f"cannot connect to {endpoint!r}: {e} (an endpoint looks like "
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
