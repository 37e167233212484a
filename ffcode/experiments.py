"""``ffcode experiment``: every scheme's runtime as one thing varies — the stragglers, their
slowdown, the pieces m, the stragglers' link rate — simulated at N = 100 and N = 1000 and,
with ``--measured``, measured on 6 local workers next to the simulator's prediction; as
tables and PNG plots (matplotlib, the ``plots`` extra)."""
import math
import os
import statistics

from ffcode import sim
from ffcode._field import GF
from ffcode.codes import PolynomialCode

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


def table(n_workers, name, results, sweeps=SWEEPS, kind="simulated") -> str:
    label, values = sweeps[name]
    lines = [f"N = {n_workers}, {kind}, varying the {label}: seconds (classic / scheme in "
             f"brackets)",
             f"  {label:>28}" + "".join(f"{s:>18}" for s in results)]
    for k, value in enumerate(values):
        shown = f"{value / 1e6:g}" if name == "link_rate" else f"{value:g}"
        classic = results["classic"][k]
        lines.append(f"  {shown:>28}" + "".join(
            f"{results[s][k]:>10.3f} ({_ratio(classic, results[s][k]):4.2f})" for s in results))
    return "\n".join(lines)


def _ratio(a, b):
    return a / b if b else math.inf


# Measured: PolynomialCode a = b = 2 (R = 4) on 256 x 256 over 6 local workers. The pieces
# are cheap and the work is the injected pause, 20 ms + Exp(10 ms) per quarter share (the
# regime the simulator describes, bench_simulator.py); a straggler k times slower pauses k
# times as long. 2 stragglers 4x slower; one parameter varies.
MEASURED = dict(pieces=4, stragglers=2, slowdown=4.0, link_rate=math.inf)
MEASURED_SWEEPS = {
    "stragglers": ("stragglers (of 6)", [0, 1, 2, 3, 4]),
    "slowdown": ("straggler slowdown (x)", [1, 2, 4, 8]),
    "pieces": ("pieces m", [1, 2, 4, 8]),
    "link_rate": ("straggler link rate (MB/s)", [0.25e6, 0.5e6, 1e6, 4e6, 16e6]),
}
_N, _R, _SIZE = 6, 4, 256


def measured_sweep(cluster, name, values=None, seed=0):
    """({scheme: measured seconds}, {scheme: predicted seconds}) per value of the parameter:
    first share sent to decodable (report.compute), one run per point."""
    from ffcode.runtime import Faults
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, _N)
    A, B = F.random((_SIZE, _SIZE), seed=1), F.random((_SIZE, _SIZE), seed=2)
    _, calibration = cluster.run(code, A, B, scheme="compfs", pieces=4)
    quarter = statistics.median(p["compute"] for w in calibration.workers for p in w.packets)
    share, slice_ = (_SIZE // 2) ** 2, -(-_SIZE // _N) * _SIZE
    measured, predicted = {}, {}
    for value in values or MEASURED_SWEEPS[name][1]:
        p = dict(MEASURED, **{name: value})
        m, scale = p["pieces"], 4 / p["pieces"]
        slow = range(_N - p["stragglers"], _N)
        pause = {w: (0.02 * scale * (p["slowdown"] if w in slow else 1),
                     0.01 * scale * (p["slowdown"] if w in slow else 1)) for w in range(_N)}
        faults = Faults(slowdown={w: p["slowdown"] for w in slow}, delay=pause,
                        link_rate={w: p["link_rate"] for w in slow
                                   if math.isfinite(p["link_rate"])}, seed=seed)
        model = sim.Model.from_faults(_N, _R, m, quarter * scale, faults,
                                      piece_bytes=4 * share / m, uncoded_work=slice_ / share)
        for scheme, seconds in sim.compare(model).items():
            predicted.setdefault(scheme, []).append(seconds)
        for scheme in sim.SCHEMES:
            report = cluster.run(code, A, B, scheme=scheme, pieces=m, faults=faults)[1]
            measured.setdefault(scheme, []).append(report.compute)
    return measured, predicted


def plot(n_workers, name, results, path, predicted=None, sweeps=SWEEPS):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    label, values = sweeps[name]
    xs = [v / 1e6 for v in values[:len(next(iter(results.values())))]] \
        if name == "link_rate" else values[:len(next(iter(results.values())))]
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for k, (scheme, times) in enumerate(results.items()):
        color = f"C{k}"
        axes.plot(xs, times, marker="o", label=scheme, color=color,
                  linestyle="--" if scheme == "ideal" else "-")
        if predicted is not None and scheme in predicted:
            axes.plot(xs, predicted[scheme], color=color, linestyle=":", alpha=0.8)
    if name in ("pieces", "link_rate"):
        axes.set_xscale("log")
    axes.set_xlabel(label)
    if predicted is None:
        axes.set_ylabel("simulated runtime (s)")
        axes.set_title(f"N = {n_workers}, R = {max(1, n_workers // 5)}: runtime vs {label}")
    else:
        axes.set_ylabel("measured runtime (s); dotted: simulated")
        axes.set_title(f"measured, N = {n_workers}, R = {_R}: runtime vs {label}")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(out_dir, sizes=(100, 1000), seeds=3, measured=False) -> list:
    """Every sweep at every N (and measured on 6 local workers): prints the tables, writes
    the PNGs; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for n_workers in sizes:
        for name in SWEEPS:
            results = sweep(n_workers, name, seeds)
            print(table(n_workers, name, results) + "\n")
            path = os.path.join(out_dir, f"sim_n{n_workers}_{name}.png")
            plot(n_workers, name, results, path)
            paths.append(path)
    if measured:
        from ffcode.runtime import Cluster
        with Cluster(_N) as cluster:
            for name in MEASURED_SWEEPS:
                results, predicted = measured_sweep(cluster, name)
                print(table(_N, name, results, MEASURED_SWEEPS, "measured") + "\n")
                path = os.path.join(out_dir, f"measured_n{_N}_{name}.png")
                plot(_N, name, results, path, predicted, MEASURED_SWEEPS)
                paths.append(path)
    return paths
