"""Gradient codes over GF(p): k data partitions placed on n workers, s + 1 copies of each,
so that the exact sum of the k partitions' gradients follows from any n - s workers.

A code is its assignment (each worker's partitions, in the order it processes them) and
its coefficients, an (n, k) matrix B over GF(p) with B[i, j] != 0 exactly where worker i
holds partition j. Worker i sends B[i] times the partitions' gradients; the master finds a
with a B_F = (1, ..., 1) over the workers F it heard from and adds a_i times what each sent.
At full speed a worker sends, after each partition it finishes, the same combination over
the partitions done so far (``partial``): what they span is then every partition some
worker finished, and the sum is exact the moment every partition is covered.

>>> from ffcode import GF
>>> F = GF(2**31 - 1)
>>> code = CyclicRepetition(F, n_workers=4, stragglers=1)
>>> code.assignment
((0, 1), (1, 2), (2, 3), (3, 0))
>>> g = [F.asarray([j + 1, 10 * (j + 1)]) for j in range(4)]     # each partition's gradient
>>> sent = {i: code.combine(i, [g[j] for j in code.assignment[i]]) for i in (0, 2, 3)}
>>> code.decode(sent).tolist()                                   # worker 1 straggled
[10, 100]
"""
from __future__ import annotations

import itertools
import math
from typing import Mapping, Optional, Sequence

import numpy as np

from ffcode import checks
from ffcode._types import ArrayLike, Int
from ffcode.codes.base import refuse_wraparound
from ffcode.errors import DecodingError, InvalidParameterError
from ffcode.field import PrimeField
from ffcode.gradcoding.order import checked_assignment

CHECK_SETS = 20_000     # check() looks at every survivor set up to this many of them


def ones_combination(F: PrimeField, vectors: np.ndarray) -> Optional[np.ndarray]:
    """a with sum_i a[i] vectors[i] = (1, ..., 1) over F, or None when the all-ones
    vector is not in their span: the weights that turn messages into the sum."""
    m, k = vectors.shape
    system = np.empty((k, m + 1), F.dtype)          # [V^T | 1]
    system[:, :-1], system[:, -1] = vectors.T, 1
    reduced = F.rref(system)
    pivots = [int(np.flatnonzero(row)[0]) for row in reduced if row.any()]
    if pivots and pivots[-1] == m:
        return None
    a = np.zeros(m, F.dtype)
    for r, c in enumerate(pivots):
        a[c] = reduced[r, -1]
    return a


