"""The command line without workers: --version, help, integer expressions, flags refused
before anything starts (the command's usage and one 'ffcode run: error:' line, status 2),
the key directory of a tcp master, 'ffcode keys', and logging set up by the command line
only."""
import argparse
import logging
import os
import socket
import stat

import pytest
import zmq.auth

import ffcode
from ffcode import logs
from ffcode.cli import args as types, commands as cli
from ffcode.cli import run as runs
from ffcode.schemes import NAMES

from helpers import descendants


def fails(capsys, argv, message, prog=None):
    """cli.main(argv) exits with status 2 (argparse's error, or returned) having printed
    nothing on stdout: stderr's last line is '<prog>: error: ...' holding message, prog
    'ffcode' and the command ('ffcode run'); before it, if anything, the command's usage
    (a mistake in the flags; none for a problem elsewhere), and no traceback. No process
    was started."""
    prog = prog or "ffcode " + next(arg for arg in argv if not arg.startswith("-"))
    before = descendants()
    try:
        status = cli.main(argv)
    except SystemExit as e:
        status = e.code
    assert status == 2
    captured = capsys.readouterr()
    err = captured.err
    assert captured.out == "", captured.out
    last = err.rstrip().splitlines()[-1]
    assert last.startswith(f"{prog}: error: ") and message in last, err
    assert err == last + "\n" or err.startswith(f"usage: {prog} "), err
    assert "Traceback" not in err
    assert descendants() == before
    return err


def parse_run(*args):
    """The settled Namespace 'ffcode run' parses from args (nothing runs)."""
    parser = argparse.ArgumentParser()
    runs.add_arguments(parser)
    return runs.settle(parser.parse_args(list(args)))


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"ffcode {ffcode.__version__}"


def test_every_flag_says_its_default():
    """Each optional flag of every command has help text that names its default."""
    parser, commands = cli.build()
    missing = []
    for name, sub in [("ffcode", parser)] + sorted(commands.items()):
        for action in sub._actions:
            if action.option_strings and not action.required and \
                    action.help != argparse.SUPPRESS and not isinstance(
                    action, (argparse._HelpAction, argparse._VersionAction)):
                text = cli.HelpFormatter(name)._get_help_string(action)
                if "default" not in text:
                    missing.append((name, action.option_strings[0]))
    assert missing == []


@pytest.mark.parametrize("text, value", [("65521", 65521), ("2**61-1", 2**61 - 1),
                                         ("2**31 - 1", 2**31 - 1), (" 7 ", 7), ("-3+10", 7),
                                         ("2**10+2**3-1", 1031), ("0", 0)])
def test_int_expression(text, value):
    assert types.int_expression(text) == value


@pytest.mark.parametrize("text", ["", "2*3", "1e5", "0x10", "2**", "--5", "2 3", "2**3**2",
                                  "2**5000", "abs(1)", "__import__('os')", "1-"])
def test_int_expression_refuses(text):
    with pytest.raises(argparse.ArgumentTypeError):
        types.int_expression(text)


def test_p_as_an_expression():
    """--p 2**61-1 is accepted, as the help says, by run and demo."""
    assert parse_run("matvec", "--p", "2**61-1").p == 2**61 - 1
    parser, _ = cli.build()
    assert parser.parse_args(["demo", "--p", "2**31 - 1"]).p == 2**31 - 1


def test_verbose_before_or_after_the_command():
    parser, _ = cli.build()
    assert parser.parse_args(["-v", "keys", "d", "n"]).verbose is True
    assert parser.parse_args(["keys", "-v", "d", "n"]).verbose is True
    assert parser.parse_args(["keys", "d", "n"]).verbose is False


