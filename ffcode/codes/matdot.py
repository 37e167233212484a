"""MatDot code (Dutta et al. 2019) for matrix products C = A B split along the inner
dimension."""
from __future__ import annotations

from typing import Optional, Union, overload

import numpy as np

from ffcode import _validate
from ffcode._blocks import split_columns, split_rows
from ffcode._field import PrimeField
from ffcode._types import ArrayLike, Int, Seed
from ffcode.codes._base import ProductCode
from ffcode.pieces import PieceShare


class MatDot(ProductCode):
    """C = A @ B with the inner dimension split in s; any 2s - 1 results give C.

    Worker i multiplies A~(x) = sum_j A_j x**j (column blocks of A) by
    B~(x) = sum_j B_j x**(s-1-j) (row blocks of B); C is the coefficient of x**(s-1).

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = MatDot(F, s=2, n_workers=4)
    >>> shares = code.encode([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    >>> code.decode({i: code.compute(shares[i]) for i in (0, 2, 3)}).tolist()
    [[1, 2], [3, 4]]
    """

    def __init__(self, F: PrimeField, s: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        s = _validate.integer(s, "s")
        if s < 1:
            raise ValueError(f"Argument 's' must be at least 1, not {s}.")
        super().__init__(F, n_workers, 2 * s - 1, points, signed)
        self.s = s

    @overload
    def encode(self, A: ArrayLike, B: ArrayLike, pieces: None = None,
               seed: Seed = None) -> list[tuple[np.ndarray, np.ndarray]]:
        ...

    @overload
    def encode(self, A: ArrayLike, B: ArrayLike, pieces: Int,
               seed: Seed = None) -> list[PieceShare]:
        ...

    def encode(self, A: ArrayLike, B: ArrayLike, pieces: Optional[Int] = None, seed: Seed = None
               ) -> Union[list[tuple[np.ndarray, np.ndarray]], list[PieceShare]]:
        """The n_workers shares: pairs (A~(x_i), B~(x_i)) of shapes (rows, ceil(inner / s))
        and (ceil(inner / s), cols); with pieces=m, PieceShares for computation at full
        speed (random combinations of A~'s row pieces, from seed)."""
        m = self._pieces(pieces)
        A, B = self._operands(A, B)
        A_blocks = split_columns(A, self.s)
        B_blocks = split_rows(B, self.s)
        self._layout = (A.shape[0], B.shape[1])
        V = self.F.vandermonde(self.points, self.s)
        A_shares = self._encode_blocks(V, A_blocks)
        B_shares = self._encode_blocks(V[:, ::-1].copy(), B_blocks)
        return self._finish(list(zip(A_shares, B_shares)), m, seed)

    def _result_shape(self, first):
        return self._require_layout()

    def _output_matrix(self):
        C = np.zeros((1, self.recovery_threshold), self.F.dtype)
        C[0, self.s - 1] = 1            # C is the coefficient of x**(s-1)
        return C

    def _result_rows(self):
        return self._require_layout()[0]

    def _assemble(self, blocks):
        return blocks[0]
