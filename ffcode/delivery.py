"""A worker's job delivered to the master over a lossy link, as a state machine without
I/O: events in (a message sent, the computation ended, an acknowledgement, a tick of the
clock), instructions out (send this message again, send a fresh combination, send the end
message, give up). No sockets, threads or clock reads: the runtime's worker process passes
the time, does the sending and reports it back, and the simulator (ffcode.sim) drives the
same machine with simulated events, so both follow one rule.

The master acknowledges cumulatively: a bitmap of every packet index it has of this
worker's job, its rank of each share so far (a rateless job's) and whether it has the end
message. A message is deemed lost when a message sent after it is acknowledged and it is
not (messages arrive in order), or when it is not acknowledged one retransmission timeout
after it left (the last ones of a burst). A job whose results must arrive whole (ARQ)
sends the lost packet again:

>>> from ffcode.channel import RoundTrip
>>> stream = Stream(RoundTrip(first=0.05), shares=1, pieces=2, rateless=False)
>>> stream.sent(0, 0, "piece 0", now=0.0), stream.sent(1, 0, "piece 1", now=0.01)
([], [])
>>> stream.acked(b"\\x02", None, False, now=0.03)      # piece 1 arrived, piece 0 did not
[Resend(index=0, message='piece 0')]
>>> stream.sent(0, 0, "piece 0", now=0.03, again=True), stream.ended("DONE", now=0.04)
([], [])
>>> stream.acked(b"\\x03", None, False, now=0.05)      # all arrived: the end message goes
[Finish(message='DONE')]
>>> stream.sent(END, None, "DONE", now=0.05), stream.acked(b"\\x03", None, True, now=0.06)
([], [])
>>> stream.over, stream.loss
(True, 0.25)

A rateless job (random combinations: any c_k of share k's packets will do) resends
nothing: it makes up each loss found with a fresh combination of its share's computed
pieces, while the master's rank of the share (as its acknowledgements say) is short of
what was sent. At a packet's timeout it first asks the master (Poll), whose answer tells
whether the packet or only its acknowledgement was lost (a packet made up for nothing
costs a packet; a poll, a message without data):

>>> stream = Stream(RoundTrip(first=0.05), shares=1, pieces=4, rateless=True)
>>> [stream.sent(j, 0, f"combination {j}", now=0.0) for j in range(4)]
[[], [], [], []]
>>> stream.acked(b"\\x07", [3], False, now=0.02)        # packet 3 is missing
[]
>>> stream.tick(0.05)                    # its timeout: was it lost, or its acknowledgement?
[Poll(number=0)]
>>> stream.acked(b"\\x07", [3], False, now=0.051, poll=0)   # lost: made up by a fresh one
[Fresh(share=0, index=4, among=())]
>>> stream.sent(4, 0, "fresh 0", now=0.051, fresh=True), stream.ended("DONE", now=0.051)
([], [])
>>> stream.acked(b"\\x17", [4], False, now=0.07)
[Finish(message='DONE')]

With ``repair="sparse"`` (its packets sent plain, as unit coefficient vectors), a fresh
combination mixes only the share's packets the master lacks: those deemed lost and not
acknowledged since. A lost fresh combination was a combination of lost packets, so the
next one covers it by covering them; one that arrived and raised no rank (the master's
rank says so) is made up the same way:

>>> stream = Stream(RoundTrip(first=0.05), shares=1, pieces=4, rateless=True,
...                 repair="sparse")
>>> [stream.sent(j, 0, f"piece {j}", now=0.0) for j in range(4)]
[[], [], [], []]
>>> stream.acked(b"\\x0a", [2], False, now=0.02)      # 1 and 3 arrived: 0 and 2 lost
[Fresh(share=0, index=4, among=(0, 2)), Fresh(share=0, index=5, among=(0, 2))]
>>> [stream.sent(j, 0, f"fresh {j}", now=0.02, fresh=True) for j in (4, 5)]
[[], []]
>>> stream.acked(b"\\x2a", [3], False, now=0.04)      # 5 arrived, 4 lost: 0 and 2 again
[Fresh(share=0, index=6, among=(0, 2))]

Silence ends it: after ``give_up`` timeouts in a row with no acknowledgement of anything new
between them, [GiveUp]. Of the messages in flight when a silence began, only the first to
time out counts (and doubles the stream's waits): each timeout counted waited a whole
backed-off timeout of its own, so a burst of packets lost together is not taken for a dead
master.
"""
from __future__ import annotations

