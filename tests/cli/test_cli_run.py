"""``ffcode run`` and ``ffcode worker`` end to end: every default passes, every scheme's
table and report (JSON with the settings), the injected-fault flags, a tcp master with the
key directory it makes and the workers it asks for, bounded waits on both sides with one
error line, Ctrl-C with no process left behind, and the workers' logs. (Argument errors
without workers: test_cli.py.)"""
import json
import re
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import ffcode
from ffcode import MDS, PolynomialCode
from ffcode.cli import commands as cli
from ffcode.runtime import SCHEMA, Cluster

from helpers import alive, default_ctrl_c, descendants

SCHEMES = ["uncoded", "classic", "systematic", "cfs", "compfs"]
REPORT_KEYS = {"schema", "ffcode", "date", "settings", "scheme", "code", "n_workers", "pieces",
               "needed", "job", "cancelled", "rank", "encode", "compute", "decode", "total",
               "verify", "verified", "wrong", "stop_latency", "quiet", "wasted_after_stop", "stale", "rejected",
               "workers", "shipped", "received", "used", "wasted", "exact", "error"}
SETTINGS_KEYS = {"code", "p", "inputs", "scheme", "pieces", "faults", "seed", "adversaries",
                 "verify", "resident", "assignment", "coefficient_seed", "priority",
                 "repair"}
WORKER_KEYS = {"worker", "host", "pid", "node", "shares", "share_sent", "shipped", "reloaded",
               "packets", "compute", "speed", "done", "stopped", "lost", "dropped",
               "link_packets", "group", "used", "wasted"}
SMALL = ["--n", "96", "--workers", "4", "--no-progress"]


LINEAR_F = '''
def double(F, X):
    """A linear (so row-linear) f of degree 1."""
    return F.add(X, X)
'''


def run_cli(capsys, *args):
    """cli.main(["run", *args]): (exit status, stdout)."""
    status = cli.main(["run", *args])
    return status, capsys.readouterr().out


def table_rows(out) -> dict:
    """scheme -> the words of its row in the --compare table."""
    rows = {}
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["scheme", "total"])
    for line in lines[start + 1:]:
        words = line.split()
        if len(words) > 1 and re.fullmatch(r"x\d+", words[1]):    # "compfs x2": 2 shares
            words = [" ".join(words[:2])] + words[2:]
        if words and words[0].split()[0] in SCHEMES:
            rows[words[0]] = words
    return rows


def check_report(entry, scheme, needed, n_workers=4):
    assert set(entry) == REPORT_KEYS
    assert entry["schema"] == SCHEMA and entry["ffcode"] == ffcode.__version__
    assert set(entry["settings"]) == SETTINGS_KEYS and entry["settings"]["scheme"] == scheme
    assert entry["exact"] is True and entry["error"] is None
    assert entry["scheme"] == scheme and entry["n_workers"] == n_workers
    assert entry["needed"] == needed and entry["rank"] == needed and entry["used"] == needed
    assert entry["pieces"] == (1 if scheme in ("uncoded", "classic") else 4)
    assert len(entry["workers"]) == n_workers
    for i, worker in enumerate(entry["workers"]):
        assert set(worker) == WORKER_KEYS and worker["worker"] == i
    assert sum(w["used"] for w in entry["workers"]) == needed
    assert entry["total"] >= entry["compute"] >= 0


# -- --compare ---------------------------------------------------------------------------------


