"""Where workers come from: engines. An engine is an object that carries its own settings
and owns how a cluster's workers come to it: how the master's transport is secured and
bound, how the workers are started, admitted, watched and killed, which of its settings go
together, how many workers it may start and how they form groups (Ray's "nodes"), and what
it is called. ``LocalEngine()`` forks local worker processes (runtime/master/pool.py),
``RayEngine(address=...)`` starts Ray actors (runtime/master/ray_pool.py), and
``RemoteWorkers(endpoint, ...)`` waits for workers started by hand (``ffcode worker
--connect``): it starts none.

``Cluster(engine=RayEngine(address="HEAD:6379"))`` takes an engine; a name takes one from
the registry, made from the settings the Cluster was given (``Cluster(engine="ray",
address=...)``, ``Cluster(8, "tcp://HOST:5555")``): a new engine is one more class and one
``register_engine(name, factory)``, and nothing else branches on names.

>>> engine_names()
('local', 'ray', 'remote')
>>> choose("ray", address="HEAD:6379")
RayEngine(address='HEAD:6379')
>>> choose("local", endpoint="tcp://127.0.0.1:*", insecure=True)
RemoteWorkers(endpoint='tcp://127.0.0.1:*', insecure=True)
>>> try:
...     choose("local", address="HEAD:6379")
... except ValueError as error:     # an InvalidParameterError
...     print(error)
Argument 'address' is not a setting of engine 'local': it needs engine='ray'.
>>> RayEngine() == "ray", RayEngine().starts_workers, RemoteWorkers.starts_workers
(True, True, False)
"""
from __future__ import annotations

import inspect
import os
from numbers import Integral
from typing import Any, Callable, ClassVar, Mapping, Optional, Sequence

from ffcode import checks
from ffcode.constraints import Boolean, InstanceOf, Interval, Spec, validate
from ffcode.errors import ClusterError, InvalidParameterError
from ffcode.registry import Registry
from ffcode.runtime.master import pool, ray_pool
from ffcode.runtime.shared import local
from ffcode.runtime.shared.gate import Peer
from ffcode.runtime.shared.transport import Transport, check_endpoint, reachable

MAX_STARTED = 1024          # worker processes one cluster may start (local or Ray)
MAX_REMOTE = 1 << 16        # workers one master may wait for

# A Cluster's own engine arguments, and their defaults (left out: not given).
SETTINGS = {"endpoint": None, "address": None, "key": None, "clients": None,
            "insecure": False}
# The engines' settings' constraints (ffcode.constraints), each engine's declared from these.
TEXT = InstanceOf(str, what="a string")
PATH = (None, InstanceOf(str, os.PathLike, what="a path"))


