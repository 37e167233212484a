"""Benchmark multi-task learning (ffcode.learn) on local workers: the ten one-vs-rest tasks
of scikit-learn's digits trained as one MultiTaskLogisticRegression fit (each step's ten
gradients one coded product: two MDS-coded jobs per step for all the tasks) against ten
single-task LogisticRegression fits one after another (two jobs per step per task), with
the same settings on the same cluster.

One ffcode.Cluster of N = 5 local worker processes (--workers), kept open for the whole
run, no injected faults; digits (1797 8x8 images, 64 pixels) split 75/25, stratified, by
--seed; coding="mds" (--coding lcc: one Lagrange-coded job per step, private against a
worker), k the default (the most that leave a worker to spare), --iterations steps (30).
1. Time: a warm-up fit of each contender, then --rounds rounds (3; --quick 1) whose order
   alternates (multi-task, separate, then separate, multi-task): the wall time of the
   multi-task fit and of the ten separate fits, min and median, and the ratio of the
   medians (separate / multi-task: above 1x the multi-task fit is faster).
2. Accuracy: each task's test accuracy (digit t against the rest: the sign of its
   decision) of the multi-task model, beside scikit-learn's LogisticRegression fitted on
   that task alone (on the standardized X, as ffcode.learn standardizes it); with no
   coupling, every task's model is also checked to be its separate fit's, exactly.
Targets: the multi-task fit >= 1.5x faster than the ten separate fits (median wall time);
every task's test accuracy within 2 points of scikit-learn's.

``run(...)`` measures and prints all this on a cluster given (or one of its own) and
returns the verdict lines, for another benchmark to call.

    python bench/bench_multitask.py                # about a minute on 2 cores
    python bench/bench_multitask.py --quick        # smoke run: one round, 10 iterations
    python bench/bench_multitask.py --rounds 5 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
from sklearn import linear_model
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ffcode
from ffcode.learn import LogisticRegression, MultiTaskLogisticRegression

from bench_learn import in_turn
from bench_runtime import spread
from benchlib import at_most, check, machine_info, n_cores, print_targets

WORKERS, ITERATIONS, ROUNDS = 5, 30, 3
SPEEDUP, POINTS = 1.5, 2.0                  # the targets
CONTENDERS = ("multi-task", "separate")


def digits(seed: int = 0) -> tuple:
    """(X_train, X_test, y_train, y_test) of scikit-learn's digits, 25% held out."""
    X, y = load_digits(return_X_y=True)
    return tuple(train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y))


def fit_multitask(cluster, X, y, options) -> tuple:
    """(the multi-task model of the ten one-vs-rest tasks, its wall seconds)."""
    t0 = time.perf_counter()
    model = MultiTaskLogisticRegression(**options).fit(X, y, cluster=cluster)
    return model, time.perf_counter() - t0


def fit_separately(cluster, X, y, options) -> tuple:
    """(the ten single-task models, one per digit, fitted one after another, their wall
    seconds in all)."""
    t0 = time.perf_counter()
    models = [LogisticRegression(**options).fit(X, (y == digit).astype(np.int64),
                                                cluster=cluster) for digit in range(10)]
    return models, time.perf_counter() - t0


def measure(cluster, iterations: int = ITERATIONS, rounds: int = ROUNDS,
            coding: str = "mds", seed: int = 0) -> dict:
    """The wall seconds of both contenders' fits (interleaved, after a warm-up fit each),
    every task's test accuracy (multi-task, separate, scikit-learn), and whether the
    multi-task model is the separate models exactly."""
    X_train, X_test, y_train, y_test = digits(seed)
    options = dict(coding=coding, iterations=iterations, seed=seed)
    fits = {"multi-task": lambda: fit_multitask(cluster, X_train, y_train, options),
            "separate": lambda: fit_separately(cluster, X_train, y_train, options)}
    models = {name: fit()[0] for name, fit in fits.items()}         # warm-up
    seconds: dict = {name: [] for name in CONTENDERS}
    for rnd in range(rounds):
        for name in in_turn(CONTENDERS, rnd):
            models[name], elapsed = fits[name]()
            seconds[name].append(elapsed)
    multi, separate = models["multi-task"], models["separate"]
    decision = multi.decision_function(X_test)
    accuracy = {"multi-task": [], "separate": [], "scikit-learn": []}
    for digit in range(10):
        truth = y_test == digit
        reference = make_pipeline(StandardScaler(), linear_model.LogisticRegression(
            max_iter=1000)).fit(X_train, y_train == digit)
        accuracy["multi-task"].append(float(np.mean((decision[:, digit] > 0) == truth)))
        accuracy["separate"].append(float(separate[digit].score(X_test, truth)))
        accuracy["scikit-learn"].append(float(reference.score(X_test, truth)))
    same = all(np.array_equal(multi.coef_[d], m.coef_)
               and multi.intercept_[d] == m.intercept_ for d, m in enumerate(separate))
    return {"seconds": seconds, "accuracy": accuracy, "same_models": same,
            "one_vs_rest": float(multi.score(X_test, y_test)), "k": multi.k_,
            "iterations": iterations, "rounds": rounds, "coding": coding}


