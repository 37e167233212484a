"""Who is connected to whom: a bipartite graph of K relays and N users (``Topology``).

Relay k serves the users of its group U_k, and a user may be in several groups: each of
its relays hears its local update, and what a relay hears is its side information in the
coded downlink. The flat system (workers storing data sets, no relays) is the same graph
read as worker k storing the data sets of U_k.

>>> topology = Topology.combination(4, 2)    # a user on every pair of 4 relays
>>> topology.users, topology.groups[0], topology.relays_of(5)
(6, (0, 1, 2), (2, 3))
>>> Topology([[0, 1], [1, 2]]).least, Topology([[0, 1], [1, 2]]).everywhere
(2, (1,))
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ffcode import checks
from ffcode.errors import InvalidParameterError

MAX_RELAYS = 16     # the exact bounds enumerate subsets of the relays
LAYOUTS = ("flat", "hierarchical")  # the relays compute their users' updates, or the users


class Topology:
    """K relays and the groups of users they serve: ``groups``, one sequence of users per
    relay (at most ``MAX_RELAYS`` relays), the users numbered 0..N-1. Every user is in at
    least one group, no group is empty, and no user appears twice in a group; anything else
    is refused with the reason."""

    def __init__(self, groups: Iterable[Iterable[Any]]) -> None:
        checks.sequence(groups, "Argument 'groups'", "a sequence of groups of users")
        parsed = []
        for k, group in enumerate(groups):
            checks.sequence(group, f"Group {k}", "a sequence of users")
            users = [checks.integer(u, f"groups[{k}]", low=0) for u in group]
            if not users:
                raise InvalidParameterError(f"Group {k} is empty: every relay serves at least "
                                            "one user.")
            if len(set(users)) < len(users):
                twice = sorted(u for u in set(users) if users.count(u) > 1)
                raise InvalidParameterError(f"Group {k} lists user {twice[0]} more than once.")
            parsed.append(tuple(sorted(users)))
        if not parsed:
            raise InvalidParameterError("Argument 'groups' is empty: a topology has at least "
                                        "one relay.")
        if len(parsed) > MAX_RELAYS:
            raise InvalidParameterError(f"A topology has at most {MAX_RELAYS} relays, not "
                                        f"{len(parsed)} (its bounds enumerate subsets of them).")
        n = max(max(group) for group in parsed) + 1
        served = set().union(*parsed)
        if len(served) < n:
            missing = min(set(range(n)) - served)
            raise InvalidParameterError(f"User {missing} is in no group: every user from 0 to "
                                        f"{n - 1} is served by at least one relay.")
        self.groups: tuple[tuple[int, ...], ...] = tuple(parsed)
        relays_of: list[list[int]] = [[] for _ in range(n)]
        for k, group in enumerate(parsed):
            for u in group:
                relays_of[u].append(k)
        self._relays_of = tuple(map(tuple, relays_of))

    # -- the papers' structured topologies ---------------------------------------------------

    @classmethod
    def combination(cls, relays: int, r: int) -> "Topology":
        """A user on every r-subset of the relays (C(K, r) users, in lexicographic order of
        their subsets): every group has C(K-1, r-1) users, every user r relays."""
        relays = checks.integer(relays, "relays", low=1, high=MAX_RELAYS)
        r = checks.integer(r, "r", low=1, high=relays)
        subsets = list(itertools.combinations(range(relays), r))
        return cls([[u for u, s in enumerate(subsets) if k in s] for k in range(relays)])

    @classmethod
    def cyclic(cls, relays: int, r: int, per_relay: int = 1) -> "Topology":
        """``per_relay`` users for each relay k, each also on the next r - 1 relays
        (mod K): K * per_relay users, every user r relays, every group r * per_relay."""
        relays = checks.integer(relays, "relays", low=1, high=MAX_RELAYS)
        r = checks.integer(r, "r", low=1, high=relays)
        per_relay = checks.integer(per_relay, "per_relay", low=1)
        return cls([[u for u in range(relays * per_relay)
                     if (k - u // per_relay) % relays < r] for k in range(relays)])

    @classmethod
    def disjoint(cls, relays: int, per_relay: int) -> "Topology":
        """A tree: ``per_relay`` users for each relay, each user on one relay only."""
        return cls.cyclic(relays, 1, per_relay)

    # -- what it is ---------------------------------------------------------------------------

    @property
    def relays(self) -> int:
        """K, the number of relays."""
        return len(self.groups)

    @property
    def users(self) -> int:
        """N, the number of users."""
        return len(self._relays_of)

    def relays_of(self, user: int) -> tuple[int, ...]:
        """The relays whose groups hold ``user``."""
        return self._relays_of[checks.integer(user, "user", low=0, high=self.users - 1)]

    @property
    def least(self) -> int:
        """The fewest users any relay serves (min_k #U_k)."""
        return min(len(g) for g in self.groups)

    @property
    def everywhere(self) -> tuple[int, ...]:
        """The users every relay serves (nothing about them needs to move)."""
        return tuple(u for u, rs in enumerate(self._relays_of) if len(rs) == self.relays)

    @property
    def load(self) -> float:
        """The mean number of relays a user is on (the computation load)."""
        return sum(len(rs) for rs in self._relays_of) / self.users

    def masks(self) -> list[int]:
        """Each user's relays as a bit mask (bit k for relay k)."""
        return [sum(1 << k for k in rs) for rs in self._relays_of]

    def without(self, relays: Iterable[Any] = (), users: Iterable[Any] = ()) -> "Reduced":
        """What is left when ``relays`` and ``users`` are lost: the topology of the rest,
        renumbered (a relay left serving no one is dropped too), and the old numbers of the
        relays and users kept. A user whose every relay is lost cannot reach the server:
        refused, naming the user and its relays.

        >>> left = Topology.combination(4, 2).without(relays=[0])
        >>> left.topology.groups, left.relays, left.users
        (((0, 3, 4), (1, 3, 5), (2, 4, 5)), (1, 2, 3), (0, 1, 2, 3, 4, 5))
        >>> Topology([[0, 1], [1, 2]]).without(relays=[1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ffcode.errors.InvalidParameterError: User 2 is served only by lost relay 1: its ...
        """
        lost_relays = self._indices(relays, "relays", self.relays)
        lost_users = self._indices(users, "users", self.users)
        kept_users = [u for u in range(self.users) if u not in lost_users]
        for u in kept_users:
            if set(self._relays_of[u]) <= lost_relays:
                which = ", ".join(map(str, self._relays_of[u]))
                noun = "relay" if len(self._relays_of[u]) == 1 else "relays"
                raise InvalidParameterError(f"User {u} is served only by lost {noun} {which}: "
                                            "its update cannot reach the server.")
        if not kept_users:
            raise InvalidParameterError("Every user is lost: no topology is left.")
        number = {u: i for i, u in enumerate(kept_users)}
        kept = [(k, [number[u] for u in g if u in number]) for k, g in enumerate(self.groups)
                if k not in lost_relays]
        kept = [(k, g) for k, g in kept if g]
        return Reduced(Topology([g for _, g in kept]), tuple(k for k, _ in kept),
                       tuple(kept_users))

    @staticmethod
    def _indices(values: Iterable[Any], name: str, size: int) -> set:
        checks.sequence(values, f"Argument '{name}'", "a sequence of indices")
        return {checks.integer(v, name, low=0, high=size - 1) for v in values}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topology) and self.groups == other.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    def __repr__(self) -> str:
        return f"Topology({[list(g) for g in self.groups]})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Topology, ([list(g) for g in self.groups],))


