"""Polynomial code (Yu, Maddah-Ali, Avestimehr 2017) for matrix products C = A B."""
from __future__ import annotations

from typing import Optional

from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int
from ffcode.codes.base import COUNT
from ffcode.codes.product import ProductCode
from ffcode.constraints import validate


class PolynomialCode(ProductCode):
    """C = A @ B with A in a row blocks and B in b column blocks; any a*b results give C.

    Worker i multiplies A~(x) = sum_j A_j x**j by B~(x) = sum_k B_k x**(k*a), so block
    A_j B_k is the coefficient of x**(j + k*a) of the product. Shares are pairs
    (A~(a_i), B~(a_i)) of shapes (ceil(rows / a), inner) and (inner, ceil(cols / b)).

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = PolynomialCode(F, a=2, b=1, n_workers=3)
    >>> shares = code.encode([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    >>> code.decode(shares, {i: code.compute(shares[i]) for i in (1, 2)}).tolist()
    [[1, 2], [3, 4]]
    """
    _parameter_constraints = {**ProductCode._parameter_constraints, "a": COUNT, "b": COUNT}

    def __init__(self, F: PrimeField, a: Int, b: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        checked = validate(PolynomialCode._parameter_constraints,
                           {"F": F, "a": a, "b": b, "n_workers": n_workers, "signed": signed})
        a, b = int(checked["a"]), int(checked["b"])
        super().__init__(F, n_workers, [[j] for j in range(a)], [[k * a for k in range(b)]],
                         points=points, signed=signed)
        self.a, self.b = a, b

    @staticmethod
    def threshold_for(a: int, b: int) -> int:
        """The recovery threshold for A in a row blocks and B in b column blocks: a*b."""
        return a * b
