"""Several shares per worker on real local workers: one share each against two and three,
uniform and by measured speed, on the same injected stragglers, in one run.

Six local workers, workers 3, 4 and 5 four times slower, PolynomialCode a = b = 2 (R = 4),
m = 4 pieces, p = 2**31 - 1; w shares per worker means a code with 6w points, worker i
holding shares i, i + 6, ... (or, "by speed", counts in proportion to the speeds measured
in the job before). Two jobs:

  pauses  C = A @ B, 512 x 512: the pieces are cheap and the work is an injected pause of
          100 ms + Exponential(50 ms) per piece (four times as long for a straggler), the
          regime the simulator describes: the workers do not compete for the cores. The
          target: compfs with w >= 2 at least 1.3x faster than with w = 1, and within 25 %
          of the simulator's ideal bound for the run (Model.from_faults: the pauses the
          workers drew, the measured compute per piece).
  main    the README's main job: C = A @ B, 2048 x 2048, the stragglers 8x slower (a pause of
          seven times each piece's CPU time; no target: six workers computing on few cores
          are bound by the cores, which shares cannot add), also on resident
          data (loaded once with two shares each: the encoding and shipping are paid once).

The contenders run interleaved (w = 1, w = 2, ..., w = 1, w = 2, ...); each row gives the
min and median of the runs' totals (encoding included), the encoding and the bytes shipped
per run, and the simulator's prediction.

``--encode`` measures only the master's encoding at the main job's sizes, without workers:
the job's Plan (what a report's ``encode`` times: the shares of every worker, for compfs
their m = 4 piece combinations, and the tasks) for each scheme with one share per worker
and classic and compfs with two, interleaved, as CPU time (process_time, the cores' work)
and wall time (the threads share the output rows), with the multiply-adds each encoding
takes and the bytes it ships; then encode_rows' fused product against two products per
worker for a few numbers of blocks K and pieces m (ffcode.codes.base.FUSED_EXTRA).

    python bench/bench_shares.py                # about three minutes on 2 cores
    python bench/bench_shares.py --repeats 3
    python bench/bench_shares.py --encode       # about ten seconds
"""
import argparse
import statistics
import sys
import time

import numpy as np

import ffcode
from ffcode import GF, Faults, PolynomialCode, sim
from ffcode.schemes import NAMES

from benchlib import machine_info

N, R, M = 6, 4, 4
SLOW = {3: 4, 4: 4, 5: 4}
MAIN_SLOW = {3: 8, 4: 8, 5: 8}  # the README's main job (ffcode run's default --slowdown)


def variants(shares=(1, 2, 3)):
    """(label, scheme, shares per worker, allocate) of the pause job."""
    out = [(f"compfs w={w}", "compfs", w, None) for w in shares]
    out += [("compfs w=2 by speed", "compfs", 2, "speed"),
            ("classic w=1", "classic", 1, None), ("classic w=2", "classic", 2, None)]
    return out


def pause_faults():
    pause = {w: (0.1 * SLOW.get(w, 1), 0.05 * SLOW.get(w, 1)) for w in range(N)}
    return Faults(slowdown=SLOW, delay=pause, seed=3)


def measure(cluster, jobs, repeats):
    """{label: [reports]} of every job, run interleaved: jobs maps a label to run()."""
    reports = {label: [] for label in jobs}
    for _ in range(repeats):
        for label, run in jobs.items():
            reports[label].append(run())
    return reports


def row(label, reports, base=None, predicted=None, ideal=None):
    totals = [r.total for r in reports]
    median, low = statistics.median(totals), min(totals)
    encode = statistics.median(r.encode for r in reports)
    shipped = statistics.median(r.shipped for r in reports) / 2**20
    text = (f"  {label:<22}{low:>8.3f}{median:>9.3f}"
            f"{'' if base is None else f'{base / median:>8.2f}x':>9}"
            f"{encode * 1e3:>10.1f}{shipped:>10.1f}")
    if predicted is not None:
        text += f"{predicted:>10.3f}{ideal:>9.3f}{median / ideal:>8.2f}x"
    return text, median


