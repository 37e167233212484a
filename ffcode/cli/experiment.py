"""``ffcode experiment``: every scheme's runtime as one thing varies — the stragglers, their
slowdown, the pieces m, the stragglers' link rate, the shares per worker — simulated at
N = 100 and N = 1000 and, with ``--measured``, measured on 6 local workers next to the
simulator's prediction; as tables and PNG plots (matplotlib, the ``plots`` extra).

>>> merged({"classic": [1.0, 2.0], "cfs": [1.0, 2.0], "compfs": [0.5, 0.5]})
{'classic = cfs': [1.0, 2.0], 'compfs': [0.5, 0.5]}
>>> print(fixed_parameters(100, "pieces", seeds=3))
N = 100, R = 20; 10% stragglers, slowdown 5x, straggler links 100 MB/s, 1 share per worker
a share: 4 MiB, 4 x (8 ms + Exp(2 ms)) of work; mean of 3 seeds
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from typing import Any, Optional, Sequence

from ffcode import checks, sim
from ffcode.cli.args import argument_parser, integer, namespace
from ffcode.cli import output
from ffcode.codes.registry import code_entry, make_code
from ffcode.field import GF
from ffcode.schemes import registered

# The base setting: R = N/5 (a fifth of the workers suffice), one share per worker, a share
# of 4 MiB and about 40 ms of work in m = 4 pieces (each 8 ms + Exp(2 ms), shifted
# exponential), free links, a 10% tail of stragglers 5x slower whose links carry 100 MB/s.
# With more shares per worker each is still a whole share (the code has more points).
BASE = dict(pieces=4, shift=0.008, mean=0.002, stragglers=0.1, slowdown=5.0,
            link_rate=100e6, shares=1)
SWEEPS: dict[str, tuple[str, list[float]]] = {
    "stragglers": ("fraction of stragglers", [0.0, 0.05, 0.1, 0.2, 0.4, 0.6, 0.79]),
    "slowdown": ("straggler slowdown (x)", [1, 2, 3, 5, 8, 12, 20]),
    "pieces": ("pieces m", [1, 2, 4, 8, 16, 32]),
    "link_rate": ("straggler link rate (MB/s)", [5e6, 10e6, 25e6, 50e6, 100e6, 1e9]),
    "shares": ("shares per worker", [1, 2, 3, 4, 6, 8]),
}
# A sweep's own changes to BASE: shares per worker matter once the fast workers alone are
# too few for R (at BASE they hold 4.5 R shares between them, and a second share is idle).
SWEEP_BASE = {"shares": dict(stragglers=0.85)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode experiment': where the PNGs go, the sizes, the seeds, and
    whether to measure too."""
    argument_parser(parser)
    parser.add_argument("--out", default="plots", help="directory for the PNGs")
    parser.add_argument("--sizes", type=integer(low=1), nargs="+", default=[100, 1000],
                        metavar="N", help="numbers of workers (default 100 1000)")
    parser.add_argument("--seeds", type=integer(low=1), default=3,
                        help="runs averaged per point")
    parser.add_argument("--measured", action="store_true", help="also measure the sweeps "
                        "on 6 local worker processes, about a minute (default: simulated "
                        "only)")


def main(args: argparse.Namespace) -> int:
    """Run the sweeps the arguments ask for and print the PNGs' paths: 0."""
    for path in run(namespace(args).out, args.sizes, args.seeds, args.measured):
        print(path)
    return 0


