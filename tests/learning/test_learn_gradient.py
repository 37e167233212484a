"""coding="gradient" for ffcode.learn's estimators: the samples cut into a cyclic repetition
code's partitions, each step's gradient summed exactly from whichever workers answer. A
fit with as many workers crashed as the code tolerates equals the uncoded fit (stragglers=0,
every worker one partition) bit for bit; scikit-learn's checks pass; the other codings'
arguments are refused with the reason."""
import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

import ffcode
from ffcode import Faults, learn
from ffcode.errors import InvalidParameterError
from ffcode.learn import (LinearRegression, LogisticRegression, MultiTaskLinearRegression,
                          using)

from ffcode.learn.estimators import codings
from helpers import shared_cluster
from test_learn_sklearn import problem

N = 3
cluster = shared_cluster(N)


@pytest.mark.bounded(150)
@pytest.mark.parametrize("Model", [LinearRegression, LogisticRegression])
def test_check_estimator(bounded, cluster, Model):
    """Every check of scikit-learn's passes, the sample weights' included: a worker
    weighs its partitions' residuals in float64 before the gradient is rounded."""
    model = Model(coding="gradient", iterations=20)
    assert learn.expected_failed_checks(model) == {}
    with using(cluster), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(model, on_skip=None)
    assert not [r["check_name"] for r in results if r["status"] == "failed"]
    assert sum(r["status"] == "passed" for r in results) > 50


@pytest.mark.bounded(120)
@pytest.mark.parametrize("Model", [LinearRegression, LogisticRegression])
def test_a_fit_with_crashed_workers_equals_the_uncoded_fit_bit_for_bit(bounded, Model):
    X, y_real, y_class = problem(seed=3, n=90, d=5)
    y = y_class if Model is LogisticRegression else y_real
    weights = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    with ffcode.Cluster(5) as five:
        uncoded = Model(coding="gradient", stragglers=0, iterations=8).fit(
            X, y, weights, cluster=five)
        crashed = Model(coding="gradient", stragglers=2, iterations=8,
                        faults=Faults(crash_after={0: 0, 3: 0})).fit(X, y, weights,
                                                                       cluster=five)
        original = Model(coding="gradient", stragglers=2, partial=False, resident=False,
                         iterations=8).fit(X, y, weights, cluster=five)
        mds = Model(iterations=8).fit(X, y, weights, cluster=five)
    for fit in (crashed, original):
        assert np.array_equal(fit.coef_, uncoded.coef_)
        assert fit.intercept_ == uncoded.intercept_
    assert all(not r.workers[0].packets and not r.workers[3].packets
               for step in crashed.history_ for r in step.reports)
    assert [s.loss for s in crashed.history_] == [s.loss for s in uncoded.history_]
    # the same descent as MDS's coded products, to their fixed points' precision
    np.testing.assert_allclose(crashed.coef_, mds.coef_, rtol=1e-3, atol=1e-3)
    assert crashed.history_[-1].loss < crashed.history_[0].loss


def test_the_fit_is_the_plain_descent():
    """Without a cluster's help: the weights after one step are those of float64 gradient
    descent on the standardized data, to the fixed point's precision (32 bits)."""
    X, y, _ = problem(seed=5, n=40, d=3)
    with ffcode.Cluster(2) as two:
        model = LinearRegression(coding="gradient", iterations=1, learning_rate=0.5).fit(
            X, y, cluster=two)
    Z = (X - X.mean(0)) / X.std(0)
    t = (y - y.mean()) / y.std()
    w = 0.5 * (np.column_stack([np.ones(len(Z)), Z]).T @ t) / len(Z)
    assert "CyclicRepetition" in model.history_[0].reports[0].code
    np.testing.assert_allclose(model.coef_ * X.std(0) / y.std(), w[1:], atol=1e-6)


@pytest.mark.parametrize("arguments, match", [
    (dict(stragglers=3), r"'stragglers' must be .*<= 2|stragglers"),
    (dict(stragglers=-1), "stragglers"),
    (dict(partial="yes"), "partial"),
    (dict(scheme="compfs"), "takes no 'scheme'"),
    (dict(k=2), "takes no 'k'"),
    (dict(shares=2), "takes no 'shares'"),
    (dict(t=2), "'t'"),
])
def test_bad_arguments_are_refused(arguments, match):
    model = LinearRegression(coding="gradient", n_workers=3, **arguments)
    with pytest.raises(InvalidParameterError, match=match):
        learn.settings(model, 3)


def test_a_gradient_codes_arguments_are_refused_with_other_codings():
    for arguments in (dict(stragglers=1), dict(partial=False)):
        with pytest.raises(InvalidParameterError, match="coding='gradient'"):
            learn.settings(LogisticRegression(coding="mds", **arguments), 3)
    with pytest.raises(InvalidParameterError, match="single-task estimators"):
        learn.settings(MultiTaskLinearRegression(coding="gradient"), 3)


def test_settings():
    s = learn.settings(LinearRegression(coding="gradient"), 4)
    assert (s.scheme, s.stragglers, s.partial, s.precision, s.k) == (None, 1, True, 32, 1)
    assert learn.settings(LinearRegression(coding="gradient"), 1).stragglers == 0
    assert "gradient" in codings()
