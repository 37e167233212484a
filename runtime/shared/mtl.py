"""The payload of a multi-task training step on relays (a job kind, runtime/shared/kinds.py):
what one relay does of a step of ffcode.mtl's exchange, checked at both ends.

>>> task = MultiTask(run=7, f="m:update", p=65521, scale=256.0, groups=((0, 1), (1,)),
...                  users=(0, 1), relay=0, communication="coded", split=None, seed=0, step=0,
...                  start=True, held=(0, 1), finish=False, network="turns", rate=None)
>>> MultiTask.from_meta(task.to_meta()) == task
True
>>> MultiTask.from_meta(dict(task.to_meta(), relay=2))
Traceback (most recent call last):
...
ffcode.errors.ProtocolError: a task's relay must be an integer from 0 to 1, not 2
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from ffcode.errors import ProtocolError
from ffcode.mtl import COMMUNICATIONS, MAX_RELAYS, Topology
from ffcode.runtime.shared import meta as check
from ffcode.runtime.shared.phases import NETWORKS, prime_of

MAX_USERS = 1 << 20         # users a training may have


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
    second; None: as fast as it goes)."""
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
                   check.optional(meta["rate"], "rate", check.rate))

    def topology(self) -> Topology:
        """The step's topology (ffcode.mtl.Topology; its own refusals as ProtocolError)."""
        try:
            return Topology(self.groups)
        except ValueError as e:
            raise ProtocolError(f"a task's groups are no topology: {e}") from None
