"""Collectors: what a master feeds a job's packets to until it can decode. Every collector
speaks one protocol (``Collector``): ``Decoder`` and ``RobustDecoder`` collect packets;
here are those of whole results (``Gather`` for uncoded jobs, ``Robust`` for classic jobs
with wrong workers) and ``ShapeVote``, and ``for_job``, which picks the one a job needs.

>>> from ffcode import GF, MDS, piece_packets
>>> F = GF(65521)
>>> code = MDS(F, k=2, n_workers=4)
>>> shares = code.encode([[1, 2], [3, 4], [5, 6], [7, 8]])
>>> collector = for_job(shares, pieces=2)
>>> isinstance(collector, Collector), collector.needed
(True, 4)
>>> for w in (3, 1):
...     for packet in piece_packets(F, code.compute(shares[w], [1, 1]), 2, w, seed=w):
...         _ = collector.add(packet)
>>> collector.complete, collector.pending, collector.result().tolist(), collector.wrong
(True, 0, [3, 7, 11, 15], [])

(Its payloads, a few bytes each, were reduced as they came: none is pending.)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np

from ffcode import checks
from ffcode.codes.base import Encoding
from ffcode.decoding.decoder import Decoder
from ffcode.decoding.robust import RobustDecoder, check_correctable, wrong_among
from ffcode.field import PrimeField
from ffcode.fingerprints import project, projections
from ffcode.pieces import Packet
from ffcode.errors import InvalidParameterError


@runtime_checkable
class Collector(Protocol):
    """The collector protocol. A sender is a share (one per code point; a worker holding
    several shares is several senders), and its packets are numbered by piece."""

    @property
    def needed(self) -> int:
        """Packets (or whole results) that suffice whoever is wrong."""

    @property
    def rank(self) -> int:
        """Packets (or whole results) kept that count towards the output."""

    @property
    def complete(self) -> bool:
        """Whether the kept packets decide the output (often before ``needed``)."""

    @property
    def pending(self) -> int:
        """Kept packets whose payloads still wait for ``eliminate``."""

    @property
    def wrong(self) -> list[int]:
        """The senders found wrong and those excluded (empty when not correcting)."""

    @property
    def buffer(self) -> Optional[np.ndarray]:
        """The payload storage a next job's collector may reuse (None: none)."""

    def add(self, packet: Packet) -> bool:
        """Take a packet: True if it was kept (it counts). ValueError or TypeError for a
        malformed one, which changes nothing."""

    def eliminate(self, count: int = 1) -> int:
        """Do up to ``count`` pieces of deferred work (when the master is idle); how many."""

    def result(self) -> Any:
        """The output, exactly what the code's decode gives (ValueError before complete)."""

    def counted(self, share: int, piece: int) -> bool:
        """Whether a kept packet counted towards the output."""

    def exclude(self, share: int) -> None:
        """(When correcting) a sender's packets no longer count and its next ones are
        refused: it counts among ``wrong``. ValueError for a collector that trusts every
        sender."""


def for_job(encoding: Encoding, pieces: int, adversaries: int = 0, whole: bool = False,
            buffer: Optional[np.ndarray] = None) -> Collector:
    """The collector of a coded job: a deferred Decoder; with A = ``adversaries`` wrong
    senders to correct, Robust for whole results (``whole``, one packet per sender) or a
    RobustDecoder. The shape of a local result is voted on (ShapeVote) when the code
    cannot tell it, and when a wrong sender's packet must not fix it for everyone."""
    code = encoding.code
    if adversaries:                 # refused now rather than at the first packet
        check_correctable(code.recovery_threshold, code.n_workers, adversaries,
                          every_r_decodes=code.every_r_decodes)

    def make(shape: Optional[tuple], first: bool) -> Collector:
        if not adversaries:
            return Decoder(encoding, pieces, shape, defer=True, buffer=buffer if first else None)
        if whole:
            return Robust(encoding, adversaries)
        return RobustDecoder(encoding, pieces, adversaries, shape)

    rows = code.result_rows(encoding)
    if adversaries or rows is None:
        return ShapeVote(make, pieces, rows, correcting=bool(adversaries))
    return make(None, True)


class WholeResults:
    """Collects whole local results, one packet (index 0, coefficients [1]) per sender, until
    ``needed`` distinct senders have sent one; subclasses check a payload and use them."""
    pending = 0             # a whole result is used as it comes,
    buffer = None           # and kept as it came: no payload storage to hand on

    def __init__(self, needed: int) -> None:
        self.needed = needed
        self._results: dict = {}    # sender -> its result

    @property
    def rank(self) -> int:
        return len(self._results)

    @property
    def complete(self) -> bool:
        return len(self._results) >= self.needed

    @property
    def wrong(self) -> list:
        return []

    def add(self, packet: Packet) -> bool:
        if packet.index != 0 or np.asarray(packet.coeffs).tolist() != [1]:
            raise InvalidParameterError("A whole result is one packet: index 0, coefficients [1].")
        payload = self._checked(packet)
        first = next(iter(self._results.values()), payload)
        if payload.shape != first.shape:
            raise InvalidParameterError(f"Packet payload has shape {payload.shape}, expected "
                                        f"{first.shape}.")
        if packet.worker in self._results or self.complete:
            return False
        self._results[packet.worker] = payload
        return True

    def _checked(self, packet: Packet) -> np.ndarray:
        raise NotImplementedError

    def eliminate(self, count: int = 1) -> int:
        return 0

    def counted(self, share: int, piece: int) -> bool:
        return True

    def exclude(self, share: int) -> None:
        raise ValueError(f"{type(self).__name__} trusts every sender: only a collector that "
                         f"corrects wrong ones excludes a sender.")


