"""Random fingerprints of field arrays: a few random projections that tell a wrong array from
the right one with probability at least 1 - 2**-FAILURE_BITS, at a fraction of the cost of
recomputing it. The codes check their outputs with them, and robust decoding finds wrong
local results with them.

Two kinds, with their own failure rates, so with their own numbers of rounds:

  linear    R M for a random R of a few rows: a nonzero M escapes one row with probability
            at most 1/p, so ``linear_rounds(p)`` rows (Freivalds' check of C = A B: R C must
            equal (R A) B; row-linear f: R f(X) must equal f(R X))
  bilinear  r^T M s for random vectors r and s: a nonzero M escapes one pair with
            probability at most 2/p, so ``bilinear_rounds(p)`` pairs, each one scalar per
            array whatever its shape (robust decoding compares the workers' results by them)

Every projection has a few output rows, which the row-combination kernels compute exactly
at every prime (p < 2**63) in time linear in the data read. ``of_bytes`` fingerprints raw
bytes (any values, once laid out as bytes) the bilinear way over GF(2**61 - 1), in one
pass of a kernel.

>>> from ffcode import GF
>>> F = GF(65521)
>>> A, B = F.random((4, 3), seed=1), F.random((3, 5), seed=2)
>>> C = F.matmul(A, B)
>>> product(F, A, B, C, seed=0), linear_rounds(F.p), bilinear_rounds(F.p)
(True, 4, 5)
>>> C[2, 3] = F.add(C[2, 3], 1)
>>> product(F, A, B, C, seed=0)
False
>>> pairs = projections(F, C.shape, np.random.default_rng(0))
>>> project(F, C, pairs) == project(F, F.matmul(A, B), pairs)
False
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from ffcode import _matmul
from ffcode._ext import digest
from ffcode._types import ArrayLike, Seed
from ffcode.field import PrimeField
from ffcode.errors import InvalidParameterError

FAILURE_BITS = 60           # a wrong array escapes with probability at most 2**-60
RECOMPUTE = math.inf        # the cost a code reports for a check that computes the output
                            # again: it runs only when asked (verify=True), never by default

Pairs = Optional[tuple[np.ndarray, np.ndarray]]


def linear_rounds(p: int) -> int:
    """Random rows of a linear projection for a failure probability of at most
    2**-FAILURE_BITS: each row misses a nonzero array with probability at most 1/p."""
    return math.ceil(FAILURE_BITS / math.log2(p))


def bilinear_rounds(p: int) -> int:
    """Random pairs of a bilinear projection for a failure probability of at most
    2**-FAILURE_BITS: each pair misses a nonzero array with probability at most 2/p (at
    p <= 4, where that bound says nothing, FAILURE_BITS pairs)."""
    return math.ceil(FAILURE_BITS / math.log2(p / 2)) if p > 4 else FAILURE_BITS


def product(F: PrimeField, A: ArrayLike, B: ArrayLike, C: ArrayLike, seed: Seed = None) -> bool:
    """Whether C == A @ B (A, B matrices), by Freivalds' check: O(n**2) per round."""
    if not isinstance(F, PrimeField):
        raise InvalidParameterError(f"Argument 'F' must be a field from ffcode.GF, not "
                                    f"{type(F).__name__}.")
    A, B, C = F.matrix(A, "A"), F.matrix(B, "B"), F.matrix(C, "C")
    if A.shape[1] != B.shape[0] or C.shape != (A.shape[0], B.shape[1]):
        raise InvalidParameterError(f"Shapes do not match C = A @ B: A {A.shape}, B {B.shape}, "
                                    f"C {C.shape}.")
    # Projected from the left, R C = (R A) B: each side a few combinations of rows, the
    # few-output-row products the row-combination kernels are fastest at, at every prime.
    R = F.random((linear_rounds(F.p), A.shape[0]), seed)
    return np.array_equal(_combine(F, R, C), _combine(F, _combine(F, R, A), B))


