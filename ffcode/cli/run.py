"""``ffcode run matmul|matvec|lcc``: a real coded job over a cluster, one scheme or all of
them on the same injected stragglers (``--compare``), with a live rank bar, a summary and
an exactness check against direct computation.

Every flag is checked before anything is printed and before a worker starts; a flag the job
would ignore is refused.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode run")
>>> add_arguments(parser)
>>> args = settle(parser.parse_args(["matmul", "--s", "3"]))
>>> args.code, args.s, args.pieces
('matdot', 3, 4)
"""
import argparse
import logging
import os
import socket
import sys
import time
from urllib.parse import urlsplit

import numpy as np

from ffcode import checks, functions
from ffcode.cli import output
from ffcode.cli.args import (argument_parser, check_stragglers, int_expression, integer,
                             namespace, seconds)
from ffcode.codes.lcc import is_row_linear
from ffcode.codes.registry import CodeEntry, code_entry, code_names
from ffcode.decoding import robust
from ffcode.errors import ClusterError
from ffcode.field import GF
from ffcode.schemes import Scheme, default, names, registered
from ffcode.version import __version__

KEYS = "ffcode-keys"
BASELINE = Scheme.CLASSIC                       # --compare's table: ratios against its time
WITH_SHARES = (Scheme.CLASSIC, Scheme.COMPFS)   # what --compare runs again with --shares
log = logging.getLogger(__name__)


