"""Hierarchies of relays against flat runs: simulated (``ffcode.sim_tree``) at N = 1000, and
measured on the runtime's relays at N = 12.

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

Then the runtime (``measured_runtime``): 12 local workers flat against the same 12 in 3
groups of 4 behind relays (``Cluster(12, groups=3)``), one HierarchicalCode job after
another, alternating. Targets: the master's CPU per job at most 0.5x flat; the job time no
worse than flat by more than twice the flat runs' median deviation; the simulator within
20 % of the relays' measured job time, calibrated without the relays' runs (the workers'
pace and starts from the flat runs, a relay's share shipped at raw pyzmq's ipc rate and
its encoding timed here: ``simulated_runtime``). Beside them an ordinary code, MDS(6 of 12), flat and
forwarded by the same relays: the master reads no more packets than flat (target), from
3 connections instead of 12, and its CPU and job time are printed as ratios.

    python bench/bench_hierarchy.py                 # about a minute
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


def measured_runtime(rounds, width=256):
    """12 local workers flat against the same 12 in 3 groups of 4 behind relays, the same
    job alternating: HierarchicalCode(MDS(2 of 3), MDS(3 of 4)), A 4800 x 1200 times x
    1200 x width, m = 4. Flat, the master encodes and decodes the whole code (compfs, 24
    unknowns); through relays it encodes the outer code alone and decodes it from the
    relays' packets (cfs: each relay decodes its group's inner code in one job, then sends
    4 combinations; 8 unknowns). Beside them, an ordinary code, MDS(6 of 12) in compfs,
    flat and forwarded by the same relays ("flat MDS", "forwarded"). Per job, the master
    process's CPU seconds (its socket thread and the caller's encoding:
    ``time.process_time``) and the wall time; min and median over ``rounds``; and the
    reports, for the simulator's calibration."""
    from ffcode.runtime import Cluster
    F = GF(2**31 - 1)
    code, ordinary = HierarchicalCode(MDS(F, 2, 3), MDS(F, 3, 4)), MDS(F, 6, 12)
    A, x = F.random((4800, 1200), seed=1), F.random((1200, width), seed=2)
    expected = F.matmul(A, x)
    out = {"flat": [], "relays": [], "flat MDS": [], "forwarded": []}
    with Cluster(12) as flat, Cluster(12, groups=3) as tree:
        flat.wait()
        tree.wait()
        ways = (("flat", flat, code, "compfs"), ("relays", tree, code, "cfs"),
                ("flat MDS", flat, ordinary, "compfs"), ("forwarded", tree, ordinary, "compfs"))
        for rnd in range(rounds + 1):               # round 0 warms up
            for name, cluster, job, scheme in (ways if rnd % 2 else ways[::-1]):
                t0, c0 = time.perf_counter(), time.process_time()
                y, report = cluster.run(job, A, x, scheme=scheme, timeout=300)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                if not (y == expected).all():
                    raise SystemExit(f"ABORT: the {name} output differs from F.matmul")
                if rnd:
                    out[name].append((wall, cpu, report))
    return out, code, A.shape[0] // 24 * width * 4


def simulated_runtime(runs, piece_bytes, cost):
    """The simulator's job times for the same two runs, calibrated without the relays'
    runs: every worker's piece time the median over the flat runs of its pace (time between
    its first and last packets received over the pieces between them: two cores shared by
    12 workers included); a worker's start, its share shipped after those before it, at
    the cost per worker that fits the flat runs' starts (a worker's first packet received
    less one piece: ``start_cost``), for the flat master's workers and each relay's; a
    relay's outer share and x shipped at the rate of raw pyzmq over ipc, measured here, and
    its encoding of its group's shares timed here on the kernels; links free otherwise,
    and decoding priced by ``cost``. Returns (the pace, the costs, flat, hierarchical)."""
    from bench_runtime import raw_ingest
    from ffcode.sim_tree import Tree, simulate_flat, simulate_tree
    per_piece = statistics.median(
        (w.packets[-1]["received"] - w.packets[0]["received"]) / (len(w.packets) - 1)
        for _, _, report in runs["flat"] for w in report.workers if len(w.packets) > 1)
    start = statistics.median(start_cost(report, per_piece) for _, _, report in runs["flat"])
    rate = raw_ingest(1, 20, 4 << 20) * 1e9            # bytes a second
    F = GF(2**31 - 1)
    outer_share, x_bytes = F.random((2400, 1200), seed=7), 1200 * 256 * 4
    inner = MDS(F, 3, 4)
    encode = []
    for _ in range(3):
        t0 = time.perf_counter()
        inner.encode(outer_share, pieces=4, seed=1)
        encode.append(time.perf_counter() - t0)
    costs = {"share_cost": start, "outer_share_cost": (outer_share.nbytes + x_bytes) / rate,
             "inner_share_cost": start + statistics.median(encode) / 4}
    tree = Tree(groups=[4, 4, 4], outer_threshold=2, inner_threshold=3, pieces=4,
                piece_time=ShiftedExponential(per_piece, 0.0), piece_bytes=piece_bytes,
                decode_cost=cost, **costs)
    return per_piece, costs, simulate_flat(tree).seconds, simulate_tree(tree).seconds