import heapq
import math
import operator
from dataclasses import dataclass
from typing import Any, Optional, Sequence, cast

from ffcode.channel import RoundTrip

END = 2**32 - 1      # the index the end message (DONE or FAILED) is tracked under
GIVE_UP = 16         # timeouts in a row, no acknowledgement: the master is gone (or the job
# over), or the link dead; at p = 0.4 both ways in bursts, 8 gave up on live links
# The master's side: it sends a task or a stop again, waiting as a RoundTrip(most=MOST_WAIT)
# says, until answered; a task sent TASK_TRIES times unanswered loses its worker to the job.
TASK_TRIES = 16      # (a link losing 0.4 both ways, in bursts, failed 8 round trips now and then)
MOST_FRESH = 64      # fresh combinations of a share a master takes, per piece of it
MOST_POLLS = 64      # unanswered polls a stream remembers
POLLS = 3            # a rateless packet's timeouts that ask the master before it is taken for
# lost (at a loss of 0.2 both ways a poll's round trip fails 36 % of the time, three 5 %)
MOST_WAIT = 0.5      # seconds between two sends at most
REPAIRS = ("dense", "sparse")   # what a rateless job's fresh combinations mix: see Stream


def fresh_index(shares: int, pieces: int, share: int, count: int) -> int:
    """The number of the ``count``-th (from 0) fresh combination that a worker holding
    ``shares`` shares of m = ``pieces`` pieces sends of its k-th share on a lossy link:
    they follow its first shares·m packets, the shares taking turns.

    >>> [fresh_index(2, 3, k, t) for t in range(2) for k in range(2)]
    [6, 7, 8, 9]
    """
    return shares * pieces + count * shares + share



@dataclass(frozen=True)
class Resend:
    """Send this message again now (a copy), then call sent(index, ..., again=True)."""
    index: int
    message: Any


@dataclass(frozen=True)
class Fresh:
    """Make one fresh random combination of share ``share``'s computed pieces and send it
    under ``index``, then call sent(index, share, message, now, fresh=True). ``among``: the
    indices of the share's packets to combine (a sparse stream's: those the master lacks),
    empty for all the share's packets computed (dense)."""
    share: int
    index: int
    among: tuple = ()


@dataclass(frozen=True)
class Poll:
    """Ask the receiver for an acknowledgement now (a message without data, numbered
    ``number``): a packet's first POLLS timeouts on a stream that asks (``Stream.ask``: a
    rateless one's by default), before it is taken for lost, as its acknowledgement may be
    what was lost. The answer comes to ``acked(..., poll=number)``
    and tells what of the packets sent before the poll arrived."""
    number: int


@dataclass(frozen=True)
class Finish:
    """Send the job's end message now, then call sent(END, None, message, now)."""
    message: Any


@dataclass(frozen=True)
class GiveUp:
    """GIVE_UP timeouts in a row and no answer: drop the job (send nothing more)."""


class _Message:
    """A message sent and not yet acknowledged (nor settled, nor forgotten as lost)."""
    __slots__ = ("share", "message", "at", "once", "late", "serial", "order", "first",
                 "asked")

    def __init__(self, share: Optional[int], message: Any, at: float, order: int) -> None:
        self.share = share
        self.message = message      # kept only where it may be sent again
        self.at = at                # when it left last
        self.order = order          # its place in the order of sends (its last send)
        self.first = order          # its first send's: an acknowledgement of a message
        # sent again may answer any of its sends, so it proves only what left before this
        self.once = True            # sent once only: its acknowledgement times a round trip
        self.late = False           # deemed lost and not sent again since
        self.serial = -1            # of its live timeout in the heap (-1: none)
        self.asked = 0              # a rateless packet's timeouts that asked the master


