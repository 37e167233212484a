"""Gradient coding despite wrong workers: the master reads the exact sum although up to
``adversaries`` workers send wrong messages, names them, and knows when it can be sure.

A code that tolerates s stragglers has redundancy to spare: honest messages obey every
linear relation among their coefficient vectors, so a set of messages whose payloads break
one holds a wrong one. The decoder looks for the fewest workers (at most A) whose removal
leaves the other messages consistent and spanning the all-ones vector, and returns their
sum once it is safe: when the all-ones vector is still spanned after removing any A more
workers, two explanations of the messages share enough honest ones to agree on the sum,
whatever the wrong workers sent. Every worker's whole message suffices for A wrong
workers when s >= 2 A; at full speed partial messages count too, as they come.

Consistency is tested on a few random projections of the payloads (a wrong message
passes one with probability 1/p, and there are ``rounds(p)`` of them), then the set chosen
is checked exactly on the whole payloads, so a result is never wrong, only later.

>>> from ffcode import GF, CyclicRepetition
>>> F = GF(65521)
>>> code = CyclicRepetition(F, 5, 2)
>>> g = [F.asarray([j, 10 * j]) for j in range(1, 6)]     # sum: [15, 150]
>>> decoder = RobustGradientDecoder(code, adversaries=1)
>>> for worker in range(5):
...     message = code.combine(worker, [g[j] for j in code.assignment[worker]])
...     if worker == 3:
...         message = F.add(message, 1)                   # a wrong worker
...     _ = decoder.add(worker, 3, message)
>>> decoder.complete, decoder.result().tolist(), decoder.wrong
(True, [15, 150], [3])
"""
from __future__ import annotations

import itertools
import math
from typing import Optional

import numpy as np

from ffcode import checks
from ffcode._types import ArrayLike, Int
from ffcode.errors import InvalidParameterError
from ffcode.fingerprints import linear_rounds
from ffcode.gradcoding.codes import GradientCode, ones_combination


