"""``ffcode experiment``: what the simulator predicts for every scheme as one thing varies —
the number of stragglers, their slowdown, the pieces m, the stragglers' link rate — at
N = 100 and N = 1000, as tables and PNG plots (matplotlib, the ``plots`` extra)."""
import math
import os

from ffcode import sim

# The base setting: R = N/5 (a fifth of the workers suffice), a share of 4 MiB and about
# 40 ms of work in m = 4 pieces (each 8 ms + Exp(2 ms), shifted exponential), free links, a
# 10% tail of stragglers 5x slower whose links carry 100 MB/s.
BASE = dict(pieces=4, shift=0.008, mean=0.002, stragglers=0.1, slowdown=5.0,
            link_rate=100e6)
SWEEPS = {
    "stragglers": ("fraction of stragglers", [0.0, 0.05, 0.1, 0.2, 0.4, 0.6, 0.79]),
    "slowdown": ("straggler slowdown (x)", [1, 2, 3, 5, 8, 12, 20]),
    "pieces": ("pieces m", [1, 2, 4, 8, 16, 32]),
    "link_rate": ("straggler link rate (MB/s)", [5e6, 10e6, 25e6, 50e6, 100e6, 1e9]),
}


def model(n_workers, seed=0, **changes):
    """The simulated setting, BASE with changes. A share's work and bytes stay fixed: with
    m pieces each piece is 4/m of a BASE piece."""
    p = dict(BASE, **changes)
    scale = BASE["pieces"] / p["pieces"]
    slow = range(n_workers - round(p["stragglers"] * n_workers), n_workers)
    return sim.Model(n_workers, max(1, n_workers // 5), p["pieces"],
                     piece_time=sim.ShiftedExponential(p["shift"] * scale, p["mean"] * scale),
                     slowdown={w: p["slowdown"] for w in slow},
                     link_rate={w: p["link_rate"] for w in slow},
                     piece_bytes=(1 << 20) * scale, seed=seed)


def sweep(n_workers, name, seeds=3) -> dict:
    """{scheme: [mean seconds over seeds, per value]} with the values varied."""
    _, values = SWEEPS[name]
    out = {}
    for value in values:
        runs = [sim.compare(model(n_workers, seed, **{name: value})) for seed in range(seeds)]
        for scheme in runs[0]:
            out.setdefault(scheme, []).append(sum(r[scheme] for r in runs) / seeds)
    return out


def table(n_workers, name, results) -> str:
    label, values = SWEEPS[name]
    lines = [f"N = {n_workers}, varying the {label}: seconds (classic / scheme in brackets)",
             f"  {label:>28}" + "".join(f"{s:>18}" for s in results)]
    for k, value in enumerate(values):
        shown = f"{value / 1e6:g}" if name == "link_rate" else f"{value:g}"
        classic = results["classic"][k]
        lines.append(f"  {shown:>28}" + "".join(
            f"{results[s][k]:>10.3f} ({_ratio(classic, results[s][k]):4.2f})" for s in results))
    return "\n".join(lines)


def _ratio(a, b):
    return a / b if b else math.inf


def plot(n_workers, name, results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    label, values = SWEEPS[name]
    xs = [v / 1e6 for v in values] if name == "link_rate" else values
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for scheme, times in results.items():
        axes.plot(xs, times, marker="o", label=scheme,
                  linestyle="--" if scheme == "ideal" else "-")
    if name in ("pieces", "link_rate"):
        axes.set_xscale("log")
    axes.set_xlabel(label)
    axes.set_ylabel("simulated runtime (s)")
    axes.set_title(f"N = {n_workers}, R = {max(1, n_workers // 5)}: runtime vs {label}")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(out_dir, sizes=(100, 1000), seeds=3) -> list:
    """Every sweep at every N: prints the tables, writes the PNGs; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for n_workers in sizes:
        for name in SWEEPS:
            results = sweep(n_workers, name, seeds)
            print(table(n_workers, name, results) + "\n")
            path = os.path.join(out_dir, f"sim_n{n_workers}_{name}.png")
            plot(n_workers, name, results, path)
            paths.append(path)
    return paths
