"""Coded MapReduce on a Cluster's workers (ffcode.mapreduce has the math): the master only
places the files, starts the phases and gathers the outputs; the workers shuffle among
themselves (runtime/worker/shuffler.py).

``run(cluster, files, map, reduce, load=r)`` runs these steps as jobs of the cluster:

1. the map phase: each worker gets the files of its batches (a batch per r-subset of the
   K workers, ``ffcode.mapreduce.shuffle.Placement``), maps them, prepares its shuffle
   messages (coded packets, or the values its turn gives it), opens a socket for its
   peers and answers with its endpoint;
2. the shuffle phase: each worker gets every endpoint, sends its messages straight to its
   peers (authenticated as the master's links are: CURVE keys the master made for this
   job on tcp, the kernel's word on the peers' pids on ipc), decodes what it received,
   reduces its function's values and sends the output to the master;
3. the check phase (``verify``, at load r >= 2): the master sends a seed drawn once
   every worker had its messages, each worker answers fingerprints of the pieces it
   received, sent or vouches for, and the master judges them
   (``ffcode.mapreduce.verify``): a liar named is done without as a lost worker is, a
   pair at odds gets its value sent plain by another mapper, and the shuffle is done
   again;
4. on a failure, the workers are told to let go of what they kept.

A worker lost once the map tasks left (during the map, before the shuffle, or during it)
is done without when every batch is still mapped by a worker left (load r >= 2 absorbs
the loss of any r - 1 workers): the workers left shuffle again by a
``ffcode.mapreduce.shuffle.Recovery``, a survivor reducing each lost worker's function,
the coded groups without a lost member exchanging as before and the rest sent plain; the
report names the ``lost`` workers. Otherwise (r = 1, ``recover=False``, a function that
raises) the job fails with an error naming the worker and what is missing, and the
workers let go of everything. ``retries`` runs a failed job again from the map, on the
workers the cluster then has (a local or Ray cluster replaces a lost one).

The emulated network (``network``, ``link_rate`` in bytes a second, ``link_delay`` in
seconds a message takes on top of its bytes): on "links" every ordered pair of workers
has its own link of that rate and a message for several receivers is sent to each; on
"turns" the workers send one after another on one shared medium of that rate, a
multicast reaching all its receivers at once (the schedule of Coded TeraSort's
implementation, and the setting of the coded-shuffling papers). ``link_loss``
makes the peer links lose messages (seeded by ``seed``, independently or in runs of
``link_burst``), carried in segments of 64 KiB as a network carries packets: a lost
segment or acknowledgement is found by the sender's gaps and timeouts (a timeout asking
the receiver first) and the segment sent again (runtime/worker/peer_links.py); the
report counts what each link dropped and what was sent again.

Arguments are checked before anything starts:

>>> run(None, [b"x"], "ffcode.mapreduce.terasort:sort", load=1)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'cluster' must be an ffcode.Cluster, not NoneType.
"""
from __future__ import annotations

import json
import math
import secrets
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence
from urllib.parse import urlsplit

import numpy as np
import zmq

from ffcode import checks, functions
from ffcode.errors import ClusterError, InvalidParameterError, JobFailed, VerificationError
from ffcode.field import GF
from ffcode.decoding.collectors import WholeResults
from ffcode.mapreduce import verify
from ffcode.mapreduce.shuffle import Placement, Recovery
from ffcode.runtime.master.options import check_remote_path
from ffcode.runtime.master.plans import KindPlan
from ffcode.runtime.shared.phases import (CHUNK, NETWORKS, chunk_of, delay_of, memory_of,
                                          peer_loss, prime_of)
from ffcode.runtime.shared.kinds import JobKind
from ffcode.runtime.shared.phases import Check, Drop, Map, Shuffle
from ffcode.runtime.shared.task import Task

PHASES = ("map", "encode", "shuffle", "decode", "reduce")
DROP_TIMEOUT = 5.0          # seconds a failed job's caller waits for its workers' drop
DROP_LIFETIME = 3600.0      # seconds a drop waits for workers busy in the user's code
MAX_OUTPUT = 1 << 40        # bytes a worker may announce as its output


