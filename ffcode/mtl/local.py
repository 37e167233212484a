"""Users' local updates for training through relays (``ffcode.runtime.train_multitask``):
one gradient step of a task's loss on its own data, with the tasks coupled by a pull of
each task's parameters towards their mean, the objective being the mean over the tasks
of loss_t(w_t) + (coupling / 2) ||w_t - w̄||². Each takes (W, user, X, y, rate, coupling):
W every task's parameters (N, d), X the user's samples (n, d), y its targets, rate and
coupling one number each (arrays of one, as they travel); it returns the user's new
parameters.

>>> import numpy as np
>>> W = np.array([[0.0, 0.0], [2.0, 2.0]])
>>> X, y = np.eye(2), np.array([1.0, 1.0])
>>> least_squares(W, 0, X, y, [1.0], [0.0]).tolist()        # w - (X^T (X w - y)) / n
[0.5, 0.5]
>>> least_squares(W, 0, X, y, [1.0], [1.0]).tolist()        # also pulled to the mean, 1
[1.5, 1.5]
"""
from __future__ import annotations

from typing import Any

import numpy as np


def least_squares(W: np.ndarray, user: int, X: np.ndarray, y: np.ndarray, rate: Any,
                  coupling: Any) -> np.ndarray:
    """A step of the user's mean squared error (halved), pulled towards the mean."""
    w = W[user]
    return _step(W, w, X.T @ (X @ w - y) / len(y), rate, coupling)


def logistic(W: np.ndarray, user: int, X: np.ndarray, y: np.ndarray, rate: Any,
             coupling: Any) -> np.ndarray:
    """A step of the user's mean logistic loss (y in {0, 1}), pulled towards the mean."""
    w = W[user]
    z = np.clip(X @ w, -500.0, 500.0)
    return _step(W, w, X.T @ (1.0 / (1.0 + np.exp(-z)) - y) / len(y), rate, coupling)


def _step(W: np.ndarray, w: np.ndarray, gradient: np.ndarray, rate: Any,
          coupling: Any) -> np.ndarray:
    pull = float(np.asarray(coupling).reshape(-1)[0]) * (w - W.mean(axis=0))
    return w - float(np.asarray(rate).reshape(-1)[0]) * (gradient + pull)
