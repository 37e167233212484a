"""Data that stays on the workers: ``Cluster.load`` encodes a code's data once and ships each
worker its share; ``Cluster.run`` then takes the returned ``Resident`` in place of the code
and ships only each job's arguments (an iteration's vector).

A cluster's residents take only what its own ``load`` returned:

>>> residents = Residents(session=7)
>>> residents.held
{}
>>> residents.check(object())
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Argument 'data' must be what Cluster.load returned, not object.
"""
from __future__ import annotations

import threading
from typing import Any, Optional

from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import GradientCode
from ffcode.runtime.master.gradient import Partitions
from ffcode.runtime.master.jobs import Layout
from ffcode.runtime.master.options import Options
from ffcode import schemes
from ffcode.schemes import Scheme


class Resident:
    """A code's data held by a cluster's workers.

    ``code``; ``scheme`` and ``pieces``, what it was loaded for (its shares serve: slices
    the uncoded scheme, whole shares classic, systematic and cfs, piece-combined shares
    compfs with that m; None for a gradient code's partitions); ``assignment``, the shares
    each worker holds (every run on the data uses it); ``nbytes`` of all shares (the master
    keeps them too, to reload a worker that replaced a lost one); ``shipped``, the bytes
    ``load`` sent; ``loaded``, False once unloaded or the cluster closed. ``session`` and
    ``ident`` name the cluster that holds it and the data there."""

    def __init__(self, session: int, ident: int, layout: Any, data: tuple,
                 scheme: Optional[Scheme], pieces: Optional[int]) -> None:
        self.session, self.ident, self.layout = session, ident, layout
        self.data, self.scheme, self.pieces = data, scheme, pieces
        self.shipped = 0
        self.loaded = True

    @property
    def code(self) -> Any:
        return self.layout.code

    @property
    def assignment(self) -> tuple:
        return self.layout.assignment

    @property
    def nbytes(self) -> int:
        return self.layout.nbytes

    def __repr__(self) -> str:
        serves = "" if self.scheme is None else f" for {self.scheme}"
        return (f"Resident({self.code!r}, {self.layout.holds}{serves}, "
                f"{self.nbytes / 2**20:.1f} MiB{'' if self.loaded else ', unloaded'})")


class Residents:
    """The resident data one cluster (its transport's ``session``) holds, by id."""

    def __init__(self, session: int) -> None:
        self.session = session
        self.held: dict = {}                # id -> Resident, loaded and not unloaded
        self.count = 0                      # resident data loaded so far (their ids)
        self.lock = threading.Lock()        # loads from several threads count in turn

    def add(self, code: Any, data: tuple, options: Options, n_workers: int, speeds: list,
            remote: bool) -> Resident:
        """The code's data encoded as ``Cluster.load``'s (checked) options say, each
        worker's shares by the assignment they give for a cluster of ``n_workers``, to be
        held; a gradient code's partitions, each on the workers its assignment names."""
        if isinstance(code, GradientCode):
            return self.hold(Partitions(code, *data), data)
        held, m = Scheme.parse(options.scheme or schemes.default()), options.pieces
        assert m is not None, "load always gives pieces"
        assignment = options.assignment_for(code, n_workers, speeds, remote=remote)
        return self.hold(Layout(code, data, held, m, options.seed, assignment), data, held, m)

    def hold(self, layout: Any, data: tuple, scheme: Any = None,
             pieces: Any = None) -> Resident:
        """Data laid out for the workers (a Layout, or another kind's with its ``held``,
        ``assignment``, ``code``, ``holds`` and ``nbytes``), to be held."""
        with self.lock:
            self.count += 1
            ident = self.count
        resident = self.held[ident] = Resident(self.session, ident, layout, data, scheme,
                                               pieces)
        return resident

    def holds(self, data: Resident) -> bool:
        return self.held.get(data.ident) is data

    def check(self, data: Any, unloaded: bool = False) -> None:
        """data is what this cluster's load returned (and still loaded unless told)."""
        if not isinstance(data, Resident):
            raise InvalidParameterError(f"Argument 'data' must be what Cluster.load returned, not "
                                        f"{type(data).__name__}.")
        if data.session != self.session:
            raise InvalidParameterError(
                f"{data!r} was loaded on another cluster, not on this one.")
        if not unloaded and not self.holds(data):
            raise InvalidParameterError(f"{data!r} was unloaded: load it again.")

    def drop(self, data: Resident) -> bool:
        """Forget data (False if it was not held); it reads as unloaded from now on."""
        if self.held.pop(data.ident, None) is None:
            return False
        data.loaded = False
        return True

    def clear(self) -> None:
        for data in list(self.held.values()):
            self.drop(data)
