"""The single-task estimators of ffcode.learn, ``LinearRegression`` and
``LogisticRegression``, and what every estimator of the package shares: the choice of
the cluster (``using``, ``active_cluster``), the checked hyperparameters (``Settings``,
``settings``) and the loop of coded gradient steps (see the package's docstring).

>>> model = LinearRegression(iterations=5, n_workers=3)
>>> s = settings(model, 3)
>>> (s.coding, str(s.scheme), s.k, s.precision)
('mds', 'compfs', 2, 16)
"""
from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypeVar, Union

import numpy as np
from scipy import sparse
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

try:
    from sklearn.utils.validation import validate_data
except ImportError:                     # scikit-learn < 1.6: no __sklearn_tags__ either
    raise ImportError("ffcode.learn needs scikit-learn 1.6 or later: "
                      "pip install -U 'scikit-learn>=1.6'") from None

from ffcode import checks
from ffcode.field import GF, PrimeField
from ffcode.codes.registry import code_entry, code_names, threshold
from ffcode.errors import InvalidParameterError
from ffcode.pieces import pieces_count
from ffcode.schemes import Scheme, default, registered
from ffcode.learn.gradients import (Step, _Jobs, _LCCGradient, _MDSGradient, _SummedGradient,
                                    _by_rows, _sigmoid, sigmoid_polynomial)
from ffcode.learn._sklearn import BaseEstimator, ClassifierMixin, RegressorMixin

GRADIENT = "gradient"                   # the coding of gradient codes (ffcode.gradcoding)
PRECISION = {"matvec": 16, "lcc": 8, GRADIENT: 32}  # fractional bits by default, by job
POWER_ITERATIONS = 30                   # for the default learning rate
DEFAULT_WORKERS = 4                     # of the local cluster a fit opens itself


# -- choosing the cluster ------------------------------------------------------------------------

_ACTIVE: list = []                      # the clusters of the open using() blocks, innermost last
_ACTIVE_LOCK = threading.Lock()


@contextlib.contextmanager
def using(cluster: Any) -> Iterator[Any]:
    """Make ``cluster`` the one every fit runs on while the block runs, unless a fit is
    given one (``fit(X, y, cluster=...)``): ``with using(cluster): search.fit(X, y)``.

    Blocks nest (the innermost wins). The default is process-wide, so fits in other
    threads (GridSearchCV with a threading backend) use it too; the cluster runs one job at
    a time and the others wait their turn. A cluster cannot be sent to another process
    (joblib's process backends): such a fit opens its own local cluster.
    """
    _workers_of(cluster)
    with _ACTIVE_LOCK:
        _ACTIVE.append(cluster)
    try:
        yield cluster
    finally:
        with _ACTIVE_LOCK:              # this block's entry: another thread's may sit above
            del _ACTIVE[max(i for i, c in enumerate(_ACTIVE) if c is cluster)]


def active_cluster() -> Any:
    """The cluster of the innermost open ``using`` block, or None."""
    with _ACTIVE_LOCK:
        return _ACTIVE[-1] if _ACTIVE else None


@contextlib.contextmanager
def _opened(cluster: Any, n_workers: int) -> Iterator[Any]:
    """The cluster a fit runs on: the one chosen, or a local one of n_workers that the fit
    opens and closes (every worker process ends with it)."""
    if cluster is not None:
        yield cluster
        return
    from ffcode.runtime import Cluster  # here: predicting with a fitted model needs no zmq
    with Cluster(n_workers) as own:
        yield own


# -- the codings ----------------------------------------------------------------------------

def codings() -> list[str]:
    """The codings a model takes: the registered codes (ffcode.codes.registry) it can run,
    those of products A @ x (job "matvec", run as coding="mds" is: X w and X^T r, a code
    made with k blocks and signed=True) and of LCC's job (run as coding="lcc" is, a code
    made with LCC's k, t, f, degree and keywords); and "gradient", a gradient code
    (ffcode.CyclicRepetition) over the samples' partitions."""
    return code_names("matvec") + code_names("lcc") + [GRADIENT]


def lagrange(coding: str) -> bool:
    """Whether the coding runs the gradient as one Lagrange-coded job (as "lcc")."""
    return coding != GRADIENT and code_entry(coding).job == "lcc"