@pytest.mark.parametrize("args, message", [
    (["--pieces", "0"], "argument --pieces: must be at least 1, not 0"),
    (["--n", "0"], "argument --n: must be at least 1, not 0"),
    (["--workers", "0"], "argument --workers: must be at least 1, not 0"),
    (["--seed", "-1"], "argument --seed: must be at least 0, not -1"),
    (["--k", "0"], "argument --k: must be at least 1"),
    (["--stragglers", "-1"], "argument --stragglers: must be at least 0"),
    (["--adversaries", "-1"], "argument --adversaries: must be at least 0"),
    (["--timeout", "0"], "argument --timeout: must be a positive number of seconds"),
    (["--start-timeout", "x"], "argument --start-timeout: not a number of seconds"),
    (["--n", "ten"], "argument --n: not an integer like 65521 or 2**61-1: 'ten'"),
    (["--p", "91"], "prime"),
    (["--scheme", "fast"], "invalid choice: 'fast'"),
    (["--slow", "x"], "--slow wants W:VALUE, not 'x'"),
    (["--slow", "1:0.5"], "slowdown"),
    (["--crash", "2:x"], "--crash wants W:VALUE, not '2:x'"),
    (["--hang", "a:1"], "--hang wants W:VALUE"),
    (["--link", "0:0"], "link_rate"),
    (["--delay", "a:b"], "--delay wants SHIFT:MEAN seconds, not 'a:b'"),
    (["--delay", "-1:0"], "delay"),
    (["--link", "9:5"], "names workers [9], but the job has workers 0..3"),
    (["--loss", "1:1.5"], "Faults 'loss' must be a probability in [0, 1], not 1.5"),
    (["--loss", "1"], "Faults 'loss' for every worker must be below 1"),
    (["--loss", "x"], "--loss wants P or W:P, not 'x'"),
    (["--loss", "0.1", "--loss", "1:0.2"], "--loss wants one P for every worker, or W:P"),
    (["--loss", "0.2", "--burst", "0.5"], "Faults 'burst' must be a mean run of losses >= 1"),
    (["--loss", "7:0.2"], "names workers [7], but the job has workers 0..3"),
    (["--stragglers", "5"], "--stragglers must be between 0 and --workers (4)"),
])
def test_bad_numbers_refused(capsys, args, message):
    """Malformed or out-of-range values are refused before any process starts."""
    fails(capsys, ["run", "matvec", "--n", "32", "--workers", "4", *args], message)


