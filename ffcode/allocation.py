"""Which shares (evaluation points of a code) each worker holds: ``assignment[i]`` lists
worker i's code indices, in the order it works through them.

A code may have more points than there are workers: a worker holding several shares keeps
computing after its first, so a fast worker's time is not spent idle while the master waits
for stragglers. ``uniform`` deals the shares round-robin (worker i holds i, i + P, ...);
``proportional`` sizes each worker's count to its speed, and ``dealt`` turns counts into an
assignment the same way.

>>> uniform(5, 2)
((0, 2, 4), (1, 3))
>>> proportional(6, [2.0, 1.0])
(4, 2)
>>> dealt((4, 2))
((0, 2, 4, 5), (1, 3))
>>> owners(dealt((4, 2)))[5]
0
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ffcode import checks
from ffcode.errors import InvalidParameterError

Assignment = tuple  # tuple[tuple[int, ...], ...]: per worker, its code indices


def uniform(n_shares: int, n_workers: int) -> Assignment:
    """n_shares dealt round-robin to n_workers (counts within one of each other); with
    fewer shares than workers, the first n_shares workers hold one each and the rest none."""
    n_shares, n_workers = _counts(n_shares, n_workers)
    return tuple(tuple(range(i, n_shares, n_workers)) for i in range(min(n_shares, n_workers)))


def proportional(n_shares: int, speeds: Sequence[float] | np.ndarray) -> tuple[int, ...]:
    """How many of n_shares each worker holds, in proportion to its speed, every worker at
    least one: a worker whose proportional part is below one gets one and the rest are
    shared out again among the others; the counts are then those parts rounded by largest
    remainder, so each is within one share of its part."""
    speed = checked_speeds(speeds)
    n_shares, n_workers = _counts(n_shares, len(speed))
    if n_shares < n_workers:
        raise InvalidParameterError(f"Allocating {n_shares} shares to {n_workers} workers would "
                                    f"leave {n_workers - n_shares} without one: give the code at "
                                    f"least {n_workers} points.")
    floor: set[int] = set()                     # the workers held at one share
    while True:
        rest = [i for i in range(n_workers) if i not in floor]
        left = n_shares - len(floor)
        total = sum(speed[i] for i in rest)
        parts = {i: left * speed[i] / total for i in rest}      # exact fractions
        low = {i for i, part in parts.items() if part < 1}
        if not low:
            break
        floor |= low
    counts = [1] * n_workers
    for i, part in parts.items():
        counts[i] = math.floor(part)
    short = n_shares - sum(counts)
    for i in sorted(parts, key=lambda i: (math.floor(parts[i]) - parts[i], i))[:short]:
        counts[i] += 1
    return tuple(counts)


def dealt(counts: Sequence[int]) -> Assignment:
    """The assignment holding counts[i] shares for worker i: dealt in rounds, one to each
    worker still short, so that every worker's first shares are the lowest indices."""
    counts = [checks.integer(c, "counts", low=1) for c in counts]     # a share each
    if not counts:
        raise InvalidParameterError("Argument 'counts' must give at least one worker's count.")
    held: list[list[int]] = [[] for _ in counts]
    index = 0
    for round_ in range(max(counts)):
        for i, count in enumerate(counts):
            if round_ < count:
                held[i].append(index)
                index += 1
    return tuple(tuple(h) for h in held)


def checked(assignment: Any, n_shares: int, n_workers: int) -> Assignment:
    """An explicit assignment, checked: one entry per worker used (at most n_workers), each
    non-empty, and every code index 0..n_shares-1 held by exactly one worker."""
    checks.sequence(assignment, "Argument 'assignment'",
                    "a sequence, per worker, of the code indices it holds", Sequence)
    out = []
    for i, held in enumerate(assignment):
        checks.sequence(held, f"Worker {i}'s shares", "a sequence of code indices", Sequence)
        out.append(tuple(checks.integer(k, "assignment") for k in held))
    if not out or len(out) > n_workers:
        raise InvalidParameterError(f"The assignment names {len(out)} workers; the cluster has "
                                    f"{n_workers} (at least one is needed).")
    empty = [i for i, held in enumerate(out) if not held]
    if empty:
        raise InvalidParameterError(f"The assignment leaves worker{'s' * (len(empty) > 1)} "
                                    f"{', '.join(map(str, empty))} without shares.")
    seen: dict[int, int] = {}
    for i, held in enumerate(out):
        for k in held:
            if not 0 <= k < n_shares:
                raise InvalidParameterError(f"Worker {i} is assigned share {k}, but the code has "
                                            f"shares 0..{n_shares - 1}.")
            if k in seen:
                raise InvalidParameterError(f"Share {k} is assigned to both worker {seen[k]} and "
                                            f"worker {i}.")
            seen[k] = i
    missing = sorted(set(range(n_shares)) - set(seen))
    if missing:
        shown = ", ".join(map(str, missing[:8])) + " ..." * (len(missing) > 8)
        raise InvalidParameterError(f"The assignment leaves share{'s' * (len(missing) > 1)} "
                                    f"{shown} without a worker.")
    return tuple(out)


def checked_speeds(speeds: Any, name: str = "speeds") -> tuple[Fraction, ...]:
    """Speeds, one per worker, checked to be finite positive numbers (TypeError, ValueError
    naming the argument ``name`` otherwise), as exact fractions: arithmetic on them neither
    overflows (1e308 + 1e308, or an int too large for a float) nor rounds."""
    if isinstance(speeds, (str, bytes)) or not isinstance(speeds, Sequence) and not \
            hasattr(speeds, "__array__"):
        raise InvalidParameterError(f"Argument {name!r} must be a sequence of numbers, one per "
                                    f"worker, not {type(speeds).__name__}.")
    out = [_speed(s, i, name) for i, s in enumerate(list(speeds))]
    if not out:
        raise InvalidParameterError(f"Argument {name!r} must give at least one worker's speed.")
    return tuple(out)


def _speed(s: Any, i: int, name: str) -> Fraction:
    """Worker i's speed s as an exact fraction, checked."""
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Real):
        raise InvalidParameterError(f"Argument {name!r} must hold numbers, not {type(s).__name__} "
                                    f"(worker {i}).")
    if isinstance(s, numbers.Rational):         # ints of any size and fractions: exact
        exact = Fraction(int(s)) if isinstance(s, numbers.Integral) else Fraction(s)
    else:
        value = float(s)
        if not math.isfinite(value):
            raise InvalidParameterError(f"Argument {name!r} must hold finite speeds, not {s} "
                                        f"(worker {i}).")
        exact = Fraction(value)
    if exact <= 0:
        raise InvalidParameterError(f"Argument {name!r} must hold positive speeds, not {s} "
                                    f"(worker {i}).")
    return exact


def owners(assignment: Assignment) -> dict[int, int]:
    """{code index: the worker holding it}."""
    return {k: i for i, held in enumerate(assignment) for k in held}


def _counts(n_shares: Any, n_workers: Any) -> tuple[int, int]:
    """The numbers of shares and of workers, checked: at least one of each."""
    return (checks.integer(n_shares, "n_shares", low=1),
            checks.integer(n_workers, "n_workers", low=1))
