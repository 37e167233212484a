"""TeraSort and Coded TeraSort: ffcode's phases against the public C++/OpenMPI
implementation's (AvestimehrResearchGroup/Coded-TeraSort, built from a clone given with
``--peer-src``: see terasort_peer.py; skipped with a line saying why when it or OpenMPI is
missing), on the same records, for each K and r.

ffcode's phases are its kernels' work per worker, in one process: each worker maps its
batches (ffcode.mapreduce.terasort.partition), encodes its packets
(ffcode.mapreduce.outgoing), decodes what it receives (incoming) and sorts its range;
each phase's time is the slowest worker's, as the peer reports its phases (it times them
in CPU seconds, by clock()). The outputs of both are checked sorted and a permutation of
the input. The shuffle itself is priced by ffcode.mapreduce.model at --link-rate on a
shared medium ("turns", the peer's schedule: one sender at a time) and on separate links,
beside the peer's own shuffle time (its sum over the workers' turns, unthrottled here).

Targets: ffcode's compute phases (map, encode, decode, reduce) at most 1.5x the peer's,
for Coded TeraSort at each K and r; with the shuffle: n/a until measured on the runtime.

    python bench/bench_shuffle.py --peer-src ~/src/Coded-TeraSort    # a few minutes
"""
import argparse
import statistics
import sys
import time

import numpy as np

import benchlib
import terasort_peer

from ffcode.mapreduce import Bytes, Placement, incoming, outgoing
from ffcode.mapreduce import terasort
from ffcode.mapreduce.model import predict

PHASES = ("map", "encode", "decode", "reduce")
PEER_NAMES = {"map": "map", "encode": "encode", "pack": "encode", "decode": "decode",
              "unpack": "decode", "reduce": "reduce", "shuffle": "shuffle"}


def ffcode_phases(placement, data, bounds, coded):
    """Each phase's time for the slowest worker, and the outputs, as ffcode's kernels run
    one worker after another."""
    K = placement.workers
    files = np.array_split(data, placement.files)       # as the peer's Splitter cuts them
    held, times = [], {phase: [0.0] * K for phase in PHASES}
    for w in range(K):
        t0 = time.perf_counter()
        mine = {}
        for b in placement.mapped_by(w):
            parts = [terasort.partition(files[n], bounds) for n in placement.batch_files(b)]
            for q in range(K):
                mine[(q, b)] = b"".join(part[q] for part in parts)
        times["map"][w] = time.perf_counter() - t0
        held.append(mine)
    messages = []
    for w in range(K):
        t0 = time.perf_counter()
        messages += outgoing(placement, w, held[w], Bytes(), coded)
        times["encode"][w] = time.perf_counter() - t0
    outputs = []
    for w in range(K):
        t0 = time.perf_counter()
        got = incoming(placement, w, [m for m in messages if w in m.receivers], held[w],
                       Bytes(), coded)
        t1 = time.perf_counter()
        outputs.append(terasort.sort(b"".join([held[w][(w, b)] for b in placement.mapped_by(w)]
                                              + list(got.values()))))
        times["decode"][w], times["reduce"][w] = t1 - t0, time.perf_counter() - t1
    return {phase: max(values) for phase, values in times.items()}, outputs


def peer_phases(home, K, coded):
    phases, outputs = terasort_peer.run(home, K, coded)
    out = {phase: 0.0 for phase in (*PHASES, "shuffle")}
    for name, seconds in phases.items():
        if name in PEER_NAMES:
            out[PEER_NAMES[name]] += seconds
    return out, outputs


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
                        help="Mbit/s of a link for the model (default 100)")
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
    bounds_cache = {}
    targets = []
    link = args.link_rate * 1e6 / 8
    for K in args.workers:
        bounds_cache[K] = terasort.boundaries(data, K, seed=2)
        for r in args.loads:
            if r >= K:
                continue
            placement = Placement(K, r)
            home = None
            if src is not None:
                try:
                    home = terasort_peer.build(src, K, r)
                    terasort_peer.place(home, data.tobytes())
                except terasort_peer.Unavailable as e:
                    print(f"\npeer skipped at K = {K}, r = {r}: {e}")
            contenders = (("ffcode TeraSort", False, False), ("ffcode Coded", False, True),
                          ("peer TeraSort", True, False), ("peer Coded", True, True))
            runs = {name: [] for name, _, _ in contenders}
            for rnd in range(args.rounds):
                for name, peer, coded in contenders[::1 if rnd % 2 == 0 else -1]:
                    if not peer:            # TeraSort maps each file once (r = 1)
                        phases, outputs = ffcode_phases(placement if coded else
                                                        Placement(K, 1), data,
                                                        bounds_cache[K], coded)
                    elif home is not None:
                        phases, outputs = peer_phases(home, K, coded)
                    else:
                        continue
                    if not terasort.check(outputs, data):
                        raise SystemExit(f"ABORT: {name} at K = {K}, r = {r} did not sort")
                    runs[name].append(phases)
            report(K, r, runs, link, args.records)
            ours, theirs = runs["ffcode Coded"], runs["peer Coded"]
            ratio = None
            if ours and theirs:
                ratio = median_sum(ours) / median_sum(theirs)
            targets.append(benchlib.at_most(
                f"compute phases, ffcode / peer, Coded TeraSort K = {K}, r = {r}",
                ratio, 1.5, "×") if ratio is not None else
                ("n/a", f"n/a   compute phases, ffcode / peer, K = {K}, r = {r}: no peer run"))
    targets.append(("n/a", "n/a   Coded TeraSort / TeraSort on ffcode with 100 Mbit/s links "
                           "(≥ 1.5×), and ffcode's total against the peer's (≤ 1.5×): the "
                           "runtime's shuffle is not measured here"))
    print()
    benchlib.print_targets(targets, start)
    return 0


def median_sum(runs):
    return statistics.median(sum(phases[p] for p in PHASES) for phases in runs)


def report(K, r, runs, link, records):
    print(f"\n  K = {K}, r = {r}: seconds, the slowest worker's (median over rounds)")
    print(f"  {'':<16}" + "".join(f"{p:>10}" for p in (*PHASES, "shuffle")))
    for name, values in runs.items():
        if not values:
            continue
        row = [statistics.median(v.get(p, 0.0) for v in values) for p in (*PHASES, "shuffle")]
        shown = [f"{x:>10.3f}" for x in row[:4]] + \
            [f"{row[4]:>10.3f}" if name.startswith("peer") else f"{'-':>10}"]
        print(f"  {name:<16}" + "".join(shown))
    for network in ("turns", "links"):
        plain = predict(K, 1, records * 100.0, link_rate=link, network=network, coded=False)
        coded = predict(K, r, records * 100.0, link_rate=link, network=network)
        print(f"  model, {network} at {link * 8 / 1e6:g} Mbit/s: shuffle TeraSort "
              f"{plain.shuffle:.2f} s, coded {coded.shuffle:.2f} s "
              f"({plain.shuffle / coded.shuffle:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
