"""ffcode.constraints (declared constraints on arguments) and ffcode.checks built on them: each
constraint accepts what it describes and converts it, refuses the rest with an
InvalidParameterError (an FFCodeError, a ValueError and a TypeError) naming the argument, what
it must be and what it got; validate checks a call's arguments against a class's declaration."""
import math
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
import pytest

import ffcode
from ffcode import allocation, checks, constraints, functions
from ffcode.constraints import (Boolean, Callables, InstanceOf, Interval, Options, Prime, check,
                                validate)
from ffcode.errors import InvalidParameterError


def refused(constraint, value, message, name="x"):
    """The constraint refuses value with exactly this message, as every kind of error."""
    for caught in (InvalidParameterError, ffcode.FFCodeError, ValueError, TypeError):
        with pytest.raises(caught) as info:
            check(constraint, value, name)
        assert str(info.value) == message
    assert not getattr(constraint, "accepts", lambda v: False)(value)


def test_the_error_is_every_kind_a_caller_catches():
    assert issubclass(InvalidParameterError, ffcode.FFCodeError)
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)
    assert ffcode.InvalidParameterError is InvalidParameterError
    assert "InvalidParameterError" in ffcode.__all__


# -- integers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3), np.int32(3), 2**70])
def test_integer_accepts_integers_numpy_ones_too_as_int(value):
    got = Interval(Integral, 1, None).check(value, "k")     # Python's ints of any size
    assert got == int(value) and type(got) is int


@pytest.mark.parametrize("value,name", [(True, "bool"), (False, "bool"), (np.True_, "bool"),
                                        (3.0, "float"), (np.float64(3), "float64"),
                                        ("3", "str"), (None, "NoneType"), ([3], "list"),
                                        (Fraction(3), "Fraction")])
def test_integer_refuses_bools_and_non_integers_by_type(value, name):
    refused(Interval(Integral, 1, None), value, f"Argument 'x' must be an integer, not {name}.")


@pytest.mark.parametrize("low,high,closed,value,message", [
    (1, None, "both", 0, "at least 1, not 0"),
    (0, None, "both", -1, "non-negative, not -1"),
    (None, 5, "both", 6, "at most 5, not 6"),
    (1, 5, "both", 9, "from 1 to 5, not 9"),
    (0, None, "neither", 0, "at least 1, not 0"),         # open ends of integers: the next one
    (0, 5, "neither", 5, "from 1 to 4, not 5"),
    (0, 5, "left", 5, "from 0 to 4, not 5"),
    (0, 5, "right", 0, "from 1 to 5, not 0"),
])
def test_integer_ranges(low, high, closed, value, message):
    interval = Interval(Integral, low, high, closed)
    refused(interval, value, f"Argument 'x' must be {message}.")
    inside = [v for v in range(-3, 10) if interval.accepts(v)]
    assert inside == [v for v in range(-3, 10) if (low is None or v >= low + (closed in (
        "right", "neither"))) and (high is None or v <= high - (closed in ("left", "neither")))]


def test_integer_intervals_describe_themselves():
    assert str(Interval(Integral, 1, None)) == "an integer at least 1"
    assert str(Interval(Integral, 0, None)) == "a non-negative integer"
    assert str(Interval(Integral, 1, 8)) == "an integer from 1 to 8"
    assert str(Interval(Integral, None, 8)) == "an integer at most 8"
    assert str(Interval(Integral, None, None)) == "an integer"


# -- real numbers -----------------------------------------------------------------------------

def test_real_intervals_and_infinity():
    """An unbounded open end refuses its infinity, a closed one takes it; NaN only where
    nothing is asked."""
    positive = Interval(Real, 0, None, closed="neither")
    assert positive.check(np.float32(0.5), "t") == 0.5 and positive.check(2, "t") == 2.0
    assert type(positive.check(2, "t")) is float
    refused(positive, 0, "Argument 'x' must be positive and finite, not 0.0.")
    refused(positive, math.inf, "Argument 'x' must be positive and finite, not inf.")
    refused(positive, math.nan, "Argument 'x' must be positive and finite, not nan.")
    refused(positive, True, "Argument 'x' must be a number, not bool.")
    refused(positive, "1", "Argument 'x' must be a number, not str.")
    duration = Interval(Real, 0, None, closed="right", what="a number of seconds")
    assert duration.check(math.inf, "t") == math.inf
    assert duration.check(10**400, "t") == math.inf      # an int beyond floats: infinite
    refused(duration, -1, "Argument 'x' must be positive, not -1.0.")
    refused(duration, None, "Argument 'x' must be a number of seconds, not NoneType.")
    anything = Interval(Real, None, None)
    assert math.isnan(anything.check(math.nan, "x")) and anything.check(-math.inf, "x") < 0
    refused(Interval(Real, None, None, "neither"), math.inf,
            "Argument 'x' must be finite, not inf.")
    refused(Interval(Real, 0, 1, "left"), 1, "Argument 'x' must be at least 0 and less than 1, "
                                             "not 1.0.")
    refused(Interval(Real, 0, 1), 2, "Argument 'x' must be from 0 to 1, not 2.0.")
    refused(Interval(Real, 0.5, None, "neither"), 0.5,
            "Argument 'x' must be greater than 0.5 and finite, not 0.5.")


