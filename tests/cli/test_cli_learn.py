"""``ffcode learn``: --compare's table (three schemes on the same stragglers, speedups, test
accuracy), one scheme of linear regression, the JSON report, multi-task learning (digits
one-vs-rest, related regressions), and every mistake refused as one 'ffcode learn: error:'
line (status 2) before a worker starts, scikit-learn missing too."""
import io
import json
import re
import sys
import types

import pytest
import sklearn  # noqa: F401  (the learn extra, ffcode learn's data: missing, fail loudly)

from ffcode import __version__
from ffcode.cli import commands as cli
from ffcode.cli import learn as learning

from test_cli import fails

COMPARED = ["uncoded", "classic", "compfs"]
FEW = ["--workers", "4", "--iterations", "3", "--no-progress"]


def learn(capsys, *args):
    """cli.main(["learn", *args]): (exit status, stdout)."""
    status = cli.main(["learn", *args])
    return status, capsys.readouterr().out


def table_rows(out) -> dict:
    """scheme -> the words of its row in the --compare table."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["scheme",
                                                                          "iteration"])
    return {line.split()[0]: line.split() for line in lines[start + 1:]
            if line.split() and line.split()[0] in COMPARED + ["cfs", "original", "partial"]}


@pytest.mark.bounded(60)
def test_compare_breast_cancer(bounded, capsys, tmp_path):
    """logistic --compare on breast_cancer: a row per scheme with the median iteration,
    uncoded's speedup 1.00x, the total, the loss and a test accuracy well above chance;
    --report writes the settings and the three runs, each with its steps."""
    path = tmp_path / "learn.json"
    status, out = learn(capsys, "logistic", "--dataset", "breast_cancer", *FEW, "--compare",
                        "--stragglers", "1", "--report", str(path))
    assert status == 0, out
    assert "breast_cancer, 569 samples x 30 features (426 train, 143 test), MDS coding " \
        "(k = 3 of 4)" in out
    assert "injected: worker 3 4x slower in every iteration" in out
    rows = table_rows(out)
    assert list(rows) == COMPARED
    assert "test accuracy" in out and "vs uncoded" in out
    assert rows["uncoded"][2] == "1.00x" and rows["uncoded"][4] == "1.00x"
    for words in rows.values():
        assert words[2].endswith("x") and words[4].endswith("x"), words
        assert 0.85 <= float(words[6]) <= 1, words          # test accuracy
    data = json.loads(path.read_text())
    assert list(data) == ["ffcode", "date", "settings", "runs"]
    assert data["ffcode"] == __version__
    settings = data["settings"]
    assert (settings["task"], settings["dataset"], settings["coding"], settings["workers"],
            settings["iterations"]) == ("logistic", "breast_cancer", "mds", 4, 3)
    assert settings["faults"]["slowdown"] == {"3": 4.0}
    assert [r["scheme"] for r in data["runs"]] == COMPARED
    for r in data["runs"]:
        assert [s["iteration"] for s in r["steps"]] == [1, 2, 3]
        assert all(s["seconds"] > 0 and s["shipped"] > 0 for s in r["steps"])
        assert r["loss"] == r["steps"][-1]["loss"] and len(r["coef"]) == 30
        assert r["seconds"] >= sum(s["seconds"] for s in r["steps"])
        assert f"{r['score']:.4f}" == rows[r["scheme"]][6]
    assert f"report written to {path}" in out
    assert "every scheme learned the same model (exact arithmetic): yes" in out


@pytest.mark.bounded(60)
def test_compare_lcc(bounded, capsys):
    """--coding lcc --compare trains with cfs in place of compfs (an LCC gradient is not
    row-linear), says so, and every scheme learns the same model."""
    status, out = learn(capsys, "logistic", "--dataset", "synthetic", "--samples", "200",
                        "--features", "4", "--coding", "lcc", *FEW, "--compare")
    assert status == 0, out
    assert "cfs in place of compfs" in out and "LCC coding" in out
    assert list(table_rows(out)) == ["uncoded", "classic", "cfs"]
    assert "every scheme learned the same model (exact arithmetic): yes" in out


@pytest.mark.bounded(90)
def test_compare_gradient_coding(bounded, capsys, tmp_path):
    """--coding gradient --compare trains uncoded (each worker one partition), with the
    original protocol and at full speed on the same stragglers: the same model, bit for
    bit; the report names the protocols."""
    path = tmp_path / "learn.json"
    status, out = learn(capsys, "linear", "--dataset", "diabetes", "--coding", "gradient",
                        *FEW, "--stragglers", "1", "--compare", "--report", str(path))
    assert status == 0, out
    assert "diabetes, 442 samples x 10 features (331 train, 111 test), GRADIENT coding " \
        "(cyclic repetition, any 3 of 4 workers)" in out
    assert list(table_rows(out)) == ["uncoded", "original", "partial"]
    assert "every scheme learned the same model (exact arithmetic): yes" in out
    runs = json.loads(path.read_text())["runs"]
    assert [r["scheme"] for r in runs] == ["uncoded", "original", "partial"]
    assert runs[0]["coef"] == runs[2]["coef"] and len(runs[0]["coef"]) == 10


@pytest.mark.bounded(60)
def test_gradient_coding_original_protocol(bounded, capsys):
    status, out = learn(capsys, "logistic", "--dataset", "breast_cancer", "--coding",
                        "gradient", "--original", *FEW, "--iterations", "10")
    assert status == 0, out
    line = next(line for line in out.splitlines() if line.startswith("  original: "))
    assert 0.85 < float(line.split("test accuracy ")[1]) <= 1, line


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_iteration_bar(monkeypatch):
    """The bar fills with the iterations done, on a terminal only, and wipes its line."""
    step = types.SimpleNamespace(iteration=3)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    learning.IterationBar("compfs", 6, True)(step)
    assert sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", Terminal())
    bar = learning.IterationBar("compfs", 6, True)
    bar(step)
    assert sys.stderr.getvalue() == f"\r  compfs     [{'#' * 15}{'.' * 15}] iteration 3/6"
    bar.close()
    assert sys.stderr.getvalue().endswith("\r")
    monkeypatch.setattr(sys, "stderr", Terminal())
    learning.IterationBar("compfs", 6, False)(step)             # --no-progress
    assert sys.stderr.getvalue() == ""


@pytest.mark.bounded(60)
def test_linear_diabetes(bounded, capsys):
    """linear on diabetes with one scheme: one summary line with the loss and a test R^2
    that shows the model learned something (the mean alone scores 0)."""
    status, out = learn(capsys, "linear", "--dataset", "diabetes", *FEW, "--iterations",
                        "30", "--scheme", "classic")
    assert status == 0, out
    assert "ffcode learn linear: diabetes, 442 samples x 10 features (331 train, 111 test)" \
        in out
    line = next(line for line in out.splitlines() if line.startswith("  classic: "))
    assert "30 iterations" in line and "loss" in line
    assert 0.2 < float(line.split("test R^2 ")[1]) <= 1, line
    assert "vs uncoded" not in out                          # no table


@pytest.mark.bounded(60)
def test_shares_per_worker(bounded, capsys, tmp_path):
    """--shares 2: every scheme of --compare trains with two shares per worker, the same
    model, and the report says so."""
    path = tmp_path / "learn.json"
    status, out = learn(capsys, "logistic", "--dataset", "breast_cancer", *FEW,
                        "--iterations", "2", "--compare", "--shares", "2", "--report",
                        str(path))
    assert status == 0, out
    assert "every scheme learned the same model (exact arithmetic): yes" in out
    two = json.loads(path.read_text())
    assert two["settings"]["shares"] == 2
    status, out = learn(capsys, "logistic", "--dataset", "breast_cancer", *FEW,
                        "--iterations", "2", "--scheme", "compfs", "--report", str(path))
    one = json.loads(path.read_text())
    assert status == 0 and one["settings"]["shares"] == 1
    ratio = two["runs"][-1]["loaded_bytes"] / one["runs"][0]["loaded_bytes"]
    assert 1.8 < ratio < 2.2                # twice the shares loaded onto the workers
    assert two["runs"][-1]["coef"] == one["runs"][0]["coef"]


def task_rows(out, columns) -> dict:
    """task -> its scores in the multi-task table (columns of them)."""
    rows = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) == columns + 1 and words[0].isdigit():
            rows[words[0]] = [float(w) for w in words[1:]]
    return rows


@pytest.mark.bounded(90)
def test_multitask_digits_compare(bounded, capsys, tmp_path):
    """multitask --compare on digits: ten one-vs-rest tasks, a row each with the
    multi-task, separate and scikit-learn test accuracies; the separate fits' time and
    the ratio; uncoupled, every task's model is its separate fit's, exactly; --report
    writes the runs."""
    path = tmp_path / "tasks.json"
    status, out = learn(capsys, "multitask", *FEW, "--iterations", "5", "--compare",
                        "--stragglers", "1", "--report", str(path))
    assert status == 0, out
    assert "ffcode learn multitask: digits one-vs-rest, 10 tasks on 1797 samples x 64 " \
        "features (1347 train, 450 test), MDS coding (k = 3 of 4), 5 iterations, " \
        "coupling 0" in out
    assert "multi-task: 5 iterations" in out and "one-vs-rest test accuracy" in out
    assert "multi-task      separate  scikit-learn   (test accuracy)" in out
    rows = task_rows(out, 3)
    assert list(rows) == [str(d) for d in range(10)]
    for multi, separate, reference in rows.values():
        assert multi == separate and 0.85 < multi <= 1 and 0.9 < reference <= 1
    assert "separate: 10 single-task fits one after another" in out
    assert re.search(r"the multi-task fit is \d+\.\d\dx (faster|slower)\n", out)
    assert "every task's model is its separate fit's (exact arithmetic): yes" in out
    data = json.loads(path.read_text())
    assert (data["settings"]["task"], data["settings"]["tasks"]) == ("multitask", "digits")
    assert [r["model"] for r in data["runs"]] == ["multi-task", "separate", "scikit-learn"]
    assert len(data["runs"][0]["coef"]) == 10 and len(data["runs"][1]["fits"]) == 10


@pytest.mark.parametrize("separate, multi, words", [(3.0, 1.5, "2.00x faster"),
                                                     (1.0, 1.6, "1.60x slower"),
                                                     (2.0, 2.0, "1.00x faster")])
def test_multitask_speed_said_faster_or_slower(capsys, separate, multi, words):
    """--compare's line on the separate fits says "faster" when the multi-task fit took
    less time and "slower" (by how much) when it took more, never a ratio below 1x."""
    args = types.SimpleNamespace(tasks="regression", compare=True, coupling=1.0)
    tasks = types.SimpleNamespace(names=["0", "1"])
    run = {"iterations": 2, "iteration": 0.1, "load_seconds": 0.0, "loaded_bytes": 0,
           "loss": 0.5, "score": 0.9, "tasks": [0.9, 0.8]}
    results = [dict(run, model="multi-task", seconds=multi),
               dict(run, model="separate", seconds=separate)]
    assert learning._print_tasks(args, results, tasks)
    out = capsys.readouterr().out
    assert f"2 single-task fits one after another, {separate:.3f} s in all: the multi-task " \
        f"fit is {words}\n" in out


def test_help_names_multitask(capsys):
    """'ffcode --help' and 'ffcode learn --help' say that learn trains related tasks
    together too (multitask), not only a linear or logistic regression."""
    outs = {}
    for command in ("ffcode", "learn"):
        with pytest.raises(SystemExit) as exit:
            cli.main(["--help"] if command == "ffcode" else ["learn", "--help"])
        assert exit.value.code == 0
        outs[command] = " ".join(capsys.readouterr().out.split())
    assert "ffcode learn linear|logistic|multitask a regression, or related tasks " \
        "together, trained by coded gradient descent" in outs["ffcode"]
    assert "learn train a linear or logistic regression (linear, logistic), or related " \
        "tasks together (multitask), by coded gradient descent" in outs["ffcode"]
    assert "train a linear or logistic regression (linear, logistic), or related tasks " \
        "together (multitask)" in outs["learn"]


@pytest.mark.bounded(60)
def test_multitask_related_regressions(bounded, capsys):
    """multitask --tasks regression --coupling: four related regressions, each its own
    data set, trained together; a row per task with its test R^2, no comparison."""
    status, out = learn(capsys, "multitask", "--tasks", "regression", "--coupling", "0.5",
                        *FEW, "--iterations", "20", "--coding", "lcc")
    assert status == 0, out
    assert "4 related regressions, each its own data set" in out and "coupling 0.5" in out
    assert "LCC coding" in out and "mean test R^2" in out
    rows = task_rows(out, 1)
    assert list(rows) == ["0", "1", "2", "3"]
    assert all(0.5 < r2 <= 1 for (r2,) in rows.values()), rows
    assert "separate" not in out


@pytest.mark.bounded(90)
def test_multitask_through_relays_compare(bounded, capsys, tmp_path):
    """multitask --topology combination:5:2 --compare: digits' ten tasks as the users of
    5 relays, trained coded and uncoded; each fit's bytes a step (coded 7.62 and 6.09
    tasks' weights up and down, padded to the split; uncoded 10 and 10), the same model,
    the same scores; --report writes both runs with their relays' reports."""
    path = tmp_path / "relays.json"
    status, out = learn(capsys, "multitask", "--topology", "combination:5:2", "--compare",
                        "--workers", "5", "--iterations", "4", "--report", str(path))
    assert status == 0, out
    assert "10 tasks on 1797 samples x 64 features (1347 train, 450 test), through relays " \
        "combination:5:2 (coded and uncoded), the server hop 100 Mbit/s shared, 4 " \
        "iterations, coupling 0" in out
    assert "(7.62 and 6.09 tasks' weights)" in out and "(10 and 10 tasks' weights)" in out
    rows = task_rows(out, 2)
    assert list(rows) == [str(d) for d in range(10)]
    assert all(coded == plain and 0.8 < coded <= 1 for coded, plain in rows.values())
    assert re.search(r"learned the same model \(exact arithmetic\): yes; coded is "
                     r"\d+\.\d\dx (faster|slower)\n", out)
    data = json.loads(path.read_text())
    assert data["settings"]["topology"] == "combination:5:2"
    assert data["settings"]["link_rate"] == 100.0
    coded, plain = data["runs"]
    assert (coded["model"], plain["model"]) == ("coded", "uncoded")
    assert coded["coef"] == plain["coef"] and coded["relays"]["loads"]["uplink"] == "15/2"
    assert plain["relays"]["uplink"] == [10 * 65 * 8] * 4


