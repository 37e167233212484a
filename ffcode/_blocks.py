"""Splitting arrays into the row and column blocks that codes and pieces work on."""
import math

import numpy as np


def rows_of(stacked: np.ndarray) -> list:
    """The stacked arrays as a list of arrays (0-d arrays too, never numpy scalars)."""
    return [stacked[i, ...] for i in range(stacked.shape[0])]


def split_rows(x: np.ndarray, nblocks: int) -> np.ndarray:
    """x (rows, ...) as nblocks row blocks stacked: (nblocks, ceil(rows / nblocks), ...),
    zero-padded at the end (a view, no copy, when the rows already split evenly)."""
    block = math.ceil(x.shape[0] / nblocks)
    if block * nblocks != x.shape[0]:
        padded = np.zeros((block * nblocks,) + x.shape[1:], x.dtype)
        padded[:x.shape[0]] = x
        x = padded
    return x.reshape((nblocks, block) + x.shape[1:])


def split_columns(x: np.ndarray, nblocks: int) -> np.ndarray:
    """x (rows, cols) as nblocks zero-padded column blocks stacked: (nblocks, rows,
    ceil(cols / nblocks))."""
    return np.ascontiguousarray(split_rows(x.T, nblocks).transpose(0, 2, 1))
