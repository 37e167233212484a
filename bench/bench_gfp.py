"""Benchmark ffcode's GF(p) matmul, matvec (A @ x), rank, solve and matinv against galois,
python-flint and float64 BLAS, on the same inputs in one run.

Every library gets the same random matrices; conversions into flint / galois objects are
done once, before timing. Each timing is a warm-up call and then the median of R repeats
(R adaptive: repeat until the time budget is spent or the repeat cap is reached, never
fewer than the minimum). Before timing, one result per configuration is checked for exact
equality with python-flint's (and galois's, where measured); the run aborts on a mismatch.

    python bench/bench_gfp.py                  # full run (about 5 minutes on 2 cores)
    python bench/bench_gfp.py --quick          # smoke test
    python bench/bench_gfp.py --primes 65521 --sizes 1024 --ops matmul --json out.json
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

import ffcode
from benchlib import (Timer, check, exact_value, flint, fmt, galois, int_list,
                      machine_info, n_cores, prime_label, print_targets, same)

MATMUL_PRIMES = (65521, 2**31 - 1, 4294967291, 2**61 - 1)
LINALG_PRIMES = (65521, 2**31 - 1, 2**61 - 1)
MATMUL_SIZES = (256, 512, 1024, 2048)
MATVEC_SIZES = (256, 1024, 4096)
QUICK_MATVEC_SIZES = (256, 1024)
LINALG_SIZES = (128, 256, 512)
QUICK_MATMUL_SIZES = (256, 512)
QUICK_LINALG_SIZES = (128, 256)
LINALG_OPS = ("rank", "solve", "matinv")
OPS = ("matmul", "matvec") + LINALG_OPS
BACKENDS = ("ffcode", "galois", "flint", "float64")

# galois is fast for small p (float64 BLAS); from 2**31 - 1 on it computes with Python
# objects or non-BLAS loops (~0.01-0.05 GOP/s), so there it is only timed up to these n.
GALOIS_SLOW_P = 2**31 - 1
GALOIS_SLOW_MAX_N = {"matmul": 256, "matvec": 1024, "rank": 128, "solve": 128, "matinv": 128}

FLOAT64_NOTE = {
    "matmul": "A @ B",
    "matvec": "A @ x (dgemv)",
    "rank": "numpy.linalg.slogdet (LAPACK LU)",
    "solve": "numpy.linalg.solve",
    "matinv": "numpy.linalg.inv",
}


# -- timing -----------------------------------------------------------------------------------


# -- inputs and the measured calls --------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def galois_field(p: int):
    return galois.GF(p)


def galois_measured(op: str, p: int, n: int) -> bool:
    return p < GALOIS_SLOW_P or n <= GALOIS_SLOW_MAX_N[op]


def to_flint(X: np.ndarray, p: int):
    return flint.nmod_mat(X.shape[0], X.shape[1], X.ravel().tolist(), p)


@dataclass
class Inputs:
    """One configuration's operands, in every library's own type (converted once)."""
    F: ffcode.PrimeField
    A: np.ndarray
    B: np.ndarray
    fA: object
    fB: object
    xA: np.ndarray
    xB: np.ndarray
    gA: object = None
    gB: object = None

    @classmethod
    def make(cls, p: int, n: int, with_galois: bool) -> "Inputs":
        F = ffcode.GF(p)
        A, B = F.random((n, n), seed=(n, 0)), F.random((n, n), seed=(n, 1))
        gA = gB = None
        if with_galois:
            G = galois_field(p)
            gA, gB = G(A.astype(np.int64)), G(B.astype(np.int64))
        return cls(F, A, B, to_flint(A, p), to_flint(B, p),
                   A.astype(np.float64), B.astype(np.float64), gA, gB)


def matmul_calls(x: Inputs) -> Dict[str, Callable]:
    return {"ffcode": lambda: x.F.matmul(x.A, x.B),
            "galois": lambda: x.gA @ x.gB,
            "flint": lambda: x.fA * x.fB,
            "float64": lambda: x.xA @ x.xB}


def matvec_calls(x: Inputs) -> Dict[str, Callable]:
    """A @ b for b the first column of B, as an n x 1 matrix in every library."""
    b = np.ascontiguousarray(x.B[:, :1])
    fb, xb = to_flint(b, x.F.p), b.astype(np.float64)
    gb = None if x.gB is None else x.gB[:, :1]
    return {"ffcode": lambda: x.F.matmul(x.A, b),
            "galois": lambda: x.gA @ gb,
            "flint": lambda: x.fA * fb,
            "float64": lambda: x.xA @ xb}


def rank_calls(x: Inputs) -> Dict[str, Callable]:
    return {"ffcode": lambda: x.F.rank(x.A),
            "galois": lambda: np.linalg.matrix_rank(x.gA),
            "flint": lambda: x.fA.rank(),
            "float64": lambda: np.linalg.slogdet(x.xA)}


def solve_calls(x: Inputs) -> Dict[str, Callable]:
    return {"ffcode": lambda: x.F.solve(x.A, x.B),
            "galois": lambda: np.linalg.solve(x.gA, x.gB),
            "flint": lambda: x.fA.solve(x.fB),
            "float64": lambda: np.linalg.solve(x.xA, x.xB)}


def matinv_calls(x: Inputs) -> Dict[str, Callable]:
    return {"ffcode": lambda: x.F.matinv(x.A),
            "galois": lambda: np.linalg.inv(x.gA),
            "flint": lambda: x.fA.inv(),
            "float64": lambda: np.linalg.inv(x.xA)}


CALLS = {"matmul": matmul_calls, "matvec": matvec_calls, "rank": rank_calls, "solve": solve_calls,
         "matinv": matinv_calls}


# -- one configuration ----------------------------------------------------------------------------

@dataclass
class Row:
    op: str
    p: int
    n: int
    median: Dict[str, Optional[float]] = field(default_factory=dict)   # seconds; None = skipped
    repeats: Dict[str, int] = field(default_factory=dict)

    def ratio(self, other: str) -> Optional[float]:
        """ffcode's speed relative to `other` (other's time / ffcode's time; > 1: ffcode faster)."""
        t, t_ff = self.median.get(other), self.median.get("ffcode")
        return None if t is None or t_ff is None else t / t_ff

    def gops(self, backend: str) -> Optional[float]:
        t = self.median.get(backend)
        work = {"matmul": 2 * self.n**3, "matvec": 2 * self.n**2}.get(self.op)
        return None if work is None or t is None else work / t / 1e9


