"""Decoding despite wrong results: Reed-Solomon error correction of polynomial codes.

Every code's local results are evaluations Y_i = h(points[i]) of a matrix polynomial h of
degree < R, so the results of n workers form a Reed-Solomon codeword in each element, and
n >= R + 2A results decode h despite up to A wrong ones. A wrong worker is wrong at the
same points in every element it spoils, so the errors are found once, on a random
projection of the results (y_i = r^T Y_i s, one scalar codeword, wrong where Y_i is with
probability at least 1 - 2/p, repeated until a miss is below 2**-60), by Berlekamp-Welch;
the output is then decoded from the results of the workers found good.

>>> from ffcode import GF, MDS
>>> F = GF(65521)
>>> code = MDS(F, k=2, n_workers=6)
>>> shares = code.encode([[1, 2], [3, 4], [5, 6], [7, 8]])
>>> results = {i: code.compute(s, [1, 1]) for i, s in enumerate(shares)}
>>> results[4] = F.add(results[4], 1)                     # a wrong worker
>>> output, bad = decode(code, results, adversaries=2, seed=0)
>>> output.tolist(), bad
([3, 7, 11, 15], [4])
"""
import math

import numpy as np

from ffcode import _matmul, _validate
from ffcode.codes._base import Code


class DecodingError(ValueError):
    """The results are not within A errors of any codeword: more workers are wrong than the
    code can correct."""


def decode(code, results, adversaries, seed=None):
    """(code.decode's output, the sorted indices of the workers found wrong) from a
    {worker: local result} mapping of at least R + 2 * adversaries workers, up to
    ``adversaries`` of them wrong. DecodingError when the results cannot be explained with
    that many wrong workers."""
    if not isinstance(code, Code):
        raise TypeError(f"Argument 'code' must be an ffcode code, not {type(code).__name__}.")
    A = _validate.integer(adversaries, "adversaries")
    if A < 0:
        raise ValueError(f"Argument 'adversaries' must be non-negative, not {A}.")
    R = code.recovery_threshold
    workers, Y = code._results(results, R + 2 * A,
                               f"Correcting {A} wrong results (R + 2A = {R + 2 * A})")
    F = code.F
    rng = np.random.default_rng(seed)
    points = [int(code.points[w]) for w in workers]
    bad = set()
    for _ in range(rounds(F.p) if Y[0].size else 0):
        projected = _project(F, Y, rng)
        h = _berlekamp_welch(F.p, points, projected, R, A)
        if h is None:
            raise DecodingError(f"The {len(workers)} results are not within {A} errors of "
                                f"a codeword: more than {A} workers are wrong.")
        bad |= {w for w, a, y in zip(workers, points, projected) if _eval(h, a, F.p) != y}
    if len(bad) > A:
        raise DecodingError(f"Workers {sorted(bad)} are wrong: more than {A} workers are "
                            f"wrong.")
    good = {w: results[w] for w in workers if w not in bad}
    return code.decode(good), sorted(bad)


def rounds(p: int) -> int:
    """Projections needed so that a wrong result escapes all of them with probability at
    most 2**-60 (each misses it with probability at most 2/p)."""
    return math.ceil(60 / math.log2(p / 2)) if p > 4 else 60


def _project(F, Y, rng):
    """r^T Y_i s for every result Y_i (as rows x rest) and one random pair (r, s): a random
    bilinear functional, in one pass over each result (the row-combination kernel)."""
    rows = Y[0].shape[0] if Y[0].ndim else 1
    r = F.random((1, rows), rng)
    s = F.random(Y[0].size // rows, rng)
    return [int(F.matmul(_matmul.combine(F.p, r, list(y.reshape(rows, -1)), F.dtype), s)[0])
            for y in Y]


def _berlekamp_welch(p, points, values, R, A):
    """The coefficients of the polynomial h of degree < R that agrees with all but at most A
    of (points, values), or None: Q = h * E with E monic of degree A, from the linear system
    Q(a_i) = y_i * E(a_i)."""
    from ffcode._field import GF
    F = GF(p)
    n, unknowns = len(points), R + 2 * A
    rows = []
    for a, y in zip(points, values):
        powers = [pow(a, j, p) for j in range(R + A)]
        rows.append(powers + [(-y * pow(a, k, p)) % p for k in range(A)])
    M = np.array(rows, dtype=object).astype(F.dtype) if n else np.zeros((0, unknowns))
    rhs = np.array([(y * pow(a, A, p)) % p for a, y in zip(points, values)], dtype=object)
    solution = _any_solution(F, M, rhs.astype(F.dtype))
    if solution is None:
        return None
    Q = [int(v) for v in solution[:R + A]]
    E = [int(v) for v in solution[R + A:]] + [1]
    h, remainder = _divide(Q, E, p)
    if any(remainder) or len(h) > R:
        return None
    errors = sum(_eval(h, a, p) != y for a, y in zip(points, values))
    return h if errors <= A else None


def _any_solution(F, M, b):
    """One solution of M x = b over F (free unknowns 0), or None if there is none."""
    reduced = F.rref(np.hstack([M, b[:, None]]))
    n = M.shape[1]
    x = np.zeros(n, dtype=object)
    for row in reduced:
        nonzero = np.flatnonzero(row)
        if not nonzero.size:
            continue
        if nonzero[0] == n:
            return None                                   # 0 = nonzero: inconsistent
        x[nonzero[0]] = int(row[n])
    return x


def _divide(num, den, p):
    """(quotient, remainder) of polynomials over GF(p), coefficients lowest first."""
    num = list(num)
    inverse = pow(den[-1], p - 2, p)
    quotient = [0] * max(len(num) - len(den) + 1, 0)
    for k in range(len(quotient) - 1, -1, -1):
        c = num[k + len(den) - 1] * inverse % p
        quotient[k] = c
        for j, d in enumerate(den):
            num[k + j] = (num[k + j] - c * d) % p
    return quotient, num[:len(den) - 1]


def _eval(coeffs, a, p):
    value = 0
    for c in reversed(coeffs):
        value = (value * a + c) % p
    return value
