"""Linear and logistic regression by gradient descent on coded data that stays on a
cluster's workers.

Each iteration's gradient is computed by the workers, exactly in GF(p), on fixed-point
copies of the standardized data (with an intercept column): ``coding="mds"`` runs two
MDS-coded products per iteration, z = X w and then g = X^T r for the residual
r = h(z) - y the master forms (h the identity, or the exact sigmoid); ``coding="lcc"``
runs one Lagrange-coded job in which each worker computes X~^T poly(X~ w) on its share
(``gradient_terms``), so that any t workers learn nothing of X; the master then
subtracts X^T y. A logistic model coded with LCC is trained on the least-squares
polynomial of degree r of the sigmoid (``sigmoid_polynomial``) and predicts with the
exact one. Every job is exact: the coded gradient equals the uncoded one element for
element, whichever workers straggle, so every scheme trains the same model.

Real values become field elements through F.from_real at scale 2**precision, and the codes
are signed: a job whose exact result could exceed (p-1)/2 in magnitude (and wrap around
mod p) is refused with a ValueError naming the bound, never computed wrong. With
s = 2**precision, standardized features of largest magnitude |x| (the intercept's 1
included), d + 1 columns, n samples in k blocks of n_k rows, weights |w|, residuals |r|
and the polynomial's real coefficients c_i, the bounds are, in reals times their scale:

- mds: (d + 1) |x| |w| s**2 for z = X w, and n |x| |r| s**2 for g = X^T r;
- lcc: n_k |x| (|c_0| + |c_1| Z + ... + |c_r| Z**r) s**(2r + 2), Z = (d + 1) |x| |w|.

Each must stay below (p-1)/2, about 2**60 at p = 2**61 - 1. The defaults (precision 16 for
mds, 8 for lcc, r = 1) leave room for millions of samples with mds and about a hundred
thousand with lcc at |x| and |w| around 10 and 30 features; each degree more of the
sigmoid's polynomial multiplies the lcc bound by about s**2 Z, so a larger r needs a
coarser precision.

>>> import numpy as np
>>> from ffcode import GF
>>> F = GF(2**61 - 1)
>>> X, w, C = F.asarray([[1, 2], [3, -1]]), F.asarray([2, 1]), F.asarray([[1], [3]])
>>> F.to_signed(gradient_terms(F, X, w, *C)).tolist()    # X^T (1 + 3 X w)
[61, 10]
>>> np.round(sigmoid_polynomial(1), 4).tolist()          # sigmoid ~ 0.5 + c z on [-4, 4]
[0.5, 0.1532]

Training on a cluster (a sketch; the tests run it)::

    import numpy as np
    import ffcode
    from ffcode.learn import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    y = (X @ [1.0, -2.0, 0.5, 0.0, 1.0] > 0).astype(int)
    with ffcode.Cluster(n_workers=4) as cluster:
        model = LogisticRegression(cluster, coding="lcc", iterations=30, seed=1).fit(X, y)
    assert model.score(X, y) > 0.9 and len(model.history_) == 30
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ffcode import checks
from ffcode.field import GF, PrimeField
from ffcode.codes import LCC, MDS
from ffcode.pieces import pieces_count
from ffcode.schemes import Scheme

CODINGS = ("mds", "lcc")
PRECISION = {"mds": 16, "lcc": 8}       # fractional bits by default
SIGMOID_INTERVAL = 4.0                  # the polynomial fits the sigmoid on [-4, 4]
POWER_ITERATIONS = 30                   # for the default learning rate


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
    fixed-point scale."""
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