@dataclass
class MapReduceReport:
    """What a MapReduce job did: its settings; ``phases``, the seconds of each phase at its
    slowest worker (map, encode, shuffle, decode, reduce), ``cpu`` the same in CPU seconds
    (a worker process's, zmq's threads included: what waiting and other processes on the
    cores do not inflate), and ``total``, the master's wall time from placing the files to
    holding every output; per worker, its phases
    (``workers``), the payload bytes it sent in the shuffle (``sent``: a multicast
    counted once) and the bytes it put on its links (``copies``: a multicast counted once
    per receiver on "links"); ``jobs``, the phase jobs' reports (the map, then each
    shuffle attempt); ``lost``, the workers the shuffle was finished without (their
    entries are None); ``attempts``, how many times the job ran from the map.

    The shuffle's check (``verify``): ``verified`` True once a check found every piece
    received as its mappers say (None: not checked); ``checks``, each check's pieces
    ``checked`` and ``disputed`` (with the workers that can have lied in each,
    ``candidates``), the ``liars`` it named, the (sender, receiver) pairs it
    had to ``distrust`` and the ``suspects`` it could not tell apart; ``excluded``, the
    workers named liars (the shuffle finished without them; they are in ``lost`` too,
    and the cluster gives them no further job); ``distrusted``, the pairs whose values
    were sent again by another mapper; ``verify``, the master's seconds in the checks.

    Lossy peer links (``link_loss``, each worker's loss, and ``link_burst``; None without
    loss): ``dropped[k][j]``, what the link from worker k to worker j lost in the shuffle
    that gave the outputs (segments of messages, polls, turns and acknowledgements), and
    ``resent[k]``, the segments worker k sent again (empty lists without loss; None for a
    lost worker)."""
    workers: int
    load: int
    coded: bool
    network: str
    link_rate: Optional[float]
    link_delay: float = 0.0
    link_loss: Any = None
    link_burst: Optional[float] = None
    phases: dict = field(default_factory=dict)
    cpu: dict = field(default_factory=dict)
    per_worker: list = field(default_factory=list)
    sent: list = field(default_factory=list)
    copies: list = field(default_factory=list)
    total: float = 0.0
    attempts: int = 1
    lost: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    verified: Optional[bool] = None
    checks: list = field(default_factory=list)
    excluded: list = field(default_factory=list)
    distrusted: list = field(default_factory=list)
    verify: float = 0.0
    dropped: list = field(default_factory=list)
    resent: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"workers": self.workers, "load": self.load, "coded": self.coded,
                "network": self.network, "link_rate": self.link_rate,
                "link_delay": self.link_delay, "link_loss": self.link_loss,
                "link_burst": self.link_burst, "dropped": self.dropped,
                "resent": self.resent,
                "phases": dict(self.phases, total=self.total), "cpu": self.cpu,
                "per_worker": self.per_worker, "sent": self.sent, "copies": self.copies,
                "attempts": self.attempts, "lost": self.lost, "verified": self.verified,
                "checks": self.checks, "excluded": self.excluded,
                "distrusted": [list(p) for p in self.distrusted], "verify": self.verify}


