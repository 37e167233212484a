"""Multi-task training through relays on a Cluster (ffcode.mtl has the exchange): the
master is the server, the cluster's workers are the relays, each holding the data of its
users (a user on several relays is held by each, the flat system's redundant storage).

``train(cluster, topology, data, f, steps, model=W0)`` runs ``steps`` training steps as
jobs of the cluster, one a step (runtime/worker/mtl.py does a relay's part):

1. each relay applies the server's message of the step before (decoding every user's new
   parameters with its own users'), computes its users' local updates from the model,
   and answers with its uplink message and a digest of each update;
2. the master checks that the relays sharing a user computed the same update (and, a step
   later, that every relay decoded each update as they computed it), and makes the
   server's message from the uplink messages (coded: combinations each relay
   decodes; uncoded: the updates some relay lacks), to be sent with the next step's tasks;
3. a last job applies the last message, and the relays answer the model (relay 0 in full,
   the others its digest, which must agree).

The parameters travel in signed fixed point over GF(p), so every relay ends each step
with the same bits, coded or not: a coded training's model is the uncoded one's bit for
bit, and a single process's (``ffcode.mtl.exchange``).

The server hop is emulated (``network``, ``link_rate`` in bytes a second): on "turns" the
relays send one after another on one shared medium and the server's message is one
broadcast; on "links" each relay has its own link to the server and back, the server
sending each relay only the rows it decodes with. Each hop's time is counted by its
receiver, from the bytes it received. The report counts each step's bytes per direction,
which are the exchange's loads (``ffcode.mtl.Loads``) times an update's bytes.

A relay lost in a step is done without where every user still has a relay
(``Topology.without``): the step runs again on the relays left; otherwise the training
fails naming the users left without one.

With ``layout="hierarchical"`` the users are workers of their own (user u on the cluster's
worker K + u, after the K relays), each holding its data alone; a step is three jobs:

1. the users' job: each user takes the others' new parameters from one of its relays
   through the emulated hop between them (taking their bytes at ``user_rate``),
   computes its update and answers it; the master carries it to each of the user's
   relays (its bytes at the rate). On ``user_network="links"`` each user has a link to
   each of its relays, side by side: an update goes up on each, and a user takes the
   others' parameters down on one. On "turns" the users and relays share one medium:
   the users send their updates one after another, each heard by all its relays, and
   one broadcast of every user's parameters serves all users, each checking its own
   row against the update it sent;
2. the relays' job given their users' updates: each answers its uplink message and the
   updates' digests, which must be what the users computed; the master, which holds
   every update, checks each message against them (``check_uplink``);
3. after the server's message, the relays' job applying it, answering the model (relay 0)
   or its digest (every relay holds the same rows, so the master carries relay 0's to
   each user, as the user's own relay would send them).

A last users' job hands each user the last parameters and checks that it holds the
relays' model. The users' hop is the same coded or not: coding saves on the server's. A
relay lost is done without as above (both relays' jobs run again); a user lost fails the
training, naming it: its data are on no other worker.

Arguments are checked before anything starts:

>>> train(None, None, [], "m:f", 1, model=[[0.0]])
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'cluster' must be an ffcode.Cluster, not NoneType.
"""
from __future__ import annotations

import math
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ffcode import checks
from ffcode.errors import InvalidParameterError, JobFailed
from ffcode.field import GF
from ffcode.mtl import COMMUNICATIONS, LAYOUTS, Loads, Topology, scheme_of
from ffcode.runtime.master.mapreduce import Answers, drop, function_path
from ffcode.runtime.master.plans import KindPlan
from ffcode.runtime.shared.kinds import JobKind
from ffcode.runtime.shared.mtl import MultiTask, UserStep, digest
from ffcode.runtime.shared.phases import NETWORKS, chunk_of, prime_of
from ffcode.runtime.shared.task import Task

DROP_WAIT = 5.0             # seconds a finished training waits for its relays' drop
TRAINING = 1 << 31          # a training's number on its relays: above MapReduce jobs' ones


