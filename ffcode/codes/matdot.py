"""MatDot code (Dutta et al. 2019) for matrix products C = A B split along the inner
dimension."""
from __future__ import annotations

from typing import Optional

from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int
from ffcode.codes.base import COUNT
from ffcode.codes.product import ProductCode
from ffcode.constraints import validate


class MatDot(ProductCode):
    """C = A @ B with the inner dimension split in s; any 2s - 1 results give C.

    Worker i multiplies A~(x) = sum_j A_j x**j (column blocks of A) by
    B~(x) = sum_j B_j x**(s-1-j) (row blocks of B); C is the coefficient of x**(s-1).
    Shares are pairs of shapes (rows, ceil(inner / s)) and (ceil(inner / s), cols).

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = MatDot(F, s=2, n_workers=4)
    >>> shares = code.encode([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    >>> code.decode(shares, {i: code.compute(shares[i]) for i in (0, 2, 3)}).tolist()
    [[1, 2], [3, 4]]
    """
    _parameter_constraints = {**ProductCode._parameter_constraints, "s": COUNT}

    def __init__(self, F: PrimeField, s: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        s = int(validate(MatDot._parameter_constraints,
                         {"F": F, "s": s, "n_workers": n_workers, "signed": signed})["s"])
        super().__init__(F, n_workers, [list(range(s))], [[s - 1 - j] for j in range(s)],
                         points=points, signed=signed)
        self.s = s

    @staticmethod
    def threshold_for(s: int) -> int:
        """The recovery threshold for the inner dimension split in s: 2s - 1."""
        return 2 * s - 1
