"""What each worker does in a job, and which collector turns its packets into the output.

Workers never see a code object: a task names the code's computation by import path (with
the field), carries the operand arrays of the worker's share (or names the share the worker
already holds: resident data) and the job's arguments, and says how to send the result:
whole (one packet), systematic or random combinations of m row pieces, or one packet per
piece as it is computed (computation at full speed: the row-linear operand arrives as m
blocks, followed by their combination coefficients).
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ffcode import _validate, collect, functions
from ffcode.codes.base import Code
from ffcode.pieces import pieces_count

SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")
SEND = {"uncoded": "whole", "classic": "whole", "systematic": "systematic", "cfs": "random",
        "compfs": "pieces"}
# The shares a scheme's workers hold: slices, whole coded shares, or piece-combined ones.
HOLDS = {"uncoded": "slices", "classic": "shares", "systematic": "shares", "cfs": "shares",
         "compfs": "pieces"}


def checked_scheme(scheme) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"Argument 'scheme' must be one of {', '.join(SCHEMES)}; "
                         f"not {scheme!r}.")
    return scheme


class Layout:
    """A job's data as the workers hold it: ``encoding`` (an Encoding, or the uncoded
    Split) and ``shares[i]``, worker i's arrays (None: idle). ``holds`` says which schemes
    it serves (HOLDS); ``pieces`` is m for piece-combined shares."""

    def __init__(self, code: Code, data, scheme: str, pieces: Optional[int], seed):
        self.code, self.holds = code, HOLDS[scheme]
        self.pieces = pieces if self.holds == "pieces" else None
        if self.holds == "slices":
            self.encoding = code.uncoded(*data)
        else:
            self.encoding = code.encode(*data, pieces=self.pieces, seed=seed)
            _check_rows(self.encoding.blocks)
        shares = [_arrays(share) for share in self.encoding]
        if self.holds == "slices":
            _check_rows(np.shape(a) for share in shares for a in share)
        self.shares = shares + [None] * (code.n_workers - len(shares))
        self.nbytes = sum(a.nbytes for share in shares for a in share)

    def serves(self, scheme) -> bool:
        return HOLDS[scheme] == self.holds


class Plan:
    """One job: the tasks of workers 0..N-1 (None: idle), and the collector of their
    packets (ffcode.collect). ``inputs`` are the code's inputs, data and arguments; for
    ``resident`` data (runtime.resident.Resident) just the arguments."""

    def __init__(self, code, inputs, scheme, pieces, seed, buffer=None, adversaries=0,
                 resident=None):
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        self.code, self.F, self.scheme = code, code.F, checked_scheme(scheme)
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
        path = functions.path_of(code.function)    # before any work: workers import it
        self.resident = resident
        layout = None if resident is None else resident.layout
        if layout is None:
            code.check_inputs(inputs)
            layout = Layout(code, inputs[:code.encodes], scheme, self.pieces, seed)
            inputs = inputs[code.encodes:]
        elif not layout.serves(scheme):
            raise ValueError(f"The resident data holds {layout.holds} (loaded for "
                             f"{', '.join(s for s in SCHEMES if layout.serves(s))}), which "
                             f"scheme={scheme!r} cannot run on: load it for {scheme!r}.")
        elif layout.pieces not in (None, self.pieces):
            raise ValueError(f"The resident data was loaded for compfs with "
                             f"pieces={layout.pieces}, not {self.pieces}.")
        self.layout = layout
        args = [np.asarray(a) for a in code.arguments(layout.encoding, *inputs)]
        base = dict(f=path, p=self.F.p, send=SEND[scheme],
                    pieces=self.pieces, data=None if resident is None else resident.ident)
        if scheme == "compfs":
            base["operand"] = layout.encoding[0].operand
        self.tasks = [None if share is None else
                      Task(dict(base, seed=_seed(seed, i) if scheme == "cfs" else None,
                                share=0 if resident else len(share)),
                           [] if resident else share, args)
                      for i, share in enumerate(layout.shares)]
        if scheme == "uncoded":
            split = layout.encoding
            self.collector = collect.Gather(self.F, len(split.shares), split.assemble)
            self.needed = self.collector.needed
            return
        # Enough packets for any A wrong workers (m·R when nobody may be wrong).
        self.needed = self.pieces * (R + 2 * adversaries)
        self.collector = collect.for_job(layout.encoding, self.pieces, adversaries,
                                         whole=scheme == "classic", buffer=buffer)

    @property
    def buffer(self):
        """The payload storage the decoder used, for the next job to reuse."""
        return getattr(self.collector, "buffer", None)


@dataclass
class Task:
    spec: dict          # JSON: f, p, send, pieces, seed, operand; data: the resident share's
                        # id (None: shipped), share: how many of the arrays are the share
    share: list         # the share's arrays, shipped with the task ([] when resident)
    args: list          # the job's arguments

    @property
    def arrays(self) -> list:
        return [*self.share, *self.args]


def _arrays(share) -> list:
    """A share as the list of arrays a worker holds: for full speed, the m blocks, their
    coefficients, then the other operands."""
    if isinstance(share, tuple):
        return [np.asarray(a) for a in share]
    return [share.blocks, share.coeffs, *share.rest]


def _check_rows(shapes):
    if any(len(shape) == 0 for shape in shapes):
        raise ValueError("The runtime sends results in row pieces: give blocks at least one "
                         "dimension (a scalar as shape (1,)).")


def _seed(seed, worker):
    """Each worker's packet coefficients (cfs) come from its own stream of the job's
    seed."""
    return [int(s) for s in np.random.SeedSequence([seed or 0, worker]).generate_state(2)]
