"""Declarative constraints on arguments, in the manner of scikit-learn's
``_parameter_constraints``: a class states what each of its arguments may be as data, and
``validate`` checks a call's arguments against it, raising ``InvalidParameterError`` (a
ValueError and a TypeError) whose message names the argument, what it must be and what it
got. The one-argument checks every layer uses (``ffcode.checks``) are these constraints.

An argument's entry is a constraint, or a tuple of them of which the value must satisfy
one; ``None`` in the tuple allows None. The constraints:

- ``Interval(Integral, low, high, closed=...)``, ``Interval(Real, ...)``: a number from low
  to high (None: unbounded; ``closed`` says which ends belong, "both" by default); bools
  are refused, numpy's integers and floats taken, the value converted to int or float
  (an unbounded real end that is closed takes the infinity, as in seconds' inf);
- ``Options(values)``: one of these values (a bool matches only a bool);
- ``Boolean()``: True or False (numpy's too), not 1 or "yes";
- ``InstanceOf(*types, what=...)``: an instance of one of the types;
- ``Callables(what=...)``: anything callable;
- ``Prime(below=2**63)``: a prime below that bound.

>>> from numbers import Integral
>>> from ffcode.constraints import Interval, Options, validate
>>> constraints = {"k": Interval(Integral, 1, None),
...                "variant": (None, Options(("big", "small")))}
>>> validate(constraints, {"k": 3, "variant": None})
{'k': 3, 'variant': None}
>>> validate(constraints, {"k": 0, "variant": "big"})
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'k' must be at least 1, not 0.
>>> validate(constraints, {"k": 2, "variant": "huge"})
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'variant' must be one of 'big', 'small'; not 'huge'.
>>> validate({"k": (None, Interval(Integral, 1, None))}, {"k": "2"})
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'k' must be None or an integer at least 1, not str.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Optional, Union

import numpy as np

from ffcode.errors import InvalidParameterError

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # deterministic below 3.3e24
_BOOLS = (bool, np.bool_)
_CLOSED = ("both", "left", "right", "neither")


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


def refuse(name: str, what: str, got: str, separator: str = ", ") -> InvalidParameterError:
    """The error for argument ``name``: "Argument 'name' must be <what>, not <got>."."""
    return InvalidParameterError(f"Argument {name!r} must be {what}{separator}not {got}.")


class Refusal(NamedTuple):
    """Why a value does not satisfy a constraint: what it must be, what it is, and whether
    its type is wrong (rather than its value)."""
    what: str
    got: str
    wrong_type: bool


class Constraint:
    """A set of values an argument may take: ``refusal(value)`` says why a value is not one
    (None when it is), ``convert`` gives an accepted value as the caller keeps it, and
    ``str()`` describes the set (where a message names several)."""
    separator = ", "        # between what the value must be and what it got

    def refusal(self, value: Any) -> Optional[Refusal]:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        return value

    def accepts(self, value: Any) -> bool:
        return self.refusal(value) is None

    def check(self, value: Any, name: str) -> Any:
        """The value, converted, if it satisfies this constraint; else InvalidParameterError
        naming ``name``."""
        refused = self.refusal(value)
        if refused is not None:
            raise refuse(name, refused.what, refused.got, self.separator)
        return self.convert(value)

    def __str__(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self}>"


class Default(Constraint):
    """None (an option left to its default), or what ``inner`` takes: a refusal is inner's
    own, as None is not an option one chooses."""

    def __init__(self, inner: Constraint) -> None:
        self.inner = inner
        self.separator = inner.separator

    def refusal(self, value: Any) -> Optional[Refusal]:
        return None if value is None else self.inner.refusal(value)

    def convert(self, value: Any) -> Any:
        return None if value is None else self.inner.convert(value)

    def __str__(self) -> str:
        return str(self.inner)


class Interval(Constraint):
    """An integer (``kind`` numbers.Integral) or a real number (numbers.Real) from low to
    high; ``closed`` says which ends belong to it ("both", "left", "right" or "neither"),
    and for an unbounded real end whether the infinity does. ``what`` names the kind in
    messages ("an integer", "a number" unless given, as "a number of seconds").

    >>> from numbers import Integral, Real
    >>> str(Interval(Integral, 0, None)), str(Interval(Real, 0, None, closed="neither"))
    ('a non-negative integer', 'a positive and finite number')
    >>> Interval(Real, 0, None, closed="right").check(float("inf"), "timeout")
    inf
    """

    def __init__(self, kind: type, low: Optional[float], high: Optional[float],
                 closed: str = "both", what: Optional[str] = None) -> None:
        if kind not in (numbers.Integral, numbers.Real):
            raise InvalidParameterError(f"Argument 'kind' must be numbers.Integral or "
                                        f"numbers.Real, not {kind!r}.")
        if closed not in _CLOSED:
            raise refuse("closed", f"one of {', '.join(map(repr, _CLOSED))}", repr(closed),
                         "; ")
        self.integral = kind is numbers.Integral
        self.kind = kind
        if self.integral:       # an open end of integers is the closed one next to it
            low = None if low is None else int(low) + (closed in ("right", "neither"))
            high = None if high is None else int(high) - (closed in ("left", "neither"))
            closed = "both"
        if low is not None and high is not None and low > high:
            raise InvalidParameterError(f"An interval's low end {low} is above its high end "
                                        f"{high}.")
        self.low, self.high, self.closed = low, high, closed
        self.what = what or ("an integer" if self.integral else "a number")

    def convert(self, value: Any) -> Any:
        if self.integral:
            return int(value)
        try:
            return float(value)
        except OverflowError:           # an integer beyond floats: as large as infinity
            return math.inf if value > 0 else -math.inf

    def refusal(self, value: Any) -> Optional[Refusal]:
        if isinstance(value, _BOOLS) or not isinstance(value, self.kind):
            return Refusal(self.what, type(value).__name__, True)
        x = self.convert(value)
        if self._inside(x):
            return None
        return Refusal(self.phrase, str(x), False)

    def _inside(self, x: Any) -> bool:
        """(An unbounded closed end takes anything, NaN too; an open one refuses NaN.)"""
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        return (left and self.low is None or (x >= low if left else x > low)) and \
            (right and self.high is None or (x <= high if right else x < high))

    @property
    def phrase(self) -> str:
        """The range in words: "at least 1", "from 1 to 8", "positive and finite", ..."""
        low, high = self.low, self.high
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.integral:
            if low is not None and high is not None:
                return f"from {low} to {high}"
            if low is not None:
                return "non-negative" if low == 0 else f"at least {low}"
            return "" if high is None else f"at most {high}"
        if low is not None and high is not None and left and right:
            return f"from {low} to {high}"
        parts = []
        if low == 0 and high is None:
            parts.append("non-negative" if left else "positive")
        elif low is not None:
            parts.append(f"at least {low}" if left else f"greater than {low}")
        if high is not None:
            parts.append(f"at most {high}" if right else f"less than {high}")
        if low is None and not left or high is None and not right:
            parts.append("finite")
        return " and ".join(parts)

    def __str__(self) -> str:
        phrase = self.phrase
        if not phrase:
            return self.what
        if set(phrase.split(" and ")) <= {"non-negative", "positive", "finite"}:  # adjectives
            noun = self.what.split(" ", 1)[1] if self.what.startswith(("a ", "an ")) \
                else self.what
            return f"a {phrase} {noun}"
        return f"{self.what} {phrase}"


class Options(Constraint):
    """One of ``values`` (strings are named by their text, as an enum of strings is; a bool
    matches only a bool, not 1 or 0).

    >>> Options(("local", "ray")).check("ray", "engine")
    'ray'
    """
    separator = "; "        # the options are listed with commas

    def __init__(self, values: Iterable[Any]) -> None:
        self.values = tuple(values)

    def refusal(self, value: Any) -> Optional[Refusal]:
        if isinstance(value, np.ndarray) or not any(_same(value, v) for v in self.values):
            kin = any(_same_type(value, v) for v in self.values)     # a wrong value of it
            return Refusal(str(self), repr(value), not kin)
        return None

    def __str__(self) -> str:
        shown = (repr(str(v)) if isinstance(v, str) else repr(v) for v in self.values)
        return f"one of {', '.join(shown)}"


def _same(value: Any, option: Any) -> bool:
    return _same_type(value, option) and bool(value == option)


def _same_type(value: Any, option: Any) -> bool:
    """Whether value could be option: both bools, both other numbers, or one's type the
    other's (as a string and a member of an enum of strings)."""
    if isinstance(value, _BOOLS) or isinstance(option, _BOOLS):
        return isinstance(value, _BOOLS) and isinstance(option, _BOOLS)
    return isinstance(value, numbers.Number) and isinstance(option, numbers.Number) or \
        isinstance(value, type(option)) or isinstance(option, type(value))


