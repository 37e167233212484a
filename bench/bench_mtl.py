"""Benchmark coded multi-task learning through relays (ffcode.mtl): the loads between the
relays and the server against the topology and the computation load, coded, uncoded and
the lower bounds, measured as the bytes of real exchanges; and the price of coding a step.

1. Loads. For each topology, one exchange of random updates (d elements each, a multiple
   of every split) coded and one uncoded, run message by message (ffcode.mtl.exchange),
   every relay's decoding checked exact; the bytes up and down divided by one update's
   are the loads, printed beside the lower bounds (ffcode.mtl.bounds). Topologies: a user
   on every r-subset of K relays (K = 4, 6, 8; r = 1..K-1), rings of K = 8 relays with
   two users each on r consecutive relays, and --random seeded topologies of 6 relays and
   12 users, each user on 1 to 3 relays. The loads against r for K = 8 are plotted to
   bench/plots/mtl_loads_k8.png (with matplotlib).
2. A step's price at model size --size (parameters per update, 4-byte elements of
   GF(2^31 - 1), a model's float parameters in fixed point) on K = 6 relays, a user on
   every 3 of them (20 users): the coded exchange's CPU time (the relays' encoding, the
   server's mix, the relays' decoding, measured in this process, interleaved with the
   uncoded exchange's copying over --rounds rounds, min and median) plus its bytes on a
   shared medium of --rate (100 Mbit/s) between the relays and the server, against the
   uncoded exchange's. The bytes' time is computed from the measured bytes, not emulated
   on processes. The relays' encoding is also timed with galois (the same product over
   the same field), interleaved.
3. Training on processes (ffcode.runtime.train_multitask): 6 local worker processes as
   the relays, a user on every 3 of them (20 related least-squares tasks, --samples
   samples of --train-size features a user, each user's model that many parameters in
   GF(2^61 - 1)), --steps steps, the server hop emulated at --rate on a shared medium,
   then on a link per relay; coded and uncoded trainings interleaved after a warm-up,
   min and median of the training's wall time (its first job ships every relay its
   users' data, the same in both). The relays hold their users' data and compute their
   updates, as the flat system's workers do: the users' own hop is not there.
4. The same training with users as worker processes of their own (``layout=
   "hierarchical"``: 6 relays and 20 users, 26 processes): each user holds its data and
   computes its update; the users' hop emulated at --rate too, a link from each user to
   each of its relays (the target), then one medium the users and relays share; the
   server's hop on its shared medium; coded and uncoded interleaved after a warm-up.
Targets: on every topology the coded loads equal the bounds exactly and neither exceeds
the uncoded one; with a user on every 3 of 6 relays, the server's hop carries <= 0.6x
the uncoded bytes and a step on it (coding included) takes <= 0.7x the uncoded time;
ffcode's encoding >= 5x galois's; the coded training's model is the uncoded one's bit for
bit, and it takes <= 0.83x the uncoded training's time (at least the papers' 17 % less),
with the relays computing the updates and with users as workers of their own (both hops
emulated).

    python bench/bench_mtl.py                     # about a minute on 2 cores
    python bench/bench_mtl.py --quick             # smoke run
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

import numpy as np

from ffcode import GF
from ffcode.mtl import (Coded, Topology, Uncoded, coded_loads, downlink_bound, exchange,
                        uncoded_loads, uplink_bound)
from ffcode.mtl.local import least_squares

from benchlib import at_most, check, machine_info, print_targets

FIELD = GF(2**31 - 1)
NETWORK = {"turns": "shared", "links": "links"}     # the server hop's two emulations
PLOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots")


def topologies(random: int) -> list:
    """(family, parameter, topology) for the loads' sweep."""
    out = [("combination", (K, r), Topology.combination(K, r))
           for K in (4, 6, 8) for r in range(1, K)]
    out += [("ring", (8, r), Topology.cyclic(8, r, 2)) for r in range(1, 5)]
    rng = np.random.default_rng(2026)
    for seed in range(random):
        K, N = 6, 12
        relays = [rng.choice(K, size=int(rng.integers(1, 4)), replace=False) for _ in range(N)]
        groups = [[u for u in range(N) if k in relays[u]] for k in range(K)]
        out.append(("random", seed, Topology([g or [int(rng.integers(N))] for g in groups])))
    return out


def measured_loads(topology: Topology, width: int = 840) -> dict:
    """Loads from one real exchange each, coded and uncoded (exact decoding checked)."""
    updates = FIELD.random((topology.users, width), seed=topology.users)
    one = updates[0].nbytes
    out = {}
    for name, scheme in (("coded", Coded(topology, FIELD)), ("uncoded", Uncoded(topology, FIELD))):
        assert width % scheme.split == 0, (topology, scheme.split)
        done = exchange(scheme, updates)
        assert all((d == updates).all() for d in done.decoded), (topology, name)
        out[name] = (done.uplink / one, done.downlink / one)
    return out


