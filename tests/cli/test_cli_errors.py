"""Mistakes every command finds after argparse has parsed its flags: refused by the
command's own parser (its usage, then one 'ffcode run: error: ...' line, status 2) before
anything is printed and before any worker starts; output paths proven writable up front
by opening them, which a permission test cannot do for root (these tests run as root,
for whom os.access says yes even in /proc); and failures after the work began, one line
with no usage."""
import os
import sys

import pytest

from ffcode.cli import commands as cli
from ffcode.cli import experiment as experiments, output

from test_cli import fails

SMALL = ["--n", "32", "--workers", "4", "--no-progress"]
UNWRITABLE = "/proc/ffcode-test-report.json"      # /proc takes no new files, root's neither


@pytest.mark.parametrize("argv, message", [
    (["run", "lcc", *SMALL, "--workers", "6", "--scheme", "compfs"],
     "--scheme compfs needs a row-linear f"),
    (["run", "matvec", *SMALL, "--a", "2"], "--a is for matmul, not matvec"),
    (["run", "matvec", *SMALL, "--workers", "2000"], "Argument 'n_workers' must be from 1 "
                                                     "to 1024"),
    (["run", "matvec", *SMALL, "--engine", "ray", "--endpoint", "ipc:///tmp/ffcode-test"],
     "Ray workers connect over tcp"),
    (["-v", "run", "matvec", *SMALL, "--k", "4", "--stragglers", "0", "--key", "k"],
     "--key is for --endpoint"),
    (["learn", "linear", "--dataset", "digits"], "it is for 'ffcode learn logistic'"),
    (["learn", "logistic", "--dataset", "breast_cancer", "--coding", "lcc", "--workers", "2",
      "--stragglers", "0"], "needs results from R = 3 workers, but the cluster has 2"),
    (["demo", "--p", "12"], "Argument 'p' must be prime, not 12"),
    (["experiment", "--out", "/dev/null"], "cannot write the output to '/dev/null': it is "
                                           "not a directory"),
    (["worker", "--connect", "127.0.0.1:9"], "cannot connect to '127.0.0.1:9'"),
])
def test_mistakes_found_after_parsing_show_the_commands_usage(capsys, argv, message):
    """The usage is the command's ('usage: ffcode run ...', not the top level's), the error
    line is named after it, and nothing (no job header, no warning) came before."""
    command = next(arg for arg in argv if not arg.startswith("-"))
    err = fails(capsys, argv, message)
    assert err.startswith(f"usage: ffcode {command} ")
    assert err.splitlines()[-1].startswith(f"ffcode {command}: error: ")
    assert "warning" not in err


@pytest.mark.parametrize("argv, message", [
    (["run", "matvec", *SMALL, "--report", UNWRITABLE],
     f"cannot write the report to '{UNWRITABLE}': No such file or directory"),
    (["learn", "logistic", "--dataset", "breast_cancer", "--report", UNWRITABLE],
     f"cannot write the report to '{UNWRITABLE}': No such file or directory"),
    (["experiment", "--out", "/proc/sys", "--sizes", "5", "--seeds", "1"],
     "cannot write the output to '/proc/sys/sim_n5_stragglers.png'"),
    (["experiment", "--out", "/proc/ffcode-test-plots", "--sizes", "5", "--seeds", "1"],
     "cannot make the directory '/proc/ffcode-test-plots' for the output"),
])
def test_unwritable_outputs_refused_before_any_work(capsys, argv, message):
    """An output that cannot be written (even by root) is refused before any worker starts
    or any sweep runs (before: root passed the check and the report failed after every
    job had run)."""
    fails(capsys, argv, message)
    assert not os.path.exists(UNWRITABLE)


def test_check_writable_leaves_the_files_as_they_were(tmp_path):
    """The check opens the file for appending: a new file is removed again, an existing
    one keeps its content; a directory or a missing directory is named as the problem."""
    fresh, kept = tmp_path / "new.json", tmp_path / "old.json"
    kept.write_text("earlier report\n")
    output.check_writable(str(fresh))
    output.check_writable(str(kept))
    assert sorted(os.listdir(tmp_path)) == ["old.json"]
    assert kept.read_text() == "earlier report\n"
    with pytest.raises(ValueError, match="cannot write the report to .*: it is a directory"):
        output.check_writable(str(tmp_path))
    with pytest.raises(ValueError, match="cannot write the plots to .*: no such directory"):
        output.check_writable(str(tmp_path / "missing" / "a.png"), "the plots")
    with pytest.raises(ValueError, match="No such file or directory"):
        output.check_writable(UNWRITABLE)


def test_experiment_checks_every_output_first(tmp_path, capsys):
    """experiments.run proves every PNG (and with measured, every JSON) writable before
    its first sweep, and leaves no file of the check behind."""
    out = tmp_path / "plots"
    paths = [str(out / "a.png"), str(out / "b.json")]
    experiments.check_outputs(str(out), paths)
    assert os.listdir(out) == []
    (out / "sim_n5_pieces.png").mkdir()             # one output the run cannot write
    with pytest.raises(ValueError, match="sim_n5_pieces.png'?: it is a directory"):
        experiments.run(str(out), sizes=[5], seeds=1)
    assert capsys.readouterr().out == ""            # no sweep ran


def test_experiment_without_matplotlib(capsys, monkeypatch, tmp_path):
    """Without matplotlib: one line naming the extra, status 2, before any sweep."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib: ImportError
    err = fails(capsys, ["experiment", "--out", str(tmp_path), "--sizes", "5"],
                "ffcode experiment needs matplotlib for its plots: pip install "
                "'ffcode[plots]'")
    assert len(err.splitlines()) == 1                        # no usage: the flags are right


@pytest.mark.bounded(60)
def test_report_failing_after_the_jobs_is_one_line(bounded, capsys, monkeypatch):
    """Should the report still fail after the jobs ran (the up-front check passed, the
    disk changed since), that is one error line without the usage: the flags were right."""
    monkeypatch.setattr(output, "check_writable", lambda path: None)
    status = cli.main(["run", "matvec", *SMALL, "--k", "3", "--stragglers", "0", "--report",
                       UNWRITABLE])
    captured = capsys.readouterr()
    assert status == 2
    assert "output equals direct computation: yes" in captured.out
    assert captured.err == f"ffcode run: error: cannot write the report to " \
                           f"'{UNWRITABLE}': No such file or directory\n"