class Boolean(Constraint):
    """True or False (numpy's bools too), converted to a bool; 1 and "yes" are refused."""

    def refusal(self, value: Any) -> Optional[Refusal]:
        return None if isinstance(value, _BOOLS) else Refusal(str(self), repr(value), True)

    def convert(self, value: Any) -> bool:
        return bool(value)

    def __str__(self) -> str:
        return "True or False"


class InstanceOf(Constraint):
    """An instance of one of ``types``; ``what`` names them in messages (by default "a"
    and the type's name)."""

    def __init__(self, *types: type, what: Optional[str] = None) -> None:
        if not types:
            raise InvalidParameterError("InstanceOf needs at least one type.")
        self.types = types
        self.what = what or " or ".join(_article(t.__name__) for t in types)

    def refusal(self, value: Any) -> Optional[Refusal]:
        if isinstance(value, self.types):
            return None
        return Refusal(self.what, type(value).__name__, True)

    def __str__(self) -> str:
        return self.what


class Callables(Constraint):
    """Anything callable; ``what`` says how it is called, in messages (as "callable as
    f(F, X)")."""

    def __init__(self, what: str = "callable") -> None:
        self.what = what

    def refusal(self, value: Any) -> Optional[Refusal]:
        return None if callable(value) else Refusal(self.what, type(value).__name__, True)

    def __str__(self) -> str:
        return self.what


