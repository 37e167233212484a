"""MDS code for matrix–vector (or matrix–matrix) products y = A x."""
from __future__ import annotations

from typing import Optional, Union, overload

import numpy as np

from ffcode import _validate
from ffcode._blocks import split_rows
from ffcode._field import PrimeField
from ffcode._types import ArrayLike, Int, Seed
from ffcode.codes._base import Code, magnitude
from ffcode.pieces import PieceShare


class MDS(Code):
    """y = A @ x with A split into k row blocks; any k of the n_workers results give y.

    Worker i holds A~(a_i) = sum_j A_j a_i**j, encoded once and reused for every x.
    With ``signed=True`` elements are read as signed integers (see ``F.from_real``) and a
    product whose exact value could wrap around mod p is refused.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = MDS(F, k=2, n_workers=3)
    >>> shares = code.encode([[1, 2], [3, 4], [5, 6]])
    >>> results = {i: code.compute(shares[i], [1, 1]) for i in (0, 2)}
    >>> code.decode(results).tolist()
    [3, 7, 11]
    """

    def __init__(self, F: PrimeField, k: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        k = _validate.integer(k, "k")
        if k < 1:
            raise ValueError(f"Argument 'k' must be at least 1, not {k}.")
        super().__init__(F, n_workers, k, points)
        self.k = k
        self.signed = bool(signed)

    @overload
    def encode(self, A: ArrayLike, pieces: None = None, seed: Seed = None) -> list[np.ndarray]:
        ...

    @overload
    def encode(self, A: ArrayLike, pieces: Int, seed: Seed = None) -> list[PieceShare]:
        ...

    def encode(self, A: ArrayLike, pieces: Optional[Int] = None,
               seed: Seed = None) -> Union[list[np.ndarray], list[PieceShare]]:
        """The n_workers shares of A, each a (ceil(rows / k), cols) matrix; with pieces=m,
        PieceShares for computation at full speed (random combinations from seed)."""
        m = self._pieces(pieces)
        A = self.F.matrix(A, "A")
        blocks = split_rows(A, self.k)
        self._layout = (A.shape[0], blocks.shape[1], A.shape[1],
                        magnitude(self.F, A) if self.signed else None)
        shares = self._encode_blocks(self.F.vandermonde(self.points, self.k), blocks)
        return self._finish(shares, m, seed)

    def compute(self, share: ArrayLike, x: ArrayLike) -> np.ndarray:
        """The worker's exact share @ x for a vector or matrix x."""
        return self.F.matmul(self.F.matrix(share, "share"), self.checked_x(x))

    def checked_x(self, x: ArrayLike, A: Optional[np.ndarray] = None) -> np.ndarray:
        """x as field elements (a vector or matrix), refused if signed data could wrap with
        A (by default the encoded A)."""
        x = self.F.elements(x, "x")
        _validate.ndim(x, (1, 2), "x")
        if self.signed:
            cols, magnitude_A = ((A.shape[1], magnitude(self.F, A)) if A is not None
                                 else self._require_layout()[2:])
            self._check_magnitude(cols * magnitude_A * magnitude(self.F, x), "cols * |A| * |x|")
        return x

    def _result_shape(self, first):
        return (self._require_layout()[1],) + first[1:2]

    def _result_rows(self):
        return self._require_layout()[1]

    def _assemble(self, blocks):
        rows = self._require_layout()[0]
        return blocks.reshape((blocks.shape[0] * blocks.shape[1],) + blocks.shape[2:])[:rows]
