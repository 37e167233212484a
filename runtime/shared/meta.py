"""The checks of a wire meta frame's fields, as a worker reads a task (and a master a
worker's answer): each value of the type and range it must have, or ProtocolError naming
the field. Nothing that comes over the network is trusted, not even from the master.

>>> count(3, "pieces", low=1), optional(None, "seeds", count)
(3, None)
>>> count(True, "pieces")
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's pieces must be an integer from 0 to 4294967296, not True
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, TypeVar

from ffcode.errors import ProtocolError

MAX_COUNT = 1 << 32             # packets, shares, pieces: the wire numbers packets in 32 bits
T = TypeVar("T")


def fields(meta: Any, what: str, cls: Any) -> dict:
    """meta as a dict with exactly the fields of the dataclass cls."""
    names = _FIELDS.get(cls)
    if names is None:                   # a ClassVar (KIND) is none
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    if not isinstance(meta, dict) or meta.keys() != names:
        keys = sorted(meta) if isinstance(meta, dict) else type(meta).__name__
        raise ProtocolError(f"a {what} needs the fields {sorted(names)}, not {keys}")
    return meta


_FIELDS: dict = {}      # a dataclass -> its fields' names


def count(value: Any, name: str, high: int = MAX_COUNT, low: int = 0) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ProtocolError(f"a task's {name} must be an integer from {low} to {high}, "
                            f"not {value!r}")
    return value


def signed(value: Any, name: str) -> int:
    if type(value) is not int or not -MAX_COUNT <= value <= MAX_COUNT:
        raise ProtocolError(f"a task's {name} must be an integer from {-MAX_COUNT} to "
                            f"{MAX_COUNT}, not {value!r}")
    return value


def number(value: Any, name: str, low: float = 0.0) -> float:
    if type(value) not in (int, float) or not low <= value < math.inf:
        raise ProtocolError(f"a task's {name} must be a finite number >= {low}, not "
                            f"{value!r}")
    return float(value)


def rate(value: Any, name: str) -> float:
    checked = number(value, name)
    if checked == 0:
        raise ProtocolError(f"a task's {name} must be positive")
    return checked


def choice(value: Any, name: str, choices: tuple) -> Any:
    if not isinstance(value, str) or value not in choices:
        raise ProtocolError(f"a task's {name} must be one of {choices}, not {value!r}")
    return value


def flag(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise ProtocolError(f"a task's {name} must be true or false, not {value!r}")
    return value


def text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"a task's {name} must be a string, not {value!r}")
    return value


def path(value: Any, name: str) -> str:
    """An import path "module:attribute" (a function's, a kind's)."""
    if not isinstance(value, str) or ":" not in value:
        raise ProtocolError(f"a task's {name} must be an import path, not {value!r}")
    return value


def listed(value: Any, name: str, length: Optional[int] = None) -> list:
    if not isinstance(value, list) or len(value) > MAX_COUNT or \
            length is not None and len(value) != length:
        raise ProtocolError(f"a task's {name} must be a list" +
                            (f" of {length}" if length is not None else ""))
    return value


def mapping(value: Any, name: str) -> dict:
    if not isinstance(value, dict):
        raise ProtocolError(f"a task's {name} must be an object")
    return value


def optional(value: Any, name: str, check: Callable[..., T]) -> Optional[T]:
    return None if value is None else check(value, name)