def measure(op: str, p: int, n: int, timer: Timer) -> Row:
    """Time every backend on one (op, p, n) after checking ffcode against flint and galois."""
    with_galois = galois_measured(op, p, n)
    calls = CALLS[op](Inputs.make(p, n, with_galois))
    row = Row(op, p, n)
    results = {}
    for backend in BACKENDS:
        if backend == "galois" and not with_galois:
            row.median[backend] = None
            continue
        row.median[backend], row.repeats[backend], results[backend] = timer(calls[backend])
    expected = exact_value(results["ffcode"])
    for reference in ("flint", "galois"):
        if reference in results and not same(expected, exact_value(results[reference])):
            sys.exit(f"\nABORT: ffcode {op} differs from {reference} at p = {p}, n = {n}: "
                     f"ffcode returned a wrong result, the timings would be meaningless.")
    return row


# -- output -----------------------------------------------------------------------------------------


class Table:
    """Prints rows as they are measured, in aligned columns."""
    COLUMNS = (("op", 7, "<"), ("p", 10, "<"), ("n", 5, ">"),
               ("ffcode ms", 11, ">"), ("galois ms", 11, ">"), ("flint ms", 11, ">"),
               ("float64 ms", 11, ">"), ("ffcode GOP/s", 13, ">"), ("f64 GOP/s", 10, ">"),
               ("vs galois", 10, ">"), ("vs flint", 9, ">"), ("vs f64", 8, ">"))

    def _line(self, cells) -> str:
        return "  ".join(f"{c:{align}{width}}" for c, (_, width, align) in zip(cells, self.COLUMNS))

    def header(self) -> None:
        line = self._line([name for name, _, _ in self.COLUMNS])
        print(line + "\n" + "-" * len(line), flush=True)

    def row(self, r: Row) -> None:
        ms = [fmt(None if r.median[b] is None else 1e3 * r.median[b], ".2f") for b in BACKENDS]
        print(self._line([r.op, prime_label(r.p), r.n, *ms,
                          fmt(r.gops("ffcode"), ".1f"), fmt(r.gops("float64"), ".1f"),
                          fmt(r.ratio("galois"), ".2f", "×"), fmt(r.ratio("flint"), ".2f", "×"),
                          fmt(r.ratio("float64"), ".2f", "×")]), flush=True)