class RobustGradientDecoder:
    """A gradient code's messages (``add(worker, done, message)``, as GradientDecoder's)
    read despite up to ``adversaries`` workers sending wrong ones: ``complete`` once the
    sum is certain, ``result()`` the exact sum, ``wrong`` the workers whose messages it
    had to leave out. The messages' shape is ``shape``, or the one A + 1 workers agree
    on: a worker that sends another is wrong. ``exclude(worker)`` drops a worker known
    wrong (or failed). The code must tolerate 2 * adversaries stragglers (ValueError
    otherwise)."""

    def __init__(self, code: GradientCode, adversaries: Int, shape: Optional[tuple] = None,
                 seed: Optional[int] = None):
        self.code = checks.instance(code, "code", GradientCode, "a GradientCode")
        self.adversaries = checks.integer(adversaries, "adversaries", low=1)
        if 2 * self.adversaries > code.stragglers:
            raise InvalidParameterError(
                f"Correcting {self.adversaries} wrong worker(s) needs a code that tolerates "
                f"{2 * self.adversaries} stragglers; {code!r} tolerates {code.stragglers}.")
        self.F = code.F
        self._rng = np.random.default_rng(seed)     # the projections: unknown to workers
        self._rounds = linear_rounds(self.F.p)
        self._shape: Optional[tuple] = None
        self._projection: Optional[np.ndarray] = None
        if shape is not None:
            self._reserve(tuple(checks.integer(d, "shape", low=0) for d in shape))
        self._messages: dict = {}           # worker -> {done: (vector, payload, projected)}
        self._excluded: set = set()
        self._unshaped: list = []           # (worker, done, vector, message) until agreed
        self._misshaped: set = set()        # workers that sent another shape
        self._result: Optional[np.ndarray] = None
        self.wrong: list[int] = []
        self.received = 0

    def __repr__(self) -> str:
        return (f"RobustGradientDecoder({self.code!r}, adversaries={self.adversaries}, "
                f"complete={self.complete})")

    @property
    def complete(self) -> bool:
        return self._result is not None

    @property
    def rank(self) -> int:
        """The dimension of the span of the messages' vectors (of workers not excluded)."""
        vectors = self._rows(self._present())[0]
        return self.F.rank(vectors) if len(vectors) else 0

    @property
    def spans(self) -> bool:
        """Whether the messages' vectors (of workers not excluded) span the all-ones
        vector: the sum would follow if every worker were honest."""
        vectors = self._rows(self._present())[0]
        return bool(len(vectors)) and ones_combination(self.F, vectors) is not None

    def add(self, worker: Int, done: Int, message: ArrayLike) -> bool:
        """Take ``worker``'s message after its first ``done`` partitions; True if it was
        new (not a repeat, not of an excluded worker, not after completion). A message
        out of the field or of another shape is refused (ValueError, nothing changed)."""
        vector = self.code.vector(worker, done)         # checks worker and done
        self.received += 1
        worker, done = int(worker), int(done)
        held = self._messages.setdefault(worker, {})
        if self.complete or worker in self._excluded or done in held or \
                any(w == worker and d == done for w, d, _, _ in self._unshaped):
            return False
        checked = self.F.elements(message, "message")
        if self._shape is None:             # no worker alone decides the shape
            self._unshaped.append((worker, done, vector, checked))
            self._settle_shape()
        else:
            self._keep(worker, done, vector, checked)
        if self._shape is not None:
            self._decide()
        return True

    def exclude(self, worker: Int) -> None:
        """Leave ``worker``'s messages out from now on (it is known wrong, or failed)."""
        worker = self.code.worker_index(worker)
        self._excluded.add(worker)
        if not self.complete and self._shape is not None:
            self._decide()

    def result(self) -> np.ndarray:
        """The sum of every partition's gradient (ValueError before ``complete``)."""
        if self._result is None:
            raise ValueError(f"Not decidable yet despite {self.adversaries} wrong "
                             f"worker(s): {self.received} messages so far.")
        return self._result

    # -- deciding -----------------------------------------------------------------------------

    def _decide(self) -> None:
        """Complete when the fewest workers (at most A) whose removal leaves consistent
        messages that span the all-ones vector still leave it spanned without any A more."""
        present = self._present()
        if not self.spans:
            return
        for size in range(self.adversaries + 1):
            for left_out in itertools.combinations(present, size):
                rest = [w for w in present if w not in left_out]
                if self._safe(rest) and self._explains(rest):
                    vectors, payloads, _ = self._rows(rest)
                    if self._consistent_exactly(vectors, payloads):
                        self._finish(vectors, payloads, list(left_out))
                        return

    def _explains(self, workers: list) -> bool:
        """Whether the workers' messages agree on every projection (a pivot in the
        projections' columns breaks a relation); asked of workers already ``_safe``,
        whose vectors span the all-ones vector."""
        vectors, _, projected = self._rows(workers)
        reduced = self.F.rref(np.hstack([vectors, projected]))
        k = vectors.shape[1]
        return not any(row[:k].max(initial=0) == 0 and row[k:].any() for row in reduced)

    def _safe(self, workers: list) -> bool:
        """Whether the all-ones vector stays spanned without any A of the workers."""
        for dropped in itertools.combinations(workers, min(self.adversaries, len(workers))):
            vectors = self._rows([w for w in workers if w not in dropped])[0]
            if not len(vectors) or ones_combination(self.F, vectors) is None:
                return False
        return True

    def _consistent_exactly(self, vectors: np.ndarray, payloads: np.ndarray) -> bool:
        """N payloads = 0 for a basis N of the vectors' left null space."""
        m, k = vectors.shape
        reduced = self.F.rref(np.hstack([vectors, np.eye(m, dtype=self.F.dtype)]))
        null = reduced[[not row[:k].any() for row in reduced], k:]
        return not len(null) or not self.F.matmul(null, payloads).any()

    def _finish(self, vectors: np.ndarray, payloads: np.ndarray, wrong: list) -> None:
        a = ones_combination(self.F, vectors)
        assert a is not None, "explained: the vectors span the all-ones vector"
        assert self._shape is not None, "a message came"
        total = self.F.matmul(a[None, :], payloads)[0]
        self._result = total[:math.prod(self._shape)].reshape(self._shape)
        self.wrong = sorted(set(wrong) | self._misshaped)

    # -- the messages ---------------------------------------------------------------------

    def _settle_shape(self) -> None:
        """Fix the messages' shape once A + 1 workers agree on it (one of them is honest),
        and file the messages held until then."""
        workers: dict = {}
        for worker, _, _, message in self._unshaped:
            workers.setdefault(message.shape, set()).add(worker)
        agreed = [shape for shape, who in workers.items() if len(who) > self.adversaries]
        if agreed:
            self._reserve(agreed[0])
            unshaped, self._unshaped = self._unshaped, []
            for worker, done, vector, message in unshaped:
                self._keep(worker, done, vector, message)

    def _keep(self, worker: int, done: int, vector: np.ndarray, message: np.ndarray) -> None:
        """File a message of the agreed shape; one of another shape makes its worker
        wrong, and its messages no longer count."""
        if message.shape != self._shape:
            self._misshaped.add(worker)
            self._excluded.add(worker)
            return
        flat = np.ascontiguousarray(message).reshape(1, -1) if message.size else \
            np.zeros((1, 1), self.F.dtype)
        self._messages[worker][done] = (vector, flat, self.F.matmul(flat, self._projection))

    def _present(self) -> list:
        return [w for w in sorted(self._messages) if self._messages[w]
                and w not in self._excluded]

    def _rows(self, workers: list) -> tuple:
        """(vectors, payloads, projections) of the workers' messages, a row each."""
        k = self.code.partitions
        held = [m for w in workers for m in self._messages[w].values()]
        if not held:
            empty = np.zeros((0, k), self.F.dtype)
            return empty, empty, empty
        return (np.vstack([v for v, _, _ in held]), np.vstack([y for _, y, _ in held]),
                np.vstack([z for _, _, z in held]))

    def _reserve(self, shape: tuple) -> None:
        self._shape = shape
        size = max(math.prod(shape), 1)     # an empty message still carries its vector
        self._projection = self.F.random((size, self._rounds), self._rng)
