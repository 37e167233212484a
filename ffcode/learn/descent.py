"""Gradient descent on any model whose loss is a sum over samples, each step's gradient
summed by a gradient code (ffcode.gradcoding) on a cluster's workers, exactly.

You give the gradient of the loss over some samples as a plain numpy function,
``gradient(params, *arrays)`` (params: the model's flat float64 parameters; arrays: one
partition's integer arrays, features and labels), importable by the workers. The data is
cut into the code's partitions; each step the workers compute their partitions' gradients
at the rounded parameters, in signed fixed point at ``scale`` (``F.from_real``), and send
coded sums; the master decodes the exact sum of the rounded gradients from whichever
workers answer and takes a step. Rounding happens on each partition's gradient, the sum is
exact and refused where it could wrap around (``GradientStep(bound="auto")``), so a fit is
the same, bit for bit, whichever workers straggle or are lost, as an uncoded one
(``local_sum`` is that sum, computed here).

>>> import numpy as np
>>> from ffcode import GF
>>> F = GF(2**61 - 1)
>>> parts = [(np.array([[1, 2], [3, 4]]), np.array([1, 0]))]
>>> local_sum(F, "ffcode.learn.descent:least_squares", np.zeros(2), parts, 2**20).tolist()
[-1.0, -2.0]
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ffcode import checks, functions
from ffcode.errors import InvalidParameterError
from ffcode.field import PrimeField
from ffcode.gradcoding import GradientCode


def least_squares(params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of sum (X w - y)**2 / 2: X^T (X w - y) (an example of a gradient)."""
    return X.T @ (X @ params - y)


def fixed_point_gradient(F: PrimeField, *arrays: np.ndarray) -> np.ndarray:
    """What a worker runs for a partition: ``arrays`` are the partition's, then the
    parameters in fixed point, the scale, and the gradient's import path (bytes); the
    partition's gradient at the rounded parameters, back in fixed point at that scale."""
    *data, params, scales, path = arrays
    scale = float(int(scales[0]))
    gradient = functions.load(bytes(np.asarray(path, np.uint8)).decode())
    real = F.to_real(params, scale)
    value = np.asarray(gradient(real, *data), float).reshape(-1)
    if value.shape != real.shape:
        raise ValueError(f"the gradient has {value.size} values for {real.size} parameters")
    return F.from_real(value, scale)


def local_sum(F: PrimeField, gradient: Union[Callable, str], params: np.ndarray,
              partitions: Sequence[Sequence[np.ndarray]], scale: int) -> np.ndarray:
    """The sum of every partition's rounded gradient, computed here: what any coded step
    decodes, as real numbers."""
    rounded = _shipped(F, params, scale)
    path = _path_bytes(gradient)
    parts = [fixed_point_gradient(F, *part, rounded, np.array([scale]), path)
             for part in partitions]
    total = F.combine(np.ones((1, len(parts)), F.dtype), parts)[0]
    return F.to_real(total, scale)


@dataclass
class Descent:
    """A fit's outcome: ``params`` (float64, flat) and per step its wall ``seconds`` and the
    runtime's ``reports``."""
    params: np.ndarray
    seconds: list = field(default_factory=list)
    reports: list = field(default_factory=list)


def descend(cluster: Any, code: GradientCode, gradient: Union[Callable, str],
            params: Any, partitions: Sequence[Sequence[Any]], *, steps: int, rate: float,
            scale: int = 2**20, partial: bool = True, faults: Any = None,
            timeout: float = 600.0, callback: Optional[Callable[[int, np.ndarray], Any]] = None
            ) -> Descent:
    """``steps`` steps of params -= rate * (the sum over partitions of ``gradient``), each sum
    decoded from ``code``'s workers on ``cluster`` (``partial``: at full speed; faults
    injected every step). The partitions are loaded on the workers once (a step ships the
    parameters only) and unloaded at the end. ``partitions``: the code's partitions, a
    tuple of integer arrays each (the gradient's arguments after the parameters).
    ``scale``: the fixed point's, a power of two; the parameters and every partition's
    gradient must stay within ``(p - 1) / 2 / partitions / scale`` in magnitude (a step
    that passes fails, naming the bound). ``callback(step, params)`` is called after each
    step."""
    from ffcode.runtime import GradientStep      # the runtime loads only when a fit runs

    checks.instance(code, "code", GradientCode, "an ffcode.GradientCode")
    F = code.F
    steps = checks.integer(steps, "steps", low=0)
    rate = checks.positive(rate, "rate")
    scale = checks.integer(scale, "scale", low=1)
    if scale & (scale - 1):
        raise InvalidParameterError(f"Argument 'scale' must be a power of two, not {scale}.")
    params = np.array(params, dtype=float).reshape(-1)
    parts = code.partition_arrays(partitions)
    for j, part in enumerate(parts):
        if any(a.dtype.kind not in "iu" for a in part):
            raise InvalidParameterError(f"Partition {j} has an array that is not of integers: "
                                        "the workers take integer arrays (fixed point for "
                                        "reals).")
    path = _path_bytes(gradient)
    fit = Descent(params)
    _shipped(F, params, scale)                  # parameters that cannot be shipped: now
    data = cluster.load(code, parts)            # the partitions stay on their workers
    try:
        for step in range(steps):
            start = time.perf_counter()
            job = GradientStep(data, fixed_point_gradient, _shipped(F, fit.params, scale),
                               np.array([scale], np.int64), path, partial=partial,
                               bound="auto")
            total, report = cluster.run(job, **({} if faults is None else {"faults": faults}),
                                        timeout=timeout)
            fit.params = fit.params - rate * F.to_real(total, scale)
            fit.seconds.append(time.perf_counter() - start)
            fit.reports.append(report)
            if callback is not None:
                callback(step, fit.params)
    finally:
        if cluster.holds(data):
            cluster.unload(data)
    return fit


def _shipped(F: PrimeField, params: np.ndarray, scale: int) -> np.ndarray:
    """The parameters as the workers get them: rounded to the fixed point."""
    return F.from_real(np.asarray(params, float), scale)


def _path_bytes(gradient: Union[Callable, str]) -> np.ndarray:
    path = gradient if isinstance(gradient, str) else functions.path_of(gradient)
    return np.frombuffer(path.encode(), np.uint8).copy()


__all__ = ["Descent", "descend", "fixed_point_gradient", "least_squares", "local_sum"]