def _job(coding: str) -> str:
    """The job a coding runs: "matvec", "lcc" or "gradient"."""
    return GRADIENT if coding == GRADIENT else code_entry(coding).job


# -- the settings of a fit ---------------------------------------------------------------------

@dataclass
class Settings:
    """A model's hyperparameters as a fit on ``n_workers`` workers resolves them (the
    defaults of ``scheme``, ``precision`` and ``k`` filled in), each checked: what
    ``settings`` returns, a fit would accept. On a cluster of relays (``groups``, its
    groups' sizes) the data ships with every job (``resident`` is off) and ``faults``
    name relays. With coding="gradient" there is no scheme (None) and k is 1: the code
    is ``stragglers``' cyclic repetition, ``partial`` its protocol."""
    coding: str
    scheme: Optional[Scheme]
    pieces: int
    iterations: int
    learning_rate: Optional[float]
    t: int
    degree: int
    precision: int
    F: PrimeField
    faults: Any
    seed: Optional[int]
    resident: bool
    progress: Optional[Callable[[Step], None]]
    shares: int
    n_workers: int
    k: int = 1
    groups: tuple = ()                  # a cluster of relays: its groups' sizes
    stragglers: int = 0                 # coding="gradient": the code tolerates as many
    partial: bool = True                # coding="gradient": stragglers' partial work counts

    @property
    def coded_workers(self) -> int:
        """How many workers a gradient code has, the cluster's or, behind relays, the
        relays (each relay's group sums its partitions' gradients)."""
        return len(self.groups) or self.n_workers

    @property
    def n_points(self) -> int:
        """The number of the codes' points, shares per worker times the workers."""
        return self.n_workers * self.shares

    def recovery_threshold(self, k: int) -> int:
        """R of the code for k blocks: the MDS code's, or the LCC's, whose privacy
        t * shares counts the shares that t workers hold and whose f has degree r + 1."""
        R = threshold(self.coding, k=k) if not lagrange(self.coding) else \
            threshold(self.coding, k=k, t=self.t * self.shares, degree=self.degree + 1)
        if R is None:
            raise InvalidParameterError(f"The code {self.coding!r} was registered without its "
                                        f"recovery threshold, which a fit needs.")
        return R

    def default_k(self) -> int:
        """The largest k that leaves a worker to spare (or none to spare, or 1)."""
        N = self.n_workers
        for spare in (1, 0):
            fits = [k for k in range(1, N + 1) if self.recovery_threshold(k) <= N - spare]
            if fits:
                return max(fits)
        return 1                        # R > N: refused with the reason by the check


def settings(model: "_CodedGradientDescent", n_workers: int) -> Settings:
    """``model``'s hyperparameters checked and resolved for a cluster of ``n_workers``
    workers, as its fit would (TypeError or ValueError naming the argument), before any
    data is read or worker started: the command line checks its flags with it."""
    return model._settings(checks.integer(n_workers, "n_workers", low=1))


def expected_failed_checks(model: "_CodedGradientDescent") -> dict:
    """The checks of scikit-learn's ``check_estimator`` that ``model`` fails, each with its
    reason (none with coding="mds"), for ``check_estimator(model,
    expected_failed_checks=expected_failed_checks(model))`` or as
    ``parametrize_with_checks``' callable."""
    coding = getattr(model, "coding", None)
    if coding not in codings() or not lagrange(coding):
        return {}
    if model._logistic:
        reason = ("coding='lcc' refuses unequal sample weights for a logistic model: no "
                  "scaling of a coded row weighs the sigmoid's polynomial of its z")
        return {name: reason for name in ("check_sample_weights_not_overwritten",
                                          *_EQUIVALENCE)}
    reason = ("coding='lcc' weighs a row by scaling it by the root of its weight before it "
              "is rounded to the fixed point, so a weighted fit equals a fit on repeated "
              "rows only to the fixed point's precision (8 bits by default), not to 1e-7")
    return {name: reason for name in _EQUIVALENCE}


_EQUIVALENCE = ("check_sample_weight_equivalence_on_dense_data",
                "check_sample_weight_equivalence_on_sparse_data")


