"""``ffcode.Cluster``: the master's ROUTER socket and its pool of workers, reused across jobs.

Local workers come from a fork server (runtime/pool.py) that imports exactly what the master
imports; Ray workers are actors placed by Ray (runtime/ray_pool.py); remote ones run
``ffcode worker --connect ENDPOINT``. Every wait is bounded, and closing (also on an
exception, Ctrl-C, or garbage collection) kills every process the cluster started.
"""
from __future__ import annotations

import functools
import logging
import numbers
import os
import secrets
import shutil
import threading
import time
import weakref
from collections import Counter
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

import numpy as np
import zmq

from ffcode import checks, allocation, functions
from ffcode.pieces import pieces_count
from ffcode.decoding import verify as verification
from ffcode.codes.base import Code
from ffcode.runtime import keys, pool, ray_pool, wire
from ffcode.errors import ClusterError, ProtocolError, VerificationError
from ffcode.runtime.faults import Faults
from ffcode.runtime.gate import Gate, peer
from ffcode.runtime.jobs import Layout, Plan, checked_scheme
from ffcode.runtime.master import WATCH_EVERY, JobRun
from ffcode.runtime.pool import LocalPool
from ffcode.runtime.report import Report
from ffcode.runtime.resident import Resident, load_message, unload_message
from ffcode.runtime.wire import Header, Kind

ENGINES = ("local", "ray")
ALLOCATE = ("uniform", "speed")
CURVE_IO_THREADS = 2        # decryption is per connection: spread it over two threads
RCVHWM = 8                  # packets queued per worker inside zmq at the master
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_MESSAGE = 256 << 20     # bytes: the largest message part the master takes, by default
MAX_FRAMES = 4              # parts of the longest message a worker sends (with its routing id)
MAX_STARTED = 1024          # worker processes one cluster may start (local or Ray)
MAX_REMOTE = 1 << 16        # workers one master may wait for

log = logging.getLogger(__name__)


def _exclusive(method):
    """For the methods that use the socket: one thread at a time (another waits its turn),
    and none from inside a job on the cluster (its progress callback), which is refused."""
    @functools.wraps(method)
    def one_at_a_time(self, *args, **kwargs):
        if self._holder == threading.get_ident():
            raise ClusterError(f"Cluster.{method.__name__} cannot be called from inside a job "
                               f"on the same cluster (its progress callback): call it after "
                               f"the job returns, or from another thread (it waits its turn).")
        with self._lock:
            self._check_open()
            self._holder = threading.get_ident()
            try:
                return method(self, *args, **kwargs)
            finally:
                self._holder = None
                if self._closing:           # close() was called inside the job
                    self._shut()
    return one_at_a_time


class WorkerHandle:
    """The master's view of one connected worker. ``order`` places it in jobs: a started
    worker's slot (checked against its pool), a remote worker's place in the order of
    arrival; never a number the worker chose. ``member`` is what its pool knows it by (a
    local pid, a Ray actor), None for a worker started by hand."""

    def __init__(self, ident, meta, order, pool=None, member=None):
        self.ident, self.order, self.pool, self.member = ident, order, pool, member
        self.local = isinstance(pool, LocalPool)
        self.slot = order if pool is not None else None
        self.pid, self.host = meta.get("pid", 0), meta.get("host", "")
        self.node = pool.node(member) if pool is not None else None
        self.last_seen = time.monotonic()
        self.lost = None
        self.holds = {}                 # resident data id -> the place whose shares it holds

    def __repr__(self):
        where = f"slot {self.slot}" if self.slot is not None else f"{self.host or '?'}"
        return f"worker({where}, pid {self.pid})"

    def gone(self):
        """Why a started worker will not answer (its process exited or froze, its Ray actor
        died), or None."""
        return self.pool.gone(self.member) if self.pool is not None else None


