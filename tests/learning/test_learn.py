"""ffcode.learn: linear and logistic regression trained by coded gradient descent on resident
data match scikit-learn, train the same model bit for bit under every scheme and straggler,
keep LCC's shares private, and refuse bad input before any worker is asked."""
import dataclasses
import itertools
import re

import numpy as np
import pytest
from sklearn import linear_model
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ffcode
from ffcode import LCC, MDS, Faults, learn
from ffcode.learn import LinearRegression, LogisticRegression, Step, gradient_terms

from helpers import shared_cluster

N = 6
STRAGGLERS = Faults(slowdown={N - 2: 4, N - 1: 4})
SCHEMES = {"mds": ["uncoded", "classic", "systematic", "cfs", "compfs"],
           "lcc": ["uncoded", "classic", "systematic", "cfs"]}


cluster = shared_cluster(N)


def split(loader):
    X, y = loader(return_X_y=True)
    return train_test_split(X, y, test_size=0.2, random_state=0)


CANCER, DIABETES = split(load_breast_cancer), split(load_diabetes)


def standardized(X_train, X_test):
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test)


def small_problem(seed=0, n=60):
    """Four features of different means and spreads; labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 4))
    X = Z * [1.0, 5.0, 0.1, 2.0] + [3.0, -1.0, 0.5, 10.0]
    y = (Z @ [1.0, -1.0, 0.0, 0.5] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    assert 0.3 < y.mean() < 0.7
    return X, y


def assert_history(model, iterations, jobs):
    """One Step per iteration, numbered from 1, with positive seconds, bytes shipped, the
    iteration's reports and a loss that decreased overall (from each tenth of the run to
    the next)."""
    steps = model.history_
    assert [s.iteration for s in steps] == list(range(1, iterations + 1))
    assert all(isinstance(s, Step) and s.seconds > 0 and len(s.reports) == jobs
               for s in steps)
    assert all(s.shipped == sum(r.shipped for r in s.reports) > 0 for s in steps)
    losses = np.array([s.loss for s in steps])
    assert np.isfinite(losses).all()
    tenths = losses[::iterations // 10]     # lcc's log-loss wavers: it follows a polynomial
    assert np.all(np.diff(tenths) < 0) and losses[-1] < tenths[-2]


def same_model(a, b, exact=True):
    """Bit-for-bit the same training: equal losses at every step and equal coefficients
    (not exact: equal up to the last bits of the master's float sums)."""
    if exact:
        assert [s.loss for s in a.history_] == [s.loss for s in b.history_]
        assert np.array_equal(a.coef_, b.coef_) and a.intercept_ == b.intercept_
        return
    assert np.allclose([s.loss for s in a.history_], [s.loss for s in b.history_],
                       rtol=1e-12, atol=0)
    assert np.allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    assert a.intercept_ == pytest.approx(b.intercept_, rel=1e-9, abs=1e-12)


# -- against scikit-learn ----------------------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding, iterations", [("mds", 100), ("lcc", 150)])
def test_logistic_regression_matches_sklearn(bounded, cluster, coding, iterations):
    """Breast cancer: test accuracy within 2 points of scikit-learn's LogisticRegression on
    the same standardized data (the lcc model trained on the sigmoid's linear polynomial)."""
    X_train, X_test, y_train, y_test = CANCER
    A, B = standardized(X_train, X_test)
    reference = linear_model.LogisticRegression().fit(A, y_train).score(B, y_test)
    model = LogisticRegression(coding=coding, iterations=iterations, seed=1)
    assert model.fit(X_train, y_train, cluster=cluster) is model
    assert abs(model.score(X_test, y_test) - reference) <= 0.02
    assert_history(model, iterations, 2 if coding == "mds" else 1)
    assert model.classes_.tolist() == [0, 1]
    proba = model.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2) and np.allclose(proba.sum(axis=1), 1)
    decision = model.decision_function(X_test)
    assert np.allclose(decision, X_test @ model.coef_ + model.intercept_)
    assert np.array_equal(model.predict(X_test), (proba[:, 1] > 0.5).astype(int))
    assert model.load_seconds_ > 0 and model.loaded_bytes_ > 0


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_linear_regression_matches_sklearn(bounded, cluster, coding):
    """Diabetes: test R^2 within 0.02 of scikit-learn's LinearRegression; coef_ and
    intercept_ in the units of the X and y given."""
    X_train, X_test, y_train, y_test = DIABETES
    A, B = standardized(X_train, X_test)
    reference = r2_score(y_test, linear_model.LinearRegression().fit(A, y_train).predict(B))
    model = LinearRegression(coding=coding, iterations=100, seed=1).fit(X_train, y_train,
                                                                       cluster=cluster)
    assert abs(model.score(X_test, y_test) - reference) <= 0.02
    assert model.score(X_test, y_test) == pytest.approx(r2_score(y_test, model.predict(X_test)))
    assert np.allclose(model.predict(X_test), X_test @ model.coef_ + model.intercept_)
    assert_history(model, 100, 2 if coding == "mds" else 1)
    residual = model.predict(X_train) - y_train
    assert model.history_[-1].loss == pytest.approx(np.mean(residual ** 2) / 2)


