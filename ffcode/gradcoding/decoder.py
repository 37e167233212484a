"""The master's side of gradient coding at full speed: messages come in as workers finish
partitions, and the exact sum is read the moment the all-ones vector lies in the span of
their coefficient vectors.

The vectors are kept in reduced row echelon form by the decoders' kernel (RankBasis, one
unknown per partition), each message eliminated along with its vector. Once the all-ones
vector is in the span, it is the sum of the basis rows (each has a 1 in its own pivot
column and 0 in the others'), so the sum of the gradients is the sum of the reduced
messages. A message is trusted for nothing but its place: the master takes its
coefficients from the code, by (worker, partitions done).

>>> from ffcode import GF
>>> from ffcode.gradcoding import FractionalRepetition, GradientDecoder
>>> F = GF(65521)
>>> code = FractionalRepetition(F, 4, 1)
>>> g = [F.asarray([1, 2]), F.asarray([3, 4]), F.asarray([5, 6]), F.asarray([7, 8])]
>>> decoder = GradientDecoder(code)
>>> for worker, done in [(0, 1), (3, 1), (2, 1), (1, 1)]:      # each its first partition
...     parts = [g[j] for j in code.assignment[worker]]
...     _ = decoder.add(worker, done, code.partial(worker, done, parts))
>>> decoder.complete, decoder.result().tolist()
(True, [16, 20])
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ffcode import checks
from ffcode._ext.rankbasis import RankBasis
from ffcode._types import ArrayLike, Int
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding.codes import GradientCode
from ffcode.gradcoding.robust import RobustGradientDecoder
from ffcode.pieces import Packet


class GradientDecoder:
    """Collects a gradient code's messages (``add(worker, done, message)``: ``worker``'s
    after its first ``done`` partitions) until the sum of every partition's gradient
    follows (``complete``), then ``result()`` is that sum, exactly. ``shape`` fixes a
    message's shape beforehand; otherwise the first message does. ``covered`` tells which
    partitions the messages so far span."""

    def __init__(self, code: GradientCode, shape: Optional[tuple] = None):
        self.code = checks.instance(code, "code", GradientCode, "a GradientCode")
        self.F = code.F
        k = code.partitions
        self._basis = RankBasis(np.ones((1, 1), np.uint64), k, self.F.p)
        self._ones = np.ones(k, self.F.dtype)
        self._shape: Optional[tuple] = None
        if shape is not None:
            self._reserve(self._checked_shape(shape))
        self._seen: set = set()
        self._complete = False
        self._result: Optional[np.ndarray] = None
        self.received = 0

    def __repr__(self) -> str:
        return f"GradientDecoder({self.code!r}, rank={self.rank}, complete={self.complete})"

    @property
    def rank(self) -> int:
        """The dimension of the span of the messages' vectors so far."""
        return self._basis.rank

    @property
    def complete(self) -> bool:
        return self._complete

    def add(self, worker: Int, done: Int, message: ArrayLike) -> bool:
        """Take ``worker``'s message after its first ``done`` partitions; True if it was
        innovative (it raised the rank). A message out of the field, of another shape, or
        of a (worker, done) the code has not is refused (ValueError, nothing changed)."""
        vector = self.code.vector(worker, done)         # checks worker and done
        self.received += 1
        key = (int(worker), int(done))
        if self._complete or key in self._seen or self._basis.probe(vector, 0) < 0:
            return False
        checked = self.F.elements(message, "message")
        if self._shape is None:
            self._reserve(checked.shape)
        if checked.shape != self._shape:
            raise InvalidParameterError(f"A message has shape {checked.shape}, expected "
                                        f"{self._shape}.")
        flat = np.ascontiguousarray(checked).reshape(-1)
        self._basis.commit(flat if flat.size else np.zeros(1, self.F.dtype))
        self._seen.add(key)
        self._complete = self._basis.probe(self._ones, 0) < 0
        return True

    def result(self) -> np.ndarray:
        """The sum of every partition's gradient (ValueError before ``complete``)."""
        if not self._complete:
            raise ValueError(f"Not decodable yet: the messages cover partitions "
                             f"{self.covered()} of {self.code.partitions}.")
        if self._result is None:
            rows, shape = self._basis.payloads, self._shape
            assert rows is not None and shape is not None, "complete: a message came"
            total = self.F.combine(np.ones((1, self.rank), self.F.dtype), list(rows[:self.rank]))
            self._result = total[0][:math.prod(shape)].reshape(shape)
        return self._result

    def covered(self) -> list[int]:
        """The partitions whose unit vector lies in the span so far (at full speed, every
        partition some worker finished and sent)."""
        out = []
        for j in range(self.code.partitions):
            unit = np.zeros(self.code.partitions, self.F.dtype)
            unit[j] = 1
            if self._basis.probe(unit, 0) < 0:
                out.append(j)
        return out

    def _checked_shape(self, shape: tuple) -> tuple:
        return tuple(checks.integer(d, "shape", low=0) for d in shape)

    def _reserve(self, shape: tuple) -> None:
        """Fix the messages' shape and keep a payload row per partition (one element at
        least: an empty message still carries its vector)."""
        self._shape = shape
        self._basis.reserve(max(math.prod(shape), 1))