class Prime(Constraint):
    """A prime p with 2 <= p < ``below``, as an int.

    >>> Prime().check(65521, "p")
    65521
    >>> Prime().check(65520, "p")
    Traceback (most recent call last):
    ...
    ffcode.errors.InvalidParameterError: Argument 'p' must be prime, not 65520.
    """

    def __init__(self, below: int = 2**63) -> None:
        self.below = below
        self._integer = Interval(numbers.Integral, None, None)

    def refusal(self, value: Any) -> Optional[Refusal]:
        refused = self._integer.refusal(value)
        if refused is not None:
            return refused
        p = int(value)
        if not 2 <= p < self.below:
            return Refusal(f"in [2, {_power(self.below)})", str(p), False)
        return None if is_prime(p) else Refusal("prime", str(p), False)

    def convert(self, value: Any) -> int:
        return int(value)

    def __str__(self) -> str:
        return f"a prime below {_power(self.below)}"


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _power(n: int) -> str:
    """n, a power of two above 1024 as 2**e."""
    return f"2**{n.bit_length() - 1}" if n > 1024 and n & (n - 1) == 0 else str(n)


Spec = Union[Constraint, None, Sequence[Optional[Constraint]]]


def check(spec: Spec, value: Any, name: str) -> Any:
    """The value of argument ``name``, converted, if it satisfies its entry ``spec`` (a
    constraint, or a tuple of them and None of which it must satisfy one); else
    InvalidParameterError. A value refused by all of them is told what the one constraint
    that takes its type needs (the most precise message); a value of no type they take,
    all that it may be."""
    if isinstance(spec, Constraint):        # one constraint: the common case, at once
        return spec.check(value, name)
    options = tuple(spec) if isinstance(spec, Sequence) else (spec,)
    if value is None and any(c is None for c in options):
        return None
    constraints = [c for c in options if c is not None]
    if len(options) == 1 and constraints:
        return constraints[0].check(value, name)
    refusals = []
    for c in constraints:
        refused = c.refusal(value)
        if refused is None:
            return c.convert(value)
        refusals.append((c, refused))
    for c, refused in refusals:
        if not refused.wrong_type:      # the value's type is this one's: say what it lacks
            raise refuse(name, refused.what, refused.got, c.separator)
    what = [str(c) for c in options]
    lists = any(c.separator != Constraint.separator for c in constraints)   # options' commas
    separator = "; " if lists else Constraint.separator
    raise refuse(name, " or ".join(what) if len(what) < 3 else
                 f"{', '.join(what[:-1])} or {what[-1]}", type(value).__name__, separator)


def validate(constraints: Mapping[str, Spec], values: Mapping[str, Any]) -> dict[str, Any]:
    """Each of ``values`` (argument name to value) checked against its entry in
    ``constraints`` (``check``) and converted, in the order of ``values``: the first value
    refused raises InvalidParameterError. Every value needs an entry (KeyError otherwise:
    a constraint not declared is the caller's slip, not its caller's)."""
    checked = {}
    for name, value in values.items():
        if name not in constraints:
            raise KeyError(f"no constraint is declared for argument {name!r}")
        checked[name] = check(constraints[name], value, name)
    return checked
