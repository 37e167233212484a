"""What a relay does with a hierarchical code's packets, without processes or sockets: it
takes the packets of its group's workers (computation at full speed on the inner code),
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
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ffcode._types import Int, Seed
from ffcode.codes.base import Encoding
from ffcode.codes.hierarchical import HierarchicalCode, HierarchicalEncoding
from ffcode.decoding.decoder import Decoder
from ffcode.pieces import Packet, piece_packets


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
            raise TypeError(f"Argument 'encoding' must be what HierarchicalCode.encode "
                            f"returned, not {type(encoding).__name__}.")
        code = encoding.code
        code.members(group)                     # refuses a group out of range
        self.code, self.group = code, int(group)
        pieces = encoding.pieces if pieces is None else pieces
        if pieces is None:
            raise ValueError("Argument 'pieces' is needed: the encoding is not in pieces.")
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
            raise TypeError(f"Argument 'packet' must be an ffcode.Packet, not "
                            f"{type(packet).__name__}.")
        group, worker = self.code.group_of(packet.worker)
        if group != self.group:
            raise ValueError(f"Worker {packet.worker} is in group {group}, not in this "
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
