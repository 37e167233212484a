"""Polynomial code (Yu, Maddah-Ali, Avestimehr 2017) for matrix products C = A B."""
from __future__ import annotations

from typing import Optional, Union, overload

import numpy as np

from ffcode import _validate
from ffcode._blocks import split_columns, split_rows
from ffcode._field import PrimeField
from ffcode._types import ArrayLike, Int, Seed
from ffcode.codes._base import ProductCode
from ffcode.pieces import PieceShare


class PolynomialCode(ProductCode):
    """C = A @ B with A in a row blocks and B in b column blocks; any a*b results give C.

    Worker i multiplies A~(x) = sum_j A_j x**j by B~(x) = sum_k B_k x**(k*a), so block
    A_j B_k is the coefficient of x**(j + k*a) of the product.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = PolynomialCode(F, a=2, b=1, n_workers=3)
    >>> shares = code.encode([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    >>> code.decode({i: code.compute(shares[i]) for i in (1, 2)}).tolist()
    [[1, 2], [3, 4]]
    """

    def __init__(self, F: PrimeField, a: Int, b: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        a, b = _validate.integer(a, "a"), _validate.integer(b, "b")
        for name, value in (("a", a), ("b", b)):
            if value < 1:
                raise ValueError(f"Argument {name!r} must be at least 1, not {value}.")
        super().__init__(F, n_workers, a * b, points, signed)
        self.a, self.b = a, b

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
        """The n_workers shares: pairs (A~(x_i), B~(x_i)) of shapes (ceil(rows / a), inner)
        and (inner, ceil(cols / b)); with pieces=m, PieceShares for computation at full
        speed (random combinations of A~'s row pieces, from seed)."""
        m = self._pieces(pieces)
        A, B = self._operands(A, B)
        A_blocks = split_rows(A, self.a)
        B_blocks = split_columns(B, self.b)
        self._layout = (A.shape[0], B.shape[1], A_blocks.shape[1], B_blocks.shape[2])
        V = self.F.vandermonde(self.points, self.a * self.b)
        A_shares = self._encode_blocks(V[:, :self.a].copy(), A_blocks)
        B_shares = self._encode_blocks(V[:, ::self.a].copy(), B_blocks)
        return self._finish(list(zip(A_shares, B_shares)), m, seed)

    def _result_shape(self, first):
        return self._require_layout()[2:]

    def _result_rows(self):
        return self._require_layout()[2]

    def _assemble(self, blocks):
        rows, cols, block_rows, block_cols = self._require_layout()
        C = blocks.reshape(self.b, self.a, block_rows, block_cols).transpose(1, 2, 0, 3)
        return C.reshape(self.a * block_rows, self.b * block_cols)[:rows, :cols]
