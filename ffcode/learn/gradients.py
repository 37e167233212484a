"""The coded gradients of ffcode.learn's estimators: the jobs that compute X^T (h(X W) - Y)
on a cluster's workers, exactly in GF(p), for a vector w (one task) or a matrix W (one
column per task, every task's gradient in one coded product).

``coding="mds"`` runs two MDS-coded products per step, Z = X W and G = X^T R for the
residuals R = h(Z) - Y the master forms. On a cluster of equal groups behind relays, G
is a sum over the samples that the relays add up: a HierarchicalCode of MatDot codes
(``summed_at_relays``) splits the samples over the groups and, in each, over its
workers; a relay decodes its group's part of the sum, and the master receives one
vector per group (Z is forwarded, as an ordinary code is). ``coding="lcc"`` runs one Lagrange-coded job per
step whose workers compute X~^T poly(X~ W) on their shares (``gradient_terms``). Each
column of the result depends on its own column of W only, so the bounds that refuse a job
able to wrap around (see ffcode.learn) hold for any number of columns.

>>> import numpy as np
>>> from ffcode import GF
>>> F = GF(2**61 - 1)
>>> X = F.asarray([[1, 2], [3, -1]])
>>> W = F.asarray([[2, 0], [1, 1]])                 # two tasks' weights, one per column
>>> G = gradient_terms(F, X, W, *F.asarray([[1], [3]]))    # X^T (1 + 3 X W)
>>> F.to_signed(G).tolist()                         # column 0: X^T (1 + 3 X W[:, 0])
[[61, 1], [10, 16]]
"""
from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ffcode import checks
from ffcode.field import PrimeField
from ffcode.codes import HierarchicalCode, MatDot
from ffcode.codes.registry import make_code
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import CyclicRepetition
from ffcode.learn.descent import gradient_job, worker_partitions

SIGMOID_INTERVAL = 4.0                  # the polynomial fits the sigmoid on [-4, 4]

# A gradient's jobs as a generator: it yields each job's Future and is sent the job's
# (output, report); it returns (the gradient, the reports).
_Steps = Generator[concurrent.futures.Future, tuple, tuple]


@dataclass(frozen=True)
class Step:
    """One iteration: ``iteration`` (1-based), ``seconds`` (its wall time: the coded jobs
    and the master's update; the loss is computed after the clock stops), ``loss`` (the
    training loss after the update, in float64 on the master), ``shipped`` (bytes sent to
    the workers, from the reports) and ``reports`` (the runtime's Report of each job)."""
    iteration: int
    seconds: float
    loss: float
    shipped: int
    reports: tuple


def gradient_terms(F: PrimeField, X: np.ndarray, w: np.ndarray, *C: np.ndarray) -> np.ndarray:
    """X^T poly(X w) in F, poly(z) = C[0] + C[1] z + ... + C[r] z**r by Horner's rule: a
    worker's part of the gradient of an LCC-coded model (degree r + 1 in X). Each C[i] is
    one element (shape (1,)), scaled by the caller so that every term carries the same
    fixed-point scale. ``w`` may be a matrix W (a column per task): poly acts on each
    element of X W, and column j of the result is X^T poly(X W[:, j])."""
    z = F.matmul(X, w)
    acc = np.broadcast_to(F.elements(C[-1], "C"), z.shape)
    for c in C[-2::-1]:
        acc = F.add(F.mul(acc, z), c)
    return F.matmul(X.T, acc)