@dataclass
class _Data:
    """A fit's training data on the master: X1 standardized with the intercept's column,
    the targets as trained on, the weights (None: all equal) and their total, the moments
    that standardized X, and what the targets make fitted (classes_ or y's moments)."""
    X1: np.ndarray
    y: np.ndarray
    weights: Optional[np.ndarray]
    total: float
    mean: np.ndarray
    scale: np.ndarray
    fitted: dict

    @functools.cached_property
    def rooted(self) -> np.ndarray:
        """X1 with each row scaled by the root of its weight: X1^T X1 of it is the weighted
        X1^T W X1 (X1 itself when unweighted)."""
        return self.X1 if self.weights is None else self.X1 * np.sqrt(self.weights)[:, None]


# -- the estimators --------------------------------------------------------------------------

_Model = TypeVar("_Model", bound="_CodedGradientDescent")     # fit returns the model itself


class _CodedGradientDescent(BaseEstimator):
    """Gradient descent whose gradients are coded jobs on a cluster (see the module
    docstring); LinearRegression and LogisticRegression say what h and the loss are.
    Hyperparameters are only stored here; fit checks them (``settings``)."""
    _logistic = False
    _gradient_path: str                 # coding="gradient": a partition's gradient function
    # What fit sets (declared for type checkers; the class defines none of them, so that
    # scikit-learn's check_is_fitted tells a fitted model).
    coef_: np.ndarray
    intercept_: Any                     # a float; for tasks, an array (T,)
    n_features_in_: int
    feature_names_in_: np.ndarray
    history_: list[Step]
    codes_: tuple
    k_: int
    learning_rate_: Any                 # a float; for tasks of their own data, one each
    load_seconds_: float
    loaded_bytes_: int
    mean_: np.ndarray
    scale_: np.ndarray

    def __init__(self, *, coding: str = "mds", scheme: Optional[str] = None, pieces: int = 4,
                 iterations: int = 100, learning_rate: Optional[float] = None,
                 k: Optional[int] = None, t: int = 1, degree: int = 1,
                 precision: Optional[int] = None, prime: int = 2**61 - 1, faults: Any = None,
                 seed: Optional[int] = None, resident: bool = True,
                 progress: Optional[Callable[[Step], None]] = None, shares: int = 1,
                 n_workers: int = DEFAULT_WORKERS, stragglers: Optional[int] = None,
                 partial: bool = True) -> None:
        self.coding, self.scheme, self.pieces = coding, scheme, pieces
        self.iterations, self.learning_rate, self.k = iterations, learning_rate, k
        self.t, self.degree, self.precision, self.prime = t, degree, precision, prime
        self.faults, self.seed, self.resident = faults, seed, resident
        self.progress, self.shares, self.n_workers = progress, shares, n_workers
        self.stragglers, self.partial = stragglers, partial

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # densified: the workers' coded shares are dense
        return tags

    def _settings(self, n_workers: Optional[int], groups: tuple = ()) -> Settings:
        """The hyperparameters checked, and k for n_workers (None: the fit's own local
        cluster of ``self.n_workers``) in these groups behind relays (none: ()); see
        ``settings``."""
        own = checks.integer(self.n_workers, "n_workers", low=1)
        n_workers = own if n_workers is None else n_workers
        coding = checks.choice(self.coding, "coding", codings())
        if not isinstance(self.resident, (bool, np.bool_)):
            raise InvalidParameterError(f"Argument 'resident' must be True or False, not "
                                        f"{self.resident!r}.")
        if self.progress is not None and not callable(self.progress):
            raise InvalidParameterError("Argument 'progress' must be callable as progress(step).")
        s = Settings(
            coding=coding, scheme=None if coding == GRADIENT else _scheme(self.scheme, coding),
            pieces=pieces_count(self.pieces),
            iterations=checks.integer(self.iterations, "iterations", low=1),
            learning_rate=None if self.learning_rate is None else
            checks.positive(self.learning_rate, "learning_rate"),
            t=checks.integer(self.t, "t", low=0),
            degree=checks.integer(self.degree, "degree", low=1),
            precision=PRECISION[_job(coding)] if self.precision is None else
            checks.integer(self.precision, "precision", low=1),
            F=GF(self.prime), faults=_faults(self.faults, len(groups) or n_workers),
            seed=None if self.seed is None else checks.integer(self.seed, "seed", low=0),
            resident=bool(self.resident) and not groups, progress=self.progress,
            shares=checks.integer(self.shares, "shares", low=1), n_workers=n_workers,
            groups=tuple(groups))
        self._check_polynomial(s)
        if coding == GRADIENT:
            self._gradient_settings(s)
            return s
        if self.stragglers is not None or self.partial is not True:
            raise InvalidParameterError(
                "Arguments 'stragglers' and 'partial' are a gradient code's: use "
                f"coding='gradient', or leave them out with coding={coding!r}.")
        s.k = s.default_k() if self.k is None else checks.integer(self.k, "k", low=1)
        self._check_workers(s)
        return s

    def _gradient_settings(self, s: Settings) -> None:
        """coding="gradient": the stragglers (by default 1, or 0 on one worker) below the
        workers (on a cluster of relays: the relays), the protocol, and none of the other
        codings' arguments."""
        given = [name for name, value in (("scheme", self.scheme), ("k", self.k))
                 if value is not None] + (["shares"] if s.shares != 1 else [])
        if given:
            raise InvalidParameterError(
                f"coding='gradient' takes no {' or '.join(repr(n) for n in given)}: each "
                "worker computes its partitions' gradients and sends coded sums of them "
                "(see 'stragglers' and 'partial').")
        units = s.coded_workers
        s.stragglers = min(1, units - 1) if self.stragglers is None else checks.integer(
            self.stragglers, "stragglers", low=0, high=units - 1)
        s.partial = checks.flag(self.partial, "partial")

    def _check_polynomial(self, s: Settings) -> None:
        """t and the degree of the sigmoid's polynomial are LCC's, and only the logistic
        regression's polynomial has a degree to choose."""
        if not lagrange(s.coding) and (s.t, s.degree) != (1, 1):
            raise InvalidParameterError(
                "Arguments 't' (privacy) and 'degree' (the sigmoid's "
                "polynomial) are LCC's: coding='mds' keeps no worker from its "
                "coded rows and computes the exact sigmoid. Use coding='lcc'.")
        if not self._logistic and s.degree != 1:
            raise InvalidParameterError(
                f"A linear regression's polynomial is z itself: 'degree' must "
                f"be 1, not {s.degree}.")

    def _check_workers(self, s: Settings) -> None:
        """Refuse a code of more blocks than the cluster's shares can decode."""
        N, R, points = s.n_workers, s.recovery_threshold(s.k), s.n_points
        if R <= points:
            return
        raise InvalidParameterError(
            f"{type(self).__name__} with coding={s.coding!r}, k={s.k}"
            + (f", t={s.t}, degree={s.degree}" if lagrange(s.coding) else "")
            + (f" needs results from R = {R} workers, but the cluster has "
            f"{N}." if s.shares == 1 else
            f", shares={s.shares} needs results from R = {R} shares, "
            f"but the cluster's {N} workers hold {points}."))

    # -- fitting ----------------------------------------------------------------------------

    def fit(self: _Model, X: Any, y: Any, sample_weight: Any = None, *,
            cluster: Any = None) -> _Model:
        """Train on X (n, d) real (a sparse X is densified) and y (n,), each sample weighed
        by ``sample_weight`` (n,) if given. The jobs run on ``cluster`` if given, else on
        the innermost ``using`` block's, else on a local Cluster of ``n_workers`` that the
        fit opens and closes. Everything is checked before a worker is asked (or started);
        a fit that fails leaves the model as it was. Returns self."""
        before = dict(self.__dict__)
        try:
            fitted = self._fit(X, y, sample_weight, cluster)
        except BaseException:
            self.__dict__.clear()           # validate_data has set n_features_in_ already
            self.__dict__.update(before)
            raise
        self.__dict__.update(fitted)
        return self

    def _fit(self, X: Any, y: Any, sample_weight: Any, cluster: Any) -> dict:
        """The fitted attributes."""
        chosen = active_cluster() if cluster is None else cluster
        s = self._settings(None if chosen is None else _workers_of(chosen),
                           tuple(getattr(chosen, "groups", ()) or ()))
        data = self._data(X, y, sample_weight, s)
        rate = s.learning_rate or self._default_rate(data)
        coded = self._coded(s, data)
        with _opened(chosen, s.n_workers) as running:
            coded.cluster = running
            w, trained = self._descend(s, coded, data, rate)
        return {**data.fitted, **self._coefficients(w, data), **trained,
                "mean_": data.mean, "scale_": data.scale, "codes_": coded.codes,
                "k_": s.k, "learning_rate_": rate}

    def _data(self, X: Any, y: Any, sample_weight: Any, s: Settings) -> _Data:
        """The checked data, standardized; a sample of weight 0 is left out."""
        X, y = validate_data(self, X, y, accept_sparse=True, dtype="numeric",
                             ensure_min_samples=2, y_numeric=not self._logistic)
        X, kept, weights = _samples(X, sample_weight)
        target, fitted = self._targets(y, kept, weights)
        self._check_weights(s, weights)
        X = X[kept]
        mean, scale, constant = _standardization(X, weights)
        return _Data(_design(X, mean, scale, constant), target, weights, _total(X, weights),
                     mean, scale, fitted)

    def _check_weights(self, s: Settings, weights: Optional[np.ndarray]) -> None:
        """Every coding weighs a linear model exactly (see _coded)."""

    def _default_rate(self, data: _Data) -> float:
        """1 / L for the loss's curvature L: the largest eigenvalue of the (weighted)
        X^T X / n (by power iteration on the master), a quarter of it for the log-loss."""
        return (4.0 if self._logistic else 1.0) / _largest_eigenvalue(data)

    def _coded(self, s: Settings, data: _Data) -> "_Jobs":
        """The coded jobs of the gradient. Weights: mds multiplies the residual by them on
        the master; lcc scales each row by the root of its weight (exact for z itself)."""
        if s.coding == GRADIENT:
            return _SummedGradient(s, data.X1, data.y, data.weights, self._gradient_path)
        rows = data.rooted if lagrange(s.coding) else data.X1
        try:
            Xq = s.F.from_real(rows, 2.0 ** s.precision)
        except ValueError as e:
            raise InvalidParameterError(f"The standardized X does not fit GF({s.F.p}) at "
                                        f"precision={s.precision}: {e}") from None
        if not lagrange(s.coding):
            return _MDSGradient(s, Xq, functools.partial(self._residual, y=data.y),
                                data.weights)
        weighted = data.y if data.weights is None else _by_rows(data.weights, data.y) * data.y
        # X^T y of each task alone, as a single-task fit computes it (a contiguous column)
        XTy = data.X1.T @ weighted if weighted.ndim == 1 else np.column_stack(
            [data.X1.T @ np.ascontiguousarray(y) for y in weighted.T])
        return _LCCGradient(s, Xq, XTy, self._polynomial(s.degree))

    def _descend(self, s: Settings, coded: "_Jobs", data: _Data, rate: float) -> tuple:
        """(the weights w, the fitted history_, load_seconds_ and loaded_bytes_)."""
        history: list = []
        load_seconds, w = 0.0, self._initial(data)
        try:
            if s.resident:
                start = time.perf_counter()
                coded.load()
                load_seconds = time.perf_counter() - start
            for i in range(1, s.iterations + 1):
                start = time.perf_counter()
                gradient, reports = coded.gradient(w)
                w = self._update(w, gradient, data, rate)
                seconds = time.perf_counter() - start
                step = Step(i, seconds, self._objective(w, data),
                            sum(r.shipped for r in reports), tuple(reports))
                history.append(step)
                if s.progress is not None:
                    s.progress(step)
        finally:
            coded.unload()
        return w, {"history_": history, "load_seconds_": load_seconds,
                   "loaded_bytes_": coded.loaded_bytes}

    def _initial(self, data: _Data) -> np.ndarray:
        """The weights the descent starts from: zeros."""
        return np.zeros(data.X1.shape[1])

    def _update(self, w: np.ndarray, gradient: np.ndarray, data: _Data,
                rate: float) -> np.ndarray:
        """The weights after a step down the summed gradient at w."""
        return w - rate * gradient / data.total

    def _objective(self, w: np.ndarray, data: _Data) -> float:
        """The training loss at w (history_'s)."""
        return float(self._losses(data.X1 @ w, data))

    def _losses(self, z: np.ndarray, data: _Data) -> Any:
        """The loss of the decisions z (n,) against data.y, or of each column of z (n, T)
        against data.y's (an array of T)."""
        raise NotImplementedError

    def _residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """h(z) - y, elementwise."""
        raise NotImplementedError

    def _polynomial(self, degree: int) -> np.ndarray:
        """The coefficients of h's polynomial, in increasing powers."""
        raise NotImplementedError

    def _targets(self, y: np.ndarray, kept: np.ndarray,
                 weights: Optional[np.ndarray]) -> tuple[np.ndarray, dict[str, Any]]:
        """(the targets trained on, the fitted attributes they make) of the samples kept."""
        raise NotImplementedError

    def _coefficients(self, w: np.ndarray, data: _Data) -> dict:
        """coef_ and intercept_ in the units of the X (and y) given: for a matrix W (a
        column per task) coef_ has a row per task and intercept_ an element."""
        coef = np.ascontiguousarray(w[1:].T) / data.scale     # a contiguous row per task
        if coef.ndim == 1:
            return {"coef_": coef, "intercept_": float(w[0] - coef @ data.mean)}
        # each task's intercept as a fit of that task alone computes it (a dot product)
        return {"coef_": coef, "intercept_": w[0] - np.array([c @ data.mean for c in coef])}

    # -- using the model --------------------------------------------------------------------

    def _decision(self, X: Any) -> np.ndarray:
        """X @ coef_ + intercept_, X checked against the fitted features."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=True, dtype="numeric", reset=False)
        return safe_sparse_dot(X, self.coef_) + self.intercept_


class _LeastSquares(_CodedGradientDescent):
    """The least-squares model: h the identity, the loss the (weighted) mean squared error
    / 2 in the units of y (standardized inside fit to y_scale_, around y_mean_)."""
    y_mean_: Any                        # a float; for tasks, an array (T,)
    y_scale_: float
    _gradient_path = "ffcode.learn.descent:least_squares"

    def _residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return z - y

    def _polynomial(self, degree: int) -> np.ndarray:
        return np.array([0.0, 1.0])

    def _losses(self, z: np.ndarray, data: _Data) -> Any:
        squares = np.average((z - data.y) ** 2, axis=0, weights=data.weights)
        return data.fitted["y_scale_"] ** 2 * squares / 2

    def _coefficients(self, w: np.ndarray, data: _Data) -> dict:
        fitted = super()._coefficients(w * data.fitted["y_scale_"], data)
        fitted["intercept_"] += data.fitted["y_mean_"]
        return fitted


class _LogLoss(_CodedGradientDescent):
    """The logistic model: h the sigmoid (its least-squares polynomial on the workers of
    coding="lcc"), the loss the (weighted) log-loss; lcc refuses unequal weights."""
    _logistic = True
    classes_: np.ndarray
    _gradient_path = "ffcode.learn.gradients:log_loss_gradient"

    def _check_weights(self, s: Settings, weights: Optional[np.ndarray]) -> None:
        if lagrange(s.coding) and weights is not None:
            raise InvalidParameterError(
                "Argument 'sample_weight' must give every sample the same "
                "weight (or 0, leaving it out) with coding='lcc': its workers "
                "compute the sigmoid's polynomial of X~ w on the coded rows, "
                "which no scaling of a row weighs exactly. Use coding='mds', "
                "which weighs the residual on the master.")

    def _residual(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _sigmoid(z) - y

    def _polynomial(self, degree: int) -> np.ndarray:
        return sigmoid_polynomial(degree)

    def _losses(self, z: np.ndarray, data: _Data) -> Any:
        return np.average(np.logaddexp(0.0, z) - data.y * z, axis=0, weights=data.weights)


class LinearRegression(RegressorMixin, _LeastSquares):
    """Least squares by gradient descent on coded data (see the module docstring): the loss
    is the (weighted) mean squared error / 2, in the units of y (standardized inside fit,
    as X is). A scikit-learn regressor: ``fit(X, y, sample_weight=None, *, cluster=None)``,
    ``predict``, ``score`` (R^2).

    ``coding``: "mds" (two coded products per iteration), "lcc" (one private job,
    poly(z) = z, degree 2 in X) or "gradient" (one gradient-coded step per iteration: the
    samples cut into n_workers partitions, each worker holding ``stragglers`` + 1 of them
    (ffcode.CyclicRepetition), computing their gradients in float64 and sending coded
    sums, after each partition with ``partial=True`` (stragglers' partial work counts);
    the sum is exact whichever ``stragglers`` workers are lost, so the fit is the same
    bit for bit; ``stragglers`` defaults to 1, and scheme, k and shares do not apply).
    ``scheme``: the runtime's, compfs by default (cfs for lcc,
    whose gradient is not row-linear); ``pieces``: its m. ``k``: data blocks, by default
    the most that leave a worker to spare. ``t``: LCC's privacy (any t workers learn
    nothing of X). ``precision``: fractional bits of the fixed point (16 for mds, 8 for
    lcc, 32 for gradient: its weights and each partition's gradient). ``learning_rate``:
    by default 1 / the largest eigenvalue of the standardized X^T X / n. ``faults`` (ffcode.Faults) go to every job; ``seed`` seeds the masks and
    packet combinations (None: fresh randomness, private). ``resident=False`` ships the
    data with every job instead of loading it once (as a cluster of relays always does:
    there the gradient's sum is added up at the relays, see ffcode.learn.gradients).
    ``progress(step)`` is called after
    every iteration. ``shares``: each worker holds that many shares (the codes get
    shares × n_workers points), so that fast workers keep computing while stragglers are
    waited for; LCC's privacy then counts the shares t workers hold (a code of privacy
    t × shares). ``n_workers``: the local workers of the cluster a fit opens when it is
    given none (see ``fit`` and ``using``).

    Fitted: ``coef_``, ``intercept_``, ``n_features_in_`` (``feature_names_in_``),
    ``history_`` (a Step per iteration), ``codes_``, ``k_``, ``learning_rate_``,
    ``load_seconds_``, ``loaded_bytes_``, ``mean_`` and ``scale_`` (X's standardization),
    ``y_mean_`` and ``y_scale_``.
    """

    def _targets(self, y: np.ndarray, kept: np.ndarray,
                 weights: Optional[np.ndarray]) -> tuple[np.ndarray, dict[str, Any]]:
        y = np.asarray(y[kept], dtype=np.float64)
        mean = float(np.average(y, weights=weights))
        spread = float(np.sqrt(np.average((y - mean) ** 2, weights=weights)))
        scale = spread if spread > 0 else 1.0
        return (y - mean) / scale, {"y_mean_": mean, "y_scale_": scale}

    def predict(self, X: Any) -> np.ndarray:
        """The predicted values."""
        return self._decision(X)


class LogisticRegression(ClassifierMixin, _LogLoss):
    """A binary classifier by gradient descent on the (weighted) log-loss on coded data
    (see the module docstring). y holds two classes (any labels; ``classes_`` sorted, the
    second is the positive one); a target of more classes is refused (binary only, as its
    tags say). With coding="lcc" the workers use the sigmoid's least-squares polynomial of
    degree r = ``degree`` on [-4, 4] (degree r + 1 in X); predictions use the exact
    sigmoid, and sample weights must be equal (or 0): no scaling of a coded row weighs a
    polynomial of its z exactly. The other arguments and fitted attributes are
    LinearRegression's (``classes_`` in place of y's moments); the default learning rate
    is 4 / the largest eigenvalue of the standardized X^T X / n.
    """
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _targets(self, y: np.ndarray, kept: np.ndarray,
                 weights: Optional[np.ndarray]) -> tuple[np.ndarray, dict[str, Any]]:
        check_classification_targets(y)     # "Unknown label type" for a continuous y
        kind = type_of_target(y[kept], input_name="y")     # weight 0: left out
        classes = np.unique(y[kept])
        if kind != "binary" or classes.shape[0] != 2:
            among = "" if kept.all() else " among the samples of positive weight"
            raise InvalidParameterError(
                f"Only binary classification is supported: argument 'y' must "
                f"hold two classes for a logistic regression, not "
                f"{classes.shape[0]} ({_few(classes)}){among} (a {kind} "
                f"target).")
        return (y[kept] == classes[1]).astype(np.float64), {"classes_": classes}

    def decision_function(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_``: positive for ``classes_[1]``."""
        return self._decision(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): the probabilities of ``classes_[0]`` and ``classes_[1]``."""
        positive = _sigmoid(self.decision_function(X))
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X: Any) -> np.ndarray:
        """The predicted labels, from ``classes_``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]