def loads_section(random: int) -> tuple[list, list]:
    print("1. Loads between the relays and the server (updates; measured bytes / one update's)")
    print(f"{'topology':<22}{'N':>4}{'r':>6}  {'up coded':>9}{'bound':>8}{'uncoded':>8}"
          f"  {'down coded':>10}{'bound':>7}{'uncoded':>8}")
    rows, exact, never_more = [], True, True
    for family, parameter, t in topologies(random):
        got = measured_loads(t)
        up, down = uplink_bound(t), downlink_bound(t)
        (cu, cd), (uu, ud) = got["coded"], got["uncoded"]
        exact &= math.isclose(cu, up) and math.isclose(cd, down)
        exact &= (cu, cd) == (float(coded_loads(t).uplink), float(coded_loads(t).downlink))
        exact &= (uu, ud) == (float(uncoded_loads(t).uplink), float(uncoded_loads(t).downlink))
        never_more &= cu <= uu and cd <= ud
        label = f"{family} {parameter}"
        print(f"{label:<22}{t.users:>4}{t.load:>6.2f}  {cu:>9.3f}{float(up):>8.3f}{uu:>8.0f}"
              f"  {cd:>10.0f}{float(down):>7.0f}{ud:>8.0f}")
        rows.append(dict(family=family, parameter=parameter, users=t.users, load=t.load,
                         coded=[cu, cd], uncoded=[uu, ud], bound=[float(up), float(down)]))
    print()
    results = [("PASS" if exact else "MISS",
                f"{'PASS' if exact else 'MISS'}  the coded loads equal the lower bounds on all "
                f"{len(rows)} topologies (measured bytes)"),
               ("PASS" if never_more else "MISS",
                f"{'PASS' if never_more else 'MISS'}  no coded load exceeds the uncoded one")]
    return rows, results


def plot(rows: list) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)")
        return
    chosen = [r for r in rows if r["family"] == "combination" and r["parameter"][0] == 8]
    r = [row["parameter"][1] for row in chosen]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=False)
    for ax, i, title in ((axes[0], 0, "uplink (relays to server)"),
                         (axes[1], 1, "downlink (server to relays)")):
        ax.plot(r, [row["uncoded"][i] / row["users"] for row in chosen], "s--", label="uncoded")
        ax.plot(r, [row["coded"][i] / row["users"] for row in chosen], "o-", label="coded")
        ax.plot(r, [row["bound"][i] / row["users"] for row in chosen], "k:", label="lower bound")
        ax.set_title(title)
        ax.set_xlabel("relays per user r (K = 8 relays, a user on every r-subset)")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("load / N (updates)")
    axes[0].legend()
    fig.tight_layout()
    os.makedirs(PLOTS, exist_ok=True)
    path = os.path.join(PLOTS, "mtl_loads_k8.png")
    fig.savefig(path, dpi=110)
    print(f"plot: {os.path.relpath(path)}\n")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def price_section(size: int, rounds: int, rate: float) -> list:
    t = Topology.combination(6, 3)
    updates = FIELD.random((t.users, size), seed=1)
    coded, plain = Coded(t, FIELD), Uncoded(t, FIELD)
    done = {"coded": exchange(coded, updates), "uncoded": exchange(plain, updates)}
    for name, d in done.items():
        assert all((x == updates).all() for x in d.decoded), name
    seconds = {"coded": [], "uncoded": []}
    for _ in range(rounds):                       # interleaved: A, B, A, B, ...
        seconds["coded"].append(timed(lambda: exchange(coded, updates)))
        seconds["uncoded"].append(timed(lambda: exchange(plain, updates)))
    print(f"2. One step on K = 6 relays, a user on every 3 of them (N = 20), {size} parameters "
          f"an update ({updates[0].nbytes / 1e6:.1f} MB), {rate * 8 / 1e6:.0f} Mbit/s shared")
    wire = {n: (d.uplink + d.downlink) / rate for n, d in done.items()}
    step = {}
    for name in ("coded", "uncoded"):
        cpu = seconds[name]
        step[name] = wire[name] + statistics.median(cpu)
        print(f"  {name:<8} bytes {done[name].uplink / 1e6:7.1f} MB up "
              f"{done[name].downlink / 1e6:7.1f} MB down  on the wire {wire[name]:6.2f} s  "
              f"exchange CPU min {min(cpu):.3f} s median {statistics.median(cpu):.3f} s  "
              f"step {step[name]:6.2f} s")
    galois_time = encode_against_galois(coded, updates, rounds)
    print()
    bytes_ratio = (done["coded"].uplink + done["coded"].downlink) / \
        (done["uncoded"].uplink + done["uncoded"].downlink)
    return [at_most("bytes on the server's hop, coded / uncoded", bytes_ratio, 0.6, "×"),
            at_most("a step on the server's hop (bytes at the rate + coding CPU), "
                    "coded / uncoded", step["coded"] / step["uncoded"], 0.7, "×",
                    f" (time saved {1 - step['coded'] / step['uncoded']:.0%}; the papers "
                    "report 17-26 % of whole training steps)"),
            check("a relay's encoding, galois / ffcode", galois_time, 5.0)]


