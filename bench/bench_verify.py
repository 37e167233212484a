"""Verification at every prime: Freivalds' check (ffcode.decoding.verify) against the product it checks.

For p = 2**31 - 1 and 2**61 - 1 and an n x n product C = A @ B (n = 2048; 512 with --quick):
1. The check, verify.output(PolynomialCode(F, 2, 2, 4), (A, B), C) (what Cluster.run does
   with verify: Freivalds' check with rounds(p) random rows, 2 at 2**31 - 1 and 1 at
   2**61 - 1), timed interleaved with the local product F.matmul(A, B) (product, check,
   product, check, ...): min and median of each, the ratio check / product, whether
   verify.by_default checks such a job, and a PASS/MISS line for "the check costs at most
   5 % of the product" (product / check ≥ 20×). A copy of C with one element changed must
   be refused, the exact C accepted.
2. The check's few-row product alone, R @ B for R of rounds(p) x n: the row-combination
   kernel the check runs in (ffcode._matmul.combine of R and B: combine_rows_31 below
   2**31, combine_rows_64 from there) against the limb path (F.matmul(R, B): float64 dgemms,
   six of them at 2**61 - 1), python-flint nmod_mat and galois (converted before timing;
   median of a few calls, one when a call takes over 5 s). Every result is compared exactly
   with the kernel's.
Times in one run are comparable; the machine is noisy, so compare ratios, not absolute
times across runs.

    python bench/bench_verify.py            # about 80 s on 2 cores
    python bench/bench_verify.py --quick    # 512 x 512, fewer repeats: a few seconds
"""
import statistics
import sys
import time

import numpy as np

from ffcode import GF, PolynomialCode, _matmul
from ffcode.decoding import verify

from benchlib import (check, exact_value, flint, galois, prime_label, print_machine,
                      print_targets, same, square_options)

PRIMES = (2**31 - 1, 2**61 - 1)
SHARE = 0.05                # the check may cost at most this share of the product


def interleaved(product, check, repeats: int) -> tuple:
    """Seconds of each call of product and check, alternated after one warm-up of each."""
    product(), check()
    times = ([], [])
    for _ in range(repeats):
        for fn, seconds in zip((product, check), times):
            t0 = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - t0)
    return times


def part_check(F, A, B, C, repeats: int) -> dict:
    """Part 1 for one prime: times, ratio and the verdicts on C and a spoiled C."""
    code = PolynomialCode(F, 2, 2, 4)
    seeds = iter(range(10**6))
    verdicts = []

    def run_check():
        verdicts.append(verify.output(code, (A, B), C, seed=next(seeds)))

    product_s, check_s = interleaved(lambda: F.matmul(A, B), run_check, repeats)
    spoiled = C.copy()
    spoiled[C.shape[0] // 2, -1] = F.add(spoiled[C.shape[0] // 2, -1], 1)
    refused = not verify.output(code, (A, B), spoiled, seed=1)
    return {"product": product_s, "check": check_s, "exact": all(verdicts) and refused,
            "default": verify.by_default(code, (A, B)),
            "ratio": statistics.median(check_s) / statistics.median(product_s)}


def part_kernel(F, R, B, timer) -> dict:
    """Part 2 for one prime: median seconds of R @ B per library, and exactness."""
    p = F.p
    fR, fB = flint.nmod_mat(R.tolist(), p), flint.nmod_mat(B.tolist(), p)
    G = galois.GF(p)
    objects = np.int64 if p < 2**31 else object        # galois needs Python ints above
    gR, gB = G(R.astype(objects)), G(B.astype(objects))
    runs = {"rowcomb": lambda: _matmul.combine(p, R, B, F.dtype),
            "limb (F.matmul)": lambda: F.matmul(R, B),
            "flint nmod_mat": lambda: fR * fB,
            "galois": lambda: gR @ gB}
    out = {}
    for name, fn in runs.items():
        seconds, repeats, result = timer(fn)
        out[name] = (seconds, repeats, exact_value(result))
    reference = out["rowcomb"][2]
    return {name: (s, r, same(value, reference)) for name, (s, r, value) in out.items()}


def main(argv=None):
    run = square_options(__doc__, argv, "interleaved product/check pairs (7; 3 with --quick)",
                         repeats=(7, 3), budget=(1.0, 0.3))
    n, repeats, timer = run.n, run.repeats, run.timer
    start = time.perf_counter()
    print(f"ffcode verification benchmark: Freivalds' check against the product, {n}x{n}"
          + (" (--quick)" if run.quick else ""))
    print_machine()
    targets, ok, kernels = [], True, {}

    print(f"\n1. verify.output (PolynomialCode) vs F.matmul(A, B), interleaved, {repeats} "
          f"pairs; ms")
    print(f"  {'p':<8}{'rounds':>7}{'product':>18}{'check':>16}{'check/':>9}  "
          f"{'auto':<6}verdicts")
    print(f"  {'':<8}{'':>7}{'min':>9}{'median':>9}{'min':>8}{'median':>8}{'product':>9}")
    for p in PRIMES:
        F = GF(p)
        A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
        C = F.matmul(A, B)
        r = part_check(F, A, B, C, repeats)
        ok = ok and r["exact"]
        ms = [1e3 * f(r[key]) for key in ("product", "check") for f in (min, statistics.median)]
        print(f"  {prime_label(p):<8}{verify.rounds(p):>7}{ms[0]:>9.1f}{ms[1]:>9.1f}"
              f"{ms[2]:>8.1f}{ms[3]:>8.1f}{100 * r['ratio']:>8.2f}%  "
              f"{'yes' if r['default'] else 'no':<6}{'right' if r['exact'] else 'WRONG'}")
        targets.append(check(f"p = {prime_label(p)}, {n}x{n}: check ≤ {SHARE:.0%} of the "
                             f"product (product / check, medians)", 1 / r["ratio"],
                             1 / SHARE))
        kernels[p] = part_kernel(F, F.random((verify.rounds(p), n), seed=3), B, timer)

    print(f"\n2. The check's few-row product R @ B, R of rounds(p) x {n}: median ms "
          f"(repeats), and the kernel's speed-up")
    for p, rows in kernels.items():
        base = rows["rowcomb"][0]
        print(f"  {prime_label(p)}, {verify.rounds(p)} x {n} by {n} x {n}:")
        for name, (seconds, reps, exact) in rows.items():
            ok = ok and exact
            print(f"    {name:<18}{1e3 * seconds:>10.1f} ms ({reps}){seconds / base:>9.1f}×  "
                  f"{'exact' if exact else 'NOT EXACT'}")
        targets.append(check(f"p = {prime_label(p)}: rowcomb vs the limb path for "
                             f"{verify.rounds(p)} x {n} rows", rows["limb (F.matmul)"][0] / base,
                             1))
    print(f"\n  every verdict right and every result exact: {'yes' if ok else 'NO'}\n")
    print_targets(targets, start)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