class Cluster:
    """A master and its workers: ``Cluster(n_workers=8)`` spawns local worker processes;
    ``Cluster(n_workers=8, engine="ray")`` starts them as Ray actors spread over a Ray
    cluster's nodes; ``Cluster(endpoint="tcp://HOST:5555", n_workers=8)`` waits for workers
    started with ``ffcode worker --connect tcp://HOST:5555``. Use it as a context manager.

    ``key`` (the master's CURVE secret key file) and ``clients`` (a directory of the
    authorised workers' public keys) encrypt a tcp endpoint and admit only those workers.
    A tcp master needs them, also on loopback (any process on the host can reach it),
    unless told ``insecure=True``. The Ray engine makes fresh keys for each cluster instead
    (no key files; ``public_key`` is the master's); its ``address`` is the Ray cluster's
    ("HOST:PORT", or "auto" for the one 'ray start' began on this host; default: the Ray
    instance this process is connected to, else $RAY_ADDRESS, else a new local one with a
    CPU per worker), and its ``endpoint`` defaults to tcp on this
    node's Ray address, any free port (actors on this node connect over a private ipc
    socket instead, in plaintext; an explicit endpoint serves every actor). A worker
    silent for ``lost_after`` seconds is given up on; ``start_timeout`` bounds waiting
    for workers. ``max_message`` (bytes) is the
    largest message part the master takes: a peer announcing a larger one is disconnected
    before it is read, and a job whose packets would be larger fails with a clear error.
    """

    def __init__(self, n_workers: int = 4, endpoint: str | None = None, *,
                 engine: str = "local", address: str | None = None,
                 key: str | None = None, clients: str | None = None, insecure: bool = False,
                 start_timeout: float = 60.0, lost_after: float = 2.0,
                 max_message: int = MAX_MESSAGE) -> None:
        if os.environ.get(pool.IN_POOL):
            raise ClusterError("A Cluster cannot start inside ffcode's worker processes: "
                               "they run your script to find the functions defined in it, "
                               "so guard the script's work with 'if __name__ == "
                               "\"__main__\":'.")
        self.n_workers = checks.integer(n_workers, "n_workers")
        most = MAX_STARTED if endpoint is None or engine == "ray" else MAX_REMOTE
        if not 1 <= self.n_workers <= most:
            raise ValueError(f"Argument 'n_workers' must be from 1 to {most}" +
                             (" (the processes this cluster may start)" if most ==
                              MAX_STARTED else "") + f", not {self.n_workers}.")
        self.start_timeout = _positive(start_timeout, "start_timeout")
        self.lost_after = _positive(lost_after, "lost_after")
        self.max_message = checks.integer(max_message, "max_message")
        if self.max_message < wire.MAX_META_BYTES:
            raise ValueError(f"Argument 'max_message' must be at least {wire.MAX_META_BYTES} "
                             f"bytes (a control message), not {self.max_message}.")
        if (key is None) != (clients is None):
            raise ValueError("Arguments 'key' and 'clients' go together (CURVE).")
        if engine not in ENGINES:
            raise ValueError(f"Argument 'engine' must be one of {ENGINES}, not {engine!r}.")
        self.engine = engine
        ray = engine == "ray"
        if ray and key is not None:
            raise ValueError("The Ray engine makes fresh CURVE keys for each cluster: leave "
                             "out key= and clients= (or pass insecure=True for none).")
        if address is not None and not ray:
            raise ValueError("Argument 'address' names a Ray cluster: it needs engine='ray'.")
        self.local = endpoint is None and not ray
        if self.local and key is not None:
            raise ValueError("CURVE keys are for a tcp endpoint: local workers talk over a "
                             "private ipc socket, which needs none.")
        if endpoint is not None:
            _check_endpoint(endpoint, secure=key is not None or insecure or ray)
            if ray and not endpoint.startswith("tcp://"):
                raise ValueError(f"Ray workers connect over tcp, not {endpoint!r}.")
        self.session = secrets.randbits(63) | 1
        self.epoch = 0
        self._handles = {}                  # routing id -> WorkerHandle
        self._arrivals = 0                  # remote workers admitted so far
        self._pool = None
        self._buffers = {}                  # dtype -> payload storage of the last job
        self._resident = {}                 # id -> Resident, loaded and not unloaded
        self._loads = 0                     # resident data loaded so far (their ids)
        self._speeds = {}                   # worker order -> its speed in the latest job
        # Messages dropped since the last report (which takes them), and in all.
        self.rejected, self.stale = Counter(), 0
        self.rejected_total = Counter()
        self._refused = 0                   # the gate's refusals counted so far
        self._closed = self._closing = False
        self._lock = threading.Lock()       # one caller on the socket at a time
        self._holder = None                 # the thread that holds it
        curve = key is not None or ray and not insecure
        self._context = zmq.Context(io_threads=CURVE_IO_THREADS if curve else 1)
        self._router = self._context.socket(zmq.ROUTER)
        self._router.router_mandatory = 1
        self._router.linger = 0
        self._router.rcvhwm = RCVHWM
        self._router.maxmsgsize = self.max_message      # also bounds a handshake's frames
        self._poller = zmq.Poller()                      # made once: a poll per receive
        self._poller.register(self._router, zmq.POLLIN)
        self.public_key = None              # the master's CURVE key (z85) for Ray workers
        nearby = ray and endpoint is None   # actors on this node may use ipc
        tmpdir = pool.private_dir() if self.local or nearby else None
        self._owned = {"router": self._router, "context": self._context, "tmpdir": tmpdir}
        self._finalizer = weakref.finalize(self, _shutdown, self._owned)
        try:
            if ray:
                self._pool = self._owned["pool"] = ray_pool.RayPool(
                    address, self.n_workers, self.start_timeout)
                endpoint = endpoint or f"tcp://{self._pool.host}:*"
            self._gate = self._owned["gate"] = self._secure(key, clients, insecure,
                                                            session=curve and key is None)
            if self.local:                  # until the pool exists, no process is its own
                self._gate.processes = lambda pid: False
            try:
                Gate.bind(self._router, endpoint or f"ipc://{tmpdir}/master")
            except zmq.ZMQError as e:
                raise ClusterError(f"Cannot listen on {endpoint}: {e}") from None
            self.endpoint = self._router.last_endpoint.decode()
            log.info("master listening on %s", self.endpoint)
            if self.local:
                self._pool = self._owned["pool"] = LocalPool(self.endpoint, tmpdir)
                self._gate.processes = self._pool.owns
            elif ray:
                self._pool.serve_at(_reachable(self.endpoint, self._pool.host),
                                    self.public_key, self._gate if curve else None,
                                    self._nearby(tmpdir) if nearby else None)
            for slot in range(self.n_workers if self._pool is not None else 0):
                self._pool.spawn(slot)
        except BaseException:
            self.close()
            raise

    def _secure(self, key, clients, insecure, session) -> Gate:
        """The gate that admits connections (runtime/gate.py), and CURVE on the socket: from
        key files (admitting the clients directory's keys), or for a session a fresh key
        pair in memory (admitting the keys the Ray actors make, as they come)."""
        admitted = frozenset()
        if key is not None:
            public, secret = keys.load_secret(key)
            admitted = keys.load_clients(clients)
            keys.server(self._router, public, secret)
        elif session:
            self.public_key, secret = zmq.curve_keypair()
            keys.server(self._router, self.public_key, secret)
        return Gate(self._context, keys=admitted, insecure=insecure)

    def _nearby(self, tmpdir) -> str:
        """Also listen on a private ipc socket, in plaintext (options apply per bind): for
        the actors on this node, which prove themselves with a token instead of a key."""
        self._router.curve_server = False
        Gate.bind(self._router, f"ipc://{tmpdir}/master")
        log.info("master also listening on %s for workers on this node",
                 self._router.last_endpoint.decode())
        return self._router.last_endpoint.decode()

    def __repr__(self):
        return (f"Cluster({getattr(self, 'endpoint', None)!r}, workers "
                f"{len(self.live())}/{self.n_workers}{', closed' if self._closed else ''})")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the pool ---------------------------------------------------------------------------

    def live(self) -> list[WorkerHandle]:
        """The connected workers not given up on: local ones in slot order, remote ones in
        the order they connected."""
        return sorted((h for h in list(self._handles.values()) if h.lost is None),
                      key=lambda h: h.order)

    @_exclusive
    def wait(self, count: int | None = None,
             timeout: float | None = None) -> list[WorkerHandle]:
        """Block until ``count`` workers (default n_workers) are connected; local workers
        that were lost are replaced first. ClusterError after ``timeout`` seconds."""
        return self._wait(count, timeout)

    def _wait(self, count=None, timeout=None):
        count = self.n_workers if count is None else checks.integer(count, "count")
        timeout = self.start_timeout if timeout is None else _positive(timeout, "timeout")
        if self._pool is not None:
            if count > self.n_workers:
                raise ValueError(f"This cluster has {self.n_workers} {self.engine} workers, "
                                 f"not {count}.")
            self._replace_lost()
        deadline = time.monotonic() + timeout
        for _ in self.receive(0):           # what the last job's workers sent after it
            self.reject("stale")
        if len(self.live()) < count:
            log.info("waiting for %d of %d workers at %s (up to %g s)",
                     count - len(self.live()), count, self.endpoint, timeout)
        while len(self.live()) < count:
            if self._pool is not None:
                self._pool.check()
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClusterError(f"Only {len(self.live())} of {count} workers connected to "
                                   f"{self.endpoint} within {timeout:g} s." +
                                   (self._pool.missing() if self._pool is not None else ""))
            for _ in self.receive(min(left, 0.1)):
                self.reject("stale")
        return self.live()[:count]

    def _replace_lost(self):
        now = time.monotonic()
        for handle in self._handles.values():     # one heard from lately is alive: a job
            gone = handle.lost is None and now - handle.last_seen > WATCH_EVERY and \
                handle.gone()                     # finds it if it died since
            if gone:
                self.lose(handle, gone)
        for handle in self._handles.values():
            if handle.lost is not None:
                self._pool.spawn(handle.slot)
        self._handles = {i: h for i, h in self._handles.items() if h.lost is None}

    def lose(self, handle, reason):
        """Give up on a worker; one the cluster started is killed (it may be frozen)."""
        if handle.lost is None:
            handle.lost = reason
            log.warning("%r given up on: %s", handle, reason)
            if handle.pool is not None:
                handle.pool.kill(handle.member)

    @_exclusive
    def exclude(self, handle: WorkerHandle, reason: str) -> None:
        """Never give this worker another job: one the cluster started is replaced by a
        fresh one before the next job, a remote one is told to exit (the cluster then waits
        for another to connect)."""
        self._exclude(handle, reason)

    def _exclude(self, handle, reason):
        if handle.lost is None and handle.pool is None:
            self._tell_shutdown(handle)
        self.lose(handle, f"excluded: {reason}")

    def _tell_shutdown(self, handle):
        try:
            self._router.send_multipart([handle.ident, Header(Kind.SHUTDOWN, self.session,
                                                              self.epoch).pack()],
                                        flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    # -- the socket -------------------------------------------------------------------------

    def receive(self, timeout):
        """Wait up to timeout seconds, then take the waiting messages: HELLO and heartbeats
        are handled here, bad ones counted; yields (handle, header, data frames) of this
        job's epoch, one at a time (the caller may stop early and leave the rest)."""
        self._check_not_closing()
        refused = self._gate.refused        # connections the gate turned away meanwhile
        if refused > self._refused:
            self.reject("refused", refused - self._refused)
            self._refused = refused
        if not self._poller.poll(max(timeout, 0) * 1000):
            return
        while self._router.getsockopt(zmq.EVENTS) & zmq.POLLIN:     # cheaper than poll(0)
            self._check_not_closing()
            frames = _whole_message(self._router)
            handle = self._handles.get(frames[0].bytes)
            if handle is not None:
                handle.last_seen = time.monotonic()
            try:
                if len(frames) > MAX_FRAMES:
                    raise ProtocolError(f"a message of {len(frames)} parts")
                header = Header.unpack(frames[1]) if len(frames) > 1 else \
                    Header.unpack(b"")
                if header.kind not in wire.TO_MASTER:
                    raise ProtocolError(f"{header.kind.name} is not for the master")
                if header.kind == Kind.HELLO:
                    self._hello(frames[0].bytes, frames[2:], peer(frames[1]))
                    continue
            except ProtocolError:
                self.reject("malformed")
                continue
            if handle is None:
                self.reject("unknown sender")
            elif header.kind == Kind.HEARTBEAT:
                continue
            elif header.session != self.session:
                self.reject("foreign")
            elif header.epoch != self.epoch:
                self.reject("stale")
            else:
                yield handle, header, frames[2:]

    def reject(self, reason, count=1):
        """Count dropped messages by reason ("stale": of an earlier job; "refused": a
        connection the gate turned away) in the next report and in the cluster's totals
        (``rejected_total``)."""
        if reason == "stale":
            self.stale += count
        else:
            self.rejected[reason] += count
        self.rejected_total[reason] += count

    def _hello(self, ident, frames, sender):
        """Admit a worker. Who it is comes from its connection (``sender``, a gate.Peer: the
        kernel's pid on ipc, the CURVE key), never from what its HELLO says."""
        if ident in self._handles:
            raise ProtocolError("a second HELLO from a connected worker")
        meta, _ = wire.read_control(frames)
        slot, pid = meta.get("slot", -1), meta.get("pid", 0)
        if type(slot) is not int or type(pid) is not int or not isinstance(
                meta.get("host", ""), str):
            raise ProtocolError("a HELLO with a non-integer slot or pid")
        member = None
        if self._pool is not None:      # a worker of our pool, asked for and not yet here
            member = self._pool.admit(slot, meta, sender)
            if member is None:
                raise ProtocolError("a HELLO from no worker this cluster started")
            order = slot
        else:
            order, self._arrivals = self._arrivals, self._arrivals + 1
        if sender.pid is not None:      # the pid the kernel vouches for
            meta = dict(meta, pid=sender.pid)
        handle = self._handles[ident] = WorkerHandle(ident, meta, order, self._pool, member)
        log.info("%r connected", handle)

    def send(self, handle, frames, patience=2.0) -> bool:
        """Send to one worker without ever blocking for long; False (and the worker lost)
        when it cannot take the message."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self._router.send_multipart([handle.ident] + frames, flags=zmq.NOBLOCK,
                                            copy=False)
                return True
            except zmq.Again:
                if time.monotonic() > deadline:
                    self.lose(handle, f"not taking messages for {patience:g} s")
                    return False
                time.sleep(0.001)
            except zmq.ZMQError as e:       # EHOSTUNREACH: it disconnected
                self.lose(handle, f"unreachable ({e})")
                return False

    # -- jobs -------------------------------------------------------------------------------

    @_exclusive
    def run(self, code: Code | Resident, *inputs, scheme: str | None = None,
            pieces: int | None = None, faults: Faults | None = None, timeout: float = 600.0,
            seed: int | None = None, progress: Callable[[int, int], None] | None = None,
            verify: bool | str = "auto", adversaries: int = 0,
            assignment: Sequence[Sequence[int]] | None = None,
            allocate: str | Sequence[float] | None = None) -> tuple[Any, Report]:
        """Run one coded job on the cluster's workers; returns (output, report).

        ``run(code, *inputs)`` encodes the inputs' data and ships it with the job;
        ``run(data, *arguments)`` runs on data that ``load`` left on the workers and ships
        only the job's arguments (MDS's x), scheme and pieces defaulting to the load's.

        scheme: "uncoded" (every worker's slice), "classic" (the R fastest whole results),
        "systematic" (whole results sent as m plain row pieces), "cfs" (whole results sent
        as m random combinations of their pieces), "compfs" (a packet per piece as it is
        computed; the default). pieces is m (default 4); faults (ffcode.Faults) are
        injected; progress(rank, needed) is called as the rank grows. Raises JobFailed (the
        report attached as .report) when the remaining work cannot decode, JobTimeout after
        timeout seconds.

        assignment, allocate: which shares (the code's points) each worker holds; a worker
        with several works through them in order, so that a fast one keeps computing while
        stragglers are waited for (every share is its own sender to the decoder). By default
        ("uniform") they are dealt round-robin over the cluster's workers: worker i holds
        shares i, i + P, ... of a code with more points than the P workers, and share i of
        one with at most P (the rest idle). allocate="speed" gives each worker a number of
        shares in proportion to its speed measured in the latest job (``speeds()``; an
        unmeasured one counts as the median), allocate=[s_0, ...] to given speeds, each
        worker at least one share; assignment=[[0, 6], [1, 7], ...] names each worker's
        shares. Faults and the report name workers by their place 0..P-1 in the job.
        More shares cost more encoding and bytes shipped (the report's ``encode`` and
        ``shipped``; paid once with resident data, whose ``load`` fixes the assignment).

        verify: check the output before returning it (ffcode.decoding.verify: Freivalds' check for
        products, a random projection for row-linear LCC), raising VerificationError if a
        worker's wrong result got into it. "auto" (the default) checks where the check costs
        at most 5 % of the job's multiply-adds (ffcode.decoding.verify.cheap), at every prime:
        products from about n = 60 * rounds(p) (120 at 2**31 - 1, 60 from 2**60), row-linear
        LCC blocks from 20 * rounds(p) rows, and with adversaries every checkable output but
        MDS with a vector x (a recomputation); True and False force it.

        adversaries: decode despite up to A workers sending wrong results (ffcode.decoding.robust),
        named in report.wrong (a worker with several shares is wrong on all of them: the
        shares the A workers holding the most hold are corrected). Every scheme but uncoded stops once what arrived decides
        the output with any A workers wrong: classic at R + A whole results when they
        agree, by R + 2A otherwise (Berlekamp-Welch); systematic, cfs and compfs at about
        m·(R + A) random combinations when all agree, by m·(R + 2A) otherwise. More wrong
        workers make the job fail with VerificationError: their results cannot be
        explained, or, if they collude to forge a consistent wrong output, it fails the
        check. Workers found wrong in a job whose output is returned are excluded from
        later jobs (``exclude``).
        """
        start = time.monotonic()
        data = code if isinstance(code, Resident) else None
        if data is not None:
            self._check_resident(data)
            code = data.code
            scheme = data.scheme if scheme is None else scheme
            pieces = data.pieces if pieces is None else pieces
        elif not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code or the data load "
                            f"returned, not {type(code).__name__}.")
        scheme = "compfs" if scheme is None else scheme
        pieces = 4 if pieces is None else pieces
        if data is not None:
            if assignment is not None or allocate is not None:
                raise ValueError("Resident data keeps the assignment it was loaded with: "
                                 "give assignment or allocate to load, not to run.")
            assignment = data.assignment
        else:
            assignment = self._assignment(code, assignment, allocate)
            _warn_privacy(code, assignment)     # for resident data, load said it
        if faults is None:
            faults = Faults()
        if not isinstance(faults, Faults):
            raise TypeError(f"Argument 'faults' must be an ffcode.Faults, not "
                            f"{type(faults).__name__}.")
        timeout = _positive(timeout, "timeout")
        if verify != "auto" and not isinstance(verify, bool):
            raise TypeError(f"Argument 'verify' must be True, False or 'auto', not "
                            f"{verify!r}.")
        if progress is not None and not callable(progress):
            raise TypeError("Argument 'progress' must be callable as progress(rank, needed).")
        faults.check_workers(len(assignment))
        if not self.local:
            _importable_elsewhere(code)
        plan = Plan(code, inputs, scheme, pieces, seed, self._buffers.get(code.F.dtype),
                    adversaries, data, assignment)
        if data is not None:
            inputs = (*data.data, *inputs)
        check = _verification(verify, code, inputs, adversaries)  # inputs checked by now
        encode = time.monotonic() - start
        workers = self._wait(len(assignment))   # replacing lost workers is not the job's time
        if data is not None:
            workers = _in_place(workers, data)
        self.epoch += 1
        job = JobRun(self, plan, workers, faults, progress)
        job.report.settings = _settings(code, inputs, scheme, plan.pieces, faults, seed,
                                        adversaries, check, data, assignment)
        log.info("job %d: %s on %d workers", self.epoch, scheme, len(workers))
        try:
            output, report = job.run(encode, timeout - encode)
        finally:                                # counted in this report, also when it fails
            job.report.rejected, job.report.stale = dict(self.rejected), self.stale
            self.rejected, self.stale = Counter(), 0
            measured = {h.order: t.speed for h, t in zip(workers, job.report.workers)
                        if t.speed}
            if measured:                        # one job's speeds: in the same units
                self._speeds = measured
        log.info("job %d decoded in %.3f s", self.epoch, report.total)
        if plan.buffer is not None:             # reused: no fresh pages to fault in next time
            self._buffers[code.F.dtype] = plan.buffer
        if check:
            start = time.monotonic()
            report.verified = verification.output(code, inputs, output)    # fresh randomness
            report.verify = time.monotonic() - start
            report.total += report.verify
            if not report.verified:
                raise VerificationError(
                    f"The decoded output failed its check ({type(code).__name__}, "
                    f"{verification.rounds(code.F.p)} random columns): a worker sent a wrong "
                    f"result, so the output is not returned.", report=report)
        for i in report.wrong:                  # known wrong once the output is trusted
            self._exclude(workers[i], f"sent a wrong result in job {self.epoch}")
        return output, report

    def speeds(self) -> list:
        """Each worker's speed (pieces of work per second) as measured in the latest job
        that measured any, in the order jobs place the workers; None where unknown."""
        orders = range(self.n_workers) if self._pool is not None else \
            [h.order for h in self.live()]
        return [self._speeds.get(order) for order in orders]

    def _assignment(self, code, assignment, allocate):
        """The shares each worker of a job holds: as given, or allocated (see run)."""
        if assignment is not None:
            if allocate is not None:
                raise ValueError("Give either 'assignment' or 'allocate', not both.")
            return allocation.checked(assignment, code.n_workers, self.n_workers)
        if allocate is None or isinstance(allocate, str) and allocate == "uniform":
            return allocation.uniform(code.n_workers, self.n_workers)
        if isinstance(allocate, str):
            if allocate != "speed":
                raise ValueError(f"Argument 'allocate' must be one of {ALLOCATE} or a "
                                 f"sequence of speeds, not {allocate!r}.")
            measured = self.speeds()
            known = sorted(s for s in measured if s is not None)
            if not known:
                raise ValueError("allocate='speed' needs speeds measured in an earlier job "
                                 "on this cluster: run one first, or pass the speeds.")
            median = known[len(known) // 2]
            speeds = [median if s is None else s for s in measured]
        else:
            speeds = allocation.checked_speeds(allocate, "allocate")
            if len(speeds) != self.n_workers:
                raise ValueError(f"Argument 'allocate' gives {len(speeds)} speeds; the "
                                 f"cluster has {self.n_workers} workers.")
        return allocation.dealt(allocation.proportional(code.n_workers, speeds))

    # -- resident data ------------------------------------------------------------------------

    @_exclusive
    def load(self, code: Code, *data, scheme: str = "compfs", pieces: int = 4,
             seed: int | None = None, assignment: Sequence[Sequence[int]] | None = None,
             allocate: str | Sequence[float] | None = None) -> Resident:
        """Encode a code's data once and leave each worker its share: ``run(resident,
        *arguments)`` then ships only a job's arguments, for as many jobs as you like.

        data: the inputs the code encodes (``code.inputs[:code.encodes]``: MDS's A, LCC's
        blocks). scheme: what the shares serve, "uncoded" (slices), "classic", "systematic"
        or "cfs" (whole shares; a run may pick any of the three), "compfs" (shares already
        combined into m = pieces pieces, for runs with that m). seed: the masks and piece
        combinations (default fresh randomness). assignment, allocate: which shares each
        worker holds, as for ``run``; every run on the data keeps it. A worker lost and replaced gets its share
        again before its next job (its timeline's ``reloaded`` bytes). ``unload`` (or
        closing the cluster) frees the workers' memory."""
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        scheme = checked_scheme(scheme)
        pieces = pieces_count(pieces)
        if len(data) != code.encodes:
            names = ", ".join(code.inputs[:code.encodes])
            rest = ", ".join(code.inputs[code.encodes:])
            raise TypeError(f"{type(code).__name__}'s data is ({names}), got {len(data)} "
                            f"array{'s' if len(data) != 1 else ''}" +
                            (f"; its arguments ({rest}) go to each run" if rest else "") + ".")
        assignment = self._assignment(code, assignment, allocate)
        _warn_privacy(code, assignment)
        if not self.local:
            _importable_elsewhere(code)
        layout = Layout(code, data, scheme, pieces if scheme == "compfs" else None, seed,
                        assignment)
        workers = self._wait(len(assignment))
        self._loads += 1
        ident = self._loads
        resident = self._resident[ident] = Resident(self, ident, layout, data, scheme,
                                                    pieces)
        resident.shipped = sum(self.give(handle, resident, i)
                               for i, handle in enumerate(workers))
        log.info("resident data %d: %.1f MiB shipped to %d workers", ident,
                 resident.shipped / 2**20, len(workers))
        return resident

    def give(self, handle, resident, i) -> int:
        """Ship the shares of place i of resident data to a worker (bytes sent; 0 for an
        idle worker or one that cannot take them, which is then lost)."""
        held = resident.layout.held(i)
        if not held:
            handle.holds.pop(resident.ident, None)
            return 0
        message = load_message(self.session, self.epoch, resident.ident,
                               [share for _, share in held])
        if not self.send(handle, message):
            return 0
        handle.holds[resident.ident] = i
        return sum(memoryview(f).nbytes for f in message)

    @_exclusive
    def unload(self, data: Resident) -> None:
        """Free the workers' memory of resident data (nothing for data already unloaded)."""
        self._check_resident(data, unloaded=True)
        if self._resident.pop(data.ident, None) is None:
            return
        for handle in self.live():
            if handle.holds.pop(data.ident, None) is not None:
                self.send(handle, unload_message(self.session, self.epoch, data.ident),
                          patience=0.1)

    def holds(self, data: Resident) -> bool:
        """Whether this open cluster holds this resident data."""
        return not self._closed and self._resident.get(data.ident) is data

    def _check_resident(self, data, unloaded=False):
        if not isinstance(data, Resident):
            raise TypeError(f"Argument 'data' must be what Cluster.load returned, not "
                            f"{type(data).__name__}.")
        if data.owner is not self:
            raise ValueError(f"{data!r} was loaded on another cluster, not on this one.")
        if not unloaded and not self.holds(data):
            raise ValueError(f"{data!r} was unloaded: load it again.")

    # -- shutdown ---------------------------------------------------------------------------

    def _check_open(self):
        if self._closed or self._closing:
            raise ClusterError("This cluster is closed.")

    def _check_not_closing(self):
        """Inside a job: close() from another thread (or a callback) ends it."""
        if self._closing:
            raise ClusterError("The cluster was closed during the job.")

    def close(self) -> None:
        """Shut every worker down (remote ones are told to exit) and release the socket.
        From another thread while a job runs, the job ends with ClusterError first; from
        inside a job (its progress callback), the cluster closes as the job ends."""
        self._closing = True
        if self._holder == threading.get_ident():
            return
        with self._lock:
            self._shut()

    def _shut(self):
        if self._closed:
            return
        self._closed = True
        self._resident.clear()              # the workers' memory goes with them
        for handle in self.live():
            self._tell_shutdown(handle)
        self._owned["linger"] = 0 if self._pool is not None else 500  # let SHUTDOWNs leave
        self._finalizer()


def _shutdown(owned):
    if "pool" in owned:
        owned["pool"].close()
    if "gate" in owned:                 # before the context ends under its thread
        owned["gate"].stop()
    owned["router"].close(linger=owned.get("linger", 0))
    owned["context"].term()
    if owned["tmpdir"]:
        shutil.rmtree(owned["tmpdir"], ignore_errors=True)


def _whole_message(socket) -> list:
    """The frames of the next message, zero-copy, at most one more than any worker sends
    (so that it reads as malformed); reads each frame's more-flag instead of asking the
    socket (recv_multipart's getsockopt per frame)."""
    frame = socket.recv(copy=False)
    frames = [frame]
    while frame.more:
        frame = socket.recv(copy=False)
        if len(frames) <= MAX_FRAMES:   # the parts past one too many are read and dropped
            frames.append(frame)
    return frames


def _in_place(workers, data) -> list:
    """The workers for a job on resident data: each holder in the place whose shares it
    holds, the others (replacements) in the places left."""
    held = {}
    for handle in workers:
        i = handle.holds.get(data.ident)
        if i is not None and i < len(workers) and i not in held:
            held[i] = handle
    rest = [h for h in workers if h not in held.values()]
    return [held[i] if i in held else rest.pop(0) for i in range(len(workers))]


def _warn_privacy(code, assignment):
    """Say so when a private code's workers hold several shares, as its t counts shares:
    a warning when even a single worker may see more than t."""
    t, most = getattr(code, "t", 0), max(len(held) for held in assignment)
    if t and most > 1:
        log.log(logging.WARNING if t < most else logging.INFO,
                "%r keeps the data from any %d shares, and a worker holds up to %d: any %d "
                "workers learn nothing (for t workers, build it with privacy t × %d)", code,
                t, most, t // most, most)


def _reachable(endpoint, host) -> str:
    """The endpoint as workers on other nodes dial it: a wildcard host becomes this node's
    address."""
    parts = urlsplit(endpoint)
    if parts.hostname in ("0.0.0.0", "::", "*"):
        return f"tcp://{host}:{parts.port}"
    return endpoint


def _verification(verify, code, inputs, adversaries) -> bool:
    """Whether to check the output: "auto" as ffcode.decoding.verify.by_default says, or as told."""
    if verify == "auto":
        return verification.by_default(code, inputs, adversaries)
    if verify and verification.cost(code, inputs) is None:
        raise ValueError(f"{code!r} cannot be verified: its outputs have no check (an LCC "
                         f"whose f is not row-linear).")
    return verify


def _importable_elsewhere(code):
    """Remote workers import a code's computation by its path: not from the master's
    script."""
    path = functions.path_of(code.function)
    if path.startswith("__main__:"):
        raise ValueError(f"Remote workers cannot import {path!r} from the master's script: "
                         f"put f in a module the workers can import (on their PYTHONPATH) "
                         f"and pass it or 'package.module:function'.")


def _settings(code, inputs, scheme, pieces, faults, seed, adversaries, verify,
              data=None, assignment=()) -> dict:
    """What a report says the job was (JSON-ready); ``resident``: the id of the resident
    data it ran on (null: shipped with the job); ``assignment``: each worker's shares."""
    def shapes(x):
        return [shapes(y) for y in x] if isinstance(x, (list, tuple)) else list(np.shape(x))

    return {"code": repr(code), "p": code.F.p, "inputs": [shapes(x) for x in inputs],
            "scheme": scheme, "pieces": pieces, "faults": faults.to_dict(), "seed": seed,
            "adversaries": adversaries, "verify": verify,
            "resident": None if data is None else data.ident,
            "assignment": [list(held) for held in assignment]}


def _positive(value, name) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"Argument {name!r} must be a number of seconds, not "
                        f"{type(value).__name__}.")
    if not value > 0:
        raise ValueError(f"Argument {name!r} must be positive, not {value}.")
    return float(value)


def _check_endpoint(endpoint, secure):
    if not isinstance(endpoint, str):
        raise TypeError(f"Argument 'endpoint' must be a string, not {type(endpoint).__name__}.")
    parts = urlsplit(endpoint)
    host, _, port = parts.netloc.rpartition(":")
    if not (parts.scheme == "tcp" and host and (port == "*" or port.isdigit() and
                                                int(port) < 65536)
            or parts.scheme == "ipc" and len(endpoint) > len("ipc://")):
        raise ValueError(f"Argument 'endpoint' must look like 'tcp://HOST:PORT' (PORT a "
                         f"number below 65536, or * for any free one) or 'ipc://PATH', not "
                         f"{endpoint!r}.")
    if parts.scheme == "tcp" and not secure:
        where = "on loopback, where any process of this host" if host in LOOPBACK else \
            f"on {host!r}, where anyone who reaches it"
        raise ValueError(f"Refusing to listen {where} could join as a worker and spoil the "
                         f"output: pass key= and clients= (CURVE, see 'ffcode keys'), or "
                         f"insecure=True on a trusted network.")