# -- the flags ---------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode run', in groups: the job, its code, the run, the injected faults
    and the cluster."""
    argument_parser(parser)
    _job_flags(parser)
    _code_flags(parser.add_argument_group("code"))
    _run_flags(parser.add_argument_group("run"))
    _fault_flags(parser.add_argument_group("injected faults (worker indices are 0-based)"))
    _cluster_flags(parser.add_argument_group(
        "cluster (default: local worker processes)",
        "With --endpoint tcp://HOST:PORT the master waits for workers started with\n"
        "'ffcode worker --connect'. They authenticate with CURVE keys: --key and --clients\n"
        f"if given, else a key directory (--keys, default ./{KEYS}) made on first use and\n"
        "reused; the one command each worker needs is printed. With --engine ray the\n"
        "workers are Ray actors spread over a Ray cluster's nodes (--address, default: a\n"
        "new local Ray), with fresh CURVE keys for each run."))


def _job_flags(parser):
    parser.add_argument("job", choices=["matmul", "matvec", "lcc"],
                        help="matmul: C = A @ B (with the code --code names); matvec: "
                             "y = A @ x (MDS); lcc: f(X_1..X_k) with Lagrange coded computing")
    parser.add_argument("--n", type=integer(low=1), default=2048, help="matrix size n (A is n "
                        "x n; for lcc each X_j is n x 64)")
    parser.add_argument("--p", type=int_expression, default=2**31 - 1, metavar="P",
                        help="prime modulus, e.g. 65521 or 2**61-1 (default 2**31-1)")
    parser.add_argument("--workers", type=integer(low=1), default=6, metavar="N",
                        help="N workers")


def _code_flags(code):
    matmul = code_names("matmul")       # the registered codes (ffcode.codes.registry)
    code.add_argument("--code", choices=matmul, help="matmul: " + "; ".join(
                      f"{name} ({code_entry(name).description})" for name in matmul) +
                      " (default polynomial, or matdot with --s)")
    code.add_argument("--a", type=integer(low=1), help="matmul: A in a row blocks (default 2)")
    code.add_argument("--b", type=integer(low=1), help="matmul: B in b column blocks "
                      "(default 2, 1 for entangled and gasp)")
    code.add_argument("--s", type=integer(low=1), help="matmul with matdot or entangled: the "
                      "inner dimension in s blocks (default 2)")
    code.add_argument("--k", type=integer(low=1), help="matvec: A in k row blocks "
                      "(default 4); lcc: k data blocks (default 2)")
    code.add_argument("--t", type=integer(low=0), help="lcc and matmul --code gasp: privacy "
                      "against t colluding workers (default 1)")
    code.add_argument("--f", help="lcc: f as 'package.module:function', called as f(F, X) "
                      "(default ffcode.functions:square)")
    code.add_argument("--degree", type=integer(low=1), help="lcc: total degree of f "
                      "(default 2)")
    code.add_argument("--row-linear", action="store_true", help="lcc: f is linear in the "
                      "rows of X, f(G @ X) = G @ f(X) for every matrix G mixing the rows (as "
                      "f(X) = X @ W; an elementwise square is not); needed for compfs, and "
                      "tested on random data (default: not)")


def _run_flags(run):
    run.add_argument("--scheme", choices=names(), help="how results travel (default compfs, "
                     "or cfs when f is not row-linear)")
    run.add_argument("--compare", action="store_true", help="run every scheme on the same "
                     "injected faults and print a table with ratios against classic "
                     "(default: one scheme)")
    run.add_argument("--pieces", type=integer(low=1), help="m pieces per result, for "
                     "systematic, cfs and compfs (default 4)")
    run.add_argument("--jobs", type=integer(low=1, high=256), default=1, metavar="T",
                     help="run T jobs one at a time, then the T in flight together, and "
                          "print each job and both totals (each job's stragglers are the "
                          "next --stragglers workers)")
    run.add_argument("--shares", type=integer(low=1), default=1, metavar="W",
                     help="each worker holds W shares (the code gets W points per worker) "
                          "and works through them in order, so fast workers keep computing "
                          "while stragglers are waited for; with --compare, classic and "
                          "compfs run again with W shares after every scheme with one; "
                          "lcc's privacy counts the shares --t workers hold (default 1)")
    run.add_argument("--allocate", choices=["uniform", "speed"], default="uniform",
                     help="with --shares: deal the shares round-robin (uniform), or give "
                          "each worker a number in proportion to its speed measured in the "
                          "job before (speed; a one-share job measures it first when none "
                          "ran) (default uniform)")
    run.add_argument("--seed", type=integer(low=0), default=0, help="seed of the data, the "
                     "encoding and the injected faults")
    run.add_argument("--timeout", type=seconds, default=600.0, metavar="S",
                     help="seconds per job")
    run.add_argument("--start-timeout", type=seconds, default=60.0, metavar="S",
                     help="seconds to wait for the workers to connect")
    run.add_argument("--report", metavar="FILE", help="write the report as JSON: the "
                     "report object, or with --compare {schema, ffcode, date, runs: "
                     "[reports]} (default: none)")
    run.add_argument("--no-progress", action="store_true", help="no live rank bar (default: "
                     "a bar on a terminal)")
    run.add_argument("--adversaries", type=integer(low=0), default=0, metavar="A",
                     help="decode despite up to A malicious workers and name them "
                          "(every scheme but uncoded stops as soon as what arrived decides "
                          "the output: R + A results when all agree, R + 2A at most)")
    run.add_argument("--no-verify", action="store_true", help="do not check the output "
                     "(Freivalds) before accepting it (default: checked where cheap)")


def _fault_flags(faults):
    faults.add_argument("--stragglers", type=integer(low=0), default=3, metavar="K",
                        help="the last K workers are --slowdown times slower")
    faults.add_argument("--slowdown", type=float, help="the stragglers' factor (default 8)")
    faults.add_argument("--slow", action="append", default=[], metavar="W:FACTOR",
                        help="worker W computes FACTOR times slower (default: none)")
    faults.add_argument("--delay", metavar="SHIFT:MEAN", help="every piece pauses SHIFT + "
                        "Exponential(MEAN) seconds (shifted-exponential model; default none)")
    faults.add_argument("--link", action="append", default=[], metavar="W:MBPS",
                        help="cap worker W's link at MBPS megabytes per second (default: "
                             "none)")
    faults.add_argument("--loss", action="append", default=[], metavar="P|W:P",
                        help="every worker's link to the master (or worker W's) loses the "
                             "share P of the job's messages, both ways; the job still "
                             "delivers (default: none)")
    faults.add_argument("--burst", type=float, metavar="B",
                        help="lost messages come in runs of mean length B (Gilbert-Elliott; "
                             "default: independent losses)")
    faults.add_argument("--repair", choices=["dense", "sparse"], default="dense",
                        help="with --loss, how cfs makes up a lost packet: a fresh "
                             "combination of all its share's (dense), or its pieces sent "
                             "plain and only the lost ones combined, cheaper to decode "
                             "(sparse; cfs only: with --compare, the other schemes run "
                             "dense) (default dense)")
    faults.add_argument("--crash", action="append", default=[], metavar="W:J",
                        help="worker W dies after sending J packets (default: none)")
    faults.add_argument("--hang", action="append", default=[], metavar="W:J",
                        help="worker W freezes after sending J packets (default: none)")
    faults.add_argument("--corrupt", action="append", default=[], metavar="W:MODE",
                        help="worker W is malicious: MODE random (garbage payloads), piece "
                             "(one element of its first piece off by one) or shape (a row "
                             "too many) (default: none)")


def _cluster_flags(cluster):
    cluster.add_argument("--engine", choices=["local", "ray"], default="local",
                         help="local: worker processes on this host (or, with --endpoint, "
                              "workers started by hand); ray: Ray actors (default local)")
    cluster.add_argument("--address", metavar="HOST:PORT", help="--engine ray: the Ray "
                         "cluster's head, as 'ray start --head' printed it, or auto "
                         "(default: a new local Ray with a CPU per worker)")
    cluster.add_argument("--endpoint", help="listen on tcp://HOST:PORT (PORT * for any free "
                         "one) or ipc://PATH and wait for 'ffcode worker --connect' workers "
                         "(default: local workers; with --engine ray, tcp on this node's Ray "
                         "address)")
    cluster.add_argument("--groups", type=integer(low=1), metavar="G", help="a relay between "
                         "the master and each of G equal groups of the workers: it forwards "
                         "its group's packets that add rank (with --endpoint, start each "
                         "relay with 'ffcode worker --connect ... --group N/G'); the "
                         "injected faults still name the N workers (default: no relays)")
    cluster.add_argument("--key", help="CURVE: the master's secret key file, with --clients "
                         "(default: from --keys)")
    cluster.add_argument("--clients", help="CURVE: directory of authorised worker public "
                         "keys (default: from --keys)")
    cluster.add_argument("--keys", metavar="DIR", help="CURVE key directory: master.key, "
                         "master.key_secret, worker.key, worker.key_secret and clients/ "
                         f"(default ./{KEYS})")
    cluster.add_argument("--insecure", action="store_true", help="no encryption and no "
                         "authentication: anyone who reaches the endpoint can join as a "
                         "worker; for trusted networks only (default: CURVE)")


# (flag, jobs it is for): the others are refused rather than ignored
JOB_FLAGS = [("code", "matmul"), ("a", "matmul"), ("b", "matmul"), ("s", "matmul"),
             ("k", "matvec and lcc"), ("t", "lcc and matmul --code gasp"), ("f", "lcc"),
             ("degree", "lcc"), ("row_linear", "lcc")]
DEFAULTS = {"t": 1, "f": "ffcode.functions:square", "degree": 2, "pieces": 4,
            "slowdown": 8.0}
# The registered code each job runs (matmul's: --code, registered for matmul); a code's
# parameters are the flags it takes, with their defaults (ffcode.codes.registry).
JOB_CODES = {"matvec": "mds", "lcc": "lcc"}


def _flag(name) -> str:
    return "--" + name.replace("_", "-")


def settle(args: argparse.Namespace) -> argparse.Namespace:
    """Refuse flags the job would ignore and contradictions, then fill in the defaults that
    depend on the job (in place; returns args)."""
    namespace(args)
    for name, jobs in JOB_FLAGS:
        if getattr(args, name) not in (None, False) and args.job not in jobs:
            raise ValueError(f"{_flag(name)} is for {jobs}, not {args.job}.")
    if args.job == "matmul":
        if args.code is None:
            args.code = "matdot" if args.s is not None else "polynomial"
        takes = code_entry(args.code, "matmul").params
        for name in ("a", "b", "s", "t"):
            if getattr(args, name) is not None and name not in takes:
                raise ValueError(f"--{name} is not for --code {args.code}, which takes "
                                 f"{' and '.join('--' + n for n in takes)}.")
        for name, value in takes.items():    # (a parameter no flag gives: its default)
            if getattr(args, name, None) is None:
                setattr(args, name, value)
    if args.scheme is not None:
        args.scheme = Scheme.parse(args.scheme)
    if args.compare and args.scheme is not None:
        raise ValueError("--compare runs every scheme: leave out --scheme.")
    if args.jobs > 1 and (args.compare or args.shares > 1):
        raise ValueError("--jobs runs one scheme T times: leave out --compare and --shares.")
    if args.pieces is not None and args.scheme is not None and args.scheme.whole:
        raise ValueError(f"--pieces is for systematic, cfs and compfs: {args.scheme} sends "
                         f"whole results.")
    if args.slowdown is not None and args.stragglers == 0:
        raise ValueError("--slowdown is the stragglers' factor, and --stragglers is 0: use "
                         "--slow W:FACTOR for one worker.")
    if args.adversaries and args.scheme is not None and not args.scheme.coded:
        raise ValueError(f"--adversaries needs redundancy, which --scheme {args.scheme} has none "
                         f"of.")
    if args.groups is not None:
        if args.groups > args.workers or args.workers % args.groups:
            raise ValueError(f"--workers {args.workers} do not split into --groups "
                             f"{args.groups} equal groups.")
        if args.allocate == "speed":
            raise ValueError("--allocate speed measures the relays, not their workers: leave "
                             "it out with --groups.")
    if args.allocate == "speed" and args.shares == 1:
        raise ValueError("--allocate speed shares out --shares W per worker on average: give "
                         "--shares 2 or more.")
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.k is None and args.job in JOB_CODES:
        args.k = code_entry(JOB_CODES[args.job]).params["k"]
    return args


def entry_of(args: argparse.Namespace) -> CodeEntry:
    """The registered code the settled args' job runs."""
    return code_entry(args.code if args.job == "matmul" else JOB_CODES[args.job])