@dataclass(frozen=True)
class Reduced:
    """A topology after losses (``Topology.without``): the ``topology`` left, and for each
    of its relays and users the number it had before (``relays``, ``users``)."""
    topology: Topology
    relays: tuple[int, ...]
    users: tuple[int, ...]


def parse(text: str) -> Topology:
    """A topology from the command line's spelling: ``combination:K:r``,
    ``cyclic:K:r[:per_relay]``, ``disjoint:K:per_relay`` or the groups themselves,
    ``0,1,2;2,3;3,0`` (relay k's users, relays separated by ';').

    >>> parse("combination:3:2").groups
    ((0, 1), (0, 2), (1, 2))
    >>> parse("0,1;1,2").groups
    ((0, 1), (1, 2))
    """
    if not isinstance(text, str):
        raise InvalidParameterError(f"A topology must be given as a string, not "
                                    f"{type(text).__name__}.")
    name, _, rest = text.partition(":")
    makers = {"combination": (Topology.combination, 2, 2), "cyclic": (Topology.cyclic, 2, 3),
              "disjoint": (Topology.disjoint, 2, 2)}
    if name in makers:
        maker, low, high = makers[name]
        numbers = rest.split(":") if rest else []
        if not low <= len(numbers) <= high or not all(x.strip().isdigit() for x in numbers):
            raise InvalidParameterError(f"Topology {text!r}: {name} takes {low} to {high} "
                                        "whole numbers separated by ':' (see the help).")
        return maker(*(int(x) for x in numbers))
    groups: list[Sequence[int]] = []
    for k, part in enumerate(text.split(";")):
        items = [x.strip() for x in part.split(",") if x.strip()]
        if not all(x.isdigit() for x in items):
            raise InvalidParameterError(f"Topology {text!r}: group {k} must list users as whole "
                                        "numbers separated by ',' (or name combination, cyclic "
                                        "or disjoint).")
        groups.append([int(x) for x in items])
    return Topology(groups)
