"""Benchmark gradient coding with partial stragglers against the original protocol and
against no coding, simulated and measured, in one run.

1. Simulated (ffcode.sim_gradient): n workers, cyclic repetition with s stragglers (each
   partition on s + 1 workers, each worker s + 1 partitions in the cyclic order), every
   partition's time 1 + Exp(mean 1) (a heavy spread: every worker a partial straggler
   now and then), 2001 draws each: the median time until the master has the exact sum
   with a message after every partition (partial), with one message per worker after
   its last partition (original: any n - s workers), and uncoded (the data in n
   partitions, one a worker, each partition's time from the same draws), with no worker
   slowed and with s of them 4x slower (spread around the cycle). Ratios
   original / partial and uncoded / partial, beside the about 2x that Ramamoorthy, Meng
   and Girimaji (NeurIPS 2024, Fig. 3b) report for exact recovery on their settings.
2. Measured on 6 local workers (ffcode.Cluster(6)): CyclicRepetition(F, 6, 2) over
   p = 2**61 - 1, each partition a least-squares block (X_j of 600 x 16 and y_j in signed
   fixed point, the step's w shipped with it), the worker computing X_j^T (X_j w - y_j)
   exactly. The workers model machines of their own: each partition's compute (about a
   millisecond or less) is followed by a pause of 0.05 s + Exp(mean 0.05 s) (Faults(delay=...),
   a new seed per round, the same for the three protocols), so that 6 workers on 2 cores
   are not CPU-bound. Partial (GradientStep, partial=True), original (partial=False) and
   uncoded (CyclicRepetition(F, 6, 0): one partition each, its first pause the same
   draw) run in turn, round after round; each output is checked against the sum computed
   directly. Two workers a round (r and r + 3 mod 6) pause 4x as long. Beside each
   measured time, the simulator's for the same pauses (each
   partition's compute from the reports).
3. Training: the guide's MLP (docs/examples/mlp.py, 64-16-10, tanh) on scikit-learn's
   digits, 1200 samples in 6 partitions, by ffcode.learn.descend on the same 6 workers:
   CyclicRepetition(F, 6, 2) at full speed against uncoded (CyclicRepetition(F, 6, 0)),
   the partitions resident, the pauses of part 2 after each partition (each fit its own
   round's); seconds per step (one step is one epoch: the whole data), and whether the
   two fits' parameters are equal bit for bit.
4. Beside Tandon et al.'s public MPI code (github.com/ZeeChono/gradient_coding_mds, a clone
   given by --tandon PATH, run by mpirun with OpenMPI and mpi4py; skipped without it): its
   cyclic scheme (src/coded.py) and its uncoded one (src/naive.py) against
   ffcode.learn.descend with CyclicRepetition(F, 6, 2), partial and whole messages, and
   uncoded, on the same data (6 partitions of --tandon-rows x --tandon-cols, features
   integers / 16, labels +-1), their logistic-regression gradient, 6 workers, 2 of them
   --tandon-slow times slower on both sides (their code injects no stragglers: the bench
   stops and continues those processes, SIGSTOP and SIGCONT), 100 iterations a run (fixed
   in their main.py), the six runs interleaved --tandon-runs times. Seconds per iteration
   from their master's own timer and from descend's, MPI startup and data loading left out
   on both sides.
Targets: measured, partial ≥ 1.5x sooner than the original and ≥ 1.3x sooner than
uncoded (medians); each protocol's median simulated time within 10 % of its measured one.

    python bench/bench_gradient.py              # about a minute and a half
    python bench/bench_gradient.py --rounds 5   # shorter
    python bench/bench_gradient.py --only 4 --tandon /tmp/tandon   # part 4 only
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ffcode
from benchlib import at_most, check, machine_info, print_targets
from ffcode import CyclicRepetition, Faults
from ffcode.runtime import GradientStep
from ffcode.sim_gradient import GradientModel, ShiftedExponential, finish, simulate

P = 2**61 - 1
SHIFT, MEAN = 0.05, 0.05            # seconds of pause after each partition (measured part)
SLOWDOWN = 4.0                      # the slowed workers' factor
ROWS, COLS, SCALE = 600, 16, 2**10


def least_squares(F, X, y, w):
    """A partition's gradient X^T (X w - y), exactly in GF(p) (signed fixed point)."""
    return F.matmul(F.sub(F.matmul(X, w), y).reshape(1, -1), X).reshape(-1)


