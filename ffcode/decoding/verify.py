"""Checking a job's decoded output before trusting it, at a fraction of the cost of computing
it.

Every code says how its outputs are checked (``check``) and what that costs (``check_cost``,
the check's multiply-adds over the job's); the checks of ffcode's codes are random
projections (ffcode.fingerprints): Freivalds' check for products, R C = (R A) B for a
random R of ``rounds(p)`` rows, and R f(X) = f(R X) for row-linear LCC. A wrong output
passes with probability at most 2**-60. Every product of the check has a few
output rows, computed in time linear in the data read, so the check costs
O((m k + k n + m n) rounds(p)) multiply-adds against the m k n of C = A @ B. Here is what a
job makes of them: whether to check (``by_default``), and the check itself (``output``).

>>> from ffcode import GF, PolynomialCode
>>> F = GF(65521)
>>> code = PolynomialCode(F, 2, 2, 4)
>>> A, B = F.random((4, 3), seed=1), F.random((3, 5), seed=2)
>>> C = F.matmul(A, B)
>>> output(code, (A, B), C, seed=0), rounds(F.p)
(True, 4)
>>> C[2, 3] = F.add(C[2, 3], 1)
>>> output(code, (A, B), C, seed=0)
False
>>> import numpy as np
>>> G = GF(2**61 - 1)
>>> rounds(G.p), cheap(PolynomialCode(G, 2, 2, 4), [np.zeros((2048, 2048), G.dtype)] * 2)
(1, True)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ffcode._types import Output, Seed
from ffcode.codes.base import Code, Encoding
# The check's rows, and the cost a check that recomputes reports: named here too, where a
# job's verification is looked for.
from ffcode.fingerprints import RECOMPUTE, linear_rounds as rounds
from ffcode.errors import InvalidParameterError

__all__ = ["CHEAP", "RECOMPUTE", "by_default", "cheap", "cost", "output", "rounds"]

CHEAP = 0.05                # "cheap": the check's multiply-adds at most 5 % of the job's


def cost(code: Union[Code, Encoding], inputs: Sequence) -> Optional[float]:
    """The check's multiply-adds over the job's for this code and these inputs (the
    arguments of Cluster.run); RECOMPUTE for a check that computes the output again, None
    when the output has no check."""
    return _code(code).check_cost(inputs)


def cheap(code: Union[Code, Encoding], inputs: Sequence) -> bool:
    """Whether checking this job's output costs at most CHEAP of computing it, counted in
    multiply-adds, at every prime: the check's products have rounds(p) output rows, which
    the row-combination kernels compute in time linear in the data they read, so it takes
    rounds(p) (m k + k n + m n) multiply-adds against the job's m k n. rounds(p) is 60 at
    p = 2, 2 at 2**31 - 1 and 1 from 2**60 on: square products are cheap from n = 60 rounds(p),
    row-linear LCC blocks from 20 rounds(p) rows (f on rounds(p) rows instead of all)."""
    share = cost(code, inputs)
    return share is not None and share <= CHEAP


def by_default(code: Union[Code, Encoding], inputs: Sequence, adversaries: int = 0) -> bool:
    """Whether Cluster.run checks an output unless told: where the check is cheap, and when
    correcting wrong workers wherever it is not a recomputation, because more wrong
    workers than the decoder corrects can forge a consistent wrong output that only the
    check catches."""
    share = cost(code, inputs)
    if share is None:
        return False
    return share <= CHEAP or bool(adversaries) and share < RECOMPUTE


def output(code: Union[Code, Encoding], inputs: Sequence, out: Output,
           seed: Seed = None) -> bool:
    """Whether ``out`` is the exact output of ``code`` (or of an encoding's code) on
    ``inputs`` (the arguments of Cluster.run: (A, B), (A, x) or (blocks,)); ValueError when
    the code's output has no check (LCC with an f that is not row-linear)."""
    return _code(code).check(inputs, out, seed)


def _code(code: Any) -> Code:
    if isinstance(code, Encoding):
        return code.code
    if not isinstance(code, Code):
        raise InvalidParameterError("Argument 'code' must be an ffcode code, not "
                                    f"{type(code).__name__}.")
    return code