class _CodedGradientDescent:
    """Gradient descent whose gradients are coded jobs on a cluster (see the module
    docstring); LinearRegression and LogisticRegression say what h and the loss are."""
    _logistic = False

    def __init__(self, cluster: Any, coding: str = "mds", scheme: Optional[str] = None,
                 pieces: int = 4, iterations: int = 100,
                 learning_rate: Optional[float] = None, k: Optional[int] = None, t: int = 1,
                 degree: int = 1, precision: Optional[int] = None, prime: int = 2**61 - 1,
                 faults: Any = None, seed: Optional[int] = None, resident: bool = True,
                 progress: Optional[Callable[[Step], None]] = None, shares: int = 1) -> None:
        N = _workers_of(cluster)
        self.cluster, self.coding = cluster, checks.choice(coding, "coding", CODINGS)
        self.scheme = _scheme(scheme, self.coding)
        self.pieces = pieces_count(pieces)
        self.iterations = checks.integer(iterations, "iterations", low=1)
        self.learning_rate = None if learning_rate is None else \
            checks.positive(learning_rate, "learning_rate")
        self.t = checks.integer(t, "t", low=0)
        self.degree = checks.integer(degree, "degree", low=1)
        self._check_polynomial()
        self.precision = PRECISION[self.coding] if precision is None else \
            checks.integer(precision, "precision", low=1)
        self.F = GF(prime)
        self.faults = _faults(faults, N)
        self.seed = None if seed is None else checks.integer(seed, "seed", low=0)
        if not isinstance(resident, (bool, np.bool_)):
            raise TypeError(f"Argument 'resident' must be True or False, not {resident!r}.")
        self.resident = bool(resident)
        if progress is not None and not callable(progress):
            raise TypeError("Argument 'progress' must be callable as progress(step).")
        self.progress = progress
        self.shares = checks.integer(shares, "shares", low=1)
        self.k = self._default_k(N) if k is None else checks.integer(k, "k", low=1)
        self.n_workers = N
        self._check_workers()

    def _check_polynomial(self) -> None:
        """t and the degree of the sigmoid's polynomial are LCC's, and only the logistic
        regression's polynomial has a degree to choose."""
        if self.coding == "mds" and (self.t, self.degree) != (1, 1):
            raise ValueError("Arguments 't' (privacy) and 'degree' (the sigmoid's "
                             "polynomial) are LCC's: coding='mds' keeps no worker from its "
                             "coded rows and computes the exact sigmoid. Use coding='lcc'.")
        if not self._logistic and self.degree != 1:
            raise ValueError(f"A linear regression's polynomial is z itself: 'degree' must "
                             f"be 1, not {self.degree}.")

    def _check_workers(self) -> None:
        """Refuse a code of more blocks than the cluster's shares can decode."""
        N, R, points = self.n_workers, self._recovery_threshold(self.k), self.n_points
        if R <= points:
            return
        raise ValueError(f"{type(self).__name__} with coding={self.coding!r}, k={self.k}"
                         + (f", t={self.t}, degree={self.degree}" if self.coding == "lcc"
                            else "")
                         + (f" needs results from R = {R} workers, but the cluster has "
                            f"{N}." if self.shares == 1 else
                            f", shares={self.shares} needs results from R = {R} shares, "
                            f"but the cluster's {N} workers hold {points}."))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(coding={self.coding!r}, "
                f"scheme={str(self.scheme)!r}, k={self.k}, iterations={self.iterations})")

    @property
    def n_points(self) -> int:
        """The codes' points: shares per worker times the workers."""
        return self.n_workers * self.shares

    def _recovery_threshold(self, k: int) -> int:
        """R of the code for k blocks: the MDS code's, or the LCC's, whose privacy
        t * shares counts the shares that t workers hold and whose f has degree r + 1."""
        if self.coding == "mds":
            return MDS.threshold_for(k)
        return LCC.threshold_for(k, self.t * self.shares, self.degree + 1)

    def _default_k(self, N: int) -> int:
        """The largest k that leaves a worker to spare (or none to spare, or 1)."""
        for spare in (1, 0):
            fits = [k for k in range(1, N + 1) if self._recovery_threshold(k) <= N - spare]
            if fits:
                return max(fits)
        return 1                        # R > N: refused with the reason by __init__

    # -- fitting ----------------------------------------------------------------------------

    def fit(self, X: Any, y: Any):
        """Train on X (n, d) real and y (n,); every input is checked before any worker is
        asked. Returns self."""
        for fitted in ("coef_", "intercept_"):     # a fit that fails leaves no model
            self.__dict__.pop(fitted, None)
        X = _real_matrix(X, "X")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"Argument 'X' must have at least 2 samples, not {n}.")
        y = self._targets(y, n)
        self.mean_, scale = X.mean(axis=0), X.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        X1 = np.hstack([np.ones((n, 1)), (X - self.mean_) / self.scale_])
        X1[:, 1:][:, scale == 0] = 0.0      # a constant column is left at 0
        lr = self.learning_rate or self._default_rate(X1)
        try:
            Xq = self.F.from_real(X1, 2.0 ** self.precision)
        except ValueError as e:
            raise ValueError(f"The standardized X does not fit GF({self.F.p}) at "
                             f"precision={self.precision}: {e}") from None
        coded = _MDSGradient(self, Xq, y) if self.coding == "mds" else \
            _LCCGradient(self, Xq, X1.T @ y)
        self.codes_ = coded.codes
        self.history_, self.load_seconds_, self.loaded_bytes_ = [], 0.0, 0
        w = np.zeros(d + 1)
        try:
            if self.resident:
                start = time.perf_counter()
                coded.load()
                self.load_seconds_ = time.perf_counter() - start
                self.loaded_bytes_ = coded.loaded_bytes
            for i in range(1, self.iterations + 1):
                start = time.perf_counter()
                gradient, reports = coded.gradient(w)
                w = w - lr * gradient / n
                seconds = time.perf_counter() - start
                step = Step(i, seconds, self._loss(X1 @ w, y),
                            sum(r.shipped for r in reports), tuple(reports))
                self.history_.append(step)
                if self.progress is not None:
                    self.progress(step)
        finally:
            coded.unload()
        self._set_coefficients(w)
        return self

    def _default_rate(self, X1: np.ndarray) -> float:
        """1 / L for the loss's curvature L: the largest eigenvalue of X^T X / n (by power
        iteration on the master), a quarter of it for the logistic loss."""
        v = np.random.default_rng(0).standard_normal(X1.shape[1])
        largest = 1.0
        for _ in range(POWER_ITERATIONS):
            u = X1.T @ (X1 @ v) / X1.shape[0]
            largest = float(np.linalg.norm(u))
            v = u / largest
        return (4.0 if self._logistic else 1.0) / largest

    def _set_coefficients(self, w: np.ndarray) -> None:
        """coef_ and intercept_ in the units of the X (and y) given."""
        coef = w[1:] / self.scale_
        self.coef_ = coef
        self.intercept_ = float(w[0] - coef @ self.mean_)

    # -- using the model --------------------------------------------------------------------

    def decision_function(self, X: Any) -> np.ndarray:
        """X @ coef_ + intercept_."""
        if not hasattr(self, "coef_"):
            raise ValueError(f"This {type(self).__name__} is not fitted yet: call fit first.")
        X = _real_matrix(X, "X")
        if X.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"Argument 'X' has {X.shape[1]} features, the model "
                             f"{self.coef_.shape[0]}.")
        return X @ self.coef_ + self.intercept_