def simulated(draws: int) -> list:
    """Part 1: (n, s, slowed, {protocol: median seconds}) for a few cyclic codes, with no
    worker slowed and with s of them (spread around the cycle) SLOWDOWN times slower."""
    F = ffcode.GF(P)
    rows = []
    for n, s in ((6, 2), (12, 3), (20, 4), (30, 5)):
        code = CyclicRepetition(F, n, s)
        for slowed in (0, s):
            slow = {k * n // slowed: SLOWDOWN for k in range(slowed)} if slowed else {}
            model = GradientModel(code, ShiftedExponential(1.0, 1.0), slowdown=slow,
                                  runs=draws, seed=n)
            rows.append((n, s, slowed, {p: simulate(model, p) for p in
                                        ("partial", "original", "uncoded")}))
    return rows


def data(F, n: int, seed: int):
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(n):
        X = F.from_real(rng.normal(size=(ROWS, COLS)), SCALE)
        y = F.from_real(rng.normal(size=ROWS), SCALE ** 2)
        parts.append((X, y))
    w = F.from_real(rng.normal(size=COLS), SCALE)
    want = F.combine(np.ones((1, n), F.dtype), [least_squares(F, X, y, w) for X, y in parts])
    return parts, w, want[0]


def predicted(code, faults: Faults, compute: float, protocol: str) -> float:
    """The simulator's time for the pauses this job injects, each partition's compute on
    top of its pause."""
    width = max(len(order) for order in code.assignment)
    times = np.array([list(faults.for_worker(i, width).delays) for i in range(code.n_workers)])
    return finish(code, times + compute, protocol)


def pauses(r: int) -> Faults:
    """Round r's pauses: SHIFT + Exp(MEAN) after each partition, and two workers (r and
    r + 3, mod 6) SLOWDOWN times that, each round its own draws."""
    slow = {r % 6, (r + 3) % 6}
    return Faults(delay={w: (SHIFT * SLOWDOWN, MEAN * SLOWDOWN) if w in slow else
                         (SHIFT, MEAN) for w in range(6)}, seed=1000 + r)


def measured(rounds: int) -> dict:
    """Part 2: per protocol, the measured and the predicted seconds of every round."""
    F = ffcode.GF(P)
    coded, uncoded = CyclicRepetition(F, 6, 2), CyclicRepetition(F, 6, 0)
    parts, w, want = data(F, 6, seed=1)
    steps = {"partial": GradientStep(coded, least_squares, parts, w),
             "original": GradientStep(coded, least_squares, parts, w, partial=False),
             "uncoded": GradientStep(uncoded, least_squares, parts, w)}
    codes = {"partial": coded, "original": coded, "uncoded": uncoded}
    out: dict = {name: {"measured": [], "predicted": [], "compute": []} for name in steps}
    with ffcode.Cluster(6) as cluster:
        cluster.wait()
        for name, step in steps.items():                   # warm-ups
            cluster.run(step)
        for r in range(rounds):
            faults = pauses(r)
            for name, step in steps.items():
                start = time.perf_counter()
                output, report = cluster.run(step, faults=faults, timeout=60)
                seconds = time.perf_counter() - start
                if not np.array_equal(output, want):
                    raise SystemExit(f"ABORT: {name} gave a sum that is not exact")
                computes = [p["compute"] for t in report.workers for p in t.packets
                            if p.get("compute")]
                out[name]["measured"].append(seconds)
                out[name]["compute"].extend(computes)
        for name in steps:              # each partition's compute: the median over the run
            compute = statistics.median(out[name]["compute"] or [0.0])
            out[name]["predicted"] = [predicted(codes[name], pauses(r), compute, name)
                                      for r in range(rounds)]
    return out


def training(fits: int, steps: int) -> dict:
    """Part 3: per coding, every step's seconds, and whether the fits agreed bit for bit."""
    from sklearn.datasets import load_digits

    from ffcode.learn import descend

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples"))
    import mlp                              # the workers get this sys.path too

    F = ffcode.GF(P)
    X, y = load_digits(return_X_y=True)
    X, y = X.astype(np.int64)[:1200], y[:1200]
    parts = list(zip(np.array_split(X, 6), np.array_split(y, 6)))
    start = np.random.default_rng(0).normal(scale=0.1, size=mlp.SIZE)
    codes = {"partial": CyclicRepetition(F, 6, 2), "uncoded": CyclicRepetition(F, 6, 0)}
    out: dict = {name: [] for name in codes}
    same = True
    with ffcode.Cluster(6) as cluster:
        cluster.wait()
        for r in range(fits):
            params = []
            for name, code in codes.items():
                fit = descend(cluster, code, mlp.gradient, start, parts, steps=steps,
                              rate=1e-3, faults=pauses(r))
                out[name].extend(fit.seconds)
                params.append(fit.params)
            same = same and np.array_equal(*params)
    return {"seconds": out, "same": same,
            "accuracy": float((mlp.predict(params[0], X) == y).mean())}


TANDON_N, TANDON_S = 6, 2       # workers and stragglers (parts 2 and 3's)
TANDON_ITERS = 100              # their main.py's count for the dataset name "amazon-dataset"
TANDON_SLOW = (1, 4)            # the workers slowed on both sides (0-based; their ranks + 1)
QUANT = 16                      # features are integers / QUANT: the same reals on both sides
THROTTLE_PERIOD = 0.02          # seconds of the slowed processes' CPU quota period
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
          "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo",
          "--mca", "oob_tcp_if_include", "lo"]          # local processes, loopback only


