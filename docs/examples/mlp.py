"""A small numpy MLP (64 pixels, 16 tanh units, 10 classes) and the gradient of its summed
cross-entropy, for ffcode.learn.descend: the workers import it by its path."""
from __future__ import annotations

import numpy as np

SHAPES = [(64, 16), (16,), (16, 10), (10,)]
SIZE = sum(int(np.prod(shape)) for shape in SHAPES)


def layers(params: np.ndarray) -> list:
    out, at = [], 0
    for shape in SHAPES:
        size = int(np.prod(shape))
        out.append(params[at:at + size].reshape(shape))
        at += size
    return out


def predict(params: np.ndarray, X: np.ndarray) -> np.ndarray:
    W1, b1, W2, b2 = layers(params)
    return (np.tanh(X / 16.0 @ W1 + b1) @ W2 + b2).argmax(axis=1)


def gradient(params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of the cross-entropy summed over the samples (pixels 0..16)."""
    W1, b1, W2, b2 = layers(params)
    x = X / 16.0
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    dh = (p @ W2.T) * (1 - h * h)
    return np.concatenate([(x.T @ dh).ravel(), dh.sum(0), (h.T @ p).ravel(), p.sum(0)])
