"""ffcode.learn's estimators are scikit-learn estimators: check_estimator passes, they clone,
pickle and predict without a cluster, work in Pipeline, cross_val_score and GridSearchCV,
choose their cluster in three ways, weigh samples exactly, and keep the old model when a
refit fails."""
import pickle
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import sklearn
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator
from scipy import sparse

import ffcode
from ffcode import Faults, learn
from ffcode.learn import (LinearRegression, LogisticRegression, MultiTaskLinearRegression,
                          MultiTaskLogisticRegression, Step, using)

from helpers import descendants, shared_cluster
from test_learn import same_model

N = 3
cluster = shared_cluster(N)


def problem(seed=0, n=80, d=4):
    """X (n, d) of different means and spreads; y real (a noisy linear rule) and its sign."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    X = Z * np.arange(1, d + 1) + np.arange(d)
    y = Z @ np.linspace(1, -1, d) + 0.3 * rng.standard_normal(n)
    return X, y, (y > 0).astype(int)


# -- scikit-learn's own checks -----------------------------------------------------------------

@pytest.mark.bounded(150)
@pytest.mark.parametrize("Model", [LinearRegression, LogisticRegression,
                                   MultiTaskLinearRegression, MultiTaskLogisticRegression])
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_check_estimator(bounded, cluster, Model, coding):
    """Every check of sklearn.utils.estimator_checks passes with mds (some skip themselves
    when pandas is missing), the multi-task estimators' too (the checks give the
    regressor Y of one column, the classifier two or three classes); with lcc, those of
    learn.expected_failed_checks fail as it says, the sample weights' checks. The many
    fits share one cluster through using(); twenty iterations train the blobs and
    regression problems of the checks well enough."""
    model = Model(coding=coding, iterations=20)
    expected = learn.expected_failed_checks(model)
    assert bool(expected) is (coding == "lcc")
    with using(cluster), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(model, expected_failed_checks=expected, on_skip=None)
    assert not [r["check_name"] for r in results if r["status"] == "failed"]
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)
    weights = {"check_sample_weight_equivalence_on_dense_data",
               "check_sample_weight_equivalence_on_sparse_data",
               *(["check_sample_weights_not_overwritten"] if is_classifier(model) else [])}
    assert set(expected) == (weights if coding == "lcc" else set())
    assert sum(r["status"] == "passed" for r in results) > 50


def test_the_kind_of_estimator():
    """A regressor without decision_function; a binary-only classifier, as its tags say."""
    assert is_regressor(LinearRegression()) and is_classifier(LogisticRegression())
    assert not hasattr(LinearRegression(), "decision_function")
    tags = LogisticRegression().__sklearn_tags__()
    assert tags.classifier_tags.multi_class is False and tags.input_tags.sparse


def test_clone_get_and_set_params():
    """The constructor only stores: get_params gives back what was given, set_params sets
    it, and clone deep-copies faults and the progress callable."""
    faults = Faults(slowdown={1: 2.0})
    seen = []
    model = LogisticRegression(coding="lcc", iterations=7, faults=faults,
                               progress=seen.append, n_workers=2)
    params = model.get_params()
    assert params["faults"] is faults and params["progress"] == seen.append
    assert (params["iterations"], params["n_workers"], params["k"]) == (7, 2, None)
    copy = clone(model)
    assert copy.get_params()["faults"] == faults and copy.get_params()["progress"] is not None
    assert copy.set_params(iterations=3, learning_rate=0.5) is copy
    assert (copy.iterations, copy.learning_rate, model.iterations) == (3, 0.5, 7)
    assert "cluster" not in params and vars(LinearRegression(t=-5)) == {
        **LinearRegression().get_params(), "t": -5}


# -- fitted models without a cluster -----------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("Model, coding", [(LinearRegression, "mds"),
                                           (LogisticRegression, "lcc")])
def test_pickled_model_predicts_without_a_cluster(bounded, cluster, Model, coding):
    """A fitted model (its history_ of Steps with their reports, its codes_) pickles; the
    unpickled copy predicts the same with no cluster anywhere."""
    X, y, labels = problem()
    target = labels if Model is LogisticRegression else y
    model = Model(coding=coding, iterations=5, faults=Faults(seed=3)).fit(
        X, target, cluster=cluster)
    restored = pickle.loads(pickle.dumps(model))
    assert learn.active_cluster() is None
    assert np.array_equal(restored.predict(X), model.predict(X))
    assert restored.history_ == model.history_ and isinstance(restored.history_[0], Step)
    assert [repr(c) for c in restored.codes_] == [repr(c) for c in model.codes_]
    assert restored.score(X, target) == model.score(X, target)
    assert clone(model).get_params() == model.get_params()


# -- scikit-learn's tools ----------------------------------------------------------------------

@pytest.mark.bounded(90)
def test_pipeline_cross_validation_and_grid_search(bounded, cluster):
    """make_pipeline(StandardScaler(), model) fits with the cluster as a fit parameter;
    cross_val_score passes it on; GridSearchCV over learning_rate and iterations runs in a
    using() block and refits the best."""
    X, y, labels = problem(n=90)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(iterations=10))
    pipe.fit(X, labels, logisticregression__cluster=cluster)
    assert pipe.score(X, labels) > 0.8
    scores = cross_val_score(LinearRegression(iterations=10), X, y, cv=3,
                             params={"cluster": cluster})
    assert scores.shape == (3,) and np.all(scores > 0.5)
    with sklearn.config_context(enable_metadata_routing=True):     # cluster requested
        routed = LinearRegression(iterations=10).set_fit_request(cluster=True)
        assert np.array_equal(cross_val_score(routed, X, y, cv=3,
                                              params={"cluster": cluster}), scores)
    grid = GridSearchCV(LogisticRegression(), {"learning_rate": [0.01, 1.0],
                                               "iterations": [2, 8]}, cv=2,
                        scoring="neg_log_loss")
    epoch = cluster.epoch
    with using(cluster):
        grid.fit(X, labels)
    assert cluster.epoch - epoch == 2 * 2 * (2 * 2 + 2 * 8) + 2 * 8  # 2 jobs an iteration
    assert grid.best_params_ == {"learning_rate": 1.0, "iterations": 8}
    assert grid.best_estimator_.history_[-1].iteration == 8


# -- choosing the cluster ----------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_cluster_given_or_used(bounded, cluster):
    """fit(cluster=) wins over using(); using() blocks nest, the innermost winning, and
    the default holds in other threads too; each block restores the one around it."""
    X, y, _ = problem()
    model = LinearRegression(iterations=2)
    with ffcode.Cluster(2) as other:
        with using(cluster):
            assert learn.active_cluster() is cluster
            with using(other):
                epochs = cluster.epoch, other.epoch
                model.fit(X, y)
                assert (cluster.epoch, other.epoch) == (epochs[0], epochs[1] + 4)
                assert model.codes_[0].n_workers == 2 and model.k_ == 1
                model.fit(X, y, cluster=cluster)
                assert (cluster.epoch, other.epoch) == (epochs[0] + 4, epochs[1] + 4)
                seen = []
                thread = threading.Thread(target=lambda: seen.append(learn.active_cluster()))
                thread.start()
                thread.join()
                assert seen == [other]
            assert learn.active_cluster() is cluster
            model.fit(X, y)
            assert model.codes_[0].n_workers == N and model.k_ == N - 1
    assert learn.active_cluster() is None


@pytest.mark.bounded(60)
def test_own_cluster_opened_and_closed(bounded):
    """With no cluster given or used, a fit opens a local one of n_workers and closes it:
    no worker process is left (the bounded fixture waits for them to exit); a fit refused
    on its data starts none."""
    X, y, _ = problem()
    model = LinearRegression(iterations=2, n_workers=2).fit(X, y)
    assert model.codes_[0].n_workers == 2 and len(model.history_) == 2
    before = descendants()
    with pytest.raises(ValueError, match="Input X contains NaN"):
        LinearRegression(n_workers=2).fit(np.full_like(X, np.nan), y)
    assert descendants() <= before


# -- sample weights ----------------------------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("Model", [LinearRegression, LogisticRegression])
def test_integer_weights_repeat_samples_with_mds(bounded, cluster, Model):
    """With mds an integer weight is a sample repeated, and weight 0 a sample left out:
    the same losses and coefficients, up to the last bits of the master's float sums."""
    X, y, labels = problem(n=40)
    target = labels if Model is LogisticRegression else y
    weights = np.random.default_rng(1).integers(0, 4, len(y))
    weighted = Model(iterations=10).fit(X, target, weights, cluster=cluster)
    repeated = Model(iterations=10).fit(X.repeat(weights, axis=0),
                                        target.repeat(weights), cluster=cluster)
    same_model(weighted, repeated, exact=False)
    ones = Model(iterations=10).fit(X, target, np.ones(len(y)), cluster=cluster)
    same_model(ones, Model(iterations=10).fit(X, target, cluster=cluster))