@pytest.mark.bounded(60)
@pytest.mark.parametrize("job, extra, needed", [
    ("matmul", [], {"uncoded": 4, "classic": 4, "systematic": 16, "cfs": 16, "compfs": 16}),
    ("matmul", ["--s", "2"], {"uncoded": 4, "classic": 3, "systematic": 12, "cfs": 12,
                              "compfs": 12}),
    ("matvec", ["--k", "3"], {"uncoded": 4, "classic": 3, "systematic": 12, "cfs": 12,
                              "compfs": 12}),
    ("matvec", ["--p", str(2**61 - 1), "--stragglers", "1"],
     {"uncoded": 4, "classic": 4, "systematic": 16, "cfs": 16, "compfs": 16}),
], ids=["matmul", "matdot", "matvec", "matvec p=2**61-1"])
def test_compare(bounded, capsys, tmp_path, job, extra, needed):
    """--compare runs every scheme, prints a table row each (exact: yes), 'run passed', and
    --report writes one JSON object {schema, ffcode, date, runs} with the five reports in
    order."""
    path = tmp_path / "report.json"
    status, out = run_cli(capsys, job, *SMALL, *extra, "--compare", "--report", str(path))
    assert status == 0, out
    rows = table_rows(out)
    assert list(rows) == SCHEMES
    for scheme, words in rows.items():
        assert "yes" in words and "NO" not in words and "failed" not in words, words
        assert words[5] == str(needed[scheme])          # used
    assert "workers ready at ipc://" in out
    assert f"report written to {path}" in out
    assert out.rstrip().endswith("run passed")
    data = json.loads(path.read_text())
    assert list(data) == ["schema", "ffcode", "date", "runs"] and data["schema"] == SCHEMA
    assert [d["scheme"] for d in data["runs"]] == SCHEMES
    for entry in data["runs"]:
        check_report(entry, entry["scheme"], needed[entry["scheme"]])
        assert entry["settings"]["p"] == (2**61 - 1 if "--p" in extra else 2**31 - 1)


@pytest.mark.bounded(90)
@pytest.mark.parametrize("extra, code, R", [
    (["--code", "entangled"], "EntangledPolynomialCode", 5),          # a = 2, b = 1, s = 2
    (["--code", "gasp", "--a", "2", "--b", "2"], "GASP", 8),          # t = 1: GASP_big
    (["--code", "gasp", "--t", "2"], "GASP", 7)])                     # a = 2, b = 1
def test_compare_entangled_and_gasp(bounded, capsys, tmp_path, extra, code, R):
    """--code entangled and --code gasp run every scheme exactly, R as the papers give."""
    path = tmp_path / "report.json"
    status, out = run_cli(capsys, "matmul", *SMALL, "--workers", "9", *extra, "--compare",
                          "--report", str(path))
    assert status == 0, out
    assert f"{code}(GF(2147483647), n_workers=9, recovery_threshold={R})" in out
    rows = table_rows(out)
    assert list(rows) == SCHEMES and all("yes" in words for words in rows.values())
    runs = json.loads(path.read_text())["runs"]
    needed = {"uncoded": 9, "classic": R}
    for entry in runs:
        check_report(entry, entry["scheme"], needed.get(entry["scheme"], 4 * R), n_workers=9)


