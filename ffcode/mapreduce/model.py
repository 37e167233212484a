"""A MapReduce job's phases priced from bytes and rates (map, encode, shuffle, decode,
reduce), for K workers at computation load r, so that K = 100 is priced before it is run.

``values`` bytes of intermediate values (TeraSort's: its input) make K·C(K, r) pieces of
S = values / (K·C(K, r)) bytes: one per reduce function and batch (see
``shuffle.Placement``). A worker needs the C(K-1, r) pieces of the batches it did not map.
Uncoded, each is sent once, its batch's r mappers taking turns; coded, each (r + 1)-subset
exchanges r + 1 packets of S/r, each for r receivers (``shuffle.coded_packet``). Where the
bytes go depends on the network:

- "links": every ordered pair of workers has its own link of ``link_rate`` bytes a second
  (what per-link caps emulate), all transfers at once, a packet for r receivers sent to
  each; ``node_rate`` bounds what one worker sends. A link then carries C(K-2, r-1)·S/r
  bytes coded and uncoded alike: at the same load r coding saves nothing, and against r = 1
  the bytes per link fall as (K - r)/(K - 1).
- "turns": one transmission at a time on a shared medium of ``link_rate`` (Coded TeraSort's
  schedule: the workers take turns, a multicast reaching all its receivers at once). Coded
  sends r times fewer bytes than uncoded at the same r, and r(K - 1)/(K - r) times fewer
  than r = 1.

>>> turns = dict(network="turns", link_rate=12.5e6)         # 100 Mbit/s, shared
>>> plain = predict(16, 1, 12e9, coded=False, **turns).shuffle
>>> round(plain / predict(16, 3, 12e9, **turns).shuffle, 2)  # TeraSort / Coded TeraSort
3.46
>>> links = dict(network="links", link_rate=12.5e6)         # every link 100 Mbit/s
>>> round(predict(8, 1, 1e9, coded=False, **links).shuffle / predict(8, 3, 1e9, **links).shuffle, 2)
1.4
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ffcode import checks

NETWORKS = ("links", "turns")


@dataclass(frozen=True)
class Phases:
    """Seconds of each phase, as the paper's table has them: ``map``, ``encode`` (pack),
    ``shuffle``, ``decode`` (unpack) and ``reduce``; ``total`` is their sum (the phases
    follow one another)."""
    map: float
    encode: float
    shuffle: float
    decode: float
    reduce: float

    @property
    def total(self) -> float:
        return self.map + self.encode + self.shuffle + self.decode + self.reduce


@dataclass(frozen=True)
class Loads:
    """Bytes of one shuffle: ``piece`` (S, one function's values of one batch),
    ``per_link`` (on each ordered pair's link, unicast), ``per_worker`` (each worker sends,
    unicast), ``transmissions`` (bytes on a shared medium, a multicast counted once)."""
    piece: float
    per_link: float
    per_worker: float
    transmissions: float


def loads(workers: int, load: int, values: float, coded: bool = True) -> Loads:
    """The bytes of a shuffle of ``values`` bytes on K = ``workers`` at load r = ``load``.

    >>> loads(4, 2, 24.0)
    Loads(piece=1.0, per_link=1.0, per_worker=3.0, transmissions=6.0)
    """
    K, r = _checked(workers, load)
    values = checks.non_negative(values, "values")
    piece = values / (K * math.comb(K, r))
    per_link = math.comb(K - 2, r - 1) * piece / r
    per_worker = math.comb(K - 1, r) * piece
    return Loads(piece, per_link, per_worker, K * per_worker / (r if coded else 1))


def predict(workers: int, load: int, values: float, *, link_rate: float,
            network: str = "links", node_rate: float = math.inf, coded: bool = True,
            input_bytes: float | None = None, map_rate: float = math.inf,
            encode_rate: float = math.inf, decode_rate: float = math.inf,
            reduce_rate: float = math.inf) -> Phases:
    """The phases of a job on K workers at load r (coded or not) whose map turns
    ``input_bytes`` (default ``values``) into ``values`` bytes of intermediate values;
    rates in bytes a second (infinite: free). A worker maps r/K of the input, encodes
    (coded) its C(K-1, r) packets from r segments each, decodes as many from r packets and
    r - 1 known segments each, and reduces 1/K of the values."""
    K, r = _checked(workers, load)
    network = checks.choice(network, "network", NETWORKS)
    link_rate = checks.positive(link_rate, "link_rate", finite=False)
    node_rate = checks.positive(node_rate, "node_rate", finite=False)
    values = checks.non_negative(values, "values")
    input_bytes = values if input_bytes is None else \
        checks.non_negative(input_bytes, "input_bytes")
    rates = [checks.positive(rate, name, finite=False) for name, rate in (
        ("map_rate", map_rate), ("encode_rate", encode_rate), ("decode_rate", decode_rate),
        ("reduce_rate", reduce_rate))]
    bytes_ = loads(K, r, values, coded)
    if network == "links":
        shuffle = max(bytes_.per_link / link_rate, bytes_.per_worker / node_rate)
    else:
        shuffle = bytes_.transmissions / link_rate
    groups = math.comb(K - 1, r) * bytes_.piece
    return Phases(map=input_bytes * r / K / rates[0],
                  encode=groups / rates[1] if coded else 0.0,
                  shuffle=shuffle,
                  decode=groups * r / rates[2] if coded else 0.0,
                  reduce=values / K / rates[3])


def _checked(workers: int, load: int) -> tuple[int, int]:
    K = checks.integer(workers, "workers", low=2)
    r = checks.integer(load, "load", low=1, high=K - 1)
    return K, r
