"""Hierarchies of relays against flat runs, simulated (``ffcode.sim_tree``): the simulator's
topologies only; relays in the runtime are not measured here.

N = 1000 workers; for every group size (10 to 100 workers a group), groups of that size
with an outer code needing 80 % of the groups and an inner code needing 80 % of a group's
workers (flat R = 640 throughout), m = m_o = 4 pieces of 16 KiB, 0.1 s + Exp(20 ms) a piece
and every 20th worker 5x slow; 10 Gb/s links inside a group and into the relays and the
master, uplinks 10x slower (1 Gb/s), 50 us and 1 ms latency; decoding priced by ffcode's
Decoder measured where the bench runs (``measure_decode_cost``). The flat run has the same
workers, every packet over its group's shared uplink. Targets, at 25 groups of 40: the
hierarchy's job time at most 0.6x the flat run's, and its master's decode work at least
10x less. The same sweep with decoding free shows what the relays' store-and-forward costs.

Then the master's decoding measured on ffcode's kernels, in one process: N = 100 workers
of HierarchicalCode(MDS(8 of 10 groups), MDS(8 of 10)), m = 4 (256 unknowns flat), one
Decoder over the packets of 8 workers in each of 8 groups, against each group's
GroupDecoder and the master's outer Decoder over the relays' packets (32 unknowns),
alternating, beside what the simulator's decode model says of the same two decodings.

    python bench/bench_hierarchy.py                 # a few seconds
    python bench/bench_hierarchy.py --plot bench/plots    # and its sim_n1000_hierarchy.png
"""
import argparse
import os
import sys
import time

import statistics

import benchlib

from ffcode import GF, MDS, Decoder, HierarchicalCode
from ffcode.decoding.relay import GroupDecoder
from ffcode.sim import ShiftedExponential
from ffcode.sim_tree import measure_decode_cost, sweep_group_size

N, SIZES, HEADLINE = 1000, (10, 20, 25, 40, 50, 100), 40
SETUP = dict(pieces=4, piece_bytes=16384, piece_time=ShiftedExponential(0.1, 0.02),
             slowdown={w: 5 for w in range(0, N, 20)}, inner_rate=1.25e9,
             inner_latency=5e-5, uplink_rate=1.25e8, uplink_latency=1e-3, relay_rate=1.25e9,
             master_rate=1.25e9)


def print_sweep(title, runs):
    print(f"\n  {title}\n  {'group':>6}{'groups':>7}{'flat s':>10}{'tree s':>9}"
          f"{'tree/flat':>10}{'flat work':>12}{'tree work':>12}{'flat/tree':>10}")
    for size, (flat, tree) in runs.items():
        print(f"  {size:>6}{N // size:>7}{flat.seconds:>10.3f}{tree.seconds:>9.3f}"
              f"{tree.seconds / flat.seconds:>10.2f}{flat.master_work:>12.3g}"
              f"{tree.master_work:>12.3g}{flat.master_work / tree.master_work:>9.1f}x")