@dataclass
class MultiTaskReport:
    """What a training did: its settings; per step, the bytes the relays sent the server
    (``uplink``) and the server sent (``downlink``: a broadcast counted once on "turns",
    the sum of its links' on "links"), the seconds each hop of the emulated network added
    (``uplink_seconds``, after the last relay's message was ready; ``downlink_seconds``,
    the server's message at the rate: 0 without one), the slowest relay's
    seconds computing its users' updates (``compute``) and the step's wall seconds at the
    master (``seconds``); ``update_bytes``, one user's parameters' bytes; ``loads``, the
    exchange's loads (of the topology it ended on); ``lost``, the workers it went on
    without, and ``relays``, relay k's worker at the end; ``total``, its wall seconds.
    Where users are workers of their own (``layout`` "hierarchical", their hop on
    ``user_network`` at ``user_rate``), per step too: the bytes on that hop up
    (``user_uplink``: on "links" each update to each of its relays, on "turns" each
    once) and down (``user_downlink``: on "links" each user the others' new parameters,
    on "turns" one broadcast of every user's), and the seconds each added (after the last
    update was ready; taking a user's parameters); ``compute`` is then the slowest
    user's, and ``users``, user u's worker."""
    communication: str
    network: str
    link_rate: Optional[float]
    steps: int
    update_bytes: int
    loads: Loads
    layout: str = "flat"
    user_network: Optional[str] = None
    user_rate: Optional[float] = None
    uplink: list = field(default_factory=list)
    downlink: list = field(default_factory=list)
    uplink_seconds: list = field(default_factory=list)
    downlink_seconds: list = field(default_factory=list)
    compute: list = field(default_factory=list)
    seconds: list = field(default_factory=list)
    lost: list = field(default_factory=list)
    relays: list = field(default_factory=list)
    user_uplink: list = field(default_factory=list)
    user_downlink: list = field(default_factory=list)
    user_uplink_seconds: list = field(default_factory=list)
    user_downlink_seconds: list = field(default_factory=list)
    users: list = field(default_factory=list)
    total: float = 0.0

    def to_dict(self) -> dict:
        """The report as plain data (the loads' fractions as strings)."""
        out = asdict(self)
        out["loads"] = {k: v if isinstance(v, int) else
                        [str(x) for x in v] if isinstance(v, tuple) else str(v)
                        for k, v in asdict(self.loads).items()}
        return out


class Arrivals(Answers):
    """A step's answers, each timed as its last packet comes (the uplink's emulation)."""

    def __init__(self, workers: int, chunk: int, among: Sequence[int]) -> None:
        super().__init__(workers, chunk=chunk, among=among)
        self.at: dict = {}

    def add(self, packet: Any) -> bool:
        added = super().add(packet)
        if int(packet.worker) in self.done:
            self.at.setdefault(int(packet.worker), time.monotonic())
        return added


class Step(JobKind):
    """One training step's job on the cluster: each relay's (or user's) task (None: a
    worker with none), its answers gathered by ``Arrivals``."""

    def __init__(self, tasks: list, among: Sequence[int], chunk: int,
                 who: str = "relays") -> None:
        self.tasks, self.among, self.who = tasks, list(among), who
        self.answers = Arrivals(len(tasks), chunk, self.among)

    def __repr__(self) -> str:
        return f"a multi-task step on {len(self.among)} {self.who}"

    def run_on(self, cluster: Any, deadline: float) -> None:
        """The job run on ``cluster``, by ``deadline`` (time.monotonic's)."""
        cluster.run(self, timeout=max(deadline - time.monotonic(), 1e-3))

    def plan(self, options: Any) -> KindPlan:
        return KindPlan(self.tasks, self.answers, name=repr(self), label="multitask",
                        every_worker=False, options=options)


@dataclass
class _Run:
    """A training under way: the topology left, relay k's worker (``place``), the
    training's number of each user left (``users``) and the digests of the last step's
    updates as their relays computed them (``computed``)."""
    topology: Topology
    place: list
    users: list
    schemes: dict = field(default_factory=dict)
    computed: dict = field(default_factory=dict)    # user -> digest of its last update


