"""Workers' computations, named by import path ("package.module:function") so that worker
processes import the same function: the product of product codes, and two ready-made
polynomials for Lagrange coded computing.

>>> from ffcode import GF
>>> f = load("ffcode.functions:square")
>>> f(GF(7), [3, 4]).tolist(), path_of(f)
([2, 2], 'ffcode.functions:square')
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ffcode.errors import InvalidParameterError

if TYPE_CHECKING:
    import numpy as np

    from ffcode.field import PrimeField
    from ffcode._types import ArrayLike


def matmul(F: PrimeField, A: ArrayLike, B: ArrayLike) -> np.ndarray:
    """A @ B exactly (a product code's worker computation)."""
    return F.matmul(A, B)


def square(F: PrimeField, X: ArrayLike) -> np.ndarray:
    """X * X elementwise (degree 2)."""
    return F.mul(X, X)


def cube(F: PrimeField, X: ArrayLike) -> np.ndarray:
    """X * X * X elementwise (degree 3)."""
    return F.mul(F.mul(X, X), X)


def load(path: str) -> Callable:
    """The function named by "package.module:function" (TypeError/ValueError otherwise)."""
    if not isinstance(path, str):
        raise InvalidParameterError(f"A function path must be a string, not {type(path).__name__}.")
    module, _, name = path.partition(":")
    if not module or not name:
        raise InvalidParameterError("A function path looks like 'package.module:function', not "
                                    f"{path!r}.")
    try:
        f = importlib.import_module(module)
        for part in name.split("."):
            f = getattr(f, part)
    except (ImportError, AttributeError) as e:
        raise InvalidParameterError(f"Cannot import {path!r}: {e}") from None
    if not callable(f):
        raise InvalidParameterError(f"{path!r} is not callable.")
    return f


def path_of(f: Callable | None) -> str:
    """The import path of a module-level function, checked to lead back to f itself. A
    function of the user's script is "__main__:name": local worker processes find it by
    running the script again (as multiprocessing does), which an interactive session has
    no file for."""
    module, name = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str) or not name or \
            "<" in name or module == "__main__" and not _main_has_source():
        raise InvalidParameterError(f"{f!r} cannot be imported by worker processes: define f at "
                                    "the top level of a module or script (not a lambda, a nested "
                                    "function or an interactive session) and pass it or its path "
                                    "'package.module:function'.")
    path = f"{module}:{name}"
    if load(path) is not f:
        raise InvalidParameterError(f"{path!r} does not import as the same function.")
    return path


def _main_has_source() -> bool:
    main = sys.modules.get("__main__")
    return getattr(main, "__file__", None) is not None or \
        getattr(getattr(main, "__spec__", None), "name", None) is not None