class Answers(WholeResults):
    """The collector of a phase: from every worker, its answer (a JSON packet 0) and its
    output in chunks (packets 1, 2, ...); complete once every worker's whole answer is in,
    or once more workers than ``idle`` answered that they hold nothing of the job (the
    replacement of a lost worker: the others would wait for it in vain). Nothing a worker
    says is trusted: its announced size bounds what it may send, each chunk is checked
    against it, and a bad packet changes nothing. As every collector of whole results, it
    has nothing to reduce and trusts its senders (``WholeResults``). ``among``: the
    workers that answer, when not all the first ``workers`` do."""

    def __init__(self, workers: int, idle: int = 0, chunk: int = CHUNK,
                 among: Optional[Sequence[int]] = None) -> None:
        among = range(workers) if among is None else among
        super().__init__(len(among))
        self.idle, self.chunk = idle, chunk
        self.meta: dict = {}
        self.chunks: dict = {w: {} for w in among}
        self.done: set = set()

    @property
    def replaced(self) -> bool:
        """Whether more workers answered idle than expected."""
        return sum(1 for w in self.done if self.meta[w].get("idle")) > self.idle

    @property
    def rank(self) -> int:
        return len(self.done)

    @property
    def complete(self) -> bool:
        return len(self.done) == self.needed or self.replaced

    def add(self, packet: Any) -> bool:
        w, index = int(packet.worker), int(packet.index)
        if w not in self.chunks or w in self.done:
            raise ValueError(f"no answer expected from worker {w}")
        payload = np.asarray(packet.payload)
        if payload.dtype != np.uint8 or payload.ndim != 1:
            raise ValueError("an answer's packets carry bytes")
        if index == 0:
            if w in self.meta:
                raise ValueError(f"worker {w} answered twice")
            meta = json.loads(payload.tobytes())
            size = meta.get("bytes") if isinstance(meta, dict) else None
            if type(size) is not int or not 0 <= size <= MAX_OUTPUT:
                raise ValueError(f"worker {w}'s answer does not say its output's size")
            self.meta[w] = meta
        else:
            if w not in self.meta:
                raise ValueError(f"worker {w} sent output before its answer")
            size = self.meta[w]["bytes"]
            if index > math.ceil(size / self.chunk) or index in self.chunks[w] or \
                    payload.size != min(self.chunk, size - (index - 1) * self.chunk):
                raise ValueError(f"worker {w} sent a chunk {index} that its output has not")
            self.chunks[w][index] = payload
        if w in self.meta and \
                len(self.chunks[w]) == math.ceil(self.meta[w]["bytes"] / self.chunk):
            self.done.add(w)
        return True

    def output(self, worker: int) -> bytes:
        """A worker's output, its chunks joined."""
        chunks = self.chunks[worker]
        return b"".join(chunks[i].tobytes() for i in sorted(chunks))

    def result(self) -> list:
        """(meta, output bytes) of every worker that answered."""
        return [(self.meta[w], self.output(w)) for w in sorted(self.done)]


class Phase(JobKind):
    """One phase of a MapReduce job as a job of the cluster (a job kind: its tasks'
    payloads are the phase's, runtime/shared/phases.py): each worker's task and arrays.
    ``every_worker``: a lost worker fails it at once (else it ends as its other workers
    finish, and ``answers`` tells who answered); ``idle``: how many workers may answer
    that they hold nothing of the job."""

    def __init__(self, name: str, tasks: list, every_worker: bool = True,
                 idle: int = 0) -> None:
        self.name, self.tasks, self.every_worker = name, tasks, every_worker
        self.answers = Answers(len(tasks), idle,
                               chunk_of(tasks[0][0].max_message) if tasks else CHUNK)

    def __repr__(self) -> str:
        return f"MapReduce {self.name} phase on {len(self.tasks)} workers"

    def plan(self, options: Any) -> KindPlan:
        """Every worker's answer gathered by ``Answers``."""
        return KindPlan(self.tasks, self.answers, name=repr(self),
                        label=f"mapreduce {self.name}", every_worker=self.every_worker,
                        options=options)