def train(cluster: Any, topology: Any, data: Sequence[Sequence[Any]], f: Callable | str,
          steps: int, *, model: Any, scale: float = 2.0 ** 20, field: int = (1 << 61) - 1,
          communication: str = "coded", split: Optional[int] = None, seed: int = 0,
          args: Sequence[Any] = (), network: str = "turns",
          link_rate: Optional[float] = None, layout: str = "flat",
          user_network: Optional[str] = None, user_rate: Optional[float] = None,
          timeout: float = 600.0) -> tuple:
    """Train N users' models through the relays of ``topology`` (an ffcode.mtl.Topology
    over the cluster's first K workers) for ``steps`` steps; returns (the model, (N, d)
    float64; its MultiTaskReport).

    data: each user's arrays (a sequence per user), kept by each of its relays; they and
    ``args`` travel as float64.
    ``f(W, user, *arrays, *args)``: the user's new parameters ((d,) reals) from every
    user's (W, (N, d)); a module-level function or its import path, deterministic (relays
    sharing a user must compute the same update: a training where they differ fails,
    naming the user). model: the first parameters, (N, d) reals. scale and field: the
    signed fixed point they travel in, round(x * scale) in GF(field) (a value beyond
    (field - 1) / 2 after scaling fails the step, naming the user). communication:
    "coded" (ffcode.mtl.Coded, its ``split`` and ``seed``) or "uncoded". network and
    link_rate: the emulated server hop (the module's docstring). layout: "flat" (each relay
    holds its users' data and computes their updates) or "hierarchical" (user u is the
    cluster's worker K + u, holding its data alone, computing its update and sending it
    to its relays; ``user_network`` ("links" by default, or "turns") and ``user_rate``
    emulate that hop as ``network`` and ``link_rate`` the server's; the module's
    docstring).
    timeout: seconds the whole training may take."""
    topology, layout = _placed(cluster, topology, layout, user_network, user_rate)
    F = GF(prime_of(field, "field"))
    scale = checks.positive(scale, "scale")
    W = np.asarray(model, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != topology.users or not np.isfinite(W).all():
        raise InvalidParameterError(f"Argument 'model' must be {topology.users} users' "
                                    f"finite parameters as rows, not shape {W.shape}.")
    if len(data) != topology.users:
        raise InvalidParameterError(f"Argument 'data' must hold {topology.users} users' "
                                    f"arrays, not {len(data)}.")
    job = dict(F=F, scale=float(scale), path=function_path(f, remote=not cluster.local),
               data=[[_reals(a, "data") for a in arrays] for arrays in data],
               args=[_reals(a, "args") for a in args], steps=checks.integer(steps, "steps", low=0),
               communication=checks.choice(communication, "communication", COMMUNICATIONS),
               split=None if split is None else checks.integer(split, "split", low=1),
               seed=checks.integer(seed, "seed", low=0, high=(1 << 63) - 1),
               network=checks.choice(network, "network", NETWORKS),
               rate=None if link_rate is None else checks.positive(link_rate, "link_rate"),
               user_rate=None if user_rate is None else checks.positive(user_rate,
                                                                        "user_rate"),
               user_network=checks.choice(user_network or "links", "user_network",
                                          NETWORKS),
               deadline=time.monotonic() + checks.seconds(timeout, "timeout"),
               ident=TRAINING | secrets.randbits(31))
    run = _Run(topology, list(range(topology.relays)), list(range(topology.users)))
    report = MultiTaskReport(communication, job["network"], job["rate"], job["steps"],
                             W.shape[1] * F.dtype.itemsize, _scheme(run, job).loads, layout,
                             None if layout == "flat" else job["user_network"],
                             job["user_rate"])
    began = time.monotonic()
    try:
        fixed = F.from_real(W, job["scale"])
        if layout == "flat":
            model = _steps(cluster, job, run, fixed, report)
        else:
            report.users = [topology.relays + u for u in range(topology.users)]
            model = _hierarchy(cluster, job, run, fixed, report)
    finally:
        drop(cluster, job["ident"], wait=min(DROP_WAIT, max(job["deadline"] -
                                                             time.monotonic(), 0.0)))
    report.loads, report.relays = _scheme(run, job).loads, list(run.place)
    report.total = time.monotonic() - began
    return F.to_real(model, job["scale"]), report


def _placed(cluster: Any, topology: Any, layout: Any, user_network: Any,
            user_rate: Any) -> tuple:
    """(the topology, the layout), checked to fit the cluster's workers (the users' hop's
    arguments only where users are workers of their own)."""
    from ffcode.runtime.master.cluster import Cluster
    if not isinstance(cluster, Cluster):
        raise InvalidParameterError(f"Argument 'cluster' must be an ffcode.Cluster, not "
                                    f"{type(cluster).__name__}.")
    if cluster.groups:
        raise InvalidParameterError("A multi-task training's relays are a cluster's workers: "
                                    "use a cluster without groups.")
    topology = checks.instance(topology, "topology", Topology, "an ffcode.mtl.Topology")
    layout = checks.choice(layout, "layout", LAYOUTS)
    users = layout == "hierarchical"
    for name, value in (("user_rate", user_rate), ("user_network", user_network)):
        if value is not None and not users:
            raise InvalidParameterError(f"Argument '{name}' is for the hop between the users "
                                        f"and their relays, which only "
                                        f"layout='hierarchical' has.")
    if topology.relays + users * topology.users > cluster.n_workers:
        raise InvalidParameterError(
            f"The topology has {topology.relays} relays" +
            (f" and {topology.users} users" if users else "") +
            f", the cluster {cluster.n_workers} workers.")
    return topology, layout


def _reals(a: Any, name: str) -> np.ndarray:
    """An array of reals as it travels: float64, its bits as int64 (the wire carries
    integers; the relay reads them back as float64)."""
    try:
        return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"Argument '{name}' must hold arrays of reals, not "
                                    f"{type(a).__name__}.") from None


