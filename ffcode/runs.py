"""``ffcode run matmul|matvec|lcc``: a real coded job over a cluster, one scheme or all of
them on the same injected stragglers (``--compare``), with a live rank bar, a summary and
an exactness check against direct computation."""
import sys
import time

import numpy as np

from ffcode._field import GF
from ffcode.codes import LCC, MDS, MatDot, PolynomialCode


def add_arguments(parser):
    parser.add_argument("job", choices=["matmul", "matvec", "lcc"],
                        help="matmul: C = A @ B (PolynomialCode, or MatDot with --s); matvec: "
                             "y = A @ x (MDS); lcc: f(X_1..X_k) with Lagrange coded computing")
    parser.add_argument("--n", type=int, default=2048, help="matrix size n (A is n x n; "
                        "for lcc each X_j is n x 64) (default 2048)")
    parser.add_argument("--p", type=int, default=2**31 - 1, help="prime (default 2**31-1)")
    parser.add_argument("--workers", type=int, default=6, help="N workers (default 6)")
    code = parser.add_argument_group("code")
    code.add_argument("--a", type=int, default=2, help="matmul: A in a row blocks (default 2)")
    code.add_argument("--b", type=int, default=2, help="matmul: B in b column blocks "
                      "(default 2); R = a*b")
    code.add_argument("--s", type=int, default=None, help="matmul with MatDot instead: inner "
                      "dimension in s blocks, R = 2s-1")
    code.add_argument("--k", type=int, default=None, help="matvec: A in k row blocks "
                      "(default 4); lcc: k data blocks (default 2)")
    code.add_argument("--t", type=int, default=1, help="lcc: privacy against t workers "
                      "(default 1)")
    code.add_argument("--f", default="ffcode.functions:square", help="lcc: f as "
                      "'package.module:function', called as f(F, X) (default square)")
    code.add_argument("--degree", type=int, default=2, help="lcc: degree of f (default 2)")
    code.add_argument("--row-linear", action="store_true", help="lcc: f is linear in the "
                      "rows of X (needed for compfs)")
    run = parser.add_argument_group("run")
    run.add_argument("--scheme", default="compfs",
                     choices=["uncoded", "classic", "systematic", "cfs", "compfs"])
    run.add_argument("--compare", action="store_true", help="run every scheme on the same "
                     "injected faults and print a table with ratios against classic")
    run.add_argument("--pieces", type=int, default=4, help="m pieces per result (default 4)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--timeout", type=float, default=600.0, help="seconds per job")
    run.add_argument("--report", metavar="FILE", help="write the report(s) as JSON")
    run.add_argument("--no-progress", action="store_true", help="no live rank bar")
    faults = parser.add_argument_group("injected faults (worker indices are 0-based)")
    faults.add_argument("--stragglers", type=int, default=3, help="the last K workers are "
                        "--slowdown times slower (default 3)")
    faults.add_argument("--slowdown", type=float, default=4.0, help="(default 4)")
    faults.add_argument("--slow", action="append", default=[], metavar="W:FACTOR",
                        help="worker W computes FACTOR times slower")
    faults.add_argument("--delay", metavar="SHIFT:MEAN", help="every piece pauses SHIFT + "
                        "Exponential(MEAN) seconds (shifted-exponential model)")
    faults.add_argument("--link", action="append", default=[], metavar="W:MBPS",
                        help="cap worker W's link at MBPS megabytes per second")
    faults.add_argument("--crash", action="append", default=[], metavar="W:J",
                        help="worker W dies after sending J packets")
    faults.add_argument("--hang", action="append", default=[], metavar="W:J",
                        help="worker W freezes after sending J packets")
    faults.add_argument("--corrupt", action="append", default=[], metavar="W:MODE",
                        help="worker W is malicious: MODE random (garbage payloads), piece "
                             "(one element of its first piece off by one) or shape (a row "
                             "too many)")
    run.add_argument("--adversaries", type=int, default=0, metavar="A",
                     help="decode despite up to A malicious workers and name them "
                          "(every scheme but uncoded stops as soon as what arrived decides "
                          "the output: R + A results when all agree, R + 2A at most)")
    run.add_argument("--no-verify", action="store_true", help="do not check the output "
                     "(Freivalds) before accepting it")
    cluster = parser.add_argument_group("cluster (default: local worker processes)")
    cluster.add_argument("--endpoint", help="listen on tcp://HOST:PORT and wait for "
                         "'ffcode worker --connect' workers")
    cluster.add_argument("--key", help="CURVE: the master's secret key file")
    cluster.add_argument("--clients", help="CURVE: directory of authorised worker public keys")