def pauses(cluster, F, repeats):
    n = 512
    A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
    expected = F.matmul(A, B)
    faults = pause_faults()
    codes = {w: PolynomialCode(F, 2, 2, N * w) for w in (1, 2, 3)}
    calibration = cluster.run(codes[1], A, B, scheme="compfs", pieces=M)[1]
    compute = statistics.median(p["compute"] for w in calibration.workers for p in w.packets)

    def job(scheme, w, allocate):
        def run():
            output, report = cluster.run(codes[w], A, B, scheme=scheme, pieces=M,
                                         faults=faults, allocate=allocate, timeout=120)
            assert np.array_equal(output, expected), "inexact output"
            return report
        return run

    table = variants()
    print(f"\npauses: C = A @ B, {n}x{n}, a pause of 100 ms + Exp(50 ms) per piece (x4 for "
          f"workers 3-5), {compute * 1e3:.2f} ms of compute per piece; {repeats} runs each")
    reports = measure(cluster, {label: job(s, w, a) for label, s, w, a in table}, repeats)
    print(f"  {'':<22}{'min s':>8}{'median':>9}{'vs w=1':>9}{'encode ms':>10}{'MiB':>10}"
          f"{'sim s':>10}{'ideal':>9}{'/ideal':>9}")
    medians, bounds = {}, {}
    for label, scheme, w, allocate in table:
        counts = [len(t.shares) for t in reports[label][-1].workers]
        model = sim.Model.from_faults(N, R, M, compute, faults, shares=counts)
        bounds[label] = sim.simulate(model, "ideal")
        base = medians.get(f"{scheme} w=1")
        text, medians[label] = row(label, reports[label], base, sim.simulate(model, scheme),
                                   bounds[label])
        print(text + ("" if allocate is None else f"  counts {counts}"))
    best = min((label for label in medians if label.startswith("compfs w=")
                and not label.startswith("compfs w=1")), key=medians.get)
    gain = medians["compfs w=1"] / medians[best]
    gap = medians[best] / bounds[best]
    print(f"  {'PASS' if gain >= 1.3 else 'MISS'}: {best} is {gain:.2f}x faster than compfs "
          f"w=1 (target >= 1.3x)")
    print(f"  {'PASS' if gap <= 1.25 else 'MISS'}: {best} is {gap:.2f}x the simulator's ideal "
          f"bound for the run (target <= 1.25x)")
    return gain >= 1.3 and gap <= 1.25


def main_job(cluster, F, repeats):
    n = 2048
    A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
    expected = F.matmul(A, B)
    faults = Faults(slowdown=MAIN_SLOW)
    codes = {w: PolynomialCode(F, 2, 2, N * w) for w in (1, 2)}
    start = time.perf_counter()
    data = cluster.load(codes[2], A, B, scheme="compfs", pieces=M, seed=0)
    loading = time.perf_counter() - start

    def job(code):
        def run():
            output, report = cluster.run(code, *(() if code is data else (A, B)),
                                         scheme="compfs", pieces=M, faults=faults,
                                         timeout=600)
            assert np.array_equal(output, expected), "inexact output"
            return report
        return run

    print(f"\nmain: the README's main job, C = A @ B, {n}x{n}, workers 3-5 "
          f"{MAIN_SLOW[3]:g}x slower; "
          f"{repeats} runs each")
    reports = measure(cluster, {"compfs w=1": job(codes[1]), "compfs w=2": job(codes[2]),
                                "compfs w=2 resident": job(data)}, repeats)
    print(f"  {'':<22}{'min s':>8}{'median':>9}{'vs w=1':>9}{'encode ms':>10}{'MiB':>10}")
    base = None
    for label, runs in reports.items():
        text, median = row(label, runs, base)
        base = base or median
        print(text)
    print(f"  the resident data was loaded once: {loading:.2f} s, "
          f"{data.shipped / 2**20:.0f} MiB shipped")
    cluster.unload(data)