@pytest.mark.bounded(60)
def test_multitask_regressions_through_a_ring(bounded, capsys):
    """--tasks regression on a ring of 4 relays, uncoded: one fit, its scores."""
    status, out = learn(capsys, "multitask", "--tasks", "regression", "--topology",
                        "cyclic:4:2:1", "--communication", "uncoded", "--coupling", "0.5",
                        "--workers", "4", "--iterations", "20", "--link-rate", "1000")
    assert status == 0, out
    assert "through relays cyclic:4:2:1 (uncoded), the server hop 1000 Mbit/s" in out
    assert "coded and uncoded" not in out
    rows = task_rows(out, 1)
    assert list(rows) == ["0", "1", "2", "3"] and all(0.5 < r2 <= 1 for (r2,) in
                                                        rows.values()), rows


@pytest.mark.bounded(90)
def test_multitask_regressions_with_users_as_workers(bounded, capsys):
    """--layout hierarchical --compare: each of the 4 tasks' users a worker of its own
    after 2 relays; coded and uncoded learn the same model, the users' links counted."""
    status, out = learn(capsys, "multitask", "--tasks", "regression", "--topology",
                        "0,1,2;2,3", "--layout", "hierarchical", "--compare", "--coupling",
                        "0.5", "--workers", "6", "--iterations", "10", "--link-rate", "1000")
    assert status == 0, out
    assert "each user a worker of its own on links of the same rate" in out
    assert "the users' links 0.4 kB up and 1.1 kB down" in out
    assert "coded and uncoded learned the same model (exact arithmetic): yes" in out


