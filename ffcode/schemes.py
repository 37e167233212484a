"""How a coded job's results travel from the workers to the decoder: the one list of
schemes that the runtime, the simulator, the estimators and the command line share.

A ``Scheme`` is a ``str``: ``Scheme.COMPFS == "compfs"``, and every function that takes a
scheme takes its name too.

>>> from ffcode.schemes import Scheme
>>> Scheme.parse("cfs")
<Scheme.CFS: 'cfs'>
>>> [str(s) for s in Scheme if s.coded]
['classic', 'systematic', 'cfs', 'compfs']
>>> Scheme.CLASSIC.packets(4), Scheme.COMPFS.packets(4)
(1, 4)
"""
from __future__ import annotations

import enum
from typing import Any


class Scheme(str, enum.Enum):
    """uncoded: every worker's slice of the work, all needed; classic: the R fastest
    whole results; systematic: whole results sent as m plain row pieces; cfs: whole results
    sent as m random combinations of their pieces; compfs (computation at full speed): a
    packet per piece as it is computed."""

    UNCODED = "uncoded"
    CLASSIC = "classic"
    SYSTEMATIC = "systematic"
    CFS = "cfs"
    COMPFS = "compfs"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def parse(cls, value: Any, name: str = "scheme") -> "Scheme":
        """The scheme named by value (a Scheme or its name); ValueError naming the choices."""
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except (ValueError, TypeError):
            raise ValueError(f"Argument {name!r} must be one of {', '.join(NAMES)}; not "
                             f"{value!r}.") from None

    @property
    def coded(self) -> bool:
        """Whether any large-enough part of the work decodes (all but uncoded)."""
        return self is not Scheme.UNCODED

    @property
    def whole(self) -> bool:
        """Whether a worker sends each result whole, as one packet (uncoded, classic)."""
        return self in (Scheme.UNCODED, Scheme.CLASSIC)

    @property
    def send(self) -> str:
        """How a worker sends a result, one of "whole", "systematic" (plain pieces), "random"
        (random combinations of its pieces) or "pieces" (one per piece as computed)."""
        return _SEND[self]

    @property
    def holds(self) -> str:
        """What its workers hold, one of "slices" (uncoded), "shares" (whole coded shares) or
        "pieces" (shares already combined into m pieces, for compfs)."""
        return _HOLDS[self]

    def packets(self, pieces: int) -> int:
        """The packets a result of m = pieces row pieces travels as."""
        return 1 if self.whole else pieces


NAMES = tuple(s.value for s in Scheme)
_SEND = {Scheme.UNCODED: "whole", Scheme.CLASSIC: "whole", Scheme.SYSTEMATIC: "systematic",
         Scheme.CFS: "random", Scheme.COMPFS: "pieces"}
_HOLDS = {Scheme.UNCODED: "slices", Scheme.CLASSIC: "shares", Scheme.SYSTEMATIC: "shares",
          Scheme.CFS: "shares", Scheme.COMPFS: "pieces"}
