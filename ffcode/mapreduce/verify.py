"""Checking a shuffle against a lying peer: every piece a worker received (a sender's segment
of a coded packet, or a value sent plain) is compared, by random fingerprints, with the
same piece computed by its sender and by up to two other mappers of its batch from the
values they mapped themselves; a disagreement is judged (who can have lied) and the shuffle
is redone without the liar, or without the pair whose word stands against each other.

Why it works: a piece is one sender's word alone (the receiver takes the others' segments
out with values it mapped itself). The fingerprint of a piece is a random bilinear form
r^T M s of its bytes laid out as a matrix M over GF(2**61 - 1) (ffcode.fingerprints.of_bytes),
the randomness drawn from a seed the master chooses only once every message was received:
a sender that lied cannot adapt its messages to it, and a wrong piece passes with
probability at most 2 / (2**61 - 1) per check. A worker knowing the seed can still lie in
the fingerprints it reports; that is what the judgement is for.

Judging one piece (receiver w, sender j, vouchers v: other mappers of the batch): honest
mappers hold the same value, so a worker x can be the one liar only if every mapper but x
reports the same fingerprint, which the receiver's matches unless x is w or j (a sender
that lied makes the receiver decode something else). With one liar among a piece's
parties, the liar is among the piece's candidates; over the whole shuffle, with one liar,
it is in every disputed piece's candidates: a single worker common to them all is named
and excluded. Otherwise nobody is excluded: when the mappers agree (sender j against
receiver w, the sender's message is its word against the receiver's) the pair is
distrusted and the value sent again plain by another mapper; when the mappers disagree
with no other mapper to settle it (load 2), the job fails naming both as suspects.

>>> from ffcode.mapreduce.shuffle import Placement
>>> plan = Plan(Placement(3, 2))
>>> plan.pieces[0]
Piece(receiver=0, function=0, batch=2, sender=1, group=(0, 1, 2), vouchers=(2,))
>>> prints = {w: [7] * len(plan.roles(w)) for w in range(3)}
>>> judge(plan, prints).disputed
0
>>> prints[1][plan.roles(1).index((0, "sender"))] = 8   # worker 1 lies about piece 0
>>> verdict = judge(plan, prints)
>>> verdict.disputed, verdict.candidates
(1, [(1,)])
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from ffcode import checks
from ffcode.fingerprints import KEY_BITS, of_bytes
from ffcode.mapreduce.shuffle import Placement, Recovery, segment, uncoded_transfers
from ffcode.errors import InvalidParameterError

KEY_BYTES = KEY_BITS // 8  # of a fingerprint's key, derived from the seed and the piece
VOUCHERS = 2                # mappers besides the sender that vouch for a piece
SEED_BITS = 128


class Piece(NamedTuple):
    """What ``sender`` gave ``receiver`` of the value (``function``, ``batch``): its
    segment of it in ``group``'s packet, or the whole value (``group`` None); ``vouchers``
    are other mappers of the batch that fingerprint it too."""
    receiver: int
    function: int
    batch: int
    sender: int
    group: Optional[tuple]
    vouchers: tuple


class Plan:
    """Every piece of one shuffle attempt (as ``shuffle.outgoing``, or a ``Recovery`` of
    the ``lost`` and ``distrust`` given), in an order every worker and the master compute
    alike; ``roles(w)``: the pieces worker w fingerprints, and as whom."""

    def __init__(self, placement: Placement, coded: bool = True, lost: Sequence[int] = (),
                 distrust: Sequence[Sequence[int]] = ()) -> None:
        self.placement = placement
        self.recovery = Recovery(placement, lost, coded, distrust) \
            if lost or distrust else None
        gone = set() if self.recovery is None else set(self.recovery.lost)
        if self.recovery is not None:
            groups, plain = self.recovery.groups, [
                (j, k, q, b) for j, k, q, b in self.recovery.transfers]
        else:
            groups = placement.groups() if coded else []
            plain = [] if coded else [(j, k, k, b) for j, k, b in uncoded_transfers(placement)]
        found = [(k, k, placement.needed(k, g), j, g) for g in groups for k in g
                 for j in g if j != k] + [(k, q, b, j, None) for j, k, q, b in plain]
        self.pieces = [Piece(k, q, b, j, g, self._vouchers(q, b, j, gone))
                       for k, q, b, j, g in sorted(found, key=_order)]
        self._roles: dict = {}
        for i, p in enumerate(self.pieces):
            self._roles.setdefault(p.receiver, []).append((i, "receiver"))
            self._roles.setdefault(p.sender, []).append((i, "sender"))
            for v in p.vouchers:
                self._roles.setdefault(v, []).append((i, "voucher"))

    def _vouchers(self, q: int, b: int, sender: int, gone: set) -> tuple:
        others = [m for m in self.placement.subsets[b] if m != sender and m not in gone]
        start = (q + b + sender) % len(others) if others else 0
        return tuple(sorted((others[start:] + others[:start])[:VOUCHERS]))

    def roles(self, worker: int) -> list[tuple[int, str]]:
        """(piece's index, "receiver", "sender" or "voucher") for each piece the worker
        fingerprints, in the plan's order."""
        return sorted(self._roles.get(worker, []))


def _order(found: tuple) -> tuple:
    k, q, b, j, g = found
    return (k, q, b, j, () if g is None else g)


def fingerprint(value: Any, seed: int, index: int) -> int:
    """The fingerprint of piece ``index`` of a check drawn with ``seed``: of its bytes, or of
    its elements (a GF(p) vector, as 64-bit words), ``ffcode.fingerprints.of_bytes`` with a
    key derived from (seed, index) by BLAKE2b: values that differ in any element, or in
    length, give the same fingerprint with probability at most 2 / (2**61 - 1)."""
    if isinstance(value, np.ndarray) and value.dtype != np.uint8:
        value = np.ascontiguousarray(value, np.uint64)
    key = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=KEY_BYTES).digest()
    return of_bytes(value, int.from_bytes(key, "little"))


