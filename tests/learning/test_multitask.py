"""ffcode.learn's multi-task estimators: the tasks' gradients as one coded product (or
their own jobs, submitted together) are exactly the uncoded ones; one-vs-rest on digits
comes close to scikit-learn task by task; coupling pulls the tasks' weights together (and
0 trains independent models); related regression tasks with their own data sets train
together; bad input is refused with clear messages; fitted models pickle."""
import concurrent.futures
import pickle
import re

import numpy as np
import pytest
from sklearn import linear_model
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import load_digits
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ffcode
from ffcode import learn
from ffcode.learn import (LinearRegression, LogisticRegression, MultiTaskLinearRegression,
                          MultiTaskLogisticRegression, gradient_terms)
from ffcode.learn.gradients import _gradient_bound

from helpers import shared_cluster
from test_learn import Unreachable, same_model

N = 4
cluster = shared_cluster(N)


def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)


def labels(seed=0, n=60, d=4, tasks=3):
    """X (n, d) of different means and spreads; Y (n, tasks) 0/1, each column a noisy
    linear rule of its own."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    X = Z * np.arange(1, d + 1) + np.arange(d)
    Y = (Z @ rng.standard_normal((d, tasks)) + 0.3 * rng.standard_normal((n, tasks)) > 0)
    return X, Y.astype(int)


def related(seed=0, tasks=3, d=5, noise=0.1):
    """Related regression tasks, each its own data set: w_t = w_common + small noise."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(d)
    weights = [common + noise * rng.standard_normal(d) for _ in range(tasks)]
    Xs = [rng.standard_normal((40 + 10 * t, d)) * 2 + 1 for t in range(tasks)]
    ys = [X @ w + 0.5 + 0.1 * rng.standard_normal(len(X)) for X, w in zip(Xs, weights)]
    return Xs, ys, common


def spread(coef):
    """How far the tasks' coefficients lie from their mean."""
    return float(np.linalg.norm(coef - coef.mean(axis=0)))


# -- exactness ---------------------------------------------------------------------------------

def test_gradient_terms_takes_a_matrix_and_the_bound_is_honest():
    """X^T poly(X W) on signed elements equals the integer computation column by column,
    and the bound is reached, not passed, by the worst case whatever the number of tasks
    (every element of X at M, of W at |w|, coefficients positive)."""
    F = ffcode.GF(2**61 - 1)
    rng = np.random.default_rng(5)
    X, W = rng.integers(-50, 50, (7, 3)), rng.integers(-9, 9, (3, 4))
    C = [-4, 3, 0, 2]
    Z = X @ W
    expected = X.T @ sum(c * Z ** i for i, c in enumerate(C))
    got = gradient_terms(F, F.asarray(X), F.asarray(W), *(F.asarray([c]) for c in C))
    assert F.to_signed(got).tolist() == expected.tolist()
    for t in range(4):
        alone = gradient_terms(F, F.asarray(X), F.asarray(W[:, t]), *(F.asarray([c])
                                                                       for c in C))
        assert np.array_equal(alone, got[:, t])
    for tasks in (1, 5):
        X, W = np.full((6, 3), 4), np.full((3, tasks), 2)
        worst = gradient_terms(F, F.asarray(X), F.asarray(W), *(F.asarray([c])
                                                                for c in (1, 2, 3)))
        assert np.all(F.to_signed(worst) == _gradient_bound(6, 3, 4, 2, 1, 2, 3))


