"""Argument checks shared by the public API: wrong types raise TypeError, wrong values
ValueError, and every message names the argument."""
import numbers

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


def integer(value, name: str) -> int:
    """value as a Python int; TypeError for bools, floats and anything non-integral."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"Argument {name!r} must be an integer, not {type(value).__name__}.")
    return int(value)


def integer_array(x, name: str) -> np.ndarray:
    """x as a numpy array of a (non-bool) integer dtype."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"Argument {name!r} must be an array of integers, not dtype {a.dtype}.")
    return a


def ndim(a: np.ndarray, dims, name: str) -> None:
    if a.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(f"Argument {name!r} must be {want}, not {a.ndim}-D "
                         f"(shape {a.shape}).")
