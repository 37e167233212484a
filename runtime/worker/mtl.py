"""A relay's part of a multi-task training step (the "mtl" job kind; runtime/master/mtl.py
plans it), a user's where users are workers of their own (the "mtl-user" kind), and what
each keeps between steps.

A relay holds, after every step, every user's parameters in signed fixed point over
GF(p), and, where users are no workers of their own, the data of its users. A step's task
brings the server's message of the step before (through the emulated server hop: it
takes the message's bytes at the hop's rate), which the relay decodes with its own users'
updates (ffcode.mtl's exchange, coded or not) and applies once; the relay then computes
its users' local updates from the model now held (or is given them, computed by its
users), and answers the server with its uplink message, a digest of each update (relays
sharing a user must agree on it, or decoding would be silently wrong) and a digest of
each update it decoded (which must be what the user's relays computed).

A user that is a worker of its own holds its data and every user's parameters; a step's
task brings the others' new parameters (from its relay, through the emulated hop between
them) and it answers its update.

A training's state is kept by the worker as a MapReduce run is (``worker.runs``), until
the master's drop (a MapReduce phase's) lets go of it.

>>> from ffcode.field import GF
>>> F = GF(7)
>>> training = Training(F, F.asarray([[1, 2], [3, 4]]))
>>> training.applied, training.model.tolist()
(-1, [[1, 2], [3, 4]])
"""
from __future__ import annotations

import time
from typing import Any, Callable, Generator, Iterator, Optional

import numpy as np

from ffcode.field import GF, PrimeField
from ffcode.mtl import scheme_of
from ffcode.runtime.shared import local
from ffcode.runtime.shared.mtl import MultiTask, UserStep, digest
from ffcode.runtime.worker.coded import paused
from ffcode.runtime.worker.shuffler import answer


class Training:
    """What a relay keeps of one training between its steps: each held user's data, every
    user's parameters (``model``, (users, d) field elements), the last step whose server
    message it applied, and what decoding the next one takes (``pending``: the step, its
    scheme, this relay's place in it, its users and their updates)."""
    busy = False            # between steps: a drop lets go of it at once

    def __init__(self, F: PrimeField, model: np.ndarray) -> None:
        self.F, self.model = F, model
        self.data: dict = {}
        self.applied = -1
        self.pending: Optional[tuple] = None
        self.decoded: dict = {}         # user -> the digest of its update last decoded
        self.schemes: dict = {}

    def scheme(self, spec: MultiTask) -> Any:
        """The step's exchange, built once per topology (every relay and the server draw
        the same coefficients from the seed)."""
        key = (spec.groups, spec.communication, spec.split, spec.seed)
        if key not in self.schemes:
            self.schemes[key] = scheme_of(spec.communication, spec.topology(), self.F,
                                          spec.split, spec.seed)
        return self.schemes[key]

    def apply(self, step: int, received: np.ndarray, linked: bool) -> None:
        """The server's message of ``step`` decoded into every user's parameters (once: a
        task sent again after a loss brings it again)."""
        if self.applied >= step:
            return
        if self.pending is None or self.pending[0] != step:
            raise ValueError(f"the server's message of step {step} came, and this relay "
                             f"computed no uplink of it")
        _, scheme, relay, users, own = self.pending
        decoded = scheme.decode(relay, own, received, width=self.model.shape[1],
                                linked=linked)
        self.model[list(users)] = decoded
        self.decoded = {str(u): digest(row) for u, row in zip(users, decoded)}
        self.applied, self.pending = step, None

    @property
    def size(self) -> int:
        """Bytes it holds: counted in the worker's budget for MapReduce's runs too."""
        return self.model.nbytes + sum(a.nbytes for arrays in self.data.values()
                                       for a in arrays)

    def close(self) -> None:
        self.data.clear()


class Learner(Training):
    """What a user that is a worker of its own keeps between its steps: its data, every
    user's parameters, and its update of the step it computed last (``pending``)."""

    def learned(self, step: int, user: int, taken: list) -> None:
        """A user's parameters after ``step``: its own update of it, and the others' new
        ones its relay decoded (``taken``: every user's, whose row of this user must be
        that update; or those of the users before it and after it), once, as ``apply``."""
        if self.applied >= step:
            return
        if self.pending is None or self.pending[0] != step:
            raise ValueError(f"the parameters of step {step} came, and this user computed "
                             f"no update of it")
        if len(taken) == 1:
            if not np.array_equal(taken[0][user], self.pending[1]):
                raise ValueError(f"the parameters of step {step} hold user {user}'s unlike "
                                 f"the update it computed")
            self.model[:] = taken[0]
        else:
            self.model[:user], self.model[user + 1:] = taken
            self.model[user] = self.pending[1]
        self.applied, self.pending = step, None


