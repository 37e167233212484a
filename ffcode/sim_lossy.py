"""One worker's packets on a link that loses some, packet by packet: what
``ffcode.sim.simulate_lossy`` runs for every worker. The master's side of it needs only
that worker's packets (a share is one worker's), so each worker runs on its own.

The worker follows the runtime's rule: it drives one ``ffcode.delivery.Stream`` (its timer
a ``channel.RoundTrip()``, RFC 6298, that has measured the link's ``rtt`` in earlier jobs;
the stream waits its estimate times a backoff of its own, doubled by each timeout counted
toward giving up, so an earlier job's silence slows no later one), tells it what happens,
and does what it says. Its task comes over the same link: the
master sends it again until it gets through (``delivery.TASK_TRIES`` times, waiting as a
``RoundTrip(most=delivery.MOST_WAIT)`` says: 50 ms, twice that each time, up to 0.5 s),
and the worker starts computing when it does, answering with one message up the link
(TAKEN in the runtime); a worker whose task never gets through sends nothing. It hands its
packets to its link as the scheme makes them ready (``Scheme.packet_times``, from its
start), and they cross it one after another at the worker's ``link_rate``, the copies and
fresh combinations the stream asks for queued behind them. The link loses messages as the
worker's ``channel.Loss`` says, each direction drawing its fates in the order its messages
go: up, ``Loss.link(seed=[seed, 29, worker])``, the answer to the task and then the
packets and polls in the order they leave; down, ``[seed, 31, worker]``, the task's sends
and then the master's acknowledgements and answers to polls, in the order it sends them
(one for each packet or poll that arrived). The master takes a packet when it has crossed
the link, as in the loss-free simulator, and acknowledges it at once: the indices it has
of the worker's packets and its rank of each share. The acknowledgement reaches the worker
``rtt`` after the packet left, unless lost; the next one covers what it said.

A packet is deemed lost when an acknowledgement covers one that left after it and not it
(packets arrive in order), else (the last of a burst) when not acknowledged one timeout
after it left. Then uncoded, classic and systematic send it again, a copy (the first to
arrive counts); the rateless schemes (``Scheme.rateless``: cfs, compfs) send a fresh
random combination of the pieces computed of its share instead, one for each loss found
while the master's rank of the share (as acknowledged) is short of the packets sent of
it, and nothing ahead of the losses (``Stream``). A rateless packet's timeout first asks
the master (``delivery.Poll``; ``delivery.POLLS`` times before the packet is taken for
lost by its timeout): the poll goes up at once, ahead of any packet waiting for the link,
and the master answers it at once; the answer, numbered, reaches the worker ``rtt`` after
the poll left, unless either is lost, and covers every packet that left before the poll:
one it shows missing is lost, one it shows arrived (its acknowledgement was lost) costs
no fresh combination. A combination counts toward its share's
rank at the master while that rank is below the share's pieces the worker had computed
when it made it. The stream is told the job ended when the worker has computed its last
packet; the end message it then sends, once everything arrived, is not simulated: nothing
the master decodes from follows it. After ``delivery.GIVE_UP`` timeouts in a row with no
acknowledgement between, the worker stops sending (what it had queued is dropped).

>>> from ffcode.schemes import Scheme
>>> from ffcode.sim import Model
>>> model = Model(n_workers=2, recovery_threshold=1, pieces=8, loss=0.3, seed=2)
>>> ready, sizes, held = Scheme.CFS.packet_times(model)
>>> model.losses[0].link(seed=[2, 31, 0]).losses(2).tolist()   # its task's two sends
[True, False]
>>> sent = worker_sends(model, 0, Scheme.CFS, ready[0], sizes[0])
>>> [(round(float(t), 3), int(n)) for t, n in zip(*np.unique(sent.left, return_counts=True))]
[(8.05, 8), (8.051, 2), (8.061, 2)]
>>> int(sent.lost.sum()), int(sent.counts.sum())      # 8 count: the share's rank is m
(4, 8)

Its task is lost once (the downlink's first fate) and gets through when sent again 50 ms
later, so its 8 packets, ready 8 s after its start, leave at 8.05 s; 1, 2 and 7 are lost.
The acknowledgement of packet 0 is lost too, and packet 3's (1 ms later) finds 1 and 2: the
stream asks for a fresh combination for each; the second is lost, and the first's
acknowledgement. Packet 7, the last of the burst, times out at 8.06 s (10 ms, the least,
the timer having measured round trips of 1 ms): the worker polls the master, whose answer
(8.061 s) shows 7 and the lost combination missing and the other one there; a fresh
combination for each of the two brings the master's rank of the share to 8.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ffcode.channel import RoundTrip
from ffcode.delivery import MOST_WAIT, TASK_TRIES, Fresh, GiveUp, Poll, Resend, Stream
from ffcode.schemes import Scheme

if TYPE_CHECKING:
    from ffcode.sim import Model

# Event kinds, in the order taken at one instant: an acknowledgement that comes as its
# packet's time is up is in time; a copy due then leaves before a packet made then.
_ACK, _TICK, _READY, _LEAVE = range(4)


@dataclass(frozen=True)
class Sent:
    """A worker's packets in the order they left its link (originals, copies and fresh
    combinations): when each left (``left``, seconds from the start; when it reached the
    master, unless ``lost``), its share (the worker's k-th), piece index, bytes, and
    whether it ``counts`` toward decoding at the master (the first copy of a packet to
    arrive; a combination that raised the master's rank of its share); ``among``: each
    one's pieces of its share a sparse repair mixes (``Fresh.among``, empty for the
    others)."""
    left: np.ndarray
    lost: np.ndarray
    share: np.ndarray
    piece: np.ndarray
    size: np.ndarray
    counts: np.ndarray
    among: tuple = ()


class _Packet:
    """One send of a packet: ``index`` the stream's (a copy's its original's), ``made`` its
    share's packets computed when it was made (the rank it can raise the master's to)."""
    __slots__ = ("index", "share", "piece", "size", "made", "left", "lost", "counts",
                 "among")

    def __init__(self, index: int, share: int, piece: int, size: float, made: int,
                 among: tuple = ()) -> None:
        self.index, self.share, self.piece, self.size, self.made = \
            index, share, piece, size, made
        self.among = among                      # a sparse repair's pieces of its share
        self.left, self.lost, self.counts = np.nan, False, False

    def copy(self) -> "_Packet":
        return _Packet(self.index, self.share, self.piece, self.size, self.made)


def worker_sends(model: "Model", worker: int, scheme: Scheme, ready: np.ndarray,
                 sizes: np.ndarray, repair: str = "dense") -> Sent:
    """What ``worker`` of ``model`` sends with ``scheme`` until it has nothing left to send
    (or gives up), its original packets ready at ``ready`` seconds (its shares' in order,
    ``scheme.packets(m)`` each) of ``sizes`` bytes, making up its losses as ``repair``
    says (``Stream``'s)."""
    return _Worker(model, worker, scheme, np.asarray(ready, float),
                   np.asarray(sizes, float), repair).run()


class _Worker:
    """A worker, its stream, its link both ways and the master's view of its packets."""

    def __init__(self, model: "Model", worker: int, scheme: Scheme, ready: np.ndarray,
                 sizes: np.ndarray, repair: str = "dense") -> None:
        self.q, self.rateless = scheme.packets(model.pieces), scheme.rateless
        self.rate = float(cast(np.ndarray, model.link_rate)[worker])   # (Model keeps arrays)
        self.rtt = model.rtt
        loss = model.losses[worker]
        self.uplink = loss.link(seed=[model.seed, 29, worker])
        self.downlink = loss.link(seed=[model.seed, 31, worker])
        self.ready, self.sizes = ready + self.task_arrives(), sizes
        timer = RoundTrip()
        timer.sample(self.rtt)                  # (measured in earlier jobs)
        shares = -(-len(ready) // self.q)
        # (a worker without packets has no events: its stream, of one share, is idle)
        self.stream = Stream(timer, max(shares, 1), self.q, self.rateless, repair=repair)
        self.rank = [0] * shares                # the master's rank of each share
        # sparse: per share, its originals the master has and the supports of the repairs
        # that counted (the rest of each, once a piece each: a matching, as generic
        # coefficients have full rank where one exists)
        self.has: list[set] = [set() for _ in range(shares)]
        self.matched: list[dict] = [{} for _ in range(shares)]
        self.received: set[int] = set()         # the indices the master has (what repeats)
        # the master's bitmap (an int) and ranks as the last acknowledgement to come said,
        # and sent[:told] the packets it covered
        self.told_got, self.told_ranks, self.told = 0, [0] * shares, 0
        self.link_free, self.stopped = 0.0, False
        self.events: list[tuple[float, int, int, Any]] = []
        self.order = 0                          # ties in the heap: first pushed, first taken
        self.ticks: set[float] = set()          # the times a tick is pushed for
        self.sent: list[_Packet] = []

    def task_arrives(self) -> float:
        """When the worker's task gets through (inf: never, it is lost to the job), the
        master sending it again as it does; the worker's answer is its link's first
        message up."""
        timer, waited = RoundTrip(most=MOST_WAIT), 0.0
        for _ in range(TASK_TRIES):
            if not self.downlink.lost():
                self.uplink.lost()
                return waited
            waited += timer.timeout
            timer.expired()
        return np.inf

    def run(self) -> Sent:
        # the packets ready at one instant come together (a share's m for cfs), in order:
        # ready times never decrease; none if its task never came
        times, starts = np.unique(self.ready[np.isfinite(self.ready)], return_index=True)
        for t, start, end in zip(times, starts, [*starts[1:], len(self.ready)]):
            self.push(float(t), _READY, range(int(start), int(end)))
        handlers = (self.on_ack, self.on_tick, self.on_ready, self.on_leave)
        while self.events and not self.stopped:
            t, kind, _, payload = heapq.heappop(self.events)
            handlers[kind](t, payload)
        fields = [np.array([getattr(p, name) for p in self.sent], dtype)
                  for name, dtype in (("left", float), ("lost", bool), ("share", int),
                                      ("piece", int), ("size", float), ("counts", bool))]
        left, lost, share, piece, size, counts = fields
        return Sent(left, lost, share, piece, size, counts,
                    tuple(p.among for p in self.sent))

    def push(self, t: float, kind: int, payload: Any) -> None:
        self.order += 1
        heapq.heappush(self.events, (t, kind, self.order, payload))

    def send(self, t: float, packet: _Packet, **how: bool) -> None:
        """Hands a packet to the link (``how``: Stream.sent's fresh or again): it leaves
        once the packets before it have."""
        self.link_free = max(t, self.link_free) + packet.size / self.rate
        self.push(self.link_free, _LEAVE, (packet, how))

    def computed(self, share: int, t: float) -> int:
        """The share's packets made ready by t (what a fresh combination can span)."""
        return int(np.searchsorted(self.ready[share * self.q:(share + 1) * self.q], t,
                                   side="right"))

    def on_ready(self, t: float, columns: range) -> None:
        for column in columns:                  # all ready at t, in order
            share = column // self.q
            self.send(t, _Packet(column, share, column % self.q, float(self.sizes[column]),
                                 self.computed(share, t)))
        if columns.stop == len(self.ready):     # it has computed everything: it ends
            self.obey(t, self.stream.ended(None, t))

    def on_leave(self, t: float, payload: tuple) -> None:
        packet, how = payload
        packet.left, packet.lost = t, self.uplink.lost()
        self.sent.append(packet)
        out = self.stream.sent(packet.index, packet.share, packet, t, **how)
        if not packet.lost:
            packet.counts = self.master_counts(packet)
            if not self.downlink.lost():
                self.push(t + self.rtt, _ACK, (len(self.sent), None))
        self.obey(t, out)

    def master_counts(self, packet: _Packet) -> bool:
        """Whether the master counts this packet it received toward decoding: the first
        copy of a packet; a combination while the share's rank is below what it spans."""
        if self.rateless:
            if self.rank[packet.share] < packet.made and self.spans(packet):
                self.rank[packet.share] += 1
                return True
            return False
        first = packet.index not in self.received
        self.received.add(packet.index)
        return first

    def spans(self, packet: _Packet) -> bool:
        """Whether a sparse repair adds to what the master has of its share: a piece it
        lacks of those mixed can be matched to it, the repairs that counted before keeping
        one each (an original always adds: the repairs follow the share's originals)."""
        has, matched = self.has[packet.share], self.matched[packet.share]
        if packet.index < len(self.ready):      # an original, plain
            has.add(packet.piece)
            return True
        if not packet.among:                    # dense: any combination adds
            return True

        def augment(pieces: tuple, seen: set) -> bool:
            for piece in pieces:
                if piece in has or piece in seen:
                    continue
                seen.add(piece)
                if piece not in matched or augment(matched[piece], seen):
                    matched[piece] = pieces
                    return True
            return False
        return augment(packet.among, set())

    def on_ack(self, t: float, answer: tuple) -> None:
        """The acknowledgement generated when sent[covered - 1] arrived (answering Poll
        ``poll``, if not None): the master's state then (acknowledgements come in the order
        generated, all rtt after)."""
        covered, poll = answer
        for packet in self.sent[self.told:covered]:
            if not packet.lost:
                self.told_got |= 1 << packet.index
                self.told_ranks[packet.share] += packet.counts
        self.told = max(self.told, covered)
        got = self.told_got.to_bytes((self.told_got.bit_length() + 7) // 8, "little")
        ranks = list(self.told_ranks) if self.rateless else None
        self.obey(t, self.stream.acked(got, ranks, False, t, poll))

    def on_tick(self, t: float, _: None) -> None:
        self.ticks.discard(t)
        due = self.stream.due
        if due is not None and due <= t:
            self.obey(t, self.stream.tick(t))

    def obey(self, t: float, instructions: list) -> None:
        """Carries out the stream's instructions at t, and sets its next tick. Poll: up the
        link at once, answered at once (an uplink fate, then a downlink fate if it
        arrived), the answer covering the packets that left before it. Finish: the end
        message is not simulated (nothing the master decodes from follows it)."""
        for instruction in instructions:
            if isinstance(instruction, Resend):
                self.send(t, cast(_Packet, instruction.message).copy(), again=True)
            elif isinstance(instruction, Fresh):
                self.send(t, self.fresh(instruction, t), fresh=True)
            elif isinstance(instruction, Poll):     # up at once, answered at once
                if not self.uplink.lost() and not self.downlink.lost():
                    self.push(t + self.rtt, _ACK, (len(self.sent), instruction.number))
            elif isinstance(instruction, GiveUp):
                self.stopped = True
        due = self.stream.due
        if due is not None and due not in self.ticks:
            self.ticks.add(due)
            self.push(due, _TICK, None)

    def fresh(self, instruction: Fresh, t: float) -> _Packet:
        """A fresh combination of the share's packets computed by t, the size of one."""
        share = instruction.share
        made = self.computed(share, t)          # >= 1: the stream asks only for a share sent
        column = share * self.q + made - 1
        among = tuple(i % self.q for i in instruction.among)
        if self.stream.sparse and not among:    # (none known missing: all it computed)
            among = tuple(range(made))
        return _Packet(instruction.index, share, column % self.q, float(self.sizes[column]),
                       made, among)
