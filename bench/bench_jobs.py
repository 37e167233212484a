"""Benchmark many jobs in flight on one pool (``Cluster.submit``) against the same jobs one
after another (``Cluster.run``), in one run, interleaved.

Six local workers share 2 cores here, so CPU-bound workers leave no idle time to fill; the
first measurement models workers on machines of their own instead: each piece of work is
followed by a shifted-exponential pause (``Faults(delay=...)``), the compute itself small.
1. Modeled stragglers: T = 4 jobs of MDS(F, 4, 6) for A x (A 600 x 600, compfs, m = 4),
   each piece followed by a pause of 0.05 s + Exp(mean 0.025 s), and three of the six
   workers 4x slower in each job (pauses of 4x the shift and mean), a different three
   per job (job j: workers 3j, 3j + 1, 3j + 2 mod 6), with compfs and
   with classic. One after another (a run each) against all four submitted together and
   waited for: the wall time of the four, min and median over --rounds rounds (A, B, B,
   A, ...). One after another, a job's fast workers idle once done until its stragglers
   deliver; in flight they go on to the next job, each worker doing first the work of
   the jobs it is fast on. Against the scenario's work-conserving ideal: the least time in
   which every job gets what decodes it with no worker idle while a job needs work it can
   do, each piece done where it costs least, from the expected pauses (compfs: a linear
   program's bound, pieces counting one by one; classic: exactly, whole shares only).
2. CPU-bound: the same four compfs jobs without pauses, A 3000 x 3000, 4x slower by
   their CPU (Faults(slowdown=...)): here every worker computes on the same 2 cores, so
   in flight together must only not be slower.
3. Tiny jobs on resident data: MDS(F, 6, 8) for A x with A 64 x 64 (negligible compute)
   on 8 workers, loaded once for compfs and once for classic; one at a time (cluster.run)
   against 8 submitted together (per job: the wall time of the 8 over 8), --tiny jobs each
   after 10 warm-up jobs, min and median per job. Every output is checked against
   F.matmul(A, x). Beside them, interleaved, the raw pyzmq floor: a ROUTER sending 8
   plain responder processes a task's frames and waiting for their answers (a compfs
   share's frames), no decoding or checks: what any design on 8 processes pays. With them,
   the CPU each way costs per job, every thread as the scheduler counts it: this process
   (the master; for the floor, the ROUTER) and each of the 8 others (the workers; the
   responders), each and in all against the floor's.
4. Multi-task learning (bench/bench_multitask.py): one-vs-rest on load_digits, 10 tasks
   as one coded product per step against 10 separate fits one after another.
Targets: 1. in flight ≥ 0.9x the ideal's speed (its seconds / the median's, each scheme);
2. ≥ 0.95x; 3. a tiny job's median ≤ 2.0x the raw floor's one at a time, and ≤ 1.3x per
job 8 in flight (compfs and classic); 4. ≥ 1.5x faster and each task's test accuracy
within 2 points of scikit-learn's LogisticRegression.

    python bench/bench_jobs.py                  # a few minutes on 2 cores
    python bench/bench_jobs.py --quick          # smoke run
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import shutil
import statistics
import tempfile
import time

import numpy as np
import zmq

import benchlib
import ffcode
from ffcode import MDS, Faults

T, N = 4, 6
PIECES = 4                      # a share's pieces (compfs), or pauses (classic)
SHIFT, MEAN = 0.05, 0.025       # seconds of a fast worker's pause after each piece
TINY, TINY_WORKERS = 64, 8


def stragglers(job: int) -> list:
    return [(3 * job + i) % N for i in range(3)]


def modeled(job: int) -> Faults:
    slow = stragglers(job)
    return Faults(delay={w: (4 * SHIFT, 4 * MEAN) if w in slow else (SHIFT, MEAN)
                         for w in range(N)}, seed=job)


def expected_costs(faults) -> np.ndarray:
    """costs[w, j]: the expected seconds of worker w's pauses for a piece of work of job j
    (shift + mean; the compute of a piece here is under 1 % of that)."""
    return np.array([[sum(faults(j).delay[w]) for j in range(T)] for w in range(N)])


def ideal_seconds(costs: np.ndarray, pieces: int, threshold: int, whole: bool) -> float:
    """The work-conserving ideal of T jobs in flight on N workers: the least time in which
    every job gets what decodes it, no worker idle while a job needs work it can do, each
    piece done where it costs least. costs[w, j]: seconds of worker w's piece of job j;
    each worker holds one share (``pieces`` pieces) of each job, a job needs
    ``threshold`` shares' worth. ``whole``: a share counts only whole (classic: the least
    over which ``threshold`` workers serve each job, exactly); else pieces count one by
    one, and the ideal is the linear program's bound (scipy's linprog)."""
    n, jobs = costs.shape
    if whole:
        loads = [np.zeros(n)]
        for j in range(jobs):              # every choice of serving workers, job by job
            picks = [np.isin(np.arange(n), chosen) * costs[:, j] * pieces
                     for chosen in itertools.combinations(range(n), threshold)]
            loads = [load + pick for load in loads for pick in picks]
        return float(min(load.max() for load in loads))
    from scipy.optimize import linprog
    # Variables: x[w, j] (pieces of job j done by worker w), then the time t; minimize t.
    count = n * jobs
    objective = np.zeros(count + 1)
    objective[-1] = 1.0
    needs = np.zeros((jobs, count + 1))             # -sum_w x[w, j] <= -threshold * pieces
    for j in range(jobs):
        needs[j, [w * jobs + j for w in range(n)]] = -1.0
    busy = np.zeros((n, count + 1))                 # sum_j costs[w, j] x[w, j] - t <= 0
    for w in range(n):
        busy[w, w * jobs:(w + 1) * jobs] = costs[w]
        busy[w, -1] = -1.0
    solved = linprog(objective, A_ub=np.vstack([needs, busy]),
                     b_ub=np.concatenate([np.full(jobs, -threshold * pieces), np.zeros(n)]),
                     bounds=[(0, pieces)] * count + [(0, None)])
    if not solved.success:
        raise RuntimeError(f"the ideal's linear program failed: {solved.message}")
    return float(solved.fun)


def cpu_bound(job: int) -> Faults:
    return Faults(slowdown={w: 4.0 for w in stragglers(job)})


def one_by_one(cluster, code, A, xs, faults, scheme) -> list:
    return [cluster.run(code, A, x, faults=faults(j), scheme=scheme, pieces=PIECES,
                        timeout=300)
            for j, x in enumerate(xs)]


def together(cluster, code, A, xs, faults, scheme) -> list:
    futures = [cluster.submit(code, A, x, faults=faults(j), scheme=scheme, pieces=PIECES,
                              timeout=300)
               for j, x in enumerate(xs)]
    return [future.result() for future in futures]


def four_jobs(cluster, n, faults, rounds, scheme) -> dict:
    """Seconds of the T jobs one after another and in flight together, alternating, and
    (under "... wasted") the packets each way's jobs received but did not use, per job."""
    F = ffcode.GF(2**31 - 1)
    code = MDS(F, 4, N)
    A = F.random((n, n), seed=1)
    xs = [F.random(n, seed=10 + j) for j in range(T)]
    expected = [F.matmul(A, x) for x in xs]
    ways = {"one by one": one_by_one, "in flight": together}
    out: dict = {key: [] for name in ways for key in (name, name + " wasted")}
    for rnd in range(rounds + 1):                   # round 0 warms up
        order = list(ways.items()) if rnd % 2 else list(ways.items())[::-1]
        for name, way in order:
            t0 = time.perf_counter()
            results = way(cluster, code, A, xs, faults, scheme)
            seconds = time.perf_counter() - t0
            if not all(np.array_equal(o, e) for (o, _), e in zip(results, expected)):
                raise SystemExit(f"ABORT: {name}: an output differs from F.matmul")
            if rnd:
                out[name].append(seconds)
                out[name + " wasted"] += [report.wasted for _, report in results]
    return out


