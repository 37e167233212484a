"""GASP codes (D'Oliveira, El Rouayheb, Karpuk 2019) for secure distributed matrix
multiplication: C = A B where any t colluding workers learn nothing about A or B."""
from __future__ import annotations

import math
from typing import Optional

from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int
from ffcode.codes.base import COUNT
from ffcode.codes.product import ProductCode
from ffcode.constraints import Options, validate
from ffcode.errors import InvalidParameterError

VARIANTS = ("big", "small")


def exponents(k: int, l: int, t: int, variant: str) -> tuple:
    """(A's block exponents, A's mask exponents, B's block exponents, B's mask exponents) of
    GASP_big or GASP_small with A in k row blocks, B in l column blocks and t masks each: the
    side with more blocks steps by 1, the other by that count, and the masks count up from
    k*l (GASP_small's on the side with more blocks step by that count instead)."""
    many, few = max(k, l), min(k, l)
    steps = list(range(many))                   # the side with more blocks
    strides = [many * j for j in range(few)]    # the other
    plain = [k * l + j for j in range(t)]
    spread = plain if variant == "big" else [k * l + many * j for j in range(t)]
    if l <= k:
        return steps, spread, strides, plain
    return strides, plain, steps, spread


def recovery_threshold(k: int, l: int, t: int, variant: str) -> int:
    """R: the number of distinct sums of an A exponent and a B exponent (the degree
    table's terms)."""
    a, a_masks, b, b_masks = exponents(k, l, t, variant)
    return len({x + y for x in a + a_masks for y in b + b_masks})


def best_variant(k: int, l: int, t: int) -> str:  # noqa: E741
    """The variant with the smaller R (GASP_big on a tie)."""
    return min(VARIANTS, key=lambda v: (recovery_threshold(k, l, t, v), v))


class GASP(ProductCode):
    """C = A @ B with A in k row blocks and B in l column blocks, each share mixed with t
    uniformly random mask blocks, so that any t workers learn nothing about A or B; any R
    results give C. (``t`` counts shares: a worker holding several sees several.)

    Worker i multiplies A~(x) = sum_u A_u x**alpha_u + sum_j R_j x**alpha_(k+j) by
    B~(x) = sum_w B_w x**beta_w + sum_j S_j x**beta_(l+j) (the R_j and S_j from the
    operating system's CSPRNG unless a seed is given) with the exponents of the paper's
    degree tables (``exponents``): for l <= k, alpha = (0, 1, ..., k-1 | masks) and
    beta = (0, k, ..., k(l-1) | kl, ..., kl+t-1), the roles swapped for l > k; GASP_big's
    masks on A are kl, ..., kl+t-1, GASP_small's kl, kl+k, ..., kl+k(t-1). C_uw = A_u B_w is
    the coefficient of x**(alpha_u + beta_w), and R is the number of distinct sums in the
    table: for GASP_big (K, L, T = k, l, t, L <= K) (K+T)(L+1) - 1 when T < K and 2KL + 2T - 1
    when T >= K; GASP_small's is given piecewise in the paper (KL + K + L at T = 1 < L <= K,
    KL + K + L + T**2 + T - 3 for 2 <= T < L <= K, ...). ``variant`` None picks the one with
    the smaller R (GASP_small when t < min(k, l), the paper's advice), "big" or "small"
    forces it.

    The masks make any t shares uniform: the mask exponents of each side step by one number
    d (1, or k for GASP_small's), so t workers' mask rows are x**(kl) times a Vandermonde
    matrix in x**d, full rank exactly when the points' d-th powers are distinct, which the
    construction checks (GF(p) has (p - 1) / gcd(d, p - 1) distinct d-th powers, at least
    one per worker is needed). The support is not dense, so some R results could fail to
    determine the product at unlucky points: the construction checks the R-subsets (up to
    4096 of them) and refuses such points, naming the workers. Take p well above the
    support's exponents: at random points an R-subset's generalized Vandermonde is singular
    with probability at most (the sum of the support's exponents) / (p - 1) (Schwartz–Zippel);
    for k = l = 3, t = 2 (GASP_small, R = 18) that is 2.7e-3 at p = 65521 and 8e-8 at
    2**31 - 1.

    >>> from ffcode import GF
    >>> F = GF(2**31 - 1)
    >>> code = GASP(F, k=2, l=2, t=1, n_workers=9)
    >>> code.recovery_threshold, code.variant
    (8, 'big')
    >>> A, B = F.random((4, 3), seed=1), F.random((3, 4), seed=2)
    >>> shares = code.encode(A, B)
    >>> C = code.decode(shares, {i: code.compute(shares[i]) for i in range(1, 9)})
    >>> bool((C == F.matmul(A, B)).all())
    True
    """
    _parameter_constraints = {**ProductCode._parameter_constraints,
                              "k": COUNT, "l": COUNT, "t": COUNT,
                              "variant": (None, Options(VARIANTS))}

    def __init__(self, F: PrimeField, k: Int, l: Int, t: Int, n_workers: Int,  # noqa: E741
                 variant: Optional[str] = None, points: Optional[ArrayLike] = None,
                 signed: bool = False) -> None:
        checked = validate(GASP._parameter_constraints,
                           {"F": F, "k": k, "l": l, "t": t, "n_workers": n_workers,
                            "variant": variant, "signed": signed})
        k, l, t, N = (int(checked[name]) for name in ("k", "l", "t", "n_workers"))
        if variant is None:
            variant = best_variant(k, l, t)
        R = recovery_threshold(k, l, t, variant)
        if N < R:
            raise InvalidParameterError(f"GASP_{variant}(k={k}, l={l}, t={t}) needs results "
                                        f"from R = {R} workers (its recovery threshold), but "
                                        f"n_workers is {N}.")
        a, a_masks, b, b_masks = exponents(k, l, t, variant)
        # the masks' step: t workers' masks hide the data when their x**stride differ
        stride = max((m[1] - m[0] for m in (a_masks, b_masks) if len(m) > 1), default=1)
        if stride > 1:
            distinct = (F.p - 1) // math.gcd(stride, F.p - 1)
            if distinct < N:
                raise InvalidParameterError(f"GF({F.p}) has only {distinct} distinct values of "
                                            f"x**{stride}, and GASP_small's masks need one per "
                                            f"worker ({N}): use a larger prime, fewer workers or "
                                            "variant='big'.")
        super().__init__(F, N, [[e] for e in a], [b], a_masks, b_masks, points=points,
                         signed=signed)
        self._check_privacy(stride)
        self.k, self.l, self.t, self.variant = k, l, t, variant

    @staticmethod
    def threshold_for(k: int, l: int, t: int,  # noqa: E741
                      variant: Optional[str] = None) -> int:
        """The recovery threshold of GASP(k, l, t, variant) (None: the better variant's)."""
        return recovery_threshold(k, l, t, variant or best_variant(k, l, t))

    def _check_privacy(self, stride: int) -> None:
        """Refuse points at which some t workers' masks would not hide the data: two points
        with the same x**stride."""
        seen: dict[int, int] = {}
        for i, a in enumerate(self.points.tolist()):
            power = pow(int(a), stride, self.F.p)
            if power in seen:
                j = seen[power]
                raise InvalidParameterError(f"Workers {j} and {i} (points {self.points[j]} and "
                                            f"{a}) have the same x**{stride} in GF({self.F.p}): "
                                            "together their masks would not hide the data. Choose "
                                            "other points or variant='big'.")
            seen[power] = i