@pytest.mark.bounded(90)
def test_compare_with_shares(bounded, capsys, tmp_path):
    """--compare --shares 2 runs every scheme with one share per worker, then classic and
    compfs with two (a code of 8 points on the 4 workers): every row exact, the reports
    saying which shares each worker held."""
    path = tmp_path / "report.json"
    status, out = run_cli(capsys, "matvec", *SMALL, "--k", "3", "--compare", "--shares", "2",
                          "--report", str(path))
    assert status == 0, out
    assert "classic, compfs with 2 shares per worker (8 points), allocated uniform" in out
    rows = table_rows(out)
    assert list(rows) == SCHEMES + ["classic x2", "compfs x2"]
    assert all("yes" in words for words in rows.values())
    runs = json.loads(path.read_text())["runs"]
    assert [r["scheme"] for r in runs] == SCHEMES + ["classic", "compfs"]
    for entry in runs[-2:]:
        check_report(entry, entry["scheme"], 3 if entry["scheme"] == "classic" else 12)
        assert entry["settings"]["assignment"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
        assert [w["shares"] for w in entry["workers"]] == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.bounded(60)
def test_lcc_shares_keep_the_privacy_of_t_workers(bounded, capsys, tmp_path):
    """lcc --t 1 --shares 2: the two-share code hides the data from any 2 shares (a
    worker's), so its R is (k + 2 - 1) * 2 + 1 = 7 (of 10 points), and no warning."""
    path = tmp_path / "report.json"
    status, out = run_cli(capsys, "lcc", *SMALL, "--workers", "5", "--scheme", "classic",
                          "--shares", "2", "--report", str(path))
    assert status == 0, out
    report = json.loads(path.read_text())
    assert "n_workers=10, recovery_threshold=7" in report["code"]
    assert [len(w["shares"]) for w in report["workers"]] == [2] * 5


@pytest.mark.bounded(60)
def test_one_scheme_with_shares_by_speed(bounded, capsys, tmp_path):
    """--shares 3 --allocate speed: a one-share job measures the speeds first, then the job
    runs with the slow worker holding fewer of the 12 shares."""
    path = tmp_path / "report.json"
    status, out = run_cli(capsys, "matmul", *SMALL, "--n", "512", "--stragglers", "1",
                          "--slowdown", "30", "--scheme", "compfs", "--shares", "3",
                          "--allocate", "speed", "--report", str(path))
    assert status == 0, out
    assert "measuring the workers' speeds with one share each first" in out
    assert "compfs with 3 shares per worker (12 points), allocated speed" in out
    assert out.count("output equals direct computation: yes") == 2
    report = json.loads(path.read_text())
    counts = [len(w["shares"]) for w in report["workers"]]
    assert sum(counts) == 12 and counts[3] < min(counts[:3])


@pytest.mark.bounded(60)
def test_compare_lcc_skips_compfs(bounded, capsys, tmp_path):
    """lcc --compare with f = square (not row-linear) runs every scheme but compfs, and says
    so."""
    path = tmp_path / "lcc.json"
    status, out = run_cli(capsys, "lcc", *SMALL, "--t", "0", "--compare", "--report", str(path))
    assert status == 0, out
    assert "f = ffcode.functions:square" in out
    assert "compfs left out: it needs a row-linear f" in out
    rows = table_rows(out)
    assert list(rows) == SCHEMES[:4]
    assert all("yes" in words for words in rows.values())
    assert "run passed" in out
    data = json.loads(path.read_text())["runs"]
    assert [d["scheme"] for d in data] == SCHEMES[:4]
    for entry in data:       # k = 2 blocks; R = (k + t - 1) * 2 + 1 = 3
        check_report(entry, entry["scheme"], {"uncoded": 2, "classic": 3}.get(
            entry["scheme"], 12))


@pytest.mark.bounded(60)
def test_compare_lcc_row_linear(bounded, capsys, tmp_path, monkeypatch):
    """lcc --row-linear with a linear f (degree 1, from a module on sys.path, which the local
    workers inherit) runs compfs too, exactly."""
    (tmp_path / "ffcode_test_linear_f.py").write_text(LINEAR_F)
    monkeypatch.syspath_prepend(str(tmp_path))
    status, out = run_cli(capsys, "lcc", *SMALL, "--row-linear", "--f",
                          "ffcode_test_linear_f:double", "--degree", "1", "--compare")
    assert status == 0, out
    rows = table_rows(out)
    assert list(rows) == SCHEMES
    assert all("yes" in words for words in rows.values())
    assert rows["compfs"][5] == "12"                    # R = (2 + 1 - 1) * 1 + 1 = 3, m = 4
    assert "run passed" in out


@pytest.mark.bounded(60)
@pytest.mark.parametrize("job", ["matmul", "matvec", "lcc"])
@pytest.mark.parametrize("compare", [[], ["--compare"]], ids=["one", "compare"])
def test_defaults_pass(bounded, capsys, job, compare):
    """Every job passes with its defaults (only a small --n): lcc's default f, the square, is
    not row-linear, so its default scheme is cfs (said so) and --compare leaves compfs out."""
    status, out = run_cli(capsys, job, "--n", "64", *compare)
    assert status == 0, out
    assert out.rstrip().endswith("run passed")
    if job == "lcc":
        assert ("compfs left out" if compare else "scheme cfs: the default compfs") in out
    elif not compare:
        assert "  compfs: " in out


@pytest.mark.bounded(60)
def test_verbose_logs_the_master(bounded, capsys):
    """-v shows the master's INFO lines ('ffcode run: info: ...', after the time) on stderr;
    without it stderr stays empty."""
    assert cli.main(["run", "matvec", *SMALL, "--k", "3"]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["-v", "run", "matvec", *SMALL, "--k", "3"]) == 0
    logged = [line.split(" ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert logged and all(line.startswith("ffcode run: info: ") for line in logged), logged
    assert any(line.startswith("ffcode run: info: job 1") for line in logged), logged


@pytest.mark.bounded(60)
def test_no_redundancy_warning(bounded, capsys):
    status = cli.main(["run", "matvec", *SMALL, "--k", "4", "--stragglers", "0"])
    captured = capsys.readouterr()
    assert status == 0, captured.out
    assert "ffcode run: warning: the code has no redundancy (N = R = 4): every worker is " \
           "needed" in captured.err.splitlines()


# -- one scheme ----------------------------------------------------------------------------------


@pytest.mark.bounded(60)
@pytest.mark.parametrize("job, scheme, needed", [("matmul", "cfs", 16),
                                                 ("matvec", "systematic", 16),
                                                 ("lcc", "classic", 3)])
def test_single_scheme(bounded, capsys, tmp_path, job, scheme, needed):
    """--scheme prints one summary line and the exactness check; --report writes one dict."""
    path = tmp_path / "one.json"
    extra = ["--t", "0"] if job == "lcc" else []
    status, out = run_cli(capsys, job, *SMALL, *extra, "--scheme", scheme, "--report", str(path))
    assert status == 0, out
    assert f"  {scheme}: " in out and f"packets used {needed}/{needed}" in out
    assert "output equals direct computation: yes" in out
    assert "scheme " not in out                         # no table
    assert out.rstrip().endswith("run passed")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    check_report(data, scheme, needed)


# -- injected faults ---------------------------------------------------------------------------


@pytest.mark.bounded(60)
def test_fault_flags(bounded, capsys, tmp_path):
    """--slow, --delay, --link and --crash parse, are described, and the job (MatDot, R = 3 of
    4 workers) is exact without the crashed worker."""
    path = tmp_path / "faults.json"
    status, out = run_cli(capsys, "matmul", *SMALL, "--s", "2", "--slow", "1:3", "--delay",
                          "0.01:0.01", "--link", "0:50", "--crash", "3:0", "--report",
                          str(path))
    assert status == 0, out
    injected = next(line for line in out.splitlines() if "injected:" in line)
    assert injected.split("injected: ")[1] == (
        "worker 1 3x slower; worker 2 8x slower; worker 3 8x slower; per-piece pause "
        "0.01 s + Exp(mean 0.01 s); worker 0 link 50 MB/s; worker 3 crashes after 0 packets")
    assert "output equals direct computation: yes" in out and "run passed" in out
    data = json.loads(path.read_text())
    check_report(data, "compfs", 12)
    assert data["workers"][3]["used"] == 0 and data["workers"][3]["packets"] == []
    assert [w["used"] for w in data["workers"][:3]] == [4, 4, 4]


@pytest.mark.bounded(60)
def test_loss_flags(bounded, capsys, tmp_path):
    """--loss (every link, or W:P) and --burst parse, are described and counted in the
    report, and the job is exact over the lossy links."""
    path = tmp_path / "loss.json"
    status, out = run_cli(capsys, "matmul", *SMALL, "--stragglers", "0", "--loss", "1:0.3",
                          "--loss", "2:0.5", "--burst", "2", "--report", str(path))
    assert status == 0, out
    injected = next(line for line in out.splitlines() if "injected:" in line)
    assert injected.split("injected: ")[1] == ("worker 1 link loses 30% in runs of 2; "
                                               "worker 2 link loses 50% in runs of 2")
    assert "output equals direct computation: yes" in out and "run passed" in out
    data = json.loads(path.read_text())
    assert data["settings"]["faults"]["loss"] == {"1": 0.3, "2": 0.5}
    assert data["workers"][0]["dropped"] == [0, 0] and data["workers"][0]["link_packets"] == 0
    status, out = run_cli(capsys, "matmul", *SMALL, "--stragglers", "0", "--loss", "0.2",
                          "--scheme", "classic")
    assert status == 0 and "every link loses 20%" in out and "run passed" in out


@pytest.mark.bounded(90)
def test_repair_flag(bounded, capsys):
    """--repair sparse runs cfs's sparse repairs over lossy links, exact; with --compare
    the schemes that cannot take them run dense; a scheme that cannot is refused, and a
    value that is none."""
    status, out = run_cli(capsys, "matmul", *SMALL, "--stragglers", "0", "--loss", "0.3",
                          "--scheme", "cfs", "--repair", "sparse")
    assert status == 0 and "output equals direct computation: yes" in out, out
    status, out = run_cli(capsys, "matmul", *SMALL, "--stragglers", "0", "--loss", "0.2",
                          "--compare", "--repair", "sparse")
    assert status == 0 and "run passed" in out, out
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "matmul", *SMALL, "--loss", "0.2", "--scheme", "compfs",
                  "--repair", "sparse"])
    assert exit_.value.code == 2
    assert "fixed when its data was encoded" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "matmul", *SMALL, "--repair", "bats"])
    assert "invalid choice: 'bats'" in capsys.readouterr().err


