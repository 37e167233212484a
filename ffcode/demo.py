"""``ffcode demo``: exact GF(p) arithmetic checked twice, then a coded matrix product over
local worker processes that decodes from the fastest workers while two stragglers lag."""
import multiprocessing
import os
import time

import numpy as np

from ffcode._field import GF
from ffcode.codes import PolynomialCode


def field_checks(F, n: int, seed: int) -> bool:
    """An n x n product and solve, checked against exact Python integers."""
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
    x = F.solve(A, F.matmul(A, x_true))
    elapsed = time.perf_counter() - t
    solved = np.array_equal(x, x_true)
    print(f"  solve A x = b  {elapsed * 1e3:8.1f} ms  recovers x exactly: "
          f"{'ok' if solved else 'FAILED'}; rank(A) = {F.rank(A)}")
    return freivalds and entries and solved


def _work(code, i: int, share, delay: float, results) -> None:
    time.sleep(delay)           # an injected straggler
    results.put((i, code.compute(share)))


def coded_run(F, n: int, seed: int, workers: int = 6, stragglers: int = 2,
              delay: float = 3.0, timeout: float = 120.0) -> bool:
    """C = A @ B with a polynomial code (a = b = 2, R = 4) over `workers` local processes;
    the last `stragglers` workers start `delay` seconds late and are never waited for."""
    code = PolynomialCode(F, a=2, b=2, n_workers=workers)
    A, B = F.random((n, n), seed=seed + 4), F.random((n, n), seed=seed + 5)
    R = code.recovery_threshold
    print(f"  {type(code).__name__}(a=2, b=2) over {workers} worker processes, "
          f"recovery threshold {R}; workers {list(range(workers - stragglers, workers))} "
          f"straggle by {delay:g} s")
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    t0 = time.perf_counter()
    shares = code.encode(A, B)
    processes = [context.Process(target=_work, daemon=True, args=(
        code, i, shares[i], delay if i >= workers - stragglers else 0.0, queue))
        for i in range(workers)]
    # One BLAS thread per worker process: the workers already fill the cores.
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        for process in processes:
            process.start()
        results = dict(queue.get(timeout=timeout) for _ in range(R))
        C = code.decode(results)
        elapsed = time.perf_counter() - t0
    finally:
        for process in processes:
            process.terminate()     # the stragglers are not needed any more
            process.join(timeout=10)
        if saved is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved
    exact = np.array_equal(C, F.matmul(A, B))
    print(f"  decoded from workers {sorted(results)} in {elapsed:.2f} s (process start-up "
          f"included), without the stragglers; equals A @ B: {'ok' if exact else 'FAILED'}")
    return exact


def run(p: int, n: int, seed: int) -> int:
    F = GF(p)
    if n < 2:
        raise ValueError(f"Argument 'n' must be at least 2 (the code splits A and B in two), "
                         f"not {n}.")
    print(f"ffcode demo: exact arithmetic in {F} (elements {F.dtype}), {n}x{n} matrices")
    ok = field_checks(F, n, seed)
    ok = coded_run(F, n, seed) and ok
    print("demo", "passed" if ok else "FAILED")
    return 0 if ok else 1