def encoding(F, repeats):
    """The master's encoding of the main job (2048 x 2048, R = 4, m = 4), CPU and wall."""
    from ffcode import allocation
    from ffcode.runtime import Options, Plan
    n = 2048
    A, B = F.random((n, n), seed=0), F.random((n, n), seed=1)
    codes = {w: PolynomialCode(F, 2, 2, N * w) for w in (1, 2)}
    table = [(s, 1) for s in NAMES]
    table += [("classic", 2), ("compfs", 2)]

    def plan(scheme, w):
        code = codes[w]
        return Plan(code, (A, B), Options(scheme=scheme, pieces=M, seed=0),
                    allocation.uniform(code.n_workers, N))

    cpu = {job: [] for job in table}
    wall = {job: [] for job in table}
    shipped = {job: plan(*job).layout.nbytes for job in table}      # and warm up
    for r in range(repeats):
        for job in table if r % 2 == 0 else table[::-1]:
            c0, w0 = time.process_time(), time.perf_counter()
            plan(*job)
            cpu[job].append(time.process_time() - c0)
            wall[job].append(time.perf_counter() - w0)
    print(f"\nencoding: the main job's Plan, C = A @ B, {n}x{n}, PolynomialCode a = b = 2, "
          f"m = {M}; {repeats} interleaved runs each")
    print(f"  {'':<14}{'points':>7}{'CPU ms min':>12}{'median':>8}{'wall ms min':>13}"
          f"{'median':>8}{'Gmuladd':>9}{'MiB shipped':>12}")
    block = (n // 2) * n                   # elements of a share's A or B block
    for job in table:
        scheme, w = job
        points = N * w
        # B's shares: 2 multiply-adds per element; A's 2, or for compfs 2 m per element of
        # its piece blocks (one fused product of the (points m, 2 m) coefficients)
        work = 0 if scheme == "uncoded" else \
            (2 * M if scheme == "compfs" else 2) * points * block + 2 * points * block
        label = scheme if w == 1 else f"{scheme} x{w}"
        print(f"  {label:<14}{points:>7}{min(cpu[job]) * 1e3:>12.1f}"
              f"{statistics.median(cpu[job]) * 1e3:>8.1f}{min(wall[job]) * 1e3:>13.1f}"
              f"{statistics.median(wall[job]) * 1e3:>8.1f}{work / 1e9:>9.2f}"
              f"{shipped[job] / 2**20:>12.0f}")


def encode_paths(F, repeats):
    """encode_rows' two ways of making the piece blocks, at the main job's block size (8 MiB)
    and N = 12: one fused product (K m multiply-adds per element) against two products per
    worker (K + m); ffcode.codes.base.FUSED_EXTRA says where the first stops being faster."""
    from ffcode.codes import base
    N2, elements = 2 * N, 2**21
    print(f"\nencode_rows' piece blocks: N = {N2}, K blocks of {elements * 4 >> 20} MiB, m "
          f"pieces; CPU ms min / median of {repeats} interleaved runs (chosen: K m <= K + m + "
          f"{base.FUSED_EXTRA})")
    print(f"  {'K':>3}{'m':>3}{'fused':>16}{'two products':>16}  chosen")
    default = base.FUSED_EXTRA
    try:
        for K, m in ((1, 4), (2, 2), (2, 4), (3, 4), (4, 4), (2, 8)):
            C = F.random((N2, K), seed=K)
            blocks = [F.random((elements // 2048, 2048), seed=10 + j) for j in range(K)]
            Gs = [F.random((m, m), seed=100 + i) for i in range(N2)]
            times = {"fused": [], "two": []}
            for r in range(repeats):
                for path in ("fused", "two") if r % 2 == 0 else ("two", "fused"):
                    base.FUSED_EXTRA = 10**6 if path == "fused" else -10**6
                    start = time.process_time()
                    base.encode_rows(F, C, blocks, Gs)
                    times[path].append(time.process_time() - start)
            cells = [f"{min(t) * 1e3:.0f} / {statistics.median(t) * 1e3:.0f}"
                     for t in times.values()]
            chosen = "fused" if K * m <= K + m + default else "two products"
            print(f"  {K:>3}{m:>3}{cells[0]:>16}{cells[1]:>16}  {chosen}")
    finally:
        base.FUSED_EXTRA = default


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--encode", action="store_true",
                        help="only the master's encoding at the main job's sizes (no workers)")
    args = parser.parse_args(argv)
    if args.encode:
        print("ffcode shares benchmark: the master's encoding")
        for key, value in machine_info().items():
            print(f"  {key:<18} {value}")
        encoding(GF(2**31 - 1), max(args.repeats, 5))
        encode_paths(GF(2**31 - 1), max(args.repeats, 5))
        return 0
    start = time.perf_counter()
    print("ffcode shares benchmark: several shares per worker, N = 6, workers 3-5 4x slower, "
          "R = 4, m = 4")
    for key, value in machine_info().items():
        print(f"  {key:<18} {value}")
    F = GF(2**31 - 1)
    with ffcode.Cluster(N) as cluster:
        cluster.wait()
        ok = pauses(cluster, F, args.repeats)
        main_job(cluster, F, max(2, args.repeats // 2 + 1))
    print(f"\ntargets {'met' if ok else 'MISSED'}; every output exact; total run time "
          f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