class LinearRegression(_CodedGradientDescent):
    """Least squares by gradient descent on coded data (see the module docstring): the loss
    is the mean squared error / 2, in the units of y (standardized inside fit, as X is).

    ``cluster``: an ffcode.Cluster (its workers hold the code's shares). ``coding``: "mds" (two
    coded products per iteration) or "lcc" (one private job, poly(z) = z, degree 2 in X).
    ``scheme``: the runtime's, compfs by default (cfs for lcc, whose gradient is not
    row-linear); ``pieces``: its m. ``k``: data blocks, by default the most that leave a
    worker to spare. ``t``: LCC's privacy (any t workers learn nothing of X). ``precision``:
    fractional bits of the fixed point (16 for mds, 8 for lcc). ``learning_rate``: by
    default 1 / the largest eigenvalue of the standardized X^T X / n. ``faults``
    (ffcode.Faults) go to every job; ``seed`` seeds the masks and packet combinations
    (None: fresh randomness, private). ``resident=False`` ships the data with every job
    instead of loading it once. ``progress(step)`` is called after every iteration.
    ``shares``: each worker holds that many shares (the codes get shares × n_workers
    points), so that fast workers keep computing while stragglers are waited for; LCC's
    privacy then counts the shares t workers hold (a code of privacy t × shares).
    """

    def _targets(self, y: Any, n: int) -> np.ndarray:
        y = _real_vector(y, n)
        self.y_mean_, spread = float(y.mean()), float(y.std())
        self.y_scale_ = spread if spread > 0 else 1.0
        return (y - self.y_mean_) / self.y_scale_

    def _residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return z - y

    def _polynomial(self) -> np.ndarray:
        return np.array([0.0, 1.0])

    def _loss(self, z: np.ndarray, y: np.ndarray) -> float:
        return float(self.y_scale_ ** 2 * np.mean((z - y) ** 2) / 2)

    def _set_coefficients(self, w: np.ndarray) -> None:
        super()._set_coefficients(w * self.y_scale_)
        self.intercept_ += self.y_mean_

    def predict(self, X: Any) -> np.ndarray:
        """The predicted values."""
        return self.decision_function(X)

    def score(self, X: Any, y: Any) -> float:
        """R^2 of the predictions (1.0 for a perfect fit of a constant y, else 0.0 then)."""
        predicted = self.predict(X)
        y = _real_vector(y, predicted.shape[0])
        residual = float(np.sum((y - predicted) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
        if total == 0:
            return 1.0 if residual == 0 else 0.0
        return 1.0 - residual / total


class LogisticRegression(_CodedGradientDescent):
    """A binary classifier by gradient descent on the log-loss on coded data (see the
    module docstring). y holds two classes (any labels; ``classes_`` sorted, the second is
    the positive one). With coding="lcc" the workers use the sigmoid's least-squares
    polynomial of degree r = ``degree`` on [-4, 4] (degree r + 1 in X); predictions use
    the exact sigmoid. The other arguments are LinearRegression's; the default learning
    rate is 4 / the largest eigenvalue of the standardized X^T X / n.
    """
    _logistic = True

    def _targets(self, y: Any, n: int) -> np.ndarray:
        y = _vector(y, n)
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            raise ValueError("Argument 'y' has non-finite values (NaN or inf).")
        classes = np.unique(y)
        if classes.shape[0] != 2:
            raise ValueError(f"Argument 'y' must hold two classes for a logistic regression, "
                             f"not {classes.shape[0]} ({_few(classes)}).")
        self.classes_ = classes
        return (y == classes[1]).astype(np.float64)

    def _residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _sigmoid(z) - y

    def _polynomial(self) -> np.ndarray:
        return sigmoid_polynomial(self.degree)

    def _loss(self, z: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): the probabilities of classes_[0] and classes_[1]."""
        positive = _sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X: Any) -> np.ndarray:
        """The predicted labels, from classes_."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]

    def score(self, X: Any, y: Any) -> float:
        """The accuracy of predict(X) against y."""
        predicted = self.predict(X)
        y = _vector(y, predicted.shape[0])
        return float(np.mean(predicted == y))


# -- the coded gradients -------------------------------------------------------------------

class _Jobs:
    """The resident data of a fit (or none) and the jobs that run on it."""

    def __init__(self, model: _CodedGradientDescent, data: list):
        self.model, self.cluster = model, model.cluster
        self.data = data                # [(code, inputs)] the codes encode
        self.loaded, self.loaded_bytes = [], 0

    @property
    def codes(self) -> tuple:
        return tuple(code for code, _ in self.data)

    def load(self) -> None:
        m = self.model
        for code, inputs in self.data:
            resident = self.cluster.load(code, *inputs, scheme=m.scheme, pieces=m.pieces,
                                         seed=m.seed)
            self.loaded.append(resident)
            self.loaded_bytes += resident.shipped

    def unload(self) -> None:
        while self.loaded:
            self.cluster.unload(self.loaded.pop())

    def run(self, which: int, *arguments) -> tuple:
        """(output, report) of a job on data ``which`` with these arguments."""
        m = self.model
        options = dict(faults=m.faults, seed=m.seed)
        if self.loaded:
            return self.cluster.run(self.loaded[which], *arguments, **options)
        code, inputs = self.data[which]
        return self.cluster.run(code, *inputs, *arguments, scheme=m.scheme, pieces=m.pieces,
                                **options)


class _MDSGradient(_Jobs):
    """X^T (h(X w) - y): z = X w and g = X^T r as two MDS-coded products, h on the master."""

    def __init__(self, model, Xq, y):
        F, k, N = model.F, model.k, model.n_points
        super().__init__(model, [(MDS(F, k, N, signed=True), (Xq,)),
                                 (MDS(F, k, N, signed=True), (np.ascontiguousarray(Xq.T),))])
        self.y, self.scale = y, float(2 ** model.precision)

    def gradient(self, w: np.ndarray) -> tuple:
        F, s = self.model.F, self.scale
        z, first = self.run(0, F.from_real(w, s))
        r = self.model._residual(F.to_real(z, s * s), self.y)
        g, second = self.run(1, F.from_real(r, s))
        return F.to_real(g, s * s), [first, second]


class _LCCGradient(_Jobs):
    """X^T poly(X w) - X^T y: one LCC job on k row blocks of X, summed on the master."""

    def __init__(self, model, Xq, XTy):
        F, k, s = model.F, model.k, 2 ** model.precision
        rows = -(-Xq.shape[0] // k)
        padded = np.zeros((k * rows, Xq.shape[1]), F.dtype)    # zero rows add nothing
        padded[:Xq.shape[0]] = Xq
        r = model.degree
        # Term i of poly carries s (its coefficient) * s**(2i) (z = X w): scale c_i by
        # s**(2(r - i)) so that every term carries s**(2r + 1), and X^T adds one s.
        self.C = [F.asarray(np.array([round(c * s ** (2 * (r - i) + 1))], dtype=object))
                  for i, c in enumerate(model._polynomial())]
        self.out_scale = float(s) ** (2 * r + 2)
        bound = functools.partial(_gradient_bound, rows, Xq.shape[1])
        code = LCC(F, k, model.t * model.shares, gradient_terms, r + 1, model.n_points,
                   signed=True, result_bound=bound,
                   arguments=("w", *(f"c{i}" for i in range(r + 1))))
        super().__init__(model, [(code, (list(padded.reshape(k, rows, -1)),))])
        self.XTy, self.scale = XTy, float(s)

    def gradient(self, w: np.ndarray) -> tuple:
        F = self.model.F
        outputs, report = self.run(0, F.from_real(w, self.scale), *self.C)
        total = np.sum([F.to_signed(o) for o in outputs], axis=0, dtype=np.float64)
        return total / self.out_scale - self.XTy, [report]


def _gradient_bound(rows: int, cols: int, M: int, size_w: int, *sizes_c: int) -> int:
    """A bound on |X^T poly(X w)| for X (rows, cols) with |X| <= M, |w| <= size_w and
    coefficients |c_i| <= sizes_c[i]: rows M sum_i |c_i| (cols M |w|)**i, exactly."""
    z = cols * M * size_w
    return rows * M * sum(c * z ** i for i, c in enumerate(sizes_c))


# -- checks ---------------------------------------------------------------------------------

def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -z))       # 1 / (1 + e**-z) without overflow


def _vector(y: Any, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"Argument 'y' must be 1-D, not {y.ndim}-D (shape {y.shape}).")
    if y.shape[0] != n:
        raise ValueError(f"Arguments 'X' and 'y' do not match: {n} samples and "
                         f"{y.shape[0]} labels.")
    return y


def _real_vector(y: Any, n: int) -> np.ndarray:
    y = _vector(y, n)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"Argument 'y' must hold real numbers, not dtype {y.dtype}.")
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise ValueError("Argument 'y' has non-finite values (NaN or inf).")
    return y