def test_real_intervals_describe_themselves():
    assert str(Interval(Real, 0, None, "neither")) == "a positive and finite number"
    assert str(Interval(Real, 0, None, "left")) == "a non-negative and finite number"
    assert str(Interval(Real, 0, None, "right", what="a number of seconds")) == \
        "a positive number of seconds"
    assert str(Interval(Real, 0, 1, "left")) == "a number at least 0 and less than 1"
    assert str(Interval(Real, None, None)) == "a number"


def test_an_interval_is_declared_right():
    with pytest.raises(InvalidParameterError, match="numbers.Integral or numbers.Real"):
        Interval(int, 0, None)
    with pytest.raises(InvalidParameterError, match="'closed' must be one of 'both', 'left', "
                                                    "'right', 'neither'; not 'open'"):
        Interval(Integral, 0, None, closed="open")
    with pytest.raises(InvalidParameterError, match="low end 5 is above its high end 1"):
        Interval(Integral, 5, 1)


# -- the other constraints --------------------------------------------------------------------

def test_options():
    engines = Options(("local", "ray"))
    assert engines.check("ray", "engine") == "ray"
    assert engines.check(np.str_("local"), "engine") == "local"
    refused(engines, "spark", "Argument 'x' must be one of 'local', 'ray'; not 'spark'.")
    refused(engines, np.array(["ray"]), "Argument 'x' must be one of 'local', 'ray'; not "
                                        "array(['ray'], dtype='<U3').")
    verify = Options((True, False, "auto"))
    assert verify.check(np.True_, "verify") is np.True_ and verify.check("auto", "v") == "auto"
    refused(verify, 1, "Argument 'x' must be one of True, False, 'auto'; not 1.")
    refused(Options(("a", "b")), True, "Argument 'x' must be one of 'a', 'b'; not True.")
    assert Options((1, 2)).check(np.int64(2), "n") == 2        # numbers compare as numbers


def test_boolean():
    assert Boolean().check(np.False_, "flag") is False
    assert Boolean().check(True, "flag") is True
    for value in (1, 0, "yes", None):
        refused(Boolean(), value, f"Argument 'x' must be True or False, not {value!r}.")


def test_instances_and_callables():
    field = InstanceOf(ffcode.PrimeField, what="a field from ffcode.GF")
    F = ffcode.GF(7)
    assert field.check(F, "F") is F
    refused(field, 7, "Argument 'x' must be a field from ffcode.GF, not int.")
    refused(InstanceOf(int, str), 1.5, "Argument 'x' must be an int or a str, not float.")
    assert Callables().check(len, "f") is len
    refused(Callables("callable as f(F, X)"), 3, "Argument 'x' must be callable as f(F, X), "
                                                 "not int.")


def test_prime():
    assert Prime().check(np.int64(65521), "p") == 65521
    refused(Prime(), 65520, "Argument 'x' must be prime, not 65520.")
    refused(Prime(), 1, "Argument 'x' must be in [2, 2**63), not 1.")
    refused(Prime(), 2**63 + 29, f"Argument 'x' must be in [2, 2**63), not {2**63 + 29}.")
    refused(Prime(below=100), 101, "Argument 'x' must be in [2, 100), not 101.")
    refused(Prime(), 7.0, "Argument 'x' must be an integer, not float.")
    refused(Prime(), True, "Argument 'x' must be an integer, not bool.")
    assert str(Prime()) == "a prime below 2**63"


# -- several constraints, None, validate ------------------------------------------------------

def test_none_is_allowed_only_where_declared():
    maybe = (None, Interval(Integral, 1, None))
    assert check(maybe, None, "k") is None and check(maybe, np.int8(4), "k") == 4
    refused(maybe, 0, "Argument 'x' must be at least 1, not 0.")     # its type's constraint
    refused(maybe, "2", "Argument 'x' must be None or an integer at least 1, not str.")
    refused(Interval(Integral, 1, None), None, "Argument 'x' must be an integer, not NoneType.")
    refused((None,), 3, "Argument 'x' must be None, not int.")


def test_a_value_of_no_declared_type_is_told_every_choice():
    spec = (Interval(Integral, 1, None), Options(("auto",)), None)
    assert check(spec, "auto", "n") == "auto" and check(spec, 2, "n") == 2
    refused(spec, [1], "Argument 'x' must be an integer at least 1, one of 'auto' or None; "
                       "not list.")
    refused(spec, "all", "Argument 'x' must be one of 'auto'; not 'all'.")
    refused(spec, -1, "Argument 'x' must be at least 1, not -1.")