def _params(args: argparse.Namespace, entry: CodeEntry, shares: int = 1) -> dict:
    """The code's parameters from the flags (a privacy t counts the shares t workers hold);
    those no flag gives take the registration's defaults."""
    params: dict = {name: getattr(args, name, None) for name in entry.params}
    if params.get("t") is not None:
        params["t"] *= shares
    return params


def faults_from(args: argparse.Namespace, job: int = 0):
    """The injected faults the settled arguments ask for (a ``Faults``), checked against
    the job's workers; job j's stragglers are the next --stragglers workers after job
    j - 1's (the last ones for job 0)."""
    from ffcode.runtime import Faults
    check_stragglers(namespace(args).stragglers, args.workers)
    N, K = args.workers, args.stragglers
    slowdown = {(w + job * K) % N: args.slowdown for w in range(N - K, N)}
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
                    corrupt=_pairs(args.corrupt, "corrupt", str),
                    loss=_loss(args.loss), burst=args.burst)
    faults.check_workers(args.workers)
    return faults


def _loss(values) -> "float | dict":
    """--loss's values: one P for every worker, or W:P for each worker named."""
    every = [value for value in values if ":" not in value]
    if len(every) > 1 or (every and len(values) > 1):
        raise ValueError("--loss wants one P for every worker, or W:P for each worker named, "
                         "not both")
    if every:
        try:
            return float(every[0])
        except ValueError:
            raise ValueError(f"--loss wants P or W:P, not {every[0]!r}") from None
    return _pairs(values, "loss", float)


