"""Full-speed coding: a local result travels as packets, each a linear combination of its m
row pieces, and any m·R independent packets from any workers decode.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ffcode import _matmul, checks
from ffcode._blocks import split_rows
from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int, Seed
from ffcode.errors import InvalidParameterError


@dataclass(frozen=True)
class Packet:
    """One linear combination of a worker's result pieces: payload = sum_l coeffs[l] *
    piece l of the local result of worker ``worker`` (0-based); ``index`` numbers the
    worker's packets; ``rows`` is the local result's row count (None: not said), which a
    decoder needs when the code cannot tell it and m > 1 (a piece of r rows may come from
    a result of m·(r - 1) + 1 to m·r rows). A plain record: ``Decoder.add`` checks
    everything in it."""
    worker: Int
    index: Int
    coeffs: np.ndarray
    payload: np.ndarray
    rows: Optional[Int] = None

    def __eq__(self, other: object) -> bool:
        # The fields as one tuple, on every Python: an array field matches when it is the
        # same array (Python 3.13's dataclasses compare field by field, where == of two
        # arrays has no truth value).
        if not isinstance(other, Packet) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.worker, self.index, self.coeffs, self.payload, self.rows) == \
            (other.worker, other.index, other.coeffs, other.payload, other.rows)


@dataclass(frozen=True)
class PieceShare:
    """A worker's share for computation at full speed: ``blocks[j]`` is the j-th random
    combination ``coeffs[j]`` of the row pieces of the share's row-linear operand (operand
    number ``operand`` of the share), and ``rest`` holds its other operands in order."""
    worker: int
    coeffs: np.ndarray          # (m, m)
    blocks: np.ndarray          # (m, block rows, ...)
    rest: tuple
    operand: int = 0

    def operands(self, j: int) -> tuple:
        """The share's operands with block j in place of the row-linear one."""
        o = self.operand
        return self.rest[:o] + (self.blocks[j],) + self.rest[o:]


def piece_results(compute: Callable[..., np.ndarray], share: PieceShare) -> Iterator[Packet]:
    """Computation at full speed: for j = 0..m-1, the packet of block j, computed as
    compute(*share.operands(j)) the moment it is asked for. The result of a combination is
    the combination of the results, so packet j carries share.coeffs[j] (the code's
    compute_pieces and the runtime's workers both run this loop)."""
    for j in range(share.blocks.shape[0]):
        yield Packet(share.worker, j, share.coeffs[j], compute(*share.operands(j)))


def stacked_results(compute: Callable[..., np.ndarray],
                    share: PieceShare) -> Iterator[Packet]:
    """The packets of ``piece_results``, all computed in one product: compute on the m
    blocks stacked in a row, whose result holds block j's in rows j·b to (j + 1)·b (b
    rows a block), as f is row-linear (f(G X) = G f(X), with G picking a block's rows).
    For a share computed whole in one go anyway (its packets leave together): one call
    instead of m. ValueError if the result has not the stacked rows.

    >>> from ffcode import GF
    >>> F = GF(7)
    >>> X = F.asarray([[[1, 2]], [[3, 4]]])          # two blocks of one row each
    >>> share = PieceShare(0, F.asarray([[1, 0], [0, 1]]), X, (F.asarray([1, 1]),))
    >>> [p.payload.tolist() for p in stacked_results(F.matmul, share)]
    [[3], [0]]
    """
    blocks = share.blocks
    m, b = blocks.shape[:2]
    stacked = blocks.reshape((m * b,) + blocks.shape[2:])
    o = share.operand
    result = compute(*share.rest[:o], stacked, *share.rest[o:])
    if np.ndim(result) < 1 or np.shape(result)[0] != m * b:
        raise ValueError(f"f of {m} stacked blocks of {b} rows gave "
                         f"{np.shape(result)[:1] or 'no'} rows, not {m * b}: it is not "
                         f"row-linear")
    for j in range(m):
        yield Packet(share.worker, j, share.coeffs[j], result[j * b:(j + 1) * b])


def pieces_count(pieces: Int) -> int:
    """The number m of row pieces a local result is split into, checked: at least 1."""
    return checks.integer(pieces, "pieces", low=1)


def piece_packets(F: PrimeField, local_result: ArrayLike, pieces: Int, worker: Int,
                  seed: Seed = None, systematic: bool = False) -> Iterator[Packet]:
    """The m = pieces packets of one finished worker's local result, one at a time.

    The result's rows are split into m pieces (zero-padded to a multiple of m). Each packet
    is a combination with uniformly random coefficients from a generator seeded by seed,
    or with ``systematic=True`` the raw pieces in order (unit coefficient vectors); every
    packet carries the result's row count.

    >>> from ffcode import GF
    >>> F = GF(7)
    >>> [(p.coeffs.tolist(), p.payload.tolist())
    ...  for p in piece_packets(F, [[1, 2], [3, 4]], 2, worker=0, systematic=True)]
    [([1, 0], [[1, 2]]), ([0, 1], [[3, 4]])]
    """
    if not isinstance(F, PrimeField):
        raise InvalidParameterError("Argument 'F' must be a field from ffcode.GF, not "
                                    f"{type(F).__name__}.")
    result = F.elements(local_result, "local_result")
    if result.ndim < 1:
        raise InvalidParameterError("Argument 'local_result' must have at least one dimension "
                                    "(rows).")
    m = pieces_count(pieces)
    worker = checks.integer(worker, "worker", low=0)
    split, rows = split_rows(result, m), result.shape[0]
    if systematic:
        units = np.eye(m, dtype=F.dtype)
        return (Packet(worker, l, units[l], split[l], rows) for l in range(m))
    return _random_packets(F, split, worker, rows, np.random.default_rng(seed))


def _random_packets(F: PrimeField, split: np.ndarray, worker: Int, rows: int,
                    rng: np.random.Generator) -> Iterator[Packet]:
    m = split.shape[0]
    for j in range(m):
        coeffs = F.random(m, rng)
        payload = _matmul.combine(F.p, coeffs[None, :], list(split), F.dtype)
        yield Packet(worker, j, coeffs, payload.reshape(split.shape[1:]), rows)