def _pairs(values, name, kind):
    out = {}
    for value in values:
        worker, sep, amount = value.partition(":")
        try:
            out[int(worker)] = kind(amount)
        except ValueError:
            raise ValueError(f"--{name} wants W:VALUE, not {value!r}") from None
    return out


def faults_from(args):
    from ffcode.runtime import Faults
    if not 0 <= args.stragglers <= args.workers:
        raise ValueError(f"--stragglers must be between 0 and --workers ({args.workers}), "
                         f"not {args.stragglers}")
    slowdown = {w: args.slowdown for w in range(args.workers - args.stragglers, args.workers)
                if args.stragglers > 0}
    slowdown.update(_pairs(args.slow, "slow", float))
    delay = None
    if args.delay:
        shift, _, mean = args.delay.partition(":")
        try:
            delay = (float(shift), float(mean or 0))
        except ValueError:
            raise ValueError(f"--delay wants SHIFT:MEAN seconds, not {args.delay!r}") from None
    links = {w: rate * 1e6 for w, rate in _pairs(args.link, "link", float).items()}
    faults = Faults(slowdown=slowdown, delay=delay, link_rate=links,
                    crash_after=_pairs(args.crash, "crash", int),
                    hang_after=_pairs(args.hang, "hang", int), seed=args.seed,
                    corrupt=_pairs(args.corrupt, "corrupt", str))
    faults.check_workers(args.workers)
    return faults


def job_from(args):
    """(code, inputs, the exact output by direct computation, a description)."""
    F, n, N = GF(args.p), args.n, args.workers
    if n < 1 or N < 1:
        raise ValueError("--n and --workers must be at least 1")
    if args.job == "matmul":
        A, B = F.random((n, n), seed=args.seed), F.random((n, n), seed=args.seed + 1)
        code = (MatDot(F, args.s, N) if args.s is not None else
                PolynomialCode(F, args.a, args.b, N))
        return code, (A, B), F.matmul(A, B), f"C = A @ B, {n}x{n}"
    if args.job == "matvec":
        A, x = F.random((n, n), seed=args.seed), F.random(n, seed=args.seed + 1)
        k = 4 if args.k is None else args.k
        return MDS(F, k, N), (A, x), F.matmul(A, x), f"y = A @ x, {n}x{n}"
    k = 2 if args.k is None else args.k
    code = LCC(F, k, args.t, args.f, args.degree, N, row_linear=args.row_linear)
    X = [F.random((n, 64), seed=args.seed + j) for j in range(k)]
    return code, (X,), [code.f(F, x) for x in X], f"f(X_j) for {k} blocks {n}x64, f = {args.f}"


class RankBar:
    """A one-line live bar on stderr (only on a terminal)."""

    def __init__(self, label, enabled):
        self.label, self.enabled = label, enabled and sys.stderr.isatty()

    def __call__(self, rank, needed):
        if self.enabled:
            filled = 30 * rank // max(needed, 1)
            sys.stderr.write(f"\r  {self.label:<10} [{'#' * filled}{'.' * (30 - filled)}] "
                             f"rank {rank}/{needed}")
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def _exact(output, expected):
    if isinstance(expected, list):
        return len(output) == len(expected) and all(np.array_equal(o, e)
                                                    for o, e in zip(output, expected))
    return np.array_equal(output, expected)