def test_validate_checks_in_order_and_converts():
    declared = {"k": Interval(Integral, 1, None), "variant": (None, Options(("big", "small"))),
                "signed": Boolean()}
    assert validate(declared, {"k": np.int64(2), "signed": np.True_}) == {"k": 2, "signed": True}
    with pytest.raises(InvalidParameterError, match="^Argument 'k' must be at least 1, not 0.$"):
        validate(declared, {"k": 0, "variant": "huge"})
    with pytest.raises(InvalidParameterError, match="'variant' must be one of 'big', 'small'; "
                                                    "not 'huge'"):
        validate(declared, {"variant": "huge", "k": 0})
    with pytest.raises(KeyError, match="no constraint is declared for argument 'n'"):
        validate(declared, {"n": 1})


# -- ffcode.checks: the same constraints, one argument at a time ------------------------------

def test_checks_keep_their_messages():
    cases = [
        (lambda: checks.integer(0, "k", low=1), "Argument 'k' must be at least 1, not 0."),
        (lambda: checks.integer(2.0, "k"), "Argument 'k' must be an integer, not float."),
        (lambda: checks.integer(9, "n", low=1, high=5), "Argument 'n' must be from 1 to 5, not 9."),
        (lambda: checks.positive(0, "rate"), "Argument 'rate' must be positive and finite, "
                                             "not 0.0."),
        (lambda: checks.seconds(0.0, "timeout"), "Argument 'timeout' must be positive, not 0.0."),
        (lambda: checks.seconds("1", "timeout"), "Argument 'timeout' must be a number of "
                                                 "seconds, not str."),
        (lambda: checks.non_negative(-1, "delay"), "Argument 'delay' must be non-negative and "
                                                   "finite, not -1.0."),
        (lambda: checks.real(None, "x"), "Argument 'x' must be a number, not NoneType."),
        (lambda: checks.flag(1, "block"), "Argument 'block' must be True or False, not 1."),
        (lambda: checks.choice("x", "network", ("links", "turns")),
         "Argument 'network' must be one of 'links', 'turns'; not 'x'."),
        (lambda: checks.prime(65520, "field"), "Argument 'field' must be prime, not 65520."),
        (lambda: checks.instance(None, "faults", ffcode.PrimeField, "a field"),
         "Argument 'faults' must be a field, not NoneType."),
        (lambda: checks.function(3, "progress", "callable as progress(rank, needed)"),
         "Argument 'progress' must be callable as progress(rank, needed), not int."),
        (lambda: checks.integer_array([1.5], "x"),
         "Argument 'x' must be an array of integers, not dtype float64."),
        (lambda: checks.ndim(np.zeros((1, 1, 1)), (1, 2), "x"),
         "Argument 'x' must be 1-D or 2-D, not 3-D (shape (1, 1, 1))."),
    ]
    for call, message in cases:
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert str(info.value) == message


def test_checks_accept_what_they_did():
    assert checks.integer(np.int64(7), "k", low=1) == 7
    assert checks.seconds(math.inf, "timeout") == math.inf
    assert checks.choice("ray", "engine", {"local": 1, "ray": 2}) == "ray"
    assert checks.flag(np.True_, "coded") is True
    assert checks.prime(np.int64(7), "p") == 7
    assert checks.is_prime(2**61 - 1) and not checks.is_prime(2**61 + 1)
    assert checks.is_prime is constraints.is_prime


def test_the_core_raises_it_for_bad_arguments():
    """Beyond the codes (tests/codes/test_invalid_parameters.py): the field, its elements,
    packets, allocation and function paths."""
    F = ffcode.GF(7)
    for call in (lambda: ffcode.GF(8), lambda: ffcode.GF(7.0), lambda: F.add([9], [1]),
                 lambda: F.add([1.0], [1]), lambda: F.matmul([[1, 2]], [[1, 2]]),
                 lambda: ffcode.piece_packets(F, [[1]], 0, 0),
                 lambda: functions.load("nowhere"),
                 lambda: allocation.proportional(3, [1, -1, 1])):
        with pytest.raises(InvalidParameterError):
            call()


def test_default_takes_none_and_refuses_as_its_inner_constraint():
    """None leaves an option to its default; a refusal names only what one may choose."""
    from ffcode.constraints import Default
    pieces = Default(Interval(Integral, 1, None))
    assert pieces.check(None, "pieces") is None and pieces.check(np.int64(3), "pieces") == 3
    with pytest.raises(InvalidParameterError, match=r"^Argument 'pieces' must be at least 1, "
                                                    r"not 0\.$"):
        pieces.check(0, "pieces")
