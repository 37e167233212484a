"""MDS code for matrix–vector (or matrix–matrix) products y = A x."""
from __future__ import annotations

from typing import Optional

from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int, Seed
from ffcode.codes.base import COUNT, Encoding
from ffcode.constraints import validate
from ffcode.codes.product import ProductCode


class MDS(ProductCode):
    """y = A @ x with A split into k row blocks; any k of the n_workers results give y.

    Worker i holds A~(a_i) = sum_j A_j a_i**j, encoded once and reused for every x (the
    job's argument: ``compute(share, x)``, checked by ``arguments(encoding, x)``). With
    ``signed=True`` elements are read as signed integers (see ``F.from_real``) and an x
    whose exact product with A could wrap around mod p is refused by ``arguments``.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = MDS(F, k=2, n_workers=3)
    >>> shares = code.encode([[1, 2], [3, 4], [5, 6]])
    >>> results = {i: code.compute(shares[i], [1, 1]) for i in (0, 2)}
    >>> code.decode(shares, results).tolist()
    [3, 7, 11]
    """
    _parameter_constraints = {**ProductCode._parameter_constraints, "k": COUNT}

    def __init__(self, F: PrimeField, k: Int, n_workers: Int,
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        k = int(validate(MDS._parameter_constraints,
                         {"F": F, "k": k, "n_workers": n_workers, "signed": signed})["k"])
        super().__init__(F, n_workers, [[j] for j in range(k)], None, points=points,
                         signed=signed)
        self.k = k

    @staticmethod
    def threshold_for(k: int) -> int:
        """The recovery threshold of an MDS code of k row blocks: any k results."""
        return k

    # An MDS code encodes A alone: no B between A and pieces as ProductCode.encode has.
    def encode(self, A: ArrayLike,  # type: ignore[override]
               pieces: Optional[Int] = None, seed: Seed = None) -> Encoding:
        """The n_workers shares (A~(a_i),), each a (ceil(rows / k), cols) matrix; with
        pieces=m, PieceShares for computation at full speed (random combinations from
        seed)."""
        return super().encode(A, None, pieces, seed)
