"""What each worker does in a job, and how the master turns its packets into the output.

Workers never see a code object: a task is an operation ("matmul" of two operands, or
"call" of f named by import path) on the operand arrays, and how to send the result:
whole (one packet), systematic or random combinations of m row pieces, or one packet per
piece as it is computed (computation at full speed, the operand arrives as m blocks).
"""
from dataclasses import dataclass

import numpy as np

from ffcode import _validate, byzantine, functions
from ffcode.byzantine import RobustDecoder
from ffcode._blocks import split_rows
from ffcode.codes import LCC, MDS
from ffcode.codes._base import Code, ProductCode
from ffcode.decoder import Decoder
from ffcode.pieces import pieces_count

SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")
SEND = {"uncoded": "whole", "classic": "whole", "systematic": "systematic", "cfs": "random",
        "compfs": "pieces"}


@dataclass
class Task:
    spec: dict          # JSON: op, f, p, send, pieces, seed (faults are added per run)
    operands: list      # arrays: for "pieces", the first holds the m blocks, the last G_i


class Plan:
    """One job: the tasks of workers 0..N-1 (None: idle), and the collector of packets
    (a Decoder, or Gather for uncoded runs), made at the first packet when its shape is
    needed."""

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
        if code.recovery_threshold + 2 * adversaries > code.n_workers:
            raise ValueError(f"Correcting {adversaries} wrong results needs R + 2A = "
                             f"{code.recovery_threshold + 2 * adversaries} workers; the code "
                             f"has {code.n_workers}.")
        operation = ({"op": "call", "f": functions.path_of(code.f)} if isinstance(code, LCC)
                     else {"op": "matmul"})
        encode_inputs, args = _split_inputs(code, inputs)
        if isinstance(code, LCC) and not code.checked_blocks(encode_inputs[0])[0].ndim:
            raise ValueError("The runtime sends results in row pieces: give LCC blocks at "
                             "least one dimension (a scalar as shape (1,)).")
        base = dict(operation, p=self.F.p, send=SEND[scheme], pieces=self.pieces)
        if scheme == "uncoded":
            self.tasks, self.collector = _uncoded(code, encode_inputs, args, base)
            self.needed = self.collector.needed
            return
        m = self.pieces if scheme == "compfs" else None
        shares = code.encode(*encode_inputs, pieces=m, seed=seed)
        self.tasks = [_coded_task(code, share, args, dict(base, seed=_seed(seed, i)))
                      for i, share in enumerate(shares)]
        # Enough packets for any A wrong workers (m·R when nobody may be wrong).
        self.needed = self.pieces * (code.recovery_threshold + 2 * adversaries)

        def collector(shape, first):
            if not adversaries:
                return Decoder(code, self.pieces, shape, defer=True,
                               buffer=buffer if first else None)
            if scheme == "classic":
                return Robust(code, adversaries)
            return RobustDecoder(code, self.pieces, adversaries, shape)

        # The shape of a local result is voted on when the code cannot tell it, and when a
        # wrong worker's packet must not fix it for everyone.
        self.collector = (ShapeVote(collector, self.pieces, code._result_rows())
                          if adversaries or code._result_rows() is None else
                          collector(None, True))

    @property
    def buffer(self):
        """The payload storage the decoder used, for the next job to reuse."""
        return getattr(self.collector, "buffer", None)

    def add(self, packet, rows: int) -> bool:
        """Give a packet to the collector (True if innovative); ``rows`` is the local
        result's row count its worker claims, used only when the code cannot tell."""
        if isinstance(self.collector, ShapeVote):
            return self.collector.add(packet, rows)
        return self.collector.add(packet)

    def counted(self, worker: int, index: int) -> bool:
        """Whether a kept packet of a worker not found wrong counted towards the output: not
        so for one filed under a shape that lost the vote."""
        if isinstance(self.collector, ShapeVote):
            return self.collector.filed.get((worker, index)) == self.collector.leader_shape
        return True


