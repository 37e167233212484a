"""A worker of a learning job imports only what it runs: the functions of a fit's codes load
without scikit-learn or SciPy, so a first job does not wait for them in every worker."""
import subprocess
import sys

import numpy as np
import pytest

from ffcode.functions import path_of
from ffcode.learn import (LinearRegression, LogisticRegression, MultiTaskLinearRegression,
                          MultiTaskLogisticRegression)

from helpers import shared_cluster

cluster = shared_cluster(3)

# What a worker process does with a task: import the worker module, then load the task's
# function by its path (ffcode.functions.load), as the worker's operation() does.
WORKER = """
import sys
import ffcode.runtime.worker.process
from ffcode.functions import load
for path in sys.argv[1:]:
    load(path)
print(sorted(name for name in ("sklearn", "scipy") if name in sys.modules))
"""


@pytest.mark.bounded(120)
def test_worker_imports_neither_sklearn_nor_scipy(bounded, cluster, tmp_path):
    """The functions of every estimator's codes (mds and lcc, one task and several) are
    loaded in a fresh interpreter as a worker loads them: neither scikit-learn nor SciPy
    is imported."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = X @ [1.0, -1.0, 0.5]
    labels, classes = (y > 0).astype(int), np.digitize(y, [-0.5, 0.5])
    paths = set()
    for coding in ("mds", "lcc"):
        for Model, target in [(LinearRegression, y), (LogisticRegression, labels),
                              (MultiTaskLinearRegression, np.c_[y, -y]),
                              (MultiTaskLogisticRegression, classes)]:
            model = Model(coding=coding, iterations=1).fit(X, target, cluster=cluster)
            paths.update(path_of(code.function) for code in model.codes_)
    assert "ffcode.learn.gradients:gradient_terms" in paths
    # run elsewhere than the source tree, whose ffcode/ (no kernels) would shadow the
    # installed package, as it does for a worker
    done = subprocess.run([sys.executable, "-c", WORKER, *sorted(paths)], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[]"
