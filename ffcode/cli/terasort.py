"""``ffcode terasort``: Coded TeraSort on local worker processes (Li, Yu, Maddah-Ali and
Avestimehr), and with ``--compare`` TeraSort too, on the same records and workers: the
time of each phase (map, pack/encode, shuffle, unpack/decode, reduce) at the slowest
worker, the whole job's, the bytes each worker sent in the shuffle, and whether the output
is the input sorted.

The records are TeraGen's (100 bytes, a 10-byte key first), K key ranges come from a
sample of the keys, and the records are split into one file per r-subset of the K workers,
each file mapped by the r workers of its subset. TeraSort maps every file once (one file a
worker) and sends every value uncoded; Coded TeraSort maps every file on r workers and
multicasts coded packets to groups of r + 1.

Every flag is checked before anything is printed and before a worker starts:

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode terasort")
>>> add_arguments(parser)
>>> args = settle(parser.parse_args(["--records", "3000", "--workers", "4", "--r", "2",
...                                  "--link-rate", "100"]))
>>> args.records, args.workers, args.r, args.network, args.link_rate
(3000, 4, 2, 'links', 12500000.0)
>>> [len(f) // 100 for f in split(terasort.records(3000, seed=0), 4, 2)]   # C(4, 2) = 6 files
[500, 500, 500, 500, 500, 500]
>>> settle(parser.parse_args(["--workers", "4", "--r", "4"]))
Traceback (most recent call last):
...
ValueError: --r 4 must be below --workers 4: with r = K every worker maps every file.

The phase table, from the runs as the report writes them:

>>> runs = [{"variant": "terasort", "r": 1, "sent": [3000, 3000], "sorted": True,
...          "phases": {"map": 0.25, "encode": 0.01, "shuffle": 2.0, "decode": 0.01,
...                     "reduce": 0.5, "total": 3.0}},
...         {"variant": "coded", "r": 2, "sent": [1000, 1000], "sorted": True,
...          "phases": {"map": 0.5, "encode": 0.02, "shuffle": 1.0, "decode": 0.02,
...                     "reduce": 0.5, "total": 2.0}}]
>>> print("\\n".join(table(runs)))
  variant              map  pack/encode  shuffle  unpack/decode  reduce   total  sent MB  sorted
  TeraSort           0.250        0.010    2.000          0.010   0.500   3.000    0.006  yes
  Coded TeraSort     0.500        0.020    1.000          0.020   0.500   2.000    0.002  yes
  (seconds at the slowest worker; total: the whole job, as the master saw it; sent MB:
   the shuffle's payload bytes, each multicast counted once)
  bytes sent in the shuffle, per worker:
    TeraSort        [3000, 3000]
    Coded TeraSort  [1000, 1000]
  Coded TeraSort vs TeraSort: 1.50x in total, 2.00x in the shuffle, 3.00x fewer bytes sent
  (TeraSort's / Coded TeraSort's: above 1x is faster)
"""
import argparse
import math
import sys
import time
import numpy as np

from ffcode.channel import Loss
from ffcode.cli import output
from ffcode.cli.args import argument_parser, integer, namespace, non_negative, positive, seconds
from ffcode.mapreduce import terasort
from ffcode.mapreduce.shuffle import MAX_SUBSETS
from ffcode.version import __version__

NETWORKS = {"links": "a link of its own for every pair of workers",
            "turns": "the workers take turns on one shared medium, a multicast reaching all "
                     "its receivers at once"}
SHORT = {"links": "a link per pair of workers", "turns": "one shared medium, taken in turns"}
LABELS = {"terasort": "TeraSort", "coded": "Coded TeraSort"}
PHASES = [("map", "map"), ("encode", "pack/encode"), ("shuffle", "shuffle"),
          ("decode", "unpack/decode"), ("reduce", "reduce"), ("total", "total")]
PROG = "ffcode terasort"