class Stream:
    """One job's messages to the master on a lossy link: ``timer`` the worker's link's
    round-trip timer (shared by its streams: sampled here, its estimate times this
    stream's own backoff the wait),
    ``shares`` and ``pieces`` (m) the job's, ``rateless`` whether its packets are random
    combinations (replaced when lost) rather than pieces to send again, ``give_up`` the
    timeouts in a row, with no acknowledgement between, after which the master is taken for
    gone. ``repair`` (rateless): "dense", each fresh combination mixing all the share's
    packets computed, or "sparse", only its packets the master lacks, deemed lost and not
    acknowledged since (``Fresh.among``); for packets sent plain, so that the master's
    coefficient vectors stay sparse and cheap to decode. ``ask``: whether a message's first
    POLLS timeouts ask the receiver (Poll) before it is taken for lost; by default a
    rateless stream's (a lost acknowledgement must not cost a combination), and worth it
    wherever a message is much larger than the question (a coded shuffle's)."""

    def __init__(self, timer: RoundTrip, shares: int, pieces: int, rateless: bool,
                 give_up: int = GIVE_UP, repair: str = "dense",
                 ask: Optional[bool] = None) -> None:
        if not (callable(getattr(timer, "sample", None))
                and hasattr(timer, "estimate") and hasattr(timer, "most")):
            raise TypeError(f"Stream needs a round-trip timer (ffcode.channel.RoundTrip: "
                            f"sample, estimate, most), not {type(timer).__name__}")
        if not isinstance(rateless, bool):
            raise TypeError(f"Stream 'rateless' must be a bool, not {type(rateless).__name__}")
        if not isinstance(repair, str) or repair not in REPAIRS:
            raise ValueError(f"Stream 'repair' must be one of {', '.join(REPAIRS)}, not "
                             f"{repair!r}")
        if repair == "sparse" and not rateless:
            raise ValueError("Stream repair='sparse' is for a rateless stream (its losses "
                             "made up by fresh combinations); this one sends them again")
        if ask is not None and not isinstance(ask, bool):
            raise TypeError(f"Stream 'ask' must be a bool or None, not {type(ask).__name__}")
        self.sparse = repair == "sparse"
        self.ask = rateless if ask is None else ask
        self.timer = timer
        self.shares = _count(shares, "shares")
        self.pieces = _count(pieces, "pieces")
        self.rateless = rateless
        self.give_up = _count(give_up, "give_up")
        self._out: dict = {}                # index -> _Message: sent, not acknowledged
        self._heap: list = []               # (due, serial, index); stale once serial differs
        self._serial = 0
        self._tracked = bytearray()         # bit i: packet i is in _out or _lost
        self._ever = bytearray()            # bit i: packet i was sent
        self._lost: dict = {}               # rateless: index -> sent at (None: asked about,
        # not to be timed), of packets deemed lost and forgotten: a late acknowledgement
        # still counts it as arrived
        self._deemed = self._acknowledged = 0
        self._silent = 0                    # timeouts counted toward giving up, in a row
        self._mark: Optional[float] = None  # when the last one counted (None: an ack since)
        self._end: Optional[tuple] = None   # (the end message,) once the computation ended
        self._expected: Optional[int] = None    # packets before it, as the worker says
        self._originals = 0                 # packets sent (not fresh, not again)
        self._order = 0                     # sends so far: the next one's place
        self._polls: dict = {}              # Poll number -> (the sends before it, sent at)
        self._polled = 0                    # Polls so far
        self._backoff = 1                   # this stream's timeouts' factor: doubled by
        # each timeout counted, back to 1 at an acknowledgement of anything new (its own,
        # so that a job's silence slows none of the worker's other jobs)
        self._finished = False              # Finish given (or the end message sent)
        self._done = self._gone = False     # the end message acknowledged; gave up
        # rateless, per share k: c_k, r_k, fresh asks not yet sent, fresh asked (t), and
        # the indices of its packets in _out; _short: the shares with r_k < c_k
        count = self.shares if rateless else 0
        self._c, self._r = [0] * count, [0] * count
        self._asked, self._fresh = [0] * count, [0] * count
        self._flying: list = [set() for _ in range(count)]
        # its original packets deemed lost and not acknowledged since: what the master
        # lacks, as far as the stream knows (a sparse stream's fresh ones combine them)
        self._missing: list = [set() for _ in range(count)]
        self._short: set = set()
        self._pending = 0                   # Fresh given and not yet reported sent

    # -- events ----------------------------------------------------------------------------

    def sent(self, index: int, share: Optional[int], message: Any, now: float, *,
             fresh: bool = False, again: bool = False) -> list:
        """A message left at ``now``: packet ``index`` of share ``share`` (None for END),
        a fresh combination (``fresh``, as a Fresh asked), or a copy sent again (``again``,
        as a Resend asked). [Fresh] or [Finish] that follow from it."""
        if self.over:
            return []
        index, now = _index(index), _time(now)
        if index == END:
            return self._sent_end(message, now, again)
        if again:
            if self.rateless:
                raise ValueError("a rateless stream sends no packet again (it sends fresh "
                                 f"combinations instead), not packet {index}")
            held = self._out.get(index)
            if held is None:
                if not _has(self._ever, index):
                    raise ValueError(f"packet {index} was never sent: it cannot be sent again")
                return []                   # acknowledged while its copy waited to leave
            held.at, held.once, held.late = now, False, False
            held.order, self._order = self._order, self._order + 1
            self._arm(index, held, now)
            return []
        if _has(self._ever, index):
            raise ValueError(f"packet {index} was sent before: a copy is sent again=True")
        if self.rateless:
            share = self._rateless_share(index, share, fresh)
            if fresh and self._asked[share]:
                self._asked[share] -= 1
                self._pending -= 1
            if fresh and share not in self._short:
                _set(self._ever, index)     # asked for before the share's rank got there:
                return self._next()         # not needed, not tracked
            if not fresh:
                self._c[share] += 1
                if self._c[share] > self._r[share]:
                    self._short.add(share)
            self._flying[share].add(index)
            message = None                  # never sent again: not kept
        else:
            if fresh:
                raise ValueError("fresh combinations are a rateless stream's; this one's "
                                 "packets are sent again when lost")
            share = None if share is None else _share(share, self.shares)
        if not fresh:
            self._originals += 1
        _set(self._ever, index)
        _set(self._tracked, index)
        held = self._out[index] = _Message(share, message, now, self._order)
        self._order += 1
        self._arm(index, held, now)
        return self._next()

    def ended(self, message: Any, now: float, packets: Optional[int] = None) -> list:
        """The computation ended after making ``packets`` packets (None: the job's
        shares·m); its end message (DONE or FAILED) goes once they have all left and nothing
        is outstanding: [Finish] now if so, else from a later event."""
        if self.over:
            return []
        _time(now)
        if self._end is not None:
            raise ValueError("the stream has ended already: it has one end message")
        self._end = (message,)
        self._expected = self.shares * self.pieces if packets is None else \
            _count(packets, "packets", least=0)
        return self._next()

    def acked(self, got: bytes, ranks: Optional[Sequence[int]], ended: bool,
              now: float, poll: Optional[int] = None) -> list:
        """The master's cumulative acknowledgement: ``got`` a bitmap (bit i of byte i >> 3)
        of the indices it has, ``ranks`` its rank of each share (rateless; else None or
        empty), ``ended`` whether it has the end message, ``poll`` the Poll it answers (what
        was sent before that and is not covered is lost). ValueError naming what is wrong
        with a bad one. [Fresh] or [Finish] that follow from it."""
        if self.over:
            return []
        bits, ranks, ended, now = self._checked(got, ranks, ended, now)
        covered = int.from_bytes(bits, "little") & int.from_bytes(self._tracked, "little")
        news = covered != 0 or (ended and END in self._out)
        newest: Optional[float] = None      # sent at, of the newest once-sent one covered
        last = -1                           # the latest place one covered surely arrived from
        while covered:
            index = covered.bit_length() - 1
            covered ^= 1 << index
            held = self._out.get(index)
            last = max(last, -1 if held is None else held.first)
            at = self._arrived(index)
            if at is not None and (newest is None or at > newest):
                newest = at
        if ended and END in self._out:
            at = self._arrived(END)
            if at is not None and (newest is None or at > newest):
                newest = at
            self._done = True
        if poll is not None and poll in self._polls:    # (a poll's place: after its sends)
            before, asked = self._polls[poll]
            last = max(last, before)
            newest = asked if newest is None else max(newest, asked)   # (one answer each)
            self._polls = {n: v for n, v in self._polls.items() if n > poll}
            news = True
        if news:                            # the master is there: the silence is broken
            self._silent, self._mark, self._backoff = 0, None, 1
        if newest is not None:              # Karn: never time a message sent again
            self.timer.sample(max(0.0, now - newest))
        if self._done:
            return []
        out = [self._deem(index, held) for index, held in list(self._out.items())
               if held.order < last and not held.late and index != END]   # overtaken: lost
        for k, rank in enumerate(ranks):
            if rank > self._r[k]:
                self._r[k] = rank
                if rank >= self._c[k] and k in self._short:
                    self._settle(k)
        return [o for o in out if o is not None] + self._next()

    def tick(self, now: float) -> list:
        """The clock reached ``now``: every message due by then is deemed lost. [Resend]
        (ARQ, and the end message), [Fresh] (rateless), [Finish], or [GiveUp] after
        ``give_up`` timeouts in a row with no acknowledgement."""
        if self.over:
            return []
        now = _time(now)
        out: list = []
        counted = asking = False
        while self._heap and self._heap[0][0] <= now:
            _, serial, index = heapq.heappop(self._heap)
            held = self._out.get(index)
            if held is None or held.serial != serial:
                continue                    # acknowledged, settled or sent again since
            # a timeout counts toward giving up only for a message that left after the last
            # one counted: each then waited a whole (backed-off) timeout of its own, not
            # the same silence seen by every message then in flight
            if self._mark is None or held.at >= self._mark:
                counted = True
            if self.ask and index != END and held.asked < POLLS:
                # asked about first: a lost acknowledgement must not cost a combination;
                # the poll stands in for the packet (its answer times the round trip)
                held.asked += 1
                held.at, held.once, asking = now, False, True
                self._arm(index, held, now)
                continue
            resend = self._deem(index, held)
            if resend is not None:
                out.append(resend)
        if asking:
            self._polls[self._polled] = (self._order, now)
            out.append(Poll(self._polled))
            self._polled += 1
            if len(self._polls) > MOST_POLLS:       # unanswered: the oldest forgotten
                del self._polls[min(self._polls)]
        if counted:
            self._silent += 1
            self._mark = now
            self._backoff = min(self._backoff * 2, 1 << 20)
            if self._silent >= self.give_up:
                self._gone = True
                return [GiveUp()]
        return out + self._next()

    # -- state -----------------------------------------------------------------------------

    @property
    def due(self) -> Optional[float]:
        """The earliest time ``tick`` has something to do (None: nothing pending)."""
        if self.over:
            return None
        heap = self._heap
        while heap:
            _, serial, index = heap[0]
            held = self._out.get(index)
            if held is not None and held.serial == serial:
                return heap[0][0]
            heapq.heappop(heap)             # stale: acknowledged, settled or sent again
        return None

    @property
    def loss(self) -> float:
        """The share of its messages found lost, p̂ (deemed lost over deemed lost and
        acknowledged; 0 before any)."""
        total = self._deemed + self._acknowledged
        return self._deemed / total if total else 0.0

    @property
    def over(self) -> bool:
        """Whether the end message was acknowledged, or the stream gave up."""
        return self._done or self._gone

    # -- inside ----------------------------------------------------------------------------

    def _sent_end(self, message: Any, now: float, again: bool) -> list:
        held = self._out.get(END)
        if again:
            if held is None:
                raise ValueError("the end message was never sent: it cannot be sent again")
            held.at, held.once, held.late = now, False, False
            held.order, self._order = self._order, self._order + 1
        else:
            if held is not None:
                raise ValueError("the end message was sent before: a copy is sent "
                                 "again=True")
            held = self._out[END] = _Message(None, message, now, self._order)
            self._order += 1
            self._finished = True
            if self._end is None:
                self._end = (message,)
        self._arm(END, held, now)
        return []

    def _deem(self, index: int, held: _Message) -> Optional[Resend]:
        """Message ``index`` is deemed lost: a rateless packet is forgotten (a fresh
        combination replaces it), anything else is to be sent again (its Resend)."""
        self._deemed += 1
        held.serial = -1
        if self.rateless and index != END:
            del self._out[index]
            self._flying[cast(int, held.share)].discard(index)
            if index < self.shares * self.pieces:       # an original (not a fresh one)
                self._missing[cast(int, held.share)].add(index)
            self._lost[index] = held.at if held.once else None   # (asked about: Karn)
            return None
        held.late = True
        return Resend(index, held.message)

    def _arm(self, index: int, held: _Message, now: float) -> None:
        """Its timeout: the timer's estimate, times this stream's backoff, from now."""
        self._serial += 1
        held.serial = self._serial
        wait = min(self.timer.most, self.timer.estimate * self._backoff)
        heapq.heappush(self._heap, (now + wait, self._serial, index))
        if len(self._heap) > 2 * len(self._out) + 64:   # mostly stale: O(outstanding) kept
            self._heap = [entry for entry in self._heap
                          if (live := self._out.get(entry[2])) is not None
                          and live.serial == entry[1]]
            heapq.heapify(self._heap)

    def _arrived(self, index: int) -> Optional[float]:
        """Message ``index`` is acknowledged: when it left if sent once (a round trip to
        time), else None."""
        held = self._out.pop(index, None)
        if index != END:
            _clear(self._tracked, index)
        self._acknowledged += 1
        if held is None:                    # deemed lost and forgotten: it was only late
            self._deemed -= 1
            if index < self.shares * self.pieces:
                self._missing[index // self.pieces].discard(index)
            return self._lost.pop(index)
        if held.late:
            self._deemed -= 1
        if self.rateless and index != END:
            self._flying[held.share].discard(index)
        return held.at if held.once else None

    def _settle(self, share: int) -> None:
        """Share ``share``'s rank reached c_k: its packets in flight are no longer needed
        (what they carried arrived, or is not needed), neither arrived nor lost."""
        self._short.discard(share)
        for index in self._flying[share]:
            del self._out[index]
            _clear(self._tracked, index)
        self._flying[share] = set()
        self._missing[share] = set()        # covered: the master's rank has all sent

    def _next(self) -> list:
        """[Fresh] the rule asks for now (rateless), then [Finish] if the end message is
        due to go."""
        out = self._top_up() if self.rateless else []
        if self._end is not None and not self._finished and \
                self._originals >= cast(int, self._expected):
            if self.rateless:
                clear = not self._short and not self._pending
            else:
                clear = not self._out       # (END is not in _out before Finish)
            if clear:
                self._finished = True
                out.append(Finish(self._end[0]))
        return out

    def _top_up(self) -> list:
        """Fresh combinations of each share short of its rank while c_k − r_k > u_k: one for
        each loss found and not yet made up. Nothing is sent ahead of the losses: sent
        ahead (about p̂/(1 − p̂) of what is unacknowledged), a share of 8 packets cost 1.2
        to 1.3 times the least at p = 0.2 to 0.3, as what was in flight often arrived
        after all; made up as found, 1.0 to 1.06, a lost last packet costing a timeout."""
        out = []
        for k in sorted(self._short):
            deficit = self._c[k] - self._r[k]
            unsettled = len(self._flying[k]) + self._asked[k]
            among = self._among(k)
            while deficit > unsettled:
                out.append(Fresh(k, fresh_index(self.shares, self.pieces, k, self._fresh[k]),
                                 among))
                self._fresh[k] += 1
                self._asked[k] += 1
                self._pending += 1
                unsettled += 1
        return out

    def _among(self, share: int) -> tuple:
        """What a fresh combination of ``share`` mixes: all its packets computed (), or, for
        a sparse stream, its original packets the master lacks. A combination of them
        raises the master's rank whenever the rank is short of what was sent: what the
        master has of their span (its own fresh ones that arrived) is a smaller space,
        which a random combination misses but with probability 1/p; lost fresh ones need
        nothing of their own, being combinations of lost originals. Should the master's
        rank be short with none known missing (only a master that contradicts its own
        bitmap), all its packets."""
        return tuple(sorted(self._missing[share])) if self.sparse else ()

    def _rateless_share(self, index: int, share: Any, fresh: bool) -> int:
        """The share of a rateless packet, checked against its index (share k's pieces are
        k·m .. k·m + m − 1; its fresh combinations follow them all, the shares in turn)."""
        share = _share(share, self.shares)
        first = self.shares * self.pieces
        if fresh:
            right = index >= first and (index - first) % self.shares == share
        else:
            right = index // self.pieces == share
        if not right:
            what = "fresh combination" if fresh else "packet"
            raise ValueError(f"{what} {index} is not of share {share} (of {self.shares} "
                             f"shares of {self.pieces} pieces)")
        return share

    def _checked(self, got: Any, ranks: Any, ended: Any, now: Any) -> tuple:
        """An acknowledgement's fields, checked: (bitmap bytes, ranks, ended, now)."""
        try:
            bits = memoryview(got).tobytes()
        except TypeError:
            raise ValueError(f"an acknowledgement's 'got' must be a bitmap (bytes-like), "
                             f"not {type(got).__name__}") from None
        if ended not in (True, False):
            raise ValueError(f"an acknowledgement's 'ended' must be a bool, not {ended!r}")
        if ranks is None:
            ranks = ()
        try:
            ranks = [operator.index(rank) for rank in ranks]
        except TypeError:
            raise ValueError(f"an acknowledgement's 'ranks' must be whole numbers, not "
                             f"{ranks!r}") from None
        want = self.shares if self.rateless else 0
        if len(ranks) != want:
            raise ValueError(f"an acknowledgement's 'ranks' has {len(ranks)} ranks; this "
                             f"stream's need {want} (one per share of a rateless job, none "
                             f"otherwise)")
        if any(rank < 0 for rank in ranks):
            raise ValueError(f"an acknowledgement's 'ranks' must be >= 0, not {ranks}")
        return bits, ranks, bool(ended), _time(now)


def _count(value: Any, name: str, least: int = 1) -> int:
    return _whole(value, f"Stream {name!r}", least)


def _index(index: Any) -> int:
    return _whole(index, "a message's index", 0, END)


def _share(share: Any, shares: int) -> int:
    return _whole(share, "a packet's share", 0, shares - 1)


def _whole(value: Any, what: str, least: int, most: Optional[int] = None) -> int:
    """value as an int from least to most: TypeError for anything but a whole number (a
    bool too), ValueError out of range; ``what`` names it."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a whole number, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a whole number, not "
                        f"{type(value).__name__}") from None
    if value < least or (most is not None and value > most):
        bound = f">= {least}" if most is None else f"in [{least}, {most}]"
        raise ValueError(f"{what} must be {bound}, not {value}")
    return value


def _time(now: Any) -> float:
    if isinstance(now, bool):
        raise TypeError("the time must be a number of seconds, not bool")
    try:
        now = float(now)
    except (TypeError, ValueError):
        raise TypeError(f"the time must be a number of seconds, not "
                        f"{type(now).__name__}") from None
    if math.isnan(now):
        raise ValueError("the time must be a number of seconds, not NaN")
    return now


def _has(bits: bytearray, index: int) -> bool:
    return (index >> 3) < len(bits) and bool(bits[index >> 3] >> (index & 7) & 1)


def _set(bits: bytearray, index: int) -> None:
    byte = index >> 3
    if byte >= len(bits):                   # doubling: amortized O(1) a packet
        bits.extend(bytes(max(byte + 1, 2 * len(bits)) - len(bits)))
    bits[byte] |= 1 << (index & 7)


def _clear(bits: bytearray, index: int) -> None:
    if (index >> 3) < len(bits):
        bits[index >> 3] &= ~(1 << (index & 7)) & 0xFF
