"""The codes by name: one registry that the command line (``ffcode run --code``), the
experiments and ffcode.learn (``coding=``) name and build codes through, so that a new code
is one registration.

A code is registered with a factory ``factory(F, n_workers, **params)``, a description,
the job it computes (``"matmul"``: C = A @ B, inputs (A, B); ``"matvec"``: y = A @ x,
inputs (A, x), what ffcode.learn's products take; ``"lcc"``: f of k blocks, inputs
(blocks,)), its parameters with their defaults (the command line's flags: a, b, s, k, t,
f, degree, row_linear) and, optionally, its recovery threshold as a function of them
(checked before any code is made). A privacy ``t`` counts shares: a worker holding W
shares is given t * W by the command line. Keywords beyond the parameters (``signed=True``,
``points=...``) go to the factory as given.

>>> from ffcode import GF
>>> code = make_code("matdot", GF(65521), 5, s=3)
>>> code, threshold("matdot", s=3)
(MatDot(GF(65521), n_workers=5, recovery_threshold=5), 5)
>>> code_names("matmul")
['polynomial', 'matdot', 'entangled', 'gasp']
>>> code_entry("rs", job="matvec")
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'name' must be one of 'mds'; not 'rs'.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ffcode.codes.base import Code
from ffcode.codes.entangled import EntangledPolynomialCode
from ffcode.codes.gasp import GASP
from ffcode.codes.lcc import LCC
from ffcode.codes.matdot import MatDot
from ffcode.codes.mds import MDS
from ffcode.codes.polynomial import PolynomialCode
from ffcode.constraints import Callables, InstanceOf, Options, Spec, validate
from ffcode.errors import InvalidParameterError
from ffcode.field import PrimeField
from ffcode.registry import Registry

JOBS = ("matmul", "matvec", "lcc")


@dataclass(frozen=True)
class CodeEntry:
    """A registered code: its name, ``factory(F, n_workers, **params)``, what it is (a line
    for help texts), the job it computes, its parameters with their defaults, and its
    recovery threshold from them (None: not known before the code is made)."""
    name: str
    factory: Callable[..., Code]
    description: str
    job: str = "matmul"
    params: Mapping[str, Any] = field(default_factory=dict)
    threshold: Optional[Callable[..., int]] = None

    def settings(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters: the defaults with the given ones (None: the default) in place;
        InvalidParameterError for one the code does not take."""
        unknown = [name for name in given if name not in self.params]
        if unknown:
            takes = ", ".join(self.params) or "none"
            raise InvalidParameterError(f"Code {self.name!r} takes the parameters {takes}; "
                                        f"not {', '.join(unknown)}.")
        return {name: default if given.get(name) is None else given[name]
                for name, default in self.params.items()}

    def make(self, F: PrimeField, n_workers: int, **params: Any) -> Code:
        """The code over F for n_workers points; params beyond its parameters (signed,
        points, ...) go to the factory as given."""
        ours = {name: value for name, value in params.items() if name in self.params}
        extra = {name: value for name, value in params.items() if name not in self.params}
        code = self.factory(F, n_workers, **self.settings(ours), **extra)
        if not isinstance(code, Code):
            raise InvalidParameterError(f"The factory of code {self.name!r} must return an "
                                        f"ffcode code, not {type(code).__name__}.")
        return code

    def recovery_threshold(self, **params: Any) -> Optional[int]:
        """R for these parameters (the defaults for those left out), or None when the
        registration gave no threshold."""
        if self.threshold is None:
            return None
        return int(self.threshold(**self.settings(params)))


_CODES: Registry[CodeEntry] = Registry("code", {})
_CONSTRAINTS: dict[str, Spec] = {"name": InstanceOf(str, what="a string"), "factory": Callables(
    "callable as factory(F, n_workers, **params)"), "description": InstanceOf(str, what="a "
    "string"), "job": Options(JOBS), "params": InstanceOf(Mapping, what="a mapping of "
    "parameter to default"), "threshold": (None, Callables("callable as threshold(**params)"))}


