"""Decoding despite wrong results: Reed-Solomon error correction of polynomial codes.

Every code's local results are evaluations Y_i = h(points[i]) of a matrix polynomial h over
the code's support (R exponents), so the results of n workers form a codeword of an MDS
code in each element (a Reed-Solomon codeword when the support is 0..R-1), and
n >= R + 2A results decode h despite up to A wrong ones (``check_correctable`` refuses a
code of fewer points). A wrong worker is wrong at the same points in every element it
spoils, so the errors are found once, on random bilinear projections of the results
(y_i = r^T Y_i s, one scalar codeword, wrong where Y_i is with probability at least
1 - 2/p; ffcode.fingerprints): by Berlekamp-Welch for a dense support, else by the fewest
workers whose removal leaves results that agree with one polynomial of the support
(``wrong_among``); the output is then decoded from the results of the workers found good.

``RobustDecoder`` does the same for computation at full speed, where a worker's packets are
random combinations of pieces of its result and a straggler may have sent only some: it
keeps the packets, projects each to scalars the same way, and looks for the fewest workers
(at most A) whose removal leaves packets that agree and still pin the output down with any
A further workers removed. Then the output is exact whoever of the rest is wrong, and the
removed workers are exactly those whose packets were wrong. It decides after every packet,
so with random combinations it stops at about m·(R + A) packets when nobody is wrong (each
worker's at most m span its part), and by m·(R + 2A) otherwise.

Beyond A wrong workers no decoder can be sure: independent errors (garbage, a slip) are
found inconsistent (DecodingError, or RobustDecoder never completes), but workers that
collude can forge results that agree with one another and with enough honest ones on a
wrong output. Only checking the output (ffcode.decoding.verify) catches that.

>>> from ffcode import GF, MDS
>>> F = GF(65521)
>>> code = MDS(F, k=2, n_workers=6)
>>> shares = code.encode([[1, 2], [3, 4], [5, 6], [7, 8]])
>>> results = {i: code.compute(s, [1, 1]) for i, s in enumerate(shares)}
>>> results[4] = F.add(results[4], 1)                     # a wrong worker
>>> output, bad = decode(shares, results, adversaries=2, seed=0)
>>> output.tolist(), bad
([3, 7, 11, 15], [4])
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import combinations
from typing import Optional

import numpy as np

from ffcode import _linalg, _matmul, checks
from ffcode._ext.rankbasis import RankBasis
from ffcode._types import ArrayLike, Int, Output, Seed
from ffcode.codes.base import Code, Encoding
from ffcode.decoding.decoder import Decoder, output_of
from ffcode.errors import DecodingError, InvalidParameterError
from ffcode.field import GF, PrimeField
from ffcode.fingerprints import project, projections
from ffcode.pieces import Packet


def decode(encoding: Encoding, results: Mapping[int, ArrayLike], adversaries: Int,
           seed: Seed = None) -> tuple[Output, list[int]]:
    """(code.decode's output, the sorted indices of the workers found wrong) from a
    {worker: local result} mapping of at least R + 2 * adversaries workers, up to
    ``adversaries`` of them wrong, for an encoding (what code.encode returned).
    DecodingError when the results cannot be explained with that many wrong workers."""
    if not isinstance(encoding, Encoding):
        raise InvalidParameterError("Argument 'encoding' must be what a code's encode returned, "
                                    f"not {type(encoding).__name__}.")
    code = encoding.code
    A = checks.integer(adversaries, "adversaries", low=0)
    R = code.recovery_threshold
    if A and not code.every_r_decodes:
        check_correctable(R, code.n_workers, A, every_r_decodes=False)
    workers, Y = code.checked_results(encoding, results, R + 2 * A,
                                      f"Correcting {A} wrong results (R + 2A = {R + 2 * A})")
    pairs = projections(code.F, Y[0].shape, np.random.default_rng(seed))
    wrong = wrong_among(code, {w: project(code.F, y, pairs) for w, y in zip(workers, Y)}, A)
    if wrong is None:
        raise DecodingError(f"The {len(workers)} results are not within {A} errors of a "
                            f"codeword: more than {A} workers are wrong.")
    good = {w: y for w, y in zip(workers, Y) if w not in wrong}
    return code.decode(encoding, good), wrong


def check_correctable(recovery_threshold: int, n_shares: int, wrong_shares: int,
                      adversaries: Optional[int] = None, every_r_decodes: bool = True) -> None:
    """Refuse (ValueError) correcting wrong workers with a code of too few points: with up to
    S = ``wrong_shares`` wrong shares, the shares that A = ``adversaries`` wrong workers hold
    between them (A = S, the default, when each holds one), decoding needs R + 2S of the
    code's ``n_shares``; and with a code where some R results do not determine the output
    (``every_r_decodes`` False: a HierarchicalCode), where R + 2S results may not tell the
    wrong ones.

    >>> check_correctable(4, 6, 1)
    >>> check_correctable(4, 6, 2)
    Traceback (most recent call last):
    ...
    ffcode.errors.InvalidParameterError: Correcting 2 wrong workers needs R + 2A = 8 workers; the code has 6.
    """
    R, S = recovery_threshold, wrong_shares
    A = S if adversaries is None else adversaries
    if S and not every_r_decodes:
        raise InvalidParameterError("Correcting wrong workers needs a code where any R results "
                                    "determine the output; a hierarchical code's do not (R results "
                                    "from too few groups): decode it without adversaries, "
                                    "verified.")
    if R + 2 * S <= n_shares:
        return
    if S == A:
        raise InvalidParameterError(f"Correcting {A} wrong workers needs R + 2A = {R + 2 * A} "
                                    f"workers; the code has {n_shares}.")
    raise InvalidParameterError(f"Correcting {A} wrong workers holding up to {S} shares needs R + "
                                f"2S = {R + 2 * S} shares; the code has {n_shares}.")


def wrong_among(code: Code, projected: Mapping[int, Sequence[int]],
                errors: int) -> Optional[list[int]]:
    """The sorted workers whose whole results are wrong, at most ``errors`` of them, or None:
    ``projected`` maps each worker heard from to the projections of its result, and the
    others' must agree with one polynomial over the code's support (see ``locate``)."""
    workers = sorted(projected)
    bad = locate(code, workers, [projected[w] for w in workers], errors)
    return None if bad is None else [workers[i] for i in sorted(bad)]


def locate(code: Code, workers: Sequence[int], projected: Sequence[Sequence[int]],
           errors: int) -> Optional[set[int]]:
    """The positions (in ``workers``) of the wrong results, or None: ``projected[i]`` holds
    the projections of worker workers[i]'s result (one per round), and in every round one
    polynomial over the code's support must agree with all but at most ``errors`` of them,
    at the same positions over all rounds together (unique when len(workers) >= R + 2 *
    errors, as any R results determine the polynomial)."""
    R, p = code.recovery_threshold, code.F.p
    if code.dense:
        points = [int(code.points[w]) for w in workers]
        bad = set()
        for values in zip(*projected):
            h = _berlekamp_welch(p, points, values, R, errors)
            if h is None:
                return None
            bad |= {i for i, (a, y) in enumerate(zip(points, values)) if _eval(h, a, p) != y}
        return bad if len(bad) <= errors else None
    F, n = code.F, len(workers)
    V = code.evaluations[list(workers)]
    Y = np.array(projected, F.dtype).reshape(n, -1)
    for b in range(errors + 1):         # the fewest removed workers that leave agreement
        for removed in combinations(range(n), b):
            rest = [i for i in range(n) if i not in removed]
            if F.rank(np.hstack([V[rest], Y[rest]])) == F.rank(V[rest]):
                return set(removed)
    return None


def _berlekamp_welch(p: int, points: Sequence[int], values: Sequence[int], R: int,
                     A: int) -> Optional[list[int]]:
    """The coefficients of the polynomial h of degree < R that agrees with all but at most A
    of (points, values), or None: Q = h * E with E monic of degree A, from the linear system
    Q(a_i) = y_i * E(a_i)."""
    F = GF(p)
    n, unknowns = len(points), R + 2 * A
    rows = []
    for a, y in zip(points, values):
        powers = [pow(a, j, p) for j in range(R + A)]
        rows.append(powers + [(-y * pow(a, k, p)) % p for k in range(A)])
    M = np.array(rows, dtype=object).astype(F.dtype) if n else np.zeros((0, unknowns))
    rhs = np.array([(y * pow(a, A, p)) % p for a, y in zip(points, values)], dtype=object)
    solution = _any_solution(F, M, rhs.astype(F.dtype))
    if solution is None:
        return None
    Q = [int(v) for v in solution[:R + A]]
    E = [int(v) for v in solution[R + A:]] + [1]
    h, remainder = _divide(Q, E, p)
    if any(remainder) or len(h) > R:
        return None
    errors = sum(_eval(h, a, p) != y for a, y in zip(points, values))
    return h if errors <= A else None


def _any_solution(F: PrimeField, M: np.ndarray, b: np.ndarray) -> Optional[np.ndarray]:
    """One solution of M x = b over F (free unknowns 0), or None if there is none."""
    reduced = F.rref(np.hstack([M, b[:, None]]))
    n = M.shape[1]
    x = np.zeros(n, dtype=object)
    for row in reduced:
        nonzero = np.flatnonzero(row)
        if not nonzero.size:
            continue
        if nonzero[0] == n:
            return None                                   # 0 = nonzero: inconsistent
        x[nonzero[0]] = int(row[n])
    return x


def _divide(num: list[int], den: list[int], p: int) -> tuple[list[int], list[int]]:
    """(quotient, remainder) of polynomials over GF(p), coefficients lowest first."""
    num = list(num)
    inverse = pow(den[-1], p - 2, p)
    quotient = [0] * max(len(num) - len(den) + 1, 0)
    for k in range(len(quotient) - 1, -1, -1):
        c = num[k + len(den) - 1] * inverse % p
        quotient[k] = c
        for j, d in enumerate(den):
            num[k + j] = (num[k + j] - c * d) % p
    return quotient, num[:len(den) - 1]


def _eval(coeffs: Sequence[int], a: int, p: int) -> int:
    value = 0
    for c in reversed(coeffs):
        value = (value * a + c) % p
    return value


class RobustDecoder:
    """Decodes an ``encoding`` from packets of m = ``pieces`` pieces per local result despite
    up to ``adversaries`` = A workers whose packets are wrong (see the module's docstring).

    The interface of ``Decoder``: ``add(packet)`` (True if the packet was kept: it is not a
    combination of its worker's earlier ones), ``rank`` (packets kept), ``needed``
    (m·(R + 2A): enough for any A wrong workers), ``complete`` (the kept packets decide
    the output, often before ``needed``) and ``result()``; ``wrong`` lists the workers whose
    packets were wrong once complete (of those heard from). Independent errors of more than
    A >= 1 workers leave it incomplete whatever arrives; see the module's docstring on
    collusion. ``exclude(worker)`` drops a worker's packets, known unusable otherwise (its
    computation failed), and refuses its next ones; it then counts among ``wrong``, and up
    to A of the rest may still be wrong. When the code cannot tell a local result's columns
    (MDS), the first kept packet fixes them: give ``result_shape`` if a wrong worker may
    claim others. When it cannot tell the rows (LCC with an f that is not row-linear)
    ``result_shape`` is required: a wrong worker's packet must not fix them.

    >>> from ffcode import GF, MDS, piece_packets
    >>> F = GF(65521)
    >>> code = MDS(F, k=2, n_workers=5)
    >>> shares = code.encode([[1, 2], [3, 4], [5, 6], [7, 8]])
    >>> decoder = RobustDecoder(shares, pieces=2, adversaries=1, seed=0)
    >>> for w in (4, 0, 1, 2):
    ...     y = code.compute(shares[w], [1, 1])
    ...     if w == 4:
    ...         y = F.add(y, 1)                           # a wrong worker
    ...     for packet in piece_packets(F, y, 2, w, seed=w):
    ...         _ = decoder.add(packet)
    >>> decoder.complete, decoder.result().tolist(), decoder.wrong
    (True, [3, 7, 11, 15], [4])
    """

    def __init__(self, encoding: Encoding, pieces: Int, adversaries: Int,
                 result_shape: Optional[Sequence[Int]] = None, seed: Seed = None) -> None:
        self._check = Decoder(encoding, pieces, result_shape)    # checks packets as it would
        code = encoding.code
        self.encoding, self.code, self.F, self.pieces = encoding, code, code.F, \
            self._check.pieces
        if result_shape is None and code.result_rows(encoding) is None:
            raise InvalidParameterError(f"{type(code).__name__} cannot tell the rows of a local "
                                        "result, and with wrong workers no packet may fix them: "
                                        "pass result_shape (one worker's f(share).shape).")
        A = checks.integer(adversaries, "adversaries", low=0)
        R = code.recovery_threshold
        check_correctable(R, code.n_workers, A, every_r_decodes=code.every_r_decodes)
        self.adversaries = A
        self._unknowns = self.pieces * R
        self.needed = self.pieces * (R + 2 * A)
        self._powers = code.evaluations
        self._rng = np.random.default_rng(seed)
        self._pairs: Optional[tuple[np.ndarray, np.ndarray]] = None
        self._shape: Optional[tuple] = None
        self._kept: dict[int, list] = {}    # worker -> [(index, coeffs, payload, equation row)]
        self._own: dict[int, RankBasis] = {}    # worker -> RankBasis of its coefficients
        self._seen: set = set()
        self._disagree: set = set()     # verdicts on sets of removed workers
        self._full: set = set()
        self._good: Optional[list[int]] = None  # the workers decoded from, once complete
        self._found: list[int] = []     # the workers found wrong, once complete
        self._excluded: set[int] = set()    # the workers whose packets no longer count
        self._output: Optional[Output] = None

    def __repr__(self) -> str:
        return (f"RobustDecoder({self.code!r}, pieces={self.pieces}, adversaries="
                f"{self.adversaries}, kept={self.rank}/{self.needed})")

    @property
    def rank(self) -> int:
        return min(sum(map(len, self._kept.values())), self.needed)

    @property
    def complete(self) -> bool:
        return self._good is not None

    pending = 0             # packets are kept as they come: nothing is deferred
    buffer = None           # nor staged in a buffer a next job could reuse

    @property
    def wrong(self) -> list:
        """The workers found wrong (once complete) and those excluded."""
        return sorted(set(self._found) | self._excluded)

    def counted(self, worker: int, index: int) -> bool:
        """A kept packet counts unless its worker is found wrong or excluded."""
        return worker not in self._found and worker not in self._excluded

    def exclude(self, worker: Int) -> None:
        """Drop a worker's packets and refuse its next ones, then decide anew (the rest may
        now agree). Once complete the output stands: it is exact whoever of up to A of the
        workers decoded from is wrong."""
        worker = self.code.worker_index(worker)
        if worker in self._excluded:
            return
        self._excluded.add(worker)
        if self.complete or self._kept.pop(worker, None) is None:
            return
        self._own.pop(worker, None)
        self._disagree.clear()      # verdicts on sets of workers whose packets changed
        self._full.clear()
        self._decide()

    def eliminate(self, count: Int = 1) -> int:
        """Nothing to reduce: packets are kept as they come (Decoder's interface)."""
        return 0

    def add(self, packet: Packet) -> bool:
        """Take one packet; True if it was kept."""
        worker, index, coeffs, shape = self._check.checked_header(packet)
        if worker in self._excluded:
            raise InvalidParameterError(f"Worker {worker} is excluded: its packets no longer "
                                        "count.")
        if (worker, index) in self._seen or self.complete:
            return False
        own = self._own.get(worker)
        if own is None:
            own = RankBasis(np.ones((1, 1), np.uint64), self.pieces, self.F.p)
        if own.probe(coeffs, 0) < 0:            # its worker's earlier packets imply it
            self._seen.add((worker, index))
            return False
        payload = self.F.elements(self._check.checked_payload(packet, shape), "packet payload")
        if self._shape is None:             # the first kept packet fixes the shape
            result_shape = self._check.result_shape or self.code.result_shape(
                self.encoding, (self.code.result_rows(self.encoding),) + shape[1:])
            self._check = Decoder(self.encoding, self.pieces, result_shape)
            self._shape, self._pairs = shape, projections(self.F, shape, self._rng)
        own.commit()
        self._own[worker] = own
        self._seen.add((worker, index))
        projected = project(self.F, payload, self._pairs)
        equation = np.empty(self._unknowns + len(projected), self.F.dtype)
        # Unknown l·R + d is coefficient d of piece l, as in Decoder.
        equation[:self._unknowns] = self.F.mul(coeffs[:, None],
                                               self._powers[worker][None, :]).reshape(-1)
        equation[self._unknowns:] = projected
        self._kept.setdefault(worker, []).append((index, coeffs, payload, equation))
        self._decide()
        return True

    def _decide(self) -> None:
        """Complete if removing at most A workers (the fewest) leaves packets that agree and
        have full rank with any A more removed. More packets never make packets that
        disagree agree, nor lower a rank, so both verdicts are remembered."""
        A, counts = self.adversaries, {w: len(k) for w, k in self._kept.items()}
        if _least_left(counts.values(), A) < self._unknowns:
            return                              # too few packets whoever is wrong
        workers = sorted(counts)
        for b in range(A + 1):
            for removed in map(frozenset, combinations(workers, b)):
                if removed in self._disagree:
                    continue
                rest = [w for w in workers if w not in removed]
                if _least_left([counts[w] for w in rest], A) < self._unknowns:
                    continue
                if not self._agree(rest):
                    self._disagree.add(removed)
                elif all(self._full_rank(removed | set(more), workers)
                         for more in combinations(rest, min(A, len(rest)))):
                    self._good, self._found = rest, sorted(removed)
                    return

    def _equations(self, workers: Iterable[int]) -> np.ndarray:
        return np.array([e[3] for w in workers for e in self._kept[w]], self.F.dtype)

    def _agree(self, workers: Iterable[int]) -> bool:
        """Whether the workers' packets are consistent: with the equations in echelon form
        on the unknowns, the projections of the dependent ones reduce to zero."""
        M = self._equations(workers)
        rank, _ = _linalg.echelon(self.F.p, M, self._unknowns, reduced=False)
        return not M[rank:, self._unknowns:].any()

    def _full_rank(self, removed: AbstractSet[int], workers: Iterable[int]) -> bool:
        """Whether the packets of the workers not removed decide all m·R unknowns."""
        if removed not in self._full:
            M = np.ascontiguousarray(
                self._equations([w for w in workers if w not in removed])[:, :self._unknowns])
            if _linalg.echelon(self.F.p, M, self._unknowns, reduced=False)[0] == \
                    self._unknowns:
                self._full.add(removed)
        return removed in self._full

    def result(self) -> Output:
        """The decoded output, exactly what code.decode returns (ValueError before
        complete)."""
        if not self.complete:
            raise ValueError(f"Not decodable yet: {self.rank} packets kept of the "
                             f"{self.needed} that suffice with {self.adversaries} wrong "
                             f"workers.")
        if self._output is None:
            self._output = self._solve()
        return self._output

    def _solve(self) -> Output:
        """The output from m·R independent kept packets of the good workers: their
        equations inverted, applied to their payloads in one pass."""
        F, n, m = self.F, self._unknowns, self.pieces
        good, shape, result_shape = self._good, self._shape, self._check.result_shape
        assert good is not None and shape is not None and result_shape is not None, \
            "complete: the good workers are known and their packets fixed the shapes"
        E = np.ascontiguousarray(self._equations(good)[:, :n])
        payloads = [e[2].reshape(-1) for w in good for e in self._kept[w]]
        _, pivots = _linalg.echelon(F.p, np.ascontiguousarray(E.T), E.shape[0], reduced=False)
        rows = list(pivots[:n])                 # independent equations: pivots of E^T
        H = _matmul.combine(F.p, F.matinv(E[rows]), [payloads[r] for r in rows], F.dtype)
        R = self.code.recovery_threshold        # unknown l * R + d is piece l of H_d
        H = H.reshape(m, R, -1).transpose(1, 0, 2)
        return output_of(self.encoding, H, shape, result_shape[0])


def _least_left(counts: Iterable[int], removed: int) -> int:
    """The packets left after removing the ``removed`` workers that sent the most."""
    ordered = sorted(counts)
    return sum(ordered[:max(len(ordered) - removed, 0)])
