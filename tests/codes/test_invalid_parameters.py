"""Bad arguments to every code's constructor raise ffcode.InvalidParameterError, which
``except ffcode.FFCodeError``, ``except ValueError`` and ``except TypeError`` all catch; each
code declares its arguments' constraints as data (``_parameter_constraints``), for arguments of
its own signature."""
import inspect

import numpy as np
import pytest

import ffcode
from ffcode import (GASP, LCC, MDS, EntangledPolynomialCode, HierarchicalCode, MatDot,
                    PolynomialCode, ProductCode)
from ffcode.codes.base import Code
from ffcode.constraints import Constraint

F = ffcode.GF(65521)
CODES = [Code, ProductCode, MDS, PolynomialCode, MatDot, EntangledPolynomialCode, GASP, LCC,
         HierarchicalCode]


def square(F, X):
    return F.mul(X, X)


# (what is built, its arguments, what the message says)
BAD = [
    ("MDS", lambda: MDS(65521, 2, 4), "'F' must be a field from ffcode.GF, not int"),
    ("MDS", lambda: MDS(F, 0, 4), "'k' must be at least 1, not 0"),
    ("MDS", lambda: MDS(F, 2.0, 4), "'k' must be an integer, not float"),
    ("MDS", lambda: MDS(F, True, 4), "'k' must be an integer, not bool"),
    ("MDS", lambda: MDS(F, 2, None), "'n_workers' must be an integer, not NoneType"),
    ("MDS", lambda: MDS(F, 2, 0), "'n_workers' must be at least 1, not 0"),
    ("MDS", lambda: MDS(F, 3, 2), "needs results from 3 workers"),
    ("MDS", lambda: MDS(F, 2, 4, signed=1), "'signed' must be True or False, not 1"),
    ("MDS", lambda: MDS(F, 2, 4, points=[1, 2, 3, 3]), "distinct"),
    ("MDS", lambda: MDS(ffcode.GF(5), 2, 5), r"GF\(5\) is too small"),
    ("PolynomialCode", lambda: PolynomialCode(F, 2, "2", 4), "'b' must be an integer, not str"),
    ("PolynomialCode", lambda: PolynomialCode(F, -1, 2, 4), "'a' must be at least 1, not -1"),
    ("PolynomialCode", lambda: PolynomialCode(F, 2, 2, 3), "recovery threshold"),
    ("MatDot", lambda: MatDot(F, 0, 4), "'s' must be at least 1, not 0"),
    ("MatDot", lambda: MatDot(F, 2, 4, signed="yes"), "'signed' must be True or False"),
    ("EntangledPolynomialCode", lambda: EntangledPolynomialCode(F, 2, 0, 1, 9),
     "'m' must be at least 1, not 0"),
    ("EntangledPolynomialCode", lambda: EntangledPolynomialCode(F, 2, 2, 1, 4),
     r"needs results from R = p\*m\*n \+ p - 1 = 5 workers"),
    ("GASP", lambda: GASP(F, 2, 2, 0, 9), "'t' must be at least 1, not 0"),
    ("GASP", lambda: GASP(F, 2, 2, 1, 9, variant="tiny"),
     "'variant' must be one of 'big', 'small'; not 'tiny'"),
    ("GASP", lambda: GASP(F, 2, 2, 1, 9, variant=2),
     "'variant' must be None or one of 'big', 'small'; not int"),
    ("GASP", lambda: GASP(F, 2, 2, 1, 7), "needs results from R = 8"),
    ("LCC", lambda: LCC(F, 2, -1, square, 2, 8), "'t' must be non-negative, not -1"),
    ("LCC", lambda: LCC(F, 2, 1, square, 0, 8), "'degree' must be at least 1, not 0"),
    ("LCC", lambda: LCC(F, 2, 1, 3, 2, 8), r"'f' must be callable as f\(F, X\) or an import "
                                           r"path, not int"),
    ("LCC", lambda: LCC(F, 2, 1, "nowhere", 2, 8), "'package.module:function'"),
    ("LCC", lambda: LCC(F, 2, 1, square, 2, 8, result_bound=3),
     r"'result_bound' must be None or callable as result_bound\(M\), not int"),
    ("LCC", lambda: LCC(F, 2, 1, square, 2, 8, signed=True), r"needs result_bound\(M\)"),
    ("LCC", lambda: LCC(F, 2, 1, square, 2, 8, row_linear="no"),
     "'row_linear' must be True or False, not 'no'"),
    ("LCC", lambda: LCC(F, 2, 1, square, 2, 8, arguments="w"), "sequence of names"),
    ("LCC", lambda: LCC(F, 2, 1, square, 2, 8, betas=[10, 11]), r"k \+ t = 3"),
    ("ProductCode", lambda: ProductCode(F, 4, [[0], [-1]]), "'a_exponents' must be non-negative"),
    ("ProductCode", lambda: ProductCode(F, 4, [[0], [1]], signed=None),
     "'signed' must be True or False, not None"),
    ("ProductCode", lambda: ProductCode(F, 4, [[0, 1]], [[0, 2]]), "must match"),
    ("HierarchicalCode", lambda: HierarchicalCode(MDS(F, 2, 3), LCC(F, 1, 0, square, 1, 2)),
     "'inner' must be a code of matrix products .* not LCC"),
    ("HierarchicalCode", lambda: HierarchicalCode(None, MDS(F, 2, 3)),
     "'outer' must be a code of matrix products .* not NoneType"),
    ("HierarchicalCode", lambda: HierarchicalCode(MDS(F, 2, 3), MDS(ffcode.GF(7), 2, 3)),
     r"field GF\(7\) is not the outer code's GF\(65521\)"),
    ("HierarchicalCode", lambda: HierarchicalCode(MDS(F, 2, 3), MatDot(F, 2, 3)),
     "leaves x to the job"),
]