def fixed_point(F, x, scale):
    """x as the exact integers of the fixed point (Python ints, no overflow)."""
    return F.to_signed(F.from_real(x, scale)).astype(object)


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_coded_gradient_equals_the_uncoded_one(bounded, cluster, coding):
    """The multi-task gradient of one coded product (two with mds) at a matrix W equals,
    element for element, the fixed-point gradient computed directly in integers, and its
    column t is the single-task estimator's coded gradient at W[:, t]."""
    X, Y = labels(n=50)
    model = MultiTaskLogisticRegression(coding=coding, seed=1)
    s = learn.settings(model, N)
    data = model._data(X, Y, None, s)
    coded = model._coded(s, data)
    coded.cluster = cluster
    W = np.random.default_rng(2).standard_normal((X.shape[1] + 1, Y.shape[1]))
    G, reports = coded.gradient(W)
    assert len(reports) == (2 if coding == "mds" else 1)
    (part,) = data.parts
    F, scale = s.F, 2.0 ** s.precision
    Xq, Wq = fixed_point(F, part.X1, scale), fixed_point(F, W, scale)
    if coding == "mds":
        z = (Xq @ Wq).astype(np.float64) / scale ** 2
        R = 1 / (1 + np.exp(-z)) - part.y
        expected = (Xq.T @ fixed_point(F, R, scale)).astype(np.float64) / scale ** 2
        assert np.allclose(G, expected, rtol=0, atol=1e-12)
    else:
        (job,) = coded.parts
        c0, c1 = (int(F.to_signed(c)[0]) for c in job.C)
        poly = Xq.T @ (c0 + c1 * (Xq @ Wq))
        XTy = np.column_stack([part.X1.T @ np.ascontiguousarray(y) for y in part.y.T])
        expected = poly.astype(np.float64) / job.out_scale - XTy
        assert np.array_equal(G, expected)
    single = LogisticRegression(coding=coding, seed=1)
    for t in range(Y.shape[1]):
        alone = single._coded(s, single._data(X, Y[:, t], None, s))
        alone.cluster = cluster
        assert np.array_equal(alone.gradient(W[:, t])[0], G[:, t])


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_no_coupling_trains_the_single_task_models(bounded, cluster, coding):
    """coupling=0 on shared features: task t's coefficients are LogisticRegression's on
    column t, bit for bit (every job exact, the same steps); the reports say one coded
    product per step for all the tasks."""
    X, Y = labels()
    model = MultiTaskLogisticRegression(coding=coding, iterations=4, seed=3).fit(
        X, Y, cluster=cluster)
    assert model.coef_.shape == (3, 4) and model.intercept_.shape == (3,)
    assert all(len(step.reports) == (2 if coding == "mds" else 1) for step in model.history_)
    for t in range(3):
        alone = LogisticRegression(coding=coding, iterations=4, seed=3).fit(
            X, Y[:, t], cluster=cluster)
        assert np.array_equal(model.coef_[t], alone.coef_)
        assert model.intercept_[t] == alone.intercept_
    assert model.learning_rate_ == alone.learning_rate_


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_one_task_is_the_single_task_model(bounded, cluster, coding):
    """Y of one column is one task, and a y of two classes one task (the second class
    against the first, as scikit-learn's one-vs-rest makes it): LinearRegression's and
    LogisticRegression's models bit for bit, with scikit-learn's binary shapes
    (decision_function (n,), predict_proba (n, 2)); labels as a column are taken as y
    (n,), with scikit-learn's DataConversionWarning."""
    X, Y = labels()
    y = X @ [1.0, -0.5, 0.2, 0.0]
    options = dict(coding=coding, iterations=4, seed=3)
    regression = MultiTaskLinearRegression(**options).fit(X, y[:, None], cluster=cluster)
    alone = LinearRegression(**options).fit(X, y, cluster=cluster)
    assert regression.coef_.shape == (1, 4) and regression.predict(X).shape == (len(X), 1)
    assert np.array_equal(regression.coef_[0], alone.coef_)
    assert regression.intercept_[0] == alone.intercept_
    names = np.array(["no", "yes"])[Y[:, 0]]
    classifier = MultiTaskLogisticRegression(**options).fit(X, names, cluster=cluster)
    alone = LogisticRegression(**options).fit(X, names, cluster=cluster)
    assert classifier.coef_.shape == (1, 4) and list(classifier.classes_) == ["no", "yes"]
    assert np.array_equal(classifier.coef_[0], alone.coef_)
    assert np.array_equal(classifier.decision_function(X), alone.decision_function(X))
    assert np.array_equal(classifier.predict(X), alone.predict(X))
    assert np.allclose(classifier.predict_proba(X), alone.predict_proba(X), rtol=0,
                       atol=1e-15)
    with pytest.warns(DataConversionWarning, match="A column-vector y was passed"):
        column = MultiTaskLogisticRegression(**options).fit(X, names[:, None],
                                                            cluster=cluster)
    assert np.array_equal(column.coef_, classifier.coef_)


# -- one-vs-rest on digits ---------------------------------------------------------------------