# -- exactness -------------------------------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_every_scheme_trains_the_same_model_under_stragglers(bounded, cluster, coding):
    """The coded gradient is the uncoded one exactly, so every scheme, with two workers 4x
    slower, trains bit for bit the model that uncoded trains without faults."""
    X, y = CANCER[0], CANCER[2]
    reference = LogisticRegression(coding=coding, scheme="uncoded", iterations=4,
                                   seed=2).fit(X, y, cluster=cluster)
    for scheme in SCHEMES[coding]:
        model = LogisticRegression(coding=coding, scheme=scheme, iterations=4,
                                   faults=STRAGGLERS, seed=2).fit(X, y, cluster=cluster)
        same_model(model, reference)
        assert all(type(c) is (MDS if coding == "mds" else LCC) for c in model.codes_)
        assert all(r.settings["scheme"] == scheme and r.settings["resident"] is not None
                   for s in model.history_ for r in s.reports)


@pytest.mark.bounded(60)
def test_several_shares_per_worker_train_the_same_model(bounded, cluster):
    """With two shares per worker (codes of 2N points) under stragglers, mds trains bit for
    bit the model uncoded trains, every worker holding two shares of each code."""
    X, y = CANCER[0], CANCER[2]
    reference = LogisticRegression(scheme="uncoded", iterations=3, seed=2).fit(
        X, y, cluster=cluster)
    for scheme in ("classic", "compfs"):
        model = LogisticRegression(scheme=scheme, iterations=3, faults=STRAGGLERS,
                                   seed=2, shares=2).fit(X, y, cluster=cluster)
        same_model(model, reference)
        assert all(code.n_workers == 2 * N for code in model.codes_)
        assert all(len(w.shares) == 2 for s in model.history_ for r in s.reports
                   for w in r.workers)


@pytest.mark.bounded(60)
def test_lcc_privacy_counts_the_shares_a_worker_holds(bounded, cluster):
    """LCC with two shares per worker and t = 1: the code's privacy is 2, so the two shares
    any one worker holds have mask columns of rank 2 (uniform whatever X), and the model
    is the one-share model."""
    from ffcode import allocation
    X, y = CANCER[0], CANCER[2]
    one = LogisticRegression(coding="lcc", k=1, iterations=2).fit(X, y, cluster=cluster)
    two = LogisticRegression(coding="lcc", k=1, iterations=2, shares=2).fit(
        X, y, cluster=cluster)
    same_model(one, two)
    (code,) = two.codes_
    assert (code.t, code.n_workers, code.recovery_threshold) == (2, 2 * N, 5)
    masks = code.encoding_matrix[:, code.k:]
    for held in allocation.uniform(2 * N, N):
        assert code.F.rank(masks[list(held)]) == 2, held


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding", ["mds", "lcc"])
def test_resident_data_ships_only_the_weights(bounded, cluster, coding):
    """resident=False re-encodes and ships the data every iteration: the same model, no
    load, and many times the bytes per iteration."""
    X, y = DIABETES[0], DIABETES[2]
    kept = LinearRegression(coding=coding, iterations=3, seed=3).fit(X, y, cluster=cluster)
    shipped = LinearRegression(coding=coding, iterations=3, seed=3,
                               resident=False).fit(X, y, cluster=cluster)
    same_model(kept, shipped)
    assert shipped.load_seconds_ == 0 and shipped.loaded_bytes_ == 0
    assert all(r.settings["resident"] is None for s in shipped.history_ for r in s.reports)
    assert kept.loaded_bytes_ >= X.size * 8
    for a, b in zip(kept.history_, shipped.history_):
        assert b.shipped > kept.loaded_bytes_        # every share again, in every step
        assert b.shipped > 5 * a.shipped


