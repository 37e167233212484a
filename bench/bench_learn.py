"""Benchmark coded gradient descent (ffcode.learn) on local workers: coded schemes against
uncoded on the same stragglers, resident data against re-shipping it every step, and what
a job on resident data costs when its compute is negligible.

One ffcode.Cluster of N = 8 local worker processes, kept open for the whole run; the data is
synthetic (numpy, fixed seed): X n x d standard normal, y = [X w + noise > 0] for a random w,
n = 100000, d = 400 (--quick: 20000 x 50; --samples and --features for others), so that an
iteration's compute (two products with the 8/6-times-larger coded copies of X and X^T,
n d multiply-adds each) dominates what the master adds per job: decoding z = X w costs
n m R for compfs (m R packets, R for classic) and every packet its fixed cost, so a wide X
is where computing dominates (at 200000 x 100 the two are even and compfs comes to about
0.6x uncoded). LogisticRegression(coding="mds", k = N - 2 = 6), at ffcode.learn's default prime and
precision; workers 6 and 7 are 5x slower in every job (Faults(slowdown={6: 5, 7: 5})).
1. Per iteration: one fit of --iterations steps (10; --quick 3) with each of uncoded,
   classic and compfs (m = 4) in a round, resident data (loaded once per fit), in rounds
   (--rounds, 3; --quick 1) whose order alternates (A, B, C, then C, B, A: each meets the
   same noise, none always runs right after another). The seconds of every iteration but
   each fit's first (Step.seconds: its two coded jobs and the master's update); min and
   median (min-max) over all rounds, and the ratios of the medians against uncoded.
2. Resident against re-shipped: the same compfs fit with resident=True (the encoded data
   loaded once, each iteration ships only w and the residual) and resident=False (each
   iteration's jobs re-encode and re-ship X and X^T), alternating, --rounds each: the wall
   time of the whole fit (load included), min and median.
3. The fixed cost: MDS(F, 6, 8) for A x with A 64 x 64 (negligible compute), A loaded once
   (cluster.load, compfs, and again for classic) and each job cluster.run(resident, x),
   alternating with the same job shipping A (cluster.run(code, A, x), compfs), 200 jobs each
   (--quick 20) after 10 warm-up jobs, no faults: the wall time of cluster.run, min and
   median; every output is checked against F.matmul(A, x).
Every fit's model is compared with uncoded's of the same round: exact arithmetic on the
same fixed-point data gives the same coefficients, whatever the scheme or residency.
Targets: per-iteration median compfs / uncoded <= 0.5x and classic / uncoded <= 0.8x; the
resident fit / the re-shipped one <= 0.3x; a job on resident data <= 3 ms median (with
compfs, which sends m packets per worker, and with classic, one).

    python bench/bench_learn.py                # a few minutes on 2 cores
    python bench/bench_learn.py --quick        # smoke run: small data, one round
    python bench/bench_learn.py --rounds 5 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

import ffcode
from ffcode.learn import LogisticRegression
from ffcode.schemes import Scheme

from bench_runtime import spread
from benchlib import at_most, machine_info, n_cores, print_targets

N_WORKERS, K, SLOWDOWN = 8, 6, 5.0
SCHEMES = (Scheme.UNCODED, Scheme.CLASSIC, Scheme.COMPFS)
PIECES = 4
TINY = 64                                   # the fixed-cost job's A is TINY x TINY


def synthetic(n, d, seed=0):
    """(X, y): X standard normal, y = [X w + noise > 0] for a random w."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
    return X, y


def in_turn(items, rnd):
    """The items in their order on even rounds, reversed on odd ones."""
    return list(items) if rnd % 2 == 0 else list(items)[::-1]


def fit(cluster, X, y, faults, iterations, scheme, resident=True):
    """(the fitted model, the fit's wall seconds)."""
    model = LogisticRegression(coding="mds", scheme=scheme, pieces=PIECES, k=K,
                               iterations=iterations, faults=faults, seed=1,
                               resident=resident)
    t0 = time.perf_counter()
    model.fit(X, y, cluster=cluster)
    return model, time.perf_counter() - t0


def same_model(model, reference) -> bool:
    return (np.array_equal(model.coef_, reference.coef_)
            and model.intercept_ == reference.intercept_)