@pytest.mark.bounded(90)
def test_groups_behind_relays(bounded, capsys, tmp_path):
    """--groups 2: two relays of three workers forward the MDS job's packets, exact in
    every coded scheme; the faults still name the six workers (worker 4 crashes in every
    job: a worker of group 1, which the code absorbs, but uncoded needs its slice), and
    the report has the two relays with their groups' notes."""
    path = tmp_path / "groups.json"
    status, out = run_cli(capsys, "matvec", "--n", "48", "--workers", "6", "--k", "2",
                          "--groups", "2", "--stragglers", "0", "--crash", "4:0",
                          "--compare", "--report", str(path))
    assert status == 1 and "uncoded: FAILED" in out, out
    assert "2 relays, each forwarding what adds rank of 3 workers' packets" in out
    for run in json.loads(path.read_text())["runs"][1:]:
        assert run["exact"] and len(run["workers"]) == 2, run["scheme"]
        assert any(relay["group"] for relay in run["workers"]), run["scheme"]
    for bad, error in ((["--groups", "4"], "do not split into --groups 4"),
                       (["--groups", "2", "--shares", "2", "--allocate", "speed"],
                        "measures the relays")):
        with pytest.raises(SystemExit) as e:
            cli.main(["run", "matvec", "--workers", "6", *bad])
        assert e.value.code == 2 and error in capsys.readouterr().err


