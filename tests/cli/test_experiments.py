"""``ffcode experiment``: the simulated sweeps, their tables and PNG plots."""
import pytest

from ffcode import sim
from ffcode.cli import commands as cli
from ffcode.cli import experiment as experiments
from ffcode.schemes import NAMES


def test_sweep_covers_every_scheme_and_value():
    results = experiments.sweep(50, "slowdown", seeds=1)
    assert set(results) == set(NAMES) | {"ideal"}
    assert all(len(t) == len(experiments.SWEEPS["slowdown"][1]) for t in results.values())
    # slower stragglers never make a scheme faster; the bound stays below every scheme
    for scheme, times in results.items():
        assert times == sorted(times), scheme
    for k in range(len(results["ideal"])):
        assert results["ideal"][k] <= min(results[s][k] for s in NAMES)


def test_no_stragglers_no_slowdown_effect():
    """With no stragglers the slowdown cannot matter."""
    a = sim.compare(experiments.model(40, stragglers=0.0, slowdown=2))
    b = sim.compare(experiments.model(40, stragglers=0.0, slowdown=20))
    assert a == b


def test_run_writes_pngs_and_tables(tmp_path, capsys):
    assert cli.main(["experiment", "--out", str(tmp_path), "--sizes", "20", "--seeds",
                     "1"]) == 0
    out = capsys.readouterr().out
    pngs = sorted(tmp_path.glob("*.png"))
    assert [p.name for p in pngs] == sorted(f"sim_n20_{name}.png"
                                            for name in experiments.SWEEPS)
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(png) in out
    assert "N = 20, simulated, varying the pieces m" in out


@pytest.mark.parametrize("argv", [["experiment", "--sizes", "0"],
                                  ["experiment", "--seeds", "0"]])