def logistic(params, X, y):
    """Tandon et al.'s logistic-regression gradient (labels +-1) over a partition:
    -X^T (y / (exp(y X w) + 1))."""
    return -X.T @ (y / (np.exp(y * (X @ params)) + 1))


def logistic_data(rows: int, cols: int, test: int, seed: int = 4):
    """TANDON_N partitions of rows x cols features (integers / QUANT) then `test` rows
    more, with +-1 labels drawn from a logistic model."""
    rng = np.random.default_rng(seed)
    X = np.rint(rng.normal(size=(TANDON_N * rows + test, cols)) * QUANT) / QUANT
    w = rng.normal(size=cols) / np.sqrt(cols)
    y = np.where(rng.random(len(X)) < 1 / (1 + np.exp(-X @ w)), 1, -1)
    return X, y


class Throttle:
    """Processes slowed by CPU quotas: each may run 1 / `factor` of its fair share of the
    cores (cores / TANDON_N), in a cgroup of its own of the cpu controller (CFS quota over
    THROTTLE_PERIOD). It treats an MPI rank and an ffcode worker alike, and neither's code
    has a say in it. The processes go back to the root group when the block ends."""
    ROOT = pathlib.Path("/sys/fs/cgroup/cpu")

    def __init__(self, pids, factor: float) -> None:
        self.pids, self.factor = list(pids), factor
        self.groups = [self.ROOT / f"ffcode-bench-{os.getpid()}-{i}"
                       for i in range(len(self.pids))]

    @classmethod
    def available(cls) -> bool:
        return os.access(cls.ROOT, os.W_OK) and (cls.ROOT / "cpu.cfs_quota_us").exists()

    def __enter__(self) -> "Throttle":
        if self.factor <= 1:
            return self
        period = int(THROTTLE_PERIOD * 1e6)
        share = (os.cpu_count() or 1) / TANDON_N / self.factor
        for pid, group in zip(self.pids, self.groups):
            group.mkdir(exist_ok=True)
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(max(1000, int(period * share))))
            _move(pid, group)
        return self

    def __exit__(self, *exc) -> None:
        for pid, group in zip(self.pids, self.groups):
            if group.exists():
                _move(pid, self.ROOT)
                group.rmdir()