def _pairs(values, name, kind):
    out = {}
    for value in values:
        worker, sep, amount = value.partition(":")
        try:
            out[int(worker)] = kind(amount)
        except ValueError:
            raise ValueError(f"--{name} wants W:VALUE, not {value!r}") from None
    return out


def job_from(args: argparse.Namespace) -> tuple:
    """(code, inputs, the exact output by direct computation, a description) of settled
    args; the code has a point per worker (``code_for`` gives it more)."""
    F, n, N = GF(namespace(args).p), args.n, args.workers
    entry = entry_of(args)
    R = entry.recovery_threshold(**_params(args, entry))
    counts = [f"--{name}" for name, default in entry.params.items()      # R's parameters
              if isinstance(default, int) and not isinstance(default, bool)]
    flags = " and ".join(filter(None, [", ".join(counts[:-1]), *counts[-1:]]))
    if R is not None and N < R:
        raise ValueError(f"--workers {N} is fewer than the code's recovery threshold R = {R} "
                         f"(from {flags}): give at least {R} workers.")
    code = code_for(args, F)
    if args.job == "matmul":
        A, B = F.random((n, n), seed=args.seed), F.random((n, n), seed=args.seed + 1)
        return code, (A, B), F.matmul(A, B), f"C = A @ B, {n}x{n}"
    if args.job == "matvec":
        A, x = F.random((n, n), seed=args.seed), F.random(n, seed=args.seed + 1)
        return code, (A, x), F.matmul(A, x), f"y = A @ x, {n}x{n}"
    if args.row_linear and not is_row_linear(F, functions.load(args.f), (64,)):
        raise ValueError(f"--row-linear: f = {args.f} is not row-linear: f(G @ X) != G @ f(X) "
                         f"for a random G mixing the rows of a random X (row-linear means "
                         f"linear in the rows, as f(X) = X @ W; an elementwise square is "
                         f"not). Leave out --row-linear.")
    X = [F.random((n, 64), seed=args.seed + j) for j in range(args.k)]
    return (code, (X,), [code.f(F, x) for x in X],
            f"f(X_j) for {args.k} blocks {n}x64, f = {args.f}")


