"""``ffcode.Cluster``: a master and its pool of workers, reused across jobs.

It composes the parts: a transport (the socket, runtime/shared/transport.py), an engine
that starts the workers (runtime/master/engines.py: local processes or Ray actors) or
waits for hand-started ones, a roster that admits and watches them
(runtime/master/roster.py), the master's thread, alone on the socket
(runtime/master/driver.py), and per job a plan (runtime/master/jobs.py), encoded in the
caller's thread, that a job run carries out (runtime/master/jobrun.py), several in flight
at once. Every wait is bounded, and closing (also on an exception, Ctrl-C, or garbage
collection) kills every process the cluster started.

Arguments are checked before any worker starts or any socket opens:

>>> import ffcode
>>> ffcode.Cluster(n_workers=0)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'n_workers' must be from 1 to 1024, not 0.
"""
from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from numbers import Integral, Real
from typing import Any, Optional, Sequence

from ffcode import checks
from ffcode.constraints import Interval, validate
from ffcode.errors import ClusterBusy, ClusterError
from ffcode.runtime.master import engines, jobs
from ffcode.runtime.master.engines import Engine
from ffcode.runtime.shared import wire
from ffcode.runtime.master.driver import Driver, JobFuture, Outcome, Slots, result_of, shutdown
from ffcode.runtime.master.jobrun import JobRun
from ffcode.runtime.master.jobs import Options
from ffcode.runtime.master.resident import Resident, Residents
from ffcode.runtime.master.roster import Roster, WorkerHandle

MAX_MESSAGE = 256 << 20     # bytes: the largest message part the master takes, by default
MAX_IN_FLIGHT = 16          # jobs a master holds at once, by default
_DEFAULTS = Options()       # a job's options when none are given (frozen: made once)

log = logging.getLogger(__name__)