@pytest.mark.bounded(90)
def test_one_vs_rest_digits_near_scikit_learn(bounded, cluster):
    """Ten tasks, one per digit, 40 steps: each task's test accuracy within 2 points of
    scikit-learn's LogisticRegression on that task (standardized the same way), and the
    multi-class prediction, the class of the largest decision, near its accuracy."""
    X_train, X_test, y_train, y_test = digits()
    model = MultiTaskLogisticRegression(iterations=40, seed=1).fit(X_train, y_train,
                                                                   cluster=cluster)
    assert model.classes_.tolist() == list(range(10)) and not model.multilabel_
    A, B = StandardScaler().fit(X_train).transform(X_train), \
        StandardScaler().fit(X_train).transform(X_test)
    decision = model.decision_function(X_test)
    assert decision.shape == (len(X_test), 10)
    for t in range(10):
        reference = linear_model.LogisticRegression(max_iter=1000).fit(
            A, y_train == t).score(B, y_test == t)
        assert abs(np.mean((decision[:, t] > 0) == (y_test == t)) - reference) <= 0.02, t
    assert model.score(X_test, y_test) > 0.9
    proba = model.predict_proba(X_test)
    assert np.allclose(proba.sum(axis=1), 1)
    assert np.array_equal(model.predict(X_test), np.argmax(proba, axis=1))


@pytest.mark.bounded(60)
def test_one_vs_rest_with_lcc_and_labels_as_given(bounded, cluster):
    """coding="lcc" (private against a worker), string labels: a few steps learn the digits
    0-2 well; predict gives the labels."""
    X_train, X_test, y_train, y_test = digits()
    keep, held = y_train < 3, y_test < 3
    names = np.array(["zero", "one", "two"])
    model = MultiTaskLogisticRegression(coding="lcc", iterations=10, seed=1).fit(
        X_train[keep], names[y_train[keep]], cluster=cluster)
    assert model.classes_.tolist() == ["one", "two", "zero"]
    assert set(model.predict(X_test[held])) <= set(names)
    assert model.score(X_test[held], names[y_test[held]]) > 0.9
    (code,) = model.codes_
    assert isinstance(code, ffcode.LCC) and code.t == 1


@pytest.mark.bounded(60)
def test_indicator_targets(bounded, cluster):
    """Y an (n, T) 0/1 matrix: predict gives (n, T), predict_proba each task's own
    probability, score the subset accuracy."""
    X, Y = labels()
    model = MultiTaskLogisticRegression(iterations=30, seed=1).fit(X, Y, cluster=cluster)
    assert model.multilabel_ and model.classes_.tolist() == [0, 1, 2]
    assert model.predict(X).shape == Y.shape and set(np.unique(model.predict(X))) <= {0, 1}
    proba = model.predict_proba(X)
    assert np.array_equal(proba > 0.5, model.decision_function(X) > 0)
    assert model.score(X, Y) == np.mean(np.all(model.predict(X) == Y, axis=1)) > 0.6


# -- coupling ---------------------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_coupling_pulls_the_tasks_together(bounded, cluster):
    """The larger the coupling, the closer the tasks' coefficients to their mean; a very
    large one makes them nearly one model. The loss of history_ includes the penalty."""
    X, Y = labels()
    spreads = []
    for coupling in (0.0, 0.5, 5.0, 500.0):
        model = MultiTaskLogisticRegression(coupling=coupling, iterations=30, seed=1).fit(
            X, Y, cluster=cluster)
        spreads.append(spread(model.coef_))
    assert spreads[0] > spreads[1] > spreads[2] > spreads[3]
    assert spreads[3] < 0.05 * spreads[0]


# -- tasks with their own data sets ------------------------------------------------------------

class Recording:
    """A cluster's stand-in that passes every call on to it and records the order of
    submits and of the results awaited."""

    def __init__(self, cluster):
        self.cluster, self.n_workers, self.events = cluster, cluster.n_workers, []

    def load(self, *args, **kwargs):
        return self.cluster.load(*args, **kwargs)

    def unload(self, data):
        return self.cluster.unload(data)

    def run(self, *args, **kwargs):
        self.events.append("run")
        return self.cluster.run(*args, **kwargs)

    def submit(self, *args, **kwargs):
        self.events.append("submit")
        future = self.cluster.submit(*args, **kwargs)
        recorded = concurrent.futures.Future()

        def result(timeout=None):
            self.events.append("result")
            return future.result(timeout)
        recorded.result = result
        return recorded