def run(cluster: Any, files: Sequence[Any], map: Callable | str,
        reduce: Callable | str | None = None, *, load: int, coded: bool = True,
        field: Optional[int] = None, args: Sequence[Any] = (), network: str = "links",
        link_rate: Optional[float] = None, link_delay: float = 0.0, link_loss: Any = None,
        link_burst: Optional[float] = None, seed: Optional[int] = None,
        timeout: float = 600.0, recover: bool = True, retries: int = 0,
        memory: Optional[int] = None,
        verify: bool | str = "auto") -> tuple[list, MapReduceReport]:
    """Run a MapReduce job on the cluster's K workers at computation load r = ``load``;
    returns (the K outputs, in reduce-function order; its MapReduceReport).

    files: integer arrays (bytes as uint8), a multiple of C(K, r) of them (``Placement``:
    file n is in batch n // (files / C(K, r)), mapped by that batch's r workers).
    ``map(file, *args)`` gives a list or tuple of K values, one per reduce function:
    bytes-like, or with ``field`` (a prime p < 2**63) vectors of GF(p), a function's
    of one length, which are added up (a sum-reduce, shuffled compressed).
    ``reduce(values)`` makes a function's output from its values, joined in batch order
    (bytes) or added up (vectors); None keeps them as they are. Functions go to the
    workers by import path (module-level functions, or "package.module:function"; remote
    workers cannot import the master's script).
    coded: the coded shuffle (multicast groups of r + 1), else every missing value sent
    once. network, link_rate, link_delay: the emulated network (the module's docstring;
    link_rate None: as fast as the sockets go; link_delay: seconds each message takes on
    top of its bytes, the link free for the next meanwhile). link_loss: the share of
    messages the peer links lose (p below 1 for every link, or {worker: p} for the links
    from and to each worker named; on "turns", each receiver's reception of the medium),
    link_burst their mean run (None: independent), seed their fates' (None: drawn).
    recover: finish without workers lost after the map where the load allows (the
    module's docstring). JobFailed naming the worker for a lost worker that cannot be
    done without, or a function that raises (whatever it raises, SystemExit too: the job
    fails, the worker serves on; ``retries``: run again from the map that many times). timeout: seconds the whole call
    may take, retries included (JobTimeout after them, the workers still busy in a
    function letting go of the job as it returns). A shuffle message larger than the
    cluster's ``max_message`` fails the job at once, naming its size.

    Each worker holds a job's mapped values and shuffle messages from its map to the end
    of its shuffle, for every job in flight (several threads may run jobs on one
    cluster at once): ``memory`` is the bytes it may hold so, all these jobs together
    (default: half its host's memory); a map that would go beyond fails its job, naming
    the budget. A job's values go as it ends, fails, times out, is cancelled
    (``Cluster.cancel``) or interrupted (Ctrl-C).

    verify: check the shuffle against a lying peer (ffcode.mapreduce.verify; the guide's
    "A lying peer"): a liar it names is excluded and the shuffle done again without it;
    suspects it cannot tell apart fail the job (VerificationError). "auto" (the
    default) checks at load r >= 2; at load 1 nothing can check a peer's values, and
    verify=True is refused. The report says what was checked and whom it excluded."""
    from ffcode.runtime.master.cluster import Cluster
    if not isinstance(cluster, Cluster):
        raise InvalidParameterError(f"Argument 'cluster' must be an ffcode.Cluster, not "
                                    f"{type(cluster).__name__}.")
    if cluster.groups:
        raise InvalidParameterError(
            "A MapReduce job runs on a cluster without relays (groups=None).")
    placement = Placement(cluster.n_workers, load, files=len(files))
    paths = [function_path(f, remote=not cluster.local) for f in (map, reduce)
             if f is not None]
    if field is not None:
        field = prime_of(field, "field")
    timeout = checks.seconds(timeout, "timeout")
    job = dict(placement=placement, map=paths[0], reduce=paths[1] if reduce else None,
               coded=checks.flag(coded, "coded"), field=field,
               **_network(network, link_rate, link_delay, link_loss, link_burst, seed,
                          placement.workers),
               files=[_array(f, "files") for f in files],
               args=[_array(a, "args") for a in args],
               timeout=timeout, recover=checks.flag(recover, "recover"),
               memory=memory_of(memory), verify=_verifying(verify, placement))
    retries = checks.integer(retries, "retries", low=0)
    job["deadline"] = time.monotonic() + timeout
    for attempt in range(retries + 1):
        try:
            outputs, report = _attempt(cluster, job)
            report.attempts = attempt + 1
            return outputs, report
        except ClusterError:
            if attempt == retries or cluster.closed:
                raise
    raise AssertionError("unreachable")


def _network(network: Any, rate: Any, delay: Any, loss: Any, burst: Any, seed: Any,
             workers: int) -> dict:
    """The emulated network's settings, checked: network, rate, delay, loss (peer_loss's),
    seed (drawn when None)."""
    network = checks.choice(network, "network", NETWORKS)
    loss = peer_loss(loss, burst, workers)
    return dict(network=network, rate=None if rate is None else checks.positive(rate,
                                                                                "link_rate"),
                delay=delay_of(delay), loss=loss,
                seed=secrets.randbits(63) if seed is None else
                checks.integer(seed, "seed", low=0, high=(1 << 63) - 1))


