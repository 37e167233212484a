"""``ffcode.Cluster``: a master and its pool of workers, reused across jobs.

It composes the parts: a transport (the socket, runtime/transport.py), an engine that starts
the workers (runtime/engines.py: local processes or Ray actors; none for hand-started
workers), a roster that admits and watches them (runtime/roster.py), and for each job a
plan (runtime/jobs.py) that a job run carries out (runtime/jobrun.py). Every wait is
bounded, and closing (also on an exception, Ctrl-C, or garbage collection) kills every
process the cluster started.

Arguments are checked before any worker starts or any socket opens:

>>> import ffcode
>>> ffcode.Cluster(n_workers=0)
Traceback (most recent call last):
...
ValueError: Argument 'n_workers' must be from 1 to 1024, not 0.
"""
from __future__ import annotations

import functools
import logging
import shutil
import threading
import time
import weakref
from typing import Any, Optional, Sequence

from ffcode import checks
from ffcode.codes.base import Code
from ffcode.errors import ClusterError
from ffcode.runtime import engines, pool, wire
from ffcode.runtime.jobrun import JobRun
from ffcode.runtime import jobs
from ffcode.runtime.jobs import Layout, Options, Plan
from ffcode.runtime.resident import Resident, Residents
from ffcode.runtime.roster import Roster, WorkerHandle
from ffcode.runtime.transport import Transport
from ffcode.schemes import Scheme

