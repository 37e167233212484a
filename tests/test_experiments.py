"""``ffcode experiment``: the simulated sweeps, their tables and PNG plots."""
import pytest

from ffcode import cli, experiments, sim


def test_sweep_covers_every_scheme_and_value():
    results = experiments.sweep(50, "slowdown", seeds=1)
    assert set(results) == set(sim.SCHEMES) | {"ideal"}
    assert all(len(t) == len(experiments.SWEEPS["slowdown"][1]) for t in results.values())
    # slower stragglers never make a scheme faster; the bound stays below every scheme
    for scheme, times in results.items():
        assert times == sorted(times), scheme
    for k in range(len(results["ideal"])):
        assert results["ideal"][k] <= min(results[s][k] for s in sim.SCHEMES)


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


@pytest.mark.bounded(60)
def test_measured_sweep_next_to_the_prediction(bounded, tmp_path):
    """Two points of the measured pieces sweep on 6 local workers: every scheme measured,
    each within 20 % of the simulator's prediction, and the plot written."""
    from ffcode.runtime import Cluster
    with Cluster(6) as cluster:
        measured, predicted = experiments.measured_sweep(cluster, "pieces", [2, 4])
    assert set(measured) == set(sim.SCHEMES) and set(predicted) == set(sim.SCHEMES) | {"ideal"}
    for scheme in sim.SCHEMES:
        assert measured[scheme] == pytest.approx(predicted[scheme], rel=0.2), scheme
    path = tmp_path / "m.png"
    experiments.plot(6, "pieces", measured, path, predicted, experiments.MEASURED_SWEEPS)
    assert path.read_bytes()[:4] == b"\x89PNG"