@pytest.mark.parametrize("job, args, message", [
    ("matvec", ["--a", "2"], "--a is for matmul, not matvec"),
    ("matvec", ["--s", "2"], "--s is for matmul, not matvec"),
    ("matmul", ["--k", "3"], "--k is for matvec and lcc, not matmul"),
    ("lcc", ["--s", "2"], "--s is for matmul, not lcc"),
    ("lcc", ["--b", "2"], "--b is for matmul, not lcc"),
    ("matmul", ["--t", "1"], "--t is not for --code polynomial, which takes --a and --b"),
    ("matmul", ["--code", "gasp", "--s", "2"], "--s is not for --code gasp, which takes --a "
                                               "and --b and --t"),
    ("matmul", ["--code", "entangled", "--t", "1"], "--t is not for --code entangled"),
    ("matvec", ["--code", "gasp"], "--code is for matmul, not matvec"),
    ("matmul", ["--code", "gasp", "--t", "0"], "Argument 't' must be at least 1, not 0"),
    ("matmul", ["--code", "gasp", "--a", "2", "--b", "2", "--workers", "7"],
     "--workers 7 is fewer than the code's recovery threshold R = 8 (from --a, --b and --t)"),
    ("matmul", ["--code", "entangled", "--b", "2"], "--workers 6 is fewer than the code's "
                                                   "recovery threshold R = 9 (from --a, --b "
                                                   "and --s)"),
    ("matvec", ["--f", "ffcode.functions:cube"], "--f is for lcc, not matvec"),
    ("matvec", ["--degree", "3"], "--degree is for lcc, not matvec"),
    ("matmul", ["--row-linear"], "--row-linear is for lcc, not matmul"),
    ("matmul", ["--s", "2", "--a", "2"], "--a is not for --code matdot, which takes --s"),
    ("matvec", ["--compare", "--scheme", "cfs"], "--compare runs every scheme: leave out "
                                                 "--scheme"),
    ("matvec", ["--scheme", "classic", "--pieces", "2"], "--pieces is for systematic, cfs "
                                                         "and compfs"),
    ("matvec", ["--stragglers", "0", "--slowdown", "3"], "--slowdown is the stragglers' "
                                                         "factor"),
    ("matvec", ["--scheme", "uncoded", "--adversaries", "1"], "--adversaries needs "
                                                              "redundancy"),
    ("matvec", ["--adversaries", "2"], "--adversaries 2 needs R + 2A = 8 workers"),
    ("matvec", ["--allocate", "speed"], "--allocate speed shares out --shares W per worker on "
                                        "average: give --shares 2 or more"),
    ("matvec", ["--shares", "0"], "argument --shares: must be at least 1, not 0"),
    ("matvec", ["--key", "k"], "--key is for --endpoint"),
    ("matvec", ["--insecure"], "--insecure is for --endpoint"),
    ("matvec", ["--keys", "d"], "--keys is for --endpoint"),
    ("matvec", ["--address", "127.0.0.1:6379"], "--address is the Ray cluster's: it needs "
                                                "--engine ray"),
    ("matvec", ["--engine", "ray", "--key", "k"], "--key is not for --engine ray: it makes "
                                                  "fresh CURVE keys"),
    ("matvec", ["--engine", "ray", "--keys", "d"], "--keys is not for --engine ray"),
    ("matvec", ["--endpoint", "127.0.0.1:5555"], "--endpoint must look like tcp://HOST:PORT"),
    ("matvec", ["--endpoint", "tcp://127.0.0.1:5555", "--key", "k"], "--key and --clients "
                                                                      "go together"),
    ("matvec", ["--endpoint", "tcp://127.0.0.1:5555", "--insecure", "--keys", "d"],
     "--insecure is instead of CURVE keys"),
    ("matvec", ["--endpoint", "tcp://127.0.0.1:5555", "--keys", "d", "--key", "k",
                "--clients", "c"], "--keys names a key directory instead"),
    ("matvec", ["--n", "10000000"], "not enough memory for these sizes: try smaller ones"),
    ("lcc", ["--workers", "4"], "--workers 4 is fewer than the code's recovery threshold R "
                                "= 5 (from --k, --t and --degree)"),
    ("matvec", ["--workers", "3"], "--workers 3 is fewer than the code's recovery threshold "
                                   "R = 4 (from --k)"),
    ("matmul", ["--s", "3", "--workers", "4"], "R = 5 (from --s): give at least 5 workers"),
    ("matmul", ["--a", "3", "--workers", "4"], "R = 6 (from --a and --b)"),
    ("lcc", ["--f", "nowhere:f"], "Cannot import 'nowhere:f'"),
])
def test_flags_refused(capsys, tmp_path, monkeypatch, job, args, message):
    """A flag the job would ignore, or a contradiction, is one error line: nothing starts and
    no key directory is made."""
    monkeypatch.chdir(tmp_path)
    fails(capsys, ["run", job, "--n", "32", "--no-progress", *args], message)
    assert os.listdir(tmp_path) == []


def test_lcc_compfs_advice_is_the_cli_flag(capsys):
    """--scheme compfs with the default f (not row-linear) names the flag --row-linear, not
    Python's row_linear=True, and says what row-linear means."""
    err = fails(capsys, ["run", "lcc", "--n", "32", "--scheme", "compfs"],
                "--scheme compfs needs a row-linear f (linear in the rows: f(G @ X) = "
                "G @ f(X)")
    assert "pass --row-linear if it is, or use --scheme cfs" in err
    assert "row_linear=True" not in err and "depends only" not in err


def test_row_linear_claim_for_square_refused(capsys):
    """--row-linear with f = square is tested on random data and refused before any worker
    starts (before, compfs ran and the output check blamed the workers)."""
    err = fails(capsys, ["run", "lcc", "--n", "32", "--row-linear"],
                "--row-linear: f = ffcode.functions:square is not row-linear: f(G @ X) != "
                "G @ f(X)")
    assert "Leave out --row-linear." in err