def _scheme(run: _Run, job: dict) -> Any:
    """The server's exchange on the topology left (the relays build the same)."""
    key = run.topology.groups
    if key not in run.schemes:
        run.schemes[key] = scheme_of(job["communication"], run.topology, job["F"],
                                     job["split"], job["seed"])
    return run.schemes[key]


def _steps(cluster: Any, job: dict, run: _Run, model: np.ndarray,
           report: MultiTaskReport) -> np.ndarray:
    """Every step's job, then the last one's, which answers the model."""
    messages: Optional[list] = None     # the server's message to each relay, step t - 1
    t = 0
    while True:
        step = Step(_tasks(cluster, job, run, t, model, messages), run.place,
                    chunk_of(cluster.max_message))
        began = time.monotonic()
        try:
            step.run_on(cluster, job["deadline"])
        except JobFailed as e:
            kept = _without_lost(e, step, run)
            report.lost += sorted(set(step.among) - set(run.place))
            if messages is not None:
                messages = [messages[r] for r in kept]
            continue
        if t == job["steps"]:
            return _model(step, run, job, model.shape, t)
        up, compute = _uplink(step, run, job, t, model.shape[1])
        uplink_seconds = _hold_uplink(step, job["rate"], job["network"],
                                          [m.nbytes for m in up])
        messages, sizes = _downlink(run, job, up)
        _record(report, job, up, sizes, uplink_seconds)
        report.compute.append(compute)
        report.seconds.append(time.monotonic() - began)
        t += 1


def _downlink(run: _Run, job: dict, up: list) -> tuple:
    """The server's message to each relay, made of the uplink messages (on "turns" one
    broadcast; on "links" each relay's rows), and the sizes sent (a broadcast's once)."""
    scheme = _scheme(run, job)
    Y = scheme.downlink(up)
    if job["network"] == "links":
        sent = [scheme.link(k, Y) for k in range(run.topology.relays)]
        return sent, [m.nbytes for m in sent]
    return [Y] * run.topology.relays, [Y.nbytes]


def _record(report: MultiTaskReport, job: dict, up: list, sizes: list,
            uplink_seconds: float) -> None:
    """A step's server hop in the report: its bytes each way and the seconds it added."""
    report.uplink.append(sum(m.nbytes for m in up))
    report.downlink.append(sum(sizes))
    report.uplink_seconds.append(uplink_seconds)
    report.downlink_seconds.append(0.0 if job["rate"] is None else max(sizes) / job["rate"])


def _hierarchy(cluster: Any, job: dict, run: _Run, model: np.ndarray,
               report: MultiTaskReport) -> np.ndarray:
    """Every step where users are workers of their own: the users' job (each takes the
    others' new parameters, computes its update and answers it), the users' links held
    for, then the relays' exchange (``_relayed``); a last users' job answers what each
    holds, which must be the relays' model."""
    F, (N, d) = job["F"], model.shape
    b = d * F.dtype.itemsize
    for t in range(job["steps"]):
        began = time.monotonic()
        step = _users_job(cluster, job, report.users, t, model)
        updates = np.empty_like(model)
        compute = 0.0
        for u, w in enumerate(report.users):
            meta, output = _answered(step, w, t, b)
            updates[u] = F.elements(np.frombuffer(output, F.dtype), f"worker {w}'s update")
            compute = max(compute, _seconds(meta.get("compute")))
        rate, shared = job["user_rate"], job["user_network"] == "turns"
        report.user_uplink_seconds.append(_hold_uplink(step, rate, job["user_network"],
                                                       [b] * N))
        report.user_uplink.append((N if shared else sum(map(len, run.topology.groups))) * b)
        down = N * b if shared else (N - 1) * b         # what a user takes: its time
        report.user_downlink.append(down if shared else N * down)
        report.user_downlink_seconds.append(0.0 if rate is None else down / rate)
        report.compute.append(compute)
        model = _relayed(cluster, job, run, t, model, updates, report)
        report.seconds.append(time.monotonic() - began)
    if job["steps"]:
        step = _users_job(cluster, job, report.users, job["steps"], model)
        ended = digest(model)
        for w in report.users:
            meta, _ = _answered(step, w, job["steps"], 0)
            if meta.get("digest") != ended:
                raise JobFailed(f"worker {w} ended with parameters unlike its relays'")
    return model