@pytest.mark.bounded(90)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_related_regression_tasks_with_their_own_data(bounded, cluster, coding):
    """Three related regressions, each its own data set: every step submits the three
    tasks' jobs before awaiting any; the model fits each task well; predict and score
    take lists; coupling pulls the coefficients towards the common weights."""
    Xs, ys, common = related()
    recording = Recording(cluster)
    model = MultiTaskLinearRegression(coding=coding, iterations=40, seed=1).fit(
        Xs, ys, cluster=recording)
    jobs = 2 if coding == "mds" else 1
    assert recording.events[:4] == ["submit"] * 3 + ["result"]
    assert recording.events.count("submit") == 3 * jobs * 40 and "run" not in recording.events
    assert all(len(step.reports) == 3 * jobs for step in model.history_)
    assert len(model.codes_) == 3 * jobs and model.learning_rate_.shape == (3,)
    assert model.coef_.shape == (3, 5) and model.y_mean_.shape == (3,)
    assert model.score(Xs, ys) > 0.95
    predictions = model.predict(Xs)
    assert [p.shape for p in predictions] == [(len(X),) for X in Xs]
    assert model.predict(Xs[0]).shape == (len(Xs[0]), 3)
    for t, X in enumerate(Xs):
        assert np.allclose(predictions[t], X @ model.coef_[t] + model.intercept_[t])
    coupled = MultiTaskLinearRegression(coding=coding, iterations=40, seed=1,
                                        coupling=2.0).fit(Xs, ys, cluster=cluster)
    assert spread(coupled.coef_) < 0.6 * spread(model.coef_)
    assert coupled.score(Xs, ys) > 0.9


@pytest.mark.bounded(60)
def test_shared_features_regression_and_weights(bounded, cluster):
    """Y (n, T) on one X: predict (n, T), score the mean R^2; integer sample weights are
    repeated samples (mds); coupling 0 gives LinearRegression's coefficients up to the
    pooled scale of y."""
    X, Y = labels()
    rng = np.random.default_rng(4)
    Y = X @ rng.standard_normal((4, 2)) + 0.1 * rng.standard_normal((len(X), 2))
    model = MultiTaskLinearRegression(iterations=30).fit(X, Y, cluster=cluster)
    assert model.predict(X).shape == Y.shape and model.score(X, Y) > 0.95
    for t in range(2):
        alone = LinearRegression(iterations=30).fit(X, Y[:, t], cluster=cluster)
        assert np.allclose(model.coef_[t], alone.coef_, rtol=0.05, atol=0.05)
    weights = rng.integers(0, 3, len(X))
    weighted = MultiTaskLinearRegression(iterations=5).fit(X, Y, weights, cluster=cluster)
    repeated = MultiTaskLinearRegression(iterations=5).fit(
        X.repeat(weights, axis=0), Y.repeat(weights, axis=0), cluster=cluster)
    same_model(weighted, repeated, exact=False)


# -- refused before any worker is asked ---------------------------------------------------------