def _move(pid: int, group: pathlib.Path) -> None:
    """A process (all its threads) into a cgroup, unless it has ended."""
    try:
        (group / "cgroup.procs").write_text(str(pid))
    except OSError:
        pass


def mpi_ranks(parent: int, count: int, timeout: float = 60.0) -> dict:
    """{rank: pid} of the `count` processes mpirun `parent` started (from their
    OMPI_COMM_WORLD_RANK), once all have started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranks = {}
        for entry in pathlib.Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) != parent:
                    continue
                env = (entry / "environ").read_bytes().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            for var in env:
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    ranks[int(var.split(b"=")[1])] = int(entry.name)
        if len(ranks) == count:
            return ranks
        time.sleep(0.05)
    raise SystemExit(f"ABORT: mpirun {parent} did not start its {count} ranks")


def tandon_files(root: pathlib.Path, X, y, rows: int) -> None:
    """The data where and as their main.py reads a real data set (is_real 1, CSR files as
    their util.save_sparse_csr writes them): their artificial-data path reads files by
    names it joins without a slash, and its generator is Python 2."""
    import scipy.sparse as sps

    folder = root / "amazon-dataset" / str(TANDON_N)
    folder.mkdir(parents=True)

    def save(name, a):
        m = sps.csr_matrix(a)
        np.savez(folder / name, data=m.data, indices=m.indices, indptr=m.indptr,
                 shape=m.shape)

    train = TANDON_N * rows
    for j in range(TANDON_N):
        save(str(j + 1), X[j * rows:(j + 1) * rows])
    save("test_data", X[train:])
    np.savetxt(folder / "label.dat", y[:train], fmt="%d")
    np.savetxt(folder / "label_test.dat", y[train:], fmt="%d")


def tandon_run(clone: pathlib.Path, root: pathlib.Path, coded: bool, rows: int, cols: int,
               slow: float):
    """One mpirun of their main.py (master and TANDON_N workers), the ranks of the
    workers TANDON_SLOW throttled `slow` times: every iteration's seconds by their
    master's timer (printed in ms) and the last training loss they print."""
    # n_procs n_rows n_cols input_dir is_real dataset is_coded n_stragglers, then partial
    # stragglers 0, scheme 0 (cyclic) and one unused (main.py wants 11, as their Makefile)
    args = [TANDON_N + 1, TANDON_N * rows, cols, root, 1, "amazon-dataset", int(coded),
            TANDON_S, 0, 0, 0]
    # their src by PYTHONPATH: main.py adds ./src, and runs here so that naive.py's plot
    # (./out/images) lands in the temporary directory, not in the clone
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(clone / "src"),
                                                        os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        run = subprocess.Popen(MPIRUN + ["-np", str(TANDON_N + 1), sys.executable,
                                         str(clone / "main.py")] + [str(a) for a in args],
                               cwd=root, env=env, stdout=stdout, stderr=stderr, text=True)
        try:
            ranks = mpi_ranks(run.pid, TANDON_N + 1)
            with Throttle([ranks[w + 1] for w in TANDON_SLOW], slow):
                code = run.wait(timeout=3600)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    found = re.findall(r"^Iteration (\d+): Train Loss =\s*([0-9.naif]+),.*"
                       r"Total time taken =\s*([0-9.]+)", out, re.M)
    if code or len(found) != TANDON_ITERS:
        raise SystemExit(f"ABORT: their {'coded' if coded else 'naive'} run failed (exit "
                         f"{code}, {len(found)} iterations):\n{out[-1500:]}\n{err[-1500:]}")
    return [float(t) for _, _, t in found], float(found[-1][1])


TANDON_ROWS = {"coded": "cyclic (src/coded.py, any n - s workers)",
               "naive": "uncoded (src/naive.py, every worker)"}
FFCODE_ROWS = {"partial": f"CyclicRepetition({TANDON_N}, {TANDON_S}), partial work",
               "partial, at decode": "the same, each step returned once decoded "
                                     "(wait_for_stops=False)",
               "original": f"CyclicRepetition({TANDON_N}, {TANDON_S}), whole messages",
               "uncoded": f"CyclicRepetition({TANDON_N}, 0), every worker"}