def test_defaults_depend_on_the_job():
    """--k is 4 for matvec and 2 for lcc; the others as the help says."""
    for job, extra, R in [("matvec", [], 4), ("matvec", ["--k", "3"], 3), ("lcc", [], 5),
                          ("lcc", ["--k", "3"], 7), ("matmul", [], 4),
                          ("matmul", ["--s", "3"], 5)]:
        args = parse_run(job, "--n", "8", "--workers", "8", *extra)
        code, inputs, expected, what = runs.job_from(args)
        assert code.recovery_threshold == R, (job, extra)
    args = parse_run("lcc")
    assert (args.t, args.f, args.degree, args.pieces, args.slowdown, args.scheme) == (
        1, "ffcode.functions:square", 2, 4, 8.0, None)


def test_default_scheme(capsys):
    """The default scheme is compfs where the code computes at full speed, else cfs, said so;
    --compare leaves compfs out for such an f, and says why."""
    notes = []
    for job, extra, schemes in [("matvec", [], ["compfs"]), ("lcc", [], ["cfs"]),
                                ("lcc", ["--compare"], list(NAMES[:4])),
                                ("matvec", ["--compare", "--adversaries", "1"],
                                 list(NAMES[1:]))]:
        args = parse_run(job, "--n", "8", *extra)
        code = runs.job_from(args)[0]
        chosen, why = runs.schemes_for(args, code)
        assert chosen == schemes
        notes += why
    assert capsys.readouterr().out == ""            # notes, printed once all is checked
    assert "  scheme cfs: the default compfs needs a row-linear f, and f = " \
           "ffcode.functions:square is not (see --row-linear)" in notes
    assert any("compfs left out: it needs a row-linear f" in note for note in notes)
    assert any("uncoded left out" in note for note in notes)


def test_key_directory_made_then_reused(tmp_path):
    """A tcp endpoint without --key/--clients gets ./ffcode-keys (or --keys DIR): the master's
    and a worker's pairs, the worker authorised in clients/; a second run reuses them. The
    worker's command names the worker's secret and the master's public key."""
    directory = tmp_path / "k"
    args = parse_run("matvec", "--endpoint", "tcp://127.0.0.1:5555", "--keys", str(directory))
    options, worker_args, note = runs.cluster_options(args)
    assert options == {"key": str(directory / "master.key_secret"),
                       "clients": str(directory / "clients")}
    assert worker_args == ["--key", str(directory / "worker.key_secret"), "--server-key",
                           str(directory / "master.key")]
    assert note == f"  CURVE keys made in {directory}/"
    assert sorted(os.listdir(directory)) == ["clients", "master.key", "master.key_secret",
                                             "worker.key", "worker.key_secret"]
    for secret in ("master.key_secret", "worker.key_secret"):
        assert stat.S_IMODE(os.stat(directory / secret).st_mode) == 0o600
    worker_public = zmq.auth.load_certificate(str(directory / "worker.key"))[0]
    assert zmq.auth.load_certificates(str(directory / "clients")) == {worker_public: True}
    before = (directory / "master.key_secret").read_text()
    again = runs.cluster_options(args)
    assert again[:2] == (options, worker_args) and again[2] == f"  CURVE keys from {directory}/"
    assert (directory / "master.key_secret").read_text() == before
    assert runs._worker_command("tcp://127.0.0.1:5555", worker_args) == (
        f"ffcode worker --connect tcp://127.0.0.1:5555 --key {directory}/worker.key_secret "
        f"--server-key {directory}/master.key")


def test_worker_command_names_the_host():
    """A master listening on every interface prints a command with its host name."""
    assert runs._worker_command("tcp://0.0.0.0:5555", ["--key", "k"]) == (
        f"ffcode worker --connect tcp://{socket.gethostname()}:5555 --key k")
    assert runs._worker_command("tcp://10.0.0.2:5555", []) == (
        "ffcode worker --connect tcp://10.0.0.2:5555")