# -- the flags ---------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode terasort': the records, the workers and their load, the emulated
    network, the run."""
    argument_parser(parser)
    job = parser.add_argument_group("the job")
    job.add_argument("--records", type=integer(low=1), default=100000, metavar="N",
                     help="N records of 100 bytes (a 10-byte key, then a payload)")
    job.add_argument("--workers", type=integer(low=2), default=4, metavar="K",
                     help="K local worker processes, each reducing one range of keys")
    job.add_argument("--r", type=integer(low=1), default=2, metavar="R",
                     help="Coded TeraSort's computation load: every file is mapped on R "
                          "workers (from 1 to K - 1; the records are split into C(K, R) "
                          "files, one per R-subset of the workers)")
    job.add_argument("--compare", action="store_true",
                     help="run TeraSort too (every file mapped once, the shuffle uncoded) on "
                          "the same records and workers, and print how much faster Coded "
                          "TeraSort is (default: Coded TeraSort only)")
    job.add_argument("--skew", type=non_negative(), default=0.0, metavar="S",
                     help="crowd the keys towards small values (the first byte a uniform "
                          "draw to the power 1 + S): the key ranges, from a sample, stay "
                          "balanced (default 0: uniform keys)")
    job.add_argument("--seed", type=integer(low=0), default=0,
                     help="seed of the records and of the sample of keys")
    net = parser.add_argument_group("emulated network")
    net.add_argument("--network", choices=list(NETWORKS), default="links",
                     help="links: " + NETWORKS["links"] + ", a message for several "
                          "receivers sent to each; turns: " + NETWORKS["turns"]
                          + " (Coded TeraSort's schedule) (default links)")
    net.add_argument("--link-rate", type=positive("Mbit/s"), metavar="MBIT",
                     help="each link's (links) or the medium's (turns) rate in Mbit/s "
                          "(default: unthrottled, as fast as the sockets go)")
    net.add_argument("--link-delay", type=non_negative("milliseconds"), default=0.0,
                     metavar="MS", help="milliseconds each message takes on top of its bytes")
    net.add_argument("--loss", type=non_negative(), default=0.0, metavar="P",
                     help="the share of messages every peer link loses, each way, from 0 to "
                          "below 1 (messages go in 64 KiB segments, a lost one sent again) "
                          "(default 0)")
    net.add_argument("--burst", type=positive("messages"), metavar="B",
                     help="the mean run of lost messages (default: independent losses)")
    run = parser.add_argument_group("run")
    run.add_argument("--timeout", type=seconds, default=600.0, metavar="S",
                     help="seconds per job")
    run.add_argument("--report", metavar="FILE",
                     help="write the runs as JSON: {records, workers, r, network, link_rate "
                          "(bytes a second, or null), link_delay (seconds), loss, burst, "
                          "runs: [{variant, r, phases, sent, dropped, resent, sorted}, ...]} "
                          "(default: none)")


def settle(args: argparse.Namespace) -> argparse.Namespace:
    """Refuse contradictions between the flags, and turn --link-rate into bytes a second
    (in place; returns args)."""
    namespace(args)
    if args.r >= args.workers:
        raise ValueError(f"--r {args.r} must be below --workers {args.workers}: with r = K "
                         f"every worker maps every file.")
    files = math.comb(args.workers, args.r)
    if files > MAX_SUBSETS:
        raise ValueError(f"--workers {args.workers} and --r {args.r} make {files} files "
                         f"(one per r-subset of the workers), more than {MAX_SUBSETS}.")
    if args.records < args.workers:
        raise ValueError(f"--records {args.records} must be at least --workers "
                         f"{args.workers}: every worker sorts a range of the keys.")
    if args.loss or args.burst is not None:
        if args.loss >= 1:
            raise ValueError(f"--loss {args.loss:g} must be below 1: a peer link losing every "
                             f"message cannot carry the shuffle.")
        try:
            Loss(args.loss, args.burst)
        except ValueError as e:
            raise ValueError(f"--loss {args.loss:g} --burst {args.burst:g}: {e}") from None
    if args.link_rate is not None:
        args.link_rate = args.link_rate * 1e6 / 8
    args.link_delay /= 1000
    return args


# -- the data ----------------------------------------------------------------------------------

def split(data: np.ndarray, workers: int, load: int) -> list:
    """The records as the files of a job on ``workers`` workers at load ``load``: one file
    per load-subset of the workers (C(workers, load) files, as equal as np.array_split
    makes them), each a flat array of bytes."""
    count = math.comb(workers, load)
    return [np.ascontiguousarray(f).reshape(-1) for f in np.array_split(data, count)]


# -- the output --------------------------------------------------------------------------------

def table(runs: list) -> list:
    """The lines of the phase table (a row per run, as the report writes them), the bytes
    each worker sent, and with both variants the speedup of Coded TeraSort."""
    head = "".join(f"{name:>{max(len(name), 6) + 2}}" for _, name in PHASES)
    lines = [f"  {'variant':<16}{head}  sent MB  sorted"]
    for run in runs:
        cells = "".join(f"{run['phases'][key]:>{max(len(name), 6) + 2}.3f}"
                        for key, name in PHASES)
        lines.append(f"  {LABELS[run['variant']]:<16}{cells}{sum(run['sent']) / 1e6:>9.3f}"
                     f"  {'yes' if run['sorted'] else 'NO'}")
    lines += ["  (seconds at the slowest worker; total: the whole job, as the master saw it; "
              "sent MB:", "   the shuffle's payload bytes, each multicast counted once)",
              "  bytes sent in the shuffle, per worker:"]
    lines += [f"    {LABELS[run['variant']]:<16}{run['sent']}" for run in runs]
    if any(run.get("resent") for run in runs):
        lines.append("  lost on the peer links (segments, polls, acknowledgements) / segments "
                     "sent again, per worker:")
        lines += [f"    {LABELS[run['variant']]:<16}{[sum(d) for d in run['dropped']]} / "
                  f"{run['resent']}" for run in runs]
    by = {run["variant"]: run for run in runs}
    if set(by) == set(LABELS):
        plain, coded = by["terasort"], by["coded"]
        lines += [f"  Coded TeraSort vs TeraSort: "
                  f"{_ratio(plain['phases']['total'], coded['phases']['total'])} in total, "
                  f"{_ratio(plain['phases']['shuffle'], coded['phases']['shuffle'])} in the "
                  f"shuffle, {_ratio(sum(plain['sent']), sum(coded['sent']))} fewer bytes "
                  f"sent", "  (TeraSort's / Coded TeraSort's: above 1x is faster)"]
    return lines


def _ratio(before: float, after: float) -> str:
    return f"{before / after:.2f}x" if after > 0 else "-"


def _describe_variant(variant: str, workers: int, load: int) -> str:
    if variant == "terasort":
        return f"TeraSort: every file mapped once ({workers} files), the shuffle uncoded"
    return (f"Coded TeraSort: every file mapped on {load} worker{'s' * (load > 1)} "
            f"({math.comb(workers, load)} files), coded packets to groups of {load + 1}")


def _describe_network(args: argparse.Namespace) -> str:
    rate = "unthrottled" if args.link_rate is None else \
        f"{args.link_rate * 8 / 1e6:g} Mbit/s"
    delay = f", {args.link_delay * 1000:g} ms a message" if args.link_delay else ""
    loss = "" if not args.loss else f", each link losing {args.loss:.0%}" + \
        (f" in runs of {args.burst:g}" if args.burst else "")
    return f"network {args.network} ({SHORT[args.network]}), {rate}{delay}{loss}"


# -- running -----------------------------------------------------------------------------------

def main(args: argparse.Namespace) -> int:
    """Run the job(s) as the (parsed) arguments say: 0 when every output is the input
    sorted, else 1 (with an error line); ValueError for bad arguments, before anything is
    printed and before a worker starts."""
    from ffcode.runtime import Cluster, run_mapreduce
    settle(args)
    if args.report:
        output.check_writable(args.report)
    variants = ([("terasort", 1, False)] if args.compare else []) + \
        [("coded", args.r, True)]
    start = time.perf_counter()
    with Cluster(args.workers) as cluster:
        data = terasort.records(args.records, seed=args.seed, skew=args.skew)
        bounds = terasort.boundaries(data, args.workers, seed=args.seed + 1)
        print(f"{PROG}: {args.records} records of 100 bytes "
              f"({args.records * 100 / 1e6:g} MB), "
              + (f"skewed keys (--skew {args.skew:g})" if args.skew else "uniform keys")
              + f", on {args.workers} local workers")
        print(f"  {args.workers} key ranges from a sample of "
              f"{min(terasort.SAMPLE, args.records)} keys, each sorted by one worker")
        print(f"  {_describe_network(args)}")
        for variant, load, _ in variants:
            print(f"  {_describe_variant(variant, args.workers, load)}")
        cluster.wait()
        print(f"  {args.workers} workers ready in {time.perf_counter() - start:.2f} s",
              flush=True)
        runs = []
        for variant, load, coded in variants:
            outputs, report = run_mapreduce(
                cluster, split(data, args.workers, load), terasort.mapper, terasort.sort,
                load=load, coded=coded, args=[bounds.view(np.uint8).reshape(-1)],
                network=args.network, link_rate=args.link_rate,
                link_delay=args.link_delay, link_loss=args.loss or None,
                link_burst=args.burst if args.loss else None, seed=args.seed,
                timeout=args.timeout)
            runs.append({"variant": variant, "r": load,
                         "phases": dict(report.phases, total=report.total),
                         "sent": list(report.sent), "copies": list(report.copies),
                         "dropped": report.dropped, "resent": report.resent,
                         "sorted": terasort.check(outputs, data)})
    for line in table(runs):
        print(line)
    if args.report:
        output.write_json(args.report, _report(args, runs))
        print(f"  report written to {args.report}")
    wrong = [LABELS[run["variant"]] for run in runs if not run["sorted"]]
    if wrong:
        print(f"{PROG}: error: the output of {' and of '.join(wrong)} is not the input "
              f"sorted", file=sys.stderr)
        return 1
    print("terasort passed")
    return 0


def _report(args: argparse.Namespace, runs: list) -> dict:
    from ffcode.runtime import utc_now
    return {"ffcode": __version__, "date": utc_now(), "records": args.records,
            "workers": args.workers, "r": args.r, "network": args.network,
            "link_rate": args.link_rate, "link_delay": args.link_delay,
            "loss": args.loss, "burst": args.burst, "skew": args.skew,
            "seed": args.seed,
            "runs": runs}
