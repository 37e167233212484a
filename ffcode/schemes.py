"""How a coded job's results travel from the workers to the decoder: the schemes that the
runtime, the simulator, the estimators and the command line share.

Each scheme is one object (a strategy) that owns what it means in every layer: how many
packets a result travels as (``packets``), what its workers hold (``holds``), how a worker
turns its computed result into packets (``packets_of``), which collector the master feeds
them to (``collector``, ``needed``), and when the simulator's master can decode
(``packet_times``, ``decodable``). A ``Scheme`` is a ``str``, its name:
``Scheme.COMPFS == "compfs"``, and every function that takes a scheme takes its name too.

>>> from ffcode.schemes import Scheme
>>> Scheme.parse("cfs")
<Scheme.CFS: 'cfs'>
>>> [str(s) for s in Scheme if s.coded]
['classic', 'systematic', 'cfs', 'compfs']
>>> Scheme.CLASSIC.packets(4), Scheme.COMPFS.packets(4)
(1, 4)

A new scheme is a subclass of ``Scheme`` made under its name and registered; ``parse``
then finds it, and the simulator runs it (``ffcode.sim.simulate``). Here whole results
travel as two plain halves, whatever m:

>>> from ffcode.pieces import piece_packets
>>> class Halves(Scheme):
...     '''Whole results sent as 2 plain row pieces.'''
...     plain = True
...     def packets(self, m):
...         return 2
...     def packets_of(self, F, computed, m, worker, seed=None):
...         return piece_packets(F, computed, 2, worker, systematic=True)
>>> halves = register(Halves("halves"))
>>> Scheme.parse("halves") is halves, halves.packets(8), names()[-1]
(True, 2, 'halves')
>>> unregister("halves")
>>> names()
('uncoded', 'classic', 'systematic', 'cfs', 'compfs')
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

import numpy as np

from ffcode.codes.base import Code, Encoding, Split
from ffcode.errors import InvalidParameterError
from ffcode.decoding import collectors
from ffcode.field import PrimeField
from ffcode.delivery import REPAIRS
from ffcode.pieces import Packet, piece_packets
from ffcode.registry import Registry

if TYPE_CHECKING:
    from ffcode.sim import Model

# The simulator's lower bound of every scheme (ffcode.sim.IDEAL): no scheme takes its name.
RESERVED = ("ideal",)
# Each packet's coefficient vector in the simulator's rank tracking, given a function that
# draws that many random field elements.
Draw = Callable[[int], np.ndarray]


class _Schemes(type):
    """The type of the schemes: ``for s in Scheme`` gives the five built-in ones in order
    (``registered()`` every one), ``Scheme(name)`` and ``Scheme[NAME]`` look one up, as an
    Enum's would."""

    def __iter__(cls) -> Iterator["Scheme"]:
        return iter(_BUILT_IN)

    def __len__(cls) -> int:
        return len(_BUILT_IN)

    def __getitem__(cls, name: str) -> "Scheme":
        for scheme in _REGISTRY.items():
            if scheme.name == name:
                return scheme
        raise KeyError(name)

    def __call__(cls, value: Any) -> Any:
        if cls is not Scheme:       # a subclass makes its scheme under a name
            return super().__call__(value)
        try:                        # Scheme("cfs"): the registered one, never a new one
            return Scheme.parse(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a valid Scheme") from None


class Scheme(str, metaclass=_Schemes):
    """A scheme: how a job's results travel, from what its workers hold to when the master
    decodes. A subclass made under its name (``Halves("halves")``) and registered
    (``register``) is one more scheme; the defaults here are those of a coded scheme whose
    workers send each whole result as ``packets(m)`` random combinations of its pieces
    (as cfs does), so that a new one overrides only what it does otherwise.

    The built-in ones: uncoded: every worker's slice of the work, all needed; classic: the
    R fastest whole results; systematic: whole results sent as m plain row pieces; cfs:
    whole results sent as m random combinations of their pieces; compfs (computation at
    full speed): a packet per piece as it is computed."""

    UNCODED: ClassVar["Scheme"]
    CLASSIC: ClassVar["Scheme"]
    SYSTEMATIC: ClassVar["Scheme"]
    CFS: ClassVar["Scheme"]
    COMPFS: ClassVar["Scheme"]

    coded: bool = True
    """Whether any large-enough part of the work decodes (all but uncoded)."""
    whole: bool = False
    """Whether a worker sends each result whole, as one packet (uncoded, classic)."""
    holds: str = "shares"
    """What its workers hold, one of "slices" (uncoded), "shares" (whole coded shares) or
    "pieces" (shares already combined into m pieces, for compfs)."""
    piecewise: bool = False
    """Whether its workers compute and send piece by piece (compfs), which needs a
    row-linear computation (f(G @ X) = G @ f(X)); then they hold "pieces"."""
    plain: bool = False
    """Whether its packets are a result's plain row pieces (unit coefficient vectors), not
    random combinations of them."""

    @property
    def rateless(self) -> bool:
        """Whether a lost packet is made up by any fresh random combination of the pieces
        its worker computed (coded and neither plain nor whole), rather than sent again."""
        return self.coded and not self.plain and not self.whole

    measure: str = "rank"
    """What the master's collector counts toward decoding, "rank" (of the packets'
    coefficients), or "results" when every worker's part is needed (uncoded)."""

    def __new__(cls, value: str) -> "Scheme":
        if not (isinstance(value, str) and value.isidentifier() and value.islower()):
            raise InvalidParameterError(f"A scheme's name must be a lower-case identifier, not "
                                        f"{value!r}.")
        return super().__new__(cls, value)

    # -- the name: a str, as the Enum it was ----------------------------------------------------

    @property
    def value(self) -> str:
        """The name, a plain str."""
        return str.__str__(self)

    @property
    def name(self) -> str:
        """The name in capitals, as an Enum member's (``Scheme.CFS.name == "CFS"``)."""
        return self.value.upper()

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return f"<Scheme.{self.name}: {self.value!r}>"

    def __reduce__(self) -> tuple:
        # pickled as its name: it unpickles to the scheme registered under it
        if _REGISTRY.get(self.value) is self:
            return _registered, (self.value,)
        return type(self), (self.value,)

    def __copy__(self) -> "Scheme":
        return self

    def __deepcopy__(self, memo: dict) -> "Scheme":
        return self

    @classmethod
    def parse(cls, value: Any, name: str = "scheme") -> "Scheme":
        """The scheme named by value (a Scheme or the name of a registered one); ValueError
        naming the choices."""
        if isinstance(value, Scheme):
            return value
        if isinstance(value, str) and value in _REGISTRY:
            return _REGISTRY[str.__str__(value)]
        raise InvalidParameterError(f"Argument {name!r} must be one of {', '.join(names())}; not "
                                    f"{value!r}.")

    # -- the job -------------------------------------------------------------------------------

    def packets(self, m: int) -> int:
        """The packets a result of a job in m pieces travels as (a worker's pieces of work
        per share are m whatever the scheme)."""
        return 1 if self.whole else m

    send: str = ""
    """What the runtime's coded tasks called the built-in scheme's send step before they
    named the scheme ("whole", "systematic", "random" or "pieces"; empty for others): read
    only where an older caller still says ``Coded(send=...)``; every worker sends through
    ``packets_of``."""

    def for_computation(self, row_linear: bool) -> "Scheme":
        """This scheme, or the one to run in its place for a computation that is not
        row-linear: cfs for a piecewise one (the same random combinations, of whole
        results)."""
        return self if row_linear or not self.piecewise else Scheme.CFS

    def check_adversaries(self, adversaries: int) -> None:
        """ValueError when this scheme cannot correct ``adversaries`` wrong workers: one
        without redundancy (not ``coded``) corrects none."""
        if adversaries and not self.coded:
            coded = [s.value for s in registered() if s.coded]
            raise InvalidParameterError(
                f"Correcting wrong results (adversaries > 0) needs redundancy, "
                f"which scheme={self.value!r} has none of: use "
                f"{', '.join(coded[:-1])} or {coded[-1]}.")

    def check_repair(self, repair: str) -> None:
        """ValueError when this scheme cannot make up its lost packets as ``repair`` says
        ("dense" or "sparse", ffcode.delivery.Stream's): "sparse" sends a share's pieces
        plain and mixes only the lost ones, which needs a rateless scheme whose workers
        send whole results (cfs), not one that sends a lost packet again, nor compfs,
        whose packets are combinations fixed when its data was encoded."""
        if repair not in REPAIRS:
            raise InvalidParameterError(f"Argument 'repair' must be one of "
                                        f"{', '.join(map(repr, REPAIRS))}, not {repair!r}.")
        if repair != "sparse":
            return
        if not self.rateless:
            raise InvalidParameterError(
                f"repair='sparse' is for a scheme whose lost packets are made up by fresh "
                f"combinations (cfs); {self.value} sends a lost packet again.")
        if self.piecewise:
            raise InvalidParameterError(
                f"repair='sparse' sends a share's pieces plain, which {self.value} cannot: "
                f"its packets are combinations fixed when its data was encoded, dense over "
                f"the share's pieces, so its repairs would be dense too and decode no "
                f"cheaper. Use scheme='cfs', or repair='dense'.")

    def encode_data(self, code: Code, data: Iterable[Any], m: int,
               seed: Any = None) -> Union[Encoding, Split]:
        """The job's data as its workers hold it: the code's shares (combined into m pieces
        when they hold "pieces"), or its uncoded slices."""
        return code.encode(*data, pieces=None, seed=seed)

    def coefficient_seeds(self, seed: int, shares: Iterable[int]) -> Optional[tuple]:
        """Each of these shares' (code indices) seed of its packets' random coefficients,
        drawn by the worker from the job's ``seed`` (a pair of words, the share's own
        stream); None when the worker draws none (its packets' seed is then None): plain
        pieces, or combinations made when the shares were encoded (piecewise)."""
        if self.plain or self.piecewise:
            return None
        return tuple(tuple(int(s) for s in np.random.SeedSequence([seed, k]).generate_state(2))
                     for k in shares)

    def packets_of(self, F: PrimeField, computed: Any, m: int, worker: int,
                   seed: Any = None) -> Iterator[Packet]:
        """A worker's send step: the packets(m) packets (numbered 0, 1, ...) of what it
        computed of one share, ``computed`` its whole local result, or for a piecewise
        scheme an iterator of its pieces' packets (ffcode.pieces.piece_results), taken one
        at a time as they are asked for. ``seed``: the share's coefficient seed."""
        return piece_packets(F, computed, self.packets(m), worker, seed=seed,
                             systematic=self.plain)

    def collector(self, code: Code, encoding: Union[Encoding, Split], m: int,
                  adversaries: int = 0, buffer: Optional[np.ndarray] = None) -> Any:
        """The collector the master feeds the job's packets to (an
        ffcode.decoding.collectors.Collector), correcting ``adversaries`` wrong senders
        (shares); ``buffer``: payload storage an earlier job left."""
        return collectors.for_job(_coded(encoding), self.packets(m), adversaries,
                                  whole=self.whole, buffer=buffer)

    def needed(self, code: Code, encoding: Union[Encoding, Split], m: int,
               adversaries: int = 0) -> int:
        """The packets that suffice whoever of ``adversaries`` senders is wrong: m·R
        (packets(m) per share) when nobody may be wrong."""
        return self.packets(m) * (code.recovery_threshold + 2 * adversaries)

    # -- the simulator (ffcode.sim) ------------------------------------------------------------

    def packet_times(self, model: "Model") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ready, sizes, held), one row per worker and a column per packet: when each packet
        is ready to leave its worker (seconds from the start), its bytes, and which there
        are (packets(m) per share held, in order). Here each share's result, once its m
        pieces are computed, in packets(m) parts."""
        m, q = model.pieces, self.packets(model.pieces)
        finished = np.cumsum(model.times, axis=1)[:, m - 1::m]      # NaN past its shares
        ready = np.repeat(finished, q, axis=1)
        sizes = np.full(ready.shape, model.piece_bytes * (m / q))
        return ready, sizes, np.repeat(model.held[:, m - 1::m], q, axis=1)

    def shipped(self, model: "Model") -> int:
        """The shares (or slices) the master encodes and ships before the workers start,
        ``share_cost`` seconds each."""
        return model.n_shares

    def packets_needed(self, model: "Model") -> int:
        """The fewest packets from which the simulator's master decodes, all of them
        counting: packets(m) per share for R shares."""
        return self.packets(model.pieces) * model.recovery_threshold

    def coefficients(self, piece: int, count: int, draw: Draw) -> np.ndarray:
        """The coefficients (over the result's count = packets(m) pieces) of a result's
        packet ``piece``, as the simulator tracks them: a unit vector for plain pieces,
        else random (``draw(count)``, in the packets' order of arrival)."""
        if self.plain:
            unit = np.zeros(count, np.uint64)
            unit[piece] = 1
            return unit
        return draw(count)

    def decodable(self, shares: np.ndarray, pieces: np.ndarray, model: "Model",
                  exact: Optional[Callable[[], Optional[int]]] = None) -> Optional[int]:
        """The position in arrival order of the packet after which the master can decode
        (None: never), the packets being from these shares (code indices) with these piece
        indices. ``exact()`` is the simulator's rank tracking of them (their
        ``coefficients``), where it runs it (None above ``sim.EXACT_UP_TO``); else the
        counting rule it reduces to: piece l of plain pieces decodes from any R copies of
        it, random combinations from any packets(m)·R."""
        if exact is not None:
            return exact()
        R, q = model.recovery_threshold, self.packets(model.pieces)
        if self.plain:
            copies = [np.flatnonzero(pieces == l) for l in range(q)]
            return None if min(map(len, copies)) < R else max(int(c[R - 1]) for c in copies)
        return q * R - 1 if shares.size >= q * R else None


def _coded(encoding: Union[Encoding, Split]) -> Encoding:
    if not isinstance(encoding, Encoding):
        raise InvalidParameterError(
            f"A coded scheme collects an Encoding, not {type(encoding).__name__}.")
    return encoding


class _Whole(Scheme):
    """Whole results, each one packet (index 0, coefficients [1])."""
    whole, plain = True, True
    send = "whole"

    def packets_of(self, F: PrimeField, computed: Any, m: int, worker: int,
                   seed: Any = None) -> Iterator[Packet]:
        return iter([Packet(worker, 0, np.ones(1, F.dtype), computed)])


class _Uncoded(_Whole):
    """Every worker's slice of the work, all needed (no redundancy)."""
    coded, holds, measure = False, "slices", "results"

    def encode_data(self, code: Code, data: Iterable[Any], m: int,
               seed: Any = None) -> Union[Encoding, Split]:
        return code.uncoded(*data)

    def collector(self, code: Code, encoding: Union[Encoding, Split], m: int,
                  adversaries: int = 0, buffer: Optional[np.ndarray] = None) -> Any:
        split = _split(encoding)
        return collectors.Gather(code.F, len(split.shares), split.assemble)

    def needed(self, code: Code, encoding: Union[Encoding, Split], m: int,
               adversaries: int = 0) -> int:
        return len(_split(encoding).shares)

    def packet_times(self, model: "Model") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """N slices of ``uncoded_work`` of a share each, with the pauses of m pieces."""
        work, m, N = model.uncoded_work, model.pieces, model.n_workers
        assert work is not None, "Model.__post_init__ sets it"
        ready = (model.compute[:, :m].sum(axis=1) * work +
                 model.pauses[:, :m].sum(axis=1))[:, None]
        return ready, np.full((N, 1), m * model.piece_bytes * work), np.ones((N, 1), bool)

    def shipped(self, model: "Model") -> int:
        return model.n_workers

    def packets_needed(self, model: "Model") -> int:
        return model.n_workers              # every slice

    def decodable(self, shares: np.ndarray, pieces: np.ndarray, model: "Model",
                  exact: Optional[Callable[[], Optional[int]]] = None) -> Optional[int]:
        return model.n_workers - 1          # every slice


def _split(encoding: Union[Encoding, Split]) -> Split:
    if not isinstance(encoding, Split):
        raise InvalidParameterError(f"The uncoded scheme collects slices (a Split), not "
                                    f"{type(encoding).__name__}.")
    return encoding


class _Classic(_Whole):
    """The R fastest whole results."""

    def decodable(self, shares: np.ndarray, pieces: np.ndarray, model: "Model",
                  exact: Optional[Callable[[], Optional[int]]] = None) -> Optional[int]:
        return model.recovery_threshold - 1     # R whole results, of distinct shares


class _Systematic(Scheme):
    """Whole results sent as m plain row pieces: piece l decodes from any R copies."""
    plain = True
    send = "systematic"


class _CFS(Scheme):
    """Whole results sent as m random combinations of their pieces: any m·R decode."""
    send = "random"


class _CompFS(Scheme):
    """Computation at full speed: a random combination per piece, sent as it is computed
    (the shares are combined into m pieces when encoded: any m·R packets decode)."""
    holds, piecewise = "pieces", True
    send = "pieces"

    def encode_data(self, code: Code, data: Iterable[Any], m: int,
               seed: Any = None) -> Union[Encoding, Split]:
        return code.encode(*data, pieces=m, seed=seed)

    def packets_of(self, F: PrimeField, computed: Any, m: int, worker: int,
                   seed: Any = None) -> Iterator[Packet]:
        return iter(computed)           # each piece's packet, as it is computed

    def packet_times(self, model: "Model") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A packet per piece, ready as it is computed."""
        ready = np.cumsum(model.times, axis=1)
        return ready, np.full(ready.shape, model.piece_bytes), model.held


_BUILT_IN: tuple[Scheme, ...] = (_Uncoded("uncoded"), _Classic("classic"),
                                 _Systematic("systematic"), _CFS("cfs"), _CompFS("compfs"))
_REGISTRY: Registry[Scheme] = Registry("scheme", {str.__str__(s): s for s in _BUILT_IN})
Scheme.UNCODED, Scheme.CLASSIC, Scheme.SYSTEMATIC, Scheme.CFS, Scheme.COMPFS = _BUILT_IN
# The built-in schemes' names, in order (``names()`` adds the registered ones).
NAMES = tuple(s.value for s in _BUILT_IN)


def register(scheme: Scheme) -> Scheme:
    """Make ``scheme`` (an instance of a subclass of Scheme, made under its name) one of the
    schemes: ``Scheme.parse`` finds it by name, ``names()`` and ``registered()`` list it
    after the built-in ones; returns it. InvalidParameterError for a name already taken."""
    if not isinstance(scheme, Scheme):
        raise InvalidParameterError(
            f"Argument 'scheme' must be a Scheme (an instance of a subclass, made under its "
            f"name), not {type(scheme).__name__}.")
    name = scheme.value
    if name in RESERVED:
        raise InvalidParameterError(
            f"The name {name!r} is reserved (the simulator's lower bound).")
    return _REGISTRY.add(name, scheme)


def unregister(name: str) -> None:
    """Remove the scheme registered under ``name`` (not a built-in one)."""
    _REGISTRY.remove(str(name))


def registered() -> tuple[Scheme, ...]:
    """Every scheme: the built-in ones in order, then the registered ones in the order they
    were registered."""
    return _REGISTRY.items()


def names() -> tuple[str, ...]:
    """The names of ``registered()``, each a plain str."""
    return _REGISTRY.names()


def default(row_linear: bool = True) -> Scheme:
    """The scheme a job runs by default: compfs, or cfs for a computation that is not
    row-linear (compfs's pieces need it)."""
    return Scheme.COMPFS.for_computation(row_linear)


def path_of(scheme: Scheme) -> Optional[str]:
    """How a worker process finds ``scheme``: None for a built-in one (its name is enough),
    else the import path "module:NAME" of the module-level name its object is bound to in
    the module of its class, as a worker imports it (ValueError when there is none).

    >>> path_of(Scheme.CFS) is None
    True
    """
    if any(scheme is built_in for built_in in _BUILT_IN):
        return None
    module = type(scheme).__module__
    names = [name for name, value in vars(sys.modules.get(module, object())).items()
             if value is scheme]
    if not names:
        raise InvalidParameterError(
            f"The scheme {scheme.value!r} cannot be found by worker processes: "
            f"bind its object to a name at the top level of the module of its "
            f"class ({module}), e.g. HALVES = register(Halves('halves')).")
    return f"{module}:{names[0]}"


def load(path: str, name: str) -> Scheme:
    """The scheme object at import path "module:NAME" (``path_of``), checked to be a Scheme
    named ``name``: how a worker finds a scheme that is not built in. ValueError
    otherwise."""
    module, _, attribute = path.partition(":") if isinstance(path, str) else ("", "", "")
    if not module or not attribute:
        raise InvalidParameterError(
            f"A scheme's path looks like 'package.module:NAME', not {path!r}.")
    try:
        found: Any = importlib.import_module(module)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as e:
        raise InvalidParameterError(f"Cannot import {path!r}: {e}") from None
    if not isinstance(found, Scheme) or found.value != name:
        raise InvalidParameterError(
            f"{path!r} is not the scheme {name!r} (an ffcode.schemes.Scheme), "
            f"but {found!r}.")
    return found


def _registered(name: str) -> Scheme:
    """The scheme registered under ``name`` (how a pickled scheme comes back)."""
    return Scheme.parse(name)
