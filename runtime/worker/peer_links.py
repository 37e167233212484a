"""A worker's links to its peers in a shuffle whose links lose messages (``run_mapreduce``'s
``link_loss``): each ordered pair of workers has its own link, seeded by (the job's seed,
the attempt, sender, receiver) so that a run can be repeated, whose fates (ffcode.channel's
Gilbert–Elliott model) the sender draws for every message it puts on it: shuffle messages
and acknowledgements alike.

A link carries, and loses, a message in segments of at most SEGMENT bytes, as a network
does packets: a multi-megabyte message is not lost whole, and a loss costs one segment
sent again. The receiver puts a message's segments back together (``Assembly``).

A shuffle message is needed whole (each is a coded multicast of pieces no other message
carries), so a lost segment is sent again: each lane (this worker's segments for one
peer) follows ffcode.delivery's ARQ rule, a ``Stream`` of numbered segments; the receiver
acknowledges every segment it gets with a bitmap of all it has from that sender. A segment
timed out is first asked about (a poll, answered by the bitmap), as its acknowledgement
may be what was lost, and a segment costs far more than the question. A lane is complete
once every segment on it was acknowledged; a worker's exchange ends when it has every
message it expects and all its lanes are complete (on a shared medium, also once the next
worker took the turn it passed on). Its answers may still be lost after that, so it
answers its peers' copies, polls and turns until its run is let go of (every worker then
has ended its exchange: nobody sends anything more).

>>> links = PeerLinks(0, {1: 2}, loss=(0.0, 0.5), burst=None, seed=6, attempt=1, now=0.0)
>>> [links.passes(1) for _ in range(6)], links.dropped
([True, True, False, True, True, True], {1: 1})
>>> links.left(1, 0, "message 0", now=0.0); links.left(1, 1, "message 1", now=0.0)
>>> links.received(1, 3), links.ack(1)         # what worker 1 sent us; our answer to it
(True, '08')
>>> links.acked(1, bytes.fromhex("02"), now=0.01)  # 1 arrived before 0: 0 goes again
>>> links.resends, links.complete
([(1, 0, 'message 0')], False)
>>> links.resends.clear(); links.left(1, 0, "message 0", now=0.01, again=True)
>>> links.acked(1, bytes.fromhex("03"), now=0.02); links.complete
True
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Optional

import numpy as np

from ffcode.channel import Loss, RoundTrip
from ffcode.delivery import END, Finish, Poll, Resend, Stream

PEER = 37               # a peer link's seed tag (the master's links: UP 29, DOWN 31)
MOST_SEQ = 1 << 24      # segments a worker may number on one lane
SEGMENT = 64 << 10      # bytes of a message a lossy link carries (and loses) at once
MOST_WAIT = 0.1         # seconds between two sends of a message at most: a peer's
# acknowledgement leaves as the message arrives (the emulated delay holds messages before
# they leave), so a round trip is the sockets' and the peer's loop's, milliseconds
FIRST_WAIT = 0.02       # seconds before a lane's first message is taken for lost
NEVER = 1 << 40         # timeouts before a lane gives up: never; a lost peer is the master's
# to find (its heartbeats), whose next attempt ends this one


class PeerLinks:
    """Worker ``index``'s lanes to its peers (``counts``: peer -> messages for it, 0 too)
    and what it got from them, on links losing as ``loss`` (each worker's; a link loses as
    the worse of its ends) in runs of ``burst`` (None: independent). ``resends``: (peer,
    seq, message) to send again, and ``polls``: (peer, number) to ask, for the exchange
    to take; ``dropped``: the segments, polls and acknowledgements each outgoing link lost;
    ``resent``: segments sent again; ``most``: the bytes a peer's message may have."""

    def __init__(self, index: int, counts: dict, loss: tuple, burst: Optional[float],
                 seed: int, attempt: int, now: float, most: int = 1 << 30) -> None:
        self.index = index
        self.assembly = Assembly(most)      # the peers' messages, from their segments
        self.counts = dict(counts)
        worse = {j: max(loss[index], loss[j]) for j in self.counts}
        self.links = {j: Loss(p, burst if p else None).link([seed, PEER, attempt, index, j])
                      for j, p in worse.items()}
        self.streams: dict = {}
        self.timer = RoundTrip(first=FIRST_WAIT, most=MOST_WAIT)   # one for all lanes
        self.finished: set = set()          # lanes whose every message was acknowledged
        self.got = {j: bytearray() for j in self.counts}      # seqs each peer's lane had
        self.resends: list = []
        self.polls: list = []
        self.resent = 0
        for j, n in self.counts.items():
            if n > MOST_SEQ:
                raise ValueError(f"worker {index} has {n} shuffle messages for worker {j}, "
                                 f"more than the {MOST_SEQ} a lane numbers")
            self.streams[j] = Stream(self.timer, 1, max(n, 1), rateless=False,
                                     give_up=NEVER, ask=True)
            self._carry(j, self.streams[j].ended(None, now, packets=n))

    @property
    def dropped(self) -> dict:
        return {j: link.dropped for j, link in self.links.items()}

    @property
    def complete(self) -> bool:
        """Whether every message of every lane was acknowledged."""
        return len(self.finished) == len(self.streams)

    @property
    def due(self) -> float:
        """When a lane's next timeout falls (inf: none)."""
        return min((d for s in self.streams.values() if (d := s.due) is not None),
                   default=math.inf)

    def passes(self, peer: int) -> bool:
        """Whether the next message put on the link to ``peer`` gets there (its fate)."""
        return not self.links[peer].lost()

    def left(self, peer: int, seq: int, message: Any, now: float, again: bool = False) -> None:
        """Message ``seq`` of the lane to ``peer`` left at ``now`` (``again``: a copy)."""
        if again:
            self.resent += 1
        self._carry(peer, self.streams[peer].sent(seq, 0, message, now, again=again))

    def acked(self, peer: int, bits: bytes, now: float, poll: Optional[int] = None) -> None:
        """``peer``'s acknowledgement: the bitmap of the lane's messages it has (answering
        poll ``poll``). ValueError for one longer than the lane."""
        if len(bits) > (max(self.counts[peer], 1) + 7) // 8:
            raise ValueError(f"worker {peer} acknowledged {len(bits) * 8} messages; it was "
                             f"sent {self.counts[peer]}")
        self._carry(peer, self.streams[peer].acked(bits, None, False, now, poll=poll))

    def tick(self, now: float) -> None:
        """The clock reached ``now``: the lanes' timeouts due are losses (sent again)."""
        for j, stream in self.streams.items():
            due = stream.due
            if due is not None and due <= now:
                self._carry(j, stream.tick(now))

    def received(self, peer: int, seq: int) -> bool:
        """Message ``seq`` came from ``peer``: whether it is new (not a copy)."""
        got = self.got[peer]
        byte, bit = divmod(seq, 8)
        if byte >= len(got):
            got.extend(bytes(byte + 1 - len(got)))
        new = not got[byte] >> bit & 1
        got[byte] |= 1 << bit
        return new

    def ack(self, peer: int) -> str:
        """The acknowledgement to send ``peer``: the bitmap of its messages here, in hex."""
        return self.got[peer].hex()

    def _carry(self, peer: int, instructions: list) -> None:
        for instruction in instructions:
            if isinstance(instruction, Resend) and instruction.index != END:
                self.resends.append((peer, instruction.index, instruction.message))
            elif isinstance(instruction, Poll):
                self.polls.append((peer, instruction.number))
            elif isinstance(instruction, Finish):
                self.finished.add(peer)


