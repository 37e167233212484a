"""Multi-task learning on coded workers: T related tasks trained together, every gradient
step of every task in flight at once.

- Tasks on shared features (``fit(X, Y)``, Y with a column per task): the T gradients are
  one coded product per step, Z = X W and G = X^T R for W (d + 1, T) with
  ``coding="mds"``, or one Lagrange-coded job whose workers compute X~^T poly(X~ W) with
  ``coding="lcc"``; column t of each is task t's, exactly as a single-task fit computes it.
- Tasks with their own data sets (``MultiTaskLinearRegression().fit([X_1, ...],
  [y_1, ...])``): each step submits every task's coded jobs at once (``cluster.submit``)
  and gathers them before the update, so the T jobs share the workers.

The tasks are coupled by a penalty that pulls each task's weights towards their mean:
the objective is the mean over the tasks of loss_t(w_t) + (coupling / 2) ||w_t - w̄||²
(the intercepts left out), whose gradient for task t is task t's exact coded gradient plus
``coupling * (w_t - w̄)``, added on the master. ``coupling=0`` trains T independent
models: each task's coefficients are those of the single-task estimator on its data,
bit for bit, when the tasks share X. The features are standardized once for all tasks
(pooled over every task's rows), so that the tasks' weights are in the same units.

Through relays (``topology=``, an ffcode.mtl.Topology or its spelling such as
"combination:4:2", with a user per task): each task is a user, its step
(ffcode.learn.gradients.task_step, the same objective in floats) computed by each of its
relays, a worker of the cluster each, and the tasks' weights exchanged between the
relays and the server as ``communication`` says ("coded" or "uncoded", which give the
same model bit for bit; ffcode.runtime.train_multitask), the server hop emulated at
``link_rate`` bytes a second on a shared medium (None: as fast as it goes). With
``layout="hierarchical"`` each task's user is a worker of its own, after the relays: it
computes its step and sends it to its relays, each on a link of ``link_rate`` too (the
same model bit for bit again; a fit without a cluster opens a worker per relay and user).
The weights travel in the fixed point of ``precision`` over GF(``prime``); ``coding``,
``scheme``, ``k``, ``pieces``, ``shares`` and ``resident`` are the coded descent's and
play no part. ``relay_report_`` is then the training's report and ``history_`` is empty:
the model stays on the relays until the end (``faults`` and ``progress``, for the coded
descent's jobs, are refused).

>>> import numpy as np
>>> model = MultiTaskLogisticRegression(coupling=0.1, iterations=20)
>>> model.get_params()["coupling"], model.get_params()["coding"]
(0.1, 'mds')
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
from sklearn.metrics import r2_score
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ffcode import checks
from ffcode.errors import InvalidParameterError
from ffcode.learn.estimators import (Settings, _CodedGradientDescent, _Data, _LeastSquares,
                                     _LogLoss, _design, _few, _largest_eigenvalue,
                                     _samples, _standardization, _total)
from ffcode.learn.gradients import _sigmoid, _Together, task_step
from ffcode.mtl import COMMUNICATIONS, LAYOUTS, Topology
from ffcode.mtl import parse as parse_topology
from ffcode.learn._sklearn import ClassifierMixin, RegressorMixin


@dataclass
class _Tasks:
    """A multi-task fit's training data: its parts (a _Data each: one for tasks on shared
    features, Y a column per task; one per task for tasks with their own data sets), the
    tasks (columns of W) of each part, the pooled standardization of X and the fitted
    attributes the targets make."""
    parts: list
    columns: list
    mean: np.ndarray
    scale: np.ndarray
    fitted: dict

    @property
    def total(self) -> np.ndarray:
        """Each task's total sample weight."""
        total = np.empty(sum(len(c) for c in self.columns))
        for part, columns in zip(self.parts, self.columns):
            total[columns] = part.total
        return total


# the hyperparameters of a training through relays: (name, default, annotation)
THROUGH_RELAYS = (("topology", None, "Any"), ("communication", "coded", "str"),
                  ("link_rate", None, "Optional[float]"), ("layout", "flat", "str"))