# -- checks ---------------------------------------------------------------------------------

def _samples(X: Any, sample_weight: Any) -> tuple:
    """(X dense float64, the mask of the samples of positive weight, their weights or None
    when they are equal) of a validated X and the sample weights given (None: equal)."""
    if sparse.issparse(X):
        X = X.toarray()                 # the workers' coded shares are dense anyway
    X = X.astype(np.float64, copy=False)
    weights = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                   ensure_non_negative=True)
    kept = weights > 0
    if not kept.any():                  # an older scikit-learn lets all-zero weights by
        raise InvalidParameterError("Sample weights must contain at least one non-zero number.")
    weights = weights[kept]
    return X, kept, None if np.all(weights == weights[0]) else weights  # equal: unweighted


def _standardization(X: np.ndarray, weights: Optional[np.ndarray]) -> tuple:
    """(the mean, the scale, the mask of constant columns) of X's columns, weighted."""
    mean = np.average(X, axis=0, weights=weights)
    spread = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=weights))
    constant = np.ptp(X, axis=0) == 0
    return mean, np.where(constant | ~(spread > 0), 1.0, spread), constant


def _design(X: np.ndarray, mean: np.ndarray, scale: np.ndarray,
            constant: np.ndarray) -> np.ndarray:
    """X standardized, after the intercept's column of ones; a constant column is 0."""
    X1 = np.hstack([np.ones((X.shape[0], 1)), (X - mean) / scale])
    X1[:, 1:][:, constant] = 0.0
    return X1


