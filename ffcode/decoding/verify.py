"""Checking a decoded output before trusting it, at a fraction of the cost of computing it.

Every code says how its outputs are checked (``check``) and what that costs
(``check_cost``); the checks of ffcode's codes are these. Products use Freivalds' check: for
a random matrix R with a few rows, R @ C must equal (R @ A) @ B. A wrong C passes one random
row of R with probability at most 1/p, so the number of rows is chosen to push that to
2**-FAILURE_BITS: one row from p > 2**60 on. Row-linear LCC outputs are checked the same way
on a random projection of the rows: R f(X) = f(R X). Every product of the check has a few
output rows, which the row-combination kernels compute exactly at every prime (p < 2**63) in
time linear in the data read, so the check costs O((m k + k n + m n) rounds) multiply-adds
against the m k n of C = A @ B.

>>> from ffcode import GF
>>> F = GF(65521)
>>> A, B = F.random((4, 3), seed=1), F.random((3, 5), seed=2)
>>> C = F.matmul(A, B)
>>> product(F, A, B, C, seed=0), rounds(F.p)
(True, 4)
>>> C[2, 3] = F.add(C[2, 3], 1)
>>> product(F, A, B, C, seed=0)
False
>>> from ffcode import PolynomialCode
>>> G = GF(2**61 - 1)
>>> rounds(G.p), cheap(PolynomialCode(G, 2, 2, 4), [np.zeros((2048, 2048), G.dtype)] * 2)
(1, True)
"""
import math
from typing import Optional

import numpy as np

from ffcode import _matmul
from ffcode.field import PrimeField

FAILURE_BITS = 60           # a wrong output passes with probability at most 2**-60


def rounds(p: int) -> int:
    """Random rows of R needed for a failure probability of at most 2**-FAILURE_BITS."""
    return math.ceil(FAILURE_BITS / math.log2(p))


def product(F, A, B, C, seed=None) -> bool:
    """Whether C == A @ B (A, B matrices), by Freivalds' check: O(n**2) per round."""
    if not isinstance(F, PrimeField):
        raise TypeError(f"Argument 'F' must be a field from ffcode.GF, not {type(F).__name__}.")
    A, B, C = F.matrix(A, "A"), F.matrix(B, "B"), F.matrix(C, "C")
    if A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"Shapes do not match C = A @ B: A {A.shape}, B {B.shape}, "
                         f"C {C.shape}.")
    # Projected from the left, R C = (R A) B: each side a few combinations of rows, the
    # few-output-row products the row-combination kernels are fastest at, at every prime.
    R = F.random((rounds(F.p), A.shape[0]), seed)
    return np.array_equal(_project(F, R, C), _project(F, _project(F, R, A), B))


def _project(F, R, M) -> np.ndarray:
    """R @ M for R with a few rows and a checked matrix M, as combinations of M's rows."""
    if not M.shape[0]:
        return np.zeros((R.shape[0], M.shape[1]), F.dtype)
    return _matmul.combine(F.p, R, M, F.dtype)


def rows(F: PrimeField, f, X: np.ndarray, Y: np.ndarray, rng: np.random.Generator) -> bool:
    """Whether Y == f(X) for an f linear in the rows of X, on a random projection of the
    rows: R Y must equal f(R X) for a random R of rounds(p) rows."""
    R = F.random((rounds(F.p), X.shape[0]), rng)
    projected = _project(F, R, X.reshape(X.shape[0], -1)).reshape((-1,) + X.shape[1:])
    return np.array_equal(F.elements(f(projected), "f(R X)").reshape(-1),
                          _project(F, R, Y.reshape(Y.shape[0], -1)).reshape(-1))


CHEAP = 0.05                # "cheap": the check's multiply-adds at most 5 % of the job's
RECOMPUTE = math.inf        # the cost reported by a check that computes the output again:
                            # it runs only when asked (verify=True), never by default


def cost(code, inputs) -> Optional[float]:
    """The check's multiply-adds over the job's for this code and these inputs (the
    arguments of Cluster.run); RECOMPUTE for a check that computes the output again, None
    when the output has no check."""
    return _code(code).check_cost(inputs)


def cheap(code, inputs) -> bool:
    """Whether checking this job's output costs at most CHEAP of computing it, counted in
    multiply-adds, at every prime: the check's products have rounds(p) output rows, which
    the row-combination kernels compute in time linear in the data they read, so it takes
    rounds(p) (m k + k n + m n) multiply-adds against the job's m k n. rounds(p) is 60 at
    p = 2, 2 at 2**31 - 1 and 1 from 2**60 on: square products are cheap from n = 60 rounds(p),
    row-linear LCC blocks from 20 rounds(p) rows (f on rounds(p) rows instead of all)."""
    share = cost(code, inputs)
    return share is not None and share <= CHEAP


def by_default(code, inputs, adversaries=0) -> bool:
    """Whether Cluster.run checks an output unless told: where the check is cheap, and when
    correcting wrong workers wherever it is not a recomputation, because more wrong
    workers than the decoder corrects can forge a consistent wrong output that only the
    check catches."""
    share = cost(code, inputs)
    if share is None:
        return False
    return share <= CHEAP or bool(adversaries) and share < RECOMPUTE


def output(code, inputs, out, seed=None) -> bool:
    """Whether ``out`` is the exact output of ``code`` (or of an encoding's code) on
    ``inputs`` (the arguments of Cluster.run: (A, B), (A, x) or (blocks,)); ValueError when
    the code's output has no check (LCC with an f that is not row-linear)."""
    return _code(code).check(inputs, out, seed)


def _code(code):
    from ffcode.codes.base import Code, Encoding      # the codes use this module's checks
    if isinstance(code, Encoding):
        return code.code
    if not isinstance(code, Code):
        raise TypeError(f"Argument 'code' must be an ffcode code, not {type(code).__name__}.")
    return code
