"""A relay's part of a multi-task training step (the "mtl" job kind; runtime/master/mtl.py
plans it), and what it keeps between steps.

A relay holds the data of its users and, after every step, every user's parameters in
signed fixed point over GF(p). A step's task brings the server's message of the step
before (through the emulated server hop: it takes the message's bytes at the hop's rate),
which the relay decodes with its own users' updates (ffcode.mtl's exchange, coded or
not) and applies once; the relay then computes its users' local updates from the model
now held, and answers the server with its uplink message, a digest of each update
(relays sharing a user must agree on it, or decoding would be silently wrong) and a
digest of each update it decoded (which must be what the user's relays computed).

A training's state is kept by the worker as a MapReduce run is (``worker.runs``), until
the master's drop (a MapReduce phase's) lets go of it.

>>> from ffcode.field import GF
>>> F = GF(7)
>>> training = Training(F, F.asarray([[1, 2], [3, 4]]))
>>> training.applied, training.model.tolist()
(-1, [[1, 2], [3, 4]])
>>> digest(F.asarray([1, 2])) == digest(F.asarray([1, 2])), len(digest(F.asarray([1])))
(True, 32)
"""
from __future__ import annotations

import hashlib
import time
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ffcode.field import GF, PrimeField
from ffcode.mtl import scheme_of
from ffcode.runtime.shared import local
from ffcode.runtime.shared.mtl import MultiTask
from ffcode.runtime.worker.coded import paused
from ffcode.runtime.worker.shuffler import answer


def digest(update: np.ndarray) -> str:
    """A user's update, fingerprinted (hex): relays sharing the user compare them."""
    return hashlib.blake2b(np.ascontiguousarray(update).tobytes(), digest_size=16).hexdigest()


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


def mtl_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """A step's turns: the server's message applied, then one user's update a turn, then
    the answer (the uplink message, or on ``finish`` the model)."""
    spec: MultiTask = job.payload
    F = GF(spec.p)
    if not job.args:
        raise ValueError("a multi-task task carries the model or the server's message first")
    first, args = F.elements(job.args[0], "the task's first array"), _reals(job.args[1:])
    training = _training(worker.runs, spec, F, first)
    training.data.update(_held(spec, job.shares))
    if not spec.start:
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
    group = spec.groups[spec.relay]
    mine = [spec.users[u] for u in group]
    f = local.load_function(spec.f)
    W = F.to_real(training.model, spec.scale)
    own = np.empty((len(mine), training.model.shape[1]), F.dtype)
    began = time.perf_counter()
    for row, user in enumerate(mine):
        if user not in training.data:
            raise ValueError(f"this relay holds no data of user {user}")
        own[row] = _update(F, f, W, user, training.data[user], args, spec.scale)
        if job.stop.is_set():
            return
        yield
    message = scheme.uplink(spec.relay, own)
    training.pending = (spec.step, scheme, spec.relay, tuple(spec.users), own)
    answer(job, out, {"step": spec.step, "digests": [digest(u) for u in own],
                      "decoded": training.decoded, "compute": time.perf_counter() - began},
           message.tobytes())


def _training(runs: dict, spec: MultiTask, F: PrimeField, first: np.ndarray) -> Training:
    """The training this task belongs to: begun by a start task (the model its first
    array), else the one kept."""
    if spec.start:
        if first.ndim != 2:
            raise ValueError(f"a training's model is a matrix of its users' parameters, not "
                             f"shape {first.shape}")
        old = runs.pop(spec.run, None)
        if old is not None:
            old.close()
        runs[spec.run] = Training(F, first.copy())
    training = runs.get(spec.run)
    if not isinstance(training, Training) or training.F.p != F.p:
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
