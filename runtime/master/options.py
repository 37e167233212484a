"""How a job runs: the ``Options`` of ``Cluster.run`` (and ``load``), checked as they are
made, and where a code's shares go: each worker's shares (``Options.assignment_for``),
refused for remote workers when the computation lives in the master's script, and a
warning when a private code's workers hold more shares than its privacy counts.

>>> Options(timeout=0)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'timeout' must be positive, not 0.0.
"""
from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Callable, ClassVar, Optional, Union

from ffcode import allocation, checks, functions
from ffcode.codes.base import Code
from ffcode.constraints import (Callables, Constraint, Default, InstanceOf, Interval, Refusal,
                                Spec)
from ffcode.constraints import Options as OneOf
from ffcode.constraints import validate
from ffcode.delivery import REPAIRS
from ffcode.errors import InvalidParameterError
from ffcode.pieces import pieces_count
from ffcode.runtime.shared.faults import Faults
from ffcode.schemes import Scheme, names

ALLOCATE = ("uniform", "speed")
MAX_PRIORITY = 1 << 31

log = logging.getLogger(__name__)


class SchemeName(Constraint):
    """A Scheme, or the name of a registered one (``ffcode.schemes.names``, as they are when
    the value is checked), converted to the Scheme."""
    separator = "; "

    def refusal(self, value: Any) -> Optional[Refusal]:
        try:
            Scheme.parse(value)
        except ValueError:
            return Refusal(str(self), repr(value), False)   # its names: any value's refusal
        return None

    def convert(self, value: Any) -> Scheme:
        return Scheme.parse(value)

    def __str__(self) -> str:
        return f"one of {', '.join(names())}"


class Listing(Constraint):
    """A sequence that is not a string (``what`` names it in messages); its items are
    checked where they are used."""

    def __init__(self, what: str) -> None:
        self.what = what

    def refusal(self, value: Any) -> Optional[Refusal]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            return Refusal(self.what, type(value).__name__, True)
        return None

    def __str__(self) -> str:
        return self.what


class Allocate(Constraint):
    """How shares are allocated: one of ALLOCATE, or a sequence of speeds (each checked
    against the cluster's workers as the job is planned: ``allocation.checked_speeds``)."""
    separator = "; "

    def refusal(self, value: Any) -> Optional[Refusal]:
        if isinstance(value, str):
            return OneOf(ALLOCATE).refusal(value)
        if isinstance(value, (Sequence, bytes)) or hasattr(value, "__array__"):
            return None     # (bytes: refused with the speeds)
        return Refusal(str(self), type(value).__name__, True)

    def __str__(self) -> str:
        return f"{OneOf(ALLOCATE)} or a sequence of speeds"