class Gather(WholeResults):
    """The uncoded collector: one whole result from each of ``needed`` senders, assembled.

    >>> from ffcode import GF
    >>> gather = Gather(GF(7), 2, np.concatenate)
    >>> [gather.add(Packet(w, 0, [1], np.array([w, 5]))) for w in (1, 0, 1)]
    [True, True, False]
    >>> gather.complete, gather.result().tolist()
    (True, [0, 5, 1, 5])
    """

    def __init__(self, F: PrimeField, needed: int, assemble: Callable[[list], object]) -> None:
        super().__init__(needed)
        self.F, self._assemble = F, assemble

    def _checked(self, packet: Packet) -> np.ndarray:
        if not 0 <= packet.worker < self.needed:
            raise InvalidParameterError(f"Worker {packet.worker} has no uncoded task.")
        return self.F.elements(packet.payload, "packet payload")

    def result(self) -> Any:
        if not self.complete:
            raise ValueError(f"Not assembled yet: {self.rank}/{self.needed} results.")
        return self._assemble([self._results[w] for w in range(self.needed)])


class Robust(WholeResults):
    """Whole results decoded despite up to A wrong ones, the moment they decide the output:
    with n results, when all but e = min(A, n - R - A) agree on one polynomial (e = 0 at
    R + A results, e = A at R + 2A), so that the output is exact even if A of the agreeing
    ones are wrong. The senders found wrong, and those excluded, are kept in ``wrong``."""

    def __init__(self, encoding: Encoding, adversaries: int) -> None:
        code = encoding.code
        A = checks.integer(adversaries, "adversaries", low=0)
        check_correctable(code.recovery_threshold, code.n_workers, A,
                          every_r_decodes=code.every_r_decodes)
        super().__init__(code.recovery_threshold + 2 * A)
        self.encoding, self.code, self.adversaries = encoding, code, A
        self._found: list[int] = []
        self._excluded: set[int] = set()
        self._projected: dict = {}
        self._pairs: Optional[tuple[np.ndarray, np.ndarray]] = None
        self._good: Optional[list[int]] = None

    @property
    def complete(self) -> bool:
        return self._good is not None

    @property
    def wrong(self) -> list:
        return sorted(set(self._found) | self._excluded)

    def _checked(self, packet: Packet) -> np.ndarray:
        y = self.code.F.elements(packet.payload, "packet payload")
        expected = self.code.result_shape(self.encoding, y.shape)
        if y.shape != expected:
            raise InvalidParameterError(f"A local result has shape {y.shape}, expected {expected}.")
        if self.code.worker_index(packet.worker) in self._excluded:
            raise InvalidParameterError(f"Worker {packet.worker} is excluded: its results no "
                                        "longer count.")
        return y

    def add(self, packet: Packet) -> bool:
        if not super().add(packet):
            return False
        F, payload = self.code.F, self._results[packet.worker]
        if self._pairs is None:         # fresh randomness, which no worker can know
            self._pairs = projections(F, payload.shape, np.random.default_rng())
        self._projected[packet.worker] = project(F, payload, self._pairs)
        self._decide()
        return True

    def exclude(self, share: int) -> None:
        """Drop a sender's result and refuse its next: up to A of the rest may still be
        wrong. Once complete the output stands (exact whoever of up to A is wrong)."""
        share = self.code.worker_index(share)
        self._excluded.add(share)
        if not self.complete and self._results.pop(share, None) is not None:
            del self._projected[share]
            self._decide()              # the rest may agree now

    def _decide(self) -> None:
        R, A = self.code.recovery_threshold, self.adversaries
        errors = min(A, len(self._results) - R - A)
        found = wrong_among(self.code, self._projected, errors) if errors >= 0 else None
        if found is not None:
            self._found = found
            self._good = [w for w in sorted(self._results) if w not in found]

    def counted(self, share: int, piece: int) -> bool:
        return share not in self.wrong

    def result(self) -> Any:
        if not self.complete or self._good is None:
            raise ValueError(f"Not decided yet: {self.rank} results.")
        return self.code.decode(self.encoding, {w: self._results[w] for w in self._good})