@pytest.mark.bounded(60)
def test_crash_fails_uncoded_only(bounded, capsys, tmp_path):
    """With worker 3 crashing in every job, --compare fails uncoded (naming worker 3) and the
    coded schemes (R = 3) still decode exactly on a replaced worker pool: status 1. The
    report keeps the failed run, with its error and exact null."""
    path = tmp_path / "r.json"
    status, out = run_cli(capsys, "matvec", *SMALL, "--k", "3", "--stragglers", "0",
                          "--crash", "3:0", "--compare", "--report", str(path))
    runs = json.loads(path.read_text())["runs"]
    assert [r["scheme"] for r in runs] == SCHEMES
    assert runs[0]["exact"] is None and runs[0]["error"].startswith("results 3/4")
    assert all(r["exact"] is True and r["error"] is None for r in runs[1:])
    assert status == 1
    assert "uncoded: FAILED: results 3/4" in out and "worker 3 lost" in out
    rows = table_rows(out)
    assert rows["uncoded"][1] == "failed"
    for scheme in SCHEMES[1:]:
        assert "yes" in rows[scheme], rows[scheme]
        assert rows[scheme][-1] == "0]"                 # worker 3 used nothing
    assert out.rstrip().endswith("run FAILED")


@pytest.mark.bounded(60)
def test_hang_flag(bounded, capsys):
    """--hang freezes a worker (SIGSTOP) after its first packet; the job completes exactly
    from the other three, and closing the cluster kills the frozen process too."""
    status, out = run_cli(capsys, "matvec", *SMALL, "--k", "3", "--hang", "3:1",
                          "--scheme", "compfs")
    assert status == 0, out
    assert "worker 3 hangs after 1 packets" in out
    assert "output equals direct computation: yes" in out