@dataclass(frozen=True)
class Options:
    """How a job runs: ``Cluster.run``'s (and ``load``'s) keyword arguments, checked as they
    are made. seed: the encoding's masks and the packets' random coefficients (default:
    fresh randomness for every job).

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

    priority: with several jobs in flight (``Cluster.submit``), each worker runs the tasks
    of the highest priority first, and those of equal priority in turn, the ones it has
    been markedly faster on first (default 0, for all).

    wait_for_stops: the job returns once the workers it stopped have acknowledged (or after
    a quarter of a second), so that its report tells how long stopping took (True, the
    default); False returns the output as soon as it is decoded (and checked), and the
    report's stop fields (stop_latency, quiet, wasted_after_stop, each worker's stopped,
    rejected and stale) fill in as the acknowledgements come. A worker starved of CPU
    acknowledges late: only False then returns at the pace of the fast workers. A
    worker that died during the job is then found by the next one (which fails if it
    cannot do without it), rather than by this one's stops.

    group_faults: on a cluster of relays (``groups=``), {group: ffcode.Faults} injected
    into the group's workers (numbered 0..size-1 in their group) on every piece of work
    its relay gives them; ``faults`` are the relays'.

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

    repair: how a cfs worker on a lossy link (``Faults(loss=...)``) makes up its lost
    packets, each by a fresh random combination: "dense" (the default) of all its share's
    packets, which are themselves random combinations of its pieces; "sparse" (as BATS
    codes do) sends the share's m pieces plain, unit coefficient vectors, and combines only
    those the master lacks (deemed lost and not acknowledged since), so that the master
    decodes sparse coefficient vectors. A repair then raises the master's rank as surely as
    a dense one: what it lacks lies in the span of the pieces lost. "sparse" is refused
    for the schemes that send a lost packet again (uncoded, classic, systematic), for
    compfs (its packets are combinations fixed when its data was encoded, dense over the
    share's pieces: its repairs would be dense too, and decode no cheaper), and through
    relays.
    """
    scheme: Optional[Union[Scheme, str]] = None
    pieces: Optional[int] = None
    faults: Faults = Faults()
    timeout: float = 600.0
    seed: Optional[int] = None
    progress: Optional[Callable[[int, int], None]] = None
    verify: Union[bool, str] = "auto"
    adversaries: int = 0
    assignment: Optional[Sequence[Sequence[int]]] = None
    allocate: Optional[Union[str, Sequence[float]]] = None
    priority: int = 0
    group_faults: Optional[Mapping[int, Faults]] = None
    wait_for_stops: bool = True
    repair: str = "dense"

    # ffcode.constraints: what each option may be (None: the default, unsaid in messages);
    # the rules that tie options together are code after them (__post_init__).
    _parameter_constraints: ClassVar[Mapping[str, Spec]] = {
        "scheme": Default(SchemeName()),
        "pieces": Default(Interval(Integral, 1, None)),
        "faults": Default(InstanceOf(Faults, what="an ffcode.Faults")),
        "timeout": Interval(Real, 0, None, "right", "a number of seconds"),
        "seed": Default(Interval(Integral, 0, None)),
        "progress": Default(Callables("callable as progress(rank, needed)")),
        "verify": OneOf((True, False, "auto")),
        "adversaries": Interval(Integral, 0, None),
        "assignment": Default(Listing("a sequence, per worker, of the code indices it holds")),
        "allocate": Default(Allocate()),
        "priority": Interval(Integral, -MAX_PRIORITY, MAX_PRIORITY),
        "group_faults": Default(InstanceOf(Mapping, what="a mapping of groups to "
                                           "ffcode.Faults")),
        "wait_for_stops": OneOf((True, False)),
        "repair": OneOf(REPAIRS)}

    def __post_init__(self) -> None:
        checked = validate(self._parameter_constraints, vars(self))
        checked["faults"] = checked["faults"] or Faults()
        if checked["verify"] != "auto":
            checked["verify"] = bool(checked["verify"])     # numpy's bools too
        if self.assignment is not None and self.allocate is not None:
            raise InvalidParameterError("Give either 'assignment' or 'allocate', not both.")
        group_faults = checked["group_faults"]
        if group_faults is not None:
            if not all(isinstance(f, Faults) for f in group_faults.values()):
                raise InvalidParameterError("Argument 'group_faults' must map groups to "
                                            "ffcode.Faults.")
            checked["group_faults"] = {checks.integer(g, "group_faults group", low=0): f
                                       for g, f in group_faults.items()}
        if checked["scheme"] is not None:
            check_repair(checked["repair"], checked["scheme"])
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def assignment_for(self, code: Code, size: int, speeds: Sequence[Any],
                       remote: bool = False) -> tuple:
        """The shares each of a cluster's size workers holds: as given, or allocated
        (uniform by default; by ``speeds``, the latest job's, for allocate="speed").
        remote: the workers import the code's computation by its path."""
        if not isinstance(code, Code):
            raise InvalidParameterError(f"Argument 'code' must be an ffcode code or the data "
                                        f"load returned, not {type(code).__name__}.")
        if remote:
            check_importable(code)
        assignment = self._allocated(code, size, speeds)
        warn_privacy(code, assignment)
        return assignment

    def _allocated(self, code: Code, size: int, speeds: Sequence[Any]) -> tuple:
        allocate = self.allocate
        if self.assignment is not None:
            return allocation.checked(self.assignment, code.n_workers, size)
        if allocate is None or isinstance(allocate, str) and allocate == "uniform":
            return allocation.uniform(code.n_workers, size)
        if isinstance(allocate, str):      # "speed" (checked as the options were made)
            known = sorted(s for s in speeds if s is not None)
            if not known:
                raise ValueError("allocate='speed' needs speeds measured in an earlier job "
                                 "on this cluster: run one first, or pass the speeds.")
            median = known[len(known) // 2]
            measured: Sequence[Any] = [median if s is None else s for s in speeds]
        else:
            measured = allocation.checked_speeds(allocate, "allocate")
            if len(measured) != size:
                raise InvalidParameterError(f"Argument 'allocate' gives {len(measured)} "
                                            f"speeds; the cluster has {size} workers.")
        return allocation.dealt(allocation.proportional(code.n_workers, measured))

    def resolved(self, scheme: Scheme = Scheme.COMPFS, pieces: int = 4) -> "Options":
        """These options with the scheme and pieces filled in where left out (only those two
        checked again: the rest were as these options were made)."""
        if self.scheme is not None and self.pieces is not None:
            return self
        filled = copy.copy(self)
        object.__setattr__(filled, "scheme", Scheme.parse(self.scheme or scheme))
        object.__setattr__(filled, "pieces", pieces_count(self.pieces or pieces))
        return filled


def check_repair(repair: str, scheme: Scheme, relayed: bool = False) -> None:
    """InvalidParameterError (a ValueError) for repair="sparse" where it cannot be: where
    the scheme cannot (``Scheme.check_repair``), or through relays.

    >>> check_repair("sparse", Scheme.CFS), check_repair("dense", Scheme.CLASSIC)
    (None, None)
    """
    scheme.check_repair(repair)
    if repair == "sparse" and relayed:
        raise InvalidParameterError("repair='sparse' is for the links of a cluster's own "
                                    "workers, not through relays.")


def warn_privacy(code, assignment) -> None:
    """Say so when a private code's workers hold several shares, as its t counts shares:
    a warning when even a single worker may see more than t."""
    t, most = getattr(code, "t", 0), max(len(held) for held in assignment)
    if t and most > 1:
        log.log(logging.WARNING if t < most else logging.INFO,
                "%r keeps the data from any %d shares, and a worker holds up to %d: any %d "
                "workers learn nothing (for t workers, build it with privacy t × %d)", code,
                t, most, t // most, most)


def check_importable(code) -> None:
    """Remote workers import a code's computation by its path: not from the master's
    script."""
    check_remote_path(functions.path_of(code.function))


def check_remote_path(path: str) -> None:
    """InvalidParameterError (a ValueError) for a function path remote workers cannot
    import: one in the master's script ("__main__:name")."""
    if path.startswith("__main__:"):
        raise InvalidParameterError(f"Remote workers cannot import {path!r} from the master's "
                                    f"script: put f in a module the workers can import (on "
                                    f"their PYTHONPATH) and pass it or "
                                    f"'package.module:function'.")
