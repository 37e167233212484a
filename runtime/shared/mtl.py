"""The payloads of a multi-task training step (job kinds, runtime/shared/kinds.py): what one
relay does of a step of ffcode.mtl's exchange (``MultiTask``), and what a user that is a
worker of its own does (``UserStep``), checked at both ends; and the digest by which
the master compares what they say of an update.

>>> task = MultiTask(run=7, f="m:update", p=65521, scale=256.0, groups=((0, 1), (1,)),
...                  users=(0, 1), relay=0, communication="coded", split=None, seed=0, step=0,
...                  start=True, held=(0, 1), finish=False, network="turns", rate=None,
...                  given=False)
>>> MultiTask.from_meta(task.to_meta()) == task
True
>>> MultiTask.from_meta(dict(task.to_meta(), relay=2))
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's relay must be an integer from 0 to 1, not 2
>>> step = UserStep(run=7, f="m:update", p=65521, scale=256.0, user=1, users=3, step=1,
...                 start=False, finish=False, network="links", rate=1e6)
>>> UserStep.from_meta(step.to_meta()) == step
True
>>> UserStep.from_meta(dict(step.to_meta(), user=3))
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's user must be an integer from 0 to 2, not 3
>>> len(digest(np.arange(3)))
32
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import numpy as np

from ffcode.errors import ProtocolError
from ffcode.mtl import COMMUNICATIONS, MAX_RELAYS, Topology
from ffcode.runtime.shared import meta as check
from ffcode.runtime.shared.phases import NETWORKS, prime_of

MAX_USERS = 1 << 20         # users a training may have


def digest(update: np.ndarray) -> str:
    """An update (or a model), fingerprinted (hex): what relays and users say of one are
    compared by it."""
    return hashlib.blake2b(np.ascontiguousarray(update).tobytes(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class MultiTask:
    """One relay's task in a training step (ffcode.runtime.master.mtl). ``run``: the
    training, kept on the worker between steps (a MapReduce drop lets go of it); ``f``: the
    import path of each user's local update, f(W, user, *its data, *args) -> its new
    parameters (W: every user's, float64); ``p`` and ``scale``: the signed fixed point the
    parameters travel in; ``groups``: the topology of this step (relay k's users, numbered
    among this step's), ``users`` the training's number of each of them, ``relay`` this
    worker's; ``communication``, ``split``, ``seed``: the exchange (ffcode.mtl.scheme_of);
    ``step``: the step whose uplink it computes; its first array is the model (``start``)
    or the server's message of the step before, which it applies once; ``held``: the users
    whose data come with it (a share each); ``finish``: it answers the model instead of
    computing; ``network`` and ``rate``: the emulated server hop it receives on (bytes a
    second; None: as fast as it goes). ``given``: its users' updates come with it, each an
    array after the model (``start``) or first (no message: a relay whose users are workers
    of their own applied it at the step before's ``finish``)."""
    KIND: ClassVar[str] = "mtl"
    run: int
    f: str
    p: int
    scale: float
    groups: tuple
    users: tuple
    relay: int
    communication: str
    split: Optional[int]
    seed: int
    step: int
    start: bool
    held: tuple
    finish: bool
    network: str
    rate: Optional[float]
    given: bool

    def to_meta(self) -> dict:
        return dict(vars(self), groups=[list(g) for g in self.groups], users=list(self.users),
                    held=list(self.held))

    @classmethod
    def from_meta(cls, meta: Any) -> "MultiTask":
        meta = check.fields(meta, "multi-task task", cls)
        users = [check.count(u, "user", MAX_USERS) for u in check.listed(meta["users"], "users")]
        if len(set(users)) != len(users) or len(users) > MAX_USERS:
            raise ProtocolError("a task's users must be distinct")
        groups = check.listed(meta["groups"], "groups")
        if not 1 <= len(groups) <= MAX_RELAYS:
            raise ProtocolError(f"a task's groups must be 1 to {MAX_RELAYS} relays' users")
        groups = [[check.count(u, "group's user", len(users) - 1)
                   for u in check.listed(g, "group")] for g in groups]
        if {u for g in groups for u in g} != set(range(len(users))):
            raise ProtocolError("a task's groups must serve each of its users")
        held = [check.count(u, "held user", MAX_USERS) for u in check.listed(meta["held"],
                                                                             "held")]
        scale = check.rate(meta["scale"], "scale")
        return cls(check.count(meta["run"], "run"), check.path(meta["f"], "f"),
                   prime_of(meta["p"], "p"), scale, tuple(tuple(g) for g in groups),
                   tuple(users), check.count(meta["relay"], "relay", len(groups) - 1),
                   check.choice(meta["communication"], "communication", COMMUNICATIONS),
                   check.optional(meta["split"], "split",
                                  lambda s, name: check.count(s, name, 1 << 16, low=1)),
                   check.count(meta["seed"], "seed", (1 << 63) - 1),
                   check.count(meta["step"], "step"), check.flag(meta["start"], "start"),
                   tuple(held), check.flag(meta["finish"], "finish"),
                   check.choice(meta["network"], "network", NETWORKS),
                   check.optional(meta["rate"], "rate", check.rate),
                   check.flag(meta["given"], "given"))

    def topology(self) -> Topology:
        """The step's topology (ffcode.mtl.Topology; its own refusals as ProtocolError)."""
        try:
            return Topology(self.groups)
        except ValueError as e:
            raise ProtocolError(f"a task's groups are no topology: {e}") from None


@dataclass(frozen=True)
class UserStep:
    """A user's task in a training step where users are workers of their own (the
    hierarchical layout, ffcode.runtime.master.mtl): ``run``, ``f``, ``p``, ``scale`` as a
    relay's; ``user``: its number among the training's ``users``; ``step``: the step whose
    update it computes; ``start``: its data come with it (a share) and its first array is
    every user's parameters; else the new parameters its relay decoded at the step
    before: on ``network`` "links" the first two arrays, those of the users before it and
    of those after it (its own are the update it computed then), on "turns" the first,
    one broadcast of every user's (its own row must be that update); ``finish``: it
    computes nothing more, and answers the digest of the parameters it holds; ``rate``:
    the emulated hop from its relay it receives them on (bytes a second; None: as fast
    as it goes)."""
    KIND: ClassVar[str] = "mtl-user"
    run: int
    f: str
    p: int
    scale: float
    user: int
    users: int
    step: int
    start: bool
    finish: bool
    network: str
    rate: Optional[float]

    def to_meta(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_meta(cls, meta: Any) -> "UserStep":
        meta = check.fields(meta, "user's task", cls)
        users = check.count(meta["users"], "users", MAX_USERS, low=1)
        return cls(check.count(meta["run"], "run"), check.path(meta["f"], "f"),
                   prime_of(meta["p"], "p"), check.rate(meta["scale"], "scale"),
                   check.count(meta["user"], "user", users - 1), users,
                   check.count(meta["step"], "step"),
                   check.flag(meta["start"], "start"), check.flag(meta["finish"], "finish"),
                   check.choice(meta["network"], "network", NETWORKS),
                   check.optional(meta["rate"], "rate", check.rate))
