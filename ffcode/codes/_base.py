"""What every polynomial code shares: evaluation points, the encoding product, result
checks, and decoding as one small matrix times the stacked local results."""
import math
from collections.abc import Mapping

import numpy as np

from ffcode import _matmul, _validate
from ffcode._field import PrimeField


class Code:
    """A polynomial code: worker i computes Y_i = h(points[i]) for a matrix polynomial h of
    degree < recovery_threshold, so any recovery_threshold distinct results determine h.

    Subclasses provide ``encode``, ``compute``, the decoding matrix (which combination of
    the R stacked results gives each output block) and the assembly of the output blocks.
    """

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

    def _require_layout(self):
        if self._layout is None:
            raise ValueError(f"{type(self).__name__}.decode needs the shapes of the encoded "
                             f"data: call encode first.")
        return self._layout

    # -- decoding ------------------------------------------------------------------------------

    def decode(self, results):
        """The exact output from a {worker_index: local_result} mapping of at least
        recovery_threshold distinct workers. Every result is checked; the lowest worker
        indices are used when there are more than needed."""
        if not isinstance(results, Mapping):
            raise TypeError(f"Argument 'results' must be a mapping of worker index to local "
                            f"result, not {type(results).__name__}.")
        R = self.recovery_threshold
        workers = sorted(self._worker_index(w) for w in results)
        if len(workers) < R:
            raise ValueError(f"Decoding needs results from {R} distinct workers, got "
                             f"{len(workers)}: {R - len(workers)} more needed.")
        checked = dict(zip(workers, self._checked([results[w] for w in workers])))
        chosen = workers[:R]
        Y = [checked[w] for w in chosen]
        W = self._decoding_matrix(self.points[chosen])
        blocks = _matmul.combine(self.F.p, W, Y, self.F.dtype)
        return self._assemble(blocks.reshape((W.shape[0],) + Y[0].shape))

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


def rows_of(stacked: np.ndarray) -> list:
    """The stacked arrays as a list of arrays (0-d arrays too, never numpy scalars)."""
    return [stacked[i, ...] for i in range(stacked.shape[0])]


def magnitude(F, x) -> int:
    """max |x| for elements read as signed integers (0 for empty x)."""
    signed = F.to_signed(x)
    return int(np.abs(signed).max()) if signed.size else 0


def split_rows(x: np.ndarray, nblocks: int) -> np.ndarray:
    """x (rows, ...) as nblocks row blocks stacked: (nblocks, ceil(rows / nblocks), ...),
    zero-padded at the end (a view, no copy, when the rows already split evenly)."""
    block = math.ceil(x.shape[0] / nblocks)
    if block * nblocks != x.shape[0]:
        padded = np.zeros((block * nblocks,) + x.shape[1:], x.dtype)
        padded[:x.shape[0]] = x
        x = padded
    return x.reshape((nblocks, block) + x.shape[1:])


def split_columns(x: np.ndarray, nblocks: int) -> np.ndarray:
    """x (rows, cols) as nblocks zero-padded column blocks stacked: (nblocks, rows,
    ceil(cols / nblocks))."""
    return np.ascontiguousarray(split_rows(x.T, nblocks).transpose(0, 2, 1))


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

    def compute(self, share):
        """The worker's exact product of its two shares."""
        if not (isinstance(share, tuple) and len(share) == 2):
            raise TypeError(f"Argument 'share' must be the pair (A share, B share) that "
                            f"encode made, not {type(share).__name__}.")
        return self.F.matmul(*share)