def targets(numbers: dict) -> list:
    """The (verdict, line) pairs of the targets, as benchlib.print_targets takes them."""
    median = {name: statistics.median(numbers["seconds"][name]) for name in CONTENDERS}
    gaps = [abs(a - b) * 100 for a, b in zip(numbers["accuracy"]["multi-task"],
                                             numbers["accuracy"]["scikit-learn"])]
    worst = int(np.argmax(gaps))
    return [
        check("ten one-vs-rest tasks: ten separate fits / the multi-task fit (median wall "
              "time)", median["separate"] / median["multi-task"], SPEEDUP,
              f"  [{median['separate']:.2f} s / {median['multi-task']:.2f} s]"),
        at_most("every task's test accuracy against scikit-learn's LogisticRegression "
                "(the largest gap of ten tasks)", gaps[worst], POINTS, " points",
                f"  [digit {worst}: {numbers['accuracy']['multi-task'][worst]:.4f} vs "
                f"{numbers['accuracy']['scikit-learn'][worst]:.4f}]"),
    ]


def run(cluster=None, **settings) -> list:
    """Measure and print (``report``), and return the targets' (verdict, line) pairs, as
    benchlib.print_targets takes them: for another benchmark to call."""
    return targets(report(cluster, **settings))


def report(cluster=None, *, workers: int = WORKERS, iterations: int = ITERATIONS,
           rounds: int = ROUNDS, coding: str = "mds", seed: int = 0) -> dict:
    """Measure on ``cluster`` (or on a local one of ``workers`` opened and closed here),
    print the times and the tasks' accuracies; the numbers (``measure``'s)."""
    if cluster is None:
        with ffcode.Cluster(workers) as own:
            own.wait()
            return report(own, iterations=iterations, rounds=rounds, coding=coding,
                          seed=seed)
    t0 = time.perf_counter()
    numbers = measure(cluster, iterations, rounds, coding, seed)
    print_numbers(numbers, cluster.n_workers, time.perf_counter() - t0)
    return numbers


def print_numbers(numbers: dict, workers: int, seconds: float) -> None:
    seconds_of, accuracy = numbers["seconds"], numbers["accuracy"]
    print(f"\n1. Digits one-vs-rest, ten tasks, {numbers['coding'].upper()} coding, k = "
          f"{numbers['k']} on {workers} workers, {numbers['iterations']} iterations a fit; "
          f"{numbers['rounds']} round(s) after a warm-up (order alternating), "
          f"{seconds:.0f} s; wall seconds of a fit:")
    print(f"   {'contender':28} {'min':>8} {'median (min–max)':>24}")
    for name, label in (("multi-task", "multi-task (one fit)"),
                        ("separate", "separate (ten fits in turn)")):
        print(f"   {label:28} {min(seconds_of[name]):>8.2f} "
              f"{spread(seconds_of[name], 1, '.2f'):>24}")
    print("\n2. Test accuracy of each task (digit t against the rest):")
    print(f"   {'digit':6} {'multi-task':>11} {'separate':>11} {'scikit-learn':>13}")
    for digit in range(10):
        print(f"   {digit:<6} " + " ".join(
            f"{accuracy[name][digit]:>{width}.4f}"
            for name, width in (("multi-task", 11), ("separate", 11), ("scikit-learn", 13))))
    print(f"   one-vs-rest (the class of the largest decision): "
          f"{numbers['one_vs_rest']:.4f}; every task's model is its separate fit's exactly: "
          f"{'yes' if numbers['same_models'] else 'NO'}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: one round, 10 "
                    "iterations")
    ap.add_argument("--rounds", type=int, help=f"timed rounds (default {ROUNDS}, --quick 1)")
    ap.add_argument("--iterations", type=int, help=f"iterations per fit (default "
                    f"{ITERATIONS}, --quick 10)")
    ap.add_argument("--workers", type=int, default=WORKERS, help="local workers")
    ap.add_argument("--coding", choices=("mds", "lcc"), default="mds")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    args = ap.parse_args(argv)
    rounds = max(args.rounds or (1 if args.quick else ROUNDS), 1)
    iterations = max(args.iterations or (10 if args.quick else ITERATIONS), 1)
    start = time.perf_counter()
    print(f"ffcode multi-task benchmark: digits one-vs-rest, MultiTaskLogisticRegression "
          f"against ten LogisticRegression fits, {args.workers} local workers"
          + (" (--quick)" if args.quick else ""))
    info = machine_info()
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  note               {n_cores()} cores for the master and {args.workers} workers")
    print(f"  load average       {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"(1, 5, 15 min)")
    numbers = report(workers=args.workers, iterations=iterations, rounds=rounds,
                     coding=args.coding)
    lines = targets(numbers)
    print()
    print_targets(lines, start)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "quick": args.quick, "workers": args.workers,
                       **numbers,
                       "targets": [line for _, line in lines]}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
