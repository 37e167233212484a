"""Every scheme on real local workers, on the same injected stragglers, in one run.

Three jobs on one ffcode.Cluster of N = 8 worker processes, m = 4 pieces, p = 2**31 - 1:
  matmul  C = A @ B, 2048 x 2048, PolynomialCode a = b = 2 (R = 4), workers 6 and 7 five
          times slower (the worker computes, then pauses 4x as long, per piece)
  matvec  y = A @ x, 8192 x 8192, MDS k = 4 (R = 4); the product is cheap, so every piece
          also pauses 20 ms + Exponential(mean 20 ms) (the shifted-exponential model), and
          workers 6 and 7 are five times slower
  lcc     f(X) = X * X for k = 2 blocks of 4096 x 256, t = 1 (R = 5), the same faults as
          matvec; f is not row-linear, so there is no compfs
Each job's output is checked against direct computation. The table gives each scheme's
total seconds (median of --repeats runs) and classic's time divided by it (above 1: faster
than waiting for the R fastest whole results), and the cost of the runtime's own check of
the output (Freivalds; on by default where it is cheap), which the totals include.

    python bench/bench_schemes.py               # about two minutes on 2 cores
    python bench/bench_schemes.py --repeats 1 --quick
"""
import argparse
import statistics
import sys
import time

import numpy as np

import ffcode
from ffcode import GF, LCC, MDS, Faults, PolynomialCode
from ffcode.schemes import NAMES

from benchlib import machine_info

SCHEMES = NAMES                 # every scheme, uncoded first


def jobs(F, quick):
    n = 512 if quick else 2048
    A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
    slow = {6: 5, 7: 5}
    yield ("matmul", f"PolynomialCode R=4, {n}x{n}", PolynomialCode(F, 2, 2, 8), (A, B),
           F.matmul(A, B), Faults(slowdown=slow))
    n = 2048 if quick else 8192
    A, x = F.random((n, n), seed=3), F.random(n, seed=4)
    pauses = Faults(slowdown=slow, delay=(0.02, 0.02), seed=5)
    yield ("matvec", f"MDS k=4, {n}x{n}", MDS(F, 4, 8), (A, x), F.matmul(A, x), pauses)
    rows = 1024 if quick else 4096
    X = [F.random((rows, 256), seed=6 + j) for j in range(2)]
    yield ("lcc", f"LCC square k=2 t=1 (R=5), 2 x {rows}x256",
           LCC(F, 2, 1, "ffcode.functions:square", 2, 8), (X,), [F.mul(x, x) for x in X],
           pauses)


def exact(output, expected):
    if isinstance(expected, list):
        return all(np.array_equal(o, e) for o, e in zip(output, expected))
    return np.array_equal(output, expected)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print("ffcode schemes benchmark: every scheme on the same injected faults, N = 8, m = 4")
    for key, value in machine_info().items():
        print(f"  {key:<18} {value}")
    F = GF(2**31 - 1)
    ok = True
    with ffcode.Cluster(8) as cluster:
        cluster.wait()
        for name, what, code, inputs, expected, faults in jobs(F, args.quick):
            print(f"\n{name}: {what}")
            print(f"  {'scheme':<11}{'total s':>9}{'(min-max)':>16}{'vs classic':>12}"
                  f"{'used':>6}{'wasted':>8}  per-worker used (last run)")
            times = {}
            for scheme in SCHEMES:
                if scheme == "compfs" and not code.row_linear:
                    continue
                runs = []
                for _ in range(args.repeats):
                    output, report = cluster.run(code, *inputs, scheme=scheme, pieces=4,
                                                 faults=faults, timeout=600)
                    ok = ok and exact(output, expected)
                    runs.append(report.total)
                times[scheme] = statistics.median(runs), min(runs), max(runs), report
            classic = times["classic"][0]
            for scheme, (median, low, high, report) in times.items():
                print(f"  {scheme:<11}{median:>9.3f}{f'({low:.3f}-{high:.3f})':>16}"
                      f"{classic / median:>11.2f}x{report.used:>6}{report.wasted:>8}  "
                      f"{[w.used for w in report.workers]}")
            checks = [r.verify for *_, r in times.values() if r.verified is not None]
            if checks:
                check = statistics.median(checks)
                print(f"  verification (included above): {check * 1e3:.1f} ms, "
                      f"{100 * check / classic:.1f} % of classic's total")
            else:
                print("  verification: off by default for this job (no check of it costs "
                      "under 5 % of the job)")
    print(f"\nevery output exact: {'yes' if ok else 'NO'}; total run time "
          f"{time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