def rows(F: PrimeField, f: Callable[[np.ndarray], np.ndarray], X: np.ndarray, Y: np.ndarray,
         rng: np.random.Generator) -> bool:
    """Whether Y == f(X) for an f linear in the rows of X, on a random projection of the
    rows: R Y must equal f(R X) for a random R of linear_rounds(p) rows."""
    R = F.random((linear_rounds(F.p), X.shape[0]), rng)
    projected = _combine(F, R, X.reshape(X.shape[0], -1)).reshape((-1,) + X.shape[1:])
    return np.array_equal(F.elements(f(projected), "f(R X)").reshape(-1),
                          _combine(F, R, Y.reshape(Y.shape[0], -1)).reshape(-1))


def projections(F: PrimeField, shape: tuple[int, ...], rng: np.random.Generator) -> Pairs:
    """bilinear_rounds(p) random pairs (r_j, s_j) for arrays of ``shape`` seen as rows x
    rest, as two matrices (r_j the rows of the first, s_j of the second); None for empty
    arrays."""
    height = shape[0] if shape else 1
    size = math.prod(shape)
    if not size:
        return None
    k = bilinear_rounds(F.p)
    return F.random((k, height), rng), F.random((k, size // height), rng)


def project(F: PrimeField, y: np.ndarray, pairs: Pairs) -> list[int]:
    """[r_j^T y s_j for every pair]: random bilinear functionals of y, all in one pass over
    it (the row-combination kernel)."""
    if pairs is None:
        return []
    r, s = pairs
    ry = _matmul.combine(F.p, r, list(y.reshape(r.shape[1], -1)), F.dtype)
    return [int(v) for v in np.diagonal(F.matmul(ry, np.ascontiguousarray(s.T)))]


BYTES_PRIME = 2**61 - 1     # the field of ``of_bytes``
KEY_BITS = 128


def of_bytes(data: object, key: int) -> int:
    """r^T M s over GF(2**61 - 1) of a byte string (any C-contiguous buffer): M lays out its
    little-endian 32-bit words (the last zero-padded), then its length, in a near-square
    matrix; r and s are drawn from ``key`` (an integer of KEY_BITS bits, split in two
    64-bit keys). Byte strings that differ in a byte or in length give the same
    fingerprint with probability at most 2 / (2**61 - 1) over the key.

    >>> of_bytes(b"abc", key=7) == of_bytes(bytearray(b"abc"), key=7)
    True
    >>> of_bytes(b"abc", key=7) != of_bytes(b"abc\\0", key=7)
    True
    """
    if isinstance(key, bool) or not isinstance(key, int):
        raise InvalidParameterError(f"Argument 'key' must be an int, not {type(key).__name__}.")
    if not 0 <= key < 1 << KEY_BITS:
        raise InvalidParameterError(f"Argument 'key' must be in [0, 2**{KEY_BITS}), not {key}.")
    try:
        view = memoryview(data)     # type: ignore[arg-type]
    except TypeError:
        raise InvalidParameterError(f"Argument 'data' must be a bytes-like object, not "
                                    f"{type(data).__name__}.") from None
    if not view.c_contiguous:
        raise InvalidParameterError("Argument 'data' must be C-contiguous.")
    raw = view.cast("B") if view.ndim != 1 or view.format != "B" else view
    width = max(1, math.isqrt((raw.nbytes + 3) // 4 + 1))
    return int(digest.bilinear_bytes(raw, width, key >> 64, key & ((1 << 64) - 1)))


def _combine(F: PrimeField, R: np.ndarray, M: np.ndarray) -> np.ndarray:
    """R @ M for R with a few rows and a checked matrix M, as combinations of M's rows."""
    if not M.shape[0]:
        return np.zeros((R.shape[0], M.shape[1]), F.dtype)
    return _matmul.combine(F.p, R, M, F.dtype)