def function_path(f: Callable | str, remote: bool) -> str:
    """A function's import path, checked to import here (and, for remote workers, not to
    be the master's script, as ``Cluster.run`` checks a code's)."""
    if callable(f):
        path = functions.path_of(f)
    else:
        functions.load(f)
        path = f
    if remote:
        check_remote_path(path)
    return path


def _array(a: Any, name: str) -> np.ndarray:
    if isinstance(a, (bytes, bytearray, memoryview)):
        return np.frombuffer(a, np.uint8)
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"Argument '{name}' must hold integer arrays (bytes as uint8), "
            f"not {a.dtype}.")
    return a


def _attempt(cluster: Any, job: dict) -> tuple[list, MapReduceReport]:
    """One run of the job: the map phase, then shuffle attempts until one ends with every
    output (workers lost since the map tasks left are done without, where a Recovery
    can)."""
    placement: Placement = job["placement"]
    began = time.perf_counter()
    ident = secrets.randbits(31)
    report = MapReduceReport(placement.workers, placement.load, job["coded"],
                             job["network"], job["rate"], job["delay"],
                             *(job["loss"] or (None, None)))
    pids: list = []
    try:
        mapped, pids = _mapped(cluster, job, ident, report)
        endpoints = tuple(_endpoint(meta, report) for meta in mapped)
        replaced = False
        while True:
            cluster.wait(0)     # idle workers are looked at as a job starts: one of the
            alive = {h.pid for h in cluster.live()}     # map's that died since is found
            lost = sorted(set(report.lost) | {k for k, pid in enumerate(pids)
                                              if pid not in alive})
            if replaced and lost == report.lost:
                raise JobFailed("a worker holding nothing of the job took part in its "
                                "shuffle, and no worker of the map was found lost",
                                report=report.jobs[-1])
            report.lost = lost
            if lost:
                _recoverable(job, report)
            loss, burst = job["loss"] or ((), None)
            task = _task(Shuffle(ident, endpoints, job["network"], job["rate"], job["delay"],
                                 tuple(lost), len(report.jobs),
                                 tuple(tuple(pair) for pair in report.distrusted),
                                 loss, burst, job["seed"]), 0, cluster)
            count = _everyone(cluster)
            phase = Phase("shuffle", [(task, [])] * count,
                          idle=count - (placement.workers - len(lost)))
            try:
                answers, shuffle_report = cluster.run(phase, timeout=_left(job))
                report.jobs.append(shuffle_report)
                replaced = phase.answers.replaced   # a map worker's replacement answered
                if not replaced and job["verify"]:
                    checked = _checked(cluster, job, ident, pids, report)
                    replaced = checked is None      # ... the check
                    if checked:
                        break
                elif not replaced:
                    break
            except JobFailed as e:
                gone = {t.pid for t in getattr(e.report, "workers", None) or () if t.lost}
                if not gone & set(pids) - {pids[k] for k in report.lost}:
                    raise                   # no worker of the map lost: nothing to recover
                report.jobs.append(e.report)
    except ClusterError as e:
        drop(cluster, ident, wait=min(DROP_TIMEOUT, job["deadline"] - time.monotonic()))
        _exclude(cluster, pids, report.excluded)
        raise _explained(e, job, report.lost) from None
    except BaseException:           # a cancel or Ctrl-C: the workers let go of it unwaited
        drop(cluster, ident, wait=0.0)
        _exclude(cluster, pids, report.excluded)
        raise
    report.total = time.perf_counter() - began
    drop(cluster, ident, wait=0.0)        # in the background: the outputs are in
    _exclude(cluster, pids, report.excluded)
    return _assembled(report, answers, job), report


def _verifying(asked: Any, placement: Placement) -> bool:
    """Whether to check the shuffle: "auto" where a second mapper of every batch can
    (load r >= 2), True or False as asked; at load 1 nothing can check a peer's values."""
    if isinstance(asked, str) and asked == "auto":
        return verify.checkable(placement)
    if not isinstance(asked, bool):
        raise InvalidParameterError(
            f"Argument 'verify' must be True, False or 'auto', not {asked!r}.")
    if asked and not verify.checkable(placement):
        raise InvalidParameterError(
            "At load r = 1 nothing can check a peer's shuffle values (each "
            "batch has one mapper): verify needs load >= 2.")
    return asked