def _real_matrix(X: Any, name: str) -> np.ndarray:
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise TypeError(f"Argument {name!r} must hold real numbers, not dtype {X.dtype}.")
    if X.ndim != 2:
        raise ValueError(f"Argument {name!r} must be 2-D (samples x features), not "
                         f"{X.ndim}-D (shape {X.shape}).")
    if X.shape[1] < 1:
        raise ValueError(f"Argument {name!r} must have at least one feature.")
    X = X.astype(np.float64)
    if not np.isfinite(X).all():
        raise ValueError(f"Argument {name!r} has non-finite values (NaN or inf).")
    return X


def _few(values: Sequence) -> str:
    shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values[:5])
    return shown + (", ..." if len(values) > 5 else "")


def _workers_of(cluster: Any) -> int:
    """The cluster's workers, once it is checked to be one."""
    if not (hasattr(cluster, "n_workers") and all(
            callable(getattr(cluster, method, None)) for method in ("load", "run", "unload"))):
        raise TypeError(f"Argument 'cluster' must be an ffcode.Cluster (n_workers, load, "
                        f"run and unload), not {type(cluster).__name__}.")
    return checks.integer(cluster.n_workers, "cluster.n_workers")


def _scheme(scheme: Optional[str], coding: str) -> Scheme:
    """The runtime's scheme for the coding (None: cfs for lcc, compfs for mds)."""
    lcc = coding == "lcc"
    scheme = (Scheme.CFS if lcc else Scheme.COMPFS) if scheme is None else \
        Scheme.parse(scheme)
    if lcc and scheme is Scheme.COMPFS:
        raise ValueError("coding='lcc' cannot use scheme='compfs': a worker's "
                         "X~^T poly(X~ w) is not linear in the rows of its share, which "
                         "computation at full speed needs. Use cfs, systematic, classic "
                         "or uncoded.")
    return scheme


def _faults(faults: Any, n_workers: int) -> Any:
    """The faults to inject into every job (an ffcode.Faults, checked against the cluster's
    workers), or None."""
    if faults is not None:
        if not callable(getattr(faults, "check_workers", None)):
            raise TypeError(f"Argument 'faults' must be an ffcode.Faults, not "
                            f"{type(faults).__name__}.")
        faults.check_workers(n_workers)
    return faults
