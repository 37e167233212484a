"""TeraSort and Coded TeraSort on ffcode's runtime (K local worker processes that shuffle
among themselves, ffcode.runtime.run_mapreduce) against each other on emulated 100 Mbit/s
networks, and against the public C++/OpenMPI implementation
(AvestimehrResearchGroup/Coded-TeraSort, built from a clone given with ``--peer-src``:
see terasort_peer.py; skipped with a line saying why when it or OpenMPI is missing),
unthrottled, on the same records, for each K and r.

Every run's output is checked sorted and a permutation of the input. Phases are the
slowest worker's. ffcode's total is the master's wall time from placing the files to
holding every output, and each phase is shown in wall and in CPU seconds (a worker
process's, zmq's threads included). The peer times its phases in CPU seconds (clock()),
its workers taking turns to shuffle; its total is their sum, and ffcode's is compared in
the same currency (the sum of its phases' CPU seconds): with K workers on fewer cores,
wall times count the waits for a core, which CPU seconds do not. TeraSort maps each file
once (r = 1), Coded TeraSort at load r. The contenders alternate, round by round; medians
are shown.

The emulated networks (runtime.mapreduce): "links" gives every ordered pair of workers
its own capped link (a packet for r receivers sent to each), "turns" one shared medium
that the workers take turns on (a multicast reaching all its receivers at once: the
setting of the coded-shuffling papers and the peer's schedule). ffcode.mapreduce.model
prices both; its shuffle prediction is shown beside the measured one.

The comparisons above run without the shuffle's check (verify=False: the peer has
none). Its cost is measured apart: Coded TeraSort with verify on and off, alternating,
the master's seconds in the check (report.verify: the seed sent, every worker's
fingerprints computed and judged) as a fraction of the shuffle without it, unthrottled
and on each network at the link rate.

Lossy peer links (``--only lossy``, or with every section): TeraSort and Coded TeraSort
alternating on each network at the link rate, the links losing 0, 0.1, 0.2 and 0.3 of
what they carry (64 KiB segments, polls and acknowledgements; independently), and 0.2 in
runs of 3; each lost segment found and sent again (ARQ: a shuffle message is needed
whole). Shown: the totals, the shuffle against the lossless one / (1 - p), and the bytes
put on the links against the least a lossy link allows, the lossless job's / (1 - p).

Targets: with 100 Mbit/s links, Coded TeraSort at least 1.5x faster than TeraSort on
ffcode (total time), on each network, for each K and r > 1, and taking turns on a medium
losing 0.2; unthrottled, ffcode's Coded TeraSort total at most 1.5x the peer's; the check
at most 10 % of the shuffle at the link rate, on each network, for each K and r > 1; on
lossy links the bytes put on them at most 1.1x the least.

    python bench/bench_shuffle.py --peer-src ~/src/Coded-TeraSort    # about ten minutes
    python bench/bench_shuffle.py --only verify --records 2000 --workers 3 --loads 2
    python bench/bench_shuffle.py --only lossy --workers 6 --loads 2,3 --rounds 2
"""
import argparse
import statistics
import sys
import time

import numpy as np

import benchlib
import terasort_peer

import ffcode
from ffcode.mapreduce import Placement
from ffcode.mapreduce import terasort
from ffcode.mapreduce.model import predict
from ffcode.runtime import run_mapreduce

PHASES = ("map", "encode", "shuffle", "decode", "reduce")
PEER_NAMES = {"map": "map", "encode": "encode", "pack": "encode", "decode": "decode",
              "unpack": "decode", "reduce": "reduce", "shuffle": "shuffle"}


def ffcode_run(cluster, data, bounds, load, coded, network="links", rate=None,
               verify=False, loss=None, burst=None):
    """(phases with total, the check's seconds and the bytes put on the links, the
    outputs, bytes sent) of one job on the cluster."""
    files = [f.reshape(-1) for f in np.array_split(data, len(Placement(cluster.n_workers,
                                                                        load).subsets))]
    outputs, report = run_mapreduce(cluster, files, terasort.mapper, terasort.sort,
                                    load=load, coded=coded, args=[bounds], network=network,
                                    link_rate=rate, timeout=600, verify=verify,
                                    link_loss=loss, link_burst=burst)
    if verify and report.verified is not True:
        raise SystemExit(f"ABORT: the shuffle's check did not pass: {report.checks}")
    cpu = dict(report.cpu, total=sum(report.cpu.values()))
    return (dict(report.phases, total=report.total, cpu=cpu, verify=report.verify,
                 copies=sum(report.copies)), outputs, sum(report.sent))