class GradientCode:
    """The contract of a gradient code: ``n_workers`` workers hold ``partitions`` data
    partitions, and the sum of the partitions' gradients is exact from any ``n_workers -
    stragglers`` of them.

    A code is given, or defines, ``assignment`` (a tuple per worker: its partitions,
    distinct, in the order it processes them) and ``coefficients`` (the (n_workers,
    partitions) matrix B, nonzero exactly where a worker holds a partition); ``check()``
    tells whether they keep the contract. Everything else follows: ``combine`` (a worker's
    message), ``partial`` (its message after its first partitions, at full speed),
    ``vector`` (a message's coefficients), ``decoding_vector`` and ``decode``.
    """

    def __init__(self, F: PrimeField, n_workers: Int, partitions: Int, stragglers: Int,
                 assignment: Optional[Sequence[Sequence[int]]] = None,
                 coefficients: Optional[ArrayLike] = None):
        self.F = checks.instance(F, "F", PrimeField, "a field from ffcode.GF")
        self.n_workers = checks.integer(n_workers, "n_workers", low=1)
        self.partitions = checks.integer(partitions, "partitions", low=1)
        self.stragglers = checks.integer(stragglers, "stragglers", low=0,
                                         high=self.n_workers - 1)
        self._assignment: Optional[tuple] = None
        self._coefficients: Optional[np.ndarray] = None
        if assignment is not None and coefficients is not None:
            self._define(assignment, coefficients)
        elif assignment is not None or coefficients is not None:
            raise InvalidParameterError("A code is given both its assignment and its "
                                        "coefficients, or neither (then it defines them).")

    def _define(self, assignment: Sequence[Sequence[int]], coefficients: ArrayLike) -> None:
        """Fix the assignment and the coefficients (read-only), checked against each other."""
        self._assignment = checked_assignment(assignment)
        B = np.array(self.F.elements(coefficients, "coefficients"))
        B.flags.writeable = False
        self._coefficients = B
        self.check_layout()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(GF({self.F.p}), n_workers={self.n_workers}, "
                f"partitions={self.partitions}, stragglers={self.stragglers})")

    @property
    def assignment(self) -> tuple[tuple[int, ...], ...]:
        """Each worker's partitions, in the order it processes them."""
        if self._assignment is None:
            raise NotImplementedError(f"{type(self).__name__} defines no assignment.")
        return self._assignment

    @property
    def coefficients(self) -> np.ndarray:
        """The (n_workers, partitions) matrix B, read-only; worker i sends the sum over j
        of B[i, j] times partition j's gradient."""
        if self._coefficients is None:
            raise NotImplementedError(f"{type(self).__name__} defines no coefficients.")
        return self._coefficients

    # -- what a worker sends ----------------------------------------------------------------

    def worker_index(self, worker: Int) -> int:
        return checks.integer(worker, "worker", low=0, high=self.n_workers - 1)

    def vector(self, worker: Int, done: Int) -> np.ndarray:
        """The coefficients (one per partition) of ``worker``'s message after its first
        ``done`` partitions: B[worker] on them, 0 elsewhere."""
        worker = self.worker_index(worker)
        held = self.assignment[worker]
        done = checks.integer(done, "done", low=1, high=len(held))
        v = np.zeros(self.partitions, self.F.dtype)
        first = list(held[:done])
        v[first] = self.coefficients[worker, first]
        return v

    def partial(self, worker: Int, done: Int, gradients: Sequence) -> np.ndarray:
        """``worker``'s message after its first ``done`` partitions: sum over them of B[worker,
        j] times partition j's gradient; ``gradients``, the gradients of its partitions in
        its order (at least the first ``done``: field arrays of one shape)."""
        worker = self.worker_index(worker)
        held = self.assignment[worker]
        done = checks.integer(done, "done", low=1, high=len(held))
        if len(gradients) < done:
            raise InvalidParameterError(f"Worker {worker}'s message after {done} partitions "
                                        f"needs their {done} gradients, not {len(gradients)}.")
        parts = [self.F.elements(g, "gradient") for g in gradients[:done]]
        shapes = {g.shape for g in parts}
        if len(shapes) > 1:
            raise InvalidParameterError(f"The gradients must have one shape, not "
                                        f"{sorted(shapes)}.")
        weights = self.coefficients[worker, list(held[:done])]
        return self.F.combine(weights[None, :], parts)[0]

    def combine(self, worker: Int, gradients: Sequence) -> np.ndarray:
        """``worker``'s message once it has done all its partitions (``gradients``: theirs,
        in its order)."""
        worker = self.worker_index(worker)
        held = self.assignment[worker]
        if len(gradients) != len(held):
            raise InvalidParameterError(f"Worker {worker} holds {len(held)} partitions: its "
                                        f"message needs their {len(held)} gradients, not "
                                        f"{len(gradients)}.")
        return self.partial(worker, len(held), gradients)

    def partition_arrays(self, partitions: Sequence[Sequence[ArrayLike]]) -> list:
        """Each of the code's partitions as a list of its arrays (one or more): what the
        workers compute a partition's gradient from."""
        if isinstance(partitions, np.ndarray) or len(partitions) != self.partitions:
            raise InvalidParameterError(f"{self!r} has {self.partitions} partitions, not "
                                        f"{len(partitions)}.")
        out = []
        for j, part in enumerate(partitions):
            if isinstance(part, np.ndarray) or not isinstance(part, (tuple, list)) or not part:
                raise InvalidParameterError(f"Partition {j} must be a tuple of its arrays (one "
                                            f"or more), not {type(part).__name__}.")
            out.append([np.asarray(a) for a in part])
        return out

    # -- decoding ---------------------------------------------------------------------------

    def decoding_vector(self, workers: Sequence[Int]) -> np.ndarray:
        """a over ``workers`` (distinct) with sum_i a[i] B[workers[i]] = (1, ..., 1):
        DecodingError naming the partitions they cannot cover when there is none."""
        rows = self._distinct(workers)
        a = ones_combination(self.F, self.coefficients[rows])
        if a is None:
            held = set(itertools.chain.from_iterable(self.assignment[i] for i in rows))
            missing = sorted(set(range(self.partitions)) - held)
            why = (f"partitions {missing} are on none of them" if missing else
                   "their coefficients do not span the all-ones vector")
            raise DecodingError(f"Workers {sorted(rows)} cannot give the sum: {why}.")
        return a

    def decode(self, results: Mapping[Int, np.ndarray]) -> np.ndarray:
        """The exact sum of every partition's gradient from ``results`` ({worker: its
        message from ``combine``}, of any workers that suffice: any n - s do)."""
        if not isinstance(results, Mapping):
            raise InvalidParameterError("Argument 'results' must be a mapping of worker index "
                                        f"to message, not {type(results).__name__}.")
        by_index = {self.worker_index(w): m for w, m in results.items()}
        if len(by_index) != len(results):
            raise InvalidParameterError("Argument 'results' names a worker twice.")
        workers = sorted(by_index)
        messages = [self.F.elements(by_index[w], "message") for w in workers]
        if len({m.shape for m in messages}) > 1:
            raise InvalidParameterError("The messages must have one shape, not "
                                        f"{sorted({m.shape for m in messages})}.")
        a = self.decoding_vector(workers)
        return self.F.combine(a[None, :], messages)[0]

    def check_magnitude(self, largest: Int) -> None:
        """InvalidParameterError when the sum of the partitions' gradients in signed fixed
        point (``PrimeField.from_real``), each element at most ``largest`` in magnitude,
        could pass (p - 1) / 2 and wrap around mod p (the messages may: they are field
        elements, and only the sum is read as signed)."""
        largest = checks.integer(largest, "largest", low=0)
        refuse_wraparound(self.F, self.partitions * largest,
                          f"{self.partitions} partitions x {largest}")

    def tolerates(self, workers: Sequence[Int]) -> bool:
        """Whether these workers' messages give the sum."""
        try:
            self.decoding_vector(workers)
        except DecodingError:
            return False
        return True

    def check(self, limit: Int = CHECK_SETS) -> None:
        """DecodingError (or InvalidParameterError) unless the code keeps its contract: the
        assignment and B agree (B nonzero exactly on each worker's partitions, every
        partition held) and every set of n - s workers gives the sum, looked at one by one
        when there are at most ``limit`` such sets (all subsets of a set that suffices
        suffice too). Subclasses whose proof covers every set skip that search."""
        self.check_layout()
        n, s = self.n_workers, self.stragglers
        if math.comb(n, s) > checks.integer(limit, "limit", low=1):
            raise InvalidParameterError(f"{math.comb(n, s)} sets of {n - s} workers are more "
                                        f"than the limit of {limit} to look at.")
        for survivors in itertools.combinations(range(n), n - s):
            self.decoding_vector(survivors)

    def check_layout(self) -> None:
        """InvalidParameterError unless the assignment and the coefficients agree."""
        held = self.assignment
        B = self.coefficients
        n, k = self.n_workers, self.partitions
        if len(held) != n or B.shape != (n, k) or B.dtype != self.F.dtype:
            raise InvalidParameterError(f"{self!r} has an assignment of {len(held)} workers "
                                        f"and coefficients of shape {B.shape}, not {n} and "
                                        f"({n}, {k}) in the field's dtype.")
        for i, parts in enumerate(held):
            if len(set(parts)) != len(parts) or not all(0 <= j < k for j in parts):
                raise InvalidParameterError(f"Worker {i}'s partitions {parts} must be distinct "
                                            f"indices below {k}.")
            support = set(np.flatnonzero(B[i]).tolist())
            if support != set(parts):
                raise InvalidParameterError(f"Worker {i} holds partitions {sorted(parts)} but "
                                            f"its coefficients are nonzero on {sorted(support)}.")
        if not (B < self.F.p).all():
            raise InvalidParameterError("The coefficients must be elements of the field.")
        unheld = sorted(set(range(k)) - set(itertools.chain.from_iterable(held)))
        if unheld:
            raise InvalidParameterError(f"Partitions {unheld} are on no worker.")

    def _distinct(self, workers: Sequence[Int]) -> list[int]:
        rows = [self.worker_index(w) for w in workers]
        if not rows or len(set(rows)) != len(rows):
            raise InvalidParameterError(f"Argument 'workers' must name distinct workers, and "
                                        f"some, not {list(workers)}.")
        return rows


