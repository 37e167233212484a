"""Gradient coding simulated (no processes, no sockets): when the master can read the exact
sum under each protocol, from the time every worker spends on each of its partitions.

Worker i processes its partitions in the code's order, its u-th taking ``times[i, u]``
seconds (a draw of ``partition_time``, times its ``slowdown``, plus its ``pause``: the
runtime's fault model), and sends as the protocol says; the master is done

  uncoded   when every worker has done its one partition of the same data cut into n
            (each partition as large as the code's: the same draws, one a worker)
  original  when the whole messages of the workers done with all their partitions give
            the sum (any n - s of them do)
  partial   when the partitions the workers have done cover every one (a message after
            each: a slow worker's partial work counts)

Links and the master are free here: the messages are one model's size each, small beside
the partitions' work.

>>> from ffcode import GF, CyclicRepetition
>>> code = CyclicRepetition(GF(65521), 4, 1)
>>> times = np.array([[1.0, 1.0], [1.0, 1.0], [3.0, 3.0], [3.0, 3.0]])
>>> {p: finish(code, times, p) for p in PROTOCOLS}     # workers 2 and 3 three times slower
{'uncoded': 3.0, 'original': 6.0, 'partial': 3.0}
>>> model = GradientModel(code, ShiftedExponential(1.0, 0.0), slowdown={3: 4.0})
>>> compare(model)
{'uncoded': 4.0, 'original': 2.0, 'partial': 2.0}
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from ffcode import checks
from ffcode.errors import InvalidParameterError
from ffcode.gradcoding import GradientCode
from ffcode.sim import Distribution, ShiftedExponential

PROTOCOLS = ("uncoded", "original", "partial")


def finish(code: GradientCode, times: np.ndarray, protocol: str) -> float:
    """Seconds until the master can read the sum (inf if it never can): ``times[i, u]`` the
    seconds worker i spends on its u-th partition (inf: never done; columns past its load
    are not read; uncoded reads column 0 only)."""
    checks.choice(protocol, "protocol", PROTOCOLS)
    loads = [len(order) for order in code.assignment]
    times = np.asarray(times, float)
    if times.ndim != 2 or times.shape[0] != code.n_workers or times.shape[1] < max(loads):
        raise InvalidParameterError(f"Argument 'times' must have a row per worker and a column "
                                    f"per partition of the most loaded, ({code.n_workers}, "
                                    f"{max(loads)}), not {times.shape}.")
    if np.isnan(times).any() or (times < 0).any():
        raise InvalidParameterError("Argument 'times' must hold seconds >= 0 (inf: never).")
    return _FINISH[protocol](code, times, loads)


def _uncoded(code: GradientCode, times: np.ndarray, loads: list) -> float:
    return float(times[:, 0].max())


def _original(code: GradientCode, times: np.ndarray, loads: list) -> float:
    done = [float(np.sum(times[i, :load])) for i, load in enumerate(loads)]
    finished: list = []
    for i in np.argsort(done, kind="stable"):
        if not np.isfinite(done[i]):
            break
        finished.append(int(i))
        if code.tolerates(finished):
            return done[i]
    return float("inf")


def _partial(code: GradientCode, times: np.ndarray, loads: list) -> float:
    events = sorted((t, i, u) for i, load in enumerate(loads)
                    for u, t in enumerate(np.cumsum(times[i, :load])) if np.isfinite(t))
    covered: set = set()
    for t, i, u in events:
        covered.add(code.assignment[i][u])
        if len(covered) == code.partitions:
            return float(t)
    return float("inf")


_FINISH = {"uncoded": _uncoded, "original": _original, "partial": _partial}


@dataclass(frozen=True)
class GradientModel:
    """A simulated step of ``code``: each partition's time drawn from ``partition_time``
    (one draw per worker and place in its order), times the worker's ``slowdown`` ({worker:
    factor}, the rest 1), plus ``pause`` ({worker: seconds} after each partition); the
    median of ``runs`` draws from ``seed``."""
    code: GradientCode
    partition_time: Distribution
    slowdown: dict = field(default_factory=dict)
    pause: dict = field(default_factory=dict)
    runs: int = 101
    seed: int = 0

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One run's times: (n_workers, the largest load)."""
        n = self.code.n_workers
        width = max(len(order) for order in self.code.assignment)
        times = np.asarray(self.partition_time.draw(rng, (n, width)), float)
        for worker, factor in self.slowdown.items():
            times[self._worker(worker)] *= checks.positive(factor, "slowdown")
        for worker, seconds in self.pause.items():
            times[self._worker(worker)] += checks.non_negative(seconds, "pause")
        return times

    def _worker(self, worker: Union[int, np.integer]) -> int:
        return checks.integer(worker, "worker", low=0, high=self.code.n_workers - 1)


def simulate(model: GradientModel, protocol: str) -> float:
    """The median seconds until the master reads the sum, over the model's runs."""
    rng = np.random.default_rng(model.seed)
    runs = checks.integer(model.runs, "runs", low=1)
    return statistics.median(finish(model.code, model.draw(rng), protocol)
                             for _ in range(runs))


def compare(model: GradientModel) -> dict[str, float]:
    """Every protocol's median time on the same draws."""
    return {protocol: simulate(model, protocol) for protocol in PROTOCOLS}


__all__ = ["PROTOCOLS", "GradientModel", "ShiftedExponential", "compare", "finish",
           "simulate"]
