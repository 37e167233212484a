"""Benchmark ffcode's GF(p) matmul, matvec (A @ x), rank, solve and matinv against
FFLAS-FFPACK, galois, python-flint and float64 BLAS, on the same inputs in one run.

Every library gets the same random matrices, converted into its own types once, before
timing (FFLAS-FFPACK through a small C++ library compiled on first use and called in-process
through ctypes; see fflas_peer.py). The contenders of one configuration are timed
interleaved: a warm-up call each, then rounds of one call per contender in turn until the
time budget is spent (at least a minimum number of rounds). Each contender's min and median
are reported; the ratios come from the mins, which a noisy shared machine disturbs least.
Before timing, every warm-up result is checked for exact equality with ffcode's; the run
aborts on a mismatch.

    python bench/bench_gfp.py                  # full run (10-20 minutes on 2 cores)
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
import fflas_peer
from benchlib import (Interleaved, Timing, check, exact_value, flint, galois, int_list,
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
BACKENDS = ("ffcode", "fflas", "galois", "flint", "float64")     # also the order of a round
PEER_NAMES = {"fflas": "FFLAS-FFPACK", "galois": "galois", "flint": "python-flint"}

# galois is fast for small p (float64 BLAS); from 2**31 - 1 on it computes with Python
# objects or non-BLAS loops (~0.01-0.05 GOP/s), so there it is only timed up to these n.
GALOIS_SLOW_P = 2**31 - 1
GALOIS_SLOW_MAX_N = {"matmul": 256, "matvec": 1024, "rank": 128, "solve": 128, "matinv": 128}
# Above 2^32.5 FFLAS-FFPACK eliminates in Modular<Integer> (GMP elements): its rank / solve
# / inverse take seconds at n = 128, so there linalg is timed only up to this n.
FFLAS_SLOW_FIELD = "Modular<Integer>"
FFLAS_SLOW_MAX_N = 128

FLOAT64_NOTE = {
    "matmul": "A @ B",
    "matvec": "A @ x (dgemv)",
    "rank": "numpy.linalg.slogdet (LAPACK LU)",
    "solve": "numpy.linalg.solve",
    "matinv": "numpy.linalg.inv",
}

# Targets, from the min-to-min ratios of one run. matmul at n >= 1024: (peer, minimum) per
# prime, "float64" meaning ffcode's fraction of the dgemm throughput. rank / solve / matinv:
# ffcode's speed over python-flint's at each n, for every prime.
MATMUL_TARGETS = {
    65521: (("float64", 0.95), ("fflas", 1), ("galois", 1), ("flint", 1)),
    2**31 - 1: (("float64", 0.5), ("galois", 10)),
    4294967291: (("float64", 0.4), ("galois", 10)),
    2**61 - 1: (("float64", 0.16), ("flint", 2)),
}
MATMUL_TARGET_MIN_N = 1024
LINALG_TARGETS = {128: 1, 256: 1, 512: 1.3}


# -- inputs and the measured calls --------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def galois_field(p: int):
    return galois.GF(p)


def galois_measured(op: str, p: int, n: int) -> bool:
    return p < GALOIS_SLOW_P or n <= GALOIS_SLOW_MAX_N[op]


def fflas_measured(fflas: Optional[fflas_peer.Library], op: str, p: int, n: int) -> bool:
    return fflas is not None and (op not in LINALG_OPS or n <= FFLAS_SLOW_MAX_N
                                  or fflas.field(p, products=False) != FFLAS_SLOW_FIELD)


def to_flint(X: np.ndarray, p: int):
    return flint.nmod_mat(X.shape[0], X.shape[1], X.ravel().tolist(), p)


@dataclass
class Inputs:
    """One configuration's operands, in every library's own type (converted once). b is B's
    first column (matvec's right-hand side)."""
    F: ffcode.PrimeField
    A: np.ndarray
    B: np.ndarray
    fA: object
    fB: object
    xA: np.ndarray
    xB: np.ndarray
    gA: object = None
    gB: object = None

    @property
    def b(self) -> np.ndarray:
        return np.ascontiguousarray(self.B[:, :1])

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
    """A @ b, b as an n x 1 matrix in every library."""
    b = x.b
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


def fflas_call(op: str, x: Inputs, fflas: fflas_peer.Library) -> tuple:
    """FFLAS-FFPACK's call for op on x (the operands converted now, outside any timing) and
    the function that turns what the call returned into an exact value."""
    products = op in ("matmul", "matvec")
    peer = fflas.peer(x.F.p, products, x.A, x.b if op == "matvec" else x.B)
    if products:
        return peer.matmul, lambda _: peer.value()
    if op == "rank":
        return peer.rank, int
    return (peer.solve if op == "solve" else peer.inverse), peer.value


# -- one configuration ----------------------------------------------------------------------------

@dataclass
class Row:
    op: str
    p: int
    n: int
    timings: Dict[str, Optional[Timing]] = field(default_factory=dict)   # None = not timed

    def seconds(self, backend: str, stat: str = "min") -> Optional[float]:
        timing = self.timings.get(backend)
        return None if timing is None else getattr(timing, stat)

    def ratio(self, other: str, stat: str = "min") -> Optional[float]:
        """ffcode's speed relative to `other` (other's time / ffcode's time; > 1: ffcode
        faster), from both contenders' min (or median) times."""
        t, t_ff = self.seconds(other, stat), self.seconds("ffcode", stat)
        return None if t is None or t_ff is None else t / t_ff

    def gops(self, backend: str) -> Optional[float]:
        t = self.seconds(backend)
        work = {"matmul": 2 * self.n**3, "matvec": 2 * self.n**2}.get(self.op)
        return None if work is None or t is None else work / t / 1e9


def measure(op: str, p: int, n: int, timer: Interleaved,
            fflas: Optional[fflas_peer.Library]) -> Row:
    """Time every backend on one (op, p, n), interleaved, after checking each one's warm-up
    result against ffcode's."""
    x = Inputs.make(p, n, galois_measured(op, p, n))
    calls = CALLS[op](x)
    if x.gA is None:
        del calls["galois"]
    exact = {name: exact_value for name in calls}
    if fflas_measured(fflas, op, p, n):
        calls["fflas"], exact["fflas"] = fflas_call(op, x, fflas)
    calls = {name: calls[name] for name in BACKENDS if name in calls}

    def verify(results: Dict[str, object]) -> None:
        expected = exact_value(results["ffcode"])
        for peer in PEER_NAMES:
            if peer in results and not same(expected, exact[peer](results[peer])):
                sys.exit(f"\nABORT: ffcode {op} differs from {PEER_NAMES[peer]} at p = {p}, "
                         f"n = {n}: one of them is wrong, the timings would be meaningless.")

    timings = timer(calls, verify)
    return Row(op, p, n, {name: timings.get(name) for name in BACKENDS})


# -- output -----------------------------------------------------------------------------------------


def ms(seconds: Optional[float]) -> str:
    """Milliseconds, with two or three significant digits."""
    if seconds is None:
        return "—"
    value = 1e3 * seconds
    return f"{value:.{0 if value >= 100 else 1 if value >= 10 else 2 if value >= 1 else 3}f}"


def min_median(timing: Optional[Timing]) -> str:
    if timing is None:
        return "—"
    if len(timing.times) == 1:
        return ms(timing.min)
    return f"{ms(timing.min)}/{ms(timing.median)}"


def ratio_cell(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.2f}×"


class Table:
    """Prints rows as they are measured, in aligned columns (one time column per backend)."""

    def __init__(self, backends: List[str]):
        self.backends = backends
        others = [b for b in backends if b != "ffcode"]
        self.columns = ([("op", 7, "<"), ("p", 7, "<"), ("n", 5, ">"), ("rounds", 6, ">")]
                        + [(f"{b} ms", 13, ">") for b in backends]
                        + [("ffcode GOP/s", 12, ">")]
                        + [(f"vs {'f64' if b == 'float64' else b}", 9, ">") for b in others])
        self.others = others

    def _line(self, cells) -> str:
        return "  ".join(f"{c:{align}{width}}" for c, (_, width, align) in zip(cells, self.columns))

    def header(self) -> None:
        line = self._line([name for name, _, _ in self.columns])
        print(line + "\n" + "-" * len(line), flush=True)

    def row(self, r: Row) -> None:
        gops = r.gops("ffcode")
        print(self._line([r.op, prime_label(r.p), r.n, len(r.timings["ffcode"].times),
                          *(min_median(r.timings[b]) for b in self.backends),
                          "—" if gops is None else f"{gops:.1f}",
                          *(ratio_cell(r.ratio(b)) for b in self.others)]), flush=True)


# -- targets ------------------------------------------------------------------------------------------


def galois_extrapolated(rows: Dict[tuple, Row], p: int, n: int) -> tuple:
    """ffcode's speed over galois at n, galois's min time scaled by n³ from its largest
    measured n (and the same for the medians)."""
    measured = [r for (op, q, _), r in rows.items()
                if op == "matmul" and q == p and r.timings.get("galois") is not None]
    if not measured:
        return None, None, ""
    base = max(measured, key=lambda r: r.n)
    scale, row = (n / base.n) ** 3, rows["matmul", p, n]
    return (scale * base.seconds("galois") / row.seconds("ffcode"),
            scale * base.seconds("galois", "median") / row.seconds("ffcode", "median"),
            f"  [extrapolated: galois time at n={base.n} scaled by (n/{base.n})³]")


def target_line(r: Row, peer: str, minimum: float, ratio=None, median=None,
                note: str = "") -> tuple:
    what = ("ffcode / float64 throughput" if peer == "float64"
            else f"ffcode speed / {PEER_NAMES[peer]}")
    if ratio is None:
        ratio, median = r.ratio(peer), r.ratio(peer, "median")
    medians = "" if median is None else f"  [medians: {median:.2f}×]"
    return check(f"{r.op} p={prime_label(r.p)} n={r.n}: {what}", ratio, minimum,
                 medians + note)


def targets(rows: Dict[tuple, Row], fflas_note: str) -> List[tuple]:
    """The verdicts for the ops and primes of this run (n/a where it lacks the sizes)."""
    out = []
    for p, goals in MATMUL_TARGETS.items():
        run = [n for (op, q, n) in rows if op == "matmul" and q == p]
        measured = sorted(n for n in run if n >= MATMUL_TARGET_MIN_N)
        if run and not measured:
            out.append(("n/a", f"n/a   matmul p={prime_label(p)}, n ≥ {MATMUL_TARGET_MIN_N} "
                               f"targets: not measured in this run"))
        for n in measured:
            r = rows["matmul", p, n]
            for peer, minimum in goals:
                if peer == "galois" and r.timings.get("galois") is None:
                    ratio, median, note = galois_extrapolated(rows, p, n)
                    out.append(target_line(r, peer, minimum, ratio, median,
                                           note or " (galois not timed at any n for this p)"))
                elif peer == "fflas" and r.timings.get("fflas") is None:
                    out.append(target_line(r, peer, minimum, note=f" ({fflas_note})"))
                else:
                    out.append(target_line(r, peer, minimum))
    linalg = [r for (op, _, _), r in rows.items() if op in LINALG_OPS]
    if linalg and not any(r.n in LINALG_TARGETS for r in linalg):
        out.append(("n/a", "n/a   rank / solve / matinv at n = "
                           f"{', '.join(map(str, LINALG_TARGETS))}: not measured in this run"))
    for r in linalg:
        if r.n in LINALG_TARGETS:
            out.append(target_line(r, "flint", LINALG_TARGETS[r.n]))
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
                    help="smoke test: matmul n in {256, 512}, matvec n in {256, 1024}, "
                         "linalg n in {128, 256}, fewer rounds")
    ap.add_argument("--sizes", type=int_list, metavar="N,N,...",
                    help=f"matmul and matvec sizes (default matmul "
                         f"{','.join(map(str, MATMUL_SIZES))}, matvec "
                         f"{','.join(map(str, MATVEC_SIZES))})")
    ap.add_argument("--linalg-sizes", type=int_list, metavar="N,N,...",
                    help=f"rank/solve/matinv sizes (default {','.join(map(str, LINALG_SIZES))})")
    ap.add_argument("--primes", type=int_list, metavar="P,P,...",
                    help="primes for every op, e.g. 65521,2**61-1 (default: matmul and matvec "
                         "65521,2**31-1,4294967291,2**61-1; linalg 65521,2**31-1,2**61-1)")
    ap.add_argument("--ops", type=op_list, default=list(OPS), metavar="OP,OP,...",
                    help=f"subset of {','.join(OPS)} (default: all)")
    ap.add_argument("--no-fflas", action="store_true",
                    help="leave FFLAS-FFPACK out (no compilation, no column)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write every round's time, the mins, medians and ratios to FILE")
    return ap.parse_args(argv)