class FractionalRepetition(GradientCode):
    """Tandon et al.'s fractional repetition: (s + 1) | n; the workers in groups of s + 1,
    group g holding partitions (s + 1) g to (s + 1) g + s, each worker sending their plain
    sum; one survivor per group decodes. Within a group each partition comes at each place
    of the order once, so a group covers its partitions as soon as any of its workers can.

    >>> from ffcode import GF
    >>> FractionalRepetition(GF(7), 4, 1).assignment
    ((0, 1), (1, 0), (2, 3), (3, 2))
    """

    def __init__(self, F: PrimeField, n_workers: Int, stragglers: Int):
        super().__init__(F, n_workers, n_workers, stragglers)
        n, size = self.n_workers, self.stragglers + 1
        if n % size:
            raise InvalidParameterError(f"Fractional repetition needs stragglers + 1 = {size} "
                                        f"to divide n_workers = {n}.")
        held = [[size * (i // size) + (i % size + u) % size for u in range(size)]
                for i in range(n)]
        B = np.zeros((n, n), self.F.dtype)
        for i, parts in enumerate(held):
            B[i, parts] = 1
        self._define(held, B)

    def check(self, limit: Int = CHECK_SETS) -> None:
        """Every set of n - s workers keeps one of each group (a group has s + 1): only the
        layout needs a look."""
        self.check_layout()


class CyclicRepetition(GradientCode):
    """The cyclic repetition assignment (Tandon et al.): worker i holds partitions i, i + 1,
    ..., i + s (mod n), in that order, and any n - s workers give the sum.

    The coefficients come from a Reed-Solomon design (as Halbawi, Azizan, Salehi and
    Hassibi's): with distinct nonzero points a_0, ..., a_(n-1) (a_i = i + 1), partition j
    has the polynomial m_j(x) = prod over the workers l not holding it of (1 - x / a_l), of
    degree n - s - 1 with m_j(0) = 1, and B[i, j] = m_j(a_i). The message of worker i is
    then Q(a_i) for Q(x) = sum_j m_j(x) g_j, of degree below n - s: any n - s messages
    interpolate Q, and Q(0) is the sum. Over GF(p) this holds for every set of n - s
    workers, proven (Tandon's random construction holds with high probability only).
    Needs p > n.
    """

    def __init__(self, F: PrimeField, n_workers: Int, stragglers: Int):
        super().__init__(F, n_workers, n_workers, stragglers)
        n, s, p = self.n_workers, self.stragglers, self.F.p
        if p <= n:
            raise InvalidParameterError(f"Cyclic repetition needs p > n_workers = {n} (distinct "
                                        f"nonzero points), not p = {p}.")
        held = [[(i + u) % n for u in range(s + 1)] for i in range(n)]
        self.points = np.arange(1, n + 1, dtype=self.F.dtype)
        # B[i, j] = prod over l outside W_j (j's holders) of t(i, l) = 1 - a_i / a_l: worker
        # i's product over every l != i, divided by that over W_j's others. With a_l = l + 1
        # the whole product has a closed form: prod (a_l - a_i) = (-1)^(a - 1) (a - 1)!
        # (n - a)!, and prod a_l = n! / a, for a = a_i; so O(n s^2), not O(n^2 s).
        factorial = [1] * (n + 1)
        for m in range(1, n + 1):
            factorial[m] = factorial[m - 1] * m % p
        over_all = pow(factorial[n], p - 2, p)
        inverse = [0] + [pow(d, p - 2, p) for d in range(1, n)]     # of 1 .. n - 1
        B = np.zeros((n, n), self.F.dtype)
        for i in range(n):
            a = i + 1
            whole = factorial[a - 1] * factorial[n - a] % p * a % p * over_all % p
            whole = whole if a % 2 else (p - whole) % p          # the sign (-1)^(a - 1)
            for j in held[i]:
                value = whole
                for u in range(s + 1):
                    l = (j - u) % n                              # another holder of j
                    if l != i:              # divide by t(i, l) = (a_l - a_i) / a_l
                        over = inverse[l - i] if l > i else p - inverse[i - l]
                        value = value * (l + 1) % p * over % p
                B[i, j] = value
        self._define(held, B)

    def decoding_vector(self, workers: Sequence[Int]) -> np.ndarray:
        """Lagrange interpolation at 0 through n - s of the workers' points (the others get
        0); the general solve when fewer are given (it names what they miss)."""
        rows = self._distinct(workers)
        need = self.n_workers - self.stragglers
        if len(rows) < need:
            return super().decoding_vector(rows)
        a = np.zeros(len(rows), self.F.dtype)
        a[:need] = self.F.lagrange(self.points[rows[:need]], [0])[0]
        return a

    def check(self, limit: Int = CHECK_SETS) -> None:
        """Proven for every set of n - s workers: only the layout needs a look."""
        self.check_layout()
