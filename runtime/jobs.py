"""What each worker does in a job, and which collector turns its packets into the output.

Workers never see a code object: a task names the code's computation by import path (with
the field), carries the operand arrays of the worker's share (and the job's arguments),
and says how to send the result: whole (one packet), systematic or random combinations of
m row pieces, or one packet per piece as it is computed (computation at full speed: the
row-linear operand arrives as m blocks, with their combination coefficients last).
"""
from dataclasses import dataclass

import numpy as np

from ffcode import _validate, collect, functions
from ffcode.codes.base import Code
from ffcode.pieces import pieces_count

SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")
SEND = {"uncoded": "whole", "classic": "whole", "systematic": "systematic", "cfs": "random",
        "compfs": "pieces"}


@dataclass
class Task:
    spec: dict          # JSON: f, p, send, pieces, seed, operand (faults are added per run)
    operands: list      # arrays: for "pieces", the first holds the m blocks, the last G_i


class Plan:
    """One job: the tasks of workers 0..N-1 (None: idle), and the collector of their
    packets (ffcode.collect)."""

    def __init__(self, code, inputs, scheme, pieces, seed, buffer=None, adversaries=0):
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        if scheme not in SCHEMES:
            raise ValueError(f"Argument 'scheme' must be one of {', '.join(SCHEMES)}; "
                             f"not {scheme!r}.")
        self.code, self.F, self.scheme = code, code.F, scheme
        # The faults pause per piece of work, m pieces in every scheme (so that a comparison
        # meets the same delays); whole-result schemes send their m pieces as one packet.
        self.work_pieces = self.pieces = pieces_count(pieces)
        if scheme in ("uncoded", "classic"):
            self.pieces = 1
        adversaries = _validate.integer(adversaries, "adversaries")
        if adversaries < 0:
            raise ValueError(f"Argument 'adversaries' must be non-negative, not "
                             f"{adversaries}.")
        if adversaries and scheme == "uncoded":
            raise ValueError("Correcting wrong results (adversaries > 0) needs redundancy, "
                             "which scheme='uncoded' has none of: use classic, systematic, "
                             "cfs or compfs.")
        self.adversaries = adversaries
        R = code.recovery_threshold
        if R + 2 * adversaries > code.n_workers:
            raise ValueError(f"Correcting {adversaries} wrong results needs R + 2A = "
                             f"{R + 2 * adversaries} workers; the code has {code.n_workers}.")
        code.check_inputs(inputs)
        base = dict(f=functions.path_of(code.function), p=self.F.p, send=SEND[scheme],
                    pieces=self.pieces)
        if scheme == "uncoded":
            split = code.uncoded(*inputs)
            _check_rows(np.shape(a) for share in split.shares for a in share)
            self.tasks = [Task(base, list(share)) for share in split.shares]
            self.tasks += [None] * (code.n_workers - len(self.tasks))
            self.collector = collect.Gather(self.F, len(split.shares), split.assemble)
            self.needed = self.collector.needed
            return
        m = self.pieces if scheme == "compfs" else None
        encoding = code.encode(*inputs[:code.encodes], pieces=m, seed=seed)
        args = code.arguments(encoding, *inputs[code.encodes:])
        _check_rows(encoding.blocks)
        self.tasks = [_task(share, args, dict(base, seed=_seed(seed, i)))
                      for i, share in enumerate(encoding)]
        # Enough packets for any A wrong workers (m·R when nobody may be wrong).
        self.needed = self.pieces * (R + 2 * adversaries)
        self.collector = collect.for_job(encoding, self.pieces, adversaries,
                                         whole=scheme == "classic", buffer=buffer)

    @property
    def buffer(self):
        """The payload storage the decoder used, for the next job to reuse."""
        return getattr(self.collector, "buffer", None)


def _check_rows(shapes):
    if any(len(shape) == 0 for shape in shapes):
        raise ValueError("The runtime sends results in row pieces: give blocks at least one "
                         "dimension (a scalar as shape (1,)).")


def _seed(seed, worker):
    """Each worker's packet coefficients come from its own stream of the job's seed."""
    return [int(s) for s in np.random.SeedSequence([seed or 0, worker]).generate_state(2)]


def _task(share, args, spec):
    if spec["send"] == "pieces":
        return Task(dict(spec, operand=share.operand),
                    [share.blocks, *share.rest, *args, share.coeffs])
    return Task(spec, [*share, *args])