def run(args) -> int:
    from ffcode.runtime import Cluster, ClusterError
    code, inputs, expected, what = job_from(args)
    faults = faults_from(args)
    if args.report:
        _write(args.report, [])             # refuse an unwritable path before any work
    schemes = ["uncoded", "classic", "systematic", "cfs", "compfs"] if args.compare else \
        [args.scheme]
    if args.compare and not code.row_linear:
        schemes.remove("compfs")
    if args.compare and args.adversaries:
        schemes.remove("uncoded")           # no redundancy to correct with
    print(f"ffcode run {args.job}: {what} over GF({args.p}), {code!r}, m = {args.pieces}")
    print(f"  injected: {_describe(faults)}")
    if args.adversaries:
        print(f"  correcting up to {args.adversaries} wrong workers")
    start = time.perf_counter()
    with Cluster(args.workers, args.endpoint, key=args.key, clients=args.clients) as cluster:
        cluster.wait()
        print(f"  {args.workers} workers ready at {cluster.endpoint} in "
              f"{time.perf_counter() - start:.2f} s")
        reports, ok = [], True
        for scheme in schemes:
            bar = RankBar(scheme, not args.no_progress)
            try:
                output, report = cluster.run(code, *inputs, scheme=scheme, pieces=args.pieces,
                                             faults=faults, timeout=args.timeout,
                                             seed=args.seed, progress=bar,
                                             verify=False if args.no_verify else "auto",
                                             adversaries=args.adversaries)
            except ClusterError as e:
                bar.close()
                print(f"  {scheme}: FAILED: {e}")
                ok = False
                reports.append(getattr(e, "report", None))
                continue
            bar.close()
            exact = _exact(output, expected)
            ok = ok and exact
            reports.append(report)
            if not args.compare:
                print(f"  {report.summary()}")
                print(f"  output equals direct computation: {'yes' if exact else 'NO'}")
            report.exact = exact            # shown in the table and written to the JSON
    if args.compare:
        _table(schemes, reports)
    if args.report:
        _write(args.report, [r for r in reports if r is not None])
        print(f"  report written to {args.report}")
    print("run", "passed" if ok else "FAILED")
    return 0 if ok else 1


def _describe(faults) -> str:
    parts = [f"worker {w} {k:g}x slower" for w, k in sorted(faults.slowdown.items())]
    if faults.delay:
        parts.append(f"per-piece pause {faults.delay[0]:g} s + Exp(mean {faults.delay[1]:g} s)")
    parts += [f"worker {w} link {r / 1e6:g} MB/s" for w, r in sorted(faults.link_rate.items())]
    parts += [f"worker {w} crashes after {j} packets" for w, j in sorted(
        faults.crash_after.items())]
    parts += [f"worker {w} hangs after {j} packets" for w, j in sorted(
        faults.hang_after.items())]
    parts += [f"worker {w} is malicious ({mode})" for w, mode in sorted(
        faults.corrupt.items())]
    return "; ".join(parts) or "nothing"


def _table(schemes, reports):
    classic = next((r.total for s, r in zip(schemes, reports) if s == "classic" and r), None)
    print(f"  {'scheme':<11}{'total s':>9}{'vs classic':>12}{'compute s':>11}{'decode s':>10}"
          f"{'used':>6}{'wasted':>8}  exact  per-worker used")
    for scheme, r in zip(schemes, reports):
        if r is None or not hasattr(r, "exact"):
            print(f"  {scheme:<11}   failed")
            continue
        ratio = f"{classic / r.total:.2f}x" if classic else "-"
        print(f"  {scheme:<11}{r.total:>9.3f}{ratio:>12}{r.compute:>11.3f}{r.decode:>10.3f}"
              f"{r.used:>6}{r.wasted:>8}  {'yes' if r.exact else 'NO ':<5}  "
              f"{[w.used for w in r.workers]}"
              + (f"  wrong: {r.wrong}" if r.wrong else ""))
    print("  (vs classic: classic's total time / the scheme's; above 1x is faster)")


def _write(path, reports):
    import json
    data = [dict(r.to_dict(), exact=getattr(r, "exact", None)) for r in reports]
    try:
        with open(path, "w") as f:
            json.dump(data[0] if len(data) == 1 else data, f, indent=1)
            f.write("\n")
    except OSError as e:
        raise ValueError(f"cannot write the report to {path!r}: {e.strerror}") from None