def peer_run(home, K, coded):
    phases, outputs = terasort_peer.run(home, K, coded)
    out = {phase: 0.0 for phase in PHASES}
    for name, seconds in phases.items():
        if name in PEER_NAMES:
            out[PEER_NAMES[name]] += seconds
    out["total"] = sum(out.values())
    return out, outputs, None


def alternate(contenders, rounds, data, label):
    """Each contender's runs (phases), the contenders alternating round by round."""
    runs = {name: [] for name in contenders}
    for rnd in range(rounds):
        for name in list(contenders)[::1 if rnd % 2 == 0 else -1]:
            phases, outputs, sent = contenders[name]()
            if not terasort.check(outputs, data):
                raise SystemExit(f"ABORT: {name} {label} did not sort")
            runs[name].append(dict(phases, sent=sent))
    return runs


def median(runs, key):
    return statistics.median(run[key] for run in runs)


def table(title, runs):
    print(f"\n  {title}: seconds, the slowest worker's (median over rounds)")
    print(f"  {'':<24}" + "".join(f"{p:>9}" for p in (*PHASES, "total")) + "  sent MB")
    for name, values in runs.items():
        if not values:
            continue
        sent = values[0]["sent"]
        print(f"  {name:<24}" + "".join(f"{median(values, p):>9.3f}"
                                        for p in (*PHASES, "total")) +
              (f"  {sent / 1e6:7.1f}" if sent is not None else "        -"))
        if "cpu" in values[0]:
            cpu = [v["cpu"] for v in values]
            print(f"  {'  CPU seconds':<24}" + "".join(f"{median(cpu, p):>9.3f}"
                                                       for p in (*PHASES, "total")))


def unthrottled(cluster, K, loads, data, bounds, src, rounds, targets):
    """ffcode against the peer, no cap on any link."""
    for r in loads:
        home = None
        if src is not None:
            try:
                home = terasort_peer.build(src, K, r)
                terasort_peer.place(home, data.tobytes())
            except terasort_peer.Unavailable as e:
                print(f"\npeer skipped at K = {K}, r = {r}: {e}")
        contenders = {"ffcode TeraSort": lambda: ffcode_run(cluster, data, bounds, 1, False)}
        if r > 1:
            contenders[f"ffcode Coded (r={r})"] = \
                lambda: ffcode_run(cluster, data, bounds, r, True)
        if home is not None:
            contenders["peer TeraSort"] = lambda: peer_run(home, K, False)
            if r > 1:
                contenders[f"peer Coded (r={r})"] = lambda: peer_run(home, K, True)
        runs = alternate(contenders, rounds, data, f"K = {K}, r = {r}")
        table(f"K = {K}, r = {r}, unthrottled", runs)
        if r == 1:
            continue
        ours = runs[f"ffcode Coded (r={r})"]
        theirs = runs.get(f"peer Coded (r={r})")
        label = f"Coded TeraSort total, ffcode / peer, unthrottled, K = {K}, r = {r}"
        if theirs:
            cpu = [x["cpu"] for x in ours]
            targets.append(benchlib.at_most(label + " (CPU seconds, as the peer counts)",
                                            median(cpu, "total") / median(theirs, "total"),
                                            1.5, "×"))
            compute = [p for p in PHASES if p != "shuffle"]
            ratio = statistics.median(sum(x[p] for p in compute) for x in cpu) / \
                statistics.median(sum(x[p] for p in compute) for x in theirs)
            print(f"  compute phases (map, encode, decode, reduce) in CPU seconds, "
                  f"ffcode / peer: {ratio:.2f}x; ffcode's wall total / the peer's: "
                  f"{median(ours, 'total') / median(theirs, 'total'):.2f}x")
        else:
            targets.append(("n/a", f"n/a   {label}: no peer run"))


