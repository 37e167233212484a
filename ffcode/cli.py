"""The ffcode command line: ``ffcode demo`` (or ``python -m ffcode demo`` outside the source tree)."""
import argparse
import sys
import time

import numpy as np

from ffcode._field import GF


def _demo(args) -> int:
    F = GF(args.p)
    n = args.n
    A, B = F.random((n, n), seed=args.seed), F.random((n, n), seed=args.seed + 1)
    print(f"ffcode demo: exact arithmetic in {F} (elements {F.dtype}), {n}x{n} matrices")

    F.matmul(A, B)  # warm up BLAS threads
    t = time.perf_counter()
    C = F.matmul(A, B)
    elapsed = time.perf_counter() - t
    print(f"  C = A @ B      {elapsed * 1e3:8.1f} ms  ({2 * n**3 / elapsed / 1e9:.1f} GOP/s)")

    # Second method: Python integers, exact by construction. A random projection
    # (Freivalds) checks all of C, and a few entries are recomputed in full.
    rng = np.random.default_rng(args.seed + 2)
    x = [int(v) for v in rng.integers(0, F.p, n)]
    Ao, Bo, Co = (M.astype(object) for M in (A, B, C))
    freivalds = np.array_equal((Ao @ ((Bo @ x) % F.p)) % F.p, (Co @ x) % F.p)
    picks = rng.integers(0, n, (8, 2))
    entries = all(int(C[i, j]) == sum(int(a) * int(b) for a, b in zip(A[i], B[:, j])) % F.p
                  for i, j in picks)
    print(f"  check with Python integers: Freivalds projection "
          f"{'ok' if freivalds else 'FAILED'}, 8 entries {'ok' if entries else 'FAILED'}")

    x_true = F.random(n, seed=args.seed + 3)
    t = time.perf_counter()
    x = F.solve(A, F.matmul(A, x_true))
    elapsed = time.perf_counter() - t
    solved = np.array_equal(x, x_true)
    print(f"  solve A x = b  {elapsed * 1e3:8.1f} ms  recovers x exactly: "
          f"{'ok' if solved else 'FAILED'}; rank(A) = {F.rank(A)}")
    ok = freivalds and entries and solved
    print("demo", "passed" if ok else "FAILED")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ffcode", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="an exact GF(p) product and solve, checked twice")
    demo.add_argument("--p", type=int, default=2**31 - 1, help="prime modulus (default 2**31-1)")
    demo.add_argument("--n", type=int, default=1024, help="matrix size (default 1024)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