def tandon(clone: pathlib.Path, runs: int, rows: int, cols: int, slow: float) -> dict:
    """Part 4: per contender, every iteration's seconds but each run's first (a warm-up),
    and the last training loss; their runs and ffcode's fits interleaved, the workers
    TANDON_SLOW throttled `slow` times on both sides."""
    from ffcode.learn import descend

    F = ffcode.GF(P)
    X, y = logistic_data(rows, cols, test=rows // 4)
    train = TANDON_N * rows
    parts = [(X[j * rows:(j + 1) * rows], y[j * rows:(j + 1) * rows])
             for j in range(TANDON_N)]
    # their loss is over partitions 1 to n - 1 (their loop stops one short): the same here
    Xl, yl = X[:train - rows], y[:train - rows]
    coded = CyclicRepetition(F, TANDON_N, TANDON_S)
    fits = {"partial": (coded, True, True), "partial, at decode": (coded, True, False),
            "original": (coded, False, True),
            "uncoded": (CyclicRepetition(F, TANDON_N, 0), True, True)}
    out: dict = {**{f"Tandon {name}": {"seconds": [], "loss": []} for name in TANDON_ROWS},
                 **{f"ffcode {name}": {"seconds": [], "loss": []} for name in FFCODE_ROWS}}
    same = True
    with tempfile.TemporaryDirectory(prefix="ffcode-tandon-") as tmp, \
            ffcode.Cluster(TANDON_N) as cluster:
        root = pathlib.Path(tmp)
        tandon_files(root, X, y, rows)
        cluster.wait()
        probe = descend(cluster, coded, logistic, np.zeros(cols), parts,
                        steps=1, rate=1.0)
        pids = [probe.reports[0].workers[w].pid for w in TANDON_SLOW]
        for _ in range(runs):
            params = []
            for name in ("coded", "naive"):
                seconds, loss = tandon_run(clone, root, name == "coded", rows, cols, slow)
                out[f"Tandon {name}"]["seconds"].extend(seconds[1:])
                out[f"Tandon {name}"]["loss"].append(loss)
            for name, (code, partial, wait) in fits.items():
                with Throttle(pids, slow):
                    fit = descend(cluster, code, logistic, np.zeros(cols), parts,
                                  steps=TANDON_ITERS, rate=1.0 / train, partial=partial,
                                  wait_for_stops=wait)
                out[f"ffcode {name}"]["seconds"].extend(fit.seconds[1:])
                out[f"ffcode {name}"].setdefault("decodable", []).extend(
                    r.total for r in fit.reports[1:])
                out[f"ffcode {name}"]["loss"].append(
                    float(np.mean(np.log1p(np.exp(-yl * (Xl @ fit.params))))))
                params.append(fit.params)
            same = same and all(np.array_equal(params[0], p) for p in params[1:])
    return {"times": out, "same": same}


def print_tandon(clone, runs: int, rows: int, cols: int, slow: float) -> None:
    """Part 4's lines: skipped without a clone; run, timed and compared with one."""
    title = "\n4. Tandon et al.'s MPI gradient coding beside ffcode"
    if clone is None:
        print(f"{title}: skipped (no --tandon PATH, a clone of "
              f"github.com/ZeeChono/gradient_coding_mds; it runs under OpenMPI's mpirun "
              f"with mpi4py)")
        return
    clone = pathlib.Path(clone).resolve()
    if not (clone / "main.py").is_file() or not (clone / "src" / "coded.py").is_file():
        raise SystemExit(f"ABORT: {clone} has no main.py and src/coded.py: not a clone of "
                         "ZeeChono/gradient_coding_mds")
    if shutil.which("mpirun") is None:
        raise SystemExit("ABORT: no mpirun (apt-get install openmpi-bin libopenmpi-dev, "
                         "then pip install mpi4py)")
    if slow > 1 and not Throttle.available():
        print(f"{title}: no writable cgroup cpu controller to slow workers by, so no "
              "stragglers (--tandon-slow 1)")
        slow = 1.0
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    result = tandon(clone, runs, rows, cols, slow)
    t = result["times"]
    med = {name: statistics.median(r["seconds"]) for name, r in t.items()}
    slowed = ", ".join(str(w) for w in TANDON_SLOW)
    print(f"{title} ({clone}, commit {commit}): {TANDON_N} workers, {TANDON_S} stragglers, "
          f"logistic regression on {TANDON_N} partitions of {rows} x {cols} (features "
          f"integers / {QUANT}, labels +-1), {TANDON_ITERS} iterations a run (their "
          f"main.py's), {runs} round(s) of six runs interleaved; "
          + (f"workers {slowed} slowed on both sides, each held to 1/{slow:g} of its "
             f"fair share of the cores, cores / workers (a cgroup CPU quota: their code "
             f"injects no stragglers); " if slow > 1
             else "no stragglers; ") +
          f"seconds per iteration, min / median, each run's first iteration left out, by "
          f"their master's timer (it prints ms) and descend's, MPI startup and data "
          f"loading not counted ({TANDON_N + 1} processes a side on "
          f"{machine_info().get('cores')} cores):")
    labels = {**{f"Tandon {k}": v for k, v in TANDON_ROWS.items()},
              **{f"ffcode {k}": v for k, v in FFCODE_ROWS.items()}}
    for name, label in labels.items():
        s, decodable = t[name]["seconds"], t[name].get("decodable")
        within = "" if not decodable else \
            f" (decodable after {statistics.median(decodable):.4f} s)"
        print(f"   {name:>24}: {min(s):.4f} / {med[name]:.4f} s{within}  {label}")
    if slow > 1:
        print("   (an ffcode step returns once the workers it stopped have acknowledged, or "
              "after 0.25 s; a worker held to its CPU quota acknowledges late)")
    if min(med["Tandon coded"], med["Tandon naive"]) < 0.01:
        print("   (their timer prints whole milliseconds: at this size its rounding, 0.5 ms, is "
              "over 5 % of their times and of the ratios)")
    print(f"   Tandon / ffcode (medians, above 1x: ffcode sooner): coded "
          f"{med['Tandon coded'] / med['ffcode original']:.2f}x against ffcode's whole "
          f"messages, {med['Tandon coded'] / med['ffcode partial']:.2f}x against partial "
          f"work, {med['Tandon coded'] / med['ffcode partial, at decode']:.2f}x against "
          f"partial work returned once decoded; uncoded "
          f"{med['Tandon naive'] / med['ffcode uncoded']:.2f}x")
    loss = {name: r["loss"][-1] for name, r in t.items()}
    print(f"   training loss after {TANDON_ITERS} iterations (partitions 1 to "
          f"{TANDON_N - 1}, as they compute it): Tandon coded {loss['Tandon coded']:.3f}, "
          f"uncoded {loss['Tandon naive']:.3f} (their accelerated descent with L2, rate "
          f"10/N); ffcode {loss['ffcode partial']:.3f} (plain descent, rate 1/N: at 10/N "
          f"it does not converge); ffcode's four fits equal bit for bit: "
          f"{'yes' if result['same'] else 'NO'}")
    if not result["same"]:
        raise SystemExit("ABORT: ffcode's coded fits differ from its uncoded one")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=41, help="measured rounds (part 2)")
    ap.add_argument("--draws", type=int, default=2001, help="simulated draws (part 1)")
    ap.add_argument("--fits", type=int, default=5, help="fits of each coding (part 3)")
    ap.add_argument("--tandon", metavar="PATH", help="a clone of ZeeChono/gradient_coding_mds "
                    "(part 4; skipped without)")
    ap.add_argument("--tandon-runs", type=int, default=3, help="rounds of four runs (part 4)")
    ap.add_argument("--tandon-rows", type=int, default=4000, help="rows a partition (part 4)")
    ap.add_argument("--tandon-cols", type=int, default=400, help="features (part 4)")
    ap.add_argument("--tandon-slow", type=float, default=SLOWDOWN, help="the slowed "
                    "workers' factor (part 4; 1: none)")
    ap.add_argument("--only", type=int, nargs="+", choices=(1, 2, 3, 4), metavar="PART",
                    help="run only these parts (1 to 4; default all)")
    args = ap.parse_args(argv)
    parts = set(args.only or (1, 2, 3, 4))
    start = time.perf_counter()
    info = machine_info()
    print(f"machine: {info.get('cpu')}, {info.get('cores')} cores")
    lines = []
    if 1 in parts:
        print_simulated(args.draws)
    if 2 in parts:
        lines += print_measured(args.rounds)
    if 3 in parts:
        print_training(args.fits)
    if 4 in parts:
        print_tandon(args.tandon, max(args.tandon_runs, 1), args.tandon_rows,
                     args.tandon_cols, args.tandon_slow)
    print()
    if lines:
        print_targets(lines, start)
    else:
        print(f"total run time {time.perf_counter() - start:.0f} s")


