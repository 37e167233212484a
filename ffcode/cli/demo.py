"""``ffcode demo``: exact GF(p) arithmetic checked twice, against Python integers. (The
coded jobs over worker processes are ``ffcode run``.)

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode demo")
>>> add_arguments(parser)
>>> args = parser.parse_args(["--p", "2**61-1", "--n", "64"])
>>> args.p == 2**61 - 1, args.n, args.seed
(True, 64, 0)
"""
import argparse
import time

import numpy as np

from ffcode import checks
from ffcode.cli.args import argument_parser, int_expression, integer, namespace
from ffcode.field import GF, PrimeField


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode demo': the prime, the matrices' size, the seed."""
    argument_parser(parser)
    parser.add_argument("--p", type=int_expression, default=2**31 - 1, metavar="P",
                        help="prime modulus, e.g. 65521 or 2**61-1 (default 2**31-1)")
    parser.add_argument("--n", type=integer(low=1), default=1024, help="matrix size")
    parser.add_argument("--seed", type=integer(low=0), default=0, help="seed of the data")


def main(args: argparse.Namespace) -> int:
    """The demo the arguments ask for: 0 when every check passed, else 1."""
    return run(namespace(args).p, args.n, args.seed)


def field_checks(F, n: int, seed: int) -> bool:
    """An n x n product and solve, checked against exact Python integers."""
    if not isinstance(F, PrimeField):
        raise TypeError(f"Argument 'F' must be a field (ffcode.GF(p)), not {type(F).__name__}.")
    n, seed = checks.integer(n, "n", low=1), checks.integer(seed, "seed", low=0)
    A, B = F.random((n, n), seed=seed), F.random((n, n), seed=seed + 1)
    F.matmul(A, B)  # warm up BLAS threads
    t = time.perf_counter()
    C = F.matmul(A, B)
    elapsed = time.perf_counter() - t
    print(f"  C = A @ B      {elapsed * 1e3:8.1f} ms  ({2 * n**3 / elapsed / 1e9:.1f} GOP/s)")

    # Second method: Python integers, exact by construction. A random projection
    # (Freivalds) checks all of C, and a few entries are recomputed in full.
    rng = np.random.default_rng(seed + 2)
    x = [int(v) for v in rng.integers(0, F.p, n)]
    Ao, Bo, Co = (M.astype(object) for M in (A, B, C))
    freivalds = np.array_equal((Ao @ ((Bo @ x) % F.p)) % F.p, (Co @ x) % F.p)
    picks = rng.integers(0, n, (8, 2))
    entries = all(int(C[i, j]) == sum(int(a) * int(b) for a, b in zip(A[i], B[:, j])) % F.p
                  for i, j in picks)
    print(f"  check with Python integers: Freivalds projection "
          f"{'ok' if freivalds else 'FAILED'}, 8 entries {'ok' if entries else 'FAILED'}")

    x_true = F.random(n, seed=seed + 3)
    t = time.perf_counter()
    x_solved = F.solve(A, F.matmul(A, x_true))
    elapsed = time.perf_counter() - t
    solved = np.array_equal(x_solved, x_true)
    print(f"  solve A x = b  {elapsed * 1e3:8.1f} ms  recovers x exactly: "
          f"{'ok' if solved else 'FAILED'}; rank(A) = {F.rank(A)}")
    return freivalds and entries and solved


def run(p: int, n: int, seed: int = 0) -> int:
    """Check n x n arithmetic in GF(p) and print what was checked: 0 when all passed, else
    1; ValueError for a p that is not prime or sizes out of range, before any output."""
    F = GF(p)
    n, seed = checks.integer(n, "n", low=1), checks.integer(seed, "seed", low=0)
    print(f"ffcode demo: exact arithmetic in {F} (elements {F.dtype}), {n}x{n} matrices")
    ok = field_checks(F, n, seed)
    print("demo", "passed" if ok else "FAILED")
    return 0 if ok else 1