MAX_MESSAGE = 256 << 20     # bytes: the largest message part the master takes, by default
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
            if self._closed or self.transport.closing:
                raise ClusterError("This cluster is closed.")
            self._holder = threading.get_ident()
            try:
                return method(self, *args, **kwargs)
            finally:
                self._holder = None
                if self.transport.closing:      # close() was called inside the job
                    self._shut()
    return one_at_a_time


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
    CPU per worker), and its ``endpoint`` defaults to tcp on this node's Ray address, any
    free port (actors on this node connect over a private ipc socket instead, in
    plaintext; an explicit endpoint serves every actor). A worker silent for
    ``lost_after`` seconds is given up on; ``start_timeout`` bounds waiting for workers.
    ``max_message`` (bytes) is the largest message part the master takes: a peer
    announcing a larger one is disconnected before it is read, and a job whose packets
    would be larger fails with a clear error.
    """

    def __init__(self, n_workers: int = 4, endpoint: Optional[str] = None, *,
                 engine: str = "local", address: Optional[str] = None,
                 key: Optional[str] = None, clients: Optional[str] = None,
                 insecure: bool = False, start_timeout: float = 60.0,
                 lost_after: float = 2.0, max_message: int = MAX_MESSAGE) -> None:
        engines.check_settings(endpoint, engine, address, key, clients, insecure)
        ray = engine == "ray"
        most = MAX_STARTED if endpoint is None or ray else MAX_REMOTE
        self.n_workers = checks.integer(n_workers, "n_workers", low=1, high=most)
        self.start_timeout = checks.seconds(start_timeout, "start_timeout")
        self.lost_after = checks.seconds(lost_after, "lost_after")
        self.max_message = checks.integer(max_message, "max_message", low=wire.MAX_META_BYTES)
        self.engine, self.local = engine, endpoint is None and not ray
        self.epoch = 0                      # jobs started so far (a job's number)
        self._buffers: dict = {}            # dtype -> payload storage of the last job
        self._closed = False
        self._lock = threading.Lock()       # one caller on the socket at a time
        self._holder: Optional[int] = None  # the thread that holds it
        curve = key is not None or ray and not insecure
        self.transport = Transport(key=key, clients=clients, insecure=insecure,
                                   session_keys=curve and key is None,
                                   max_message=self.max_message)
        tmpdir = pool.private_dir() if endpoint is None else None
        self._owned: dict[str, Any] = {"transport": self.transport, "tmpdir": tmpdir}
        self._finalizer = weakref.finalize(self, _shutdown, self._owned)
        try:
            started = self._owned["engine"] = engines.start(
                engine, self.transport, endpoint, size=self.n_workers, address=address,
                timeout=self.start_timeout, curve=curve, tmpdir=tmpdir)
            self.roster = Roster(self.transport, started, self.n_workers, self.lost_after)
            self.roster.spawn_all()
        except BaseException:
            self.close()
            raise
        self.session, self.endpoint = self.transport.session, self.transport.endpoint
        self.residents = Residents(self.session)
        self.public_key = self.transport.public_key

    def __repr__(self) -> str:
        live = len(self.live()) if hasattr(self, "roster") else 0
        return (f"Cluster({getattr(self, 'endpoint', None)!r}, workers "
                f"{live}/{self.n_workers}{', closed' if self._closed else ''})")

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def rejected_total(self):   # messages dropped since the cluster started, by reason
        return self.transport.rejected_total

    def live(self) -> list:
        """The connected workers not given up on: local ones in slot order, remote ones in
        the order they connected."""
        return self.roster.live()

    @_exclusive
    def wait(self, count: Optional[int] = None,
             timeout: Optional[float] = None) -> list:
        """Block until ``count`` workers (default n_workers) are connected; local workers
        that were lost are replaced first. ClusterError after ``timeout`` seconds."""
        return self._wait(count, timeout)

    def _wait(self, count=None, timeout=None) -> list:
        count = self.n_workers if count is None else checks.integer(count, "count", low=0)
        if self.roster.engine is not None and count > self.n_workers:
            raise ValueError(f"This cluster has {self.n_workers} {self.engine} workers, "
                             f"not {count}.")
        timeout = self.start_timeout if timeout is None else \
            checks.seconds(timeout, "timeout")
        return self.roster.wait(count, timeout, self.endpoint)

    @_exclusive
    def exclude(self, handle: WorkerHandle, reason: str) -> None:
        """Never give this worker another job: one the cluster started is replaced by a
        fresh one before the next job, a remote one is told to exit (the cluster then waits
        for another to connect)."""
        self.roster.exclude(handle, reason)

    def speeds(self) -> list:
        """Each worker's speed (pieces of work per second) as measured in the latest job
        that measured any, in the order jobs place the workers; None where unknown."""
        return self.roster.speeds()

    @_exclusive
    def run(self, code: Any, *inputs, **options: Any) -> tuple:
        """Run one coded job on the cluster's workers; returns (output, report).

        ``run(code, *inputs)`` encodes the inputs' data and ships it with the job;
        ``run(data, *arguments)`` runs on data that ``load`` left on the workers and ships
        only the job's arguments (MDS's x), scheme and pieces defaulting to the load's.
        The keyword arguments are ``Options``' (ffcode.runtime.jobs.Options): scheme,
        pieces, faults, timeout, seed, progress, verify, adversaries, assignment, allocate.
        Raises JobFailed (the report attached as .report) when the remaining work cannot
        decode, JobTimeout after timeout seconds, VerificationError when the output fails
        its check. Workers found wrong in a job whose output is returned are excluded from
        later jobs (``exclude``)."""
        start = time.monotonic()
        opts = Options(**options)
        data = code if isinstance(code, Resident) else None
        if data is not None:
            self.residents.check(data)
            if opts.assignment is not None or opts.allocate is not None:
                raise ValueError("Resident data keeps the assignment it was loaded with: "
                                 "give assignment or allocate to load, not to run.")
            code, assignment = data.code, data.assignment
            opts = opts.resolved(data.scheme, data.pieces)
        else:
            assignment = opts.assignment_for(code, self.n_workers, self.speeds(),
                                             remote=not self.local)
        opts.faults.check_workers(len(assignment))
        plan = Plan(code, inputs, opts, assignment, data,
                    self._buffers.get(code.F.dtype), self.max_message)
        inputs = inputs if data is None else (*data.data, *inputs)
        check = jobs.verification(opts.verify, code, inputs, opts.adversaries)
        encode = time.monotonic() - start
        workers = self._wait(len(assignment))   # replacing lost workers is not the job's time
        if data is not None:
            workers = self.roster.in_place(workers, data)
        self.epoch += 1
        job = JobRun(plan, workers, self.roster, self.epoch, plan.settings(inputs, check))
        log.info("job %d: %s on %d workers", self.epoch, plan.scheme, len(workers))
        output, report = job.run(encode, opts.timeout - encode)
        self.roster.record_speeds(workers, [t.speed for t in report.workers])
        log.info("job %d decoded in %.3f s", self.epoch, report.total)
        if plan.buffer is not None:             # reused: no fresh pages to fault in next time
            self._buffers[code.F.dtype] = plan.buffer
        if check:
            jobs.verify_output(code, inputs, output, report)
        for i in report.wrong:                  # known wrong once the output is trusted
            self.roster.exclude(workers[i], f"sent a wrong result in job {self.epoch}")
        return output, report

    @_exclusive
    def load(self, code: Code, *data, scheme: str = "compfs", pieces: int = 4,
             seed: Optional[int] = None,
             assignment: Optional[Sequence[Sequence[int]]] = None,
             allocate: Any = None) -> Resident:
        """Encode a code's data once and leave each worker its share: ``run(resident,
        *arguments)`` then ships only a job's arguments, for as many jobs as you like.

        data: the inputs the code encodes (``code.inputs[:code.encodes]``: MDS's A, LCC's
        blocks). scheme: what the shares serve, "uncoded" (slices), "classic", "systematic"
        or "cfs" (whole shares; a run may pick any of the three), "compfs" (shares already
        combined into m = pieces pieces, for runs with that m). seed: the masks and piece
        combinations (default fresh randomness). assignment, allocate: which shares each
        worker holds, as for ``run``; every run on the data keeps it. A worker lost and
        replaced gets its share again before its next job (its timeline's ``reloaded``
        bytes). ``unload`` (or closing the cluster) frees the workers' memory."""
        options = Options(scheme=scheme, pieces=pieces, seed=seed, assignment=assignment,
                          allocate=allocate)
        jobs.check_data(code, data)
        assignment = options.assignment_for(code, self.n_workers, self.speeds(),
                                                remote=not self.local)
        held, m = Scheme.parse(options.scheme), options.pieces or pieces    # as checked
        layout = Layout(code, data, held, m if held == Scheme.COMPFS else None, seed,
                        assignment)
        workers = self._wait(len(assignment))
        resident = self.residents.add(layout, data, held, m)
        resident.shipped = sum(self.roster.give(handle, resident, i)
                               for i, handle in enumerate(workers))
        log.info("resident data %d: %.1f MiB shipped to %d workers", resident.ident,
                 resident.shipped / 2**20, len(workers))
        return resident

    @_exclusive
    def unload(self, data: Resident) -> None:
        """Free the workers' memory of resident data (nothing for data already unloaded)."""
        self.residents.check(data, unloaded=True)
        if self.residents.drop(data):
            self.roster.forget(data)

    def holds(self, data: Resident) -> bool:
        """Whether this open cluster holds this resident data."""
        return not self._closed and self.residents.holds(data)

    def close(self) -> None:
        """Shut every worker down (remote ones are told to exit) and release the socket.
        From another thread while a job runs, the job ends with ClusterError first; from
        inside a job (its progress callback), the cluster closes as the job ends."""
        if hasattr(self, "transport"):
            self.transport.closing = True
        if self._holder == threading.get_ident():
            return
        with self._lock:
            self._shut()

    def _shut(self) -> None:
        if self._closed:
            return
        self._closed = True
        if hasattr(self, "residents"):
            self.residents.clear()              # the workers' memory goes with them
        roster: Optional[Roster] = getattr(self, "roster", None)
        if roster is not None:
            for handle in roster.live():
                roster.shut_down(handle)
        self.transport.linger = 0 if self._owned.get("engine") else 500  # SHUTDOWNs leave
        self._finalizer()


def _shutdown(owned) -> None:
    if owned.get("engine") is not None:
        owned["engine"].close()
    owned["transport"].close()
    if owned["tmpdir"]:
        shutil.rmtree(owned["tmpdir"], ignore_errors=True)