def throttled(cluster, K, loads, data, bounds, rate, rounds, targets):
    """TeraSort against Coded TeraSort on ffcode, every link (or the medium) capped."""
    values = data.size * 1.0
    for network in ("links", "turns"):
        for r in loads:
            if r == 1:
                continue
            contenders = {
                "ffcode TeraSort": lambda: ffcode_run(cluster, data, bounds, 1, False,
                                                      network, rate),
                f"ffcode Coded (r={r})": lambda: ffcode_run(cluster, data, bounds, r, True,
                                                            network, rate)}
            runs = alternate(contenders, rounds, data, f"{network}, K = {K}, r = {r}")
            table(f"K = {K}, r = {r}, {network} at {rate * 8 / 1e6:g} Mbit/s", runs)
            plain, coded = runs["ffcode TeraSort"], runs[f"ffcode Coded (r={r})"]
            for name, load, is_coded, measured in (("TeraSort", 1, False, plain),
                                                   ("Coded", r, True, coded)):
                model = predict(K, load, values, link_rate=rate, network=network,
                                coded=is_coded).shuffle
                print(f"  model's shuffle, {name}: {model:.3f} s (measured "
                      f"{median(measured, 'shuffle'):.3f} s)")
            targets.append(benchlib.check(
                f"TeraSort / Coded TeraSort on ffcode, {network} at "
                f"{rate * 8 / 1e6:g} Mbit/s, K = {K}, r = {r}",
                median(plain, "total") / median(coded, "total"), 1.5))


def verification(cluster, K, loads, data, bounds, rate, rounds, targets):
    """The shuffle's check: Coded TeraSort with verify on and off, unthrottled and on each
    network at the link rate; its seconds as a fraction of the shuffle without it."""
    for network, cap in (("links", None), ("links", rate), ("turns", rate)):
        where = "unthrottled" if cap is None else f"{network} at {cap * 8 / 1e6:g} Mbit/s"
        for r in loads:
            if r == 1:
                continue
            contenders = {
                f"Coded (r={r}), verify off": lambda: ffcode_run(
                    cluster, data, bounds, r, True, network, cap, verify=False),
                f"Coded (r={r}), verify on": lambda: ffcode_run(
                    cluster, data, bounds, r, True, network, cap, verify=True)}
            runs = alternate(contenders, rounds, data, f"{where}, K = {K}, r = {r}")
            table(f"K = {K}, r = {r}, {where}, the shuffle's check", runs)
            off, on = runs[f"Coded (r={r}), verify off"], runs[f"Coded (r={r}), verify on"]
            fraction = median(on, "verify") / median(off, "shuffle")
            print(f"  the check: {median(on, 'verify'):.3f} s, {100 * fraction:.1f} % of the "
                  f"shuffle ({median(off, 'shuffle'):.3f} s); total {median(off, 'total'):.3f}"
                  f" s off, {median(on, 'total'):.3f} s on")
            label = f"the shuffle's check / the shuffle, {where}, K = {K}, r = {r}"
            if cap is None:
                print(f"  ({label}: {100 * fraction:.1f} %, no target unthrottled)")
            else:
                targets.append(benchlib.at_most(label, 100 * fraction, 10, " %"))


LOSSES = ((0.0, None), (0.1, None), (0.2, None), (0.3, None), (0.2, 3.0))


def lossy(cluster, K, loads, data, bounds, rate, rounds, targets):
    """TeraSort against Coded TeraSort on lossy links at the link rate, on each network:
    their totals, and the bytes each put on the links against the least (the lossless
    job's / (1 - p))."""
    for network in ("turns", "links"):
        for r in loads:
            if r > 1:
                lossy_network(cluster, K, r, network, data, bounds, rate, rounds, targets)