@pytest.mark.bounded(60)
def test_lcc_training_is_private_against_t_workers(bounded, cluster):
    """The learner's LCC mixes t uniformly random masks into every share: its mask columns
    on any t workers have rank t (any t shares are the data plus a uniform vector), while
    t + 1 workers could cancel them. The privacy level does not change the model."""
    X, y = CANCER[0], CANCER[2]
    models = {t: LogisticRegression(coding="lcc", k=1, t=t, iterations=3).fit(
        X, y, cluster=cluster)
              for t in (1, 2)}
    same_model(models[1], models[2])
    for t, model in models.items():
        (code,) = model.codes_
        assert isinstance(code, LCC) and code.signed and (code.k, code.t) == (1, t)
        assert code.function is gradient_terms and code.degree == 2
        assert code.recovery_threshold == 2 * t + 1 and code.n_workers == N
        E = code.encoding_matrix
        masks = E[:, code.k:]
        for workers in itertools.combinations(range(N), t):
            assert code.F.rank(masks[list(workers)]) == t, workers
        for workers in itertools.combinations(range(N), t + 1):
            assert code.F.rank(E[list(workers)]) == t + 1, workers


@pytest.mark.bounded(60)
@pytest.mark.parametrize("coding, options, bound", [
    ("mds", {"precision": 40}, r"cols \* \|A\| \* \|x\|"),
    ("lcc", {"degree": 3}, r"result_bound\(\|X\|, \|w\|, \|c0\|, \|c1\|, \|c2\|, \|c3\|\)")])
def test_a_job_that_could_wrap_is_refused(bounded, cluster, coding, options, bound):
    """Too fine a fixed point for p (or a cubic sigmoid at the default precision) makes a
    job's exact result able to pass (p-1)/2: it is refused naming the bound, not computed
    wrapped, and the fit leaves no model."""
    X, y = CANCER[0], CANCER[2]
    model = LogisticRegression(coding=coding, iterations=5, **options)
    with pytest.raises(ValueError, match=bound + r" = \d+, beyond \(p-1\)/2 = "
                                               f"{(2**61 - 2) // 2}, and wrap around"):
        model.fit(X, y, cluster=cluster)
    assert not hasattr(model, "coef_")


# -- the loop's bookkeeping ------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_progress_history_and_labels_as_given(bounded, cluster):
    """progress(step) sees each Step as it is recorded; labels come back as given; a
    constant column gets a zero coefficient; predict before fit is refused; a refit that
    fails leaves the previous model as it was."""
    X, y = small_problem()
    X[:, 2] = 7.0
    labels = np.array(["no", "yes"])[y]
    seen = []
    model = LogisticRegression(iterations=5, progress=seen.append, seed=4)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.predict(X)
    model.fit(X, labels, cluster=cluster)
    assert seen == model.history_ and len(seen) == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0].loss = 0.0
    assert model.classes_.tolist() == ["no", "yes"]
    assert set(model.predict(X)) <= {"no", "yes"} and model.score(X, labels) > 0.7
    assert model.coef_[2] == 0 and np.isfinite(model.coef_).all()
    with pytest.raises(ValueError, match="X has 3 features, but LogisticRegression is "
                                         "expecting 4 features as input"):
        model.predict(X[:, :3])
    again = LogisticRegression(iterations=5, seed=4).fit(X, y, cluster=cluster)
    same_model(model, again)                # the labels' names change nothing
    before = dict(vars(again))
    for bad in (np.zeros(len(y)), y[:-1]):
        with pytest.raises(ValueError, match="two classes|inconsistent numbers of samples"):
            again.fit(X[:, :3], bad, cluster=cluster)
        assert vars(again).keys() == before.keys() and again.n_features_in_ == 4
        assert all(vars(again)[name] is value for name, value in before.items())


# -- refused before any worker is asked -------------------------------------------------------

class Unreachable:
    """A cluster of n workers that fails the test if the learner asks it anything."""

    def __init__(self, n_workers):
        self.n_workers = n_workers

    def load(self, *args, **kwargs):
        raise AssertionError("load called")

    run = unload = load