def load_fflas(args) -> tuple:
    """(the FFLAS-FFPACK peer or None, a note on it for the machine description)."""
    if args.no_fflas:
        return None, "not timed (--no-fflas)"
    try:
        fflas = fflas_peer.load()
    except fflas_peer.Unavailable as e:
        print(f"FFLAS-FFPACK not timed: {e}")
        return None, f"not timed: {e}"
    return fflas, f"{fflas.version}, on {fflas.blas}"


def fflas_fields(fflas: fflas_peer.Library, p: int) -> str:
    products, elimination = fflas.field(p, products=True), fflas.field(p, products=False)
    return f"{prime_label(p)}: {products}" + (
        "" if products == elimination else f" (linalg: {elimination})")


def plan_of(args) -> List[tuple]:
    """The (op, p, n) cases to time, in order; exits on a --primes entry that is no field."""
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
    return plan


def print_legend(args, info: dict, timer: Interleaved, fflas) -> None:
    """The machine, the timing method and how to read the table."""
    print("ffcode GF(p) benchmark" + (" (--quick)" if args.quick else ""))
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  {'timing':18} interleaved: a warm-up each, then {timer.min_rounds}..."
          f"{timer.max_rounds} rounds of every contender in turn (until {timer.budget:g} s "
          f"spent); min and median per contender")
    print(f"""
Times are in ms: min/median over the rounds (one number: timed once, as its warm-up took
over {timer.slow:g} s). GOP/s = 2 n³ (matmul) or 2 n² (matvec) / min time. "vs X" = X's
min time / ffcode's min time: ffcode's speed relative to X (> 1: ffcode faster; vs f64 =
fraction of the float64 BLAS throughput). float64 is the BLAS roof on the same matrices,
no reduction mod p, not exact: """ + "; ".join(f"{op}: {what}" for op, what in FLOAT64_NOTE.items()
                                   if op in args.ops) + """.
Conversions into flint / galois / FFLAS objects are done before timing. Every warm-up
result is checked against ffcode's exactly before the rounds; the run aborts on a mismatch.
"—" under galois: skipped, too slow — for p ≥ 2^31-1 galois computes with Python objects /
non-BLAS loops (~0.01-0.05 GOP/s), so it is timed only at n ≤ """
          f"{GALOIS_SLOW_MAX_N['matmul']} (matmul) and n ≤ {GALOIS_SLOW_MAX_N['rank']} (linalg)."
          + ("" if fflas is None else
             f"\n\"—\" under fflas: linalg in {FFLAS_SLOW_FIELD} (p > 2^32.5) is timed only "
             f"at n ≤ {FFLAS_SLOW_MAX_N}.") + "\n")