@contextlib.contextmanager
def raw_floor(n_workers: int):
    """A function timing the bare transport a tiny job needs, in raw pyzmq: a ROUTER sends
    each of n_workers plain responder processes a task's three frames (a header, a meta
    and x) and waits for every answer (the 4 packets and the end of a compfs share: 13
    frames). No decoding, no checks, no threads: what any design on 8 processes pays."""
    folder = tempfile.mkdtemp()
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.bind(f"ipc://{folder}/floor")
    senders = [benchlib.raw_responder(f"ipc://{folder}/floor", 13, 72)
               for _ in range(n_workers)]
    try:
        idents = [router.recv_multipart()[0] for _ in senders]
        task = [bytes(72), bytes(300), bytes(8 * TINY)]

        def once():
            t0 = time.perf_counter()
            for ident in idents:
                router.send_multipart([ident, *task])
            for _ in idents:
                router.recv_multipart()
            return time.perf_counter() - t0
        once.pids = [sender.pid for sender in senders]     # type: ignore[attr-defined]
        yield once
        benchlib.release(router, idents, senders)
    finally:
        benchlib.reap(senders)
        router.close(linger=0)
        context.term()
        shutil.rmtree(folder, ignore_errors=True)


def tiny_jobs(cluster, pids, count, floor) -> tuple:
    """Per-job seconds of tiny jobs on resident data, one at a time and 8 in flight, and
    of the raw transport floor (``floor()``), interleaved; and their CPU seconds per job
    in all, this process's (the master's, or the floor's ROUTER) and the workers' (``pids``,
    or the floor's responders)."""
    F = ffcode.GF(2**61 - 1)
    code = MDS(F, 6, TINY_WORKERS)
    A, x = F.random((TINY, TINY), seed=2), F.random(TINY, seed=3)
    expected = F.matmul(A, x)
    data = {"compfs": cluster.load(code, A), "classic": cluster.load(code, A,
                                                                     scheme="classic")}

    def alone(resident):
        return [cluster.run(resident, x)[0]]

    def eight(resident):
        return [f.result()[0] for f in [cluster.submit(resident, x) for _ in range(8)]]

    out: dict = {}
    cpu: dict = {}                  # key -> [jobs, this process's seconds, the others']

    def timed(key, run, others, rnd):
        before, mine = benchlib.cpu_seconds(others), time.process_time()
        t0 = time.perf_counter()
        outputs = run()
        seconds = (time.perf_counter() - t0) / len(outputs)
        mine, after = time.process_time() - mine, benchlib.cpu_seconds(others)
        if rnd >= 10:
            out.setdefault(key, []).append(seconds)
            spent = cpu.setdefault(key, [0, 0.0, 0.0])
            spent[0] += len(outputs)
            spent[1] += mine
            spent[2] = None if None in (before, after, spent[2]) else \
                spent[2] + after - before
        return outputs

    try:
        for rnd in range(count + 10):                   # the first 10 warm up
            for scheme, resident in data.items():
                for name, way in (("one at a time", alone), ("8 in flight", eight)):
                    outputs = timed((scheme, name), lambda: way(resident), pids, rnd)
                    if not all(np.array_equal(o, expected) for o in outputs):
                        raise SystemExit(f"ABORT: the tiny {scheme} job's output differs")
            timed("floor", lambda: [floor()], floor.pids, rnd)
    finally:
        for resident in data.values():
            cluster.unload(resident)
    per_job = {key: (mine / jobs, None if others is None else others / jobs)
               for key, (jobs, mine, others) in cpu.items()}
    return out, per_job


