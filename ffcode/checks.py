"""Argument checks shared by every layer (core, runtime, command line): wrong types raise
TypeError, wrong values ValueError, and every message names the argument.

>>> from ffcode import checks
>>> checks.integer(3, "k", low=1)
3
>>> checks.integer(0, "k", low=1)
Traceback (most recent call last):
...
ValueError: Argument 'k' must be at least 1, not 0.
>>> checks.positive(0.5, "timeout")
0.5
>>> checks.choice("ray", "engine", ("local", "ray"))
'ray'
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Optional

import numpy as np

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # deterministic below 3.3e24


def is_prime(n: int) -> bool:
    """Deterministic Miller–Rabin for n < 2**64."""
    if n < 2:
        return False
    for q in _MR_BASES:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def integer(value: Any, name: str, low: Optional[int] = None,
            high: Optional[int] = None) -> int:
    """value as a Python int from low to high (either bound may be left out); TypeError for
    bools, floats and anything non-integral."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"Argument {name!r} must be an integer, not {type(value).__name__}.")
    value = int(value)
    if low is not None and high is not None and not low <= value <= high:
        raise ValueError(f"Argument {name!r} must be from {low} to {high}, not {value}.")
    if low is not None and value < low:
        what = "non-negative" if low == 0 else f"at least {low}"
        raise ValueError(f"Argument {name!r} must be {what}, not {value}.")
    if high is not None and value > high:
        raise ValueError(f"Argument {name!r} must be at most {high}, not {value}.")
    return value


def real(value: Any, name: str, what: str = "a number") -> float:
    """value as a float; TypeError for bools and non-numbers (``what`` says what is
    expected, e.g. "a number of seconds")."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"Argument {name!r} must be {what}, not {type(value).__name__}.")
    return float(value)


def positive(value: Any, name: str, finite: bool = True, what: str = "a number") -> float:
    """value as a float > 0 (and finite unless told otherwise); NaN is refused."""
    value = real(value, name, what)
    if not value > 0 or finite and math.isinf(value):
        raise ValueError(f"Argument {name!r} must be positive{' and finite' * finite}, "
                         f"not {value}.")
    return value


def seconds(value: Any, name: str) -> float:
    """A duration: a number of seconds > 0 (inf: no limit)."""
    return positive(value, name, finite=False, what="a number of seconds")


def non_negative(value: Any, name: str, what: str = "a number") -> float:
    """value as a finite float >= 0; NaN is refused."""
    value = real(value, name, what)
    if not 0 <= value < math.inf:
        raise ValueError(f"Argument {name!r} must be non-negative and finite, not {value}.")
    return value


def flag(value: Any, name: str) -> bool:
    """value, a bool (True or False, not 1 or "yes")."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"Argument {name!r} must be True or False, not {value!r}.")
    return bool(value)


def choice(value: Any, name: str, options: Iterable[Any]) -> Any:
    """value, if it is one of options."""
    options = tuple(options)
    if isinstance(value, (bool, np.ndarray)) or value not in options:
        raise ValueError(f"Argument {name!r} must be one of "
                         f"{', '.join(map(repr, map(str, options)))}; not {value!r}.")
    return value


def integer_array(x: Any, name: str) -> np.ndarray:
    """x as a numpy array of a (non-bool) integer dtype."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"Argument {name!r} must be an array of integers, not dtype {a.dtype}.")
    return a


def ndim(a: np.ndarray, dims: Iterable[int], name: str) -> None:
    if a.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"Argument {name!r} must be {want}, not {a.ndim}-D "
                         f"(shape {a.shape}).")
