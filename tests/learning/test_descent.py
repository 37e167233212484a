"""Gradient descent on any model through a gradient code (ffcode.learn.descent): the
guide's small numpy MLP (docs/examples/mlp.py) on load_digits, trained with two of six
workers lost every step, equals bit for bit the same fit summed here without coding; bad
input refused with clear errors."""
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ffcode
from ffcode import CyclicRepetition, Faults, FractionalRepetition
from ffcode.errors import InvalidParameterError, WorkerError
from ffcode.learn.descent import descend, least_squares, local_sum

F = ffcode.GF(2**61 - 1)
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples"
if str(EXAMPLES) not in sys.path:           # the guide's MLP (workers get this sys.path too)
    sys.path.insert(0, str(EXAMPLES))
import mlp  # noqa: E402


def wrong_size(params, X, y):
    return np.zeros(3)


def digits(parts):
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X, y = X.astype(np.int64)[:600], y.astype(np.int64)[:600]
    return [(Xp, yp) for Xp, yp in zip(np.array_split(X, parts), np.array_split(y, parts))]


def accuracy(params, partitions):
    X = np.vstack([X for X, _ in partitions])
    y = np.concatenate([y for _, y in partitions])
    return float((mlp.predict(params, X) == y).mean())


@pytest.mark.bounded(120)
def test_an_mlp_fit_with_lost_workers_equals_the_uncoded_fit_bit_for_bit(bounded):
    code = CyclicRepetition(F, 6, 2)
    partitions = digits(6)
    start = np.random.default_rng(0).normal(scale=0.1, size=mlp.SIZE)
    steps, rate = 20, 2e-3
    with ffcode.Cluster(6) as cluster:
        fit = descend(cluster, code, mlp.gradient, start, partitions, steps=steps, rate=rate,
                      faults=Faults(crash_after={1: 0, 4: 0}), timeout=60)
    plain = start.copy()
    for _ in range(steps):
        plain = plain - rate * local_sum(F, mlp.gradient, plain, partitions, 2**20)
    assert fit.params.dtype == np.float64 and np.array_equal(fit.params, plain)
    assert len(fit.reports) == steps and all(
        not r.workers[1].packets and not r.workers[4].packets for r in fit.reports)
    assert accuracy(fit.params, partitions) > 0.8 > accuracy(start, partitions) + 0.5


@pytest.mark.bounded(60)
def test_least_squares_in_the_original_protocol():
    """The built-in example gradient, whole messages only (partial=False), fractional
    repetition: the same steps as summed here."""
    code = FractionalRepetition(F, 4, 1)
    rng = np.random.default_rng(4)
    w = np.array([1.5, -2.0, 0.25])
    partitions = []
    for _ in range(4):
        X = rng.integers(-5, 6, size=(30, 3))
        partitions.append((X, X @ np.array([3, -1, 2])))
    with ffcode.Cluster(4) as cluster:
        fit = descend(cluster, code, least_squares, w, partitions, steps=3, rate=1e-3,
                      partial=False)
    plain = w
    for _ in range(3):
        plain = plain - 1e-3 * local_sum(F, least_squares, plain, partitions, 2**20)
    assert np.array_equal(fit.params, plain)


@pytest.mark.bounded(60)
def test_real_partitions_reach_the_workers_exactly():
    """Float partitions travel in their bits: the fit equals the sum computed here, whose
    gradients see the very float64 values given (not a fixed point of them); steps that
    return before their stops are acknowledged, a worker crashing in each, change
    nothing."""
    code = CyclicRepetition(F, 3, 1)
    rng = np.random.default_rng(9)
    partitions = [(rng.normal(size=(20, 3)) * 1e-3, rng.normal(size=20).astype(np.float32))
                  for _ in range(3)]
    w = np.array([0.5, -1.0, 2.0])
    with ffcode.Cluster(3) as cluster:
        fit = descend(cluster, code, least_squares, w, partitions, steps=2, rate=0.1,
                      scale=2**40, faults=Faults(crash_after={0: 0}), wait_for_stops=False)
    plain = w
    for _ in range(2):
        plain = plain - 0.1 * local_sum(F, least_squares, plain, partitions, 2**40)
    assert np.array_equal(fit.params, plain)
    X = np.vstack([X for X, _ in partitions])       # reals, not a fixed point of them
    y = np.concatenate([y for _, y in partitions]).astype(float)
    exact = w
    for _ in range(2):
        exact = exact - 0.1 * least_squares(exact, X, y)
    assert 0 < np.abs(plain - exact).max() < 1e-9


SCRIPT = textwrap.dedent("""
    import numpy as np, ffcode
    from ffcode.learn.descent import descend, local_sum

    def gradient(params, X, y):         # defined in the script the master runs
        return X.T @ (X @ params - y)

    if __name__ == "__main__":
        F = ffcode.GF(2**61 - 1)
        rng = np.random.default_rng(0)
        parts = [(rng.normal(size=(10, 2)), rng.normal(size=10)) for _ in range(3)]
        with ffcode.Cluster(3) as cluster:
            fit = descend(cluster, ffcode.CyclicRepetition(F, 3, 1), gradient, np.zeros(2),
                          parts, steps=1, rate=0.01)
        print(np.array_equal(fit.params, -0.01 * local_sum(F, gradient, np.zeros(2), parts,
                                                           2**20)))
""")


@pytest.mark.bounded(90)
def test_a_gradient_defined_in_the_masters_script(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=80)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@pytest.mark.bounded(60)
def test_bad_input_is_refused(bounded):
    code = CyclicRepetition(F, 3, 1)
    parts = [(np.ones((2, 2), np.int64), np.ones(2, np.int64))] * 3
    with pytest.raises(InvalidParameterError, match="array of complex128"):
        descend(None, code, least_squares, np.zeros(2),
                [(np.ones((2, 2), complex), np.ones(2))] * 3, steps=1, rate=0.1)
    mixed = parts[:2] + [(np.ones((2, 2)), np.ones(2, np.int64))]
    with pytest.raises(InvalidParameterError, match="Partition 2 has arrays of other kinds"):
        descend(None, code, least_squares, np.zeros(2), mixed, steps=1, rate=0.1)
    with pytest.raises(InvalidParameterError, match="power of two"):
        descend(None, code, least_squares, np.zeros(2), parts, steps=1, rate=0.1, scale=1000)
    with pytest.raises(InvalidParameterError, match="rate"):
        descend(None, code, least_squares, np.zeros(2), parts, steps=1, rate=0)
    with pytest.raises(InvalidParameterError, match="wrap around"):
        descend(None, code, least_squares, np.array([2.0**62]), parts, steps=1, rate=0.1)
    with ffcode.Cluster(3) as cluster:
        with pytest.raises(WorkerError, match="3 values for 2 parameters"):
            descend(cluster, code, wrong_size, np.zeros(2), parts, steps=1, rate=0.1,
                    timeout=20)
        with pytest.raises(WorkerError, match="beyond the bound"):
            descend(cluster, code, least_squares, np.full(2, 2.0**37), parts, steps=1,
                    rate=0.1, timeout=20)