def run_plan(plan: List[tuple], timer: Interleaved, fflas) -> Dict[tuple, Row]:
    """Every case timed and printed as a table row, a blank line between ops."""
    table = Table([b for b in BACKENDS if b != "fflas" or fflas is not None])
    table.header()
    rows: Dict[tuple, Row] = {}
    current_op = None
    for op, p, n in plan:
        if current_op is not None and op != current_op:
            print()
        current_op = op
        rows[op, p, n] = measure(op, p, n, timer, fflas)
        table.row(rows[op, p, n])
    return rows


def write_json(path: str, args, info: dict, elapsed: float, timer: Interleaved,
               rows: Dict[tuple, Row], results: List[tuple]) -> None:
    payload = {
        "machine": info, "quick": args.quick, "elapsed_s": elapsed,
        "timer": {"budget_s": timer.budget, "min_rounds": timer.min_rounds,
                  "max_rounds": timer.max_rounds, "slow_s": timer.slow},
        "rows": [{"op": r.op, "p": r.p, "n": r.n,
                  "times_s": {b: None if t is None else t.times
                              for b, t in r.timings.items()},
                  "min_s": {b: r.seconds(b) for b in BACKENDS},
                  "median_s": {b: r.seconds(b, "median") for b in BACKENDS},
                  "gops": {b: r.gops(b) for b in BACKENDS},
                  "ffcode_speed_vs": {b: r.ratio(b) for b in BACKENDS if b != "ffcode"},
                  "ffcode_speed_vs_medians": {b: r.ratio(b, "median")
                                              for b in BACKENDS if b != "ffcode"}}
                 for r in rows.values()],
        "targets": [{"verdict": v, "line": line} for v, line in results],
    }
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, default=str)
    print(f"raw times written to {path}")


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    flint.ctx.threads = n_cores()       # numpy's BLAS uses every core too
    timer = (Interleaved(budget=0.5, min_rounds=2, max_rounds=5) if args.quick
             else Interleaved(budget=3.0, min_rounds=3, max_rounds=15))
    plan = plan_of(args)
    fflas, fflas_note = load_fflas(args)
    info = machine_info()
    info["fflas-ffpack"] = fflas_note
    if fflas is not None:
        info["fflas fields"] = "; ".join(fflas_fields(fflas, p)
                                         for p in sorted({p for _, p, _ in plan}))
    print_legend(args, info, timer, fflas)
    rows = run_plan(plan, timer, fflas)
    print()
    results = targets(rows, f"FFLAS-FFPACK {fflas_note}")
    print_targets(results, start)
    elapsed = time.perf_counter() - start
    if args.json:
        write_json(args.json, args, info, elapsed, timer, rows, results)


if __name__ == "__main__":
    main()