def _checked(cluster: Any, job: dict, ident: int, pids: list,
             report: MapReduceReport) -> Optional[bool]:
    """Check the shuffle just done (ffcode.mapreduce.verify): the seed drawn now, once
    every worker had its messages, sent to all; their fingerprints judged. True if every
    piece agrees; else the liars named join ``report.excluded``, the pairs to distrust
    ``report.distrusted`` (the shuffle is then done again) and False; None if a map
    worker's replacement answered (one was lost since the shuffle); VerificationError
    naming the suspects when the check cannot say whom to do without."""
    placement: Placement = job["placement"]
    began = time.perf_counter()
    plan = verify.Plan(placement, job["coded"], report.lost, report.distrusted)
    task = _task(Check(ident, verify.seed()), 0, cluster)
    count = _everyone(cluster)
    phase = Phase("check", [(task, [])] * count,
                  idle=count - (placement.workers - len(report.lost)))
    _, check_report = cluster.run(phase, timeout=_left(job))
    if phase.answers.replaced:
        return None
    place = {t.worker: t.pid for t in check_report.workers}
    prints = {}
    for w, meta in phase.answers.meta.items():
        if meta.get("idle") is True:
            continue
        if place.get(w) not in pids or "prints" not in meta:
            raise JobFailed(f"a worker of no place in the job answered its check: "
                            f"{str(meta)[:200]}", report=check_report)
        prints[pids.index(place[w])] = meta["prints"]
    try:
        verdict = verify.judge(plan, prints, [c for check in report.checks
                                              for c in check["candidates"]])
    except ValueError as e:
        raise JobFailed(f"the shuffle's check failed: {e}", report=check_report) from None
    report.verify += time.perf_counter() - began
    report.checks.append({"checked": verdict.checked, "disputed": verdict.disputed,
                          "candidates": verdict.candidates, "liars": verdict.liars,
                          "distrust": verdict.distrust, "suspects": verdict.suspects})
    report.verified = verdict.clean
    if verdict.clean:
        return True
    if verdict.suspects:
        raise VerificationError(
            f"the shuffle's check found workers {' and '.join(map(str, verdict.suspects))} "
            f"at odds over values only they mapped: one of them lied and no other worker "
            f"can tell which, so nobody is excluded and no output is returned",
            report=check_report)
    fresh = [pair for pair in verdict.distrust if pair not in report.distrusted]
    if not verdict.liars and not fresh:
        raise VerificationError(f"the shuffle's check still finds disputes after "
                                f"distrusting {report.distrusted}: candidates "
                                f"{verdict.candidates}", report=check_report)
    report.excluded = sorted(set(report.excluded) | set(verdict.liars))
    report.lost = sorted(set(report.lost) | set(verdict.liars))
    report.distrusted = sorted(set(report.distrusted) | set(fresh))
    try:
        verify.Plan(placement, job["coded"], report.lost, report.distrusted)
    except ValueError as e:
        raise VerificationError(f"the shuffle cannot be done again without the liars "
                                f"{verdict.liars} and the pairs {report.distrusted}: {e}",
                                report=check_report) from None
    return False


def _exclude(cluster: Any, pids: list, liars: list) -> None:
    """Give the workers a check named liars no further job."""
    wrong = {pids[k] for k in liars if k < len(pids)}
    for handle in cluster.live():
        if handle.pid in wrong:
            cluster.exclude(handle, "sent wrong MapReduce shuffle values")


def _left(job: dict) -> float:
    """The seconds left of the job's timeout (a moment at least: a phase then times out
    at once)."""
    return max(job["deadline"] - time.monotonic(), 1e-3)


def _mapped(cluster: Any, job: dict, ident: int, report: MapReduceReport) -> tuple:
    """The map phase: (every worker's answer, {} for a lost one; the pids of the map's
    workers by place). A worker lost during it is in ``report.lost``; any other failure
    raises."""
    phase = Phase("map", _map_tasks(cluster, job, ident), every_worker=False)
    try:
        _, map_report = cluster.run(phase, timeout=_left(job))
    except JobFailed as e:
        map_report = e.report
        lost = [t.worker for t in getattr(map_report, "workers", None) or () if t.lost]
        silent = [k for k in range(len(phase.tasks)) if k not in phase.answers.done]
        if not lost or set(silent) - set(lost):
            raise
        report.lost = lost
    report.jobs.append(map_report)
    answers = phase.answers
    return ([answers.meta[k] if k in answers.done else {} for k in range(len(phase.tasks))],
            [t.pid for t in map_report.workers])


