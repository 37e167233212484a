"""What a relay does with its group's packets, without processes or sockets.

For a hierarchical code (``GroupDecoder``) it takes the packets of its group's workers (computation at full speed on the inner code),
tracks their rank, decodes its group's result the moment it can (the outer code's local
result for the group), and gives the master the outer code's packets of that result: m_o
random combinations of its pieces, as if the group were one worker of the outer code.
The master decodes them with the outer code's own Decoder (``encoding.outer``), from any
m_o·R_o of them across relays.

>>> from ffcode import GF, MDS, Decoder, HierarchicalCode
>>> F = GF(65521)
>>> code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 3))      # 3 groups of 3 workers
>>> A, x = F.random((8, 4), seed=1), F.random(4, seed=2)
>>> shares = code.encode(A, pieces=2, seed=3)
>>> master = Decoder(shares.outer, pieces=2)
>>> for g in (0, 2):
...     relay = GroupDecoder(shares, g, pieces=2)
...     for worker in code.members(g)[:2]:                    # two workers suffice
...         for packet in code.compute_pieces(shares[worker], x):
...             _ = relay.add(packet)
...     for packet in relay.packets(outer_pieces=2, seed=g):
...         _ = master.add(packet)
>>> relay.complete, master.complete, bool((master.result() == F.matmul(A, x)).all())
(True, True, True)

For an ordinary code (``Forwarder``) it decodes nothing: it passes on to the master each of
its group's packets that raises the rank of what the group sent so far, and drops the
others, so that the master reads no packet its relay already knew to be dependent. Here a
group holds shares 0, 1 and 2 of an MDS code with R = 2, and two of them span everything:

>>> code = MDS(F, 2, 6)
>>> shares = code.encode(A)
>>> results = [code.compute(shares[k], x) for k in range(3)]
>>> sent = []
>>> relay = Forwarder(F, code.evaluations[:3], pieces=2, forward=sent.append)
>>> for piece in (0, 1):                     # plain pieces: share 2's first one adds nothing
...     for k in (0, 1, 2):
...         _ = relay.add(list(piece_packets(F, results[k], 2, k, systematic=True))[piece])
>>> relay.received, len(sent), relay.complete
(5, 4, True)
>>> master = Decoder(shares, pieces=2)
>>> [master.add(packet) for packet in sent]
[True, True, True, True]
>>> bool((master.result() == F.matmul(A, x)).all())
True
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ffcode import checks
from ffcode._ext import rankbasis
from ffcode._types import ArrayLike, Int, Seed
from ffcode.codes.base import Encoding
from ffcode.codes.hierarchical import HierarchicalCode, HierarchicalEncoding
from ffcode.decoding.decoder import Decoder
from ffcode.field import PrimeField
from ffcode.pieces import Packet, piece_packets, pieces_count
from ffcode.errors import InvalidParameterError


class GroupDecoder:
    """A relay's decoder for group ``group`` of a HierarchicalCode's ``encoding``, its
    workers' packets in ``pieces`` pieces (the encoding's own when it has them): ``add``
    takes a packet of one of the group's workers (numbered as the code numbers them),
    ``complete`` says when the group's result is decodable, ``result()`` is that result
    (the outer code's local result of the group), ``packets(outer_pieces)`` the outer
    code's packets of it for the master. ``rank`` and ``needed`` count packets as a
    Decoder does (needed: m·R_i)."""

    def __init__(self, encoding: Encoding, group: Int, pieces: Optional[Int] = None) -> None:
        if not (isinstance(encoding, HierarchicalEncoding) and
                isinstance(encoding.code, HierarchicalCode)):
            raise InvalidParameterError(f"Argument 'encoding' must be what HierarchicalCode.encode "
                                        f"returned, not {type(encoding).__name__}.")
        code = encoding.code
        code.members(group)                     # refuses a group out of range
        self.code, self.group = code, int(group)
        pieces = encoding.pieces if pieces is None else pieces
        if pieces is None:
            raise InvalidParameterError("Argument 'pieces' is needed: the encoding is not in "
                                        "pieces.")
        self._decoder = Decoder(encoding.inner[self.group], pieces)
        self._result: Optional[np.ndarray] = None

    def __repr__(self) -> str:
        return (f"GroupDecoder(group {self.group} of {self.code!r}, rank "
                f"{self.rank}/{self.needed})")

    @property
    def rank(self) -> int:
        return self._decoder.rank

    @property
    def needed(self) -> int:
        return self._decoder.needed

    @property
    def complete(self) -> bool:
        return self._decoder.complete

    def add(self, packet: Packet) -> bool:
        """Take a packet of one of the group's workers: True if it raised the rank.
        ValueError for another group's worker; the Decoder's checks for the rest."""
        if not isinstance(packet, Packet):
            raise InvalidParameterError(f"Argument 'packet' must be an ffcode.Packet, not "
                                        f"{type(packet).__name__}.")
        group, worker = self.code.group_of(packet.worker)
        if group != self.group:
            raise InvalidParameterError(f"Worker {packet.worker} is in group {group}, not in this "
                                        f"relay's group {self.group}.")
        return self._decoder.add(Packet(worker, packet.index, packet.coeffs, packet.payload,
                                        packet.rows))

    def result(self) -> np.ndarray:
        """The group's result: the outer code's local result of group ``group`` (ValueError
        before ``complete``)."""
        if self._result is None:
            self._result = self._decoder.result()
        return self._result

    def packets(self, outer_pieces: Int, seed: Seed = None) -> list[Any]:
        """The master's packets of the group's result: ``outer_pieces`` random
        combinations of its row pieces (from seed; fresh entropy for None), sent as the
        outer code's worker ``group``."""
        return list(piece_packets(self.code.F, self.result(), outer_pieces, self.group,
                                  seed=seed))


class Forwarder:
    """A relay's collector for an ordinary code (the collector protocol,
    ffcode.decoding.collectors.Collector): its senders are the relay's shares 0..S-1,
    ``powers[k]`` share k's decoding equation (its row of the code's ``evaluations``; a
    unit vector per slice for uncoded work), their results in ``pieces`` packets each.
    ``add`` hands ``forward`` every packet that raises the rank of those forwarded so far
    (with ``filter=False``, every packet not seen before: when the master corrects wrong
    senders it needs their redundancy) and drops the rest; it never holds a payload.
    A packet's header, coefficients and payload (elements, and a shape every forwarded
    packet shares) are checked before it is passed on: ValueError or TypeError for a
    malformed one, which changes nothing. ``complete`` once nothing more could add rank
    (the rank is the code's m·R) or every packet of every share arrived; ``result()`` is
    the number forwarded."""

    pending = 0             # nothing waits: a payload is passed on as it is
    buffer = None
    wrong: list = []

    def __init__(self, F: PrimeField, powers: ArrayLike, pieces: Int,
                 forward: Callable[[Packet], Any], filter: bool = True) -> None:
        if not isinstance(F, PrimeField):
            raise InvalidParameterError(f"Argument 'F' must be a field (ffcode.GF), not "
                                        f"{type(F).__name__}.")
        powers = F.elements(powers, "powers")
        if powers.ndim != 2 or not powers.shape[0] or not powers.shape[1]:
            raise InvalidParameterError("Argument 'powers' must be a non-empty (shares, R) matrix, "
                                        f"not of shape {powers.shape}.")
        if not callable(forward):
            raise InvalidParameterError("Argument 'forward' must be callable as forward(packet).")
        self.F, self.pieces, self.forward = F, pieces_count(pieces), forward
        self.filter = checks.flag(filter, "filter")
        self.shares = powers.shape[0]
        self._basis = rankbasis.RankBasis(np.ascontiguousarray(powers, np.uint64),
                                          self.pieces, F.p)
        self.forwarded = 0
        self._seen: set = set()
        self._shape: Optional[tuple] = None

    def __repr__(self) -> str:
        return (f"Forwarder({self.shares} shares, forwarded {self.forwarded} of "
                f"{self.received})")

    @property
    def received(self) -> int:
        """Distinct packets taken (forwarded or dropped)."""
        return len(self._seen)

    @property
    def needed(self) -> int:
        """The most packets that could be forwarded, m·R or all of the shares' when they
        hold fewer (how a job's progress counts)."""
        return min(self._basis.n, self.shares * self.pieces) if self.filter else \
            self.shares * self.pieces

    @property
    def rank(self) -> int:
        return self.forwarded

    @property
    def complete(self) -> bool:
        return self.received == self.shares * self.pieces or \
            self.filter and self._basis.rank == self._basis.n

    def add(self, packet: Packet) -> bool:
        """Check a packet and forward it if it adds rank: True if forwarded."""
        if not isinstance(packet, Packet):
            raise InvalidParameterError(f"Argument 'packet' must be an ffcode.Packet, not "
                                        f"{type(packet).__name__}.")
        share = checks.integer(packet.worker, "packet worker", low=0, high=self.shares - 1)
        piece = checks.integer(packet.index, "packet index", low=0, high=self.pieces - 1)
        coeffs = np.ascontiguousarray(self.F.elements(packet.coeffs, "packet coeffs"))
        if coeffs.shape != (self.pieces,):
            raise InvalidParameterError(f"Packet coeffs must have shape ({self.pieces},), not "
                                        f"{coeffs.shape} (one coefficient per piece).")
        payload = packet.payload
        if not isinstance(payload, np.ndarray):
            raise InvalidParameterError(f"Packet payload must be a numpy array, not "
                                        f"{type(payload).__name__}.")
        shape = (payload.shape, packet.rows)
        if not payload.ndim or self._shape is not None and shape != self._shape:
            raise InvalidParameterError(f"Packet payload has shape {payload.shape} (rows "
                                        f"{packet.rows}), expected {self._shape or 'rows first'}.")
        if (share, piece) in self._seen or self.complete:
            return False
        if self.filter and self._basis.probe(coeffs, share) < 0:
            self._seen.add((share, piece))
            return False
        payload = self.F.elements(payload, "packet payload")   # read only to forward it
        self._seen.add((share, piece))
        if self.filter:
            self._basis.commit()
        self._shape = shape
        self.forward(Packet(share, piece, coeffs, payload, packet.rows))
        self.forwarded += 1
        return True

    def eliminate(self, count: Int = 1) -> int:
        return 0

    def result(self) -> int:
        return self.forwarded

    def counted(self, share: int, piece: int) -> bool:
        return True

    def exclude(self, share: int) -> None:
        raise ValueError("A Forwarder trusts every sender: the master corrects wrong ones.")
