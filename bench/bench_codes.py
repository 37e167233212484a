"""Benchmark encoding and decoding of ffcode's polynomial codes against the same codes
written directly with galois and with python-flint, on the same data in one run.

Each code encodes 2048x2048 inputs for N = 16 workers and decodes from R local results
(a fixed random subset of workers, the same for every library). The peers do exactly what
the code does mathematically:
  encode  E @ blocks for each encoded operand (E the N x k Vandermonde / Lagrange matrix,
          or the powers of the points at a product code's exponents, masks included);
  decode  W @ results with W = post @ inverse(V) for the R x R (generalized) Vandermonde V
          of the chosen workers' points (post: nothing for MDS and PolynomialCode, the
          output coefficients' rows for MatDot, EntangledPolynomialCode and GASP, the
          Vandermonde of the betas for LCC); the inverse is timed.
Conversions into galois / flint objects, the peers' encoding matrices and the peers' masks
(LCC's, GASP's) are prepared before timing; ffcode's timings are the public calls
(code.encode, code.decode) with every check, copy and its own CSPRNG masks included. Every peer result is
checked for exact equality with ffcode's before timing; the run aborts on a mismatch.
Throughput is MB of data per second: the input operands for encode, the R local results
for decode (4-byte elements for both primes). A last table gives, at the same N, each code's
recovery threshold against the bytes each worker receives and returns.

    python bench/bench_codes.py               # full run (a few minutes on 2 cores)
    python bench/bench_codes.py --quick       # 512x512 inputs, fewer repeats
    python bench/bench_codes.py --primes 65521 --n 1024 --json out.json
    python bench/bench_codes.py --primes 2**31-1 --codes GASP
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

import ffcode
from benchlib import (Timer, check, exact_value, flint, fmt, galois, int_list, machine_info,
                      n_cores, prime_label, print_targets)
from ffcode.codes.base import powers

PRIMES = (65521, 2**31 - 1)
N_WORKERS = 16
SIZE = 2048
QUICK_SIZE = 512
LIBRARIES = ("ffcode", "galois", "flint")


def square(F, X):
    """LCC's f in this benchmark: the elementwise square (degree 2)."""
    return F.mul(X, X)


@dataclass
class Case:
    """One code on one field: ffcode's calls and the peers' matrices, ready to time."""
    name: str
    code: object
    inputs: tuple                    # encode(*inputs)
    operands: List[tuple]            # (E, stacked blocks (k, L)) per encoded operand
    results: Dict[int, np.ndarray]   # the R local results decode gets
    post: Optional[np.ndarray]       # rows x R applied to inverse(V), or None
    encode_bytes: int
    decode_bytes: int
    encoding: object                 # what decode takes with the results


def split_rows(X, k):
    return X.reshape(k, -1)


def split_cols(X, k):
    return np.ascontiguousarray(X.reshape(X.shape[0], k, -1).transpose(1, 0, 2)).reshape(k, -1)