def lossy_network(cluster, K, r, network, data, bounds, rate, rounds, targets):
    least = {}
    for loss, burst in LOSSES:
        where = f"{network} at {rate * 8 / 1e6:g} Mbit/s losing {loss:g}" + \
            (f" in runs of {burst:g}" if burst else "")
        contenders = {
            "ffcode TeraSort": lambda: ffcode_run(cluster, data, bounds, 1, False, network,
                                                  rate, loss=loss or None, burst=burst),
            f"ffcode Coded (r={r})": lambda: ffcode_run(cluster, data, bounds, r, True,
                                                        network, rate, loss=loss or None,
                                                        burst=burst)}
        runs = alternate(contenders, rounds, data, f"{where}, K = {K}, r = {r}")
        table(f"K = {K}, r = {r}, {where}", runs)
        for name, values in runs.items():
            copies = median(values, "copies")
            if not loss:
                least[name] = (copies, median(values, "shuffle"))
                continue
            ratio = copies / (least[name][0] / (1 - loss))
            print(f"  {name}: {copies / 1e6:.1f} MB on the links, {ratio:.3f}x the least "
                  f"({least[name][0] / 1e6:.1f} MB / (1 - {loss:g})); shuffle "
                  f"{median(values, 'shuffle') / (least[name][1] / (1 - loss)):.2f}x the "
                  f"lossless one / (1 - {loss:g})")
            targets.append(benchlib.at_most(
                f"bytes on the links / the least, {name}, {where}, K = {K}, r = {r}",
                ratio, 1.1, "×"))
        plain, coded = runs["ffcode TeraSort"], runs[f"ffcode Coded (r={r})"]
        speedup = median(plain, "total") / median(coded, "total")
        label = f"TeraSort / Coded TeraSort on ffcode, {where}, K = {K}, r = {r}"
        if network == "turns" and loss == 0.2 and burst is None:
            targets.append(benchlib.check(label, speedup, 1.5))
        else:
            print(f"  ({label}: {speedup:.2f}x)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=benchlib.integer_expression, default=10**6,
                        help="100-byte records to sort (default 10**6)")
    parser.add_argument("--workers", type=benchlib.int_list, default=[6, 8],
                        help="values of K (default 6,8)")
    parser.add_argument("--loads", type=benchlib.int_list, default=[1, 2, 3],
                        help="values of r (default 1,2,3)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--link-rate", type=float, default=100.0,
                        help="Mbit/s of a link (default 100)")
    parser.add_argument("--only", choices=["all", "verify", "lossy"], default="all",
                        help="run every section (default), or only the check's cost, or "
                             "only lossy links")
    parser.add_argument("--peer-src", metavar="DIR",
                        help="a clone of github.com/AvestimehrResearchGroup/Coded-TeraSort")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    benchlib.print_machine()
    try:
        src = terasort_peer.check(args.peer_src)
    except terasort_peer.Unavailable as e:
        src = None
        print(f"\npeer skipped: {e}")
    data = terasort.records(args.records, seed=1)
    rate = args.link_rate * 1e6 / 8
    targets: list = []
    for K in args.workers:
        bounds = terasort.boundaries(data, K, seed=2).view(np.uint8).reshape(-1)
        loads = [r for r in args.loads if r < K]
        with ffcode.Cluster(K) as cluster:
            ffcode_run(cluster, data[:1000], bounds, 1, False)     # the workers' imports
            if args.only == "all":
                unthrottled(cluster, K, loads, data, bounds, src, args.rounds, targets)
                throttled(cluster, K, loads, data, bounds, rate, args.rounds, targets)
            if args.only in ("all", "verify"):
                verification(cluster, K, loads, data, bounds, rate, args.rounds, targets)
            if args.only in ("all", "lossy"):
                lossy(cluster, K, loads, data, bounds, rate, args.rounds, targets)
        big = predict(100, 5, 1e12, link_rate=rate, network="turns")
        plain = predict(100, 1, 1e12, link_rate=rate, network="turns", coded=False)
    print(f"\n  model, K = 100, 1 TB, turns at {args.link_rate:g} Mbit/s: shuffle TeraSort "
          f"{plain.shuffle:.0f} s, Coded r = 5 {big.shuffle:.0f} s "
          f"({plain.shuffle / big.shuffle:.1f}x)")
    print()
    benchlib.print_targets(targets, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