def _users_job(cluster: Any, job: dict, places: list, t: int, model: np.ndarray) -> Step:
    """The users' job of step t on their workers (``places``; ``t == steps``: they only
    take the last parameters): the first brings each its data and the model, the others
    the others' new parameters. A user lost fails the training, naming it: its data are
    on no other worker."""
    N = model.shape[0]
    tasks: list = [None] * cluster.n_workers
    for u, w in enumerate(places):
        payload = UserStep(job["ident"], job["path"], job["F"].p, job["scale"], u, N, t,
                           t == 0, t == job["steps"], job["user_network"], job["user_rate"])
        shares = job["data"][u] if t == 0 else []
        task = Task(payload, counts=(len(shares),) if t == 0 else (),
                    max_message=cluster.max_message)
        whole = t == 0 or job["user_network"] == "turns"        # a broadcast: every row
        parameters = [model] if whole else [model[:u], model[u + 1:]]    # views: no copy
        tasks[w] = (task, list(shares) + parameters + job["args"])
    step = Step(tasks, places, chunk_of(cluster.max_message), who="users")
    try:
        step.run_on(cluster, job["deadline"])
    except JobFailed as e:
        lost = _lost(e)
        gone = [u for u, w in enumerate(places) if w in lost]
        if gone:
            raise JobFailed(f"{_workers(sorted(lost))} lost at step {t}: "
                            f"{_users(gone)} held by no other worker",
                            report=e.report) from None
        raise
    return step


def _relayed(cluster: Any, job: dict, run: _Run, t: int, model: np.ndarray,
             updates: np.ndarray, report: MultiTaskReport) -> np.ndarray:
    """Step t's exchange on the relays, given the users' updates: the relays' uplink job,
    the server's message, and the relays' job applying it, which answer the model (relay
    0 in full, each relay its digest); a relay lost in either is done without where
    every user still has one, and the two jobs run again."""
    while True:
        step = Step(_given_tasks(cluster, job, run, t, model, updates), run.place,
                    chunk_of(cluster.max_message))
        try:
            step.run_on(cluster, job["deadline"])
            up, _ = _uplink(step, run, job, t, model.shape[1])
            for u, x in run.computed.items():
                if x != digest(updates[u]):
                    raise JobFailed(f"the relays hold user {u}'s update of step {t} unlike "
                                    f"it computed it")
            check_uplink(_scheme(run, job), updates[run.users], up, run.place, t)
            uplink_seconds = _hold_uplink(step, job["rate"], job["network"],
                                          [m.nbytes for m in up])
            messages, sizes = _downlink(run, job, up)
            step = Step(_finish_tasks(cluster, job, run, t + 1, messages), run.place,
                        chunk_of(cluster.max_message))
            step.run_on(cluster, job["deadline"])
        except JobFailed as e:
            _without_lost(e, step, run)
            report.lost += sorted(set(step.among) - set(run.place))
            continue
        _record(report, job, up, sizes, uplink_seconds)
        return _model(step, run, job, model.shape, t + 1)


def check_uplink(scheme: Any, updates: np.ndarray, messages: list, workers: list,
                 t: int) -> None:
    """JobFailed naming the first relay whose uplink message of step t is not its users'
    updates encoded as the exchange says (``scheme``, ffcode.mtl's; ``updates``: every
    user's, as the users computed them; relay k on worker ``workers[k]``). Where users are
    workers of their own the master holds every update, so a relay's wrong message is
    named before the server's message is made of it."""
    for k, (message, w) in enumerate(zip(messages, workers)):
        group = list(scheme.topology.groups[k])
        if not np.array_equal(scheme.uplink(k, updates[group]), message):
            raise JobFailed(f"worker {w} (relay {k}) sent an uplink message of step {t} "
                            f"unlike its users' updates")