class GradientCollector:
    """A gradient-coded job's collector on the runtime (ffcode.decoding.collectors'
    protocol): worker w's packet k is its message after k + 1 partitions, its payload the
    message; the coefficients a packet carries are not read (the code's are used). With
    ``adversaries`` it reads the sum despite that many wrong workers
    (RobustGradientDecoder) and names them in ``wrong``."""
    pending = 0             # every message is eliminated as it comes,
    buffer = None           # into storage of its own

    def __init__(self, code: GradientCode, adversaries: Int = 0) -> None:
        adversaries = checks.integer(adversaries, "adversaries", low=0)
        self.decoder: Any = RobustGradientDecoder(code, adversaries) if adversaries else \
            GradientDecoder(code)
        self.needed = code.partitions           # the most messages a span of them needs

    @property
    def rank(self) -> int:
        return self.decoder.rank

    @property
    def complete(self) -> bool:
        return self.decoder.complete

    @property
    def sufficient(self) -> bool:
        """Whether the messages so far would give the sum if every worker were honest
        (their vectors span the all-ones vector)."""
        if isinstance(self.decoder, GradientDecoder):
            return self.decoder.complete
        return self.decoder.spans

    @property
    def wrong(self) -> list:
        """The workers whose messages the sum had to leave out (correcting only)."""
        return list(getattr(self.decoder, "wrong", []))

    @property
    def missing(self) -> str:
        """What the messages so far leave uncovered ("" once complete, or when
        correcting: the runtime says the messages cannot be explained)."""
        if self.complete or not isinstance(self.decoder, GradientDecoder):
            return ""
        k = self.decoder.code.partitions
        covered = set(self.decoder.covered())
        return f"partitions {[j for j in range(k) if j not in covered]} of {k} not covered"

    def add(self, packet: Packet) -> bool:
        checks.instance(packet, "packet", Packet, "an ffcode.Packet")
        index = checks.integer(packet.index, "packet index", low=0)
        return self.decoder.add(packet.worker, index + 1, packet.payload)

    def eliminate(self, count: Int = 1) -> int:
        return 0

    def result(self) -> np.ndarray:
        return self.decoder.result()

    def counted(self, share: int, piece: int) -> bool:
        return True

    def exclude(self, share: int) -> None:
        """Leave a worker's messages out (it sent an invalid one, or failed): only when
        correcting wrong workers; a job that trusts its workers excludes none."""
        if not isinstance(self.decoder, RobustGradientDecoder):
            raise ValueError("A gradient-coded job without adversaries trusts its workers: "
                             "none is excluded.")
        self.decoder.exclude(share)
