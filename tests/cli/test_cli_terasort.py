"""``ffcode terasort`` end to end on local workers: TeraSort and Coded TeraSort compared on
the same records (the phase table, the bytes each worker sent, the report's JSON), the
emulated network's flags, a wrong output's exit status 1 with an error line, and the
flags refused before any worker starts (the command's usage, one error line, status 2)."""
import json

import pytest

from ffcode.cli import commands as cli
from ffcode.cli import terasort as command

from test_cli import fails

SMALL = ["--records", "3000", "--workers", "4", "--r", "2"]
PHASES = ["map", "encode", "shuffle", "decode", "reduce", "total"]
TOP_KEYS = {"ffcode", "date", "records", "workers", "r", "network", "link_rate", "link_delay",
            "loss", "burst", "skew", "seed", "runs"}
RUN_KEYS = {"variant", "r", "phases", "sent", "copies", "dropped", "resent", "sorted"}


def run_cli(capsys, *args):
    """cli.main(["terasort", *args]): (exit status, stdout, stderr)."""
    status = cli.main(["terasort", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def rows(out) -> dict:
    """label -> the words after the label, of each row of the phase table."""
    found = {}
    for line in out.splitlines():
        for label in ("Coded TeraSort", "TeraSort"):
            if line.startswith(f"  {label} ") and label not in found and "vs" not in line:
                found[label] = line[len(label) + 2:].split()
                break
    return found


def check_run(run, variant, load, workers):
    assert set(run) == RUN_KEYS
    assert run["variant"] == variant and run["r"] == load
    assert list(run["phases"]) == PHASES
    assert all(isinstance(v, float) and v >= 0 for v in run["phases"].values())
    assert run["phases"]["total"] >= run["phases"]["shuffle"]
    assert len(run["sent"]) == workers and all(type(b) is int and b > 0 for b in run["sent"])


@pytest.mark.bounded(60)
def test_compare_prints_the_phases_and_reports_both_variants(bounded, capsys, tmp_path):
    """--compare runs TeraSort (load 1, uncoded) and Coded TeraSort (load r): both outputs
    are the input sorted, the table has a row each under the phases' names, and coded
    sends fewer bytes (about r times fewer per worker: each multicast reaches r)."""
    path = tmp_path / "terasort.json"
    status, out, err = run_cli(capsys, *SMALL, "--compare", "--report", str(path))
    assert status == 0, out + err
    header = next(line for line in out.splitlines() if line.lstrip().startswith("variant"))
    assert header.split() == ["variant", "map", "pack/encode", "shuffle", "unpack/decode",
                              "reduce", "total", "sent", "MB", "sorted"]
    table = rows(out)
    assert list(table) == ["TeraSort", "Coded TeraSort"]
    assert all(words[-1] == "yes" and len(words) == 8 for words in table.values()), table
    assert "Coded TeraSort vs TeraSort: " in out and "in the shuffle" in out
    assert f"report written to {path}" in out
    assert out.rstrip().endswith("terasort passed")
    data = json.loads(path.read_text())
    assert set(data) == TOP_KEYS
    assert (data["records"], data["workers"], data["r"]) == (3000, 4, 2)
    assert (data["network"], data["link_rate"], data["skew"], data["seed"]) == \
        ("links", None, 0.0, 0)
    plain, coded = data["runs"]
    check_run(plain, "terasort", 1, 4)
    check_run(coded, "coded", 2, 4)
    assert plain["sorted"] is True and coded["sorted"] is True
    assert sum(coded["sent"]) < sum(plain["sent"])
    assert plain["copies"] == plain["sent"]         # uncoded: one receiver a message
    assert plain["dropped"] == plain["resent"] == []      # no loss: nothing counted
    assert "lost on the peer links" not in out
    # the printed per-worker bytes and MB are the report's
    assert f"    TeraSort        {plain['sent']}" in out
    assert f"    Coded TeraSort  {coded['sent']}" in out
    assert float(table["Coded TeraSort"][-2]) == pytest.approx(sum(coded["sent"]) / 1e6,
                                                               abs=1e-3)


@pytest.mark.bounded(60)
def test_network_flags_reach_the_job(bounded, capsys, tmp_path):
    """--network turns and --link-rate (Mbit/s, reported in bytes a second), skewed keys;
    without --compare only Coded TeraSort runs."""
    path = tmp_path / "terasort.json"
    status, out, err = run_cli(capsys, "--records", "2000", "--workers", "3", "--r", "1",
                               "--network", "turns", "--link-rate", "400", "--skew", "2",
                               "--seed", "5", "--link-delay", "20", "--report", str(path))
    assert status == 0, out + err
    assert "network turns" in out and "400 Mbit/s" in out and "skewed keys" in out
    assert "20 ms a message" in out
    assert list(rows(out)) == ["Coded TeraSort"] and "vs TeraSort" not in out
    data = json.loads(path.read_text())
    assert (data["network"], data["link_rate"], data["skew"], data["seed"]) == \
        ("turns", 50e6, 2.0, 5)
    assert data["link_delay"] == 0.02
    [run] = data["runs"]
    assert run["phases"]["shuffle"] >= 3 * 0.02         # a delay per worker's turn
    check_run(run, "coded", 1, 3)
    assert run["sorted"] is True


@pytest.mark.bounded(60)
def test_lossy_peer_links_sort_and_count_their_drops(bounded, capsys, tmp_path):
    """--loss and --burst make every peer link lose messages: both variants still sort,
    and the report counts each link's drops and each worker's messages sent again, as
    the table prints them."""
    path = tmp_path / "terasort.json"
    status, out, err = run_cli(capsys, *SMALL, "--compare", "--loss", "0.3", "--burst",
                               "2", "--seed", "4", "--report", str(path))
    assert status == 0, out + err
    assert "each link losing 30% in runs of 2" in out
    data = json.loads(path.read_text())
    assert (data["loss"], data["burst"]) == (0.3, 2.0)
    for run in data["runs"]:
        check_run(run, run["variant"], run["r"], 4)
        assert run["sorted"] is True
        assert len(run["dropped"]) == 4 and all(len(d) == 4 and d[k] == 0
                                                for k, d in enumerate(run["dropped"]))
        assert sum(map(sum, run["dropped"])) > 0 and sum(run["resent"]) > 0
        assert f"{[sum(d) for d in run['dropped']]} / {run['resent']}" in out
    assert "lost on the peer links (segments, polls, acknowledgements)" in out
    status, out, err = run_cli(capsys, *SMALL, "--network", "turns", "--link-rate", "400",
                               "--loss", "0.2")
    assert status == 0 and "network turns" in out and "each link losing 20%" in out, err


@pytest.mark.bounded(60)
def test_a_wrong_output_exits_1_with_an_error_line(bounded, capsys, monkeypatch):
    """An output that is not the input sorted (the check made to say so) is shown in the
    table (NO) and exits with status 1 and one error line."""
    monkeypatch.setattr(command.terasort, "check", lambda outputs, data: False)
    status, out, err = run_cli(capsys, "--records", "500", "--workers", "3", "--r", "1")
    assert status == 1
    assert rows(out)["Coded TeraSort"][-1] == "NO"
    assert "terasort passed" not in out
    assert err.strip() == ("ffcode terasort: error: the output of Coded TeraSort is not the "
                           "input sorted")


@pytest.mark.parametrize("argv, message", [
    (["--r", "0"], "argument --r: must be at least 1, not 0"),
    (["--workers", "4", "--r", "4"], "--r 4 must be below --workers 4"),
    (["--workers", "3", "--r", "5"], "--r 5 must be below --workers 3"),
    (["--workers", "1"], "argument --workers: must be at least 2, not 1"),
    (["--records", "3", "--workers", "4"], "--records 3 must be at least --workers 4"),
    (["--network", "ring"], "argument --network: invalid choice: 'ring'"),
    (["--link-rate", "0"], "argument --link-rate: must be a positive number of Mbit/s"),
    (["--skew", "-1"], "argument --skew: must be a number >= 0"),
    (["--loss", "1"], "a peer link losing every message cannot carry the shuffle"),
    (["--loss", "-0.1"], "argument --loss: must be a number >= 0"),
    (["--loss", "0.5", "--burst", "0.5"], "mean run of losses >= 1"),
    (["--loss", "0.6", "--burst", "1"], "too short for p = 0.6"),
    (["--workers", "30", "--r", "15"], "make 155117520 files"),
    (["--report", "/proc/ffcode-test-terasort.json"], "cannot write the report to "),
])
def test_mistakes_show_the_usage_and_one_error_line(capsys, argv, message):
    """Refused before anything is printed and before a worker starts."""
    err = fails(capsys, ["terasort", *argv], message)
    assert err.startswith("usage: ffcode terasort ")


@pytest.mark.bounded(90)
def test_the_documented_command_runs_as_written(bounded, capsys):
    """The getting-started page's 'ffcode terasort' line, run as it is written: both
    variants sort, and on the shared medium Coded TeraSort sends fewer bytes."""
    import pathlib
    import re
    import shlex
    page = pathlib.Path(__file__).parents[2] / "docs" / "getting-started.md"
    line = re.search(r"^ffcode terasort .*$", page.read_text(), re.M).group(0)
    status, out, err = run_cli(capsys, *shlex.split(line)[2:])
    assert status == 0, out + err
    assert "terasort passed" in out and out.count(" yes") >= 2