def sigmoid_polynomial(degree: int, interval: float = SIGMOID_INTERVAL) -> np.ndarray:
    """The coefficients (increasing powers) of the least-squares polynomial of that degree
    to the sigmoid on [-interval, interval] (as CodedPrivateML approximates it)."""
    degree = checks.integer(degree, "degree", low=1)
    z = np.linspace(-interval, interval, 2001)
    coeffs = np.polynomial.polynomial.polyfit(z, _sigmoid(z), degree)
    coeffs[2::2] = 0.0                  # sigmoid - 1/2 is odd: its even terms vanish
    return coeffs


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + e**-z), elementwise, without overflow."""
    return np.exp(-np.logaddexp(0.0, -z))


def task_step(W: np.ndarray, task: int, X1: np.ndarray, y: np.ndarray, weights: np.ndarray,
              rate: np.ndarray, coupling: np.ndarray, logistic: np.ndarray) -> np.ndarray:
    """One task's step of a multi-task estimator trained through relays (``topology=``,
    ffcode.runtime.train_multitask): W (T, d + 1) every task's weights, the intercept's
    first; X1 the task's standardized samples with the intercept's column, y its targets,
    ``weights`` its samples' weights over their total; ``rate`` (T,) each task's learning
    rate, ``coupling`` the pull of a task's weights (the intercept's not) towards the
    tasks' mean, ``logistic`` [1] for the sigmoid's h. The step the estimators' coded
    descent takes, computed in floats.

    >>> W = np.array([[0.0, 0.0], [0.0, 2.0]])
    >>> task_step(W, 0, np.eye(2), np.ones(2), np.full(2, 0.5), np.ones(2), [1.0],
    ...           [0]).tolist()
    [0.5, 1.5]
    """
    w = W[task]
    z = X1 @ w
    residual = (_sigmoid(z) if logistic[0] else z) - y
    step = rate[task] * (X1.T @ (residual * weights))
    step[1:] += rate[task] * coupling[0] * (w[1:] - W[:, 1:].mean(axis=0))
    return w - step


def _by_rows(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The samples' weights shaped to multiply ``values`` row by row (a vector of one
    task's values, or a matrix with a column per task)."""
    return weights if values.ndim == 1 else weights[:, None]


# -- the jobs ----------------------------------------------------------------------------------

class _Jobs:
    """The data of a fit's jobs, resident on the workers (or not), and the jobs; the fit
    sets ``cluster``, the one they run on, and ``together``: submit each job
    (``cluster.submit``) rather than run it, so that the jobs of several gradients are in
    flight at once (see ``_run_together``)."""

    def __init__(self, s: Any, data: list) -> None:
        self.s = s                      # the fit's Settings
        self.cluster: Any = None        # an ffcode.Cluster (or an object with its methods)
        self.together = False
        self.data = data                # [(code, inputs)] the codes encode
        self.loaded: list = []
        self.loaded_bytes = 0

    @property
    def codes(self) -> tuple:
        return tuple(code for code, _ in self.data)

    def gradient(self, w: np.ndarray) -> tuple:
        """(the gradient at w, the jobs' reports)."""
        (result,) = _run_together([self.steps(w)])
        return result

    def steps(self, w: np.ndarray) -> _Steps:
        """The gradient at w as a generator of its jobs (see ``_Steps``)."""
        raise NotImplementedError

    def load(self) -> None:
        for code, inputs in self.data:
            resident = self.cluster.load(code, *inputs, scheme=self.s.scheme,
                                         pieces=self.s.pieces, seed=self.s.seed)
            self.loaded.append(resident)
            self.loaded_bytes += resident.shipped

    def unload(self) -> None:
        while self.loaded:
            self.cluster.unload(self.loaded.pop())

    def submit(self, which: int, *arguments: np.ndarray) -> concurrent.futures.Future:
        """The Future of a job on data ``which`` with these arguments: (output, report)."""
        options: dict = dict(faults=self.s.faults, seed=self.s.seed)
        if self.loaded:
            job: tuple = (self.loaded[which], *arguments)
        else:
            code, inputs = self.data[which]
            job = (code, *inputs, *arguments)
            options.update(scheme=self.s.scheme, pieces=self.s.pieces)
        return self.started(*job, **options)

    def started(self, *job: Any, **options: Any) -> concurrent.futures.Future:
        """The Future of ``cluster.run(*job, **options)``: submitted (``together``), or
        run now."""
        if self.together:
            return self.cluster.submit(*job, **options)
        done: concurrent.futures.Future = concurrent.futures.Future()
        done.set_result(self.cluster.run(*job, **options))
        return done


def _run_together(gradients: list) -> list:
    """Drive the generators of several gradients (``_Jobs.steps``) in lockstep: every
    gradient's first job is submitted before any result is awaited, and each next job as
    soon as its gradient has the result it needs. Returns each one's (gradient, reports).
    If a job fails, the others still in flight are waited for, then the error is raised."""
    futures = [next(steps) for steps in gradients]
    results: list = [None] * len(gradients)
    live = list(range(len(gradients)))
    try:
        while live:
            still = []
            for i in live:
                try:
                    futures[i] = gradients[i].send(futures[i].result())
                    still.append(i)
                except StopIteration as done:
                    results[i] = done.value
            live = still
    except BaseException:
        for future in futures:
            future.cancel()
        concurrent.futures.wait(futures)
        raise
    return results