@pytest.mark.parametrize("build,match", [(build, match) for _, build, match in BAD],
                         ids=[f"{name}-{i}" for i, (name, _, _) in enumerate(BAD)])
def test_bad_arguments_raise_invalid_parameter_error(build, match):
    for caught in (ffcode.InvalidParameterError, ffcode.FFCodeError, ValueError, TypeError):
        with pytest.raises(caught, match=match):
            build()


def test_good_arguments_still_build_converted():
    """numpy's integers and bools are taken, and kept as Python's."""
    code = GASP(F, np.int64(2), np.int32(2), np.uint8(1), np.int16(9), signed=np.False_)
    assert (code.k, code.l, code.t, code.n_workers) == (2, 2, 1, 9) and code.signed is False
    assert all(type(v) is int for v in (code.k, code.l, code.t, code.n_workers))
    lcc = LCC(F, np.int64(2), np.int64(0), square, np.int64(2), 4, row_linear=False)
    assert (lcc.k, lcc.t, lcc.degree, lcc.recovery_threshold) == (2, 0, 2, 3)
    assert type(MDS(F, np.int64(2), 3).k) is int


@pytest.mark.parametrize("cls", CODES, ids=lambda cls: cls.__name__)
def test_each_code_declares_its_own_arguments(cls):
    """The declaration names only arguments of the constructor, each a constraint or a tuple
    of constraints and None."""
    declared = cls._parameter_constraints
    assert declared
    assert set(declared) <= set(inspect.signature(cls.__init__).parameters)
    for spec in declared.values():
        options = spec if isinstance(spec, tuple) else (spec,)
        assert all(c is None or isinstance(c, Constraint) for c in options)


def test_a_bad_description_raises_it_too():
    """A ProductCode from a description (as it comes from the network)."""
    description = MDS(F, 2, 3).description()
    for bad in ({**description, "signed": 1}, {**description, "a_masks": None}, {}):
        with pytest.raises(ffcode.InvalidParameterError):
            ProductCode.from_description(F, bad)
