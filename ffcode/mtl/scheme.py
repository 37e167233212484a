"""One training step's exchange between the relays and the server, coded or uncoded, over
GF(p): every relay starts with its users' updates and ends with every user's.

**Coded** (``Coded``). Each update is cut into ``split`` parts (s). Relay j sends a_j random
combinations of its users' parts (the uplink), a_j = s L_j for a least allocation L of the
uplink's linear program (``bounds.uplink_solution``). The server sends s (N - min_k #U_k)
random combinations of what it received (the downlink, one broadcast); relay k subtracts
its own parts and solves for the s (N - #U_k) it lacks. Both loads meet their lower bounds
(``bounds``): with generic coefficients the relays' combinations restricted to the parts a
relay lacks have full rank exactly when every cut holds (Hall's theorem on the support of
the coefficients), and a generic downlink of the bound's size keeps that rank. The
coefficients are drawn from ``seed`` and checked; a field too small for them is refused.
On separate links the server sends each relay only the s (N - #U_k) combinations it
solves with: coding then saves on the uplink alone.

**Uncoded** (``Uncoded``). Each update that some relay lacks goes up once, from one of its
user's relays (the one carrying the fewest so far), and down once to everyone.

>>> from ffcode.field import GF
>>> from ffcode.mtl.topology import Topology
>>> F, topology = GF(65521), Topology([[0, 1], [1, 2], [0, 2]])
>>> scheme = Coded(topology, F)
>>> scheme.split, scheme.sends, scheme.loads.uplink, scheme.loads.downlink
(2, (1, 1, 1), Fraction(3, 2), Fraction(1, 1))
>>> updates = F.random((3, 4), seed=1)
>>> messages = [scheme.uplink(k, updates[list(g)]) for k, g in enumerate(topology.groups)]
>>> Y = scheme.downlink(messages)
>>> all((scheme.decode(k, updates[list(g)], Y) == updates).all()
...     for k, g in enumerate(topology.groups))
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ffcode import checks
from ffcode.errors import InvalidParameterError
from ffcode.field import PrimeField
from ffcode.mtl.bounds import cuts, uplink_solution
from ffcode.mtl.topology import Topology

TRIES = 64          # draws of coefficients before a field is called too small


@dataclass(frozen=True)
class Loads:
    """A step's loads between the relays and the server, in units of one user's update:
    ``uplink`` (all relays together; ``per_relay`` each), ``downlink`` on one shared
    medium (a broadcast counted once) and ``downlink_links`` on separate links (the sum
    over the relays' links); ``split`` parts per update."""
    uplink: Fraction
    downlink: Fraction
    downlink_links: Fraction
    per_relay: tuple[Fraction, ...]
    split: int


def allocation(topology: Topology, split: Optional[int] = None) -> tuple[int, tuple[int, ...]]:
    """(s, a): parts per update and how many combinations of parts each relay sends up.

    By default s is the least that makes the linear program's optimum whole, which meets
    the bound. A given ``split`` rounds s L_j up and then takes back, relay by relay, what
    every cut can spare: the best the rounding finds, the bound's s L rounded up at worst."""
    L = uplink_solution(topology)
    if split is None:
        split = math.lcm(1, *(x.denominator for x in L))
    split = checks.integer(split, "split", low=1)
    a = [min(math.ceil(split * x), split * len(g)) for x, g in zip(L, topology.groups)]
    if all((split * x).denominator == 1 for x in L):
        return split, tuple(a)      # s L itself: optimal, no relay can spare a row
    rows = cuts(topology)

    def holds(a: list[int]) -> bool:
        return all(sum(a[j] for j in range(len(a)) if (J >> j) & 1) >= split * b
                   for J, b in rows)

    for j in range(len(a)):
        while a[j] > 0 and holds(a[:j] + [a[j] - 1] + a[j + 1:]):
            a[j] -= 1
    return split, tuple(a)


def coded_loads(topology: Topology, split: Optional[int] = None) -> Loads:
    """The coded scheme's loads (see the module docstring)."""
    s, a = allocation(topology, split)
    return _loads(topology, s, a, topology.users - topology.least)


def uncoded_loads(topology: Topology) -> Loads:
    """The uncoded scheme's loads: every update some relay lacks, up once and down once."""
    return _loads(topology, 1, [len(x) for x in _assignment(topology)],
                  topology.users - len(topology.everywhere))


def _loads(topology: Topology, s: int, sends: Sequence[int], broadcast: int) -> Loads:
    """The loads of a scheme whose relays send ``sends`` rows of 1/s update each and whose
    server broadcasts ``broadcast`` updates (on links, each relay what it lacks)."""
    n = topology.users
    return Loads(uplink=Fraction(sum(sends), s), downlink=Fraction(broadcast),
                 downlink_links=Fraction(sum(n - len(g) for g in topology.groups)),
                 per_relay=tuple(Fraction(x, s) for x in sends), split=s)


def _assignment(topology: Topology) -> list[list[int]]:
    """Uncoded: which users' updates each relay sends up (each one some relay lacks, from
    the one of its relays that has the fewest so far)."""
    sends: list[list[int]] = [[] for _ in range(topology.relays)]
    everywhere = set(topology.everywhere)
    for user in range(topology.users):
        if user not in everywhere:
            relay = min(topology.relays_of(user), key=lambda k: (len(sends[k]), k))
            sends[relay].append(user)
    return sends


class _Exchange:
    """What both schemes share: the topology, the field and the checks of updates."""

    topology: Topology
    field: PrimeField
    split: int

    def width(self, d: int) -> int:
        """Elements in a row of its messages for updates of ``d`` elements: a part's."""
        return -(-checks.integer(d, "d", low=0) // self.split)

    def _own(self, relay: int, updates: Any) -> np.ndarray:
        """Relay ``relay``'s users' updates, checked: (#U_k, d) field elements."""
        relay = checks.integer(relay, "relay", low=0, high=self.topology.relays - 1)
        updates = self.field.elements(updates, "updates")
        size = len(self.topology.groups[relay])
        if updates.ndim != 2 or updates.shape[0] != size:
            raise InvalidParameterError(f"Argument 'updates' must hold relay {relay}'s "
                                        f"{size} users' updates as rows, not shape "
                                        f"{updates.shape}.")
        return updates

    def _messages(self, messages: Sequence[Any], rows: Sequence[int]) -> list[np.ndarray]:
        """The relays' uplink messages, checked: as many rows as each relay sends and one
        width."""
        if len(messages) != self.topology.relays:
            raise InvalidParameterError(f"Argument 'messages' must hold one message per relay "
                                        f"({self.topology.relays}), not {len(messages)}.")
        out = [self.field.elements(m, f"messages[{k}]") for k, m in enumerate(messages)]
        widths = {m.shape[1] for m in out if m.ndim == 2}
        for k, (m, expected) in enumerate(zip(out, rows)):
            if m.ndim != 2 or m.shape[0] != expected or len(widths) > 1:
                raise InvalidParameterError(f"Message {k} must be {expected} rows of the "
                                            f"common width, not shape {m.shape}.")
        return out


class Coded(_Exchange):
    """The coded exchange on ``topology`` over ``field`` (see the module docstring):
    ``split`` parts per update (by default the least that meets the uplink bound), the
    coefficients drawn from ``seed`` (the server and every relay build the same scheme
    from it)."""

    def __init__(self, topology: Topology, field: PrimeField, split: Optional[int] = None,
                 seed: int = 0) -> None:
        self.topology = checks.instance(topology, "topology", Topology)
        self.field = checks.instance(field, "field", PrimeField)
        self.split, self.sends = allocation(topology, split)
        self.seed = checks.integer(seed, "seed", low=0)
        self.loads = _loads(topology, self.split, self.sends, topology.users - topology.least)
        rng = np.random.default_rng(self.seed)
        lacking = [self._parts(sorted(set(range(topology.users)) - set(g)))
                   for g in topology.groups]
        # the relays' coefficients first (what every relay lacks must reach the server in
        # full rank), then the server's: two draws that each rarely fail, tried apart
        E = next((E for E in (self._encoders(rng) for _ in range(TRIES))
                  if all(field.rank(E[:, c]) == len(c) for c in lacking if len(c))), None)
        decoders = None if E is None else next(
            (d for d in (self._decoders(rng, E, lacking) for _ in range(TRIES)) if d), None)
        if decoders is None:
            raise InvalidParameterError(f"GF({field.p}) is too small for this topology's coded "
                                        f"exchange: {TRIES} draws of coefficients left a relay "
                                        "unable to decode. Use a larger prime.")
        self.decoders = decoders

    def _parts(self, users: Sequence[int]) -> np.ndarray:
        """The coordinates (user * s + part) of the parts of ``users``."""
        s = self.split
        return np.array([u * s + q for u in users for q in range(s)], dtype=np.intp)

    def _encoders(self, rng: np.random.Generator) -> np.ndarray:
        """Draws the relays' coefficients (``encoders``); returns them as one matrix E over
        all the parts, relay after relay."""
        F, t, s = self.field, self.topology, self.split
        self.encoders = [F.asarray(rng.integers(0, F.p, (a, s * len(g)), dtype=np.int64))
                         for a, g in zip(self.sends, t.groups)]
        E = np.zeros((sum(self.sends), s * t.users), dtype=F.dtype)
        row = 0
        for a, g, Ej in zip(self.sends, t.groups, self.encoders):
            E[row:row + a][:, self._parts(g)] = Ej
            row += a
        return E

    def _decoders(self, rng: np.random.Generator, E: np.ndarray, lacking: list) -> list:
        """Draws the server's coefficients (``mixer``); returns each relay's decoder (the
        broadcast's rows it solves with, the parts it lacks and holds, the inverse and the
        part of its own), or [] when a relay could not decode."""
        F, t = self.field, self.topology
        self.mixer = F.asarray(rng.integers(0, F.p, (self.split * (t.users - t.least),
                                                     E.shape[0]), dtype=np.int64))
        D = F.matmul(self.mixer, E)
        decoders = []
        for g, missing in zip(t.groups, lacking):
            pivots = np.array(_pivot_rows(F, D[:, missing]), dtype=np.intp)
            if len(pivots) < len(missing):
                return []
            known = self._parts(g)
            decoders.append((pivots, missing, known,
                             F.matinv(D[np.ix_(pivots, missing)]) if len(pivots) else None,
                             D[np.ix_(pivots, known)]))
        return decoders

    def _stack(self, updates: np.ndarray) -> np.ndarray:
        """Updates (rows) as their parts (rows), the last part padded with zeros."""
        width = self.width(updates.shape[1])
        padded = np.zeros((updates.shape[0], width * self.split), dtype=self.field.dtype)
        padded[:, :updates.shape[1]] = updates
        return padded.reshape(updates.shape[0] * self.split, width)

    def uplink(self, relay: int, updates: Any) -> np.ndarray:
        """Relay ``relay``'s message: ``sends[relay]`` combinations of its users' parts
        (``updates``: its users' updates, in its group's order, as rows)."""
        updates = self._own(relay, updates)
        return self.field.matmul(self.encoders[relay], self._stack(updates))

    def downlink(self, messages: Sequence[Any]) -> np.ndarray:
        """The server's broadcast: s (N - min #U_k) combinations of the relays' messages."""
        return self.field.matmul(self.mixer, np.vstack(self._messages(messages, self.sends)))

    def link(self, relay: int, Y: Any) -> np.ndarray:
        """On separate links: the rows of the broadcast ``Y`` relay ``relay`` solves with,
        all the server sends it."""
        relay = checks.integer(relay, "relay", low=0, high=self.topology.relays - 1)
        return self.field.elements(Y, "Y")[self.decoders[relay][0]]

    def decode(self, relay: int, updates: Any, Y: Any, width: Optional[int] = None,
               linked: bool = False) -> np.ndarray:
        """Every user's update (N rows) at relay ``relay`` from its own ``updates`` and the
        server's broadcast ``Y`` (``linked``: Y is its link's message, ``link(relay, Y)``);
        ``width`` the updates' length (by default the relay's own updates')."""
        updates = self._own(relay, updates)
        F, t = self.field, self.topology
        pivots, lacking, known, inverse, mixed = self.decoders[relay]
        Y = F.elements(Y, "Y")
        Y = Y if linked else Y[pivots]
        own = self._stack(updates)
        if len(lacking) and (Y.ndim != 2 or Y.shape != (len(lacking), own.shape[1])):
            raise InvalidParameterError(f"Argument 'Y' must be {len(lacking)} rows of "
                                        f"{own.shape[1]} elements for relay {relay}, not "
                                        f"shape {Y.shape}.")
        parts = np.zeros((t.users * self.split, own.shape[1]), dtype=F.dtype)
        parts[known] = own
        if len(lacking):
            parts[lacking] = F.matmul(inverse, F.sub(Y, F.matmul(mixed, own)))
        width = updates.shape[1] if width is None else \
            checks.integer(width, "width", low=0, high=self.split * own.shape[1])
        return parts.reshape(t.users, -1)[:, :width]


class Uncoded(_Exchange):
    """The uncoded exchange: each update some relay lacks goes up once and down once."""

    def __init__(self, topology: Topology, field: PrimeField) -> None:
        self.topology = checks.instance(topology, "topology", Topology)
        self.field = checks.instance(field, "field", PrimeField)
        self.split = 1
        self.carried = _assignment(topology)
        self.sends = tuple(len(x) for x in self.carried)
        self.order = sorted(u for x in self.carried for u in x)
        self.loads = _loads(topology, 1, self.sends, len(self.order))

    def uplink(self, relay: int, updates: Any) -> np.ndarray:
        """Relay ``relay``'s message: the updates of the users it carries."""
        updates = self._own(relay, updates)
        group = self.topology.groups[relay]
        return updates[[group.index(u) for u in self.carried[relay]]]

    def downlink(self, messages: Sequence[Any]) -> np.ndarray:
        """The server's broadcast: every carried update, in the users' order."""
        X = np.vstack(self._messages(messages, self.sends))
        return X[np.argsort([u for users in self.carried for u in users], kind="stable")]

    def link(self, relay: int, Y: Any) -> np.ndarray:
        """On separate links: the updates relay ``relay`` lacks."""
        relay = checks.integer(relay, "relay", low=0, high=self.topology.relays - 1)
        own = set(self.topology.groups[relay])
        return self.field.elements(Y, "Y")[[i for i, u in enumerate(self.order)
                                            if u not in own]]

    def decode(self, relay: int, updates: Any, Y: Any, width: Optional[int] = None,
               linked: bool = False) -> np.ndarray:
        """Every user's update at relay ``relay``: its own and the ones in ``Y``."""
        updates = self._own(relay, updates)
        Y = self.field.elements(Y, "Y")
        group = self.topology.groups[relay]
        order = [u for u in self.order if u not in group] if linked else self.order
        if Y.shape != (len(order), updates.shape[1]):
            raise InvalidParameterError(f"Argument 'Y' must be {len(order)} rows of "
                                        f"{updates.shape[1]} elements for relay {relay}, not "
                                        f"shape {Y.shape}.")
        out = np.zeros((self.topology.users, updates.shape[1]), dtype=self.field.dtype)
        out[order] = Y
        out[list(group)] = updates
        return out


COMMUNICATIONS = ("coded", "uncoded")


def scheme_of(communication: str, topology: Topology, field: PrimeField,
              split: Optional[int] = None, seed: int = 0) -> Union[Coded, Uncoded]:
    """The exchange ``communication`` names: "coded" (``Coded``, with ``split`` and
    ``seed``) or "uncoded" (``Uncoded``).

    >>> from ffcode.field import GF
    >>> scheme_of("uncoded", Topology([[0, 1], [1, 2]]), GF(7)).sends
    (1, 1)
    """
    makers: dict[str, Callable[[], Union[Coded, Uncoded]]] = {
        "coded": lambda: Coded(topology, field, split, seed),
        "uncoded": lambda: Uncoded(topology, field)}
    return makers[checks.choice(communication, "communication", COMMUNICATIONS)]()


@dataclass(frozen=True)
class Exchanged:
    """One exchange run through: ``decoded[k]``, every user's update as relay k decoded
    it; the bytes of the relays' messages (``uplink``) and of the server's (``downlink``:
    the broadcast, or on separate links the sum of the links' messages)."""
    decoded: list
    uplink: int
    downlink: int


def exchange(scheme: Union[Coded, Uncoded], updates: Any, links: bool = False) -> Exchanged:
    """Runs one step's exchange of ``scheme`` (``Coded`` or ``Uncoded``) in this process:
    ``updates`` (N, d), row u user u's; each relay starts with its users' rows. ``links``:
    on separate links, the server sending each relay its own message.

    >>> from ffcode.field import GF
    >>> F = GF(65521)
    >>> scheme = Coded(Topology.combination(4, 2), F)
    >>> updates = F.random((6, 10), seed=0)
    >>> done = exchange(scheme, updates)
    >>> all((d == updates).all() for d in done.decoded), done.uplink, done.downlink
    (True, 160, 120)
    """
    if not isinstance(scheme, (Coded, Uncoded)):
        raise InvalidParameterError("Argument 'scheme' must be an ffcode.mtl Coded or Uncoded "
                                    f"scheme, not {type(scheme).__name__}.")
    t = scheme.topology
    updates = scheme.field.elements(updates, "updates")
    if updates.ndim != 2 or updates.shape[0] != t.users:
        raise InvalidParameterError(f"Argument 'updates' must be {t.users} users' updates as "
                                    f"rows, not shape {updates.shape}.")
    mine = [updates[list(g)] for g in t.groups]
    messages = [scheme.uplink(k, mine[k]) for k in range(t.relays)]
    Y = scheme.downlink(messages)
    down = [scheme.link(k, Y) for k in range(t.relays)] if links else [Y] * t.relays
    decoded = [scheme.decode(k, mine[k], down[k], width=updates.shape[1], linked=links)
               for k in range(t.relays)]
    return Exchanged(decoded, sum(m.nbytes for m in messages),
                     sum(d.nbytes for d in down) if links else Y.nbytes)


def _pivot_rows(F: PrimeField, M: np.ndarray) -> list[int]:
    """Rows of M that form a basis of its row space (the first independent ones): the
    pivot columns of M's transpose in reduced row echelon form."""
    if not M.size:
        return []
    R = F.rref(np.ascontiguousarray(M.T))
    return [int(np.flatnonzero(row)[0]) for row in R if row.any()]