def per_iteration(cluster, X, y, faults, iterations, rounds) -> dict:
    """Step seconds (each fit's first step left out) of every scheme, fits interleaved."""
    out = {s: {"step_s": [], "fit_s": [], "load_s": [], "same_model": []} for s in SCHEMES}
    for rnd in range(rounds):
        models = {}
        for scheme in in_turn(SCHEMES, rnd):
            model, seconds = fit(cluster, X, y, faults, iterations, scheme)
            models[scheme] = model
            row = out[scheme]
            row["step_s"] += [s.seconds for s in model.history_[1:]]
            row["fit_s"].append(seconds)
            row["load_s"].append(model.load_seconds_)
        for scheme in SCHEMES:
            out[scheme]["same_model"].append(same_model(models[scheme], models["uncoded"]))
    return out


def residency(cluster, X, y, faults, iterations, rounds) -> dict:
    """Wall seconds of whole compfs fits on resident and on re-shipped data, interleaved."""
    out = {name: {"fit_s": [], "shipped": [], "same_model": []}
           for name in ("resident", "re-shipped")}
    for rnd in range(rounds):
        models = {}
        for name in in_turn(out, rnd):
            model, seconds = fit(cluster, X, y, faults, iterations, "compfs",
                                 resident=name == "resident")
            models[name] = model
            out[name]["fit_s"].append(seconds)
            out[name]["shipped"].append(model.loaded_bytes_
                                        + sum(s.shipped for s in model.history_))
        for name in out:
            out[name]["same_model"].append(same_model(models[name], models["resident"]))
    return out


def fixed_cost(cluster, count) -> dict:
    """Wall seconds of a tiny MDS matvec on resident data (classic: one packet per worker;
    compfs: m per worker) and shipping its data (compfs), in turn."""
    F = ffcode.GF(2**61 - 1)
    code = ffcode.MDS(F, K, N_WORKERS)
    A, x = F.random((TINY, TINY), seed=2), F.random(TINY, seed=3)
    expected = F.matmul(A, x)
    data = cluster.load(code, A)
    whole = cluster.load(code, A, scheme="classic")
    jobs = {"resident compfs": lambda: cluster.run(data, x),
            "resident classic": lambda: cluster.run(whole, x),
            "shipped compfs": lambda: cluster.run(code, A, x)}
    out = {name: {"run_s": [], "total_s": []} for name in jobs}
    try:
        for rnd in range(count + 10):           # the first 10 warm up
            for name, job in in_turn(jobs.items(), rnd):
                t0 = time.perf_counter()
                output, report = job()
                seconds = time.perf_counter() - t0
                if not np.array_equal(output, expected):
                    raise SystemExit(f"ABORT: the {name} tiny job's output differs from "
                                     f"F.matmul")
                if rnd >= 10:
                    out[name]["run_s"].append(seconds)
                    out[name]["total_s"].append(report.total)
    finally:
        cluster.unload(data)
        cluster.unload(whole)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: small data, one round, "
                    "few iterations and jobs")
    ap.add_argument("--rounds", type=int, help="rounds of measurements 1 and 2 (default 3, "
                    "--quick 1)")
    ap.add_argument("--iterations", type=int, help="iterations per fit (default 10, --quick "
                    "3)")
    ap.add_argument("--samples", type=int, help="rows of X (default 100000, --quick 20000)")
    ap.add_argument("--features", type=int, help="columns of X (default 400, --quick 50)")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    args = ap.parse_args(argv)
    rounds = max(args.rounds or (1 if args.quick else 3), 1)
    iterations = max(args.iterations or (3 if args.quick else 10), 2)
    n, d = (20_000, 50) if args.quick else (100_000, 400)
    n, d = args.samples or n, args.features or d
    tiny_jobs = 20 if args.quick else 200
    start = time.perf_counter()
    print(f"ffcode learn benchmark: LogisticRegression, MDS k = {K} on N = {N_WORKERS} local "
          f"workers, workers {K} and {K + 1} {SLOWDOWN:g}x slower" +
          (" (--quick)" if args.quick else ""))
    info = machine_info()
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  note               {n_cores()} cores for the master and {N_WORKERS} workers "
          f"(each worker runs OpenBLAS with one thread)")
    print(f"  load average       {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"(1, 5, 15 min)")
    X, y = synthetic(n, d)
    faults = ffcode.Faults(slowdown={K: SLOWDOWN, K + 1: SLOWDOWN})
    with ffcode.Cluster(N_WORKERS) as cluster:
        cluster.wait()
        t0 = time.perf_counter()
        steps = per_iteration(cluster, X, y, faults, iterations, rounds)
        print_steps(steps, n, d, iterations, rounds, time.perf_counter() - t0)
        t0 = time.perf_counter()
        kept = residency(cluster, X, y, faults, iterations, rounds)
        print_residency(kept, iterations, rounds, time.perf_counter() - t0)
        t0 = time.perf_counter()
        tiny = fixed_cost(cluster, tiny_jobs)
        print_fixed_cost(tiny, tiny_jobs, time.perf_counter() - t0)

    print()
    step = {s: statistics.median(steps[s]["step_s"]) for s in SCHEMES}
    fits = {name: statistics.median(row["fit_s"]) for name, row in kept.items()}
    job_ms = {name: statistics.median(row["run_s"]) * 1e3 for name, row in tiny.items()}
    lines = [
        *(at_most(f"per iteration: {scheme} / uncoded (median Step.seconds)",
                  step[scheme] / step["uncoded"], limit, "×",
                  f"  [{step[scheme] * 1e3:.1f} ms / {step['uncoded'] * 1e3:.1f} ms]")
          for scheme, limit in (("compfs", 0.5), ("classic", 0.8))),
        at_most("whole fit: resident / re-shipped data (median wall time, load included)",
                fits["resident"] / fits["re-shipped"], 0.3, "×",
                f"  [{fits['resident']:.2f} s / {fits['re-shipped']:.2f} s]"),
        *(at_most(f"a tiny job on resident data, {what} (median wall time of cluster.run)",
                  job_ms[f"resident {what}"], 3, " ms",
                  f"  [compfs shipping its data: {job_ms['shipped compfs']:.2f} ms]")
          for what in ("compfs", "classic")),
    ]
    same = all(all(row["same_model"]) for row in (*steps.values(), *kept.values()))
    print(f"every fit learned uncoded's (resident's) model exactly: {'yes' if same else 'NO'}")
    print_targets(lines, start)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "quick": args.quick, "n": n, "d": d,
                       "iterations": iterations, "rounds": rounds,
                       "faults": faults.to_dict(), "per_iteration": steps,
                       "residency": kept, "fixed_cost": tiny,
                       "targets": [line for _, line in lines]}, f, indent=1, default=str)