def _seed(seed, worker):
    """Each worker's packet coefficients come from its own stream of the job's seed."""
    return [int(s) for s in np.random.SeedSequence([seed or 0, worker]).generate_state(2)]


def _split_inputs(code, inputs):
    """(the inputs code.encode takes, the extra arguments every worker's compute takes)."""
    if isinstance(code, MDS):
        expected, names = 2, "(A, x)"
    elif isinstance(code, ProductCode):
        expected, names = 2, "(A, B)"
    else:
        expected, names = 1, "(blocks,)"
    if len(inputs) != expected:
        raise TypeError(f"{type(code).__name__} runs on inputs {names}, got {len(inputs)} "
                        f"argument{'s' if len(inputs) != 1 else ''}.")
    if isinstance(code, MDS):
        A = code.F.matrix(inputs[0], "A")
        x = code.checked_x(inputs[1], A)
        if x.shape[0] != A.shape[1]:
            raise ValueError(f"Arguments 'A' and 'x' do not chain: shapes {A.shape} and "
                             f"{x.shape}.")
        return (A,), (x,)
    return tuple(inputs), ()


def _coded_task(code, share, args, spec):
    if spec["send"] == "pieces":
        return Task(spec, [share.blocks, *share.rest, *args, share.coeffs])
    operand, rest = code._split_share(share)
    return Task(spec, [operand, *rest, *args])


def _uncoded(code, inputs, args, spec):
    """Without redundancy: the rows of the first operand split over the N workers (every
    worker needed), or for LCC f(X_j) on worker j."""
    F, N = code.F, code.n_workers
    if isinstance(code, LCC):
        blocks = code.checked_blocks(inputs[0])
        if len(blocks) > N:
            raise ValueError(f"Uncoded LCC gives each of the k = {len(blocks)} blocks to its "
                             f"own worker, but there are only {N}.")
        tasks = [Task(spec, [x]) for x in blocks] + [None] * (N - len(blocks))
        return tasks, Gather(F, len(blocks), list)
    A = F.matrix(inputs[0], "A")
    rest = args if isinstance(code, MDS) else (code._operands(A, inputs[1])[1],)
    slabs = split_rows(A, N)
    tasks = [Task(spec, [slab, *rest]) for slab in slabs]
    rows = A.shape[0]
    return tasks, Gather(F, N, lambda results: np.concatenate(results)[:rows])


class WholeResults:
    """Collects whole local results, one packet (index 0, coefficients [1]) per worker, until
    ``needed`` distinct workers have sent one; subclasses check a payload and use them."""
    pending = 0

    def __init__(self, needed):
        self.needed, self._results = needed, {}

    @property
    def rank(self):
        return len(self._results)

    @property
    def complete(self):
        return len(self._results) >= self.needed

    def add(self, packet) -> bool:
        if packet.index != 0 or packet.coeffs.tolist() != [1]:
            raise ValueError("A whole result is one packet: index 0, coefficients [1].")
        payload = self._checked(packet)
        first = next(iter(self._results.values()), payload)
        if payload.shape != first.shape:
            raise ValueError(f"Packet payload has shape {payload.shape}, expected "
                             f"{first.shape}.")
        if packet.worker in self._results or self.complete:
            return False
        self._results[packet.worker] = payload
        return True

    def eliminate(self, count=1) -> int:
        return 0


class Gather(WholeResults):
    """The uncoded collector: one whole result from each of ``needed`` workers, assembled."""

    def __init__(self, F, needed, assemble):
        super().__init__(needed)
        self.F, self._assemble = F, assemble

    def _checked(self, packet):
        if not 0 <= packet.worker < self.needed:
            raise ValueError(f"Worker {packet.worker} has no uncoded task.")
        return self.F.elements(packet.payload, "packet payload")

    def result(self):
        if not self.complete:
            raise ValueError(f"Not assembled yet: {self.rank}/{self.needed} results.")
        return self._assemble([self._results[w] for w in range(self.needed)])