class Engine:
    """How a cluster's workers come to it. A subclass sets ``name`` and implements ``open``,
    which binds the transport and returns the started workers' pool; the roster's calls
    (``spawn``, ``admit``, ``node``, ``gone``, ``kill``, ``check``, ``missing``, ``close``;
    runtime/master/roster.py) go to that pool, a *member* being what it knows a worker by
    (a local pid, a Ray actor). An engine that starts no workers (``starts_workers``
    False) gets none of these calls: its workers connect on their own.

    What a class says of its engines: ``name`` (what reports and the command line call
    it), ``starts_workers`` (it starts its workers and refills a lost one's slot; False:
    they are started by hand), ``local`` (its workers are this host's processes on an ipc
    socket, known by their pids), ``max_workers``, ``groupings`` (``groups=`` by name, and
    what each is) and ``refuses`` (a Cluster setting it has none of, and why). The master's
    transport is secured as ``transport`` says, in ``private_dir``.

    An engine serves one open cluster at a time (``Cluster.engine``), and may serve another
    once that one closed. It compares equal to its name (``cluster.engine == "ray"``)."""

    name: ClassVar[str] = "engine"          # what reports and the command line call it
    starts_workers: ClassVar[bool] = True   # starts (and replaces) its workers itself
    local: ClassVar[bool] = False           # its workers: this host's, on an ipc socket
    max_workers: ClassVar[int] = MAX_STARTED
    groupings: ClassVar[dict] = {}          # groups= by name -> what they are
    refuses: ClassVar[dict] = {}            # a Cluster setting -> why this engine has none
    _parameter_constraints: ClassVar[Mapping[str, Spec]] = {}   # its settings' (see TEXT)
    _pool: Any = None                       # the started workers (the last, once closed)
    _running = False                        # an open cluster's workers are the pool's

    def settings(self) -> dict:
        """The engine's settings that are not their defaults (its repr shows them)."""
        return {}

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self.settings().items())
        return f"{type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def running(self) -> bool:
        """Whether the engine runs an open cluster's workers."""
        return self._running

    def check_workers(self, n_workers: Any) -> int:
        """n_workers as an int, from 1 to the engine's max_workers."""
        return Interval(Integral, 1, self.max_workers).check(n_workers, "n_workers")

    def group_sizes(self, groups: Any, n_workers: int) -> Optional[tuple]:
        """Each group's size for ``groups`` (a count of equal groups, or each one's size)
        of n_workers workers behind relays; () for none; None for a grouping this engine
        names (``groupings``: the engine decides the sizes as it starts)."""
        if groups is None:
            return ()
        if isinstance(groups, str) and groups in self.groupings:
            return None
        known = _grouping(groups) if isinstance(groups, str) else None
        if known is not None:
            engine, what = known
            raise InvalidParameterError(f"groups={groups!r} puts {what}: it needs "
                                        f"engine={engine!r} (give a count or the sizes "
                                        f"otherwise).")
        if isinstance(groups, Sequence) and not isinstance(groups, str):
            sizes = tuple(checks.integer(size, "groups", low=1) for size in groups)
            if not sizes or sum(sizes) != n_workers:
                raise InvalidParameterError(f"The groups' sizes {list(sizes)} must add up "
                                            f"to n_workers ({n_workers}).")
            return sizes
        count = checks.integer(groups, "groups", low=1, high=n_workers)
        if n_workers % count:
            raise InvalidParameterError(f"{n_workers} workers do not split into {count} "
                                        f"equal groups: give each group's size.")
        return (n_workers // count,) * count

    def transport(self, max_message: int) -> Transport:
        """The master's transport, secured as this engine's workers need (plaintext: they
        reach a private ipc socket)."""
        return Transport(max_message=max_message)

    def private_dir(self) -> Optional[str]:
        """A fresh private directory for the master's ipc sockets, or None for none."""
        return local.private_dir()

    def start(self, transport: Transport, *, size: int, timeout: float,
              tmpdir: Optional[str], groups: Optional[tuple] = ()) -> tuple:
        """Bind the transport and start the engine for ``size`` members (workers, or
        relays of ``groups``' sizes, None for a grouping of the engine's); the groups' sizes
        as started (() for none)."""
        if self._running:
            raise InvalidParameterError(f"This {type(self).__name__} runs the workers of an "
                                        f"open cluster: an engine serves one cluster at a "
                                        f"time.")
        self._pool = self.open(transport, size=size, timeout=timeout, tmpdir=tmpdir,
                               groups=groups)
        self._running = self._pool is not None
        return tuple(getattr(self._pool, "groups", groups) or ())

    def open(self, transport: Transport, *, size: int, timeout: float,
             tmpdir: Optional[str], groups: Optional[tuple]) -> Any:
        """Bind the transport where the workers connect and start their pool (None: none
        to start); ``start``'s arguments."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it starts.")

    def spawn(self, slot: int) -> None:
        """Start a worker that announces itself with this slot (replacing an earlier one)."""
        self._pool.spawn(slot)

    def admit(self, slot: int, meta: dict, sender: Peer) -> Any:
        """The member a HELLO comes from (its slot asked for, its connection proving it is
        that worker), or None."""
        return self._pool.admit(slot, meta, sender)

    def node(self, member: Any) -> Optional[str]:
        """The node the member runs on (None: this host)."""
        return self._pool.node(member)

    def gone(self, member: Any) -> Optional[str]:
        """Why the member will not answer (exited, frozen, died), or None."""
        return self._pool.gone(member)

    def kill(self, member: Any) -> None:
        self._pool.kill(member)

    def check(self) -> None:
        """Raise ClusterError if the engine itself failed (while workers are awaited)."""
        self._pool.check()

    def missing(self) -> str:
        """A sentence on why awaited workers may be missing (for an error message)."""
        return self._pool.missing()

    def close(self) -> None:
        """Stop every worker the engine started; it may then serve another cluster."""
        self._running = False
        if self._pool is not None:
            self._pool.close()


class LocalEngine(Engine):
    """Local worker processes, forked by a fork server (runtime/master/pool.py), that reach
    the master over a private ipc socket and are known by their pids."""

    name = "local"
    local = True

    def open(self, transport: Transport, *, size: int, timeout: float,
             tmpdir: Optional[str], groups: Optional[tuple]) -> pool.LocalPool:
        transport.gate.processes = lambda pid: False    # none is the pool's until it exists
        transport.bind(f"ipc://{tmpdir}/master")
        workers = pool.LocalPool(transport.endpoint, tmpdir, groups)
        transport.gate.processes = workers.owns
        return workers


class RayEngine(Engine):
    """Workers as Ray actors spread over a Ray cluster's nodes (runtime/master/ray_pool.py),
    with fresh CURVE keys for each cluster (no key files; ``Cluster.public_key`` is the
    master's), unless ``insecure``. ``address`` is the Ray cluster's ("HOST:PORT", or
    "auto" for the one 'ray start' began on this host; default: the Ray instance this
    process is connected to, else $RAY_ADDRESS, else a new local one with a CPU per
    worker). ``endpoint`` defaults to tcp on this node's Ray address, any free port (actors
    on this node connect over a private ipc socket instead, in plaintext); an explicit one
    serves every actor. ``groups="nodes"`` puts a relay on each node."""

    name = "ray"
    _parameter_constraints = {"address": (None, TEXT), "endpoint": (None, TEXT),
                              "insecure": Boolean()}
    groupings = {"nodes": "a relay on each Ray node"}
    refuses = dict.fromkeys(("key", "clients"), (
        "The Ray engine makes fresh CURVE keys for each cluster: leave out key= and "
        "clients= (or pass insecure=True for none)."))

    def __init__(self, address: Optional[str] = None, *, endpoint: Optional[str] = None,
                 insecure: bool = False) -> None:
        checked = validate(self._parameter_constraints,
                           {"address": address, "endpoint": endpoint, "insecure": insecure})
        ray_pool.check_address(address)
        if endpoint is not None:
            check_endpoint(endpoint, secure=True)
            if not endpoint.startswith("tcp://"):
                raise InvalidParameterError(f"Ray workers connect over tcp, not {endpoint!r}.")
        self.address, self.endpoint, self.insecure = address, endpoint, checked["insecure"]

    def settings(self) -> dict:
        return _given(address=self.address, endpoint=self.endpoint, insecure=self.insecure)

    def transport(self, max_message: int) -> Transport:
        return Transport(insecure=self.insecure, session_keys=not self.insecure,
                         max_message=max_message)

    def private_dir(self) -> Optional[str]:
        return local.private_dir() if self.endpoint is None else None

    def open(self, transport: Transport, *, size: int, timeout: float,
             tmpdir: Optional[str], groups: Optional[tuple]) -> ray_pool.RayPool:
        ray = ray_pool.RayPool(self.address, size, timeout, groups)
        try:
            bound = transport.bind(self.endpoint or f"tcp://{ray.host}:*")  # its first bind
            nearby = None
            if self.endpoint is None:   # actors on this node may use ipc, proving a token
                nearby = transport.bind(f"ipc://{tmpdir}/master", plaintext=True)
            ray.serve_at(reachable(bound, ray.host), transport.public_key,
                         None if self.insecure else transport.gate, nearby)
        except BaseException:
            ray.close()
            raise
        return ray


class RemoteWorkers(Engine):
    """Workers started by hand, anywhere, with ``ffcode worker --connect ENDPOINT``: the
    master binds ``endpoint`` and admits those that connect; it starts, replaces and kills
    none (a worker it gives up on is told to exit). ``key`` (the master's CURVE secret key
    file) and ``clients`` (a directory of the authorised workers' public keys) encrypt a
    tcp endpoint and admit only those workers; a tcp master needs them, also on loopback
    (any process on the host can reach it), unless told ``insecure=True``."""

    name = "remote"
    _parameter_constraints = {"endpoint": TEXT, "key": PATH, "clients": PATH,
                              "insecure": Boolean()}
    starts_workers = False
    max_workers = MAX_REMOTE

    def __init__(self, endpoint: str, *, key: Optional[str] = None,
                 clients: Optional[str] = None, insecure: bool = False) -> None:
        if (key is None) != (clients is None):
            raise InvalidParameterError("Arguments 'key' and 'clients' go together (CURVE).")
        checked = validate(self._parameter_constraints, {"endpoint": endpoint, "key": key,
                                                         "clients": clients,
                                                         "insecure": insecure})
        check_endpoint(endpoint, secure=key is not None or checked["insecure"])
        self.endpoint, self.insecure = endpoint, checked["insecure"]
        self.key, self.clients = (None if path is None else os.fspath(path)
                                  for path in (key, clients))

    def settings(self) -> dict:
        return _given(endpoint=self.endpoint, key=self.key, clients=self.clients,
                      insecure=self.insecure)

    def transport(self, max_message: int) -> Transport:
        return Transport(key=self.key, clients=self.clients, insecure=self.insecure,
                         max_message=max_message)

    def private_dir(self) -> Optional[str]:
        return None

    def open(self, transport: Transport, *, size: int, timeout: float,
             tmpdir: Optional[str], groups: Optional[tuple]) -> None:
        transport.bind(self.endpoint)
        return None


def _local(endpoint: Optional[str] = None, key: Optional[str] = None,
           clients: Optional[str] = None, insecure: bool = False) -> Engine:
    """``engine="local"``, the Cluster's default: local worker processes, or given an
    endpoint, the workers started by hand that connect there."""
    if endpoint is not None:
        return RemoteWorkers(endpoint, key=key, clients=clients, insecure=insecure)
    if key is not None or clients is not None:
        raise InvalidParameterError("CURVE keys are for a tcp endpoint: local workers talk "
                                    "over a private ipc socket, which needs none.")
    return LocalEngine()


_ENGINES: Registry[Callable[..., Engine]] = Registry(
    "engine", {"local": _local, "ray": RayEngine, "remote": RemoteWorkers})


def register_engine(name: str, factory: Callable[..., Engine]) -> Callable[..., Engine]:
    """Make ``Cluster(engine=name, ...)`` use ``factory(**settings)`` (an Engine subclass,
    or a function returning an Engine), given those of the Cluster's engine arguments
    (endpoint, address, key, clients, insecure) that were passed; one the factory does not
    take is refused, naming the engines that do. Returns the factory; InvalidParameterError
    for a name already taken."""
    checks.instance(name, "name", str)
    if not name.isidentifier():
        raise InvalidParameterError(f"Argument 'name' must be a word (letters, digits, _), "
                                    f"not {name!r}.")
    checks.function(factory, "factory")
    return _ENGINES.add(name, factory)


def unregister_engine(name: str) -> None:
    """Remove the engine registered under ``name`` (not a built-in one)."""
    _ENGINES.remove(name)


def engine_names() -> tuple:
    """The names a Cluster's ``engine=`` takes: the built-in ones, then the registered ones
    in the order they were registered (the command line's choices)."""
    return _ENGINES.names()


def choose(engine: Any, **given: Any) -> Engine:
    """The engine a Cluster's ``engine`` argument is or names, made from its other engine
    arguments (``SETTINGS``, those given); every one checked before anything starts, and a
    place where a cluster may start."""
    if os.environ.get(local.IN_POOL):
        raise ClusterError("A Cluster cannot start inside ffcode's worker processes: "
                           "they run your script to find the functions defined in it, "
                           "so guard the script's work with 'if __name__ == "
                           "\"__main__\":'.")
    given = _given(**given)
    if isinstance(engine, Engine):
        if given:
            name = next(iter(given))
            raise InvalidParameterError(f"Argument {name!r} is a setting of the engine, and "
                                        f"the engine given is an object, {engine!r}: pass "
                                        f"{name}= to it instead.")
        if engine.running:
            raise InvalidParameterError(f"The engine {engine!r} runs the workers of an open "
                                        f"cluster: an engine serves one cluster at a time.")
        return engine
    if not isinstance(engine, str):
        raise InvalidParameterError(f"Argument 'engine' must be an engine's name "
                                    f"{engine_names()} or an Engine "
                                    f"(ffcode.runtime.LocalEngine(), ...), not "
                                    f"{type(engine).__name__}.")
    factory = _ENGINES[checks.choice(engine, "engine", engine_names())]
    takes, needs = _parameters(factory)
    for name in given:
        if takes is not None and name not in takes or name in getattr(factory, "refuses", {}):
            takers = " or ".join(repr(taker) for taker in _takers(name))
            raise InvalidParameterError(
                getattr(factory, "refuses", {}).get(name) or
                f"Argument {name!r} is not a setting of engine {engine!r}" +
                (f": it needs engine={takers}." if takers else "."))
    missing = sorted(needs - set(given))
    if missing:
        raise InvalidParameterError(f"Engine {engine!r} needs argument {missing[0]!r}: pass "
                                    f"{missing[0]}= to the Cluster.")
    made = factory(**given)
    if not isinstance(made, Engine):
        raise InvalidParameterError(
            f"The factory of engine {engine!r} made a {type(made).__name__}, "
            f"not an Engine.")
    return made


def _parameters(factory: Callable) -> tuple:
    """The keyword arguments a factory takes (None: any) and those it needs."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):     # no signature to read: it may take anything
        return None, set()
    named = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    needs = {p.name for p in named if p.default is p.empty}
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None, needs
    return {p.name for p in named}, needs


def _takers(name: str) -> list:
    """The registered engines that take this Cluster setting."""
    return [engine for engine, factory in zip(_ENGINES.names(), _ENGINES.items())
            if _parameters(factory)[0] is None or name in _parameters(factory)[0]
            and name not in getattr(factory, "refuses", {})]


def _grouping(groups: str) -> Optional[tuple]:
    """A registered engine that knows this grouping, and what the grouping is, or None."""
    for engine, factory in zip(_ENGINES.names(), _ENGINES.items()):
        if groups in getattr(factory, "groupings", {}):
            return engine, getattr(factory, "groupings")[groups]
    return None


def _given(**settings: Any) -> dict:
    """The settings that are not their defaults (SETTINGS')."""
    return {name: value for name, value in settings.items() if value is not SETTINGS[name]}