class Cluster:
    """A master and its workers: ``Cluster(n_workers=8)`` spawns local worker processes;
    ``Cluster(n_workers=8, engine="ray")`` starts them as Ray actors spread over a Ray
    cluster's nodes; ``Cluster(endpoint="tcp://HOST:5555", n_workers=8)`` waits for workers
    started with ``ffcode worker --connect tcp://HOST:5555``. Use it as a context manager.

    ``engine`` is an engine (``ffcode.runtime``'s ``LocalEngine()``, ``RayEngine(address=...)``,
    ``RemoteWorkers(endpoint, key=..., clients=...)``), which carries its settings, or an
    engine's name (``engine_names()``) made from ``endpoint``, ``address``, ``key``,
    ``clients`` and ``insecure`` (see each engine: CURVE keys for a tcp endpoint, Ray's
    address); "local" given an endpoint waits for workers started by hand there. A worker
    silent for ``lost_after`` seconds is given up on; ``start_timeout`` bounds waiting.
    ``max_message`` (bytes) is the largest message part the master takes: a peer
    announcing a larger one is disconnected before it is read, and a job whose packets
    would be larger fails with a clear error. ``max_in_flight`` bounds the jobs submitted
    and not yet ended (the master holds their encoded shares and decoders): a submit
    beyond it waits for one to end.

    ``groups`` puts a relay between the master and each group of workers, local to it
    (``Cluster(12, groups=3)``: 3 relays of 4; a list gives the sizes; "nodes" on Ray: a
    relay per node): it runs a HierarchicalCode's inner code, or forwards an ordinary
    code's packets that add rank (runtime/worker/relay.py). ``wait``, ``live``, ``faults`` and
    ``adversaries`` are then about the relays."""

    # ffcode.constraints; the engine checks its settings, groups and n_workers' upper end.
    _parameter_constraints = {
        "start_timeout": Interval(Real, 0, None, "right", "a number of seconds"),
        "lost_after": Interval(Real, 0, None, "right", "a number of seconds"),
        "max_message": Interval(Integral, wire.MAX_META_BYTES, None),
        "max_in_flight": Interval(Integral, 1, 65536)}

    def __init__(self, n_workers: int = 4, endpoint: Optional[str] = None, *,
                 engine: str | Engine = "local", address: Optional[str] = None,
                 key: Optional[str] = None, clients: Optional[str] = None,
                 insecure: bool = False, start_timeout: float = 60.0,
                 lost_after: float = 2.0, max_message: int = MAX_MESSAGE,
                 max_in_flight: int = MAX_IN_FLIGHT,
                 groups: Optional[int | Sequence[int] | str] = None) -> None:
        self.engine = engines.choose(engine, endpoint=endpoint, address=address, key=key,
                                     clients=clients, insecure=insecure)
        self.n_workers = self.engine.check_workers(n_workers)
        sizes = self.engine.group_sizes(groups, self.n_workers)  # None: the engine's say
        checked = validate(self._parameter_constraints, {
            "start_timeout": start_timeout, "lost_after": lost_after,
            "max_message": max_message, "max_in_flight": max_in_flight})
        self.start_timeout, self.lost_after = checked["start_timeout"], checked["lost_after"]
        self.max_message, self.max_in_flight = checked["max_message"], checked["max_in_flight"]
        self.local = self.engine.local
        self.epoch = 0                      # jobs submitted so far (a job's number)
        self._buffers: dict = {}            # dtype -> payload storage a job may reuse
        self._numbers = threading.Lock()    # numbers the jobs of several threads
        self._slots = Slots(self.max_in_flight)
        self.transport = self.engine.transport(self.max_message)
        tmpdir = self.engine.private_dir()
        self._owned: dict[str, Any] = {"transport": self.transport, "tmpdir": tmpdir}
        self._finalizer = weakref.finalize(self, shutdown, self._owned)
        try:
            self.groups = self.engine.start(self.transport, size=len(sizes or ()) or
                                            self.n_workers, timeout=self.start_timeout,
                                            tmpdir=tmpdir, groups=sizes)
            started = self._owned["engine"] = self.engine if self.engine.starts_workers else None
            self.members = len(self.groups) or self.n_workers   # the master's direct peers
            self.roster = Roster(self.transport, started, self.members, self.lost_after)
            self.roster.spawn_all()
            driver = self._owned["driver"] = Driver(self.roster, self.transport.endpoint,
                                                    self.start_timeout, self._slots)
            driver.on_exit = weakref.WeakMethod(self._shut)     # closed from inside it
            self._owned["roster"] = self.roster
        except BaseException:
            self.close()
            raise
        self.session, self.endpoint = self.transport.session, self.transport.endpoint
        self.residents = Residents(self.session)
        self.public_key = self.transport.public_key

    def __repr__(self) -> str:
        live = len(self.live()) if hasattr(self, "roster") and not self.closed else 0
        groups = f" of groups {list(self.groups)}" if getattr(self, "groups", ()) else ""
        peers = "relays" if groups else "workers"
        return (f"Cluster({getattr(self, 'endpoint', None)!r}, {peers} {live}/{self.members}"
                f"{groups}{', closed' if self.closed else ''})")

    @property
    def closed(self) -> bool:
        """Whether the cluster is closed (or closing)."""
        finalizer = getattr(self, "_finalizer", None)
        return finalizer is None or not finalizer.alive or self.transport.closing

    @property
    def _driver(self) -> Driver:
        if self.closed:
            raise ClusterError("This cluster is closed.")
        return self._owned["driver"]

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

    def wait(self, count: Optional[int] = None, timeout: Optional[float] = None) -> list:
        """Block until ``count`` workers (default all; with groups, relays) are connected;
        local workers that were lost are replaced first. ClusterError after ``timeout``
        seconds."""
        driver = self._driver.outside("Cluster.wait")
        count = self.roster.count(self.members if count is None else count)
        timeout = self.start_timeout if timeout is None else checks.seconds(timeout, "timeout")
        return result_of(driver.when_ready(count, timeout, lambda workers: workers))

    def exclude(self, handle: WorkerHandle, reason: str) -> None:
        """Never give this worker another job: one the cluster started is replaced before
        the next job, a remote one is told to exit. Jobs in flight go on without it."""
        self._driver.call(self.roster.exclude, handle, reason)

    def speeds(self) -> list:
        """Each worker's speed (pieces of work a second) in the latest job measuring it."""
        return self.roster.speeds()

    def submit(self, code: Any, *inputs, block: bool = True, **options: Any) -> JobFuture:
        """Start one coded job and return at once: a JobFuture (a
        ``concurrent.futures.Future``) resolving to (output, report), or raising the job's
        error. Takes ``run``'s arguments; the data is encoded in the calling thread. Jobs
        in flight share the workers, each with its own packets, stops, faults and errors.
        With ``max_in_flight`` jobs in flight it waits for one to end (``block=False``:
        ClusterBusy; closing: ClusterError). Works from any thread (a done-callback's too)
        and with ``concurrent.futures`` and ``asyncio.wrap_future``; ``future.cancel()``
        stops the job on its workers. The future keeps the cluster open until it ends."""
        self._driver.outside("Cluster.submit")
        if not self._slots.take(checks.flag(block, "block")):   # ClusterError once closed
            raise ClusterBusy(f"This cluster has {self.max_in_flight} jobs in flight "
                              f"(max_in_flight): wait for one, or submit with block=True.")
        try:                                # its future frees the slot as it resolves
            return self._driver.submit(self._prepare(code, inputs, options), owner=self)
        except BaseException:               # not queued: the slot is free again
            self._slots.release()
            raise

    def run(self, code: Any, *inputs, **options: Any) -> Outcome:
        """Run one coded job on the cluster's workers; returns (output, report).

        ``run(code, *inputs)`` encodes the inputs' data and ships it with the job;
        ``run(data, *arguments)`` runs on data that ``load`` left on the workers and ships
        only the job's arguments (MDS's x), scheme and pieces defaulting to the load's.
        The keyword arguments are ``Options``' (ffcode.runtime.master.jobs.Options). Raises
        JobFailed (the report attached as .report) when the remaining work cannot decode,
        JobTimeout after timeout seconds, VerificationError when the output fails its
        check. The same as ``submit(...).result()``; Ctrl-C while it waits cancels every
        job in flight on the cluster."""
        self._driver.outside("Cluster.run").callbacks.refuse("Cluster.run")
        try:
            return self.submit(code, *inputs, **options).result()
        except KeyboardInterrupt:
            self.cancel()
            raise

    def cancel(self) -> int:
        """Cancel every job in flight (each stopped on its workers); how many were."""
        futures = self._driver.call(lambda: [run.future for run in self._driver.jobs()])
        return sum(future.cancel() for future in futures)

    def _prepare(self, code: Any, inputs: tuple, options: dict) -> JobRun:
        """The job, its data encoded (in the calling thread)."""
        start = time.monotonic()
        resident = isinstance(code, Resident)
        if resident or getattr(code, "resident", None) is not None:    # a kind's data too
            self.residents.check(code if resident else code.resident)
        plan, inputs, check = jobs.prepare(code, inputs,
                                           Options(**options) if options else _DEFAULTS,
                                           self.members,
                                           self.speeds(), not self.local, self._buffers,
                                           self.max_message, resident, self.groups)
        self.roster.count(len(plan.tasks))
        with self._numbers:
            self.epoch += 1
            number = self.epoch
        return JobRun(plan, number, plan.settings(inputs, check is not None),
                      session=self.transport.session, encode=time.monotonic() - start,
                      check=check, buffers=self._buffers)

    def load(self, code: Any, *data, scheme: str = "compfs",
             pieces: int = 4, seed: Optional[int] = None,
             assignment: Optional[Sequence[Sequence[int]]] = None,
             allocate: Any = None) -> Resident:
        """Encode a code's data once and leave each worker its share: ``run(resident,
        *arguments)`` then ships only a job's arguments, for as many jobs as you like.

        data: the inputs the code encodes (``code.inputs[:code.encodes]``: MDS's A, LCC's
        blocks). scheme: what the shares serve, "uncoded" (slices), "classic", "systematic"
        or "cfs" (whole shares, for any of the three), "compfs" (shares combined into m =
        pieces pieces, for runs with that m). seed: the masks and piece combinations
        (default fresh randomness). assignment, allocate: as for ``run``, kept by every run
        on the data. A worker lost and replaced gets its share again before its next job
        (its timeline's ``reloaded`` bytes). ``unload`` (or closing) frees their memory. A
        gradient code takes its partitions (a tuple of arrays each) for its workers instead:
        ``GradientStep(resident, f, *args)`` then ships only the step's arguments."""
        driver = self._driver.outside("Cluster.load")
        jobs.check_data(code, data, self.groups)
        options = Options(scheme=scheme, pieces=pieces, seed=seed, assignment=assignment,
                          allocate=allocate)
        resident = self.residents.add(code, data, options, self.members, self.speeds(),
                                      remote=not self.local)
        try:
            resident.shipped = result_of(driver.when_ready(
                self.roster.count(len(resident.assignment)), self.start_timeout,
                functools.partial(self.roster.give_all, resident)))
        except BaseException:
            self.residents.drop(resident)
            raise
        log.info("resident data %d: %.1f MiB shipped to %d workers", resident.ident,
                 resident.shipped / 2**20, len(resident.assignment))
        return resident

    def unload(self, data: Resident) -> None:
        """Free the workers' memory of resident data (nothing for data already unloaded);
        jobs in flight on it finish first, and no new one may start on it."""
        self.residents.check(data, unloaded=True)
        if self.residents.drop(data):
            self._driver.call(self._driver.unload, data)

    def holds(self, data: Resident) -> bool:
        """Whether this open cluster holds this resident data."""
        return not self.closed and self.residents.holds(data)

    def close(self) -> None:
        """Shut every worker down (remote ones are told to exit) and release the socket.
        Every job in flight ends with ClusterError first (its future fails); from inside a
        job (its progress callback), the cluster closes as that call returns."""
        if hasattr(self, "transport"):
            self.transport.closing = True
            self.transport.wake()
        driver = self._owned.get("driver") if hasattr(self, "_owned") else None
        if driver is not None and driver.inside():
            driver.closed_inside = True         # the master's thread closes it as it ends
            return
        self._shut()

    def _shut(self) -> None:
        if hasattr(self, "residents"):
            self.residents.clear()              # the workers' memory goes with them
        self._finalizer()

