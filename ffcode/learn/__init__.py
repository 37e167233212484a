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
s = 2**precision, standardized features of largest magnitude ``|x|`` (the intercept's 1
included), d + 1 columns, n samples in k blocks of n_k rows, weights ``|w|``, residuals ``|r|``
and the polynomial's real coefficients c_i, the bounds are, in reals times their scale:

- mds: ``(d + 1) |x| |w| s**2`` for z = X w, and ``n |x| |r| s**2`` for g = X^T r;
- lcc: ``n_k |x| (|c_0| + |c_1| Z + ... + |c_r| Z**r) s**(2r + 2)``, ``Z = (d + 1) |x| |w|``.

Each must stay below (p-1)/2, about 2**60 at p = 2**61 - 1. The defaults (precision 16 for
mds, 8 for lcc, r = 1) leave room for millions of samples with mds and about a hundred
thousand with lcc at ``|x|`` and ``|w|`` around 10 and 30 features; each degree more of the
sigmoid's polynomial multiplies the lcc bound by about s**2 Z, so a larger r needs a
coarser precision.

>>> import numpy as np
>>> from ffcode import GF
>>> from ffcode.learn import gradient_terms, sigmoid_polynomial
>>> F = GF(2**61 - 1)
>>> X, w, C = F.asarray([[1, 2], [3, -1]]), F.asarray([2, 1]), F.asarray([[1], [3]])
>>> F.to_signed(gradient_terms(F, X, w, *C)).tolist()    # X^T (1 + 3 X w)
[61, 10]
>>> np.round(sigmoid_polynomial(1), 4).tolist()          # sigmoid ~ 0.5 + c z on [-4, 4]
[0.5, 0.1532]

Multi-task learning (``ffcode.learn.multitask``): ``MultiTaskLogisticRegression`` and
``MultiTaskLinearRegression`` train T related tasks together. Tasks on shared features
(one-vs-rest over the classes of y, or Y with a column per task) make each step's T
gradients one coded product, Z = X W and G = X^T R for the matrix W of the tasks' weights
(``gradient_terms`` takes a matrix W too, and the bounds above hold for any number of
tasks); tasks with their own data sets submit their jobs together every step. A
``coupling`` penalty pulls each task's weights towards the tasks' mean.

Any model whose loss is a sum over samples (``ffcode.learn.descent``): ``descend`` runs
gradient descent from a plain numpy gradient function, each step's sum over the data's
partitions decoded from a gradient code's workers (ffcode.gradcoding), stragglers' partial
work included, the same bit for bit whoever straggles.

The estimators are scikit-learn estimators (Pipeline, GridSearchCV, clone, pickle): the
constructor only stores hyperparameters, and a live cluster is never one of them. A fit
runs its jobs on the cluster it is given (``fit(X, y, cluster=...)``), else on the one of
the innermost ``using(cluster)`` block, else on a local Cluster of ``n_workers`` workers
that it opens and closes; a fitted model predicts, pickles and clones without any.

>>> from sklearn.base import clone
>>> from ffcode.learn import LogisticRegression, active_cluster
>>> model = LogisticRegression(coding="lcc", iterations=30)
>>> clone(model).get_params()["iterations"], active_cluster() is None
(30, True)

Training on a cluster (a sketch; the tests run it)::

    import numpy as np
    import ffcode
    from ffcode.learn import LogisticRegression, using

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    y = (X @ [1.0, -2.0, 0.5, 0.0, 1.0] > 0).astype(int)
    model = LogisticRegression(coding="lcc", iterations=30, seed=1)
    with ffcode.Cluster(n_workers=4) as cluster, using(cluster):
        model.fit(X, y)
    assert model.score(X, y) > 0.9 and len(model.history_) == 30
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:   # what __getattr__ loads at run time, as type checkers see it
    from ffcode.learn.estimators import (LinearRegression, LogisticRegression, Settings,
                                         active_cluster, expected_failed_checks, settings,
                                         using)
    from ffcode.learn.gradients import Step, gradient_terms, sigmoid_polynomial
    from ffcode.learn.multitask import MultiTaskLinearRegression, MultiTaskLogisticRegression
    from ffcode.learn.descent import Descent, descend

# Each name loads its module only when asked for: a worker that runs gradient_terms imports
# ffcode.learn.gradients, and through this face, without scikit-learn and SciPy.
_MODULES = {"LinearRegression": "estimators", "LogisticRegression": "estimators",
            "Settings": "estimators", "active_cluster": "estimators",
            "expected_failed_checks": "estimators", "settings": "estimators",
            "using": "estimators", "Step": "gradients", "gradient_terms": "gradients",
            "sigmoid_polynomial": "gradients", "MultiTaskLinearRegression": "multitask",
            "MultiTaskLogisticRegression": "multitask", "descend": "descent",
            "Descent": "descent"}

# In the order of the API reference.
__all__ = ["LinearRegression", "LogisticRegression", "MultiTaskLogisticRegression",
           "MultiTaskLinearRegression", "using", "active_cluster", "settings", "Settings",
           "expected_failed_checks", "Step", "gradient_terms", "sigmoid_polynomial", "descend",
           "Descent"]


def __getattr__(name: str) -> object:
    if name in _MODULES:
        return getattr(_importlib.import_module(f"ffcode.learn.{_MODULES[name]}"), name)
    raise AttributeError(f"module 'ffcode.learn' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_MODULES))