def print_steps(steps, n, d, iterations, rounds, seconds):
    print(f"\n1. Per iteration: X {n} x {d}, {rounds} round(s) of one {iterations}-iteration "
          f"fit per scheme (order alternating), {seconds:.0f} s;\n   ms per iteration (each "
          f"fit's first left out), fit and load seconds:")
    print(f"   {'scheme':10} {'min':>8} {'median (min–max)':>24} {'vs uncoded':>11} "
          f"{'fit s':>8} {'load s':>8}")
    base = statistics.median(steps["uncoded"]["step_s"])
    for scheme in SCHEMES:
        row = steps[scheme]
        print(f"   {scheme:10} {min(row['step_s']) * 1e3:>8.1f} "
              f"{spread(row['step_s'], 1e3, '.1f'):>24} "
              f"{statistics.median(row['step_s']) / base:>10.2f}× "
              f"{statistics.median(row['fit_s']):>8.2f} "
              f"{statistics.median(row['load_s']):>8.2f}")


def print_residency(kept, iterations, rounds, seconds):
    print(f"\n2. A whole {iterations}-iteration compfs fit, resident data against re-shipped "
          f"each step, {rounds} each (alternating), {seconds:.0f} s:")
    print(f"   {'data':11} {'min s':>8} {'median s (min–max)':>24} {'MiB shipped':>12}")
    for name, row in kept.items():
        print(f"   {name:11} {min(row['fit_s']):>8.2f} {spread(row['fit_s'], 1, '.2f'):>24} "
              f"{statistics.median(row['shipped']) / 2**20:>12.0f}")


def print_fixed_cost(tiny, count, seconds):
    print(f"\n3. A tiny MDS matvec (k = {K}, N = {N_WORKERS}, A {TINY} x {TINY}), {count} "
          f"jobs each after 10 warm-up rounds (alternating), {seconds:.0f} s; ms:")
    print(f"   {'data, scheme':17} {'min':>8} {'median (min–max)':>24} "
          f"{'report.total median':>20}")
    for name, row in tiny.items():
        print(f"   {name:17} {min(row['run_s']) * 1e3:>8.2f} "
              f"{spread(row['run_s'], 1e3, '.2f'):>24} "
              f"{statistics.median(row['total_s']) * 1e3:>20.2f}")


if __name__ == "__main__":
    main()
