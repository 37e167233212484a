"""``ffcode run`` and ``ffcode worker`` end to end: every scheme's table and report, the
injected-fault flags, argument errors (status 2), Ctrl-C with no process left behind, and
workers started from the command line serving a Cluster."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import ffcode
from ffcode import MDS, PolynomialCode, cli, runs
from ffcode.runtime import Cluster

from helpers import descendants

SCHEMES = ["uncoded", "classic", "systematic", "cfs", "compfs"]
REPORT_KEYS = {"scheme", "code", "n_workers", "pieces", "needed", "rank", "encode", "compute",
               "decode", "total", "verify", "verified", "wrong", "stop_latency", "quiet",
               "wasted_after_stop", "stale",
               "rejected", "workers", "received", "used", "wasted", "exact"}
WORKER_KEYS = {"worker", "host", "pid", "share_sent", "packets", "compute", "done", "stopped",
               "lost", "used", "wasted"}
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
        if words and words[0] in SCHEMES:
            rows[words[0]] = words
    return rows


def check_report(entry, scheme, needed, n_workers=4):
    assert set(entry) == REPORT_KEYS
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
    --report writes a JSON list of the five reports in order."""
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
    assert isinstance(data, list) and [d["scheme"] for d in data] == SCHEMES
    for entry in data:
        check_report(entry, entry["scheme"], needed[entry["scheme"]])


@pytest.mark.bounded(60)
def test_compare_lcc_skips_compfs(bounded, capsys, tmp_path):
    """lcc --compare with f = square (not row-linear) runs every scheme but compfs."""
    path = tmp_path / "lcc.json"
    status, out = run_cli(capsys, "lcc", *SMALL, "--t", "0", "--compare", "--report", str(path))
    assert status == 0, out
    assert "f = ffcode.functions:square" in out
    rows = table_rows(out)
    assert list(rows) == SCHEMES[:4]
    assert all("yes" in words for words in rows.values())
    assert "run passed" in out
    data = json.loads(path.read_text())
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
def test_row_linear_claim_for_square_is_caught(bounded, capsys):
    """--row-linear with f = square (not linear) makes compfs decode a wrong output: the
    runtime's verification refuses it (it never reaches the user) and the run fails with
    status 1."""
    status, out = run_cli(capsys, "lcc", *SMALL, "--t", "0", "--row-linear", "--scheme",
                          "compfs")
    assert status == 1
    assert "compfs: FAILED: The decoded output failed its check" in out
    assert out.rstrip().endswith("run FAILED")


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
        "worker 1 3x slower; worker 2 4x slower; worker 3 4x slower; per-piece pause "
        "0.01 s + Exp(mean 0.01 s); worker 0 link 50 MB/s; worker 3 crashes after 0 packets")
    assert "output equals direct computation: yes" in out and "run passed" in out
    data = json.loads(path.read_text())
    check_report(data, "compfs", 12)
    assert data["workers"][3]["used"] == 0 and data["workers"][3]["packets"] == []
    assert [w["used"] for w in data["workers"][:3]] == [4, 4, 4]


@pytest.mark.bounded(60)
def test_crash_fails_uncoded_only(bounded, capsys):
    """With worker 3 crashing in every job, --compare fails uncoded (naming worker 3) and the
    coded schemes (R = 3) still decode exactly on a replaced worker pool: status 1."""
    status, out = run_cli(capsys, "matvec", *SMALL, "--k", "3", "--stragglers", "0",
                          "--crash", "3:0", "--compare")
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


# -- argument errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--slow", "x"], "--slow wants W:VALUE, not 'x'"),
    (["--slow", "1"], "--slow wants W:VALUE, not '1'"),
    (["--slow", "1:0.5"], "slowdown"),
    (["--crash", "2:x"], "--crash wants W:VALUE, not '2:x'"),
    (["--hang", "a:1"], "--hang wants W:VALUE"),
    (["--link", "0:0"], "link_rate"),
    (["--delay", "a:b"], "--delay wants SHIFT:MEAN seconds, not 'a:b'"),
    (["--delay", "-1:0"], "delay"),
    (["--workers", "0"], "--n and --workers must be at least 1"),
    (["--n", "0"], "--n and --workers must be at least 1"),
    (["--p", "91"], "prime"),
    (["--scheme", "fast"], "invalid choice: 'fast'"),
    (["--n", "ten"], "invalid int value: 'ten'"),
    (["--adversaries", "-1"], "non-negative"),
])
def test_bad_flags_exit_2(capsys, args, message):
    """Malformed flags are refused before any process starts: status 2, the problem named."""
    before = descendants()
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "matvec", "--n", "32", "--workers", "4", "--no-progress", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "usage: ffcode" in err and message in err, err
    assert descendants() == before