class _MDSGradient(_Jobs):
    """X^T (weights (h(X W) - Y)): Z = X W and G = X^T R as two coded products (MDS; G
    summed at the relays on a cluster of equal groups), h on the master."""

    def __init__(self, s: Any, Xq: np.ndarray, residual: Callable[..., np.ndarray],
                 weights: Optional[np.ndarray]) -> None:
        F, k, N = s.F, s.k, s.n_points
        sizes = set(s.groups)
        second = summed_at_relays(F, len(s.groups), sizes.pop()) if len(sizes) == 1 else \
            make_code(s.coding, F, N, k=k, signed=True)
        super().__init__(s, [(make_code(s.coding, F, N, k=k, signed=True), (Xq,)),
                             (second, (np.ascontiguousarray(Xq.T),))])
        self.residual, self.weights, self.scale = residual, weights, float(2 ** s.precision)

    def steps(self, w: np.ndarray) -> _Steps:
        F, s = self.s.F, self.scale
        z, first = yield self.submit(0, F.from_real(w, s))
        r = self.residual(F.to_real(z, s * s))
        if self.weights is not None:    # the rounded residual: an integer weight repeats it
            r = _by_rows(self.weights, r) * np.rint(r * s) / s
        rq = F.from_real(r, s)
        if isinstance(self.codes[1], HierarchicalCode):     # MatDot takes R as a matrix
            g, second = yield self.submit(1, rq.reshape(rq.shape[0], -1))
            g = g.reshape((g.shape[0],) + rq.shape[1:])
        else:
            g, second = yield self.submit(1, rq)
        return F.to_real(g, s * s), [first, second]


def log_loss_gradient(params: np.ndarray, X: np.ndarray, y: np.ndarray,
                      weights: Optional[np.ndarray] = None) -> np.ndarray:
    """X^T (weights (sigmoid(X w) - y)): a partition's part of the log-loss's gradient."""
    r = _sigmoid(X @ params) - y
    return X.T @ (r if weights is None else weights * r)


class _SummedGradient(_Jobs):
    """The gradient as one gradient-coded step (coding="gradient"): the samples cut into
    a cyclic repetition code's partitions, each worker's partitions' gradients computed
    in float64 at the rounded weights and summed exactly (see ffcode.learn.descent)."""

    def __init__(self, s: Any, X1: np.ndarray, y: np.ndarray,
                 weights: Optional[np.ndarray], gradient: str) -> None:
        code = CyclicRepetition(s.F, s.coded_workers, s.stragglers)
        rows = np.array_split(np.arange(len(y)), code.partitions)
        partitions = [(X1[r], y[r]) + (() if weights is None else (weights[r],))
                      for r in rows]
        parts, self.kinds = worker_partitions(code, partitions)
        super().__init__(s, [(code, (parts,))])
        self.gradient_path, self.scale = gradient, 2 ** s.precision

    def load(self) -> None:
        code, (parts,) = self.data[0]
        resident = self.cluster.load(code, parts)
        self.loaded.append(resident)
        self.loaded_bytes += resident.shipped

    def steps(self, w: np.ndarray) -> _Steps:
        F = self.s.F
        code, (parts,) = self.data[0]
        data = self.loaded[0] if self.loaded else (code, parts)
        job = gradient_job(F, data, self.gradient_path, w, self.scale, self.kinds,
                           self.s.partial)
        options = {} if self.s.faults is None else {"faults": self.s.faults}
        total, report = yield self.started(job, **options)
        return F.to_real(total, self.scale), [report]