def segments(size: int) -> list:
    """(start, end) of each segment of a message of ``size`` bytes (one, empty, for none).

    >>> segments(150 << 10), segments(0)
    ([(0, 65536), (65536, 131072), (131072, 153600)], [(0, 0)])
    """
    return [(at, min(at + SEGMENT, size)) for at in range(0, size, SEGMENT)] or [(0, 0)]


class Assembly:
    """Messages coming in segments, put back together: ``add`` a new segment (numbered
    ``seq`` on its sender's lane, of the message whose segments are numbered ``first`` to
    ``first + parts - 1``) and get the whole message once its last segment is here. A
    segment that does not fit its message (its place, its message's fields, its count) is
    refused with ValueError, and a message may grow only to ``most`` bytes.

    >>> from ffcode.mapreduce.shuffle import Message
    >>> assembly = Assembly(most=1 << 20)
    >>> part = lambda b: Message(1, (0,), np.frombuffer(b, np.uint8), batch=3)
    >>> assembly.add(1, 5, 4, 2, part(b"def")) is None
    True
    >>> assembly.add(1, 4, 4, 2, part(b"abc")).payload.tobytes()
    b'abcdef'
    """

    def __init__(self, most: int) -> None:
        self.most = most
        self.waiting: dict = {}         # (sender, first) -> [the first segment's message,
        # its segments' payloads by place, their bytes so far]

    def add(self, sender: int, seq: int, first: int, parts: int, message: Any) -> Any:
        if not (0 <= first <= seq < first + parts and 1 <= parts <= self.most // SEGMENT + 1):
            raise ValueError(f"worker {sender} sent segment {seq} of a message of {parts} "
                             f"from {first}")
        if parts == 1:
            return message
        key = (sender, first)
        waiting = self.waiting.setdefault(key, [message, {}, 0])
        head, got = waiting[0], waiting[1]
        if replace(message, payload=None) != replace(head, payload=None):
            raise ValueError(f"worker {sender}'s segments of one message disagree")
        got[seq - first] = message.payload
        waiting[2] += message.payload.nbytes
        if waiting[2] > self.most:
            raise ValueError(f"worker {sender} sent a message over {self.most} bytes")
        if len(got) < parts:
            return None
        del self.waiting[key]
        payloads = [got[n] for n in range(parts)]
        return replace(head, payload=np.concatenate(payloads) if isinstance(
            head.payload, np.ndarray) else b"".join(payloads))
