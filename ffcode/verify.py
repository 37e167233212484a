"""Checking a decoded output before trusting it, at a fraction of the cost of computing it.

Products use Freivalds' check: for a random matrix R with a few rows, R @ C must equal
(R @ A) @ B. A wrong C passes one random row of R with probability at most 1/p, so the
number of rows is chosen to push that to 2**-FAILURE_BITS: one row from p > 2**60 on. Row-linear
LCC outputs are checked the same way on a random projection of the rows: R f(X) = f(R X).
Every product of the check has a few output rows, which the row-combination kernels compute
exactly at every prime (p < 2**63) in time linear in the data read, so the check costs
O((m k + k n + m n) rounds) multiply-adds against the m k n of C = A @ B.

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

import numpy as np

from ffcode import _matmul
from ffcode._field import PrimeField
from ffcode.codes import LCC, MDS
from ffcode.codes._base import Code, ProductCode

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


CHEAP = 0.05                # "cheap": the check's multiply-adds at most 5 % of the job's


def cheap(code, inputs) -> bool:
    """Whether checking this job's output costs at most CHEAP of computing it, counted in
    multiply-adds, at every prime: the check's products have rounds(p) output rows, which
    the row-combination kernels compute in time linear in the data they read, so it takes
    rounds(p) (m k + k n + m n) multiply-adds against the job's m k n. rounds(p) is 60 at
    p = 2, 2 at 2**31 - 1 and 1 from 2**60 on: square products are cheap from n = 60 rounds(p),
    row-linear LCC blocks from 20 rounds(p) rows (f on rounds(p) rows instead of all)."""
    F = code.F
    if not checkable(code):
        return False
    k = rounds(F.p)
    if isinstance(code, (ProductCode, MDS)):
        A, B = (np.shape(x) for x in inputs)
        if _recomputes(code, inputs) or len(A) != 2 or len(B) != 2:
            return False
        n, inner, c = A[0], A[1], B[1]
        return k * (n * inner + inner * c + n * c) <= CHEAP * n * inner * c
    rows = np.shape(inputs[0][0])[0] if np.ndim(inputs[0][0]) else 0
    return k <= CHEAP * rows                        # f on k projected rows, not on all


def by_default(code, inputs, adversaries=0) -> bool:
    """Whether Cluster.run checks an output unless told: where the check is cheap, and when
    correcting wrong workers wherever it is not a recomputation, because more wrong
    workers than the decoder corrects can forge a consistent wrong output that only the
    check catches."""
    if cheap(code, inputs):
        return True
    return bool(adversaries) and checkable(code) and not _recomputes(code, inputs)


def _recomputes(code, inputs) -> bool:
    """MDS's A @ x for a vector x: its check is a recomputation."""
    return isinstance(code, MDS) and np.ndim(inputs[1]) != 2


def checkable(code) -> bool:
    """Whether outputs of this code can be checked cheaply (products, MDS with a matrix x,
    row-linear LCC); MDS with a vector x is checked by recomputing it, as cheap as it is."""
    return isinstance(code, (ProductCode, MDS)) or isinstance(code, LCC) and code.row_linear


def output(code, inputs, out, seed=None) -> bool:
    """Whether ``out`` is the exact output of ``code`` on ``inputs`` (the arguments of
    Cluster.run: (A, B), (A, x) or (blocks,)); ValueError when the code's output cannot be
    checked cheaply (LCC with an f that is not row-linear)."""
    if not isinstance(code, Code):
        raise TypeError(f"Argument 'code' must be an ffcode code, not {type(code).__name__}.")
    F = code.F
    if isinstance(code, ProductCode):
        return product(F, *inputs, out, seed)
    if isinstance(code, MDS):
        A, x = inputs
        if np.ndim(x) == 1:
            y = F.elements(out, "out")
            return y.shape == (F.matrix(A, "A").shape[0],) and np.array_equal(
                F.matmul(A, x), y)
        return product(F, A, x, out, seed)
    if not checkable(code):
        raise ValueError(f"{code!r} computes an f that is not row-linear: its output cannot "
                         f"be checked on a random projection.")
    blocks = inputs[0]
    if len(out) != len(blocks):
        return False
    rng = np.random.default_rng(seed)
    for X, Y in zip(blocks, out):
        X, Y = F.elements(X, "blocks"), F.elements(Y, "out")
        if X.ndim < 1 or Y.ndim < 1 or Y.shape[0] != X.shape[0]:
            return False
        R = F.random((rounds(F.p), X.shape[0]), rng)
        projected = _project(F, R, X.reshape(X.shape[0], -1)).reshape((-1,) + X.shape[1:])
        if not np.array_equal(F.elements(code.f(F, projected), "f(F, R X)").reshape(-1),
                              _project(F, R, Y.reshape(Y.shape[0], -1)).reshape(-1)):
            return False
    return True
