"""What each worker does in a job, and which collector turns its packets into the output.

Workers never see a code object: a task names the code's computation by import path (with
the field), carries the operand arrays of the worker's shares (or names the shares the
worker already holds: resident data) and the job's arguments, and says how to send each
result: whole (one packet), systematic or random combinations of m row pieces, or one
packet per piece as it is computed (computation at full speed: the row-linear operand
arrives as m blocks, followed by their combination coefficients).

A worker may hold several shares (``assignment[i]``, code indices, ffcode.allocation): it
works through them in order and numbers its packets on, share k's piece j as k·m + j, so
that the master files each under its share, every share being its own sender.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ffcode import allocation, checks, functions
from ffcode.decoding import collectors as collect
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
    Split), ``shares[k]``, the arrays of the code's share k (None: no work), and
    ``assignment[i]``, the shares worker i holds (ffcode.allocation). ``holds`` says which
    schemes it serves (HOLDS); ``pieces`` is m for piece-combined shares."""

    def __init__(self, code: Code, data, scheme: str, pieces: Optional[int], seed,
                 assignment):
        self.code, self.holds, self.assignment = code, HOLDS[scheme], assignment
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

    def held(self, worker) -> list:
        """The (code index, arrays) of the shares worker holds that have work."""
        return [(k, self.shares[k]) for k in self.assignment[worker]
                if self.shares[k] is not None]


class Plan:
    """One job: the tasks of the workers of ``assignment`` (None: idle), and the collector
    of their shares' packets (ffcode.decoding.collectors). ``inputs`` are the code's inputs, data and
    arguments; for ``resident`` data (runtime.resident.Resident) just the arguments, on
    the assignment it was loaded with. ``adversaries`` counts wrong workers: a wrong
    worker is wrong on every share it holds, so the collector corrects as many shares as
    the A workers holding the most hold between them (``wrong_shares``)."""

    def __init__(self, code, inputs, scheme, pieces, seed, buffer=None, adversaries=0,
                 resident=None, assignment=None):
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        self.code, self.F, self.scheme = code, code.F, checked_scheme(scheme)
        # The faults pause per piece of work, m pieces in every scheme (so that a comparison
        # meets the same delays); whole-result schemes send their m pieces as one packet.
        self.work_pieces = self.pieces = pieces_count(pieces)
        if scheme in ("uncoded", "classic"):
            self.pieces = 1
        adversaries = checks.integer(adversaries, "adversaries")
        if adversaries < 0:
            raise ValueError(f"Argument 'adversaries' must be non-negative, not "
                             f"{adversaries}.")
        if adversaries and scheme == "uncoded":
            raise ValueError("Correcting wrong results (adversaries > 0) needs redundancy, "
                             "which scheme='uncoded' has none of: use classic, systematic, "
                             "cfs or compfs.")
        self.adversaries = adversaries
        path = functions.path_of(code.function)    # before any work: workers import it
        self.resident = resident
        layout = None if resident is None else resident.layout
        if layout is not None:
            assignment = layout.assignment
        elif assignment is None:
            assignment = allocation.uniform(code.n_workers, code.n_workers)
        self.assignment = assignment
        R = code.recovery_threshold
        counts = sorted((len(held) for held in assignment), reverse=True)
        self.wrong_shares = sum(counts[:adversaries])
        if R + 2 * self.wrong_shares > code.n_workers:
            raise ValueError(
                f"Correcting {adversaries} wrong results needs R + 2A = {R + 2 * adversaries}"
                f" workers; the code has {code.n_workers}." if self.wrong_shares ==
                adversaries else
                f"Correcting {adversaries} wrong workers holding up to {self.wrong_shares} "
                f"shares needs R + 2S = {R + 2 * self.wrong_shares} shares; the code has "
                f"{code.n_workers}.")
        if layout is None:
            code.check_inputs(inputs)
            layout = Layout(code, inputs[:code.encodes], scheme, self.pieces, seed,
                            assignment)
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
        self.tasks, self.held = [], []      # held: each worker's shares with work, in order
        for worker in range(len(assignment)):
            held = layout.held(worker)
            self.held.append([k for k, _ in held])
            spec = dict(base, shares=len(held),
                        counts=[] if resident else [len(share) for _, share in held],
                        seeds=[_seed(seed, k) for k, _ in held] if scheme == "cfs" else None)
            self.tasks.append(Task(spec, [] if resident else [a for _, share in held
                                                               for a in share], args)
                              if held else None)
        if scheme == "uncoded":
            split = layout.encoding
            self.collector = collect.Gather(self.F, len(split.shares), split.assemble)
            self.needed = self.collector.needed
            return
        # Enough packets for any A wrong workers (m·R when nobody may be wrong).
        self.needed = self.pieces * (R + 2 * self.wrong_shares)
        self.collector = collect.for_job(layout.encoding, self.pieces, self.wrong_shares,
                                         whole=scheme == "classic", buffer=buffer)

    def share_of(self, worker, index):
        """(code index, piece) of the packet ``index`` of a worker (None: it has no such
        packet): share k of its list, piece j, numbered k·m + j."""
        k, j = divmod(index, self.pieces)
        held = self.held[worker]
        return (held[k], j) if k < len(held) else None

    @property
    def buffer(self):
        """The payload storage the decoder used, for the next job to reuse."""
        return getattr(self.collector, "buffer", None)


@dataclass
class Task:
    spec: dict          # JSON: f, p, send, pieces, operand; data: the resident shares' id
                        # (None: shipped); shares: how many; counts: each one's arrays
                        # (shipped); seeds: each one's packet seed (cfs)
    share: list         # the shares' arrays, one after another ([] when resident)
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