def mtl_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """A step's turns: the server's message applied, then one user's update a turn (or the
    updates given), then the answer (the uplink message, or on ``finish`` the model)."""
    spec: MultiTask = job.payload
    F = GF(spec.p)
    arrays = list(job.args)
    first = None
    if spec.start or not spec.given:
        if not arrays:
            raise ValueError("a multi-task task carries the model or the server's message "
                             "first")
        first = F.elements(arrays.pop(0), "the task's first array")
    training = _training(worker.runs, spec, F, first)
    training.data.update(_held(spec, job.shares))
    if first is not None and not spec.start:
        if spec.rate is not None and paused(job, first.nbytes / spec.rate):
            return                      # stopped on the emulated hop
        training.apply(spec.step - 1, first, spec.network == "links")
    if spec.finish:
        whole = training.model if spec.relay == 0 else training.model[:0]
        answer(job, out, {"digest": digest(training.model), "step": spec.step,
                          "decoded": training.decoded}, whole.tobytes())
        return
    yield
    scheme = training.scheme(spec)
    mine = [spec.users[u] for u in spec.groups[spec.relay]]
    began = time.perf_counter()
    own: Optional[np.ndarray] = _given(F, arrays, len(mine), training.model.shape[1]) \
        if spec.given else (yield from _computed(job, spec, training, mine, _reals(arrays)))
    if own is None:
        return                          # stopped
    message = scheme.uplink(spec.relay, own)
    training.pending = (spec.step, scheme, spec.relay, tuple(spec.users), own)
    answer(job, out, {"step": spec.step, "digests": [digest(u) for u in own],
                      "decoded": training.decoded, "compute": time.perf_counter() - began},
           message.tobytes())


def _computed(job: Any, spec: MultiTask, training: Training, mine: list,
              args: list) -> Generator[None, None, Optional[np.ndarray]]:
    """The relay's users' updates, one a turn, from the data it holds (None if stopped)."""
    F = training.F
    f = local.load_function(spec.f)
    W = F.to_real(training.model, spec.scale)
    own = np.empty((len(mine), training.model.shape[1]), F.dtype)
    for row, user in enumerate(mine):
        if user not in training.data:
            raise ValueError(f"this relay holds no data of user {user}")
        own[row] = _update(F, f, W, user, training.data[user], args, spec.scale)
        if job.stop.is_set():
            return None
        yield
    return own


def _given(F: PrimeField, arrays: list, users: int, d: int) -> np.ndarray:
    """The updates a task brings of the relay's users, one array each, checked."""
    if len(arrays) != users or any(a.shape != (d,) for a in arrays):
        raise ValueError(f"a task giving its users' updates brings {users} arrays of {d} "
                         f"parameters, not {[a.shape for a in arrays]}")
    return F.elements(np.stack(arrays) if arrays else np.empty((0, d), F.dtype),
                      "a user's update")


def user_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """A user's step (the "mtl-user" kind): the others' new parameters taken (through the
    emulated hop from its relay), then its update computed and answered."""
    spec: UserStep = job.payload
    F = GF(spec.p)
    count = 1 if spec.start or spec.network == "turns" else 2     # the parameters' arrays
    if spec.start and not job.args:
        raise ValueError("a user's task carries parameters first")
    parameters, args = job.args[:count], job.args[count:]
    if spec.start:
        first = F.elements(parameters[0], "the task's first array")
        if first.ndim != 2 or first.shape[0] != spec.users:
            raise ValueError(f"a training's model is {spec.users} users' parameters as rows, "
                             f"not shape {first.shape}")
        _begin(worker.runs, spec.run, Learner(F, first.copy()))
    training = worker.runs.get(spec.run)
    if not isinstance(training, Learner) or training.F.p != F.p or \
            training.model.shape[0] != spec.users:
        raise ValueError(f"this worker holds no training {spec.run}: its start task did not "
                         f"come here")
    training.data.update(_held_one(spec, job.shares))
    if not spec.start:
        taken = _taken(F, spec, parameters, training.model.shape[1])
        if spec.rate is not None and paused(job, sum(a.nbytes for a in taken) / spec.rate):
            return                      # stopped on the emulated hop
        training.learned(spec.step - 1, spec.user, taken)
    if spec.finish:
        answer(job, out, {"step": spec.step, "digest": digest(training.model)}, b"")
        return
    if spec.user not in training.data:
        raise ValueError(f"this worker holds no data of user {spec.user}")
    yield
    began = time.perf_counter()
    update = _update(F, local.load_function(spec.f), F.to_real(training.model, spec.scale),
                     spec.user, training.data[spec.user], _reals(args), spec.scale)
    training.pending = (spec.step, update)
    answer(job, out, {"step": spec.step, "compute": time.perf_counter() - began},
           update.tobytes())


