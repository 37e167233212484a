"""What every polynomial code shares: evaluation points, the encoding product, result
checks, and decoding as one small matrix times the stacked local results."""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from ffcode import _matmul, _validate
from ffcode._blocks import rows_of, split_rows
from ffcode._field import PrimeField
from ffcode._types import ArrayLike, Output
from ffcode.pieces import Packet, PieceShare, pieces_count


class Code:
    """A polynomial code: worker i computes Y_i = h(points[i]) for a matrix polynomial h of
    degree < recovery_threshold, so any recovery_threshold distinct results determine h.

    Subclasses provide ``encode``, ``compute``, the output matrix (which combination of the
    R coefficient blocks of h gives each output block; None for all of them, in order) and
    the assembly of the output blocks.

    Row-linear codes (``row_linear``: the worker's computation is linear in the rows of one
    operand, h(G @ X) = G @ h(X) for every matrix G mixing the rows) also compute at full
    speed: ``encode(..., pieces=m, seed=s)`` gives worker i the m combined blocks G_i *
    (row pieces of its row-linear operand), and ``compute_pieces`` turns each into a Packet
    as it is computed; the combinations of the results are the results of the combinations.
    """
    row_linear = True

    def __init__(self, F, n_workers, recovery_threshold, points=None, reserved=0):
        if not isinstance(F, PrimeField):
            raise TypeError(f"Argument 'F' must be a field from ffcode.GF, "
                            f"not {type(F).__name__}.")
        n_workers = _validate.integer(n_workers, "n_workers")
        if n_workers < 1:
            raise ValueError(f"Argument 'n_workers' must be at least 1, not {n_workers}.")
        if n_workers < recovery_threshold:
            raise ValueError(f"This code needs results from {recovery_threshold} workers "
                             f"(its recovery threshold), but n_workers is {n_workers}.")
        # Worker points are distinct and nonzero, plus `reserved` more distinct points.
        if n_workers + reserved > F.p - 1:
            extra = f" plus {reserved} interpolation points" if reserved else ""
            raise ValueError(f"GF({F.p}) is too small for {n_workers} workers{extra}: it has "
                             f"only {F.p - 1} distinct nonzero points.")
        if points is None:
            points = np.arange(1, n_workers + 1)
        points = F.points(points, "points")
        if points.shape[0] != n_workers:
            raise ValueError(f"Argument 'points' must hold one point per worker "
                             f"({n_workers}), not {points.shape[0]}.")
        if not points.all():
            raise ValueError("Argument 'points' must be nonzero.")
        self.F = F
        self.n_workers = n_workers
        self.recovery_threshold = recovery_threshold
        self.points = points
        self._layout = None

    def __repr__(self):
        return (f"{type(self).__name__}({self.F!r}, n_workers={self.n_workers}, "
                f"recovery_threshold={self.recovery_threshold})")

    # -- encoding ------------------------------------------------------------------------------

    def _encode_blocks(self, E, blocks) -> list:
        """Shares E @ blocks: row i of E combines the k equally shaped blocks for worker i."""
        coded = _matmul.combine(self.F.p, E, list(blocks), self.F.dtype)
        return rows_of(coded.reshape((E.shape[0],) + blocks[0].shape))

    def _pieces(self, pieces):
        """The checked number of pieces for computation at full speed, or None; encode
        asks first, before any work."""
        if pieces is None:
            return None
        m = pieces_count(pieces)
        if not self.row_linear:
            raise ValueError(f"{type(self).__name__} computes at full speed only when f is "
                             f"row-linear (linear in the rows: f(G @ X) = G @ f(X) for every "
                             f"matrix G mixing the rows of X, as for f(X) = X @ W; an "
                             f"elementwise f such as the square is not); construct it with "
                             f"row_linear=True if f is.")
        return m

    def _finish(self, shares: list, m, seed) -> list:
        """The shares as encode returns them: plain, or combined in m pieces for full speed."""
        if m is None:
            return shares
        rng = np.random.default_rng(seed)
        out = []
        for worker, share in enumerate(shares):
            operand, rest = self._split_share(share)
            if operand.ndim < 1:
                raise ValueError("Full-speed computation splits the shares into rows; "
                                 "0-d blocks have none.")
            G = self.F.random((m, m), rng)
            blocks = _matmul.combine(self.F.p, G, list(split_rows(operand, m)), self.F.dtype)
            blocks = blocks.reshape((m, -(-operand.shape[0] // m)) + operand.shape[1:])
            out.append(PieceShare(worker, G, blocks, rest))
        return out

    def compute_pieces(self, share: PieceShare, *args: ArrayLike) -> Iterator[Packet]:
        """The packets of a PieceShare, each yielded the moment its block is computed."""
        if not isinstance(share, PieceShare):
            raise TypeError(f"Argument 'share' must be a PieceShare from encode(..., "
                            f"pieces=m), not {type(share).__name__}.")
        if not 0 <= share.worker < self.n_workers:
            raise ValueError(f"The share's worker {share.worker} is not a worker of this code.")
        return (Packet(share.worker, j, share.coeffs[j],
                       self.compute(self._join_share(share.blocks[j], share.rest), *args))
                for j in range(share.blocks.shape[0]))

    def _split_share(self, share):
        """(the row-linear operand of a share, the rest of it)."""
        return self.F.elements(share, "share"), ()

    def _join_share(self, block, rest):
        return block

    def _output_matrix(self):
        """C (outputs x R): output block j is sum_d C[j, d] H_d; None when the outputs are
        all R coefficients H_0..H_{R-1} in order."""
        return None

    def _result_rows(self):
        """The number of rows of a local result, or None when encode does not fix it."""
        return None

    def _require_layout(self):
        if self._layout is None:
            raise ValueError(f"{type(self).__name__}.decode needs the shapes of the encoded "
                             f"data: call encode first.")
        return self._layout

    # -- decoding ------------------------------------------------------------------------------

    def decode(self, results: Mapping[int, ArrayLike]) -> Output:
        """The exact output from a {worker_index: local_result} mapping of at least
        recovery_threshold distinct workers. Every result is checked; the lowest worker
        indices are used when there are more than needed."""
        R = self.recovery_threshold
        workers, arrays = self._results(results, R, "Decoding")
        checked = dict(zip(workers, arrays))
        chosen = workers[:R]
        Y = [checked[w] for w in chosen]
        W = self._decoding_matrix(self.points[chosen])
        blocks = _matmul.combine(self.F.p, W, Y, self.F.dtype)
        return self._assemble(blocks.reshape((W.shape[0],) + Y[0].shape))

    def _results(self, results, least: int, what: str):
        """(sorted worker indices, their checked local results) of a {worker: result}
        mapping of at least ``least`` distinct workers."""
        if not isinstance(results, Mapping):
            raise TypeError(f"Argument 'results' must be a mapping of worker index to local "
                            f"result, not {type(results).__name__}.")
        workers = sorted(self._worker_index(w) for w in results)
        if len(workers) < least:
            raise ValueError(f"{what} needs results from {least} distinct workers, got "
                             f"{len(workers)}: {least - len(workers)} more needed.")
        return workers, self._checked([results[w] for w in workers])

    def _decoding_matrix(self, points):
        """The outputs from the results at these R points: C V^-1 (V^-1 in O(R**2))."""
        inverse = self.F.vandermonde_inverse(points)
        C = self._output_matrix()
        return inverse if C is None else self.F.matmul(C, inverse)

    def _worker_index(self, w) -> int:
        w = _validate.integer(w, "worker index")
        if not 0 <= w < self.n_workers:
            raise ValueError(f"Worker index {w} is out of range: this code has workers "
                             f"0..{self.n_workers - 1}.")
        return w

    def _checked(self, results) -> list:
        """The local results as arrays of checked field elements, all of the expected shape."""
        arrays = [self.F.elements(y, "results") for y in results]
        expected = self._result_shape(arrays[0].shape)
        for y in arrays:
            if y.shape != expected:
                raise ValueError(f"A local result has shape {y.shape}, expected {expected}.")
        return arrays

    def _result_shape(self, first: tuple) -> tuple:
        """The shape every local result must have, given the first one's."""
        return first

    # -- signed (fixed-point) data ---------------------------------------------------------------

    def _check_magnitude(self, bound: int, what: str):
        """Refuse signed data whose exact integer result could wrap around mod p."""
        if bound > self.F.max_signed:
            raise ValueError(f"With signed data the exact result could reach {what} = {bound}, "
                             f"beyond (p-1)/2 = {self.F.max_signed}, and wrap around mod p. "
                             f"Use a larger prime or a smaller fixed-point scale.")


def magnitude(F: PrimeField, x: ArrayLike) -> int:
    """max |x| for elements read as signed integers (0 for empty x)."""
    signed = F.to_signed(x)
    return int(np.abs(signed).max()) if signed.size else 0


class ProductCode(Code):
    """A code for C = A @ B: worker i multiplies its two shares (A~(a_i), B~(a_i))."""

    def __init__(self, F, n_workers, recovery_threshold, points, signed):
        super().__init__(F, n_workers, recovery_threshold, points)
        self.signed = bool(signed)

    def _operands(self, A, B):
        A, B = self.F.matrix(A, "A"), self.F.matrix(B, "B")
        if A.shape[1] != B.shape[0]:
            raise ValueError(f"Arguments 'A' and 'B' do not chain: shapes {A.shape} and "
                             f"{B.shape} (inner dimensions {A.shape[1]} != {B.shape[0]}).")
        if self.signed:
            bound = A.shape[1] * magnitude(self.F, A) * magnitude(self.F, B)
            self._check_magnitude(bound, "inner * |A| * |B|")
        return A, B

    def _split_share(self, share):
        self._check_pair(share)
        return self.F.matrix(share[0], "share"), (share[1],)

    def _join_share(self, block, rest):
        return (block,) + rest

    def _check_pair(self, share):
        if not (isinstance(share, tuple) and len(share) == 2):
            raise TypeError(f"Argument 'share' must be the pair (A share, B share) that "
                            f"encode made, not {type(share).__name__}.")

    def compute(self, share: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The worker's exact product of its two shares."""
        self._check_pair(share)
        return self.F.matmul(*share)
