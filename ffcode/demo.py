"""``ffcode demo``: exact GF(p) arithmetic checked twice, then a coded matrix product over
local worker processes with injected stragglers, decoded classically (the R fastest whole
results) and at full speed (streamed blocks, stragglers' partial work included)."""
import multiprocessing
import os
import time

import numpy as np

from ffcode._field import GF
from ffcode.codes import PolynomialCode
from ffcode.decoder import Decoder


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


def _classic_worker(code, i, share, pause, pieces, ready, queue):
    ready.wait()
    result = code.compute(share)
    time.sleep(pieces * pause)              # the injected slowness: `pause` per piece
    queue.put((i, result))


def _fullspeed_worker(code, i, share, pause, pieces, ready, queue):
    ready.wait()
    for packet in code.compute_pieces(share):
        time.sleep(pause)
        queue.put((i, packet))              # each block the moment it is done


def _on_workers(target, code, shares, pauses, pieces, consume, timeout):
    """Run target(code, i, shares[i], pauses[i], pieces, ready, queue) in one spawned
    process per worker; once all are up, time consume(queue); always stop them all."""
    context = multiprocessing.get_context("spawn")
    queue, ready = context.Queue(), context.Barrier(len(shares) + 1)
    processes = [context.Process(target=target, daemon=True,
                                 args=(code, i, share, pauses[i], pieces, ready, queue))
                 for i, share in enumerate(shares)]
    # One BLAS thread per worker process: the workers already fill the cores.
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        for process in processes:
            process.start()
        ready.wait(timeout)
        t0 = time.perf_counter()
        out = consume(queue)
        return out, time.perf_counter() - t0
    finally:
        for process in processes:
            process.terminate()             # whoever is still working is not needed
            process.join(timeout=10)
        if saved is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved


def coded_runs(F, n: int, seed: int, workers: int = 6, stragglers: int = 3, pieces: int = 4,
               pause: float = 0.1, slowdown: float = 4.0, timeout: float = 120.0) -> bool:
    """C = A @ B with a polynomial code (a = b = 2, R = 4) over `workers` local processes,
    the last `stragglers` of them `slowdown` times slower: once waiting for the R fastest
    whole results (classic), once decoding from streamed blocks (computation at full
    speed, m = pieces), on the same injected delays."""
    code = PolynomialCode(F, a=2, b=2, n_workers=workers)
    A, B = F.random((n, n), seed=seed + 4), F.random((n, n), seed=seed + 5)
    expected = F.matmul(A, B)
    R = code.recovery_threshold
    slow = list(range(workers - stragglers, workers))
    pauses = [pause * (slowdown if i in slow else 1) for i in range(workers)]
    print(f"  PolynomialCode(a=2, b=2), recovery threshold {R}, over {workers} worker "
          f"processes; injected delay {pause:g} s per quarter of a worker's product, "
          f"{slowdown:g}x that on workers {slow}")

    def classic(queue):
        results = dict(queue.get(timeout=timeout) for _ in range(R))
        return code.decode(results), sorted(results)

    (C, used), t_classic = _on_workers(_classic_worker, code, code.encode(A, B), pauses,
                                       pieces, classic, timeout)
    ok = np.array_equal(C, expected)
    print(f"  classic:    the {R} fastest whole results (workers {used}) decoded after "
          f"{t_classic:.2f} s; equals A @ B: {'ok' if ok else 'FAILED'}")

    decoder = Decoder(code, pieces)

    def fullspeed(queue):
        sent = [0] * workers
        while not decoder.complete:
            worker, packet = queue.get(timeout=timeout)
            sent[worker] += decoder.add(packet)
        return decoder.result(), sent

    shares = code.encode(A, B, pieces=pieces, seed=seed + 6)
    (C, sent), t_full = _on_workers(_fullspeed_worker, code, shares, pauses, pieces,
                                    fullspeed, timeout)
    exact = np.array_equal(C, expected)
    print(f"  full speed: {decoder.needed} independent blocks (per worker: {sent}, the "
          f"stragglers' partial work included) decoded after {t_full:.2f} s "
          f"({t_classic / t_full:.1f}x faster); equals A @ B: {'ok' if exact else 'FAILED'}")
    return ok and exact


def run(p: int, n: int, seed: int) -> int:
    F = GF(p)
    if n < 2:
        raise ValueError(f"Argument 'n' must be at least 2 (the code splits A and B in two), "
                         f"not {n}.")
    print(f"ffcode demo: exact arithmetic in {F} (elements {F.dtype}), {n}x{n} matrices")
    ok = field_checks(F, n, seed)
    ok = coded_runs(F, n, seed) and ok
    print("demo", "passed" if ok else "FAILED")
    return 0 if ok else 1