class _MultiTask(_CodedGradientDescent):
    """T tasks trained together, coupled by ``coupling`` (see the module docstring): the
    single-task estimators' loop and jobs, on a matrix of weights W (d + 1, T); or, with
    a ``topology``, through relays. The hyperparameters are the single-task ones,
    ``coupling``, ``topology``, ``communication``, ``link_rate`` and ``layout``."""
    relay_report_: Any

    def __init__(self, *, coupling: float = 0.0, topology: Any = None,
                 communication: str = "coded", link_rate: Optional[float] = None,
                 layout: str = "flat", **params: Any) -> None:
        super().__init__(**params)
        self.coupling, self.topology, self.communication = coupling, topology, communication
        self.link_rate, self.layout = link_rate, layout

    def _relays(self) -> Optional[Topology]:
        """The topology to train through (None: the coded descent), with ``communication``,
        ``link_rate`` and ``layout`` checked, and the hyperparameters it cannot honour
        refused."""
        if self.topology is None:
            for name, default, _ in THROUGH_RELAYS[1:]:
                if getattr(self, name) != default:
                    raise InvalidParameterError(f"Argument '{name}' is for a training "
                                                f"through relays (topology=).")
            return None
        topology = self.topology if isinstance(self.topology, Topology) else \
            parse_topology(self.topology)
        checks.choice(self.communication, "communication", COMMUNICATIONS)
        checks.choice(self.layout, "layout", LAYOUTS)
        if self.link_rate is not None:
            checks.positive(self.link_rate, "link_rate")
        for name in ("faults", "progress"):
            if getattr(self, name) is not None:
                raise InvalidParameterError(
                    f"Argument '{name}' is for the coded descent's jobs; a training "
                    f"through relays (topology=) keeps the model on the relays until its end.")
        return topology

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _settings(self, n_workers: Optional[int], groups: tuple = ()) -> Settings:
        checks.non_negative(self.coupling, "coupling")
        if self.coding == "gradient":
            raise InvalidParameterError(
                "The multi-task estimators code the product X W (coding='mds' or 'lcc'); "
                "coding='gradient' is the single-task estimators' (LinearRegression, "
                "LogisticRegression), or ffcode.learn.descend's for any model.")
        settings = super()._settings(n_workers, groups)
        topology = self._relays()
        if topology is not None and n_workers is None:     # the fit opens a relay a worker
            settings.n_workers = max(settings.n_workers, topology.relays + (
                topology.users if self.layout == "hierarchical" else 0))
        return settings

    # -- the data ---------------------------------------------------------------------------

    def _data(self, X: Any, y: Any, sample_weight: Any, s: Settings) -> Any:
        """The tasks' data, each part's X standardized with the pooled moments."""
        samples, fitted = self._parts(X, y, sample_weight)
        for _, _, weights in samples:
            self._check_weights(s, weights)
        rows = np.vstack([X for X, _, _ in samples])
        pooled = None if all(w is None for _, _, w in samples) else np.concatenate(
            [np.ones(len(X)) if w is None else w for X, _, w in samples])
        mean, scale, constant = _standardization(rows, pooled)
        parts = [_Data(_design(X, mean, scale, constant), Y, w, _total(X, w), mean, scale,
                       fitted) for X, Y, w in samples]
        ends = np.cumsum([Y.shape[1] for _, Y, _ in samples])
        columns = [np.arange(end - Y.shape[1], end) for end, (_, Y, _) in zip(ends, samples)]
        return _Tasks(parts, columns, mean, scale, fitted)

    def _parts(self, X: Any, y: Any, sample_weight: Any) -> tuple:
        """([(X kept, Y (n, T_part) kept, weights or None)], the fitted attributes)."""
        X, Y = validate_data(self, X, y, accept_sparse=True, dtype="numeric",
                             ensure_min_samples=2, multi_output=True,
                             y_numeric=not self._logistic)
        X, kept, weights = _samples(X, sample_weight)
        (Y,), fitted = self._task_targets([Y[kept]], [weights])
        return [(X[kept], Y, weights)], fitted

    def _task_targets(self, ys: list, weights: list) -> tuple:
        """(each part's targets (n, T_part), the fitted attributes) of each part's targets
        as given (kept samples only) and weights."""
        raise NotImplementedError

    def _default_rate(self, data: Any) -> Any:
        """1 / (L_t + coupling) for each task t, L_t its loss's curvature (see the
        single-task estimators): one number when the tasks share X."""
        factor = 4.0 if self._logistic else 1.0     # 1 / (L / 4 + coupling) = 4 / (...)
        rates = np.concatenate([np.full(len(columns), factor / (
            _largest_eigenvalue(part) + factor * float(self.coupling)))
            for part, columns in zip(data.parts, data.columns)])
        return float(rates[0]) if len(data.parts) == 1 else rates

    def _coded(self, s: Settings, data: Any) -> Any:
        """The tasks' coded jobs, or with a topology its relays (a user per task)."""
        topology = self._relays()
        if topology is None:
            return _Together([super(_MultiTask, self)._coded(s, part)
                              for part in data.parts], data.columns)
        if topology.users != len(data.total):
            raise InvalidParameterError(f"Argument 'topology' must have a user per task "
                                        f"({len(data.total)}), not {topology.users} users.")
        return _Relays(topology)

    def _descend(self, s: Settings, coded: Any, data: Any, rate: Any) -> tuple:
        """The coded descent, or through relays (``_Relays``): each task a user of the
        topology, its step (ffcode.learn.gradients.task_step) computed by each of its
        relays, the tasks' weights exchanged between the relays and the server as
        ``communication`` says (ffcode.runtime.train_multitask)."""
        if not isinstance(coded, _Relays):
            return super()._descend(s, coded, data, rate)
        from ffcode.runtime import train_multitask
        tasks = len(data.total)
        users: list = [None] * tasks
        for part, columns in zip(data.parts, data.columns):
            weights = np.ones(len(part.X1)) if part.weights is None else part.weights
            for j, task in enumerate(columns):
                users[task] = (part.X1, part.y[:, j], weights / part.total)
        args = [np.broadcast_to(np.asarray(rate, float), (tasks,)), [float(self.coupling)],
                [int(self._logistic)]]
        W, report = train_multitask(coded.cluster, coded.topology, users, task_step,
                                    s.iterations, model=self._initial(data).T, args=args,
                                    scale=2.0 ** s.precision, field=s.F.p,
                                    communication=self.communication,
                                    link_rate=self.link_rate, layout=self.layout,
                                    user_rate=self.link_rate if self.layout == "hierarchical"
                                    else None)
        return np.ascontiguousarray(W.T), {"history_": [], "load_seconds_": 0.0,
                                           "loaded_bytes_": 0, "relay_report_": report}

    # -- the descent ------------------------------------------------------------------------

    def _initial(self, data: Any) -> np.ndarray:
        return np.zeros((len(data.mean) + 1, len(data.total)))

    def _update(self, w: np.ndarray, gradient: np.ndarray, data: Any,
                rate: Any) -> np.ndarray:
        """Each task's step down its own gradient and the coupling's pull (the intercepts'
        row left out)."""
        step = rate * gradient / data.total
        if self.coupling:
            step[1:] += rate * float(self.coupling) * _spread(w)
        return w - step

    def _objective(self, w: np.ndarray, data: Any) -> float:
        """The mean over the tasks of each one's loss and its coupling penalty."""
        losses = np.concatenate([self._losses(part.X1 @ w[:, columns], part)
                                 for part, columns in zip(data.parts, data.columns)])
        penalty = float(self.coupling) / 2 * np.sum(_spread(w) ** 2, axis=0)
        return float(np.mean(losses + penalty))

    # -- using the model --------------------------------------------------------------------

    def _decision(self, X: Any) -> np.ndarray:
        """(n, T): every task's X @ coef_[t] + intercept_[t]."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=True, dtype="numeric", reset=False)
        return safe_sparse_dot(X, self.coef_.T) + self.intercept_


@dataclass
class _Relays:
    """A fit through relays where the coded descent has its jobs: the topology, and the
    cluster the fit runs on (set by the fit)."""
    topology: Topology
    cluster: Any = None
    codes: tuple = ()


def _spread(W: np.ndarray) -> np.ndarray:
    """Each task's weights (but the intercept) less the tasks' mean."""
    return W[1:] - W[1:].mean(axis=1, keepdims=True)


def _with_coupling(init: Any) -> inspect.Signature:
    """The signature of the single-task estimators' __init__ with ``coupling``,
    ``topology``, ``communication``, ``link_rate`` and ``layout`` added: what scikit-learn's
    get_params, clone and repr read."""
    signature = inspect.signature(init)
    self, *rest = signature.parameters.values()
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                               annotation=annotation)
             for name, default, annotation in (("coupling", 0.0, "float"), *THROUGH_RELAYS)]
    return signature.replace(parameters=[self, *added, *rest])


setattr(_MultiTask.__init__, "__signature__", _with_coupling(_CodedGradientDescent.__init__))


class MultiTaskLinearRegression(RegressorMixin, _MultiTask, _LeastSquares):
    """T least-squares tasks trained together by coded gradient descent (see the module
    docstring), in either shape:

    - ``fit(X, Y)``: tasks on shared features, X (n, d) and Y (n, T) (a column per task;
      one column is one task, as LinearRegression trains it), one coded product per step;
      ``predict(X)`` gives (n, T), ``score(X, Y)`` the R^2 averaged over the tasks;
    - ``fit([X_1, ..., X_T], [y_1, ..., y_T])``: each task its own data set (X_t (n_t, d),
      the same d features; y_t (n_t,)), the T tasks' jobs submitted together every step;
      ``sample_weight`` is then None or a list of T (None or (n_t,)).
      ``predict([X_1, ...])`` gives each task's predictions on its own X (a list), and
      ``score([X_1, ...], [y_1, ...])`` the mean of the tasks' R^2.

    ``coupling`` (>= 0, default 0: independent tasks) pulls each task's weights towards
    the tasks' mean; the other hyperparameters are LinearRegression's, and so are the
    fitted attributes, with ``coef_`` (T, d) and ``intercept_`` (T,), a row per task, and
    ``y_mean_`` (T,) each task's mean of y and ``y_scale_`` the tasks' pooled spread.
    The default learning rate is 1 / (L_t + coupling) for each task, L_t the largest
    eigenvalue of its standardized X^T X / n (``learning_rate_``: a number when the tasks
    share X, else one per task). ``topology``, ``communication``, ``link_rate`` and
    ``layout`` train through relays (the module docstring), ``relay_report_`` the
    training's report.
    """

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = False
        return tags

    def _parts(self, X: Any, y: Any, sample_weight: Any) -> tuple:
        if not _data_sets(X):
            # y a list of 1-D targets of another length than X's rows: the tasks' targets
            # (of the same length, they are the rows of Y, as list-of-lists input gives)
            if isinstance(y, (list, tuple)) and len(y) and np.ndim(y[0]) == 1 and \
                    len(y) != _rows(X):
                raise InvalidParameterError(
                    "Argument 'X' must be a list of the tasks' data sets when "
                    "'y' is a list of their targets, not "
                    f"{type(X).__name__}.")
            return super()._parts(X, y, sample_weight)
        Xs, ys = list(X), _tasks_list(y, "y", len(X))
        weights = [None] * len(Xs) if sample_weight is None else \
            _tasks_list(sample_weight, "sample_weight", len(Xs))
        if len(Xs) < 2:
            raise InvalidParameterError(
                f"Argument 'X' must hold the data sets of two or more tasks, "
                f"not {len(Xs)}: for one task use LinearRegression.")
        samples = []
        for t, (X_t, y_t, w_t) in enumerate(zip(Xs, ys, weights)):
            try:
                X_t, y_t = validate_data(self, X_t, y_t, accept_sparse=True,
                                         dtype="numeric", ensure_min_samples=2,
                                         y_numeric=True, reset=t == 0)
            except ValueError as error:
                raise InvalidParameterError(f"Task {t}'s data set: {error}") from None
            X_t, kept, w_t = _samples(X_t, w_t)
            samples.append((X_t[kept], y_t[kept][:, None], w_t))
        targets, fitted = self._task_targets([Y for _, Y, _ in samples],
                                             [w for _, _, w in samples])
        return [(X, Y, w) for (X, _, w), Y in zip(samples, targets)], fitted

    def _task_targets(self, ys: list, weights: list) -> tuple:
        ys = [np.asarray(Y, dtype=np.float64) for Y in ys]
        if ys[0].ndim == 1:
            raise InvalidParameterError(
                "Argument 'y' must be a matrix Y (n, T) with a column per "
                "task, not a 1-D y (for one task use LinearRegression, or Y "
                "of one column).")
        means = [np.average(Y, axis=0, weights=w) for Y, w in zip(ys, weights)]
        variances = np.concatenate([np.average((Y - m) ** 2, axis=0, weights=w)
                                    for Y, m, w in zip(ys, means, weights)])
        spread = float(np.sqrt(np.mean(variances)))
        scale = spread if spread > 0 else 1.0
        return ([(Y - m) / scale for Y, m in zip(ys, means)],
                {"y_mean_": np.concatenate(means), "y_scale_": scale})

    def predict(self, X: Any) -> Union[np.ndarray, list]:
        """(n, T): every task's prediction for X (n, d); for a list of T data sets, the
        list of each task's predictions on its own."""
        if _data_sets(X):
            check_is_fitted(self)
            Xs = _tasks_list(X, "X", len(self.intercept_))
            return [self._decision(X_t)[:, t] for t, X_t in enumerate(Xs)]
        return self._decision(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 averaged over the tasks: of predict(X) against Y (n, T), or, for lists of
        the tasks' data sets and targets, the mean of each task's R^2 on its own."""
        if not _data_sets(X):
            return float(super().score(X, y, sample_weight))
        predictions = self.predict(X)
        ys = _tasks_list(y, "y", len(predictions))
        weights = [None] * len(ys) if sample_weight is None else \
            _tasks_list(sample_weight, "sample_weight", len(ys))
        return float(np.mean([r2_score(y_t, p, sample_weight=w)
                              for y_t, p, w in zip(ys, predictions, weights)]))


class MultiTaskLogisticRegression(ClassifierMixin, _MultiTask, _LogLoss):
    """T binary logistic tasks on shared features, trained together by coded gradient
    descent (see the module docstring): one coded product per step for all of them.

    ``fit(X, y)`` with y of three or more classes trains one-vs-rest, a task per class
    (``classes_``): ``predict`` gives the class of the largest decision and
    ``predict_proba`` the tasks' probabilities normalized to sum to 1, as scikit-learn's
    one-vs-rest does; ``decision_function`` is (n, T). A y of two classes is one task,
    as scikit-learn's one-vs-rest makes it: the second class against the first,
    ``decision_function`` (n,) and ``predict_proba`` (n, 2). ``fit(X, Y)`` with Y an
    (n, T) 0/1 indicator matrix (T >= 2) trains task t on column t: ``predict`` gives
    (n, T) 0/1, ``predict_proba`` each task's probability of 1 and ``decision_function``
    (n, T) (``classes_`` is 0..T-1). A y of one column is taken as y (n,), with
    scikit-learn's DataConversionWarning.

    ``coupling`` (>= 0, default 0: independent tasks) pulls each task's weights towards
    the tasks' mean; the other hyperparameters and fitted attributes are
    LogisticRegression's, with ``coef_`` (T, d), ``intercept_`` (T,) and ``multilabel_``
    (True for an indicator Y). The default learning rate is 1 / (L / 4 + coupling), L the
    largest eigenvalue of the standardized X^T X / n. ``topology``, ``communication``,
    ``link_rate`` and ``layout`` train through relays (the module docstring),
    ``relay_report_`` the training's report.
    """
    multilabel_: bool                   # fitted (declared for type checkers)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.classifier_tags.multi_label = True
        return tags

    def _parts(self, X: Any, y: Any, sample_weight: Any) -> tuple:
        if _data_sets(X):
            raise InvalidParameterError(
                "MultiTaskLogisticRegression trains tasks on shared features: "
                "argument 'X' must be one (n, d) array, not a list of data "
                "sets.")
        return super()._parts(X, y, sample_weight)

    def _task_targets(self, ys: list, weights: list) -> tuple:
        (y,) = ys
        if y.ndim == 2 and y.shape[1] == 1:     # labels as a column: warned of, as sklearn does
            y = column_or_1d(y, warn=True)
        check_classification_targets(y)     # "Unknown label type" for a continuous y
        kind = type_of_target(y, input_name="y")
        if kind == "multilabel-indicator":
            values = np.unique(y)
            if not np.isin(values, [0, 1]).all():   # scikit-learn takes any two values
                raise InvalidParameterError(
                    f"Argument 'y' as a matrix must be a 0/1 indicator matrix "
                    f"(a column per task), not one of values {_few(values)}.")
            return [y.astype(np.float64)], {"classes_": np.arange(y.shape[1]),
                                            "multilabel_": True}
        classes = np.unique(y)
        if kind not in ("binary", "multiclass") or classes.shape[0] < 2:
            raise InvalidParameterError(
                f"Argument 'y' must hold two or more classes (one-vs-rest, a "
                f"task per class, one task for two) or be an (n, T) 0/1 "
                f"indicator matrix with T >= 2, not a {kind} target"
                + (f" of one class ({_few(classes)})" if kind == "binary"
                else "") + ".")
        tasks = classes[1:] if classes.shape[0] == 2 else classes
        return [(y[:, None] == tasks).astype(np.float64)], {"classes_": classes,
                                                             "multilabel_": False}

    def decision_function(self, X: Any) -> np.ndarray:
        """(n, T): every task's ``X @ coef_[t] + intercept_[t]``; (n,) for two classes."""
        decision = self._decision(X)
        return decision[:, 0] if self._binary else decision

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, T): each task's probability; for one-vs-rest, normalized over the classes
        (for two classes, (n, 2): the first class's and the second's)."""
        positive = _sigmoid(self._decision(X))
        if self.multilabel_:
            return positive
        if self._binary:
            return np.hstack([1.0 - positive, positive])
        return positive / positive.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """The class of the largest decision (one-vs-rest; for two classes, the second
        where the decision is positive), or the (n, T) 0/1 matrix of each task's
        prediction (an indicator Y)."""
        decision = self._decision(X)
        if self.multilabel_:
            return (decision > 0).astype(np.int64)
        if self._binary:
            return self.classes_[(decision[:, 0] > 0).astype(np.int64)]
        return self.classes_[np.argmax(decision, axis=1)]

    @property
    def _binary(self) -> bool:
        """Whether the model is one task of two classes (checked fitted)."""
        check_is_fitted(self)
        return not self.multilabel_ and len(self.classes_) == 2


def _data_sets(X: Any) -> bool:
    """Whether X is a list of the tasks' data sets (2-D arrays, sparse matrices or
    DataFrames), not one X written as a list of rows."""
    return isinstance(X, (list, tuple)) and len(X) > 0 and all(
        hasattr(X_t, "shape") and len(X_t.shape) == 2 or np.ndim(X_t) == 2 for X_t in X)


def _rows(X: Any) -> int:
    """The number of rows of one X (an array-like of rows)."""
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _tasks_list(values: Any, name: str, tasks: int) -> list:
    """values as a list of one entry per task, checked to hold ``tasks``."""
    if not isinstance(values, (list, tuple)):
        raise InvalidParameterError(
            f"Argument {name!r} must be a list of the {tasks} tasks' "
            f"{'targets' if name == 'y' else name}, not {type(values).__name__}.")
    if len(values) != tasks:
        raise InvalidParameterError(
            f"Argument {name!r} must hold one entry per task: {tasks} tasks, "
            f"but {len(values)} entries.")
    return list(values)