@pytest.mark.bounded(60)
def test_weights_with_lcc(bounded, cluster):
    """lcc scales a linear model's rows by the roots of the weights: close to the mds
    model of the same weights; a logistic model takes equal weights (and zeros, leaving
    samples out) and refuses others, saying why."""
    X, y, labels = problem(n=40)
    weights = np.random.default_rng(2).uniform(0.5, 3.0, len(y))
    lcc = LinearRegression(coding="lcc", iterations=20).fit(X, y, weights, cluster=cluster)
    mds = LinearRegression(iterations=20).fit(X, y, weights, cluster=cluster)
    assert np.allclose(lcc.predict(X), mds.predict(X), atol=0.05)
    halves = np.where(np.arange(len(y)) % 2, 2.0, 0.0)
    model = LogisticRegression(coding="lcc", iterations=3)
    same_model(model.fit(X, labels, halves, cluster=cluster),
               clone(model).fit(X[1::2], labels[1::2], cluster=cluster), exact=False)
    with pytest.raises(ValueError, match="'sample_weight' must give every sample the same "
                                         "weight .* with coding='lcc'.* Use coding='mds'"):
        model.fit(X, labels, weights, cluster=cluster)
    for bad, match in [(-weights, "Negative values in data passed to `sample_weight`"),
                       (weights[:-1], r"sample_weight.shape == \(39,\), expected \(40,\)"),
                       (0 * weights, "at least one non-zero")]:
        with pytest.raises(ValueError, match=match):
            LinearRegression().fit(X, y, bad, cluster=cluster)


