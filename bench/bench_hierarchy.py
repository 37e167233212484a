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

    python bench/bench_hierarchy.py                 # a few seconds
    python bench/bench_hierarchy.py --plot plots    # and plots/hierarchy.png
"""
import argparse
import os
import sys
import time

import benchlib

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
    path = os.path.join(out_dir, "hierarchy.png")
    figure.savefig(path, dpi=120)
    plt.close(figure)
    print(f"wrote {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", metavar="DIR", help="write DIR/hierarchy.png")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    benchlib.print_machine()
    cost = measure_decode_cost()
    print(f"\nsimulated hierarchies, N = {N}; decoding {cost * 1e9:.2f} ns per element "
          f"operation (measured)")
    runs = sweep_group_size(N, SIZES, decode_cost=cost, **SETUP)
    print_sweep("decoding priced as measured", runs)
    print_sweep("decoding free", sweep_group_size(N, SIZES, decode_cost=0.0, **SETUP))
    flat, tree = runs[HEADLINE]
    if args.plot:
        plot(runs, args.plot)
    print()
    benchlib.print_targets([
        benchlib.at_most("job time, hierarchical / flat (25 groups of 40)",
                         tree.seconds / flat.seconds, 0.6, "×"),
        benchlib.check("master decode work, flat / hierarchical (25 groups of 40)",
                       flat.master_work / tree.master_work, 10)], start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