def test_key_directory_default_and_insecure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options, _, _ = runs.cluster_options(parse_run("matvec", "--endpoint", "tcp://h:1"))
    assert options["key"] == os.path.join("ffcode-keys", "master.key_secret")
    options, worker_args, note = runs.cluster_options(parse_run(
        "matvec", "--endpoint", "tcp://h:1", "--insecure"))
    assert options == {"insecure": True} and worker_args == [] and "--insecure" in note
    options, worker_args, _ = runs.cluster_options(parse_run(
        "matvec", "--endpoint", "tcp://h:1", "--key", "m.key_secret", "--clients", "c"))
    assert options == {"key": "m.key_secret", "clients": "c"}
    assert worker_args[-2:] == ["--server-key", "m.key"]
    _, worker_args, _ = runs.cluster_options(parse_run(
        "matvec", "--endpoint", "tcp://h:1", "--key", "secret", "--clients", "c"))
    assert worker_args[-2:] == ["--server-key", "MASTER.key"]      # never the secret file
    assert runs.cluster_options(parse_run("matvec", "--endpoint", "ipc:///tmp/x")) == (
        {}, [], None)


def test_keys_command(capsys, tmp_path):
    """'ffcode keys DIR NAME' writes the pair (secret 0600); again it refuses, naming the
    file and --force; with --force it makes a new pair."""
    directory = str(tmp_path / "keys")
    assert cli.main(["keys", directory, "w"]) == 0
    public_file, secret_file = capsys.readouterr().out.split()
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600
    first = zmq.auth.load_certificate(secret_file)
    fails(capsys, ["keys", directory, "w"],
          f"{public_file} exists already: pass --force to replace the pair")
    assert zmq.auth.load_certificate(secret_file) == first
    assert cli.main(["keys", directory, "w", "--force"]) == 0
    assert zmq.auth.load_certificate(secret_file) != first
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600


def test_worker_argument_errors(capsys):
    fails(capsys, ["worker", "--connect", "tcp://127.0.0.1:9", "--key", "x.key_secret"],
          "--key and --server-key go together", prog="ffcode worker")
    fails(capsys, ["worker", "--connect", "127.0.0.1:9"], "cannot connect to '127.0.0.1:9'",
          prog="ffcode worker")
    fails(capsys, ["worker", "--connect", "tcp://127.0.0.1:9", "--timeout", "-1"],
          "argument --timeout: must be a number of seconds >= 0", prog="ffcode worker")
    fails(capsys, ["worker", "--connect", "tcp://127.0.0.1:9", "--key", "missing.key_secret",
                   "--server-key", "m.key"], "does not exist", prog="ffcode worker")
    with pytest.raises(SystemExit) as e:
        cli.main(["worker"])
    assert e.value.code == 2
    assert "--connect" in capsys.readouterr().err


def test_demo_and_experiment_refuse_bad_numbers(capsys):
    fails(capsys, ["demo", "--n", "0"], "argument --n: must be at least 1, not 0")
    fails(capsys, ["demo", "--p", "12"], "prime")
    fails(capsys, ["experiment", "--seeds", "0"], "argument --seeds: must be at least 1")


def test_logging_is_set_up_by_the_command_line_only(capsys):
    """main logs the 'ffcode' logger as '<prog>: <level>: ...' lines on stderr (prog the
    command, 'ffcode demo'), WARNING and up (INFO with -v, the time first), with one
    handler however often it runs; the root logger is left alone."""
    root = list(logging.getLogger().handlers)
    log = logging.getLogger("ffcode.cli.run")
    assert cli.main(["-v", "demo", "--n", "4"]) == 0
    capsys.readouterr()
    log.info("shown")
    assert capsys.readouterr().err.split(" ", 1)[1] == "ffcode demo: info: shown\n"
    assert cli.main(["demo", "--n", "4"]) == 0
    capsys.readouterr()
    log.warning("the code has no redundancy")
    log.info("not shown")
    assert capsys.readouterr().err == "ffcode demo: warning: the code has no redundancy\n"
    ours = [h for h in logging.getLogger("ffcode").handlers     # pytest >= 9.2 attaches
            if not type(h).__module__.startswith("_pytest")]    # its own to such loggers
    assert len(ours) == 1 and isinstance(ours[0].formatter, logs.Lines)
    assert logging.getLogger().handlers == root