def test_bad_arguments(argv, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli.main(argv + ["--out", str(tmp_path)])
    assert e.value.code == 2


def test_pieces_split_a_fixed_share():
    """Varying m splits the same work and bytes: classic (whole results) does not change."""
    classic = [sim.simulate(experiments.model(30, seed=0, pieces=m, mean=0.0), "classic")
               for m in (1, 2, 4, 8)]
    assert classic == pytest.approx([classic[0]] * 4)


def test_shares_sweep_in_its_own_setting():
    """The shares sweep runs with 85% stragglers, where the fast workers alone are too few
    for R: a second share more than halves classic's time, and compfs gains a little."""
    results = experiments.sweep(100, "shares", seeds=1)
    assert results["classic"][1] < results["classic"][0] / 2
    assert results["compfs"][1] < results["compfs"][0]
    assert results["ideal"][0] == results["ideal"][-1]


def test_shares_per_worker():
    """Each worker holds ``shares`` whole shares (the code has that many more points). In the
    base setting they change nothing: the fast workers alone hold 4.5 R shares, and their
    first pieces are what compfs waits for. With 90% stragglers the 10% fast workers hold
    only half of R: a second share each halves classic's time."""
    model = experiments.model(20, shares=3)
    assert model.shares == (3,) * 20 and model.n_shares == 60
    assert model.recovery_threshold == 4 and model.uncoded_work == 4 / 20
    one, more = (sim.compare(experiments.model(50, shares=w)) for w in (1, 4))
    assert {s: one[s] for s in NAMES} == {s: more[s] for s in NAMES}
    tail = [sim.simulate(experiments.model(50, stragglers=0.9, shares=w), "classic")
            for w in (1, 2)]
    assert tail[1] < 0.6 * tail[0]


@pytest.mark.bounded(60)
def test_measured_sweep_next_to_the_prediction(bounded, tmp_path):
    """Two points of the measured pieces sweep on 6 local workers: every scheme measured,
    each within 20 % of the simulator's prediction, and the plot written."""
    from ffcode.runtime import Cluster
    with Cluster(6) as cluster:
        measured, predicted = experiments.measured_sweep(cluster, "pieces", [2, 4])
    assert set(measured) == set(NAMES) and set(predicted) == set(NAMES) | {"ideal"}
    for scheme in NAMES:
        assert measured[scheme] == pytest.approx(predicted[scheme], rel=0.2), scheme
    path = tmp_path / "m.png"
    experiments.plot(6, "pieces", measured, path, predicted, experiments.MEASURED_SWEEPS)
    assert path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.bounded(90)
def test_measured_shares_sweep_next_to_the_prediction(bounded):
    """One and two shares per worker measured on 6 local workers, each scheme within 20 % of
    the simulator's prediction; with two, classic and compfs are faster."""
    from ffcode.runtime import Cluster
    with Cluster(6) as cluster:
        measured, predicted = experiments.measured_sweep(cluster, "shares", [1, 2])
    for scheme in NAMES:
        assert measured[scheme] == pytest.approx(predicted[scheme], rel=0.2), scheme
    for scheme in ("classic", "compfs"):
        assert measured[scheme][1] < measured[scheme][0], scheme


# -- the plots ---------------------------------------------------------------------------------

def _fake(values, schemes=NAMES + ("ideal",)) -> dict:
    """Distinct made-up seconds per scheme and value."""
    return {s: [0.1 * (k + 1) + 0.01 * j for j in range(len(values))]
            for k, s in enumerate(schemes)}


def _title(fig) -> str:
    return fig.axes[0].get_title()


@pytest.mark.parametrize("name", list(experiments.SWEEPS))
def test_simulated_titles_name_the_fixed_parameters(name):
    """Each simulated plot's title names N, R, every parameter held fixed (not the varied
    one), the work per share and the seeds averaged."""
    import matplotlib.pyplot as plt
    values = experiments.SWEEPS[name][1]
    fig = experiments.figure(100, name, _fake(values), seeds=3)
    title = _title(fig)
    plt.close(fig)
    fixed = {"pieces": "m = 4", "stragglers": "10% stragglers", "slowdown": "slowdown 5x",
             "link_rate": "straggler links 100 MB/s", "shares": "1 share per worker"}
    assert set(fixed) == set(experiments.SWEEPS)
    if name == "shares":                    # its own setting: too few fast workers for R
        fixed["stragglers"] = "85% stragglers"
    assert "N = 100, R = 20" in title and "mean of 3 seeds" in title
    assert "4 x (8 ms + Exp(2 ms))" in title
    for key, text in fixed.items():
        assert (text in title) == (key != name), (key, title)


@pytest.mark.parametrize("name", list(experiments.MEASURED_SWEEPS))
def test_measured_titles_name_the_fixed_parameters(name):
    import matplotlib.pyplot as plt
    values = experiments.MEASURED_SWEEPS[name][1]
    results = _fake(values, NAMES)
    fig = experiments.figure(6, name, results, _fake(values), experiments.MEASURED_SWEEPS)
    title = _title(fig)
    plt.close(fig)
    fixed = {"pieces": "m = 4", "stragglers": "2 stragglers", "slowdown": "slowdown 4x",
             "link_rate": "free links", "shares": "1 share per worker"}
    assert set(fixed) == set(experiments.MEASURED_SWEEPS)
    if name == "shares":                    # its own setting: 3 fast workers, fewer than R
        fixed["stragglers"] = "3 stragglers"
    assert title.startswith("measured runtime") and "N = 6, R = 4, 256x256" in title
    for key, text in fixed.items():
        assert (text in title) == (key != name), (key, title)


@pytest.mark.parametrize("sweeps, name", [(experiments.SWEEPS, "pieces"),
                                          (experiments.SWEEPS, "slowdown"),
                                          (experiments.SWEEPS, "shares"),
                                          (experiments.MEASURED_SWEEPS, "stragglers"),
                                          (experiments.MEASURED_SWEEPS, "pieces"),
                                          (experiments.MEASURED_SWEEPS, "slowdown")])
def test_integer_axes_have_integer_ticks(sweeps, name):
    """Counts (stragglers, pieces, shares) and slowdowns are ticked at exactly the values swept,
    labelled as integers, on log axes too."""
    import matplotlib.pyplot as plt
    values = sweeps[name][1]
    predicted = None if sweeps is experiments.SWEEPS else _fake(values)
    fig = experiments.figure(6, name, _fake(values), predicted, sweeps)
    axes = fig.axes[0]
    fig.canvas.draw()
    ticks = list(axes.get_xticks())
    labels = [t.get_text() for t in axes.get_xticklabels()]
    minor = list(axes.xaxis.get_minorticklocs())
    plt.close(fig)
    assert ticks == [float(v) for v in values] and all(float(v).is_integer() for v in values)
    assert labels == [str(int(v)) for v in values]
    assert minor == []


def _lines(fig) -> dict:
    axes = fig.axes[0]
    return {line.get_label(): (line.get_marker(), line.get_linestyle(), line.get_markersize())
            for line in axes.get_lines() if not line.get_label().startswith("_")}


def test_coinciding_lines_are_merged():
    """Schemes equal at every point are one line, named in the legend as equal; schemes
    equal at some points only each get their own marker and line style (the markers
    hollow and nested by size), so that every one stays visible."""
    import matplotlib.pyplot as plt
    values = experiments.SWEEPS["slowdown"][1]
    results = _fake(values)
    results["systematic"] = list(results["classic"])
    results["cfs"] = list(results["classic"])
    fig = experiments.figure(100, "slowdown", results)
    lines = _lines(fig)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert "classic = systematic = cfs" in lines and legend == list(lines)
    assert not {"classic", "systematic", "cfs"} & set(lines)

    results["cfs"] = results["cfs"][:-1] + [results["cfs"][-1] + 0.5]
    fig = experiments.figure(100, "slowdown", results)
    lines = _lines(fig)
    plt.close(fig)
    assert set(lines) == {"uncoded", "classic = systematic", "cfs", "compfs", "ideal"}
    styles = [style[:2] for style in lines.values()]
    assert len(set(styles)) == len(styles)
    assert lines["classic = systematic"][2] > lines["cfs"][2]


def test_merged_groups():
    assert experiments.merged({"a": [1.0, 2.0], "b": [1.0, 2.0 + 1e-12], "c": [1.0, 3.0],
                               "d": [1.0, 3.0]}) == {"a = b": [1.0, 2.0], "c = d": [1.0, 3.0]}


def test_replot_measured_from_saved_data(tmp_path):
    """A measured run keeps its data next to each PNG (JSON), and replot_measured redraws
    the plots from it without measuring; without saved data it draws nothing."""
    import json
    assert experiments.replot_measured(tmp_path) == []
    values = experiments.MEASURED_SWEEPS["pieces"][1]
    saved = tmp_path / "measured_n6_pieces.json"
    saved.write_text(json.dumps({"measured": _fake(values, NAMES),
                                 "predicted": _fake(values)}))
    paths = experiments.replot_measured(tmp_path)
    assert paths == [str(tmp_path / "measured_n6_pieces.png")]
    assert (tmp_path / "measured_n6_pieces.png").read_bytes()[:4] == b"\x89PNG"