def encode_against_galois(scheme: Coded, updates: np.ndarray, rounds: int) -> float:
    """Relay 0's encoding with ffcode and with galois (same product), interleaved; returns
    galois's median over ffcode's."""
    import galois
    GFp = galois.GF(FIELD.p)
    width = min(updates.shape[1], 20_000)         # galois's product is slow: a slice
    mine = updates[list(scheme.topology.groups[0]), :width]
    assert scheme.split == 1                      # the parts are the updates themselves
    parts = mine
    E = scheme.encoders[0]
    expected = scheme.uplink(0, mine)
    assert (np.asarray(GFp(E.astype(np.int64)) @ GFp(parts.astype(np.int64))) == expected).all()
    ours, theirs = [], []
    gE, gP = GFp(E.astype(np.int64)), GFp(parts.astype(np.int64))
    for _ in range(max(rounds, 3)):
        ours.append(timed(lambda: scheme.uplink(0, mine)))
        theirs.append(timed(lambda: gE @ gP))
    print(f"  relay 0's encoding of {width} elements a part: ffcode min {min(ours) * 1e3:.2f} ms "
          f"median {statistics.median(ours) * 1e3:.2f} ms; galois min {min(theirs) * 1e3:.2f} "
          f"ms median {statistics.median(theirs) * 1e3:.2f} ms")
    return statistics.median(theirs) / statistics.median(ours)


def related(t: Topology, size: int, samples: int) -> tuple:
    """20 related least-squares tasks (each user's data), the first model and the step's
    arguments."""
    rng = np.random.default_rng(3)
    common = rng.normal(size=size)
    data = []
    for _ in range(t.users):
        X = rng.normal(size=(samples, size))
        data.append((X, X @ (common + 0.3 * rng.normal(size=size))))
    return data, np.zeros((t.users, size)), [np.array([0.5 / size]), np.array([0.5])]


def trainings(t: Topology, problem: tuple, steps: int, rounds: int, rate: float,
              networks: tuple, layout: str) -> tuple:
    """Coded and uncoded trainings interleaved after a warm-up, on each of ``networks``
    (the server hop's; with users as workers, (the server hop's, the users' hop's)):
    (their wall seconds, models and reports by (network, communication))."""
    import ffcode
    from ffcode.runtime import train_multitask
    data, W0, args = problem
    runs = [(network, name) for network in networks for name in ("coded", "uncoded")]
    seconds: dict = {run: [] for run in runs}
    models, reports = {}, {}
    workers = t.relays + (t.users if layout == "hierarchical" else 0)
    with ffcode.Cluster(workers) as cluster:
        cluster.wait()
        for name in ("coded", "uncoded"):         # warm-up: the workers import this script
            train_multitask(cluster, t, data, least_squares, 1, model=W0, args=args,
                            communication=name, layout=layout)
        for network in networks:
            server, users = network if layout == "hierarchical" else (network, None)
            hop = {} if users is None else {"user_network": users, "user_rate": rate}
            for _ in range(rounds):               # interleaved: A, B, A, B, ...
                for name in ("coded", "uncoded"):
                    began = time.perf_counter()
                    models[network, name], reports[network, name] = train_multitask(
                        cluster, t, data, least_squares, steps, model=W0, args=args,
                        communication=name, network=server, link_rate=rate, layout=layout,
                        **hop)
                    seconds[network, name].append(time.perf_counter() - began)
    for network, name in runs:
        r, took = reports[network, name], seconds[network, name]
        hops = statistics.median(r.uplink_seconds) + statistics.median(r.downlink_seconds)
        user_hops = (statistics.median(r.user_uplink_seconds) +
                     statistics.median(r.user_downlink_seconds)) if r.user_uplink else 0.0
        where = NETWORK[r.network] + ("" if r.user_network is None else
                                      f", users {NETWORK[r.user_network]}")
        print(f"  {where:<{9 if r.user_network is None else 24}}{name:<8} "
              f"{sum(r.uplink) / steps / 1e6:5.2f} MB up "
              f"{sum(r.downlink) / steps / 1e6:5.2f} MB down a step; server hop {hops:.3f} s" +
              (f", users' hop {user_hops:.3f} s" if r.user_uplink else "") +
              f", updates {statistics.median(r.compute):.3f} s; a step "
              f"{statistics.median(r.seconds[1:]):.3f} s; training min {min(took):.2f} s "
              f"median {statistics.median(took):.2f} s")
    return seconds, models, reports