def plot(runs, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    os.makedirs(out_dir, exist_ok=True)
    sizes = list(runs)
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for axis, value, label in ((left, "seconds", "job time (s)"),
                               (right, "master_work", "master decode work (element ops)")):
        axis.plot(sizes, [getattr(runs[s][0], value) for s in sizes], "o-", label="flat")
        axis.plot(sizes, [getattr(runs[s][1], value) for s in sizes], "s-",
                  label="hierarchical")
        axis.set(xlabel="workers per group", ylabel=label, yscale="log")
        axis.legend()
    figure.suptitle(f"N = {N}, uplinks 10x slower than links inside a group")
    figure.tight_layout()
    path = os.path.join(out_dir, f"sim_n{N}_hierarchy.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def measured_decode(rounds, cost, groups=10, size=10, R_o=8, R_i=8, m=4, width=64):
    """Seconds of the master's decoding, measured on ffcode's kernels (no processes): flat,
    one Decoder over the m·R_o·R_i unknowns of HierarchicalCode(MDS(R_o of groups),
    MDS(R_i of size)) from the packets of R_i workers in each of R_o groups; through
    relays, each relay's GroupDecoder (R_i·m unknowns, all relays together and the
    slowest) and the master's outer Decoder over the relays' m packets each (R_o·m
    unknowns). A is (m·R_o·R_i·8) x width, x a width x width matrix; alternating, min and
    median over ``rounds``."""
    F = GF(2**31 - 1)
    code = HierarchicalCode(MDS(F, R_o, groups), MDS(F, R_i, size))
    A, x = F.random((m * R_o * R_i * 8, width), seed=1), F.random((width, width), seed=2)
    shares = code.encode(A, pieces=m, seed=3)
    chosen = [w for g in range(R_o) for w in code.members(g)[:R_i]]
    packets = {w: list(code.compute_pieces(shares[w], x)) for w in chosen}
    expected = F.matmul(A, x)

    def flat():
        decoder = Decoder(shares, pieces=m)
        for w in chosen:
            for packet in packets[w]:
                decoder.add(packet)
        return decoder.result(), {}

    def relays():
        master, spent = Decoder(shares.outer, pieces=m), {}
        for g in range(R_o):
            t0 = time.perf_counter()
            relay = GroupDecoder(shares, g)
            for w in code.members(g)[:R_i]:
                for packet in packets[w]:
                    relay.add(packet)
            sent = relay.packets(m, seed=g)
            spent[g] = time.perf_counter() - t0
            for packet in sent:
                master.add(packet)
        return master.result(), spent

    out = {"flat": [], "relays, all": [], "relays, slowest": [], "master above relays": []}
    for rnd in range(rounds + 1):                   # round 0 warms up
        for name, way in ((("flat", flat), ("relays", relays)) if rnd % 2 else
                          (("relays", relays), ("flat", flat))):
            t0 = time.perf_counter()
            output, spent = way()
            seconds = time.perf_counter() - t0
            if not (output == expected).all():
                raise SystemExit(f"ABORT: the {name} decoding differs from F.matmul")
            if rnd and name == "flat":
                out["flat"].append(seconds)
            elif rnd:
                out["relays, all"].append(sum(spent.values()))
                out["relays, slowest"].append(max(spent.values()))
                out["master above relays"].append(seconds - sum(spent.values()))
    rows = A.shape[0] // (R_o * R_i * m)            # a worker's piece: rows x width
    modeled = cost(m * R_o * R_i, rows * width) / cost(m * R_o, rows * R_i * width)
    return out, modeled, code


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", metavar="DIR", help=f"write DIR/sim_n{N}_hierarchy.png")
    parser.add_argument("--rounds", type=int, default=15,
                        help="rounds of the measured decoding (default 15)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    benchlib.print_machine()
    cost = measure_decode_cost()
    print(f"\nsimulated hierarchies, N = {N}; decoding measured: "
          f"{cost.per_operation * 1e9:.2f} ns per element operation, "
          f"{cost.per_packet * 1e6:.1f} us per packet")
    runs = sweep_group_size(N, SIZES, decode_cost=cost, **SETUP)
    print_sweep("decoding priced as measured", runs)
    print_sweep("decoding free", sweep_group_size(N, SIZES, decode_cost=0.0, **SETUP))
    flat, tree = runs[HEADLINE]
    if args.plot:
        plot(runs, args.plot)
    times, modeled, code = measured_decode(args.rounds, cost)
    print(f"\n  measured decoding, {code!r} ({code.n_workers} workers, "
          f"{4 * code.recovery_threshold} unknowns flat), seconds over {args.rounds} rounds:")
    for name, values in times.items():
        print(f"  {name:<22} min {min(values):.4f}  median {statistics.median(values):.4f}")
    measured = statistics.median(times["flat"]) / statistics.median(times["master above relays"])
    print(f"  master decoding, flat / above relays: {measured:.1f}x measured, {modeled:.1f}x "
          f"by the simulator's measured decode times")
    print()
    benchlib.print_targets([
        benchlib.at_most("job time, hierarchical / flat (25 groups of 40)",
                         tree.seconds / flat.seconds, 0.6, "×"),
        benchlib.check("master decode work, flat / hierarchical (25 groups of 40)",
                       flat.master_work / tree.master_work, 10)], start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