# -- targets ------------------------------------------------------------------------------------------


def galois_extrapolated(rows: Dict[tuple, Row], p: int, n: int) -> tuple:
    """ffcode's speed over galois at n, galois's time scaled by n³ from its largest measured n."""
    measured = [r for (op, q, _), r in rows.items()
                if op == "matmul" and q == p and r.median.get("galois") is not None]
    if not measured:
        return None, ""
    base = max(measured, key=lambda r: r.n)
    t_galois = base.median["galois"] * (n / base.n) ** 3
    return t_galois / rows["matmul", p, n].median["ffcode"], \
        f"  [extrapolated: galois time at n={base.n} scaled by (n/{base.n})³]"


def targets(rows: Dict[tuple, Row]) -> List[tuple]:
    def sizes(op, p, at_least):
        return sorted(n for (o, q, n) in rows if o == op and q == p and n >= at_least)

    out = []
    if not sizes("matmul", 65521, 1024):
        out.append(("n/a", "n/a   p = 65521, n ≥ 1024 matmul targets: not measured in this run"))
    for n in sizes("matmul", 65521, 1024):
        r = rows["matmul", 65521, n]
        out.append(check(f"matmul p=65521 n={n}: ffcode / float64 throughput",
                         r.ratio("float64"), 0.7))
        out.append(check(f"matmul p=65521 n={n}: ffcode speed / galois", r.ratio("galois"), 1))
        out.append(check(f"matmul p=65521 n={n}: ffcode speed / flint", r.ratio("flint"), 1))
    for p in (2**31 - 1, 4294967291):
        name = prime_label(p)
        if not sizes("matmul", p, 1024):
            out.append(("n/a", f"n/a   p = {name}, n ≥ 1024 matmul targets: "
                               f"not measured in this run"))
        for n in sizes("matmul", p, 1024):
            r = rows["matmul", p, n]
            out.append(check(f"matmul p={name} n={n}: ffcode / float64 throughput",
                             r.ratio("float64"), 0.25))
            out.append(check(f"matmul p={name} n={n}: ffcode speed / flint", r.ratio("flint"), 2))
            if r.ratio("galois") is not None:
                out.append(check(f"matmul p={name} n={n}: ffcode speed / galois",
                                 r.ratio("galois"), 10))
            else:
                ratio, note = galois_extrapolated(rows, p, n)
                out.append(check(f"matmul p={name} n={n}: ffcode speed / galois", ratio, 10,
                                 note or " (galois not timed at any n for this p)"))
    p61 = 2**61 - 1
    if not sizes("matmul", p61, 0):
        out.append(("n/a", "n/a   p = 2^61-1 matmul target: not measured in this run"))
    for n in sizes("matmul", p61, 0):
        out.append(check(f"matmul p=2^61-1 n={n}: ffcode speed / flint",
                         rows["matmul", p61, n].ratio("flint"), 1))
    linalg_512 = [(op, p) for (op, p, n) in rows if op in LINALG_OPS and n == 512]
    if not linalg_512:
        out.append(("n/a", "n/a   rank / solve / matinv n = 512 targets: not measured in this run"))
    for op, p in linalg_512:
        out.append(check(f"{op} p={prime_label(p)} n=512: ffcode speed / flint",
                         rows[op, p, 512].ratio("flint"), 1))
    return out


# -- command line -------------------------------------------------------------------------------------