@pytest.mark.bounded(60)
def test_adversaries_flag(bounded, capsys):
    """--adversaries 1 with a malicious worker: every coded scheme of --compare (uncoded
    cannot correct, so it is left out) decodes exactly, and names the worker whenever its
    result arrived before the output was decided (test_runtime_byzantine pins that)."""
    status, out = run_cli(capsys, "matvec", *SMALL, "--workers", "5", "--k", "3",
                          "--corrupt", "1:random", "--adversaries", "1", "--compare")
    assert status == 0, out
    assert "correcting up to 1 wrong workers" in out
    rows = table_rows(out)
    assert sorted(rows) == sorted(SCHEMES[1:])
    for scheme in SCHEMES[1:]:
        words = rows[scheme]
        assert "yes" in words, words
        assert "wrong:" not in words or words[-2:] == ["wrong:", "[1]"], words


@pytest.mark.bounded(60)
def test_unwritable_report_path(bounded, capsys, tmp_path):
    """An unwritable --report path is refused before any worker starts, and no file made."""
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "matvec", *SMALL, "--stragglers", "0", "--report",
                  str(tmp_path / "missing" / "report.json")])
    assert e.value.code == 2
    assert "cannot write the report to" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


# -- Ctrl-C --------------------------------------------------------------------------------------


def ffcode_command(*args):
    return [sys.executable, "-m", "ffcode", *args]


def subprocess_env():
    return dict(os.environ, PYTHONUNBUFFERED="1", OPENBLAS_NUM_THREADS="1")


def start_compare(tmp_path):
    """'ffcode -v run matvec --compare' in a subprocess whose every piece of work is followed
    by a 60 s pause, once the master has logged that its first job is under way: (the
    process, the pids below it then). The job is still running when the test signals."""
    proc = subprocess.Popen(ffcode_command("-v", "run", "matvec", "--n", "64", "--workers",
                                           "4", "--stragglers", "0", "--delay", "60:0",
                                           "--compare", "--no-progress"),
                            cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_ctrl_c)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "ffcode run: info: job 1:" in line:
            break
    assert any("ffcode run: info: job 1:" in line for line in seen), (seen, proc.stdout.read())
    below = descendants(proc.pid)
    assert len(below) >= 5, below                       # the fork server and 4 workers
    return proc, below