def code_for(args: argparse.Namespace, F, shares: int = 1):
    """The job's code with this many shares per worker (points): LCC's and GASP's privacy
    counts the shares that --t workers hold."""
    shares = checks.integer(shares, "shares", low=1)
    points = shares * namespace(args).workers
    entry = entry_of(args)
    return entry.make(F, points, **_params(args, entry, shares))


def schemes_for(args: argparse.Namespace, code) -> tuple[list, list]:
    """(the schemes to run, notes saying why a default or --compare leaves one out);
    ValueError for a scheme the code cannot run. Prints nothing: main checks every flag
    before its first line."""
    linear = code.row_linear
    if namespace(args).compare:
        every = registered()
        piecewise = [] if linear else [s for s in every if s.piecewise]
        uncoded = [s for s in every if args.adversaries and not s.coded]
        notes = [f"  {s} left out: it needs a row-linear f, and f = {args.f} is not (see "
                 f"--row-linear)" for s in piecewise]
        notes += [f"  {s} left out: it has no redundancy to correct wrong results with"
                  for s in uncoded]
        return [s for s in every if s not in piecewise + uncoded], notes
    if args.scheme is None:
        scheme = default(linear)
        return [scheme], [] if scheme is default() else [
            f"  scheme {scheme}: the default {default()} needs a row-linear f, and f = "
            f"{args.f} is not (see --row-linear)"]
    if args.scheme.piecewise and not linear:
        raise ValueError(f"--scheme {args.scheme} needs a row-linear f (linear in the rows: "
                         f"f(G @ X) = G @ f(X), as f(X) = X @ W), and f = {args.f} is not "
                         f"declared so: pass --row-linear if it is, or use --scheme "
                         f"{args.scheme.for_computation(False)}.")
    return [args.scheme], []


# -- the cluster -------------------------------------------------------------------------------

def _largest_part(expected) -> int:
    """What the master must take in one message part for this job: a packet is a piece of
    one worker's result, never larger than the output (for LCC, one block's), and a
    control message is at most MAX_META_BYTES. Tighter than the default, it bounds what
    any peer can make the master hold."""
    from ffcode.runtime import MAX_META_BYTES
    outputs = expected if isinstance(expected, list) else [expected]
    return max([MAX_META_BYTES] + [output.nbytes for output in outputs])


def cluster_options(args: argparse.Namespace) -> tuple:
    """(Cluster keyword arguments, the arguments a worker needs after --connect or None for
    local workers, a note on the keys or None). Without --key/--clients a tcp endpoint gets
    the key directory --keys, made on first use and reused after."""
    given = [flag for flag in ("key", "clients", "keys", "insecure")
             if getattr(namespace(args), flag)]
    if args.engine == "ray":
        keyed = [flag for flag in given if flag != "insecure"]
        if keyed:
            raise ValueError(f"{_flag(keyed[0])} is not for --engine ray: it makes fresh "
                             f"CURVE keys for each run.")
        options = {"engine": "ray", "address": args.address, "insecure": args.insecure}
        return options, None, "  Ray workers, " + (
            "no encryption, no authentication (--insecure)" if args.insecure else
            "CURVE keys made for this run (in memory only)")
    if args.address is not None:
        raise ValueError("--address is the Ray cluster's: it needs --engine ray.")
    if args.endpoint is None:
        if given:
            raise ValueError(f"{_flag(given[0])} is for --endpoint: local workers need no "
                             f"keys.")
        return {}, None, None
    scheme = urlsplit(args.endpoint).scheme
    if scheme not in ("tcp", "ipc"):
        raise ValueError(f"--endpoint must look like tcp://HOST:PORT or ipc://PATH, not "
                         f"{args.endpoint!r}.")
    if (args.key is None) != (args.clients is None):
        raise ValueError("--key and --clients go together (CURVE).")
    if args.insecure and len(given) > 1:
        raise ValueError("--insecure is instead of CURVE keys: leave out --key, --clients "
                         "and --keys.")
    if args.keys and args.key:
        raise ValueError("--keys names a key directory instead of --key and --clients: give "
                         "one or the other.")
    if args.insecure:
        return {"insecure": True}, [], "  no encryption, no authentication (--insecure)"
    if args.key:                            # the master's public key, never its secret
        public = args.key[:-len("_secret")] if args.key.endswith(".key_secret") else \
            "MASTER.key"
        return ({"key": args.key, "clients": args.clients},
                ["--key", "WORKER.key_secret", "--server-key", public], None)
    if scheme == "ipc" and not args.keys:   # a local socket file: CURVE only when asked
        return {}, [], None
    from ffcode.runtime import authorise_key, key_pair
    directory = args.keys or KEYS
    master_public, master_secret, made = key_pair(directory, "master")
    worker_public, worker_secret, made_worker = key_pair(directory, "worker")
    clients = os.path.join(directory, "clients")
    authorise_key(worker_public, clients)
    return ({"key": master_secret, "clients": clients},
            ["--key", worker_secret, "--server-key", master_public],
            f"  CURVE keys {'made in' if made or made_worker else 'from'} {directory}/")


