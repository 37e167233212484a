"""The payloads of the coded job kinds: what one worker is asked to compute, as typed,
frozen values each encoded to the wire's JSON meta (``to_meta``) and decoded with every
field checked (``from_meta``, ProtocolError on anything else), so that master and worker
agree on one schema, checked at both ends.

``Coded`` is a worker's part of a coded job: the computation's import path (with the
field), its scheme (ffcode.schemes: by name, with the import path of its object when it is
not built in, as the worker imports a job's function), and its shares. A relay's task is a
``Relayed`` (a hierarchical code's outer share: its group runs the inner code on each
piece of work) or a ``Forwarded`` (its group's shares of an ordinary code, whose packets it
forwards).

>>> coded = Coded(f="ffcode.functions:matmul", p=65521, scheme="compfs", pieces=2,
...               shares=1, operand=0)
>>> Coded.from_meta(coded.to_meta()) == coded, coded.strategy
(True, <Scheme.COMPFS: 'compfs'>)
>>> coded.work
2
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Tuple

from ffcode import schemes
from ffcode.errors import ProtocolError
from ffcode.runtime.shared import local, meta as check
from ffcode.runtime.shared.meta import MAX_COUNT
from ffcode.schemes import Scheme


@dataclass(frozen=True)
class Coded:
    """f: the computation's import path; p: the field; scheme: the name of the scheme its
    results travel by (ffcode.schemes), scheme_path the import path "module:NAME" of its
    object when it is not a built-in one (None otherwise); pieces: packets per share;
    shares: how many shares the worker works through; operand: the row-linear operand's
    place (piecewise schemes); seeds: each share's packet-coefficient seed (None when the
    scheme draws none); once: the worker answers with every packet of its shares in one
    ANSWER, done implied (a small job: the master sends it no stop)."""
    KIND: ClassVar[str] = "coded"
    f: str
    p: int
    scheme: str
    pieces: int
    shares: int
    operand: Optional[int] = None
    seeds: Optional[Tuple[Tuple[int, ...], ...]] = None
    scheme_path: Optional[str] = None
    once: bool = False

    @property
    def work(self) -> int:
        """Pieces of work in the task: m per share (a fault's pause comes before each)."""
        return self.pieces * self.shares

    @property
    def strategy(self) -> Scheme:
        """The scheme object: a built-in one by name, another imported from its path
        (ProtocolError when neither is there)."""
        return _scheme(self.scheme, self.scheme_path)

    def to_meta(self) -> dict:
        return dict(vars(self), seeds=None if self.seeds is None else
                    [list(s) for s in self.seeds])

    @classmethod
    def from_meta(cls, meta: Any) -> "Coded":
        meta = check.fields(meta, "coded task", cls)
        shares = check.count(meta["shares"], "shares")
        seeds = check.optional(meta["seeds"], "seeds", lambda s, name: tuple(
            tuple(check.count(x, name, MAX_COUNT ** 2) for x in check.listed(pair, name, 2))
            for pair in check.listed(s, name, shares)))
        scheme = check.text(meta["scheme"], "scheme")
        path = check.optional(meta["scheme_path"], "scheme_path", check.path)
        _scheme(scheme, path)           # a scheme the worker has: nothing else is run
        return cls(f=check.path(meta["f"], "f"), p=check.count(meta["p"], "p", 1 << 64),
                   scheme=scheme, pieces=check.count(meta["pieces"], "pieces", low=1),
                   shares=shares, operand=check.optional(meta["operand"], "operand",
                                                         check.count),
                   seeds=seeds, scheme_path=path, once=check.flag(meta["once"], "once"))


def _scheme(name: str, path: Optional[str]) -> Scheme:
    """The scheme a task names: a built-in one by its name (and no path), another by the
    import path of its object (imported here, as a job's function is); ProtocolError
    otherwise."""
    if path is None:
        if name not in schemes.NAMES:
            raise ProtocolError(f"a task's scheme must be one of {', '.join(schemes.NAMES)} "
                                f"or come with the import path of its object "
                                f"(scheme_path), not {str(name)[:200]!r}")
        return Scheme.parse(name)
    if name in schemes.NAMES:
        raise ProtocolError(f"a task's scheme {name!r} is a built-in one: it comes without "
                            f"a scheme_path, not with {path[:200]!r}")
    try:
        if path.startswith("__main__:"):
            local.import_main()         # a scheme defined in the master's script
        return schemes.load(path, name)
    except Exception as e:
        raise ProtocolError(f"a task's scheme_path must lead to the scheme {name!r} (an "
                            f"ffcode.schemes.Scheme): {str(e)[:300]}") from None


@dataclass(frozen=True)
class Relayed:
    """A relay's part of a hierarchical code's job: its outer share's ``coded`` task,
    whose every piece of work its group computes as a job of the inner code (``code``: its
    ProductCode.description), with the group's injected faults (Faults.to_dict, or None)."""
    KIND: ClassVar[str] = "relay"
    coded: Coded
    code: dict
    faults: Optional[dict] = None

    def to_meta(self) -> dict:
        return {"coded": self.coded.to_meta(), "code": self.code, "faults": self.faults}

    @classmethod
    def from_meta(cls, meta: Any) -> "Relayed":
        meta = check.fields(meta, "relay's task", cls)
        return cls(Coded.from_meta(meta["coded"]), check.mapping(meta["code"], "code"),
                   check.optional(meta["faults"], "faults", check.mapping))


@dataclass(frozen=True)
class Forwarded:
    """A relay's part of an ordinary code's job: its ``coded`` task's shares (already
    encoded) dealt over its group, ``members[w]`` of them to worker w in order, with the
    group's faults (Faults.to_dict, or None), the job's scheme and pieces of ``work`` per
    share, each share's decoding equation (``powers``: a unit vector per slice when
    uncoded), and whether it forwards only what adds rank (``filter``: not when the master
    corrects wrong senders, which needs their redundancy)."""
    KIND: ClassVar[str] = "forward"
    coded: Coded
    members: Tuple[int, ...]
    scheme: str
    work: int
    powers: Tuple[Tuple[int, ...], ...]
    filter: bool = True
    faults: Optional[dict] = None

    def to_meta(self) -> dict:
        return {"coded": self.coded.to_meta(), "members": list(self.members),
                "scheme": self.scheme, "work": self.work,
                "powers": [list(row) for row in self.powers], "filter": self.filter,
                "faults": self.faults}

    @classmethod
    def from_meta(cls, meta: Any) -> "Forwarded":
        meta = check.fields(meta, "relay's forwarding task", cls)
        coded = Coded.from_meta(meta["coded"])
        members = tuple(check.count(c, "members") for c in check.listed(meta["members"],
                                                                         "members"))
        if sum(members) != coded.shares:
            raise ProtocolError(f"a forwarding task deals {coded.shares} shares over its "
                                f"group in a way that does not add up: {list(members)}")
        powers = check.listed(meta["powers"], "powers", coded.shares)
        width = len(powers[0]) if powers and isinstance(powers[0], list) else 0
        rows = tuple(tuple(check.count(x, "powers", 1 << 64)
                           for x in check.listed(row, "powers", width)) for row in powers)
        if not rows or not width:
            raise ProtocolError("a relay's task needs one decoding equation per share")
        return cls(coded, members, check.text(meta["scheme"], "scheme"),
                   check.count(meta["work"], "work", 1 << 16, low=1), rows,
                   check.flag(meta["filter"], "filter"),
                   check.optional(meta["faults"], "faults", check.mapping))