def _total(X: np.ndarray, weights: Optional[np.ndarray]) -> float:
    """The samples' total weight (their number when unweighted)."""
    return float(X.shape[0] if weights is None else weights.sum())


def _largest_eigenvalue(data: _Data) -> float:
    """The largest eigenvalue of the (weighted) X1^T X1 / total, by power iteration."""
    X1 = data.rooted
    v = np.random.default_rng(0).standard_normal((X1.shape[1],))
    largest = 1.0
    for _ in range(POWER_ITERATIONS):
        u = X1.T @ (X1 @ v) / data.total
        largest = float(np.linalg.norm(u))
        v = u / largest
    return largest


def _few(values: Union[Sequence[Any], np.ndarray]) -> str:
    shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values[:5])
    return shown + (", ..." if len(values) > 5 else "")


def _workers_of(cluster: Any) -> int:
    """The cluster's workers, once it is checked to be one."""
    if not (hasattr(cluster, "n_workers") and all(
            callable(getattr(cluster, method, None)) for method in ("load", "run", "unload"))):
        raise InvalidParameterError(
            f"Argument 'cluster' must be an ffcode.Cluster (n_workers, load, "
            f"run and unload), not {type(cluster).__name__}.")
    return checks.integer(cluster.n_workers, "cluster.n_workers")


def _scheme(scheme: Optional[str], coding: str) -> Scheme:
    """The runtime's scheme for the coding (None: cfs for lcc, compfs for mds)."""
    lcc = lagrange(coding)
    scheme = default(not lcc) if scheme is None else Scheme.parse(scheme)
    if lcc and scheme.piecewise:
        raise InvalidParameterError(
            f"coding='lcc' cannot use scheme={scheme.value!r}: a worker's "
            f"X~^T poly(X~ w) is not linear in the rows of its share, which "
            f"computation at full speed needs. Use one of "
            f"{', '.join(s for s in registered() if not s.piecewise)}.")
    return scheme


def _faults(faults: Any, n_workers: int) -> Any:
    """The faults to inject into every job (an ffcode.Faults, checked against the cluster's
    workers), or None."""
    if faults is not None:
        if not callable(getattr(faults, "check_workers", None)):
            raise InvalidParameterError(f"Argument 'faults' must be an ffcode.Faults, not "
                                        f"{type(faults).__name__}.")
        faults.check_workers(n_workers)
    return faults
