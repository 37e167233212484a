"""Data that stays on the workers: ``Cluster.load`` encodes a code's data once and ships each
worker its share; ``Cluster.run`` then takes the returned ``Resident`` in place of the code
and ships only each job's arguments (an iteration's vector)."""
from __future__ import annotations

from ffcode.runtime import wire
from ffcode.runtime.wire import Header, Kind


class Resident:
    """A code's data held by a cluster's workers.

    ``code``; ``scheme`` and ``pieces``, what it was loaded for (its shares serve: slices
    the uncoded scheme, whole shares classic, systematic and cfs, piece-combined shares
    compfs with that m); ``assignment``, the shares each worker holds (every run on the
    data uses it); ``nbytes`` of all shares (the master keeps them too, to reload a
    worker that replaced a lost one); ``shipped``, the bytes ``load`` sent; ``loaded``,
    False once unloaded or the cluster closed."""

    def __init__(self, owner, ident, layout, data, scheme, pieces):
        self.owner, self.ident, self.layout = owner, ident, layout
        self.data, self.scheme, self.pieces = data, scheme, pieces
        self.shipped = 0

    @property
    def code(self):
        return self.layout.code

    @property
    def assignment(self) -> tuple:
        return self.layout.assignment

    @property
    def nbytes(self) -> int:
        return self.layout.nbytes

    @property
    def loaded(self) -> bool:
        return self.owner.holds(self)

    def __repr__(self) -> str:
        return (f"Resident({self.code!r}, {self.layout.holds} for {self.scheme}, "
                f"{self.nbytes / 2**20:.1f} MiB{'' if self.loaded else ', unloaded'})")


def load_message(session, epoch, ident, shares) -> list:
    """Hold ``shares`` (a list of each share's arrays) as resident data ``ident``."""
    return wire.control(Header(Kind.LOAD, session, epoch),
                        {"data": ident, "counts": [len(share) for share in shares]},
                        [a for share in shares for a in share])


def unload_message(session, epoch, ident) -> list:
    return wire.control(Header(Kind.UNLOAD, session, epoch), {"data": ident})