def _given_tasks(cluster: Any, job: dict, run: _Run, t: int, model: np.ndarray,
                 updates: np.ndarray) -> list:
    """Each relay's uplink task of step t where users are workers of their own: its
    users' updates (the first also the model, which it keeps as the users' parameters)."""
    tasks: list = [None] * cluster.n_workers
    for k, group in enumerate(run.topology.groups):
        payload = _payload(job, run, k, t, start=t == 0, given=True)
        first = [model] if t == 0 else []
        tasks[run.place[k]] = (Task(payload, max_message=cluster.max_message),
                               first + [updates[run.users[u]] for u in group])
    return tasks


def _finish_tasks(cluster: Any, job: dict, run: _Run, t: int, messages: list) -> list:
    """Each relay's task applying the server's message of step t - 1, answering the model
    (relay 0) or its digest."""
    tasks: list = [None] * cluster.n_workers
    for k in range(run.topology.relays):
        tasks[run.place[k]] = (Task(_payload(job, run, k, t, finish=True),
                                    max_message=cluster.max_message), [messages[k]])
    return tasks


def _payload(job: dict, run: _Run, k: int, t: int, start: bool = False, held: tuple = (),
             finish: bool = False, given: bool = False) -> MultiTask:
    """Relay k's part of step t (``shared.mtl.MultiTask`` has its fields' meaning)."""
    return MultiTask(job["ident"], job["path"], job["F"].p, job["scale"], run.topology.groups,
                     tuple(run.users), k, job["communication"], job["split"], job["seed"], t,
                     start, held, finish, job["network"], job["rate"], given)


def _tasks(cluster: Any, job: dict, run: _Run, t: int, model: np.ndarray,
           messages: Optional[list]) -> list:
    """Each relay's task of step ``t`` (the first ships the model and each relay's users'
    data; the others, the server's message of the step before)."""
    tasks: list = [None] * cluster.n_workers
    for k, group in enumerate(run.topology.groups):
        held = [run.users[u] for u in group] if t == 0 else []
        payload = _payload(job, run, k, t, start=t == 0, held=tuple(held),
                           finish=t == job["steps"])
        first = model if messages is None else messages[k]
        task = Task(payload, counts=tuple(len(job["data"][u]) for u in held),
                    max_message=cluster.max_message)
        tasks[run.place[k]] = (task, [a for u in held for a in job["data"][u]] + [first] +
                               job["args"])
    return tasks


def _without_lost(error: JobFailed, step: Step, run: _Run) -> list:
    """After a failed step: the relays kept (their old numbers) once the lost ones are
    done without; the error again when no relay was lost, or when a user is left without
    a relay (naming it)."""
    lost = _lost(error)
    silent = {w for w in step.among if w not in step.answers.done}
    if not lost or not silent <= lost:
        raise error
    gone = [k for k, w in enumerate(run.place) if w in lost]
    try:
        left = run.topology.without(relays=gone)
    except InvalidParameterError as e:
        raise JobFailed(f"{_workers(sorted(lost))} lost: {e}", report=error.report) from None
    run.topology, run.place = left.topology, [run.place[r] for r in left.relays]
    run.users = [run.users[u] for u in left.users]
    return list(left.relays)


def _lost(error: JobFailed) -> set:
    """The workers a failed job's report says were lost."""
    return {w.worker for w in getattr(error.report, "workers", None) or () if w.lost}


def _workers(indices: list) -> str:
    return ("worker " if len(indices) == 1 else "workers ") + ", ".join(map(str, indices))


def _users(indices: list) -> str:
    return ("user " if len(indices) == 1 else "users ") + ", ".join(map(str, indices)) + \
        (" is" if len(indices) == 1 else " are")


def _answered(step: Step, w: int, t: int, size: int) -> tuple:
    """Worker w's answer to step t: (its meta, its bytes), checked to be of step t and of
    ``size`` bytes (nothing a worker says is trusted)."""
    meta, output = step.answers.meta[w], step.answers.output(w)
    if meta.get("step") != t or len(output) != size:
        raise JobFailed(f"worker {w} answered step {str(meta.get('step'))[:20]} with "
                        f"{len(output)} bytes; step {t} takes {size}")
    return meta, output


