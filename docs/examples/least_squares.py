"""A partition's least-squares gradient, exactly over GF(p): X^T (X w - y) with X, y and w
in signed fixed point (``PrimeField.from_real``), for gradient coding's workers."""
from __future__ import annotations

import numpy as np

from ffcode import PrimeField


def gradient(F: PrimeField, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    residual = F.sub(F.matmul(X, w), y)             # X w - y, at the scale of y
    return F.matmul(residual.reshape(1, -1), X).reshape(-1)