def split_grid(X, r, q):
    """X's r x q blocks, row-major, one per row."""
    n, m = X.shape
    return np.ascontiguousarray(X.reshape(r, n // r, q, m // q).transpose(0, 2, 1, 3)) \
        .reshape(r * q, -1)


def product_operands(F, code, A, B, rng):
    """(E, blocks) of both operands of a product code: the powers of its points at its
    exponents, and the grid blocks with fresh masks appended."""
    out = []
    for X, grid, masks in ((A, code.a_exponents, code.a_masks),
                           (B, code.b_exponents, code.b_masks)):
        blocks = split_grid(X, *grid.shape)
        if masks:
            blocks = np.concatenate([blocks, F.random((len(masks), blocks.shape[1]), rng)])
        out.append((powers(F, code.points, [*grid.flat, *masks]), blocks))
    return out


def make_cases(F, n: int, rng) -> List[Case]:
    A, B = F.random((n, n), seed=rng), F.random((n, n), seed=rng)
    cases = []

    def add(name, code, inputs, operands, post, compute_args=(), data=(A, B)):
        shares = code.encode(*inputs)
        chosen = sorted(rng.choice(code.n_workers, code.recovery_threshold, replace=False))
        results = {int(i): code.compute(shares[i], *compute_args) for i in chosen}
        cases.append(Case(name, code, inputs, operands, results, post,
                          sum(x.nbytes for x in data), sum(y.nbytes for y in results.values()),
                          shares))

    pts = np.arange(1, N_WORKERS + 1)
    k = 8
    code = ffcode.MDS(F, k, N_WORKERS)
    add(f"MDS k={k}", code, (A,), [(F.vandermonde(pts, k), split_rows(A, k))], None, (B,),
        data=(A,))

    a, b = 2, 4
    code = ffcode.PolynomialCode(F, a, b, N_WORKERS)
    V = F.vandermonde(pts, a * b)
    add(f"PolynomialCode a={a} b={b}", code, (A, B),
        [(V[:, :a].copy(), split_rows(A, a)), (V[:, ::a].copy(), split_cols(B, b))], None)

    s = 4
    code = ffcode.MatDot(F, s, N_WORKERS)
    V = F.vandermonde(pts, s)
    post = np.zeros((1, 2 * s - 1), F.dtype)
    post[0, s - 1] = 1
    add(f"MatDot s={s}", code, (A, B),
        [(V, split_cols(A, s)), (V[:, ::-1].copy(), split_rows(B, s))], post)

    k, t = 4, 2
    code = ffcode.LCC(F, k, t, square, 2, N_WORKERS)
    blocks = list(split_rows(A, k).reshape(k, n // k, n))
    masks = F.random((t, n * n // k), seed=rng)
    add(f"LCC k={k} t={t} deg=2", code, (blocks,),
        [(code.encoding_matrix, np.concatenate([split_rows(A, k), masks]))],
        F.vandermonde(code.betas[:k], code.recovery_threshold), data=(A,))

    for name, code in (("Entangled p=2 m=2 n=2", ffcode.EntangledPolynomialCode(
                            F, 2, 2, 2, N_WORKERS)),
                       ("GASP k=4 l=2 t=1", ffcode.GASP(F, 4, 2, 1, N_WORKERS)),
                       ("GASP k=2 l=2 t=2", ffcode.GASP(F, 2, 2, 2, N_WORKERS))):
        add(name, code, (A, B), product_operands(F, code, A, B, rng), code.outputs)
    return cases


# -- the peers ----------------------------------------------------------------------------------

def galois_calls(case: Case, p: int) -> Dict[str, Callable]:
    G = galois.GF(p)
    as_g = lambda X: G(np.asarray(X, dtype=np.int64))                        # noqa: E731
    ops = [(as_g(E), as_g(X)) for E, X in case.operands]
    V = as_g(case.code.evaluations[sorted(case.results)])
    post = None if case.post is None else as_g(case.post)
    Y = as_g(np.stack([case.results[i] for i in sorted(case.results)])
             .reshape(len(case.results), -1))

    def decode():
        W = np.linalg.inv(V)
        return (W if post is None else post @ W) @ Y
    return {"encode": lambda: [E @ X for E, X in ops], "decode": decode}


def to_flint(X: np.ndarray, p: int):
    return flint.nmod_mat(X.shape[0], X.shape[1], X.ravel().tolist(), p)


def flint_calls(case: Case, p: int) -> Dict[str, Callable]:
    ops = [(to_flint(E, p), to_flint(X, p)) for E, X in case.operands]
    V = to_flint(case.code.evaluations[sorted(case.results)], p)
    post = None if case.post is None else to_flint(case.post, p)
    Y = to_flint(np.stack([case.results[i] for i in sorted(case.results)])
                 .reshape(len(case.results), -1), p)

    def decode():
        W = V.inv()
        return (W if post is None else post * W) * Y
    return {"encode": lambda: [E * X for E, X in ops], "decode": decode}


def ffcode_calls(case: Case) -> Dict[str, Callable]:
    return {"encode": lambda: case.code.encode(*case.inputs),
            "decode": lambda: case.code.decode(case.encoding, case.results)}


def reference(case: Case):
    """What the peers must return: E @ blocks by ffcode's matmul (checked against ffcode's
    shares, except for LCC whose masks are fresh on every encode) and ffcode's decoding
    matrix times the results."""
    F, code = case.code.F, case.code
    encoded = [F.matmul(E, X) for E, X in case.operands]
    if not isinstance(code, ffcode.LCC) and not getattr(code, "masks", 0):
        shares = code.encode(*case.inputs)
        parts = [s if isinstance(s, tuple) else (s,) for s in shares]
        ours = [np.stack([s[j] for s in parts]).reshape(len(parts), -1)
                for j in range(len(parts[0]))]
        if not same_list(ours, encoded):
            sys.exit(f"\nABORT: ffcode's {case.name} shares differ from E @ blocks.")
    chosen = sorted(case.results)
    W = code.decoding_matrix(chosen)
    Y = np.stack([case.results[i] for i in chosen]).reshape(len(chosen), -1)
    return encoded, F.matmul(W, Y)


@dataclass
class Row:
    case: str
    p: int
    op: str
    nbytes: int
    median: Dict[str, float] = field(default_factory=dict)

    def ratio(self, other: str) -> float:
        return self.median[other] / self.median["ffcode"]

    def mbps(self, library: str) -> float:
        return self.nbytes / self.median[library] / 1e6


def same_list(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(exact_value(x), exact_value(y))
                                    for x, y in zip(a, b))


def measure(case: Case, p: int, timer: Timer) -> List[Row]:
    calls = {"ffcode": ffcode_calls(case), "galois": galois_calls(case, p),
             "flint": flint_calls(case, p)}
    encoded, decoded = reference(case)
    for lib in ("galois", "flint"):
        ok = same_list(calls[lib]["encode"](), encoded) and \
            np.array_equal(exact_value(calls[lib]["decode"]()), exact_value(decoded))
        if not ok:
            sys.exit(f"\nABORT: {lib}'s {case.name} at p = {p} differs from ffcode's.")
    rows = []
    for op, nbytes in (("encode", case.encode_bytes), ("decode", case.decode_bytes)):
        row = Row(case.name, p, op, nbytes)
        for lib in LIBRARIES:
            row.median[lib] = timer(calls[lib][op])[0]
        rows.append(row)
    return rows


COLUMNS = (("code", 24, "<"), ("p", 8, "<"), ("op", 6, "<"), ("MB", 6, ">"),
           ("ffcode ms", 10, ">"), ("galois ms", 10, ">"), ("flint ms", 9, ">"),
           ("ffcode MB/s", 12, ">"), ("galois MB/s", 12, ">"), ("flint MB/s", 11, ">"),
           ("vs galois", 10, ">"), ("vs flint", 9, ">"))


def line(cells) -> str:
    return "  ".join(f"{c:{align}{width}}" for c, (_, width, align) in zip(cells, COLUMNS))


def show(r: Row) -> str:
    return line([r.case, prime_label(r.p), r.op, fmt(r.nbytes / 1e6, ".1f"),
                 *(fmt(1e3 * r.median[lib], ".1f") for lib in LIBRARIES),
                 *(fmt(r.mbps(lib), ".0f") for lib in LIBRARIES),
                 fmt(r.ratio("galois"), ".1f", "×"), fmt(r.ratio("flint"), ".2f", "×")])


def targets(rows: List[Row]) -> List[tuple]:
    out = []
    for r in rows:
        label = f"{r.case} {r.op} p={prime_label(r.p)}"
        big = r.p == 2**31 - 1
        out.append(check(f"{label}: ffcode speed / flint", r.ratio("flint"), 2 if big else 1))
        out.append(check(f"{label}: ffcode speed / galois", r.ratio("galois"), 10 if big else 1))
    return out


def communication(F, n: int) -> List[str]:
    """Recovery threshold against bytes per worker for codes of n x n products at N: what
    each worker receives (its A and B shares) and returns (its local result), and what the
    master downloads to decode (R results)."""
    N = N_WORKERS
    codes = [("PolynomialCode a=2 b=4", ffcode.PolynomialCode(F, 2, 4, N)),
             ("PolynomialCode a=4 b=4", ffcode.PolynomialCode(F, 4, 4, N)),
             ("MatDot s=4", ffcode.MatDot(F, 4, N)),
             ("MatDot s=8", ffcode.MatDot(F, 8, N)),
             ("Entangled p=2 m=2 n=2", ffcode.EntangledPolynomialCode(F, 2, 2, 2, N)),
             ("Entangled p=2 m=2 n=3", ffcode.EntangledPolynomialCode(F, 2, 2, 3, N)),
             ("Entangled p=4 m=1 n=2", ffcode.EntangledPolynomialCode(F, 4, 1, 2, N)),
             ("GASP k=2 l=2 t=1", ffcode.GASP(F, 2, 2, 1, N)),
             ("GASP k=2 l=2 t=2", ffcode.GASP(F, 2, 2, 2, N)),
             ("GASP k=4 l=2 t=1", ffcode.GASP(F, 4, 2, 1, N))]
    size = np.dtype(F.dtype).itemsize / 2**20
    lines = [f"Recovery threshold against communication, {n}x{n} product, N = {N} workers "
             f"(MiB; the whole A and B are {2 * n * n * size:.0f} MiB):",
             f"  {'code':<24}{'R':>4}{'A share':>9}{'B share':>9}{'result':>8}"
             f"{'download':>10}  privacy"]
    for name, code in codes:
        (r, q), c = code.a_exponents.shape, code.b_exponents.shape[1]
        a_share, b_share, result = (n / r) * (n / q) * size, (n / q) * (n / c) * size, \
            (n / r) * (n / c) * size
        t = getattr(code, "t", 0)
        lines.append(f"  {name:<24}{code.recovery_threshold:>4}{a_share:>9.1f}{b_share:>9.1f}"
                     f"{result:>8.1f}{code.recovery_threshold * result:>10.1f}  "
                     + (f"any {t} worker{'s' * (t > 1)}" if t else "none"))
    return lines


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke test: {QUICK_SIZE}x{QUICK_SIZE} inputs, fewer repeats")
    ap.add_argument("--n", type=int, help=f"input size n x n (default {SIZE})")
    ap.add_argument("--primes", type=int_list, default=list(PRIMES), metavar="P,P,...",
                    help="primes below 2**31 (default 65521,2**31-1)")
    ap.add_argument("--codes", metavar="NAME,NAME,...", help="only the codes whose name starts "
                    "with one of these (e.g. GASP,Entangled; default: every code)")
    ap.add_argument("--json", metavar="FILE", help="also write every median and ratio to FILE")
    args = ap.parse_args(argv)
    args.n = args.n or (QUICK_SIZE if args.quick else SIZE)
    if args.n % 8:
        ap.error("--n must be a multiple of 8 (the benchmark splits inputs in 2, 4 and 8)")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    flint.ctx.threads = n_cores()       # numpy's BLAS uses every core too
    timer = Timer(budget=0.3, min_repeats=2, max_repeats=3) if args.quick else \
        Timer(budget=2.0, min_repeats=3, max_repeats=7)
    print(f"ffcode code benchmark: {args.n}x{args.n} inputs, N = {N_WORKERS} workers"
          + (" (--quick)" if args.quick else ""))
    for key, value in machine_info().items():
        print(f"  {key:18} {value}")
    print("""
Times are medians in ms; "vs X" = X's time / ffcode's time (> 1: ffcode faster).
""")
    header = line([name for name, _, _ in COLUMNS])
    print(header + "\n" + "-" * len(header), flush=True)
    rows: List[Row] = []
    for p in args.primes:
        F = ffcode.GF(p)
        for case in make_cases(F, args.n, np.random.default_rng(2026)):
            if args.codes and not case.name.startswith(tuple(args.codes.split(","))):
                continue
            for row in measure(case, p, timer):
                rows.append(row)
                print(show(row), flush=True)
        print()
    print("\n".join(communication(ffcode.GF(args.primes[-1]), args.n)) + "\n")
    results = targets(rows)
    print_targets(results, start)
    elapsed = time.perf_counter() - start
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "n": args.n, "n_workers": N_WORKERS,
                       "rows": [{"code": r.case, "p": r.p, "op": r.op, "bytes": r.nbytes,
                                 "median_s": r.median, "mb_per_s": {
                                     lib: r.mbps(lib) for lib in LIBRARIES},
                                 "ffcode_speed_vs": {lib: r.ratio(lib)
                                                     for lib in ("galois", "flint")}}
                                for r in rows],
                       "targets": [{"verdict": v, "line": t} for v, t in results],
                       "elapsed_s": elapsed}, f, indent=1, default=str)
        print(f"raw medians written to {args.json}")


if __name__ == "__main__":
    main()