def register_code(name: str, factory: Callable[..., Code], description: str, *,
                  job: str = "matmul", params: Optional[Mapping[str, Any]] = None,
                  threshold: Optional[Callable[..., int]] = None,
                  replace: bool = False) -> CodeEntry:
    """Register a code under ``name`` (see the module's docstring); ``replace=True``
    replaces a code of one's own of that name. Returns its entry."""
    checked = validate(_CONSTRAINTS, {"name": name, "factory": factory,
                                      "description": description, "job": job,
                                      "params": params or {}, "threshold": threshold})
    if not name.isidentifier():
        raise InvalidParameterError(f"A code's name must be a word (letters, digits, _), not "
                                    f"{name!r}.")
    entry = CodeEntry(**{**checked, "params": dict(checked["params"])})
    return _CODES.add(name, entry, replace=replace)


def unregister_code(name: str) -> None:
    """Remove a code one registered (the built-in ones stay)."""
    _CODES.remove(name)


def code_names(job: Optional[str] = None) -> list[str]:
    """The registered codes' names (those for ``job`` only, if given), in the order they
    were registered."""
    if job is not None:
        Options(JOBS).check(job, "job")
    return [name for name, entry in zip(_CODES.names(), _CODES.items())
            if job in (None, entry.job)]


def code_entry(name: str, job: Optional[str] = None) -> CodeEntry:
    """The entry of the code registered as ``name`` (for ``job``, if given)."""
    Options(code_names(job)).check(name, "name")
    return _CODES[name]


def make_code(name: str, F: PrimeField, n_workers: int, **params: Any) -> Code:
    """The code registered as ``name`` over F for n_workers points, its parameters
    ``params`` (the defaults for those left out)."""
    return code_entry(name).make(F, n_workers, **params)


def threshold(name: str, **params: Any) -> Optional[int]:
    """The recovery threshold of the code registered as ``name`` with these parameters
    (None when its registration gave none)."""
    return code_entry(name).recovery_threshold(**params)


# -- the built-in codes ----------------------------------------------------------------------

def _polynomial(F: PrimeField, n_workers: int, a: int, b: int, **kw: Any) -> Code:
    return PolynomialCode(F, a, b, n_workers, **kw)


def _matdot(F: PrimeField, n_workers: int, s: int, **kw: Any) -> Code:
    return MatDot(F, s, n_workers, **kw)


def _entangled(F: PrimeField, n_workers: int, a: int, b: int, s: int, **kw: Any) -> Code:
    return EntangledPolynomialCode(F, s, a, b, n_workers, **kw)


def _gasp(F: PrimeField, n_workers: int, a: int, b: int, t: int, **kw: Any) -> Code:
    return GASP(F, a, b, t, n_workers, **kw)


def _mds(F: PrimeField, n_workers: int, k: int, **kw: Any) -> Code:
    return MDS(F, k, n_workers, **kw)


def _lcc(F: PrimeField, n_workers: int, k: int, t: int, f: Any, degree: int,
         row_linear: bool, **kw: Any) -> Code:
    return LCC(F, k, t, f, degree, n_workers, row_linear=row_linear, **kw)


for _args in (
        ("polynomial", _polynomial, "PolynomialCode: A in a row blocks, B in b column "
         "blocks, R = a*b", "matmul", {"a": 2, "b": 2},
         lambda a, b: PolynomialCode.threshold_for(a, b)),
        ("matdot", _matdot, "MatDot: the inner dimension in s parts, R = 2s-1", "matmul",
         {"s": 2}, lambda s: MatDot.threshold_for(s)),
        ("entangled", _entangled, "EntangledPolynomialCode: A in a x s blocks, B in s x b, "
         "R = s*a*b + s - 1", "matmul", {"a": 2, "b": 1, "s": 2},
         lambda a, b, s: EntangledPolynomialCode.threshold_for(s, a, b)),
        ("gasp", _gasp, "GASP: A in a row blocks, B in b column blocks, any t workers "
         "learn nothing", "matmul", {"a": 2, "b": 1, "t": 1},
         lambda a, b, t: GASP.threshold_for(a, b, t)),
        ("mds", _mds, "MDS: A in k row blocks, any k results give y = A @ x", "matvec",
         {"k": 4}, lambda k: MDS.threshold_for(k)),
        ("lcc", _lcc, "LCC: f of k blocks (of total degree --degree), any t workers learn "
         "nothing", "lcc", {"k": 2, "t": 1, "f": "ffcode.functions:square", "degree": 2,
                            "row_linear": False},
         lambda k, t, degree, **_: LCC.threshold_for(k, t, degree))):
    register_code(*_args[:3], job=_args[3], params=_args[4], threshold=_args[5])
del _args
_CODES.keep()                           # the built-in codes stay