def test_bad_input_refused():
    """Mismatched task counts, a negative coupling, a single data set, a 1-D y for the
    regressor, targets that are not 0/1 or of one class, lists given to the
    shared-features classifier: each refused before the cluster is asked anything, with a
    message that says what to give."""
    X, Y = labels()
    Xs, ys, _ = related()
    cases = [
        (MultiTaskLinearRegression(), Xs, ys[:2], ValueError,
         "'y' must hold one entry per task: 3 tasks, but 2 entries"),
        (MultiTaskLinearRegression(), Xs, ys, ValueError, None),     # weights: see below
        (MultiTaskLinearRegression(), Xs[:1], ys[:1], ValueError,
         "two or more tasks, not 1: for one task use LinearRegression"),
        (MultiTaskLinearRegression(), X, Y[:, 0], ValueError,
         r"'y' must be a matrix Y \(n, T\) with a column per task, not a 1-D y \(for one "
         r"task use LinearRegression, or Y of one column\)"),
        (MultiTaskLinearRegression(), X, ys, TypeError,
         "'X' must be a list of the tasks' data sets"),
        (MultiTaskLinearRegression(), Xs, ys[0], TypeError, "'y' must be a list"),
        (MultiTaskLinearRegression(), [Xs[0], Xs[1][:, :3]], ys[:2], ValueError,
         "Task 1's data set: X has 3 features, but MultiTaskLinearRegression is expecting 5"),
        (MultiTaskLinearRegression(coupling=-1), X, Y, ValueError,
         "'coupling' must be non-negative and finite, not -1"),
        (MultiTaskLogisticRegression(coupling=float("inf")), X, Y, ValueError,
         "'coupling' must be non-negative"),
        (MultiTaskLogisticRegression(coupling="strong"), X, Y, TypeError, "'coupling'"),
        (MultiTaskLogisticRegression(), X, np.ones(len(X)), ValueError,
         r"'y' must hold two or more classes .* not a binary target of one class \(1.0\)\."),
        (MultiTaskLogisticRegression(), X, 2 * Y, ValueError,
         r"must be a 0/1 indicator matrix \(a column per task\), not one of values 0, 2"),
        (MultiTaskLogisticRegression(), X, Y + 0.5, ValueError, "Unknown label type"),
        (MultiTaskLogisticRegression(), Xs, ys, TypeError,
         "trains tasks on shared features: argument 'X' must be one"),
        (MultiTaskLogisticRegression(), X, Y[:-1], ValueError,
         "inconsistent numbers of samples"),
        (MultiTaskLogisticRegression(coding="lcc", degree=0), X, Y, ValueError,
         "'degree' must be at least 1"),
    ]
    for model, X_, y_, error, match in cases:
        if match is None:
            with pytest.raises(ValueError, match="'sample_weight' must hold one entry per "
                                                 "task: 3 tasks, but 1 entries"):
                model.fit(X_, y_, [None], cluster=Unreachable(N))
            continue
        with pytest.raises(error, match=match):
            model.fit(X_, y_, cluster=Unreachable(N))
        assert not hasattr(model, "coef_")
    with pytest.raises(ValueError, match="'coupling' must be non-negative"):
        learn.settings(MultiTaskLogisticRegression(coupling=-0.5), N)
    with pytest.raises(ValueError, match=re.escape("coding='lcc' refuses") + "|"
                       "same weight .* with coding='lcc'"):
        MultiTaskLogisticRegression(coding="lcc").fit(X, Y, np.arange(1.0, 61.0),
                                                      cluster=Unreachable(N))


def test_own_data_sets_need_a_cluster_that_submits():
    """Tasks with their own data sets run their jobs together: a cluster without submit is
    refused before any job."""
    Xs, ys, _ = related()
    with pytest.raises(TypeError, match="the cluster must have submit"):
        MultiTaskLinearRegression().fit(Xs, ys, cluster=Unreachable(N))


# -- scikit-learn's conventions -------------------------------------------------------------------

def test_the_kind_of_estimator_and_parameters():
    """A classifier of many classes and labels and a multi-output regressor; coupling is a
    hyperparameter beside the single-task ones, stored as given, cloned and set."""
    assert is_classifier(MultiTaskLogisticRegression())
    assert is_regressor(MultiTaskLinearRegression())
    tags = MultiTaskLogisticRegression().__sklearn_tags__()
    assert tags.classifier_tags.multi_class and tags.target_tags.multi_output
    model = MultiTaskLinearRegression(coupling=0.3, coding="lcc", iterations=7)
    params = model.get_params()
    assert params["coupling"] == 0.3 and params["iterations"] == 7
    assert set(params) == set(LinearRegression().get_params()) | {
        "coupling", "topology", "communication", "link_rate", "layout"}
    assert (params["topology"], params["communication"], params["link_rate"],
            params["layout"]) == (None, "coded", None, "flat")
    copy = clone(model).set_params(coupling=1.5)
    assert (copy.coupling, model.coupling, copy.coding) == (1.5, 0.3, "lcc")
    assert repr(MultiTaskLogisticRegression(coupling=2.0)) == \
        "MultiTaskLogisticRegression(coupling=2.0)"


@pytest.mark.bounded(60)
def test_pickled_model_predicts_without_a_cluster(bounded, cluster):
    """A fitted multi-task model pickles (history_, codes_) and predicts the same without
    any cluster; clone keeps its hyperparameters."""
    X, Y = labels()
    model = MultiTaskLogisticRegression(coupling=0.5, iterations=3).fit(X, Y, cluster=cluster)
    restored = pickle.loads(pickle.dumps(model))
    assert learn.active_cluster() is None
    assert np.array_equal(restored.predict(X), model.predict(X))
    assert restored.history_ == model.history_
    assert restored.score(X, Y) == model.score(X, Y)
    assert clone(model).get_params() == model.get_params()
