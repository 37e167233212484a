"""Argument checks shared by every layer (core, runtime, command line), one argument at a
time: each is a constraint of ``ffcode.constraints`` (where classes declare theirs as data),
and raises ``ffcode.errors.InvalidParameterError`` (both a TypeError and a ValueError) whose
message names the argument, what it must be and what it got.

>>> from ffcode import checks
>>> checks.integer(3, "k", low=1)
3
>>> checks.integer(0, "k", low=1)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'k' must be at least 1, not 0.
>>> checks.positive(0.5, "timeout")
0.5
>>> checks.choice("ray", "engine", ("local", "ray"))
'ray'
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

from ffcode.constraints import (Boolean, Callables, InstanceOf, Interval, Options, Prime,
                                is_prime, refuse)
from ffcode.errors import InvalidParameterError

__all__ = ["choice", "flag", "function", "instance", "integer", "integer_array", "is_prime",
           "ndim", "non_negative", "positive", "prime", "real", "seconds", "sequence"]


def integer(value: Any, name: str, low: Optional[int] = None,
            high: Optional[int] = None) -> int:
    """value as a Python int from low to high (either bound may be left out); bools, floats
    and anything non-integral are refused (numpy's integers taken)."""
    if type(value) is int and (low is None or value >= low) and \
            (high is None or value <= high):
        return value                # the common case, on hot paths: no constraint to build
    return Interval(Integral, low, high).check(value, name)


def real(value: Any, name: str, what: str = "a number") -> float:
    """value as a float (inf and NaN too); bools and non-numbers are refused (``what`` says
    what is expected, e.g. "a number of seconds")."""
    return Interval(Real, None, None, what=what).check(value, name)


def positive(value: Any, name: str, finite: bool = True, what: str = "a number") -> float:
    """value as a float > 0 (and finite unless told otherwise); NaN is refused."""
    if type(value) is float and value > 0 and (value < math.inf or not finite):
        return value                # the common case: no constraint to build
    return Interval(Real, 0, None, "neither" if finite else "right", what).check(value, name)


def seconds(value: Any, name: str) -> float:
    """A duration: a number of seconds > 0 (inf: no limit)."""
    return positive(value, name, finite=False, what="a number of seconds")


def non_negative(value: Any, name: str, what: str = "a number") -> float:
    """value as a finite float >= 0; NaN is refused."""
    return Interval(Real, 0, None, "left", what).check(value, name)


def flag(value: Any, name: str) -> bool:
    """value, a bool (True or False, not 1 or "yes")."""
    if type(value) is bool:
        return value
    return Boolean().check(value, name)


def choice(value: Any, name: str, options: Iterable[Any]) -> Any:
    """value, if it is one of options (a bool only if a bool is one)."""
    return Options(options).check(value, name)


def prime(value: Any, name: str, below: int = 2**63) -> int:
    """value as an int, a prime below ``below`` (ffcode.GF's fields: below 2**63)."""
    return Prime(below).check(value, name)


def instance(value: Any, name: str, types: type | tuple[type, ...],
             what: Optional[str] = None) -> Any:
    """value, if it is an instance of types (``what`` names them in the message, as "an
    ffcode.Faults"; by default the types' names)."""
    return InstanceOf(*(types if isinstance(types, tuple) else (types,)),
                      what=what).check(value, name)


def function(value: Any, name: str, what: str = "callable") -> Any:
    """value, if it is callable (``what`` says how it is called, as "callable as
    progress(rank, needed)")."""
    return Callables(what).check(value, name)


def sequence(value: Any, subject: str, what: str, kind: type = Iterable) -> Any:
    """value, if it is a ``kind`` (by default any iterable) but not a string or bytes;
    otherwise an error saying "<subject> must be <what>, not <its type>" (the subject as
    "Argument 'groups'" or "Group 2")."""
    if isinstance(value, (str, bytes)) or not isinstance(value, kind):
        raise InvalidParameterError(f"{subject} must be {what}, not {type(value).__name__}.")
    return value


def integer_array(x: Any, name: str) -> np.ndarray:
    """x as a numpy array of a (non-bool) integer dtype."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise refuse(name, "an array of integers", f"dtype {a.dtype}")
    return a


def ndim(a: np.ndarray, dims: Iterable[int], name: str) -> None:
    """Refuses an array whose number of dimensions is not one of dims."""
    dims = tuple(dims)
    if a.ndim not in dims:
        raise refuse(name, " or ".join(f"{d}-D" for d in dims), f"{a.ndim}-D (shape {a.shape})")