def prints(plan: Plan, worker: int, seed: int, received: Mapping[tuple, Any],
           held: Mapping[tuple, Any], algebra: Any) -> list[int]:
    """The worker's fingerprints of its pieces (``plan.roles``): of what it decoded as a
    receiver (``received``, by (function, batch, sender), as ``shuffle.pieces`` gives
    it), else of the piece computed from the value it mapped (``held``)."""
    out = []
    for i, role in plan.roles(worker):
        p = plan.pieces[i]
        if role == "receiver":
            value = received[(p.function, p.batch, p.sender)]
        else:
            value = held[(p.function, p.batch)]
            if p.group is not None:
                value = segment(p.group, p.sender, p.receiver, value, algebra)
        out.append(fingerprint(value, seed, i))
    return out


def seed() -> int:
    """A fresh seed for a check (the system's randomness: a liar cannot guess it)."""
    return secrets.randbits(SEED_BITS)


@dataclass
class Verdict:
    """A check's judgement: ``checked`` pieces, ``disputed`` ones (whose parties'
    fingerprints differ) and, for each, the workers that can be its one liar
    (``candidates``); ``liars``, the worker found in every dispute's candidates (named
    only when there is exactly one); ``distrust``, (sender, receiver) pairs whose word
    stands against each other and whose value another mapper is to send; ``suspects``,
    pairs of mappers that disagree with nobody to settle it (the job cannot go on)."""
    checked: int = 0
    disputed: int = 0
    candidates: list = field(default_factory=list)
    liars: list = field(default_factory=list)
    distrust: list = field(default_factory=list)
    suspects: list = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.disputed


def judge(plan: Plan, prints: Mapping[int, Sequence[int]],
          earlier: Sequence[Sequence[int]] = ()) -> Verdict:
    """Judge a check from every worker's fingerprints (``prints[w]`` in ``plan.roles(w)``'s
    order; a worker's list of another length is refused): see the module's docstring.
    ``earlier``: the candidates of the disputes of the job's earlier checks (the one liar
    is among them too)."""
    said: dict = {}
    for w, values in prints.items():
        roles = plan.roles(w)
        count = len(values) if isinstance(values, (list, tuple)) else "no"
        if count != len(roles) or not all(type(v) is int for v in values):
            raise InvalidParameterError(f"worker {w} reported {count} fingerprints, not "
                                        f"{len(roles)} numbers")
        for (i, _), v in zip(roles, values):
            said.setdefault(i, {})[w] = v
    verdict = Verdict(checked=len(plan.pieces))
    disputes = []
    for i, p in enumerate(plan.pieces):
        heard = said.get(i, {})
        parties = (p.receiver, p.sender, *p.vouchers)
        missing = [w for w in parties if w not in heard]
        if missing:
            raise InvalidParameterError(f"no fingerprint of piece {i} from workers {missing}")
        if len({heard[w] for w in parties}) == 1:
            continue
        disputes.append((p, tuple(x for x in parties if _can_be_liar(x, p, heard)) or
                         tuple(sorted(set(parties)))))      # none alone: name them all
    verdict.disputed = len(disputes)
    verdict.candidates = [c for _, c in disputes]
    if not disputes:
        return verdict
    common = set.intersection(*(set(c) for c in [*earlier, *verdict.candidates]))
    if len(common) == 1:
        verdict.liars = sorted(common)
        return verdict
    for p, c in disputes:
        if set(c) == {p.sender, p.receiver}:
            verdict.distrust.append((p.sender, p.receiver))
        else:
            verdict.suspects.append(tuple(sorted(c)))
    verdict.distrust = sorted(set(verdict.distrust))
    verdict.suspects = sorted(set(verdict.suspects))
    return verdict


def _can_be_liar(x: int, p: Piece, heard: Mapping[int, int]) -> bool:
    """Whether worker x alone lying explains what a piece's parties said: every other
    mapper reports one fingerprint, the true one, which the receiver's matches unless x
    is the receiver or the sender."""
    honest = {heard[m] for m in (p.sender, *p.vouchers) if m != x}
    if len(honest) > 1:
        return False
    return x in (p.receiver, p.sender) or not honest or heard[p.receiver] in honest


def checkable(placement: Placement) -> bool:
    """Whether a shuffle can be checked: every batch has a second mapper (load r >= 2)."""
    return checks.integer(placement.load, "load", low=1) >= 2