def model(n_workers: int, seed: int = 0, **changes: float) -> sim.Model:
    """The simulated setting, BASE with changes. A share's work and bytes stay fixed: with
    m pieces each piece is 4/m of a BASE piece; ``shares`` per worker, each a whole share."""
    n_workers = checks.integer(n_workers, "n_workers", low=1)
    for name in changes:
        checks.choice(name, "changes", BASE)
    p = dict(BASE, **changes)
    scale = BASE["pieces"] / p["pieces"]
    slow = range(n_workers - round(p["stragglers"] * n_workers), n_workers)
    return sim.Model(n_workers, max(1, n_workers // 5), int(p["pieces"]),
                     piece_time=sim.ShiftedExponential(p["shift"] * scale, p["mean"] * scale),
                     slowdown={w: p["slowdown"] for w in slow},
                     link_rate={w: p["link_rate"] for w in slow},
                     piece_bytes=(1 << 20) * scale, seed=seed, shares=int(p["shares"]))


def sweep(n_workers: int, name: str, seeds: int = 3) -> dict[str, list[float]]:
    """{scheme: [mean seconds over seeds, per value]} with the values varied."""
    seeds = checks.integer(seeds, "seeds", low=1)
    _, values = SWEEPS[checks.choice(name, "name", SWEEPS)]
    out: dict[str, list[float]] = {}
    base = SWEEP_BASE.get(name, {})
    for value in values:
        runs = [sim.compare(model(n_workers, seed, **dict(base, **{name: value})))
                for seed in range(seeds)]
        for scheme in runs[0]:
            out.setdefault(scheme, []).append(sum(r[scheme] for r in runs) / seeds)
    return out


def table(n_workers: int, name: str, results: dict[str, list[float]], sweeps: dict = SWEEPS,
          kind: str = "simulated") -> str:
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
MEASURED = dict(pieces=4, stragglers=2, slowdown=4.0, link_rate=math.inf, shares=1)
MEASURED_SWEEPS: dict[str, tuple[str, list[float]]] = {
    "stragglers": ("stragglers (of 6)", [0, 1, 2, 3, 4]),
    "slowdown": ("straggler slowdown (x)", [1, 2, 4, 8]),
    "pieces": ("pieces m", [1, 2, 4, 8]),
    "link_rate": ("straggler link rate (MB/s)", [0.25e6, 0.5e6, 1e6, 4e6, 16e6]),
    "shares": ("shares per worker", [1, 2, 3]),
}
MEASURED_SWEEP_BASE = {"shares": dict(stragglers=3)}     # 3 fast workers: fewer than R
_N, _R, _SIZE = 6, 4, 256


def measured_sweep(cluster: Any, name: str, values: Optional[Sequence[float]] = None,
                   seed: int = 0, code: str = "polynomial"
                   ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """({scheme: measured seconds}, {scheme: predicted seconds}) per value of the parameter:
    first share sent to decodable (report.compute), one run per point. ``code`` names a
    registered code of products A @ B (ffcode.codes.registry), at its default parameters
    (polynomial's: a = b = 2, R = 4)."""
    from ffcode.runtime import Faults
    checks.choice(name, "name", MEASURED_SWEEPS)
    code_entry(code, "matmul")
    F = GF(2**31 - 1)
    A, B = F.random((_SIZE, _SIZE), seed=1), F.random((_SIZE, _SIZE), seed=2)
    one = make_code(code, F, _N)
    _, calibration = cluster.run(one, A, B, scheme="compfs", pieces=4)
    quarter = statistics.median(p["compute"] for w in calibration.workers for p in w.packets)
    share, slice_ = (_SIZE // 2) ** 2, -(-_SIZE // _N) * _SIZE
    measured: dict[str, list[float]] = {}
    predicted: dict[str, list[float]] = {}
    for value in values or MEASURED_SWEEPS[name][1]:
        p = dict(MEASURED, **MEASURED_SWEEP_BASE.get(name, {}), **{name: value})
        m, scale = int(p["pieces"]), 4 / p["pieces"]
        slow = range(_N - int(p["stragglers"]), _N)
        pause = {w: (0.02 * scale * (p["slowdown"] if w in slow else 1),
                     0.01 * scale * (p["slowdown"] if w in slow else 1)) for w in range(_N)}
        faults = Faults(slowdown={w: p["slowdown"] for w in slow}, delay=pause,
                        link_rate={w: p["link_rate"] for w in slow
                                   if math.isfinite(p["link_rate"])}, seed=seed)
        w = int(p["shares"])    # uncoded keeps a slice per worker, as the simulator's
        shared = make_code(code, F, _N * w)
        model = sim.Model.from_faults(_N, one.recovery_threshold, m, quarter * scale, faults, shares=w,
                                      piece_bytes=4 * share / m, uncoded_work=slice_ / share)
        for scheme, seconds in sim.compare(model).items():
            predicted.setdefault(scheme, []).append(seconds)
        for scheme in registered():
            report = cluster.run(one if scheme.holds == "slices" else shared, A, B,
                                 scheme=scheme, pieces=m, faults=faults)[1]
            measured.setdefault(scheme.value, []).append(report.compute)
    return measured, predicted


# One style per scheme: distinct markers (hollow, nested by size) and line styles, so that
# schemes that coincide on part of a sweep all stay visible.
STYLES = {"uncoded": ("o", "-", 6), "classic": ("s", "-", 10), "systematic": ("^", "--", 8),
          "cfs": ("v", "-.", 6), "compfs": ("D", "-", 6), "ideal": ("", "--", 0)}


def fixed_parameters(n_workers: int, name: str, measured: bool = False,
                     seeds: Optional[int] = None) -> str:
    """What stays fixed in a sweep (all but the varied parameter ``name``), for its plot:
    two lines."""
    p = dict(MEASURED, **MEASURED_SWEEP_BASE.get(name, {})) if measured else \
        dict(BASE, **SWEEP_BASE.get(name, {}))
    parts = {"pieces": f"m = {p['pieces']}",
             "stragglers": (f"{p['stragglers']} stragglers" if measured else
                            f"{p['stragglers']:.0%} stragglers"),
             "slowdown": f"slowdown {p['slowdown']:g}x",
             "link_rate": ("free links" if math.isinf(p["link_rate"]) else
                           f"straggler links {p['link_rate'] / 1e6:g} MB/s")}
    if "shares" in p:
        parts["shares"] = f"{p['shares']} share{'s' * (p['shares'] != 1)} per worker"
    fixed = ", ".join(text for key, text in parts.items() if key != name)
    if measured:
        return (f"N = {n_workers}, R = {_R}, {_SIZE}x{_SIZE} product; {fixed}\n"
                f"work: a pause of 20 ms + Exp(10 ms) per quarter share; one run per point")
    mean = f"; mean of {seeds} seed{'s' * (seeds != 1)}" if seeds else ""
    return (f"N = {n_workers}, R = {max(1, n_workers // 5)}; {fixed}\n"
            f"a share: 4 MiB, {p['pieces']} x ({p['shift'] * 1e3:g} ms + "
            f"Exp({p['mean'] * 1e3:g} ms)) of work{mean}")


def merged(results: dict[str, list[float]]) -> dict[str, list[float]]:
    """The series with those equal at every point merged: {"classic = cfs": times, ...}."""
    groups: list[list] = []
    for scheme, times in results.items():
        for group in groups:
            if _same(results[group[0]], times):
                group.append(scheme)
                break
        else:
            groups.append([scheme])
    return {" = ".join(group): results[group[0]] for group in groups}


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(x == y or math.isclose(x, y, rel_tol=1e-9)
                                    for x, y in zip(a, b))


def figure(n_workers: int, name: str, results: dict[str, list[float]],
           predicted: Optional[dict[str, list[float]]] = None, sweeps: dict = SWEEPS,
           seeds: Optional[int] = None) -> Any:
    """The matplotlib figure of one sweep: every scheme's runtime against the parameter
    (with ``predicted``: measured, the simulator's prediction dotted), its title naming
    the fixed parameters."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator
    label, values = sweeps[name]
    values = values[:len(next(iter(results.values())))]
    xs = [v / 1e6 for v in values] if name == "link_rate" else list(values)
    figure, axes = plt.subplots(figsize=(7.8, 4.4))
    colors = {scheme: f"C{k}" for k, scheme in enumerate(results)}
    for schemes, times in merged(results).items():
        first = schemes.split(" = ")[0]
        marker, line, size = STYLES.get(first, ("o", "-", 6))
        axes.plot(xs, times, marker=marker, markersize=size, markerfacecolor="none",
                  linestyle=line, color=colors[first], label=schemes)
    for scheme, times in (predicted or {}).items():
        if scheme in colors:
            axes.plot(xs, times, color=colors[scheme], linestyle=":", alpha=0.8)
    if name in ("pieces", "link_rate"):
        axes.set_xscale("log", base=2 if name == "pieces" else 10)
    if name != "stragglers" or predicted is not None:       # counts and rates: the values
        axes.xaxis.set_major_locator(FixedLocator(xs))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xticklabels([f"{x:g}" for x in xs])
    axes.set_xlabel(label)
    if predicted is None:
        axes.set_ylabel("simulated runtime (s)")
        axes.set_title(f"simulated runtime vs {label}\n"
                       f"{fixed_parameters(n_workers, name, seeds=seeds)}", fontsize=9)
    else:
        axes.set_ylabel("measured runtime (s); dotted: simulated")
        axes.set_title(f"measured runtime vs {label}\n"
                       f"{fixed_parameters(n_workers, name, measured=True)}", fontsize=9)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))   # off the lines
    figure.tight_layout()
    return figure


def plot(n_workers: int, name: str, results: dict[str, list[float]], path: Any,
         predicted: Optional[dict[str, list[float]]] = None, sweeps: dict = SWEEPS,
         seeds: Optional[int] = None) -> None:
    """Writes the sweep's figure as a PNG at path."""
    import matplotlib.pyplot as plt
    drawn = figure(n_workers, name, results, predicted, sweeps, seeds)
    drawn.savefig(path, dpi=110)
    plt.close(drawn)


def run(out_dir: str, sizes: Sequence[int] = (100, 1000), seeds: int = 3,
        measured: bool = False) -> list[str]:
    """Every sweep at every N (and measured on 6 local workers): prints the tables, writes
    the PNGs; returns their paths. Without matplotlib (ImportError), or where out_dir's
    files cannot be written (ValueError), it fails before the first sweep."""
    sizes = [checks.integer(n_workers, "sizes", low=1) for n_workers in sizes]
    seeds = checks.integer(seeds, "seeds", low=1)
    _require_matplotlib()
    simulated = {(n_workers, name): os.path.join(out_dir, f"sim_n{n_workers}_{name}.png")
                 for n_workers in sizes for name in SWEEPS}
    measured_paths = {name: os.path.join(out_dir, f"measured_n{_N}_{name}.png")
                      for name in (MEASURED_SWEEPS if measured else [])}
    saved = [_saved(path) for path in measured_paths.values()]
    check_outputs(out_dir, [*simulated.values(), *measured_paths.values(), *saved])
    paths = []
    for (n_workers, name), path in simulated.items():
        results = sweep(n_workers, name, seeds)
        print(table(n_workers, name, results) + "\n")
        plot(n_workers, name, results, path, seeds=seeds)
        paths.append(path)
    if measured:
        from ffcode.runtime import Cluster
        with Cluster(_N) as cluster:
            for name, path in measured_paths.items():
                results, predicted = measured_sweep(cluster, name)
                print(table(_N, name, results, MEASURED_SWEEPS, "measured") + "\n")
                with open(_saved(path), "w") as f:
                    json.dump({"measured": results, "predicted": predicted}, f, indent=1)
                plot(_N, name, results, path, predicted, MEASURED_SWEEPS)
                paths.append(path)
    return paths


def check_outputs(out_dir: str, paths: Sequence[str]) -> None:
    """Make out_dir and prove that every file of paths can be written there (ValueError
    naming the first that cannot), so that no sweep's work is lost to a bad --out."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"cannot write the output to {out_dir!r}: it is not a directory")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise ValueError(f"cannot make the directory {out_dir!r} for the output: "
                         f"{e.strerror}") from None
    for path in paths:
        output.check_writable(path, "the output")


def _saved(png: str) -> str:
    """Where a measured plot's data is saved, next to it."""
    return png[:-len(".png")] + ".json"


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("ffcode experiment needs matplotlib for its plots: pip install "
                          "'ffcode[plots]'") from None


def replot_measured(out_dir: Any) -> list[str]:
    """Redraws the measured plots from the data a measured run saved next to them (JSON),
    without measuring again; returns the PNGs' paths."""
    paths = []
    for name in MEASURED_SWEEPS:
        path = os.path.join(out_dir, f"measured_n{_N}_{name}.png")
        saved = _saved(path)
        if os.path.exists(saved):
            with open(saved) as f:
                data = json.load(f)
            plot(_N, name, data["measured"], path, data["predicted"], MEASURED_SWEEPS)
            paths.append(path)
    return paths