def start_cost(report, per_piece):
    """The seconds per worker that best explain (least squares) a flat job's starts, its
    workers sent their tasks in order: worker i starts (i + 1) times it, its first packet
    arriving one piece after its start."""
    points = [(i + 1, w.packets[0]["received"] - per_piece)
              for i, w in enumerate(report.workers) if w.packets]
    return max(0.0, sum(k * t for k, t in points) / sum(k * k for k, _ in points))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", metavar="DIR", help=f"write DIR/sim_n{N}_hierarchy.png")
    parser.add_argument("--rounds", type=int, default=15,
                        help="rounds of the measured decoding (default 15)")
    parser.add_argument("--rounds-runtime", type=int, default=6,
                        help="jobs of each kind on the local workers (default 6)")
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
    runs, _, piece_bytes = measured_runtime(args.rounds_runtime)
    print(f"\n  the runtime: 12 local workers flat and in 3 groups of 4 behind relays, "
          f"{args.rounds_runtime} jobs each, alternating:")
    median = {}
    for name, values in runs.items():
        walls, cpus = [v[0] for v in values], [v[1] for v in values]
        busy = [v[2].compute + v[2].decode for v in values]
        median[name] = [statistics.median(walls), statistics.median(cpus),
                        statistics.median(busy),
                        statistics.median(v[2].received for v in values)]
        print(f"  {name:<9} job min {min(walls):.3f} s  median {median[name][0]:.3f} s;  "
              f"master CPU min {min(cpus):.3f} s  median {median[name][1]:.3f} s;  "
              f"tasks sent -> output median {median[name][2]:.3f} s;  packets read median "
              f"{median[name][3]:g}")
    print(f"  an ordinary code forwarded by the relays against flat: master CPU "
          f"{median['forwarded'][1] / median['flat MDS'][1]:.2f}x, job time "
          f"{median['forwarded'][0] / median['flat MDS'][0]:.2f}x, packets read "
          f"{median['forwarded'][3] / median['flat MDS'][3]:.2f}x, from 3 connections "
          f"instead of 12")
    noise = statistics.median(abs(w - median["flat"][0]) for w, _, _ in runs["flat"]) / \
        median["flat"][0]
    per_piece, costs, sim_flat, sim_tree = simulated_runtime(runs, piece_bytes, cost)
    print(f"  simulated ({per_piece * 1e3:.1f} ms a piece, from the flat runs; shipping and "
          f"encoding "
          + ", ".join(f"{name} {value * 1e3:.1f} ms" for name, value in costs.items())
          + f"): flat {sim_flat:.3f} s, relays {sim_tree:.3f} s; measured "
          f"{median['flat'][2]:.3f} s and {median['relays'][2]:.3f} s (tasks sent -> output): "
          f"{sim_flat / median['flat'][2] - 1:+.0%} flat, {sim_tree / median['relays'][2] - 1:+.0%}"
          f" relays")
    print()
    benchlib.print_targets([
        benchlib.at_most("job time, hierarchical / flat (25 groups of 40)",
                         tree.seconds / flat.seconds, 0.6, "×"),
        benchlib.check("master decode work, flat / hierarchical (25 groups of 40)",
                       flat.master_work / tree.master_work, 10),
        benchlib.at_most("runtime: master CPU per job, relays / flat (12 workers)",
                         median["relays"][1] / median["flat"][1], 0.5, "×"),
        benchlib.at_most("runtime: job time, relays / flat (12 workers)",
                         median["relays"][0] / median["flat"][0], 1 + 2 * noise, "×",
                         f" (flat's median deviation {noise:.0%}, twice allowed)"),
        benchlib.at_most("simulated relays' job time off the measured (12 workers)",
                         abs(sim_tree / median["relays"][2] - 1) * 100, 20, " %"),
        benchlib.at_most("runtime: packets the master reads, forwarded / flat (MDS)",
                         median["forwarded"][3] / median["flat MDS"][3], 1.0, "×")], start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