def _endpoint(meta: dict, report: MapReduceReport) -> str:
    """Where a worker's peers reach it, as its map answer says (checked to be an endpoint;
    a lost worker's is never dialled)."""
    endpoint = meta.get("endpoint", "ipc://lost")
    if not (isinstance(endpoint, str) and len(endpoint) < 1024 and
            endpoint.startswith(("ipc://", "tcp://"))):
        raise JobFailed(f"a worker answered its map with no endpoint: {str(meta)[:200]}",
                        report=report.jobs[-1])
    return endpoint


def _map_tasks(cluster: Any, job: dict, ident: int) -> list:
    """Each worker's map task: its files, and who its peers are (their pids on a local
    cluster, else CURVE keys made for this job, each worker given its own pair)."""
    placement: Placement = job["placement"]
    K = placement.workers
    workers = cluster.wait(timeout=_left(job))
    pairs: list = [None] * K
    if cluster.local:
        listen, peers = ["ipc"] * K, [h.pid for h in workers]
    else:
        pairs = [[k.decode() for k in zmq.curve_keypair()] for _ in range(K)]
        peers = [pair[0] for pair in pairs]
        host = urlsplit(cluster.endpoint).hostname
        listen = ["tcp" if host in (None, "0.0.0.0", "::", "*") else f"tcp://{host}"] * K
    tasks = []
    for k in range(K):
        files = [job["files"][n] for b in placement.mapped_by(k)
                 for n in placement.batch_files(b)]
        task = Map(ident, job["map"], K, placement.load, k, placement.per_batch,
                   job["coded"], job["field"], job["reduce"], listen[k], tuple(peers),
                   None if pairs[k] is None else tuple(pairs[k]), job["memory"])
        tasks.append((_task(task, len(files), cluster), [*files, *job["args"]]))
    return tasks


def _recoverable(job: dict, report: MapReduceReport) -> None:
    """JobFailed unless the workers left can finish without the lost ones."""
    try:
        if job["recover"]:
            Recovery(job["placement"], report.lost, job["coded"])
            return
    except ValueError:
        pass
    mapped = report.jobs[0].workers          # the map's workers, by place
    why = "; ".join(f"{t.worker}: {t.lost}" for t in mapped if t.lost and
                    t.worker in report.lost)
    raise JobFailed(f"the shuffle cannot go on without {_workers(report.lost)}" +
                    (f" ({why})" if why else ""), report=report.jobs[-1])


def _assembled(report: MapReduceReport, answers: list, job: dict) -> list:
    """The outputs by function, and the report's per-worker figures by the map's places,
    from the answers of the workers that held the job."""
    K = job["placement"].workers
    outputs: list = [None] * K
    report.per_worker, report.sent, report.copies = [None] * K, [None] * K, [None] * K
    if job["loss"]:
        report.dropped, report.resent = [None] * K, [None] * K
    for meta, data in answers:
        if meta.get("idle") is True:
            continue
        k, functions, sizes = _answer_of(meta, K, len(data), report, bool(job["loss"]))
        if any(outputs[q] is not None for q in functions):
            raise JobFailed(f"two workers answered for functions {functions}",
                            report=report.jobs[-1])
        at = 0
        for q, size in zip(functions, sizes):
            outputs[q], at = data[at:at + size], at + size
        report.per_worker[k] = {name: meta[name] for name in PHASES}
        report.per_worker[k]["cpu"] = {name: meta["cpu"][name] for name in PHASES}
        report.sent[k], report.copies[k] = meta["sent"], meta["copies"]
        if job["loss"]:
            report.dropped[k], report.resent[k] = meta["dropped"], meta["resent"]
    missing = [q for q, out in enumerate(outputs) if out is None]
    if missing:
        raise JobFailed(f"no output of functions {missing}", report=report.jobs[-1])
    report.phases = {name: max(w[name] for w in report.per_worker if w is not None)
                     for name in PHASES}
    report.cpu = {name: max(w["cpu"][name] for w in report.per_worker if w is not None)
                  for name in PHASES}
    if job["field"] is not None:
        dtype = GF(job["field"]).dtype
        outputs = [np.frombuffer(out, dtype).copy() for out in outputs]
    return outputs


