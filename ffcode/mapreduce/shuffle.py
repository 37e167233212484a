"""Coded shuffling (Li, Maddah-Ali, Yu, Avestimehr, "A fundamental tradeoff between
computation and communication in distributed computing"): K workers, computation load r.

The input's files are split into one batch per r-subset of the workers, and every worker
of the subset maps the batch (``Placement``). A worker q reduces function q, so after the
map it needs, for every batch it did not map, that batch's values for q. Uncoded, one of
the batch's mappers sends them (``uncoded_transfers``). Coded, every (r + 1)-subset T of the
workers exchanges what its members need of the batches the others share: member k needs
W_k, the values for k of the batch mapped exactly by T \\ {k}; W_k is split into r segments,
one per other member, and each member j sends the others one packet, the sum of its
segment of every W_k it holds (``coded_packet``): every receiver k has mapped the other
W's (it is in each of their batches' subsets), subtracts them, and keeps its segment
(``decoded_segment``). Each worker then sends 1/r of what it would uncoded.

The values are bytes, summed by XOR (``Bytes``), or vectors of a prime field, summed in it
(``Vectors``); with a sum-reduce the values of a batch's files are added up first (the
compressed shuffle), so a batch carries one vector per function.

Three workers, load 2, one file a batch: each pair of workers maps a batch, and the one
group of three exchanges three packets, each half of a batch's value:

>>> placement = Placement(3, 2)
>>> placement.subsets, placement.groups()
([(0, 1), (0, 2), (1, 2)], [(0, 1, 2)])
>>> value = {(q, b): bytes([q, b]) * 2 for q in range(3) for b in range(3)}
>>> held = lambda w: {key: v for key, v in value.items() if w in placement.subsets[key[1]]}
>>> packets = {j: coded_packet(placement, (0, 1, 2), j, held(j), Bytes()) for j in range(3)}
>>> [len(packets[j][0]) for j in range(3)]                  # half of a 4-byte value each
[2, 2, 2]
>>> segments = [decoded_segment(placement, (0, 1, 2), j, 0, packets[j], held(0), Bytes())
...             for j in (1, 2)]
>>> Bytes().join(segments) == value[(0, placement.batch((1, 2)))]
True
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ffcode import checks
from ffcode.field import PrimeField
from ffcode.errors import InvalidParameterError

MAX_SUBSETS = 1 << 20       # batches (r-subsets) a placement may have


class Placement:
    """The files of a job on ``workers`` workers at computation load ``load`` (r): a batch
    per r-subset of the workers (``subsets``, in lexicographic order), ``per_batch`` files
    each (``files``: a multiple of the batches' count; default one each), file n in batch
    n // per_batch, mapped by every worker of its subset."""

    def __init__(self, workers: int, load: int, files: int | None = None) -> None:
        self.workers = checks.integer(workers, "workers", low=2)
        self.load = checks.integer(load, "load", low=1)
        if self.load >= self.workers:
            raise InvalidParameterError(f"Computation load r = {self.load} must be below the "
                                        f"workers K = {self.workers}: with r = K every worker maps "
                                        "everything and nothing is shuffled.")
        count = math.comb(self.workers, self.load)
        if count > MAX_SUBSETS:
            raise InvalidParameterError(f"K = {self.workers} and r = {self.load} make {count} "
                                        f"batches, more than {MAX_SUBSETS}.")
        self.subsets = list(itertools.combinations(range(self.workers), self.load))
        self._index = {subset: b for b, subset in enumerate(self.subsets)}
        files = count if files is None else checks.integer(files, "files", low=1)
        if files % count:
            raise InvalidParameterError(f"{files} files do not split into the {count} batches of K "
                                        f"= {self.workers}, r = {self.load} (one per r-subset): "
                                        f"give a multiple of {count}.")
        self.files, self.per_batch = files, files // count

    def __repr__(self) -> str:
        return (f"Placement(K={self.workers}, r={self.load}, {len(self.subsets)} batches of "
                f"{self.per_batch} files)")

    def batch(self, subset: Sequence[int]) -> int:
        """The batch that exactly these r workers map."""
        key = tuple(sorted(subset))
        if key not in self._index:
            raise InvalidParameterError(f"{list(subset)} is not a subset of {self.load} of the "
                                        f"{self.workers} workers.")
        return self._index[key]

    def batch_files(self, batch: int) -> range:
        return range(batch * self.per_batch, (batch + 1) * self.per_batch)

    def mapped_by(self, worker: int) -> list[int]:
        """The batches a worker maps."""
        return [b for b, subset in enumerate(self.subsets) if worker in subset]

    def groups(self) -> list[tuple]:
        """The (r + 1)-subsets of the workers: the coded shuffle's multicast groups."""
        return list(itertools.combinations(range(self.workers), self.load + 1))

    def needed(self, worker: int, group: Sequence[int]) -> int:
        """The batch whose values for ``worker`` its group exchanges: the one the group's
        other members map."""
        return self.batch([w for w in group if w != worker])


def uncoded_transfers(placement: Placement) -> list[tuple[int, int, int]]:
    """(sender, receiver, batch) for every value a worker needs and did not map: the values
    of the batch for the receiver's function, each sent once, by the batch's mappers in
    turn (receiver by receiver), so that the senders share the load."""
    out = []
    for b, subset in enumerate(placement.subsets):
        outside = [k for k in range(placement.workers) if k not in subset]
        for turn, receiver in enumerate(outside):
            out.append((subset[(b + turn) % len(subset)], receiver, b))
    return out


class Bytes:
    """Values as bytes, summed by XOR: a segment shorter than the others is padded with
    zeros, and its length travels with the packet."""

    def split(self, value: bytes, parts: int) -> list[memoryview]:
        """``parts`` nearly equal consecutive segments (the first ones a byte longer), as
        views of the value: a packet's segments are cut again for every sender, not
        copied."""
        size, extra = divmod(len(value), parts)
        bounds = np.cumsum([0] + [size + (i < extra) for i in range(parts)])
        view = memoryview(value)
        return [view[bounds[i]:bounds[i + 1]] for i in range(parts)]

    def join(self, segments: Sequence[Any]) -> bytes:
        return b"".join(segments)

    def length(self, segment: Any) -> int:
        return len(segment)

    def add(self, segments: Sequence[Any]) -> bytes:
        """The XOR of the segments, each padded with zeros to the longest."""
        longest = max((len(s) for s in segments), default=0)
        total = np.zeros(longest, np.uint8)
        for s in segments:
            total[:len(s)] ^= np.frombuffer(s, np.uint8)
        return total.tobytes()

    def cancel(self, packet: bytes, known: Sequence[Any], length: int) -> bytes:
        """The one segment of ``length`` bytes left once the known ones are taken out."""
        if length > len(packet) or any(len(s) > len(packet) for s in known):
            raise InvalidParameterError(f"A packet of {len(packet)} bytes cannot hold a segment of "
                                        f"{max([length, *map(len, known)])}.")
        return self.add([packet, *known])[:length]


class Vectors:
    """Values as flat vectors of a prime field F, summed in it: a segment shorter than the
    others is padded with zeros."""

    def __init__(self, F: PrimeField) -> None:
        if not isinstance(F, PrimeField):
            raise InvalidParameterError(f"Argument 'F' must be a field (ffcode.GF), not "
                                        f"{type(F).__name__}.")
        self.F = F

    def split(self, value: Any, parts: int) -> list[np.ndarray]:
        return [np.ascontiguousarray(s) for s in np.array_split(
            self.F.elements(value, "value").reshape(-1), parts)]

    def join(self, segments: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(segments) if segments else np.zeros(0, self.F.dtype)

    def length(self, segment: np.ndarray) -> int:
        return int(segment.shape[0])

    def add(self, segments: Sequence[np.ndarray]) -> np.ndarray:
        longest = max((s.shape[0] for s in segments), default=0)
        total = np.zeros(longest, self.F.dtype)
        for s in segments:
            total[:s.shape[0]] = self.F.add(total[:s.shape[0]], s)
        return total

    def total(self, values: Sequence[np.ndarray], what: str = "values") -> np.ndarray:
        """The sum of whole values (a sum-reduce's): unlike ``add``'s segments, they must
        be of one length, else ValueError naming the lengths (padding would hide a map
        that gives vectors of different sizes)."""
        lengths = sorted({int(np.shape(v)[0]) for v in values})
        if len(lengths) > 1:
            raise InvalidParameterError(f"The {what} are vectors of different lengths {lengths}: a "
                                        f"sum-reduce adds vectors of one length.")
        return self.add(values)

    def cancel(self, packet: np.ndarray, known: Sequence[np.ndarray], length: int) -> Any:
        packet = self.F.elements(packet, "packet")
        if length > packet.shape[0] or any(s.shape[0] > packet.shape[0] for s in known):
            raise InvalidParameterError(f"A packet of {packet.shape[0]} elements cannot hold a "
                                        "segment of "
                                        f"{max([length, *(s.shape[0] for s in known)])}.")
        rest = self.add(known) if known else np.zeros(0, self.F.dtype)
        out = packet.copy()
        out[:rest.shape[0]] = self.F.sub(out[:rest.shape[0]], rest)
        return out[:length]


def segment(group: tuple, sender: int, receiver: int, value: Any, algebra: Any) -> Any:
    """The sender's segment of the receiver's W: W split over the group's other members
    in their order."""
    others = [w for w in group if w != receiver]
    return algebra.split(value, len(others))[others.index(sender)]


def coded_packet(placement: Placement, group: Sequence[int], sender: int,
                 held: Mapping[tuple, Any], algebra: Any) -> tuple[Any, list[int]]:
    """(the packet, the lengths of its segments) that ``sender`` multicasts to the rest of
    ``group`` (an (r + 1)-subset it is in): the sum of its segment of each other member's
    W. ``held``: the values it mapped, by (function, batch)."""
    group = _checked_group(placement, group, sender)
    parts, lengths = [], []
    for receiver in group:
        if receiver == sender:
            continue
        value = held[(receiver, placement.needed(receiver, group))]
        part = segment(group, sender, receiver, value, algebra)
        parts.append(part)
        lengths.append(algebra.length(part))
    return algebra.add(parts), lengths


def decoded_segment(placement: Placement, group: Sequence[int], sender: int, receiver: int,
                    packet: tuple[Any, Sequence[int]], held: Mapping[tuple, Any],
                    algebra: Any) -> Any:
    """The receiver's segment of its W in the sender's packet (``coded_packet``'s), the
    other members' segments taken out with the values it mapped (``held``)."""
    group = _checked_group(placement, group, sender)
    if receiver == sender or receiver not in group:
        raise InvalidParameterError(f"Worker {receiver} does not receive worker {sender}'s packet "
                                    f"of group {list(group)}.")
    payload, lengths = packet
    others = [w for w in group if w != sender]
    if len(lengths) != len(others):
        raise InvalidParameterError(f"A packet of group {list(group)} carries {len(others)} "
                                    f"segment lengths, not {len(lengths)}.")
    known = [segment(group, sender, k, held[(k, placement.needed(k, group))], algebra)
             for k in others if k != receiver]
    return algebra.cancel(payload, known, int(lengths[others.index(receiver)]))


def _checked_group(placement: Placement, group: Sequence[int], sender: int) -> tuple:
    group = tuple(sorted(group))
    if len(group) != placement.load + 1 or len(set(group)) != len(group) or \
            not all(0 <= w < placement.workers for w in group):
        raise InvalidParameterError(f"{list(group)} is not a group of {placement.load + 1} of the "
                                    f"{placement.workers} workers.")
    if sender not in group:
        raise InvalidParameterError(f"Worker {sender} is not in group {list(group)}.")
    return group


@dataclass(frozen=True)
class Message:
    """One message of a shuffle: from ``sender`` to ``receivers``; coded, the packet of
    ``group`` (with its segments' ``lengths``), else the value of ``batch`` for its one
    receiver."""
    sender: int
    receivers: tuple
    payload: Any
    group: Optional[tuple] = None
    batch: Optional[int] = None
    lengths: tuple = ()
    function: Optional[int] = None      # uncoded: whose value (None: the receiver's own)


def outgoing(placement: Placement, worker: int, held: Mapping[tuple, Any], algebra: Any,
             coded: bool = True) -> list[Message]:
    """What a worker sends in the shuffle, from the values it mapped (``held``, by
    (function, batch)): coded, a packet for each group it is in; uncoded, each value its
    turn among its batch's mappers gives it to send."""
    if not coded:
        return [Message(worker, (receiver,), held[(receiver, batch)], batch=batch)
                for sender, receiver, batch in uncoded_transfers(placement)
                if sender == worker]
    out = []
    for group in placement.groups():
        if worker in group:
            payload, lengths = coded_packet(placement, group, worker, held, algebra)
            out.append(Message(worker, tuple(w for w in group if w != worker), payload,
                               group=group, lengths=tuple(lengths)))
    return out


def expected(placement: Placement, worker: int, coded: bool = True) -> list[tuple]:
    """The messages a worker receives in the shuffle, a key each: (batch,) uncoded, (group,
    sender) coded.

    >>> len(expected(Placement(4, 2), 0)), len(expected(Placement(4, 2), 0, coded=False))
    (6, 3)
    """
    if not coded:
        return [(b,) for b, subset in enumerate(placement.subsets) if worker not in subset]
    return [(group, j) for group in placement.groups() if worker in group
            for j in group if j != worker]


def incoming(placement: Placement, worker: int, messages: Sequence[Message],
             held: Mapping[tuple, Any], algebra: Any, coded: bool = True) -> dict[int, Any]:
    """The values a worker needs, by batch, from the messages it received and the values
    it mapped; ValueError naming what is missing, repeated or not its own."""
    return {b: v for (_, b), v in joined(
        pieces(placement, worker, messages, held, algebra, coded), algebra).items()}


def pieces(placement: Placement, worker: int, messages: Sequence[Message],
           held: Mapping[tuple, Any], algebra: Any, coded: bool = True,
           recovery: Optional["Recovery"] = None) -> dict[tuple, Any]:
    """What each sender gave the worker, by (function, batch, sender): its segment of a
    value (coded) or the whole value (plain), decoded with the values the worker mapped
    (``held``); the shuffle's (``coded``) or a Recovery's messages. ValueError naming
    what is missing, repeated or not the worker's. A piece is one sender's word alone,
    so a check of it (ffcode.mapreduce.verify) knows whom it speaks of."""
    if recovery is not None:
        keys, groups = recovery.expected(worker), recovery.groups
        key_of: Callable[[Message], tuple] = lambda m: (m.group, m.sender) \
            if m.group is not None else (m.function, m.batch)
    elif coded:
        keys, groups, key_of = expected(placement, worker), placement.groups(), \
            lambda m: (m.group, m.sender)
    else:
        keys, groups, key_of = expected(placement, worker, False), [], lambda m: (m.batch,)
    arrived = _arrivals(worker, messages, keys, key_of)
    out = {}
    for m in arrived.values():
        if m.group is None:
            out[(worker if m.function is None else m.function, m.batch, m.sender)] = \
                m.payload
    for g in groups:
        if worker in g:
            b = placement.needed(worker, g)
            for j in g:
                if j != worker:
                    m = arrived[(g, j)]
                    out[(worker, b, j)] = decoded_segment(placement, g, j, worker,
                                                          (m.payload, m.lengths), held,
                                                          algebra)
    return out


def joined(received: Mapping[tuple, Any], algebra: Any) -> dict[tuple, Any]:
    """The values by (function, batch) from ``pieces``: a value's segments joined in its
    senders' order (the order ``segment`` splits it in)."""
    parts: dict = {}
    for (q, b, j) in sorted(received):
        parts.setdefault((q, b), []).append(received[(q, b, j)])
    return {key: algebra.join(segments) if len(segments) > 1 else segments[0]
            for key, segments in parts.items()}


def _arrivals(worker: int, messages: Sequence[Message], keys: Sequence[tuple],
              key_of: Callable[[Message], tuple]) -> dict[tuple, Message]:
    """The messages by key, each of ``keys`` exactly once; ValueError naming what is
    missing, repeated or not the worker's."""
    expected: dict[tuple, Optional[Message]] = dict.fromkeys(keys)
    for m in messages:
        key = key_of(m)
        if worker not in m.receivers or key not in expected:
            raise InvalidParameterError(f"Worker {worker} received a message it does not need: "
                                        f"from worker {m.sender}, {key[0]}.")
        if expected[key] is not None:
            raise InvalidParameterError(f"Worker {worker} received {key[0]} from worker {m.sender} "
                                        f"twice.")
        expected[key] = m
    missing = sorted(str(key) for key, m in expected.items() if m is None)
    if missing:
        raise InvalidParameterError(f"Worker {worker} misses the shuffle's messages "
                                    f"{', '.join(missing)}.")
    return {key: m for key, m in expected.items() if m is not None}


def shuffle(placement: Placement, held: Callable[[int], Mapping[tuple, Any]], algebra: Any,
            coded: bool = True) -> tuple[list[dict], list[int]]:
    """The whole shuffle in one process, as the workers do it (``outgoing``, then
    ``incoming``): (for each worker q, the values it received, by batch: what function q
    needs of the batches it did not map; the bytes, or elements, each worker sent, a
    multicast counted once, its segments' lengths aside). ``held(w)``: worker w's mapped
    values by (function, batch)."""
    K = placement.workers
    mine = [held(w) for w in range(K)]
    messages = [m for w in range(K) for m in outgoing(placement, w, mine[w], algebra, coded)]
    sent = [0] * K
    for m in messages:
        sent[m.sender] += algebra.length(m.payload)
    received = [incoming(placement, k, [m for m in messages if k in m.receivers], mine[k],
                         algebra, coded) for k in range(K)]
    return received, sent


class Recovery:
    """How the workers left finish a shuffle without the ``lost`` ones, when every batch is
    still mapped by one of them (a load r >= 2 absorbs r - 1 losses of its subsets): each
    lost worker's function is reduced by a survivor (``reducers[q]``), the coded groups
    with no lost member exchange as before (``groups``), and every other value a reducer
    needs is sent plain by a surviving mapper of its batch (``transfers``: (sender,
    receiver, function, batch), the mappers taking turns). ``distrust``: (sender, receiver)
    pairs whose messages are not to be used (a check could not tell which of the two lied):
    their groups are sent plain too, by another mapper. ValueError naming the batches
    that no survivor mapped.

    >>> recovery = Recovery(Placement(4, 2), lost=[3])
    >>> recovery.reducers, len(recovery.groups), recovery.transfers[:2]
    ((0, 1, 2, 0), 1, [(1, 0, 0, 4), (2, 0, 0, 5)])
    >>> Recovery(Placement(4, 1), lost=[3])
    Traceback (most recent call last):
    ...
    ffcode.errors.InvalidParameterError: No worker left has mapped batches [3] (mapped only by workers [3]): load r = 1 cannot lose them.
    """

    def __init__(self, placement: Placement, lost: Sequence[int], coded: bool = True,
                 distrust: Sequence[Sequence[int]] = ()) -> None:
        K = placement.workers
        self.placement, self.coded = placement, checks.flag(coded, "coded")
        self.lost = tuple(sorted({checks.integer(w, "lost", low=0, high=K - 1) for w in lost}))
        self.distrust = _pairs(distrust, K)
        self.survivors = [w for w in range(K) if w not in self.lost]
        if not self.survivors:
            raise InvalidParameterError("No worker is left to finish the shuffle.")
        orphans = [b for b, subset in enumerate(placement.subsets)
                   if set(subset) <= set(self.lost)]
        if orphans:
            mappers = sorted({w for b in orphans for w in placement.subsets[b]})
            raise InvalidParameterError(f"No worker left has mapped batches {orphans} (mapped only "
                                        f"by workers {mappers}): load r = {placement.load} cannot "
                                        "lose them.")
        reducers = list(range(K))
        for turn, q in enumerate(self.lost):
            reducers[q] = self.survivors[turn % len(self.survivors)]
        self.reducers = tuple(reducers)
        lost_set = set(self.lost)
        self.groups = [g for g in placement.groups() if coded and not lost_set & set(g) and
                       not any(j in g and k in g for j, k in self.distrust)]
        kept = set(self.groups)
        self.transfers = []
        for q in range(K):
            w = reducers[q]
            for b, subset in enumerate(placement.subsets):
                if w in subset or q == w and tuple(sorted((*subset, w))) in kept:
                    continue            # mapped it, or its kept group brings it
                senders = [s for s in subset if s not in lost_set and
                           (s, w) not in self.distrust]
                if not senders:
                    raise InvalidParameterError(f"No worker left may send worker {w} batch {b}: "
                                                f"its mappers {list(subset)} are lost or "
                                                "distrusted by it.")
                self.transfers.append((senders[(b + q) % len(senders)], w, q, b))

    def functions(self, worker: int) -> list[int]:
        """The functions a worker reduces."""
        return [q for q, w in enumerate(self.reducers) if w == worker]

    def outgoing(self, worker: int, held: Mapping[tuple, Any], algebra: Any) -> list[Message]:
        """What a survivor sends: a packet for each kept group it is in, and its transfers."""
        out = []
        for g in self.groups:
            if worker in g:
                payload, lengths = coded_packet(self.placement, g, worker, held, algebra)
                out.append(Message(worker, tuple(w for w in g if w != worker), payload,
                                   group=g, lengths=tuple(lengths)))
        return out + [Message(worker, (receiver,), held[(q, b)], batch=b, function=q)
                      for sender, receiver, q, b in self.transfers if sender == worker]

    def expected(self, worker: int) -> list[tuple]:
        """The messages a survivor receives, a key each: (group, sender) for a kept group's
        packet, (function, batch) for a value sent plain."""
        return [(g, j) for g in self.groups if worker in g for j in g if j != worker] + \
            [(q, b) for _, receiver, q, b in self.transfers if receiver == worker]

    def incoming(self, worker: int, messages: Sequence[Message], held: Mapping[tuple, Any],
                 algebra: Any) -> dict[tuple, Any]:
        """The values a survivor needs, by (function, batch), from the messages it received
        and the values it mapped; ValueError naming what is missing, repeated or not its
        own."""
        return joined(pieces(self.placement, worker, messages, held, algebra,
                             recovery=self), algebra)


def _pairs(pairs: Sequence[Sequence[int]], K: int) -> frozenset:
    """(sender, receiver) pairs of distinct workers, checked."""
    out = set()
    for pair in pairs:
        if len(pair) != 2:
            raise InvalidParameterError("A distrusted pair names a sender and a receiver, not "
                                        f"{pair!r}.")
        j, k = (checks.integer(w, "distrust", low=0, high=K - 1) for w in pair)
        if j == k:
            raise InvalidParameterError(f"A worker cannot distrust itself ({j}).")
        out.add((j, k))
    return frozenset(out)