@pytest.mark.parametrize("options, error, match", [
    ({"coding": "plain"}, ValueError, "'coding' must be one of 'mds', 'lcc', 'gradient'; not 'plain'"),
    ({"scheme": "fast"}, ValueError, "'scheme' must be one of"),
    ({"coding": "lcc", "scheme": "compfs"}, ValueError, "cannot use scheme='compfs'"),
    ({"pieces": 0}, ValueError, "pieces"),
    ({"iterations": 0}, ValueError, "'iterations' must be at least 1"),
    ({"iterations": 2.5}, TypeError, "'iterations' must be an integer"),
    ({"learning_rate": 0}, ValueError, "'learning_rate' must be positive"),
    ({"learning_rate": float("nan")}, ValueError, "'learning_rate' must be positive"),
    ({"learning_rate": "fast"}, TypeError, "'learning_rate' must be a number, not str"),
    ({"k": 0}, ValueError, "'k' must be at least 1"),
    ({"coding": "lcc", "t": -1}, ValueError, "'t' must be non-negative, not -1"),
    ({"t": 2}, ValueError, "are LCC's: coding='mds'"),
    ({"degree": 3}, ValueError, "are LCC's: coding='mds'"),
    ({"coding": "lcc", "degree": 0}, ValueError, "'degree' must be at least 1"),
    ({"precision": 0}, ValueError, "'precision' must be at least 1"),
    ({"prime": 12}, ValueError, "must be prime"),
    ({"faults": {"slowdown": {1: 2}}}, TypeError, "'faults' must be an ffcode.Faults"),
    ({"faults": Faults(slowdown={N: 2})}, ValueError, "names workers"),
    ({"seed": -1}, ValueError, "'seed' must be non-negative, not -1"),
    ({"resident": "yes"}, TypeError, "'resident' must be True or False"),
    ({"progress": 3}, TypeError, "progress"),
    ({"n_workers": 0}, ValueError, "'n_workers' must be at least 1, not 0"),
    ({"k": N + 1}, ValueError, f"needs results from R = {N + 1} workers, but the cluster "
                               f"has {N}"),
    ({"coding": "lcc", "k": 3}, ValueError, "k=3, t=1, degree=1 needs results from R = 7"),
    ({"coding": "lcc", "k": 1, "t": 3}, ValueError, "R = 7 workers"),
    ({"shares": 0}, ValueError, "'shares' must be at least 1"),
    ({"k": 2 * N + 1, "shares": 2}, ValueError, f"shares=2 needs results from R = {2 * N + 1} "
                                               f"shares, but the cluster's {N} workers hold "
                                               f"{2 * N}"),
], ids=lambda v: None if isinstance(v, (dict, type)) else re.sub(r"\W+", "-", v)[:30])
def test_bad_parameters_refused(options, error, match):
    """The constructor stores anything; fit (and learn.settings) refuse it, naming the
    argument, before the data is read or a worker asked."""
    model = LogisticRegression(**options)
    assert model.get_params()[next(iter(options))] is next(iter(options.values()))
    with pytest.raises(error, match=match):
        model.fit(*small_problem(), cluster=Unreachable(N))
    with pytest.raises(error, match=match):
        learn.settings(model, N)


def test_too_few_workers_and_linear_degree_refused():
    """LCC needs R = (k + t - 1) (r + 1) + 1 workers even for k = 1; a linear regression's
    polynomial has degree 1; the cluster must be one."""
    X, y = small_problem()
    for Model, options, R in [(LinearRegression, {}, 3), (LogisticRegression, {"t": 2}, 5),
                              (LogisticRegression, {"degree": 2}, 4)]:
        with pytest.raises(ValueError, match=f"needs results from R = {R} workers, but the "
                                             f"cluster has 2"):
            Model(coding="lcc", **options).fit(X, y, cluster=Unreachable(2))
    with pytest.raises(ValueError, match="polynomial is z itself: 'degree' must be 1"):
        LinearRegression(coding="lcc", degree=2).fit(X, y, cluster=Unreachable(N))
    with pytest.raises(TypeError, match="must be an ffcode.Cluster"):
        LinearRegression().fit(X, y, cluster=object())
    with pytest.raises(TypeError, match="must be an ffcode.Cluster"):
        with learn.using(object()):
            pass