def _answer_of(meta: dict, K: int, size: int, report: MapReduceReport,
               lossy: bool = False) -> tuple:
    """(the worker's place, its functions, their outputs' sizes) from a shuffle answer,
    checked (on lossy links, its counts of drops to each worker and of messages sent
    again too): nothing a worker says about itself is taken unchecked. JobFailed naming
    what is wrong."""
    k, functions, sizes, cpu = (meta.get(key) for key in ("index", "functions", "sizes",
                                                           "cpu"))
    if not (_count(k, K) and isinstance(functions, list) and functions and
            all(_count(q, K) for q in functions) and isinstance(sizes, list) and
            len(sizes) == len(functions) and all(_count(n) for n in sizes) and
            sum(sizes) == size and isinstance(cpu, dict) and
            all(_seconds(meta.get(name)) and _seconds(cpu.get(name)) for name in PHASES) and
            _count(meta.get("sent")) and _count(meta.get("copies")) and
            (not lossy or _count(meta.get("resent")) and isinstance(meta.get("dropped"), list)
             and len(meta["dropped"]) == K and all(_count(n) for n in meta["dropped"]))):
        raise JobFailed(f"a worker's answer does not add up: {str(meta)[:200]}",
                        report=report.jobs[-1])
    return k, functions, sizes


def _count(x: Any, below: float = math.inf) -> bool:
    return type(x) is int and 0 <= x < below


def _seconds(x: Any) -> bool:
    return type(x) in (int, float) and 0 <= x < math.inf


def _task(payload: Any, files: int, cluster: Any) -> Task:
    """A phase's task carrying ``files`` arrays (then the map's arguments)."""
    return Task(payload, counts=(files,), max_message=cluster.max_message)


def _everyone(cluster: Any) -> int:
    """How many workers a phase after the map goes to, so that the map's workers still
    alive are sure to be among them: every worker of a local or Ray cluster (which
    replaces a lost one in its slot; the replacement answers that it holds nothing), the
    live ones of a remote cluster (a newcomer comes after them)."""
    return cluster.n_workers if cluster.engine.starts_workers else \
        len(cluster.live())


def drop(cluster: Any, ident: int, wait: float) -> None:
    """Tell the workers to let go of a job's values and sockets (what cannot be told
    exits with its worker), and ``wait`` up to that many seconds for them to have done
    so. A worker busy in the user's code lets go once it returns: the drop stays in
    flight up to DROP_LIFETIME for it, however long its caller waits."""
    if cluster.closed:
        return
    count = _everyone(cluster)
    if not count:
        return
    task = _task(Drop(ident), 0, cluster)
    try:
        future = cluster.submit(Phase("drop", [(task, [])] * count, every_worker=False),
                                timeout=DROP_LIFETIME)
        if wait > 0:
            future.result(timeout=wait)
    except (ClusterError, FutureTimeout):
        pass


def _explained(error: ClusterError, job: dict, lost: list) -> ClusterError:
    """The job's error, saying what the lost workers leave missing."""
    placement: Placement = job["placement"]
    lost = lost or [t.worker for t in getattr(error.report, "workers", None) or () if t.lost]
    if lost:
        alone = [b for b, subset in enumerate(placement.subsets) if set(subset) <= set(lost)]
        why = f"batches {alone} were mapped by no other worker" if alone else \
            f"every batch is still mapped by another worker (load {placement.load})" + \
            (", but recover=False" if not job["recover"] else "")
        error.args = (f"{_workers(lost)} lost: the reduce function and shuffle messages "
                      f"of {'it' if len(lost) == 1 else 'them'} are missing; {why} "
                      f"[{error.args[0]}]",)
    return error


def _workers(indices: list) -> str:
    return f"worker {indices[0]}" if len(indices) == 1 else f"workers {indices}"