# -- inputs ------------------------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_column_y_sparse_x_and_refits(bounded, cluster):
    """y of shape (n, 1) trains the model of y (n,), with scikit-learn's
    DataConversionWarning; a sparse X trains the dense X's model; a refit that fails
    (here on a NaN, before any job) leaves the previous model as it was."""
    X, y, _ = problem()
    model = LinearRegression(iterations=4).fit(X, y, cluster=cluster)
    with pytest.warns(DataConversionWarning, match="A column-vector y was passed"):
        column = LinearRegression(iterations=4).fit(X, y[:, None], cluster=cluster)
    same_model(column, model)
    X[np.abs(X) < 1] = 0.0
    dense = LinearRegression(iterations=4).fit(X, y, cluster=cluster)
    scattered = LinearRegression(iterations=4).fit(sparse.csr_matrix(X), y, cluster=cluster)
    same_model(scattered, dense)
    assert np.allclose(scattered.predict(sparse.csr_matrix(X)), dense.predict(X))
    before = dict(vars(dense))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        dense.fit(np.full((5, 2), np.nan), y[:5], cluster=cluster)
    assert vars(dense).keys() == before.keys()
    assert all(vars(dense)[name] is value for name, value in before.items())
    with pytest.raises(ValueError, match="X has 2 features, but LinearRegression is "
                                         "expecting 4 features"):
        dense.predict(X[:, :2])


# -- the guide ---------------------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_guide_example_runs(bounded, capsys):
    """docs/guide/learning.md's example (the three ways of choosing a cluster) runs and
    prints what the page shows."""
    page = (Path(__file__).parents[2] / "docs" / "guide" / "learning.md").read_text()
    code = page.split("```{testcode}\n", 1)[1].split("```", 1)[0]
    shown = page.split("```{testoutput}\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/guide/learning.md", "exec"), {"__name__": "guide"})
    assert capsys.readouterr().out == shown