@pytest.mark.bounded(60)
def test_fault_beyond_workers_exit_2(bounded, capsys):
    """--link 9:5 with 4 workers is refused (status 2, naming worker 9 and the range)."""
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "matvec", *SMALL, "--link", "9:5"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "names workers [9], but the job has workers 0..3" in err


def parse_run(*args):
    """The Namespace 'ffcode run' parses from args (nothing runs)."""
    parser = argparse.ArgumentParser()
    runs.add_arguments(parser)
    return parser.parse_args(list(args))


def test_k_given_is_used():
    """--k sets the code's k for matvec and lcc; without it, 4 and 2."""
    for job, k, R in [("matvec", None, 4), ("matvec", 3, 3), ("lcc", None, 5), ("lcc", 3, 7)]:
        extra = [] if k is None else ["--k", str(k)]
        code, inputs, expected, what = runs.job_from(parse_run(job, "--n", "8", "--workers",
                                                               "8", *extra))
        assert code.recovery_threshold == R, (job, k)


@pytest.mark.parametrize("job", ["matvec", "lcc"])
def test_k_zero_is_refused(job):
    with pytest.raises(ValueError):
        runs.job_from(parse_run(job, "--n", "8", "--workers", "8", "--k", "0"))


def test_too_many_stragglers_named(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "matvec", "--n", "32", "--workers", "4", "--no-progress",
                  "--stragglers", "5"])
    assert e.value.code == 2
    assert "--stragglers" in capsys.readouterr().err


@pytest.mark.bounded(60)
def test_unwritable_report_path(bounded, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "matvec", *SMALL, "--stragglers", "0", "--report",
                  str(tmp_path / "missing" / "report.json")])
    assert e.value.code == 2


# -- Ctrl-C --------------------------------------------------------------------------------------


def alive(pid) -> bool:
    """True while pid is a process that is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ffcode_command(*args):
    return [sys.executable, "-m", "ffcode", *args]


def subprocess_env():
    return dict(os.environ, PYTHONUNBUFFERED="1", OPENBLAS_NUM_THREADS="1")


def start_compare(tmp_path):
    """'ffcode run matmul --n 512 --workers 4 --compare' in a subprocess, once it has printed
    'workers ready': (the process, the pids below it then)."""
    proc = subprocess.Popen(ffcode_command("run", "matmul", "--n", "512", "--workers", "4",
                                           "--compare", "--no-progress"),
                            cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "workers ready" in line:
            break
    assert any("workers ready" in line for line in seen), (seen, proc.stderr.read())
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
def test_ctrl_c(bounded, tmp_path):
    """SIGINT to 'ffcode run ... --compare' once its workers are up: it exits within a few
    seconds, unfinished, and the fork server and every worker below it are gone."""
    proc, below = start_compare(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        proc.wait(10)
        assert time.monotonic() - start < 5
        assert proc.returncode != 0
        assert "run passed" not in proc.stdout.read()
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
    and both workers exit with status 0 once the cluster closes."""
    F = ffcode.GF(2**31 - 1)
    A, B = F.random((64, 40), seed=1), F.random((40, 24), seed=2)
    x = F.random(40, seed=3)
    procs = []
    try:
        with Cluster(endpoint="tcp://127.0.0.1:*", n_workers=2, start_timeout=30) as cluster:
            assert cluster.endpoint.startswith("tcp://127.0.0.1:")
            procs = [subprocess.Popen(ffcode_command("worker", "--connect", cluster.endpoint),
                                      cwd=tmp_path, env=subprocess_env(),
                                      stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
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
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()


def test_worker_key_without_server_key():
    """'ffcode worker' refuses --key without --server-key before connecting anywhere."""
    with pytest.raises(SystemExit) as e:
        cli.main(["worker", "--connect", "tcp://127.0.0.1:9", "--key", "x.key_secret"])
    assert "--key and --server-key go together" in str(e.value.code)


def test_worker_needs_connect(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["worker"])
    assert e.value.code == 2
    assert "--connect" in capsys.readouterr().err
