"""The code registry (ffcode.codes.registry): the built-in codes by name, a code registered
outside the package used through the command line's parser and 'ffcode run --code' in
process, through learning's coding= and the experiments' measured sweep, and bad
registrations refused."""
import argparse

import numpy as np
import pytest

import ffcode
from ffcode import GF, MDS, InvalidParameterError, PolynomialCode
from ffcode.cli import commands as cli
from ffcode.cli import run as runs
from ffcode.codes import (code_entry, code_names, make_code, register_code, threshold,
                          unregister_code)

F = GF(65521)


def square(F, n_workers, a, **kw):
    """A code of products outside the package: A and B both in a blocks."""
    return PolynomialCode(F, a, a, n_workers, **kw)


def halved(F, n_workers, k, **kw):
    """A code of products A @ x outside the package: MDS over k blocks."""
    return MDS(F, k, n_workers, **kw)


@pytest.fixture
def registered():
    register_code("square", square, "A and B in a blocks each, R = a*a", job="matmul",
                  params={"a": 2}, threshold=lambda a: a * a)
    register_code("halved", halved, "MDS by another name", job="matvec", params={"k": 2},
                  threshold=lambda k: k)
    try:
        yield
    finally:
        unregister_code("square")
        unregister_code("halved")


def test_the_built_in_codes_by_name():
    assert code_names() == ["polynomial", "matdot", "entangled", "gasp", "mds", "lcc"]
    assert code_names("matvec") == ["mds"] and code_names("lcc") == ["lcc"]
    assert repr(make_code("gasp", F, 8)) == repr(ffcode.GASP(F, 2, 1, 1, 8))
    assert threshold("entangled", a=2, b=2, s=2) == \
        ffcode.EntangledPolynomialCode.threshold_for(2, 2, 2)
    assert make_code("mds", F, 5, k=3, signed=True).signed
    assert make_code("lcc", F, 8, t=0).recovery_threshold == threshold("lcc", t=0)


def test_a_registered_code_on_the_command_line_parser(registered):
    parser = argparse.ArgumentParser(prog="ffcode run")
    runs.add_arguments(parser)
    args = runs.settle(parser.parse_args(["matmul", "--code", "square", "--a", "3",
                                          "--workers", "9"]))
    assert (args.code, args.a) == ("square", 3)
    code, inputs, expected, _ = runs.job_from(args)
    assert code.recovery_threshold == 9 and code.n_workers == 9
    with pytest.raises(ValueError, match="--b is not for --code square, which takes --a"):
        runs.settle(parser.parse_args(["matmul", "--code", "square", "--b", "2"]))
    with pytest.raises(ValueError, match=r"recovery threshold R = 9 \(from --a\)"):
        runs.job_from(runs.settle(parser.parse_args(["matmul", "--code", "square", "--a",
                                                     "3", "--workers", "8"])))


@pytest.mark.bounded(120)
def test_ffcode_run_with_a_registered_code(bounded, registered, capsys):
    status = cli.main(["run", "matmul", "--code", "square", "--n", "32", "--workers", "5",
                       "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "PolynomialCode" in out


@pytest.mark.bounded(120)
def test_learning_with_a_registered_code(bounded, registered):
    pytest.importorskip("sklearn")      # the learning extra (the core's quick runs lack it)
    from ffcode.learn import LinearRegression
    from ffcode.learn.estimators import codings, settings
    assert codings() == ["mds", "halved", "lcc", "gradient"]
    model = LinearRegression(coding="halved", iterations=20, n_workers=3)
    s = settings(model, 3)
    assert (s.coding, s.k, s.precision) == ("halved", 2, 16)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    model.fit(X, y)
    assert model.score(X, y) > 0.9
    with pytest.raises(ValueError,
                       match="'coding' must be one of 'mds', 'halved', 'lcc', 'gradient'"):
        settings(LinearRegression(coding="square"), 3)


@pytest.mark.bounded(180)
def test_the_measured_sweep_with_a_registered_code(bounded, registered):
    from ffcode.cli.experiment import measured_sweep
    with ffcode.Cluster(6) as cluster:
        measured, predicted = measured_sweep(cluster, "pieces", [2], code="square")
    assert set(measured) == {s.value for s in ffcode.schemes.registered()}
    with pytest.raises(ValueError, match="'name' must be one of"):
        measured_sweep(None, "pieces", [2], code="halved")     # A @ x: not a sweep's product


@pytest.mark.parametrize("call,match", [
    (lambda: register_code("mds", halved, "again", job="matvec"), "named .mds. already"),
    (lambda: register_code("x", 3, "not callable"), "'factory' must be callable"),
    (lambda: register_code("x", halved, "wrong job", job="sort"), "'job' must be one of"),
    (lambda: register_code("two words", halved, "a name"), "must be a word"),
    (lambda: unregister_code("lcc"), "cannot be unregistered"),
    (lambda: unregister_code("nothing"), "No code is registered as .nothing."),
    (lambda: threshold("mds", a=2), r"takes the parameters k; not a"),
    (lambda: make_code("nothing", F, 5), "'name' must be one of")])
def test_bad_registrations_and_names_are_refused(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_a_code_registered_twice_is_replaced_only_when_asked(registered):
    with pytest.raises(InvalidParameterError, match=r"named .* already"):
        register_code("square", square, "again", params={"a": 2})
    entry = register_code("square", square, "again", params={"a": 3}, replace=True)
    assert code_entry("square") is entry and threshold("square") is None
