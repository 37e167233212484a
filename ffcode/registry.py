"""``Registry``: names for the things a user may add to ffcode (schemes, codes, engines),
the built-in ones first and kept, one's own added and removed by name, thread-safe; every
refusal an InvalidParameterError naming what is wrong.

>>> colours = Registry("colour", {"red": 1})
>>> colours.add("blue", 2)
2
>>> colours.names(), colours.get("blue")
(('red', 'blue'), 2)
>>> colours.add("blue", 3)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: There is a colour named 'blue' already: give it another name (or unregister that one first).
>>> colours.remove("red")
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: The built-in colour 'red' cannot be unregistered.
"""
from __future__ import annotations

import threading
from typing import Generic, Mapping, Optional, TypeVar

from ffcode.errors import InvalidParameterError

T = TypeVar("T")


class Registry(Generic[T]):
    """The ``what``s by name: ``built_in`` ones, then those added, in order."""

    def __init__(self, what: str, built_in: Mapping[str, T]) -> None:
        self.what, self.built_in = what, tuple(built_in)
        self._items: dict[str, T] = dict(built_in)
        self._lock = threading.Lock()

    def add(self, name: str, item: T, replace: bool = False) -> T:
        """Register ``item`` as ``name`` (``replace``: over one's own of that name)."""
        with self._lock:
            if name in self.built_in or name in self._items and not replace:
                raise InvalidParameterError(
                    f"There is a {self.what} named {name!r} already: give it another name "
                    f"(or unregister that one first).")
            self._items[name] = item
        return item

    def remove(self, name: str) -> None:
        """Forget the one registered as ``name`` (a built-in one stays)."""
        with self._lock:
            if name in self.built_in:
                raise InvalidParameterError(
                    f"The built-in {self.what} {name!r} cannot be unregistered.")
            if name not in self._items:
                raise InvalidParameterError(f"No {self.what} is registered as {name!r}.")
            del self._items[name]

    def keep(self) -> None:
        """Make every one registered so far built-in (for a registry filled by its module
        as it loads)."""
        with self._lock:
            self.built_in = tuple(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def get(self, name: str) -> Optional[T]:
        return self._items.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

    def items(self) -> tuple[T, ...]:
        return tuple(self._items.values())