def print_simulated(draws: int) -> None:
    """Part 1's table."""
    print("\n1. Simulated: cyclic repetition, each partition 1 + Exp(1) time units, none or "
          f"s workers {SLOWDOWN:g}x slower; median of {draws} draws")
    print(f"   {'n':>3} {'s':>2} {'slowed':>6} {'partial':>8} {'original':>9} {'uncoded':>8} "
          f"{'original/partial':>17} {'uncoded/partial':>16}")
    for n, s, slowed, t in simulated(draws):
        print(f"   {n:>3} {s:>2} {slowed:>6} {t['partial']:>8.2f} {t['original']:>9.2f} "
              f"{t['uncoded']:>8.2f} {t['original'] / t['partial']:>16.2f}× "
              f"{t['uncoded'] / t['partial']:>15.2f}×")
    print("   (the paper reports about 2x for exact recovery against the original protocol "
          "on its own settings)")


def print_measured(rounds: int) -> list:
    """Part 2's lines; its target lines returned."""
    rounds = max(rounds, 1)
    runs = measured(rounds)
    print(f"\n2. Measured: 6 local workers, CyclicRepetition(6, 2), pauses {SHIFT} s + "
          f"Exp({MEAN} s) per partition, two workers {SLOWDOWN:g}x that; seconds per step, "
          f"min / median of {rounds} rounds (interleaved), and the simulator's median for "
          f"the same pauses:")
    med = {name: statistics.median(r["measured"]) for name, r in runs.items()}
    sim = {name: statistics.median(r["predicted"]) for name, r in runs.items()}
    for name, r in runs.items():
        print(f"   {name:>9}: {min(r['measured']):.3f} / {med[name]:.3f} s; simulated "
              f"{sim[name]:.3f} s ({sim[name] / med[name]:.2f}x the measured); a partition's "
              f"compute {statistics.median(r['compute'] or [0.0]) * 1e3:.1f} ms")
    lines = [check("measured: original / partial (median step)", med["original"] / med["partial"],
                   1.5),
             check("measured: uncoded / partial (median step)", med["uncoded"] / med["partial"],
                   1.3)]
    lines += [at_most(f"simulated vs measured, {name}: |simulated / measured - 1|",
                      abs(sim[name] / med[name] - 1) * 100, 10, " %") for name in runs]
    return lines


def print_training(fits: int) -> None:
    """Part 3's lines."""
    fits = max(fits, 1)
    trained = training(fits, steps=10)
    step = {name: statistics.median(t) for name, t in trained["seconds"].items()}
    print(f"\n3. Training the MLP on digits (1200 samples, 6 partitions), {fits} fit(s) of 10 "
          f"steps per coding, the pauses of part 2: seconds per step (an epoch), min / "
          f"median:")
    for name, t in trained["seconds"].items():
        print(f"   {name:>9}: {min(t):.3f} / {step[name]:.3f} s")
    print(f"   uncoded / partial: {step['uncoded'] / step['partial']:.2f}x per step; the coded "
          f"and the uncoded fits' parameters equal bit for bit: "
          f"{'yes' if trained['same'] else 'NO'}; training accuracy after 10 steps "
          f"{trained['accuracy']:.2f}")
    if not trained["same"]:
        raise SystemExit("ABORT: the coded fit differs from the uncoded one")


if __name__ == "__main__":
    main()