class ShapeVote:
    """LCC with an f that is not row-linear (and any code when correcting wrong workers): the
    master cannot tell a local result's shape (or trust the first one it sees), so each
    shape the workers claim gets its own collector, made by
    ``collector(shape, first)``. A worker that claims a wrong shape fills only its own,
    which one worker alone never completes when R > 1 (its packets span at most m of the
    m·R dimensions), nor A wrong workers when the collector corrects A. A correcting
    collector's wrong workers include those that claimed another shape."""

    def __init__(self, collector, pieces, rows=None):
        self._make, self.pieces, self._rows = collector, pieces, rows    # rows: if known
        self.collectors = {}
        self.filed = {}         # (worker, index) of a kept packet -> the shape it claimed

    def add(self, packet, rows: int) -> bool:
        shape, rows = packet.payload.shape, self._rows or rows
        if rows < 1 or not shape or -(-rows // self.pieces) != shape[0]:
            raise ValueError(f"A local result of {rows} rows does not split into pieces of "
                             f"shape {shape}.")
        key = (rows,) + tuple(shape[1:])
        if key not in self.collectors:
            self.collectors[key] = self._make(key, not self.collectors)
        kept = self.collectors[key].add(packet)
        if kept:
            self.filed[(packet.worker, packet.index)] = key
        return kept

    @property
    def leader_shape(self):
        """The shape of the complete collector, else of the one furthest on."""
        return max(self.collectors, default=None,
                   key=lambda k: (self.collectors[k].complete, self.collectors[k].rank))

    @property
    def leader(self):
        return self.collectors[self.leader_shape] if self.collectors else None

    @property
    def rank(self):
        return self.leader.rank if self.collectors else 0

    @property
    def complete(self):
        return bool(self.collectors) and self.leader.complete

    @property
    def pending(self):
        return self.leader.pending if self.collectors else 0

    def eliminate(self, count=1) -> int:
        return self.leader.eliminate(count) if self.collectors else 0

    @property
    def wrong(self):
        if not self.collectors or not hasattr(self.leader, "wrong"):
            return []
        leader = self.leader_shape
        others = {w for (w, _), key in self.filed.items() if key != leader}
        return sorted(set(self.leader.wrong) | others)

    def result(self):
        return self.leader.result()


class Robust(WholeResults):
    """Whole results decoded despite up to A wrong ones, the moment they decide the output:
    with n results, when all but e = min(A, n - R - A) agree on one polynomial (e = 0 at
    R + A results, e = A at R + 2A), so that the output is exact even if A of the agreeing
    ones are wrong. The workers found wrong are kept in ``wrong``."""

    def __init__(self, code, adversaries):
        super().__init__(code.recovery_threshold + 2 * adversaries)
        self.code, self.adversaries, self.wrong = code, adversaries, []
        self._projected, self._pairs, self._good = {}, None, None

    @property
    def complete(self):
        return self._good is not None

    def _checked(self, packet):
        return self.code._checked([packet.payload])[0]

    def add(self, packet) -> bool:
        if not super().add(packet):
            return False
        F, payload = self.code.F, self._results[packet.worker]
        if self._pairs is None:         # fresh randomness, which no worker can know
            self._pairs = byzantine.projections(F, payload.shape, np.random.default_rng())
        self._projected[packet.worker] = byzantine.project(F, payload, self._pairs)
        R, A, n = self.code.recovery_threshold, self.adversaries, len(self._results)
        errors = min(A, n - R - A)
        if errors >= 0:
            workers = sorted(self._results)
            bad = byzantine.locate(F.p, [int(self.code.points[w]) for w in workers],
                                   [self._projected[w] for w in workers], R, errors)
            if bad is not None:
                self.wrong = [workers[i] for i in sorted(bad)]
                self._good = [w for w in workers if w not in self.wrong]
        return True

    def result(self):
        if not self.complete:
            raise ValueError(f"Not decided yet: {self.rank} results.")
        return self.code.decode({w: self._results[w] for w in self._good})
