"""Links that lose messages, and the round-trip timer of a sender that resends: the model
that the runtime's emulated links and the simulator share.

A lossy link is a Gilbert–Elliott channel: a good state that delivers and a bad state
that drops, so that losses come in bursts. ``Loss(p, burst)`` is given by what a user
measures: the long-run share of messages lost and the mean length of a run of losses.
With ``burst=None`` the losses are independent (runs of mean length 1 / (1 - p)).

>>> loss = Loss(0.2, burst=4)
>>> round(loss.enter, 4), loss.leave          # good -> bad, bad -> good, per message
(0.0625, 0.25)
>>> link = loss.link(seed=[0, 3, 1])
>>> fates = link.losses(100_000)
>>> round(float(fates.mean()), 2), link.dropped == int(fates.sum())
(0.2, True)
>>> Loss(0.5, burst=0.5)
Traceback (most recent call last):
...
ffcode.errors.InvalidParameterError: Loss 'burst' must be a mean run of losses >= 1 message, not 0.5.

A sender's retransmission timeout follows the measured round trip as TCP's does (RFC
6298: smoothed round trip plus four times its variation), within [least, most], doubling
on each timeout until an answer comes:

>>> timer = RoundTrip(least=0.01)
>>> timer.timeout                     # before any sample
0.05
>>> timer.sample(0.004); round(timer.timeout, 4)
0.012
>>> timer.expired(); round(timer.timeout, 4)
0.024
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ffcode.errors import InvalidParameterError

_BLOCK = 256            # uniform draws a link takes from its generator at once


def _probability(p: Any, name: str = "p") -> float:
    """A loss probability in [0, 1]; refused with the reason otherwise."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"Loss {name!r} must be a number in [0, 1], not "
                                    f"{type(p).__name__}.")
    p = float(p)
    if not 0.0 <= p <= 1.0:          # (NaN fails this too)
        raise InvalidParameterError(f"Loss {name!r} must be a probability in [0, 1], not {p}.")
    return p


@dataclass(frozen=True)
class Loss:
    """A link that loses the long-run share ``p`` of its messages in runs of mean length
    ``burst`` (None: independent losses). p = 1 loses every message (a dead link);
    ``burst`` must be at least 1 and, for p < 1, at least p / (1 - p) (shorter runs could
    not lose that much)."""
    p: float
    burst: Optional[float] = None

    def __post_init__(self) -> None:
        p = _probability(self.p)
        burst = self.burst
        if burst is not None:
            if isinstance(burst, bool) or not isinstance(burst, (int, float, np.integer,
                                                                 np.floating)):
                raise InvalidParameterError(f"Loss 'burst' must be a number, not "
                                            f"{type(burst).__name__}.")
            burst = float(burst)
            if not burst >= 1.0 or math.isinf(burst):
                raise InvalidParameterError(f"Loss 'burst' must be a mean run of losses >= 1 "
                                            f"message, not {burst}.")
            if p < 1 and p / (1 - p) > burst:
                raise InvalidParameterError(
                    f"Loss 'burst' {burst} is too short for p = {p}: losing that share "
                    f"needs runs of at least p / (1 - p) = {p / (1 - p):.3g} messages.")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "burst", burst)

    @property
    def leave(self) -> float:
        """The chance that a loss is followed by a delivery (bad -> good)."""
        if self.p == 1.0:
            return 0.0
        return 1.0 / self.burst if self.burst is not None else 1.0 - self.p

    @property
    def enter(self) -> float:
        """The chance that a delivery is followed by a loss (good -> bad)."""
        if self.p == 1.0:
            return 1.0
        return self.p * self.leave / (1.0 - self.p)

    def link(self, seed: Any = None) -> "Link":
        """The fates of a link's messages, drawn from ``seed`` (anything
        numpy.random.default_rng takes): the same seed, the same losses."""
        return Link(self, seed)


class Link:
    """One direction of one link under a ``Loss``: ``lost()`` tells the next message's
    fate, ``losses(n)`` the next n; ``dropped`` and ``passed`` count them. The first
    message finds the link in its long-run state (bad with chance p)."""

    def __init__(self, loss: Loss, seed: Any = None) -> None:
        self.loss = loss
        self.rng = np.random.default_rng(seed)
        self.bad: Optional[bool] = None
        self.dropped = self.passed = 0
        self._draws = np.empty(0)
        self._next = 0

    def lost(self) -> bool:
        """Whether the next message is lost."""
        if self._next == len(self._draws):
            self._draws, self._next = self.rng.random(_BLOCK), 0
        u = float(self._draws[self._next])
        self._next += 1
        loss = self.loss
        if self.bad is None:
            self.bad = u < loss.p
        else:
            self.bad = u >= loss.leave if self.bad else u < loss.enter
        if self.bad:
            self.dropped += 1
        else:
            self.passed += 1
        return self.bad

    def losses(self, n: int) -> np.ndarray:
        """The fates of the next ``n`` messages (True: lost)."""
        return np.fromiter((self.lost() for _ in range(n)), bool, count=n)


class RoundTrip:
    """A sender's estimate of a link's round trip and its retransmission timeout:
    ``sample(seconds)`` an answer's round trip (not of a message sent again: which send it
    answers is unknown), ``expired()`` a timeout (the next waits twice as long, up to
    ``most``), ``timeout`` the wait now, ``estimate`` the wait without the backoff (for
    senders that keep their own). Seconds throughout."""

    def __init__(self, least: float = 0.01, most: float = 1.0, first: float = 0.05) -> None:
        if not 0 < least <= first <= most:
            raise InvalidParameterError(f"RoundTrip needs 0 < least <= first <= most, not "
                                        f"{least}, {first}, {most}.")
        self.least, self.most, self.first = least, most, first
        self.smoothed: Optional[float] = None
        self.variation = 0.0
        self.backoff = 1

    def sample(self, seconds: float) -> None:
        if not seconds >= 0:
            raise InvalidParameterError(f"A round trip must be >= 0 s, not {seconds}.")
        if self.smoothed is None:
            self.smoothed, self.variation = seconds, seconds / 2
        else:
            self.variation = 0.75 * self.variation + 0.25 * abs(self.smoothed - seconds)
            self.smoothed = 0.875 * self.smoothed + 0.125 * seconds
        self.backoff = 1

    def expired(self) -> None:
        self.backoff = min(self.backoff * 2, 1 << 20)


    @property
    def estimate(self) -> float:
        base = self.first if self.smoothed is None else self.smoothed + 4 * self.variation
        return min(self.most, max(self.least, base))

    @property
    def timeout(self) -> float:
        return min(self.most, self.estimate * self.backoff)