def op_list(text: str) -> List[str]:
    ops = [part.strip() for part in text.split(",") if part.strip()]
    unknown = set(ops) - set(OPS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown ops {sorted(unknown)}; choose from {OPS}")
    return ops


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: matmul n in {256, 512}, linalg n in {128, 256}, "
                         "fewer repeats")
    ap.add_argument("--sizes", type=int_list, metavar="N,N,...",
                    help=f"matmul sizes (default {','.join(map(str, MATMUL_SIZES))})")
    ap.add_argument("--linalg-sizes", type=int_list, metavar="N,N,...",
                    help=f"rank/solve/matinv sizes (default {','.join(map(str, LINALG_SIZES))})")
    ap.add_argument("--primes", type=int_list, metavar="P,P,...",
                    help="primes for every op, e.g. 65521,2**61-1 (default: matmul "
                         "65521,2**31-1,4294967291,2**61-1; linalg 65521,2**31-1,2**61-1)")
    ap.add_argument("--ops", type=op_list, default=list(OPS), metavar="OP,OP,...",
                    help=f"subset of {','.join(OPS)} (default: all)")
    ap.add_argument("--json", metavar="FILE", help="also write all raw medians to FILE")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    flint.ctx.threads = n_cores()       # numpy's BLAS uses every core too
    timer = Timer(budget=0.25, min_repeats=2, max_repeats=3) if args.quick else Timer()
    matmul_sizes = args.sizes or (QUICK_MATMUL_SIZES if args.quick else MATMUL_SIZES)
    matvec_sizes = args.sizes or (QUICK_MATVEC_SIZES if args.quick else MATVEC_SIZES)
    linalg_sizes = args.linalg_sizes or (QUICK_LINALG_SIZES if args.quick else LINALG_SIZES)
    plan = [(op, p, n) for op in args.ops
            for p in (args.primes or (LINALG_PRIMES if op in LINALG_OPS else MATMUL_PRIMES))
            for n in {"matmul": matmul_sizes, "matvec": matvec_sizes}.get(op, linalg_sizes)]
    for p in sorted({p for _, p, _ in plan}):
        try:
            ffcode.GF(p)
        except ValueError as e:         # not prime or out of range: fail before timing
            sys.exit(f"--primes: {e}")

    info = machine_info()
    print("ffcode GF(p) benchmark" + (" (--quick)" if args.quick else ""))
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  {'timing':18} warm-up + median of {timer.min_repeats}..{timer.max_repeats} "
          f"repeats (until {timer.budget:g} s spent)")
    print("""
Times are medians in ms. GOP/s = 2 n³ (matmul) or 2 n² (matvec) / time. "vs X" = X's time /
ffcode's time: ffcode's speed relative to X (> 1: ffcode faster; vs f64 = fraction of the
float64 BLAS throughput). float64 is the BLAS roof on the same matrices, no reduction mod p, not exact:
""" + "; ".join(f"{op}: {what}" for op, what in FLOAT64_NOTE.items() if op in args.ops) + """.
Conversions into flint / galois objects are done before timing. ffcode's results are
checked against flint's (and galois's where timed) once per row; the run aborts on a mismatch.
"—" under galois: skipped, too slow — for p ≥ 2^31-1 galois computes with Python objects /
non-BLAS loops (~0.01-0.05 GOP/s), so it is timed only at n ≤ """
          f"{GALOIS_SLOW_MAX_N['matmul']} (matmul) and n ≤ {GALOIS_SLOW_MAX_N['rank']} (linalg).\n")

    table = Table()
    table.header()
    rows: Dict[tuple, Row] = {}
    current_op = None
    for op, p, n in plan:
        if current_op is not None and op != current_op:
            print()
        current_op = op
        rows[op, p, n] = measure(op, p, n, timer)
        table.row(rows[op, p, n])

    print()
    results = targets(rows)
    print_targets(results, start)
    elapsed = time.perf_counter() - start

    if args.json:
        payload = {
            "machine": info, "quick": args.quick, "elapsed_s": elapsed,
            "timer": {"budget_s": timer.budget, "min_repeats": timer.min_repeats,
                      "max_repeats": timer.max_repeats},
            "rows": [{"op": r.op, "p": r.p, "n": r.n, "median_s": r.median,
                      "repeats": r.repeats,
                      "gops": {b: r.gops(b) for b in BACKENDS} if r.op == "matmul" else None,
                      "ffcode_speed_vs": {b: r.ratio(b) for b in BACKENDS if b != "ffcode"}}
                     for r in rows.values()],
            "targets": [{"verdict": v, "line": line} for v, line in results],
        }
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=1, default=str)
        print(f"raw medians written to {args.json}")


if __name__ == "__main__":
    main()