class ShapeVote:
    """LCC with an f that is not row-linear (and any code when correcting wrong workers): the
    master cannot tell a local result's shape (or trust the first one it sees), so each
    shape the senders claim (``Packet.rows`` and the payload's other dimensions) gets its
    own collector, made by ``make(shape, first)``. A worker that claims a wrong shape fills
    only its own, which one worker alone never completes when R > 1 (its packets span at
    most m of the m·R dimensions), nor A wrong workers when the collector corrects A.

    A sender claims one shape, with its first packet that its shape's collector takes: a
    later packet claiming another is invalid (ValueError), so there are never more shapes
    than senders, and a packet costs the same however many there are. When ``correcting``,
    such a sender is excluded (``exclude``), and the wrong workers include those that
    claimed a shape that lost the vote and those excluded."""

    def __init__(self, make: Callable[[tuple, bool], Collector], pieces: int,
                 rows: Optional[int] = None,
                 correcting: bool = False) -> None:
        self._make, self.pieces, self._rows = make, pieces, rows    # rows: if known
        self.correcting = correcting
        self.collectors: dict[tuple, Any] = {}  # claimed shape -> its collector
        self.claims: dict = {}                  # sender -> the shape it claimed
        self.excluded: set = set()              # senders whose packets no longer count
        self._leader: Optional[tuple] = None    # the claimed shape furthest on

    def add(self, packet: Packet) -> bool:
        worker = packet.worker
        if worker in self.excluded:
            raise InvalidParameterError(f"Worker {worker} is excluded: its packets no longer "
                                        "count.")
        key = self._claimed(packet)
        claimed = self.claims.get(worker)
        if claimed is not None and claimed != key:
            if self.correcting:
                self.exclude(int(worker))
            raise InvalidParameterError(f"Worker {worker} claims a local result of shape {key}, "
                                        f"having claimed {claimed}.")
        collector = self.collectors.get(key)
        if collector is None:       # kept only once a packet fits it: a malformed one
            collector = self._make(key, not self.collectors)    # leaves nothing behind
        kept = collector.add(packet)
        self.collectors[key] = collector
        self.claims[worker] = key
        if self._leader is None or _progress(collector) > _progress(self.leader):
            self._leader = key      # only the collector that took the packet moved on
        return kept

    def _claimed(self, packet: Packet) -> tuple:
        """The shape of the local result a packet claims: (rows,) + the piece's others."""
        shape, rows = np.shape(packet.payload), self._rows or packet.rows or 0
        if rows < 1 or not shape or -(-rows // self.pieces) != shape[0]:
            raise InvalidParameterError(f"A local result of {rows} rows does not split into pieces "
                                        f"of shape {shape}.")
        return (rows,) + tuple(shape[1:])

    def exclude(self, worker: int) -> None:
        """Make a sender's packets no longer count, and refuse its next ones (a worker
        known wrong, or one whose computation failed); only when correcting."""
        if not self.correcting:
            raise ValueError("Only a correcting vote excludes senders: without wrong workers "
                             "to correct, every sender's packets count.")
        worker = checks.integer(worker, "worker", low=0)
        if worker in self.excluded:
            return
        self.excluded.add(worker)
        key = self.claims.get(worker)
        if key is not None:
            self.collectors[key].exclude(worker)
            self._leader = max(self.collectors, key=lambda k: _progress(self.collectors[k]))

    def counted(self, worker: int, index: int) -> bool:
        """Not so for a kept packet of a shape that lost the vote, or of an excluded
        sender, or one its collector did not count."""
        return (self.claims.get(worker) == self._leader and worker not in self.excluded
                and self.leader.counted(worker, index))

    @property
    def leader_shape(self) -> Optional[tuple]:
        """The shape of the complete collector, else of the one furthest on."""
        return self._leader

    @property
    def leader(self) -> Collector:
        """The collector of the leading shape (ValueError before the first packet)."""
        if self._leader is None:
            raise ValueError("Not decodable yet: no packet.")
        return self.collectors[self._leader]

    @property
    def needed(self) -> int:
        return self.leader.needed if self.collectors else 0

    @property
    def rank(self) -> int:
        return self.leader.rank if self.collectors else 0

    @property
    def complete(self) -> bool:
        return bool(self.collectors) and self.leader.complete

    @property
    def pending(self) -> int:
        return self.leader.pending if self.collectors else 0

    def eliminate(self, count: int = 1) -> int:
        return self.leader.eliminate(count) if self.collectors else 0

    @property
    def buffer(self) -> Optional[np.ndarray]:
        return self.leader.buffer if self.collectors else None

    @property
    def wrong(self) -> list:
        if not self.collectors or not self.correcting:
            return sorted(self.excluded)
        others = {w for w, key in self.claims.items() if key != self._leader}
        return sorted(set(self.leader.wrong) | others | self.excluded)

    def result(self) -> Any:
        return self.leader.result()


def _progress(collector: Collector) -> tuple:
    """How far on a collector is: complete first, then by rank."""
    return collector.complete, collector.rank