@pytest.mark.parametrize("args, message", [
    (["multitask", "--topology", "combination:4:2"], "--topology combination:4:2 has 6 "
     "users, and --tasks digits 10 tasks: give it a user per task."),
    (["multitask", "--tasks", "regression", "--topology", "combination:5:2", "--workers",
      "4"], "has 10 users, and --tasks regression 4 tasks"),
    (["multitask", "--topology", "combination:5:2", "--workers", "4"], "--topology "
     "combination:5:2 has 5 relays, and --workers is 4: a relay is a worker."),
    (["multitask", "--topology", "ring:4"], "Topology 'ring:4'"),
    (["multitask", "--topology", "combination:5:2", "--k", "2"], "--k is for the coded "
     "product; --topology trains through relays, a worker each."),
    (["multitask", "--topology", "combination:5:2", "--stragglers", "1"], "--stragglers is "
     "for the coded product"),
    (["multitask", "--topology", "combination:5:2", "--coding", "lcc"], "--coding is for "
     "the coded product"),
    (["multitask", "--topology", "combination:5:2", "--communication", "loud"],
     "invalid choice: 'loud'"),
    (["multitask", "--topology", "combination:5:2", "--link-rate", "0"], "argument "
     "--link-rate: must be a positive"),
    (["multitask", "--communication", "uncoded"], "--communication is for a training "
     "through relays (--topology)."),
    (["multitask", "--link-rate", "10"], "--link-rate is for a training through relays"),
    (["multitask", "--layout", "hierarchical"], "--layout is for a training through relays"),
    (["multitask", "--tasks", "regression", "--topology", "0,1,2;2,3", "--layout",
      "hierarchical", "--workers", "5"], "has 2 relays and 4 users, and --workers is 5: "
     "with --layout hierarchical each relay and each user is a worker."),
    (["logistic", "--dataset", "digits", "--topology", "combination:5:2"], "--topology is "
     "for 'ffcode learn multitask', not logistic."),
    (["linear", "--dataset", "breast_cancer"], "--dataset breast_cancer has binary labels, "
     "a classification data set: it is for 'ffcode learn logistic', not linear."),
    (["linear", "--dataset", "digits"], "it is for 'ffcode learn logistic', not linear."),
    (["logistic", "--dataset", "diabetes"], "--dataset diabetes has real targets, a "
     "regression data set: it is for 'ffcode learn linear', not logistic."),
    (["logistic", "--dataset", "iris"], "invalid choice: 'iris'"),
    (["logistic"], "the following arguments are required: --dataset"),
    (["multitask", "--dataset", "digits"], "--dataset is for 'ffcode learn linear|logistic': "
     "multitask trains on --tasks digits or regression."),
    (["multitask", "--samples", "100"], "--samples is for 'ffcode learn linear|logistic'"),
    (["multitask", "--tasks", "images"], "invalid choice: 'images'"),
    (["multitask", "--coupling", "-1"], "argument --coupling: must be a number >= 0, not "
     "'-1'"),
    (["logistic", "--dataset", "digits", "--tasks", "digits"], "--tasks is for 'ffcode learn "
     "multitask', not logistic."),
    (["linear", "--dataset", "diabetes", "--coupling", "1"], "--coupling is for 'ffcode "
     "learn multitask', not linear."),
    (["multitask", "--coding", "lcc", "--workers", "2", "--stragglers", "0"],
     "MultiTaskLogisticRegression with coding='lcc', k=1, t=1, degree=1 needs results from "
     "R = 3 workers, but the cluster has 2."),
    (["ridge", "--dataset", "diabetes"], "invalid choice: 'ridge'"),
    (["logistic", "--dataset", "digits", "--samples", "100"], "--samples is for --dataset "
     "synthetic: digits has its own size."),
    (["linear", "--dataset", "diabetes", "--features", "3"], "--features is for --dataset "
     "synthetic"),
    (["logistic", "--dataset", "synthetic", "--samples", "5"], "argument --samples: must be "
     "at least 10, not 5"),
    (["logistic", "--dataset", "synthetic", "--compare", "--scheme", "classic"],
     "--compare trains with uncoded, classic and compfs: leave out --scheme."),
    (["logistic", "--dataset", "synthetic", "--scheme", "fast"], "invalid choice: 'fast'"),
    (["logistic", "--dataset", "synthetic", "--coding", "rs"], "invalid choice: 'rs'"),
    (["logistic", "--dataset", "synthetic", "--iterations", "0"], "argument --iterations: "
     "must be at least 1, not 0"),
    (["logistic", "--dataset", "synthetic", "--learning-rate", "0"], "argument "
     "--learning-rate: must be a positive number, not 0"),
    (["logistic", "--dataset", "synthetic", "--learning-rate", "nan"], "must be a positive "
     "number, not nan"),
    (["logistic", "--dataset", "synthetic", "--learning-rate", "fast"], "argument "
     "--learning-rate: not a number: 'fast'"),
    (["logistic", "--dataset", "synthetic", "--stragglers", "0", "--slowdown", "3"],
     "--slowdown is the stragglers' factor, and --stragglers is 0."),
    (["logistic", "--dataset", "synthetic", "--slowdown", "-2"], "argument --slowdown: must "
     "be a positive number, not -2"),
    (["logistic", "--dataset", "synthetic", "--workers", "4", "--stragglers", "5"],
     "--stragglers must be between 0 and --workers (4), not 5"),
    (["logistic", "--dataset", "synthetic", "--k", "0"], "argument --k: must be at least 1, "
     "not 0"),
    (["logistic", "--dataset", "synthetic", "--workers", "4", "--k", "5"], "--k 5 with "
     "--coding mds needs results from 5 workers, but --workers is 4."),
    (["linear", "--dataset", "diabetes", "--coding", "lcc", "--k", "3"], "--k 3 with "
     "--coding lcc needs results from 7 workers, but --workers is 6."),
    (["logistic", "--dataset", "synthetic", "--report", "/nonexistent/r.json"],
     "cannot write the report to '/nonexistent/r.json': no such directory"),
    (["logistic", "--dataset", "synthetic", "--report", "/proc/ffcode-learn.json"],
     "cannot write the report to '/proc/ffcode-learn.json': No such file or directory"),
    (["linear", "--dataset", "diabetes", "--coding", "lcc", "--k", "3", "--workers", "4",
      "--stragglers", "0", "--shares", "2"], "--k 3 with --coding lcc needs results from 9 "
     "shares, but --workers 4 with --shares 2 hold 8."),
    (["linear", "--dataset", "diabetes", "--coding", "gradient", "--k", "2"], "--k is for the "
     "coded products (--coding mds or lcc); --coding gradient codes the gradient's sum"),
    (["linear", "--dataset", "diabetes", "--coding", "gradient", "--scheme", "cfs"],
     "--scheme is for the coded products"),
    (["linear", "--dataset", "diabetes", "--coding", "gradient", "--shares", "2"],
     "--shares is for the coded products"),
    (["linear", "--dataset", "diabetes", "--coding", "gradient", "--workers", "3",
      "--stragglers", "3"], "--coding gradient tolerates fewer stragglers than --workers "
     "(3), not 3."),
    (["linear", "--dataset", "diabetes", "--coding", "gradient", "--compare", "--original"],
     "--compare trains with uncoded, original and partial: leave out --original."),
    (["multitask", "--coding", "gradient"], "--coding gradient is for 'ffcode learn "
     "linear|logistic'"),
    (["linear", "--dataset", "diabetes", "--original"], "--original is the protocol of "
     "--coding gradient."),
    (["logistic", "--dataset", "breast_cancer", "--coding", "lcc", "--workers", "2",
      "--stragglers", "0"], "LogisticRegression with coding='lcc', k=1, t=1, degree=1 needs "
     "results from R = 3 workers, but the cluster has 2."),
])
def test_mistakes_refused(capsys, args, message):
    """A mistake is one error line, status 2, before any worker starts."""
    fails(capsys, ["learn", *args], message)


def test_k_counts_the_shares():
    """--k with --shares W fits when the W shares of every worker give R (before, --k 3
    --coding lcc on 6 workers was refused for needing 7 workers whatever the shares)."""
    parser, _ = cli.build()
    args = learning.settle(parser.parse_args(["learn", "linear", "--dataset", "diabetes",
                                              "--coding", "lcc", "--k", "3", "--shares",
                                              "2"]))
    assert (args.k, args.shares, args.workers) == (3, 2, 6)     # R = 2 (3 + 1) + 1 = 9 <= 12


def test_without_scikit_learn(capsys, monkeypatch):
    """Without scikit-learn: one line naming the extra to install, status 2, no worker."""
    monkeypatch.setitem(sys.modules, "sklearn", None)      # import sklearn: ImportError
    err = fails(capsys, ["learn", "logistic", "--dataset", "breast_cancer"],
                "ffcode learn needs scikit-learn for its data sets: pip install "
                "ffcode[learn]")
    assert len(err.splitlines()) == 1                       # no usage: the flags are right
