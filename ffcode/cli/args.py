"""The argument types every command shares: argparse ``type=`` functions that read a flag's
text and let ffcode.checks judge its value, so that a bad value is refused by the command's
parser ('argument --n: must be at least 1, not 0') before anything runs; and the checks of
one flag against another that several commands make once all are parsed.

>>> from ffcode.cli.args import integer, int_expression, seconds
>>> int_expression("2**61-1") == 2**61 - 1
True
>>> integer(low=1)("2**4")
16
>>> integer(low=1)("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be at least 1, not 0
>>> seconds("1.5")
1.5
>>> seconds("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be a positive number of seconds, not 0
"""
import argparse
import re
from typing import Callable, Optional

from ffcode import checks

# -- argument types ----------------------------------------------------------------------------

_TERM = re.compile(r"\s*([+-])?\s*(\d+)(?:\s*\*\*\s*(\d+))?\s*")
_MAX_EXPONENT = 4096                        # 2**4096 still parses in no time


def int_expression(text: str) -> int:
    """An integer written as a sum of terms INT or INT**INT ("2**61-1", "2**31 - 1",
    "65521"), parsed without eval; exponents up to 4096.

    >>> int_expression("2**10 + 2**3 - 1")
    1031
    """
    _text(text)
    total, at = 0, 0
    while True:
        match = _TERM.match(text, at)
        if not match or (at and not match.group(1)):    # terms after the first need a sign
            raise argparse.ArgumentTypeError(f"not an integer like 65521 or 2**61-1: {text!r}")
        sign, base, exponent = match.groups()
        if exponent is not None and int(exponent) > _MAX_EXPONENT:
            raise argparse.ArgumentTypeError(f"exponent {exponent} too large in {text!r}")
        term = int(base) ** int(exponent) if exponent is not None else int(base)
        total += -term if sign == "-" else term
        at = match.end()
        if at == len(text):
            return total


def integer(low: Optional[int] = None, high: Optional[int] = None) -> Callable[[str], int]:
    """The type of an integer flag (an ``int_expression``) from low to high; either bound may
    be left out.

    >>> integer(low=0, high=9)("10")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be from 0 to 9, not 10
    """
    low = None if low is None else checks.integer(low, "low")
    high = None if high is None else checks.integer(high, "high", low=low)
    if low is not None and high is not None:
        bounds = f"from {low} to {high}"
    else:
        bounds = f"at least {low}" if high is None else f"at most {high}"

    def parse(text: str) -> int:
        value = int_expression(text)
        try:
            return checks.integer(value, "value", low=low, high=high)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {value}") from None
    parse.__name__ = "integer"              # argparse names the type in its own messages
    return parse


def positive(unit: str = "") -> Callable[[str], float]:
    """The type of a positive finite number (of ``unit``).

    >>> positive("MiB")("0.5")
    0.5
    >>> positive("MiB")("inf")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a positive number of MiB, not inf
    """
    return _real(checks.positive, unit, "must be a positive number{of}, not {text}")


def non_negative(unit: str = "") -> Callable[[str], float]:
    """The type of a finite number >= 0 (of ``unit``).

    >>> non_negative("seconds")("0")
    0.0
    >>> non_negative("seconds")("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number of seconds >= 0, not '-1'
    """
    return _real(checks.non_negative, unit, "must be a number{of} >= 0, not {text!r}")


def seconds(text: str) -> float:
    """The type of a positive finite number of seconds.

    >>> seconds("x")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: not a number of seconds: 'x'
    """
    return positive("seconds")(text)


# -- checks of parsed arguments ----------------------------------------------------------------

def argument_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """parser, if it is an argparse parser (what a command adds its flags to)."""
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"Argument 'parser' must be an argparse.ArgumentParser, not "
                        f"{type(parser).__name__}.")
    return parser


def namespace(args: argparse.Namespace) -> argparse.Namespace:
    """args, if it is what a parser parsed (a command's functions take nothing else).

    >>> namespace({"n": 8})
    Traceback (most recent call last):
    ...
    TypeError: Argument 'args' must be an argparse.Namespace, not dict.
    """
    if not isinstance(args, argparse.Namespace):
        raise TypeError(f"Argument 'args' must be an argparse.Namespace, not "
                        f"{type(args).__name__}.")
    return args


def check_stragglers(count: int, workers: int) -> int:
    """--stragglers K, checked against --workers N once both are parsed: from 0 to N.

    >>> check_stragglers(5, 4)
    Traceback (most recent call last):
    ...
    ValueError: --stragglers must be between 0 and --workers (4), not 5
    """
    workers = checks.integer(workers, "workers", low=0)
    try:
        return checks.integer(count, "stragglers", low=0, high=workers)
    except ValueError:
        raise ValueError(f"--stragglers must be between 0 and --workers ({workers}), not "
                         f"{count}") from None


def _real(check, unit, refusal: str) -> Callable[[str], float]:
    """The type of a number that check (one of ffcode.checks) accepts; refusal, formatted
    with ``of`` (the unit) and ``text``, is the message for one it refuses."""
    of = _of(unit)

    def parse(text: str) -> float:
        try:
            return check(_number(text, of), "value")
        except ValueError:
            raise argparse.ArgumentTypeError(refusal.format(of=of, text=text)) from None
    parse.__name__ = "number"               # argparse names the type in its own messages
    return parse


def _text(value, name: str = "text") -> str:
    if not isinstance(value, str):
        raise TypeError(f"Argument {name!r} must be a str, not {type(value).__name__}.")
    return value


def _of(unit) -> str:
    return f" of {unit}" if _text(unit, "unit") else ""


def _number(text: str, of: str) -> float:
    """text as a float; ArgumentTypeError (not ValueError, which checks may raise too) for
    text that is no number."""
    try:
        return float(_text(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number{of}: {text!r}") from None