def cpu_line(label, per_job, floor) -> str:
    """A way's CPU per job: this process's and each of the 8 others', and in all against
    the floor's."""
    mine, others = per_job
    if others is None or floor[1] is None:
        return f"{label}: master {mine * 1e3:.2f} ms (workers' CPU not readable here)"
    total, floor_total = mine + others, floor[0] + floor[1]
    return (f"{label}: master {mine * 1e3:.2f} ms ({mine / floor[0]:.2f}x the ROUTER's), "
            f"each worker {others / TINY_WORKERS * 1e3:.2f} ms ({others / floor[1]:.2f}x "
            f"a responder's), in all {total * 1e3:.2f} ms = {total / floor_total:.2f}x the "
            f"floor's {floor_total * 1e3:.2f} ms")


def summary(times, unit="s") -> str:
    scale, digits = (1e3, 2) if unit == "ms" else (1, 3)
    return (f"min {min(times) * scale:.{digits}f} {unit}, "
            f"median {statistics.median(times) * scale:.{digits}f} {unit}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: one round, few jobs")
    ap.add_argument("--rounds", type=int, help="rounds of 1 and 2 (default 5, --quick 1)")
    ap.add_argument("--tiny", type=int, help="tiny jobs per way (default 200, --quick 20)")
    ap.add_argument("--no-multitask", action="store_true", help="leave out measurement 4")
    args = ap.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 5)
    start = time.perf_counter()
    benchlib.print_machine()
    results = []
    with ffcode.Cluster(N) as cluster:
        cluster.wait()
        for label, n, faults, scheme in (
                ("modeled stragglers (pauses), compfs", 600, modeled, "compfs"),
                ("modeled stragglers (pauses), classic", 600, modeled, "classic"),
                ("CPU-bound stragglers, compfs", 3000, cpu_bound, "compfs")):
            times = four_jobs(cluster, n, faults, rounds, scheme)
            alone, flight = times["one by one"], times["in flight"]
            print(f"{label}, {T} jobs, A {n} x {n}: one by one {summary(alone)}; "
                  f"in flight {summary(flight)}")
            ratio = statistics.median(alone) / statistics.median(flight)
            if faults is cpu_bound:
                results.append(benchlib.check(f"{label}: in flight vs one by one (medians)",
                                              ratio, 0.95))
                continue
            ideal = ideal_seconds(expected_costs(faults), PIECES, 4, scheme == "classic")
            print(f"  in flight {ratio:.2f}x sooner than one by one; the work-conserving "
                  f"ideal {ideal:.3f} s ({statistics.median(alone) / ideal:.2f}x sooner); "
                  f"packets received but not used, per job: one by one "
                  f"{statistics.mean(times['one by one wasted']):.1f}, in flight "
                  f"{statistics.mean(times['in flight wasted']):.1f}")
            results.append(benchlib.check(f"{label}: in flight against the work-conserving "
                                          f"ideal (its seconds / the median's)",
                                          ideal / statistics.median(flight), 0.9))
    with ffcode.Cluster(TINY_WORKERS) as cluster, raw_floor(TINY_WORKERS) as floor:
        pids = [handle.pid for handle in cluster.wait()]
        tiny, cpu = tiny_jobs(cluster, pids, args.tiny or (20 if args.quick else 200), floor)
    print(f"raw pyzmq floor of a tiny job (a task out to {TINY_WORKERS} processes, their "
          f"answers back): {summary(tiny['floor'], 'ms')}")
    floor_median = statistics.median(tiny["floor"])
    for scheme in ("compfs", "classic"):
        alone, eight = tiny[(scheme, "one at a time")], tiny[(scheme, "8 in flight")]
        print(f"tiny {scheme} job on resident data, {TINY_WORKERS} workers: one at a time "
              f"{summary(alone, 'ms')} ({statistics.median(alone) / floor_median:.2f}x the "
              f"floor's median); 8 in flight {summary(eight, 'ms')} per job "
              f"({statistics.median(eight) / floor_median:.2f}x)")
    print("CPU per tiny job (every thread of each process, as the scheduler counts it):")
    router, responders = cpu["floor"]
    print(f"  floor: ROUTER {router * 1e3:.2f} ms, each responder " +
          ("not readable here" if responders is None else
           f"{responders / TINY_WORKERS * 1e3:.2f} ms"))
    for scheme in ("compfs", "classic"):
        for name in ("one at a time", "8 in flight"):
            print("  " + cpu_line(f"{scheme}, {name}", cpu[(scheme, name)], cpu["floor"]))
    for scheme in ("compfs", "classic"):
        alone, eight = tiny[(scheme, "one at a time")], tiny[(scheme, "8 in flight")]
        results.append(benchlib.at_most(f"tiny {scheme} job, one at a time, against the "
                                        f"raw floor (medians)",
                                        statistics.median(alone) / floor_median, 2.0, "x"))
        results.append(benchlib.at_most(f"tiny {scheme} jobs, 8 in flight, per job against "
                                        f"the raw floor (medians)",
                                        statistics.median(eight) / floor_median, 1.3, "x"))
    if not args.no_multitask:
        import bench_multitask
        results += bench_multitask.run(rounds=1 if args.quick else 3)
    benchlib.print_targets(results, start)


if __name__ == "__main__":
    main()