def _seconds(value: Any) -> float:
    """Seconds a worker said it spent (0 where it said nothing sensible)."""
    return value if type(value) is float and 0 <= value < math.inf else 0.0


def _answer(step: Step, run: _Run, w: int, t: int, size: int) -> tuple:
    """A relay's answer to step t (``_answered``), which must also have decoded the step
    before as its relays computed it."""
    meta, output = _answered(step, w, t, size)
    if t:
        check_decoded(meta.get("decoded"), run.computed, w, t - 1)
    return meta, output


def check_decoded(decoded: Any, computed: dict, w: int, t: int) -> None:
    """JobFailed unless worker w decoded every user's update of step t as the user's
    relays computed it (``decoded``: its digests, by user; ``computed``: theirs): a relay's
    wrong message would otherwise go on silently into every model.

    >>> check_decoded({"0": "a" * 32}, {0: "a" * 32}, 2, 5)
    >>> check_decoded({"0": "b" * 32}, {0: "a" * 32}, 2, 5)
    Traceback (most recent call last):
    ...
    ffcode.errors.JobFailed: worker 2 decoded user 0's update of step 5 unlike its relays computed it: a message of the exchange was wrong
    """
    if not (isinstance(decoded, dict) and len(decoded) == len(computed) and
            all(isinstance(x, str) for x in decoded.values()) and
            {str(u) for u in computed} == set(decoded)):
        raise JobFailed(f"worker {w} answered no digest of every user's update it decoded "
                        f"at step {t}")
    for u, x in computed.items():
        if decoded[str(u)] != x:
            raise JobFailed(f"worker {w} decoded user {u}'s update of step {t} unlike its "
                            f"relays computed it: a message of the exchange was wrong")


def _uplink(step: Step, run: _Run, job: dict, t: int, d: int) -> tuple:
    """The relays' uplink messages of step t, checked (their sizes; the digests of the
    updates of users they share agree); and the slowest relay's computing seconds."""
    F, scheme = job["F"], _scheme(run, job)
    width = scheme.width(d)
    messages: list = []
    said: dict = {}
    compute = 0.0
    for k, w in enumerate(run.place):
        rows = scheme.sends[k]
        meta, output = _answer(step, run, w, t, rows * width * F.dtype.itemsize)
        digests = meta.get("digests")
        group = run.topology.groups[k]
        if not (isinstance(digests, list) and len(digests) == len(group) and
                all(isinstance(x, str) and len(x) == 32 for x in digests)):
            raise JobFailed(f"worker {w} answered no digest of each of its users' updates")
        for u, x in zip(group, digests):
            if said.setdefault(u, (x, w))[0] != x:
                raise JobFailed(f"workers {said[u][1]} and {w} computed different updates of "
                                f"user {run.users[u]}: its local update must be "
                                f"deterministic")
        compute = max(compute, _seconds(meta.get("compute")))
        messages.append(F.elements(np.frombuffer(output, F.dtype).reshape(rows, width),
                                   f"worker {w}'s uplink message"))
    run.computed = {run.users[u]: x for u, (x, _) in said.items()}
    return messages, compute


def _hold_uplink(step: Step, rate: Optional[float], network: str, sizes: list) -> float:
    """Waits until the messages answering ``step`` would have crossed the emulated hop
    to the master: on "turns" one after another as they came, on "links" each on its own;
    returns the seconds the hop took after the last message was ready (0 without a
    rate)."""
    if rate is None:
        return 0.0
    came = sorted(zip((step.answers.at[w] for w in step.among), sizes))
    free = came[0][0]
    if network == "turns":
        for at, size in came:
            free = max(free, at) + size / rate
    else:
        free = max(at + size / rate for at, size in came)
    time.sleep(max(free - time.monotonic(), 0.0))
    return max(free - max(at for at, _ in came), 0.0)


def _model(step: Step, run: _Run, job: dict, shape: tuple, t: int) -> np.ndarray:
    """The model the relays answered after step t - 1: relay 0's in full, every relay's
    digest equal to its."""
    F = job["F"]
    meta, output = _answer(step, run, run.place[0], t, math.prod(shape) * F.dtype.itemsize)
    model = F.elements(np.frombuffer(output, F.dtype).reshape(shape), "the model")
    for w in run.place[1:]:
        other, _ = _answer(step, run, w, t, 0)
        if other.get("digest") != meta.get("digest"):
            raise JobFailed(f"workers {run.place[0]} and {w} ended with different models")
    return model