def training_section(size: int, samples: int, steps: int, rounds: int, rate: float) -> tuple:
    """Trainings of 20 related regressions on 6 local worker processes (the relays), the
    server hop emulated at ``rate`` on a shared medium, then on a link per relay, coded
    and uncoded interleaved; (the targets, the models)."""
    t = Topology.combination(6, 3)
    print(f"3. Training on 6 worker processes as relays, a user on every 3 of them (N = 20): "
          f"{steps} steps of {size} parameters an update, {samples} samples a user; the "
          f"server hop emulated at {rate * 8 / 1e6:.0f} Mbit/s")
    seconds, models, _ = trainings(t, related(t, size, samples), steps, rounds, rate,
                                   tuple(NETWORK), "flat")
    same = len({model.tobytes() for model in models.values()}) == 1
    ratio = {network: statistics.median(seconds[network, "coded"]) /
             statistics.median(seconds[network, "uncoded"]) for network in NETWORK}
    print(f"  on links, coded / uncoded: {ratio['links']:.2f}x the training time (coding "
          "saves the uplink alone there)\n")
    return [("PASS" if same else "MISS", f"{'PASS' if same else 'MISS'}  every training's "
             "model, coded or uncoded, shared or on links, is the same bit for bit"),
            at_most("training time on processes at 100 Mbit/s shared, coded / uncoded",
                    ratio["turns"], 0.83, "×", f" (time saved {1 - ratio['turns']:.0%}; "
                    "the relays compute their users' updates)")], models


def hierarchy_section(size: int, samples: int, steps: int, rounds: int, rate: float,
                      flat: dict) -> list:
    """The same trainings with each user a worker process of its own (26 processes), the
    server's shared medium and the users' hop both at ``rate``: a link from each user to
    each of its relays, then one shared medium."""
    t = Topology.combination(6, 3)
    print(f"4. The same training with each user a worker process of its own (6 relays and 20 "
          f"users: 26 processes), both hops emulated at {rate * 8 / 1e6:.0f} Mbit/s: the "
          f"relays' shared medium to the server, and the users' links to their relays, "
          f"then one medium the users and relays share")
    both = (("turns", "links"), ("turns", "turns"))
    seconds, models, reports = trainings(t, related(t, size, samples), steps, rounds, rate,
                                         both, "hierarchical")
    same = len({m.tobytes() for m in list(models.values()) + list(flat.values())}) == 1
    ratio, shared = (statistics.median(seconds[network, "coded"]) /
                     statistics.median(seconds[network, "uncoded"]) for network in both)
    r = reports[both[1], "coded"]
    print(f"  users' shared medium: {r.user_uplink[0] / 1e6:.2f} MB up, "
          f"{r.user_downlink[0] / 1e6:.2f} MB down a step, the same coded or uncoded; "
          f"coded / uncoded: {shared:.2f}x the training time\n")
    return [("PASS" if same else "MISS", f"{'PASS' if same else 'MISS'}  with users as "
             "workers, coded and uncoded learn the flat trainings' model bit for bit"),
            at_most("training time with users as workers, both hops at 100 Mbit/s, coded / "
                    "uncoded", ratio, 0.83, "×", f" (time saved {1 - ratio:.0%}; the papers "
                    "report 17-26 %)")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=1_000_000,
                        help="parameters an update (default 1e6)")
    parser.add_argument("--random", type=int, default=20, help="random topologies")
    parser.add_argument("--rate", type=float, default=12.5e6,
                        help="bytes a second of the shared medium (12.5e6: 100 Mbit/s)")
    parser.add_argument("--train-size", type=int, default=20_000,
                        help="parameters an update in the training on processes")
    parser.add_argument("--samples", type=int, default=32, help="samples a user")
    parser.add_argument("--steps", type=int, default=10, help="training steps")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.size, args.random, args.train_size = 2, 100_000, 4, 2000
    start = time.perf_counter()
    print(json.dumps(machine_info()))
    rows, results = loads_section(args.random)
    plot(rows)
    results += price_section(args.size, args.rounds, args.rate)
    trained, models = training_section(args.train_size, args.samples, args.steps,
                                       max(args.rounds - 2, 3), args.rate)
    results += trained + hierarchy_section(args.train_size, args.samples, args.steps,
                                           max(args.rounds - 2, 3), args.rate, models)
    print_targets(results, start)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"loads": rows, "targets": [line for _, line in results]}, f, indent=1)


if __name__ == "__main__":
    main()