@pytest.mark.bounded(60)
def test_bad_data_refused_before_any_job(bounded, cluster):
    """Non-finite values, labels that are not two classes, a continuous target to the
    classifier, shapes that do not match, strings, complex numbers, too few samples: each
    refused by fit, as scikit-learn's estimators refuse it, before a job runs (the cluster's
    epoch stays)."""
    X, y = small_problem()
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    inf_X = X.copy()
    inf_X[0, 0] = np.inf
    cases = [
        (LogisticRegression, bad_X, y, ValueError, "Input X contains NaN"),
        (LogisticRegression, inf_X, y, ValueError, "Input X contains infinity"),
        (LinearRegression, X, np.where(y == 1, np.inf, 0.0), ValueError,
         "Input y contains infinity"),
        (LogisticRegression, X, np.where(y == 1, np.nan, 0.0), ValueError,
         "Input y contains NaN"),
        (LogisticRegression, X, y * np.arange(len(y)) % 3, ValueError,
         "Only binary classification is supported: argument 'y' must hold two classes for "
         "a logistic regression, not 3 \\(0, 1, 2\\) \\(a multiclass target\\)"),
        (LogisticRegression, X, np.zeros(len(y)), ValueError, "two classes.*not 1"),
        (LogisticRegression, X, X[:, 0], ValueError, "Unknown label type: continuous"),
        (LogisticRegression, X, y[:-1], ValueError,
         r"inconsistent numbers of samples: \[60, 59\]"),
        (LinearRegression, X, np.c_[y, y], ValueError, "y should be a 1d array"),
        (LinearRegression, X[:, 0], y, ValueError, "Expected 2D array, got 1D array"),
        (LinearRegression, X[:, :0], y, ValueError, r"0 feature\(s\) \(shape=\(60, 0\)\)"),
        (LinearRegression, X[:1], y[:1], ValueError, r"1 sample\(s\) .* minimum of 2"),
        (LinearRegression, X.astype(str), y, ValueError, "not compatible with arrays of "
                                                         "bytes/strings"),
        (LinearRegression, X + 1j, y, ValueError, "Complex data not supported"),
        (LinearRegression, X, np.array(["a"] * len(y)), ValueError, "could not convert"),
    ]
    for Model, X_, y_, error, match in cases:
        for coding in ("mds", "lcc"):
            epoch = cluster.epoch
            with pytest.raises(error, match=match):
                Model(coding=coding, iterations=2).fit(X_, y_, cluster=cluster)
            assert cluster.epoch == epoch, match
    epoch = cluster.epoch
    with pytest.raises(ValueError, match=r"standardized X does not fit GF\(65521\) at "
                                         r"precision=16: .* would wrap around"):
        LinearRegression(prime=65521).fit(X, y, cluster=cluster)
    assert cluster.epoch == epoch


# -- the worker's function and the docstrings --------------------------------------------------

def test_gradient_terms_is_exact_with_negatives():
    """X^T poly(X w) on signed elements equals the integer computation."""
    F = ffcode.GF(2**61 - 1)
    rng = np.random.default_rng(5)
    X, w = rng.integers(-50, 50, (7, 3)), rng.integers(-9, 9, 3)
    C = [-4, 3, 0, 2]
    z = X @ w
    expected = X.T @ sum(c * z ** i for i, c in enumerate(C))
    got = gradient_terms(F, F.asarray(X), F.asarray(w), *(F.asarray([c]) for c in C))
    assert F.to_signed(got).tolist() == expected.tolist()


def test_sigmoid_polynomial():
    """0.5 + odd terms, close to the sigmoid on [-4, 4] and closer as the degree grows."""
    z = np.linspace(-4, 4, 101)
    sigmoid = 1 / (1 + np.exp(-z))
    errors = []
    for degree in (1, 3, 5):
        c = learn.sigmoid_polynomial(degree)
        assert c.shape == (degree + 1,) and c[0] == pytest.approx(0.5)
        assert np.all(c[2::2] == 0) and c[1] > 0
        errors.append(np.abs(np.polynomial.polynomial.polyval(z, c) - sigmoid).max())
    assert errors[0] < 0.15 and errors[2] < errors[1] < errors[0]
    with pytest.raises(ValueError, match="'degree' must be at least 1"):
        learn.sigmoid_polynomial(0)


@pytest.mark.bounded(60)
def test_usage_example_runs(bounded):
    """The module docstring's example on a cluster runs as written."""
    example = learn.__doc__.split("::\n", 1)[1]
    lines = [line[4:] for line in example.splitlines() if line.strip()]
    exec(compile("\n".join(lines), "ffcode.learn's example", "exec"), {"__name__": "example"})


def test_defaults():
    """k leaves a worker to spare; compfs for mds and cfs for lcc; 16 and 8 fractional bits;
    4 local workers when no cluster is chosen."""
    model = learn.settings(LogisticRegression(), N)
    assert (model.k, model.scheme, model.precision) == (N - 1, "compfs", 16)
    lcc = learn.settings(LogisticRegression(coding="lcc"), N)
    assert (lcc.k, lcc.scheme, lcc.precision) == (2, "cfs", 8)     # R = 5
    assert learn.settings(LogisticRegression(coding="lcc"), 3).k == 1  # R = 3: none spare
    assert LinearRegression().get_params()["n_workers"] == 4