def _taken(F: PrimeField, spec: UserStep, arrays: list, d: int) -> list:
    """The parameters a user's task brings (``arrays``), checked: on "turns" one broadcast
    of every user's, on "links" those of the users before it and of those after it."""
    u, N = spec.user, spec.users
    shapes = [(N, d)] if spec.network == "turns" else [(u, d), (N - u - 1, d)]
    if [a.shape for a in arrays] != shapes:
        raise ValueError(f"a user's task on {spec.network} brings parameters of shapes "
                         f"{shapes}, not {[a.shape for a in arrays]}")
    return [F.elements(a, "the users' parameters") for a in arrays]


def _begin(runs: dict, run: int, training: Training) -> None:
    """A training begun on this worker (one kept under its number let go of first)."""
    old = runs.pop(run, None)
    if old is not None:
        old.close()
    runs[run] = training


def _held_one(spec: UserStep, shares: Any) -> dict:
    """The user's data, which its start task brings (a share), and no other task."""
    shares = shares or []
    if len(shares) != int(spec.start):
        raise ValueError(f"a user's data come with its start task alone, and {len(shares)} "
                         f"shares came with step {spec.step}")
    return {spec.user: _reals(shares[0])} if shares else {}


def _training(runs: dict, spec: MultiTask, F: PrimeField,
              first: Optional[np.ndarray]) -> Training:
    """The training this task belongs to: begun by a start task (the model its first
    array), else the one kept."""
    if spec.start:
        if first is None or first.ndim != 2:
            raise ValueError(f"a training's model is a matrix of its users' parameters, not "
                             f"shape {None if first is None else first.shape}")
        _begin(runs, spec.run, Training(F, first.copy()))
    training = runs.get(spec.run)
    if not isinstance(training, Training) or isinstance(training, Learner) or \
            training.F.p != F.p:
        raise ValueError(f"this worker holds no training {spec.run}: its start task did not "
                         f"come here")
    if any(u >= training.model.shape[0] for u in spec.users):
        raise ValueError(f"the task names users beyond the model's {training.model.shape[0]}")
    return training


def _held(spec: MultiTask, shares: Any) -> dict:
    """The users' data the task brings: user -> its arrays."""
    shares = shares or []
    if len(shares) != len(spec.held):
        raise ValueError(f"the task names {len(spec.held)} users' data, and "
                         f"{len(shares)} came with it")
    return {user: _reals(arrays) for user, arrays in zip(spec.held, shares)}


def _reals(arrays: Any) -> list:
    """Arrays of reals as they travel (float64 bits as int64) read back."""
    if any(a.dtype != np.int64 for a in arrays):
        raise ValueError("a multi-task task's data and arguments are float64 bits as int64")
    return [a.view(np.float64) for a in arrays]


def _update(F: PrimeField, f: Callable, W: np.ndarray, user: int, data: list, args: list,
            scale: float) -> np.ndarray:
    """A user's local update in fixed point: f's new parameters, checked."""
    new = np.asarray(f(W, user, *data, *args), dtype=np.float64)
    if new.shape != W.shape[1:]:
        raise ValueError(f"the local update of user {user} has shape {new.shape}, not its "
                         f"parameters' {W.shape[1:]}")
    if not np.isfinite(new).all():
        raise ValueError(f"the local update of user {user} is not finite")
    return F.from_real(new, scale)
