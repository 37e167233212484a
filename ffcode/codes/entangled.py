"""Entangled polynomial code (Yu, Maddah-Ali, Avestimehr 2018) for matrix products C = A B,
split along the rows, the inner dimension and the columns at once."""
from __future__ import annotations

from typing import Optional

from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int
from ffcode.codes.base import COUNT
from ffcode.codes.product import ProductCode
from ffcode.constraints import validate
from ffcode.errors import InvalidParameterError


class EntangledPolynomialCode(ProductCode):
    """C = A @ B with A in m row blocks by p inner blocks and B in p inner blocks by n
    column blocks; any R = p*m*n + p - 1 results give C.

    Worker i multiplies A~(x) = sum_jk A_jk x**(k + p*j) (A_jk: row block j, inner block
    k) by B~(x) = sum_kl B_kl x**(p - 1 - k + p*m*l), so that C_jl = sum_k A_jk B_kl is the
    coefficient of x**(p - 1 + p*j + p*m*l). Each worker's share is 1/(p*m) of A and
    1/(p*n) of B. PolynomialCode(a, b) is the case p = 1 (m = a, n = b) and MatDot(s) the
    case m = n = 1 (p = s): the same exponents, the same shares at the same points.

    PolyDot (Dutta et al. 2018), which splits A into t x s blocks and B into s x t, is this
    code with p = s, m = n = t: R = s*t**2 + s - 1, which is PolyDot's own t**2 (2s - 1)
    less (s - 1)(t**2 - 1), for the same shares.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = EntangledPolynomialCode(F, p=2, m=2, n=1, n_workers=6)    # R = 5
    >>> A, B = F.random((4, 4), seed=1), F.random((4, 3), seed=2)
    >>> shares = code.encode(A, B)
    >>> C = code.decode(shares, {i: code.compute(shares[i]) for i in (0, 2, 3, 4, 5)})
    >>> bool((C == F.matmul(A, B)).all()), code.recovery_threshold
    (True, 5)
    """
    _parameter_constraints = {**ProductCode._parameter_constraints,
                              "p": COUNT, "m": COUNT, "n": COUNT}

    def __init__(self, F: PrimeField, p: Int, m: Int, n: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        checked = validate(EntangledPolynomialCode._parameter_constraints,
                           {"F": F, "p": p, "m": m, "n": n, "n_workers": n_workers,
                            "signed": signed})
        p, m, n, n_workers = (int(checked[name]) for name in ("p", "m", "n", "n_workers"))
        R = self.threshold_for(p, m, n)
        if n_workers < R:
            raise InvalidParameterError(f"EntangledPolynomialCode(p={p}, m={m}, n={n}) needs "
                                        f"results from R = p*m*n + p - 1 = {R} workers (its "
                                        f"recovery threshold), but n_workers is {n_workers}.")
        super().__init__(F, n_workers, [[k + p * j for k in range(p)] for j in range(m)],
                         [[p - 1 - k + p * m * w for w in range(n)] for k in range(p)],
                         points=points, signed=signed)
        self.p, self.m, self.n = p, m, n

    @staticmethod
    def threshold_for(p: int, m: int, n: int) -> int:
        """The recovery threshold for these splits: R = p*m*n + p - 1."""
        return p * m * n + p - 1