def summed_at_relays(F: PrimeField, groups: int, size: int) -> HierarchicalCode:
    """The code of G = X^T R on ``groups`` relays of ``size`` workers each: a MatDot
    across the groups and a MatDot inside each, so that the samples are split over the
    groups and each group's over its workers (each MatDot as many parts as leave one
    member to spare, or none when there is one); a relay's inner decoding adds up its
    workers' parts, the master's outer one the groups'.

    >>> from ffcode import GF
    >>> code = summed_at_relays(GF(2**61 - 1), 3, 4)
    >>> code.outer.recovery_threshold, code.inner.recovery_threshold   # groups, workers
    (1, 3)
    """
    def parts(n: int) -> int:       # the most s with 2s - 1 <= n - 1 (or 1)
        return max(1, n // 2)
    return HierarchicalCode(MatDot(F, parts(groups), groups, signed=True),    # R's bound
                            MatDot(F, parts(size), size))   # its shares: coded elements


class _LCCGradient(_Jobs):
    """X^T poly(X W) - X^T Y: one LCC job on k row blocks of X, summed on the master."""

    def __init__(self, s: Any, Xq: np.ndarray, XTy: np.ndarray, polynomial: np.ndarray):
        F, k, scale = s.F, s.k, 2 ** s.precision
        rows = -(-Xq.shape[0] // k)
        padded = np.zeros((k * rows, Xq.shape[1]), F.dtype)    # zero rows add nothing
        padded[:Xq.shape[0]] = Xq
        r = s.degree
        # Term i of poly carries s (its coefficient) * s**(2i) (z = X w): scale c_i by
        # s**(2(r - i)) so that every term carries s**(2r + 1), and X^T adds one s.
        self.C = [F.asarray(np.array([round(c * scale ** (2 * (r - i) + 1))], dtype=object))
                  for i, c in enumerate(polynomial)]
        self.out_scale = float(scale) ** (2 * r + 2)
        bound = functools.partial(_gradient_bound, rows, Xq.shape[1])
        code = make_code(s.coding, F, s.n_points, k=k, t=s.t * s.shares, f=gradient_terms,
                         degree=r + 1, signed=True, result_bound=bound,
                         arguments=("w", *(f"c{i}" for i in range(r + 1))))
        super().__init__(s, [(code, (list(padded.reshape(k, rows, -1)),))])
        self.XTy, self.scale = XTy, float(scale)

    def steps(self, w: np.ndarray) -> _Steps:
        F = self.s.F
        outputs, report = yield self.submit(0, F.from_real(w, self.scale), *self.C)
        total = np.sum([F.to_signed(o) for o in outputs], axis=0, dtype=np.float64)
        return total / self.out_scale - self.XTy, [report]


def _gradient_bound(rows: int, cols: int, M: int, size_w: int, *sizes_c: int) -> int:
    """A bound on |X^T poly(X w)| for X (rows, cols) with |X| <= M, |w| <= size_w and
    coefficients |c_i| <= sizes_c[i]: rows M sum_i |c_i| (cols M |w|)**i, exactly. For a
    matrix W (a column per task) it bounds every element as well, |W| its largest
    element: element (j, t) is sum_i X[i, j] poly((X W)[i, t]), whatever the other
    columns, so the bound does not grow with the number of tasks.

    >>> _gradient_bound(10, 3, 2, 5, 1, 1)       # 10 * 2 * (1 + 3 * 2 * 5)
    620
    """
    z = cols * M * size_w
    return rows * M * sum(c * z ** i for i, c in enumerate(sizes_c))


class _Together:
    """The jobs of several gradients that a multi-task fit runs as one: part i computes
    the columns ``columns[i]`` of the gradient (its tasks), on its own data. With more than
    one part their jobs are submitted together (``_run_together``), on a cluster that has
    ``submit``."""

    def __init__(self, parts: list, columns: list) -> None:
        self.parts, self.columns = parts, columns
        self._cluster: Any = None

    @property
    def cluster(self) -> Any:
        return self._cluster

    @cluster.setter
    def cluster(self, cluster: Any) -> None:
        together = len(self.parts) > 1
        if together and not callable(getattr(cluster, "submit", None)):
            raise InvalidParameterError(
                f"Tasks with their own data sets run their jobs together: the "
                f"cluster must have submit (an ffcode.Cluster), not "
                f"{type(cluster).__name__}.")
        for part in self.parts:
            part.cluster, part.together = cluster, together
        self._cluster = cluster

    @property
    def codes(self) -> tuple:
        return tuple(code for part in self.parts for code in part.codes)

    @property
    def loaded_bytes(self) -> int:
        return sum(part.loaded_bytes for part in self.parts)

    def load(self) -> None:
        for part in self.parts:
            part.load()

    def unload(self) -> None:
        """Every part's data unloaded, even if one fails (then its error is raised)."""
        failed: Optional[BaseException] = None
        for part in self.parts:
            try:
                part.unload()
            except BaseException as error:      # the others' data is freed all the same
                failed = failed or error
        if failed is not None:
            raise failed

    def gradient(self, W: np.ndarray) -> tuple:
        """(the gradient at W, a column per task; every part's reports)."""
        results = _run_together([part.steps(W[:, columns])
                                 for part, columns in zip(self.parts, self.columns)])
        G, reports = np.empty_like(W), []
        for (g, part_reports), columns in zip(results, self.columns):
            G[:, columns] = g
            reports.extend(part_reports)
        return G, reports