def all_gone(below, within=5.0) -> list:
    """The pids of below still alive after waiting up to `within` seconds."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in below if alive(pid)]


def close(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    proc.stdout.close()
    proc.stderr.close()


@pytest.mark.bounded(60)
def test_compare_rows_arrive_as_jobs_end(bounded, tmp_path):
    """On a pipe (no PYTHONUNBUFFERED), --compare's rows arrive as the jobs end: systematic's
    row comes a second or more after classic's, since its job, started after classic's
    row, pauses 1 s after every piece of work (4 pieces a worker) before it can end."""
    env = {k: v for k, v in subprocess_env().items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(ffcode_command("run", "matvec", "--n", "64", "--workers", "4",
                                           "--stragglers", "0", "--delay", "1:0",
                                           "--compare", "--no-progress"),
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_ctrl_c)
    try:
        lines, arrived = [], {}
        for line in proc.stdout:
            lines.append(line)
            arrived[line.split()[0] if line.split() else ""] = time.monotonic()
            if "systematic" in arrived:
                break
        rows = table_rows("".join(lines))
        assert list(rows) == ["uncoded", "classic", "systematic"], lines
        assert rows["classic"][2] == "1.00x" and re.fullmatch(r"\d+\.\d\dx",
                                                              rows["uncoded"][2]), rows
        assert arrived["systematic"] - arrived["classic"] >= 1.0, arrived
        below = descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
        assert all_gone(below) == []
    finally:
        close(proc)


@pytest.mark.bounded(60)
def test_ctrl_c(bounded, tmp_path):
    """SIGINT to 'ffcode run ... --compare' during its first job: it exits with status 130,
    unfinished, saying it was interrupted, and the fork server and every worker below it
    are gone."""
    proc, below = start_compare(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
        assert "run passed" not in proc.stdout.read()
        assert "ffcode run: interrupted" in proc.stderr.read().splitlines()
        assert all_gone(below) == []
    finally:
        close(proc)


@pytest.mark.bounded(60)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_master_killed(bounded, tmp_path, sig):
    """A master that dies without any cleanup of its own (SIGTERM, SIGKILL) takes its local
    workers along: the fork server sees its stdin close and kills its process group."""
    proc, below = start_compare(tmp_path)
    try:
        proc.send_signal(sig)
        assert proc.wait(10) == -sig
        assert all_gone(below) == []
    finally:
        close(proc)


# -- ffcode worker ---------------------------------------------------------------------------


@pytest.mark.bounded(60)
def test_worker_command_serves_cluster(bounded, tmp_path):
    """Two 'ffcode worker --connect' processes serve a tcp Cluster on loopback: jobs are exact,
    and both workers exit with status 0 once the cluster closes. The one started with -v logs
    its connection, each job's start and end, and its exit; the other prints nothing."""
    F = ffcode.GF(2**31 - 1)
    A, B = F.random((64, 40), seed=1), F.random((40, 24), seed=2)
    x = F.random(40, seed=3)
    procs = []
    try:
        with Cluster(endpoint="tcp://127.0.0.1:*", n_workers=2, start_timeout=30,
                     insecure=True) as cluster:
            assert cluster.endpoint.startswith("tcp://127.0.0.1:")
            procs = [subprocess.Popen(ffcode_command(*verbose, "worker", "--connect",
                                                     cluster.endpoint),
                                      cwd=tmp_path, env=subprocess_env(),
                                      stderr=subprocess.PIPE, text=True)
                     for verbose in (["-v"], [])]
            handles = cluster.wait(timeout=30)
            assert sorted(h.pid for h in handles) == sorted(p.pid for p in procs)
            output, report = cluster.run(PolynomialCode(F, 2, 1, 2), A, B, pieces=2, seed=1,
                                         timeout=30)
            assert np.array_equal(output, F.matmul(A, B))
            assert report.used == report.needed == 4
            output, report = cluster.run(MDS(F, 2, 2), A, x, scheme="cfs", pieces=3,
                                         timeout=30)
            assert np.array_equal(output, F.matmul(A, x))
        for proc in procs:
            assert proc.wait(10) == 0
        logged = [line.split(" ", 1)[1] for line in procs[0].stderr.read().splitlines()]
        assert logged[:2] == [f"ffcode worker: info: connecting to {cluster.endpoint} "
                              f"(giving up after 60 s)",
                              f"ffcode worker: info: connected to the master at "
                              f"{cluster.endpoint}"]
        for epoch, op, pieces, scheme in [(1, "ffcode.functions:matmul", 2, "compfs"),
                                         (2, "ffcode.functions:matmul", 3, "cfs")]:
            assert f"ffcode worker: info: job {epoch} started: {op} in GF({F.p}), 1 share " \
                   f"of {pieces} pieces, by {scheme}" in logged
            assert any(line.startswith(f"ffcode worker: info: job {epoch} ") and (
                "stopped after" in line or "done:" in line) for line in logged), logged
        assert logged[-1] == "ffcode worker: info: the master said shut down: exiting"
        assert procs[1].stderr.read() == ""
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.bounded(30)
def test_worker_gives_up_without_a_master(bounded, tmp_path):
    """'ffcode worker --connect' to a port where no master listens: a warning after 5 s (it
    says what it waits for), then after --timeout one error line and status 2."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    start = time.monotonic()
    proc = subprocess.run(ffcode_command("worker", "--connect", endpoint, "--timeout", "6"),
                          cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                          timeout=25)
    assert 6 <= time.monotonic() - start < 20
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"ffcode worker: warning: no master at {endpoint} yet; still trying for 1 s",
        f"ffcode worker: error: no master answered at {endpoint} within 6 s (is 'ffcode run "
        f"... --endpoint' listening there?)"]


# -- a tcp master ----------------------------------------------------------------------------


@pytest.mark.bounded(60)
def test_master_waits_with_a_bound(bounded, capsys):
    """A tcp master says at once what it waits for and the command a worker needs, and after
    --start-timeout fails with one error line, status 2."""
    status = cli.main(["run", "matvec", *SMALL, "--endpoint", "tcp://127.0.0.1:*",
                       "--insecure", "--start-timeout", "1"])
    assert status == 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    waiting = next(i for i, line in enumerate(lines) if "waiting for" in line)
    endpoint = lines[waiting].split(" at ")[1].split()[0]
    assert endpoint.startswith("tcp://127.0.0.1:") and endpoint[-1].isdigit()
    assert lines[waiting] == f"  waiting for 4 workers at {endpoint} (up to 1 s); start " \
                             f"each with:"
    assert lines[waiting + 1] == f"    ffcode worker --connect {endpoint}"
    assert captured.err.splitlines()[-1] == (
        f"ffcode run: error: Only 0 of 4 workers connected to {endpoint} within 1 s. Wait "
        f"longer with --start-timeout S.")
    assert "Traceback" not in captured.err


@pytest.mark.bounded(30)
def test_port_in_use(bounded, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = cli.main(["run", "matvec", *SMALL, "--k", "3", "--endpoint",
                           f"tcp://127.0.0.1:{port}", "--insecure"])
    assert status == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(
        f"ffcode run: error: Cannot listen on tcp://127.0.0.1:{port}: Address already in "
        f"use"), err


@pytest.mark.bounded(90)
def test_remote_run_with_its_key_directory(bounded, tmp_path):
    """'ffcode run --endpoint tcp://127.0.0.1:*' without keys makes ./ffcode-keys, prints the
    one command a worker needs; two workers started with it (CURVE) serve the job, which
    passes; the report says the run's settings."""
    master = subprocess.Popen(ffcode_command("run", "matvec", "--n", "64", "--workers", "2",
                                             "--k", "1", "--stragglers", "0", "--no-progress",
                                             "--endpoint", "tcp://127.0.0.1:*",
                                             "--start-timeout", "40", "--report", "r.json"),
                              cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    workers, seen = [], []
    try:
        for line in master.stdout:
            seen.append(line)
            if line.startswith("    ffcode worker --connect"):
                break
        assert any("CURVE keys made in ffcode-keys/" in line for line in seen), seen
        command = seen[-1].split()
        assert command[4:] == ["--key", "ffcode-keys/worker.key_secret", "--server-key",
                               "ffcode-keys/master.key"]
        assert stat.S_IMODE(os.stat(tmp_path / "ffcode-keys/master.key_secret").st_mode) \
            == 0o600
        workers = [subprocess.Popen(ffcode_command(*command[1:]), cwd=tmp_path,
                                    env=subprocess_env(), stderr=subprocess.PIPE, text=True)
                   for _ in range(2)]
        out = master.stdout.read()
        assert master.wait(30) == 0, (seen, out, master.stderr.read())
        assert "output equals direct computation: yes" in out and "run passed" in out
        for worker in workers:
            assert worker.wait(10) == 0
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["settings"]["scheme"] == "compfs" and report["settings"]["p"] == 2**31 - 1
    finally:
        for proc in workers + [master]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        close(master)
        for worker in workers:
            worker.stderr.close()


@pytest.mark.bounded(90)
def test_jobs_in_flight(bounded, capsys, tmp_path):
    """--jobs T: T jobs one at a time, then in flight together, each job's line exact,
    both totals, and a report with a run per job; --jobs with --compare is refused."""
    path = tmp_path / "jobs.json"
    status, out = run_cli(capsys, "matvec", "--n", "120", "--workers", "4", "--stragglers",
                          "1", "--jobs", "3", "--no-progress", "--report", str(path))
    assert status == 0, out
    assert out.count("exact: yes") == 3 and "3 jobs in flight together" in out
    data = json.loads(path.read_text())
    assert [run["job"] for run in data["runs"]] != [] and len(data["runs"]) == 3
    assert all(run["exact"] for run in data["runs"])
    with pytest.raises(SystemExit):
        cli.main(["run", "matvec", "--jobs", "2", "--compare"])
    assert "--jobs runs one scheme" in capsys.readouterr().err
