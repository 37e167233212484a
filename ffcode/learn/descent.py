"""Gradient descent on any model whose loss is a sum over samples, each step's gradient
summed by a gradient code (ffcode.gradcoding) on a cluster's workers, exactly.

You give the gradient of the loss over some samples as a plain numpy function,
``gradient(params, *arrays)`` (params: the model's flat float64 parameters; arrays: one
partition's arrays, features and labels), importable by the workers. The data is
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

INTEGER, REAL = ord("i"), ord("f")      # a partition's array kinds, as workers are told


def least_squares(params: np.ndarray, X: np.ndarray, y: np.ndarray,
                  weights: Optional[np.ndarray] = None) -> np.ndarray:
    """The gradient of sum weights (X w - y)**2 / 2: X^T (weights (X w - y)) (an example of
    a gradient, and a partition's part of LinearRegression's with coding="gradient")."""
    r = X @ params - y
    return X.T @ (r if weights is None else weights * r)


def fixed_point_gradient(F: PrimeField, *arrays: np.ndarray) -> np.ndarray:
    """What a worker runs for a partition: ``arrays`` are the partition's (as
    ``worker_partitions`` ships them), then the parameters in fixed point, the scale, the
    gradient's import path (bytes) and the partition's array kinds; the partition's
    gradient at the rounded parameters, back in fixed point at that scale."""
    *data, params, scales, path, kinds = arrays
    if len(kinds) != len(data):
        raise ValueError(f"{len(kinds)} array kinds for a partition of {len(data)} arrays")
    data = [np.ascontiguousarray(a).view(np.float64) if kind == REAL else a
            for a, kind in zip(data, kinds)]
    scale = float(int(scales[0]))
    from ffcode.runtime.shared.local import load_function    # on a worker: loaded there
    gradient = load_function(bytes(np.asarray(path, np.uint8)).decode())
    real = F.to_real(params, scale)
    value = np.asarray(gradient(real, *data), float).reshape(-1)
    if value.shape != real.shape:
        raise ValueError(f"the gradient has {value.size} values for {real.size} parameters")
    return F.from_real(value, scale)


def worker_partitions(code: GradientCode, partitions: Sequence[Sequence[Any]]) -> tuple:
    """(the code's partitions as the workers hold them, their arrays' kinds): integer
    arrays travel as they are; real ones as float64, in their bits (an int64 view that
    ``fixed_point_gradient`` reads back exactly). Every partition must have arrays of the
    same kinds, in the same order."""
    shipped, kinds = [], None
    for j, part in enumerate(code.partition_arrays(partitions)):
        arrays, these = _shipped_partition(j, part)
        if kinds is not None and not np.array_equal(these, kinds):
            raise InvalidParameterError(f"Partition {j} has arrays of other kinds than "
                                        "partition 0's (integer or real, in order): every "
                                        "partition's arrays are the gradient's same "
                                        "arguments.")
        shipped.append(arrays)
        kinds = these
    return shipped, kinds


def _shipped_partition(j: int, part: Sequence[Any]) -> tuple:
    """(partition j's arrays as a worker holds them, their kinds)."""
    arrays, kinds = [], []
    for a in map(np.asarray, part):
        if a.dtype.kind not in "iuf":
            raise InvalidParameterError(f"Partition {j} has an array of {a.dtype}: the "
                                        "workers take integer or real arrays.")
        real = a.dtype.kind == "f"
        kinds.append(REAL if real else INTEGER)
        arrays.append(np.ascontiguousarray(a, np.float64).view(np.int64) if real else a)
    return tuple(arrays), np.array(kinds, np.uint8)


def shipped_parameters(F: PrimeField, params: np.ndarray, scale: int) -> np.ndarray:
    """The parameters as the workers get them: rounded to the fixed point at ``scale``."""
    return F.from_real(np.asarray(params, float), scale)


def gradient_job(F: PrimeField, data: Any, gradient: Union[Callable, str],
                 params: np.ndarray, scale: int, kinds: np.ndarray,
                 partial: bool = True) -> Any:
    """The runtime's job (a ``GradientStep``) of the sum of every partition's rounded
    gradient at ``params``: ``data`` is the resident partitions (``Cluster.load``), or a
    tuple (the code, the partitions as ``worker_partitions`` ships them)."""
    from ffcode.runtime import GradientStep      # the runtime loads only when a fit runs
    code, *partitions = data if isinstance(data, tuple) else (data,)
    return GradientStep(code, fixed_point_gradient, *partitions,
                        shipped_parameters(F, params, scale), np.array([scale], np.int64),
                        _path_bytes(gradient), kinds, partial=partial, bound="auto")


def local_sum(F: PrimeField, gradient: Union[Callable, str], params: np.ndarray,
              partitions: Sequence[Sequence[Any]], scale: int) -> np.ndarray:
    """The sum of every partition's rounded gradient, computed here: what any coded step
    decodes, as real numbers."""
    rounded = shipped_parameters(F, params, scale)
    path = _path_bytes(gradient)
    parts = [fixed_point_gradient(F, *arrays, rounded, np.array([scale]), path, kinds)
             for arrays, kinds in (_shipped_partition(j, part)
                                   for j, part in enumerate(partitions))]
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
            timeout: float = 600.0, callback: Optional[Callable[[int, np.ndarray], Any]] = None,
            wait_for_stops: bool = True) -> Descent:
    """``steps`` steps of params -= rate * (the sum over partitions of ``gradient``), each sum
    decoded from ``code``'s workers on ``cluster`` (``partial``: at full speed; faults
    injected every step). The partitions are loaded on the workers once (a step ships the
    parameters only) and unloaded at the end; on a cluster of relays the code's workers
    are the relays, each step ships the partitions, and each relay's group sums a
    partition's gradient over its cut into the group's parts (so its rounding is the
    parts'). ``partitions``: the code's partitions, a
    tuple of arrays each (the gradient's arguments after the parameters), integer or
    real (the workers get reals exactly, as float64). ``scale``: the fixed point's, a
    power of two; the parameters and every partition's gradient must stay within
    ``(p - 1) / 2 / partitions / scale`` in magnitude (a step that passes fails, naming
    the bound). ``callback(step, params)`` is called after each step.
    ``wait_for_stops=False`` returns each step the moment its sum is decoded, without
    waiting for the stopped workers' acknowledgements (see ffcode.Options): sooner when
    stragglers are starved of CPU, and a worker that died is then found by the next
    step."""
    checks.instance(code, "code", GradientCode, "an ffcode.GradientCode")
    F = code.F
    steps = checks.integer(steps, "steps", low=0)
    rate = checks.positive(rate, "rate")
    scale = checks.integer(scale, "scale", low=1)
    if scale & (scale - 1):
        raise InvalidParameterError(f"Argument 'scale' must be a power of two, not {scale}.")
    params = np.array(params, dtype=float).reshape(-1)
    parts, kinds = worker_partitions(code, partitions)
    fit = Descent(params)
    shipped_parameters(F, params, scale)        # parameters that cannot be shipped: now
    relays = bool(getattr(cluster, "groups", ()))
    # the partitions stay on their workers; a cluster of relays ships them every step
    data = (code, parts) if relays else cluster.load(code, parts)
    try:
        for step in range(steps):
            start = time.perf_counter()
            job = gradient_job(F, data, gradient, fit.params, scale, kinds, partial)
            total, report = cluster.run(job, **({} if faults is None else {"faults": faults}),
                                        timeout=timeout, wait_for_stops=wait_for_stops)
            fit.params = fit.params - rate * F.to_real(total, scale)
            fit.seconds.append(time.perf_counter() - start)
            fit.reports.append(report)
            if callback is not None:
                callback(step, fit.params)
    finally:
        if not relays and cluster.holds(data):
            cluster.unload(data)
    return fit


def _path_bytes(gradient: Union[Callable, str]) -> np.ndarray:
    path = gradient if isinstance(gradient, str) else functions.path_of(gradient)
    return np.frombuffer(path.encode(), np.uint8).copy()


__all__ = ["Descent", "descend", "fixed_point_gradient", "gradient_job", "least_squares",
           "local_sum", "shipped_parameters", "worker_partitions"]