def _worker_command(endpoint, worker_args) -> str:
    from ffcode.runtime import reachable   # listening everywhere: workers need a name
    return " ".join(["ffcode worker --connect", reachable(endpoint, socket.gethostname()),
                     *worker_args])


# -- running -----------------------------------------------------------------------------------

class RankBar(output.Bar):
    """The rank of a job as its packets arrive."""

    def __call__(self, rank: int, needed: int) -> None:
        self.show(rank, needed, "rank")


def main(args: argparse.Namespace) -> int:
    """Run the job as the (parsed) arguments say: 0 when every scheme's output is exact, 1
    when one failed or was wrong; ValueError for bad arguments, ClusterError when the
    cluster cannot start, both before anything is printed and before any job."""
    from ffcode.runtime import Cluster
    settle(args)
    if args.report:
        output.check_writable(args.report)
    faults = faults_from(args)
    code, inputs, expected, what = job_from(args)
    jobs, codes, notes = _plan(args, code)
    options, worker_args, note = cluster_options(args)
    if args.groups is not None:
        options["groups"] = args.groups
        notes.append(f"  {args.groups} relays, each forwarding what adds rank of "
                     f"{args.workers // args.groups} workers' packets")
        if worker_args is not None:
            worker_args = [*worker_args, "--group", str(args.workers // args.groups)]
    start = time.perf_counter()
    runs = []                               # (label, report or None, exact, error)
    # The cluster checks its own arguments before it starts a worker: only then print.
    with Cluster(args.workers, args.endpoint, start_timeout=args.start_timeout,
                 max_message=_largest_part(expected), **options) as cluster:
        _header(args, code, what, faults, ([note] if note else []) + notes)
        _wait(cluster, args, worker_args, start)
        if args.allocate == "speed" and not args.compare:
            print("  measuring the workers' speeds with one share each first")
            _one(cluster, args, (jobs[0][0], 1), code, inputs, expected, faults)
        if args.jobs > 1:
            runs = _many(cluster, args, jobs[0][0], code, inputs, expected)
        table = _Table() if args.compare else None
        for scheme, shares in jobs if args.jobs == 1 else []:
            runs.append(_one(cluster, args, (scheme, shares), codes[shares], inputs, expected,
                             faults))
            if table is not None:
                table.add(runs[-1])
    if table is not None:
        table.close()
    if args.report:
        _write(args.report, runs, args.compare or args.jobs > 1)
    ok = all(exact for _, _, exact, _ in runs)
    print("run", "passed" if ok else "FAILED")
    return 0 if ok else 1


def _plan(args, code):
    """(the jobs, as (scheme, shares per worker), their codes by shares per worker, notes
    on the schemes); ValueError when the code cannot correct --adversaries."""
    R, N, W = code.recovery_threshold, code.n_workers, args.shares
    try:
        robust.check_correctable(R, N, args.adversaries)
    except ValueError:                  # said in the command's own flags
        raise ValueError(f"--adversaries {args.adversaries} needs R + 2A = "
                         f"{R + 2 * args.adversaries} workers; the code has R = {R} and "
                         f"--workers {N}.") from None
    schemes, notes = schemes_for(args, code)
    jobs, codes = [(scheme, 1) for scheme in schemes], {1: code}
    if W > 1:
        codes[W] = code_for(args, code.F, W)    # R <= W·R of one share: it fits
        shared = [s for s in WITH_SHARES if (s, 1) in jobs] \
            if args.compare else schemes
        jobs = (jobs if args.compare else []) + [(s, W) for s in shared]
        notes.append(f"  {', '.join(shared)} with {W} shares per worker ({W * N} points), "
                     f"allocated {args.allocate}")
    return jobs, codes, notes


def _header(args, code, what, faults, notes):
    """The job's first lines, printed once the cluster has accepted its arguments."""
    if code.recovery_threshold == code.n_workers:
        log.warning("the code has no redundancy (N = R = %d): every worker is needed",
                    code.n_workers)
    print(f"ffcode run {args.job}: {what} over GF({args.p}), {code!r}, "
          f"m = {args.pieces}")
    for line in notes:
        print(line)
    print(f"  injected: {_describe(faults)}")
    if args.adversaries:
        print(f"  correcting up to {args.adversaries} wrong workers")


def _wait(cluster, args, worker_args, start):
    """Wait for the workers (saying how to start them, when they are started by hand)."""
    if worker_args is not None:
        print(f"  waiting for {args.workers} workers at {cluster.endpoint} (up to "
              f"{args.start_timeout:g} s); start each with:\n"
              f"    {_worker_command(cluster.endpoint, worker_args)}", flush=True)
        if "--server-key" in worker_args:
            print("  (on another host the worker needs those two key files there)",
                  flush=True)
    try:
        cluster.wait()
    except ClusterError as e:
        if worker_args is None:
            raise
        raise ClusterError(f"{e} Wait longer with --start-timeout S.") from None
    nodes = {h.node for h in cluster.live()} - {None}
    print(f"  {args.workers} workers ready at {cluster.endpoint}"
          + (f" on {len(nodes)} Ray node{'s' * (len(nodes) > 1)}" if nodes else "")
          + f" in {time.perf_counter() - start:.2f} s")


def _one(cluster, args, job, code, inputs, expected, faults):
    """One job, ``job`` = (scheme, shares per worker): (its label, report or None, exact,
    error message or None); the label is the scheme, with " xW" for W shares."""
    scheme, shares = job
    label = str(scheme) if shares == 1 else f"{scheme} x{shares}"
    bar = RankBar(label, not args.no_progress)
    try:
        result, report = cluster.run(code, *inputs, scheme=scheme, pieces=args.pieces,
                                     repair=_repair(args, scheme),
                                     **_injected(cluster, faults), timeout=args.timeout,
                                     seed=args.seed,
                                     progress=bar, verify=False if args.no_verify else "auto",
                                     adversaries=args.adversaries,
                                     allocate="speed" if shares > 1 and
                                     args.allocate == "speed" else None)
    except ClusterError as e:
        bar.close()
        print(f"  {label}: FAILED: {e}")
        return label, getattr(e, "report", None), False, str(e)
    bar.close()
    exact = _exact(result, expected)
    if not args.compare:
        print(f"  {report.summary()}")
        print(f"  output equals direct computation: {'yes' if exact else 'NO'}")
    return label, report, exact, None


def _many(cluster, args, scheme, code, inputs, expected) -> list:
    """--jobs T: the T jobs one at a time, then in flight together (each job's faults its
    own); each job's line as it ends, and both totals."""
    import concurrent.futures
    T = args.jobs
    faults = [faults_from(args, j) for j in range(T)]
    options = dict(scheme=scheme, pieces=args.pieces, timeout=args.timeout, seed=args.seed,
                   verify=False if args.no_verify else "auto", adversaries=args.adversaries,
                   repair=_repair(args, scheme))
    began = time.perf_counter()
    for j in range(T):
        try:
            cluster.run(code, *inputs, **_injected(cluster, faults[j]), **options)
        except ClusterError as e:
            print(f"  one at a time, job {j}: FAILED: {e}")
    alone = time.perf_counter() - began
    print(f"  {T} jobs one at a time: {alone:.3f} s; now in flight together:", flush=True)
    began = time.perf_counter()
    futures = {cluster.submit(code, *inputs, **_injected(cluster, faults[j]), **options): j
               for j in range(T)}
    runs: list = [None] * T
    for future in concurrent.futures.as_completed(futures):
        j, label = futures[future], f"{scheme} job {futures[future]}"
        try:
            result, report = future.result()
        except ClusterError as e:
            print(f"  job {j}: FAILED: {e}")
            runs[j] = (label, getattr(e, "report", None), False, str(e))
            continue
        exact = _exact(result, expected)
        print(f"  job {j}: {report.summary()}; exact: {'yes' if exact else 'NO'}")
        runs[j] = (label, report, exact, None)
    together = time.perf_counter() - began
    print(f"  {T} jobs in flight together: {together:.3f} s, {alone / together:.2f}x "
          f"one at a time ({alone:.3f} s)")
    return runs


def _repair(args, scheme) -> str:
    """--repair for this scheme: as given, but dense for the schemes --compare runs that
    cannot take sparse repairs (a single scheme that cannot is refused by the run)."""
    if args.compare and scheme is not None:
        try:
            Scheme.parse(scheme).check_repair(args.repair)
        except ValueError:
            return "dense"
    return args.repair


def _injected(cluster, faults) -> dict:
    """The run's fault options: the faults name the workers, which on a cluster of relays
    are the groups' (``group_faults``)."""
    return {"group_faults": faults.by_group(cluster.groups)} if cluster.groups else \
        {"faults": faults}


def _exact(result, expected) -> bool:
    if isinstance(expected, list):
        return len(result) == len(expected) and all(np.array_equal(o, e)
                                                    for o, e in zip(result, expected))
    return np.array_equal(result, expected)


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
    burst = "" if faults.burst is None else f" in runs of {faults.burst:g}"
    if isinstance(faults.loss, float):
        parts.append(f"every link loses {faults.loss:.0%}{burst}")
    parts += [f"worker {w} link loses {p:.0%}{burst}" for w, p in sorted(faults.loss.items())] \
        if isinstance(faults.loss, dict) else []
    return "; ".join(parts) or "nothing"


class _Table:
    """The --compare table, a row printed (and flushed, for a pipe) as soon as its job is
    done and its "vs classic" known: a row before classic's waits for classic's."""

    def __init__(self) -> None:
        self.pending: list = []
        self.classic = None             # classic's total time, once its job was exact
        self.known = False
        print(f"  {'scheme':<11}{'total s':>9}{'vs classic':>12}{'compute s':>11}"
              f"{'decode s':>10}{'used':>6}{'wasted':>8}  exact  per-worker used", flush=True)

    def add(self, run) -> None:
        scheme, report, exact, error = run
        self.pending.append(run)
        if scheme == BASELINE:
            self.known = True
            self.classic = report.total if exact and error is None else None
        if self.known:
            self._print()

    def close(self) -> None:
        self._print()
        print("  (vs classic: classic's total time / the scheme's; above 1x is faster)",
              flush=True)

    def _print(self) -> None:
        for scheme, r, exact, error in self.pending:
            if error is not None:
                print(f"  {scheme:<11}   failed")
                continue
            ratio = f"{self.classic / r.total:.2f}x" if self.classic else "-"
            print(f"  {scheme:<11}{r.total:>9.3f}{ratio:>12}{r.compute:>11.3f}"
                  f"{r.decode:>10.3f}{r.used:>6}{r.wasted:>8}  {'yes' if exact else 'NO ':<5}  "
                  f"{[w.used for w in r.workers]}" + (f"  wrong: {r.wrong}" if r.wrong else ""))
        sys.stdout.flush()
        self.pending = []


def _write(path, runs, compare):
    """The report object (one scheme) or {schema, ffcode, date, runs: [...]} (--compare);
    each report gains ``exact`` (the output equals direct computation; null when the job
    failed) and ``error`` (why it failed, or null)."""
    from ffcode.runtime import SCHEMA, utc_now
    entries = [dict(report.to_dict(), exact=exact if error is None else None, error=error)
               for _, report, exact, error in runs if report is not None]
    if compare:
        data = {"schema": SCHEMA, "ffcode": __version__, "date": utc_now(), "runs": entries}
    elif entries:
        data = entries[0]
    else:
        print(f"  no report written: the job failed before it ran ({runs[0][3]})")
        return
    output.write_json(path, data)
    print(f"  report written to {path}")
