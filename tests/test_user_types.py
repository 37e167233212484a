"""The types a user's code sees: ``Cluster.run`` and a future's ``result()`` give (output,
Report), ``submit`` a JobFuture, ``fit`` the model itself with its fitted attributes, so
that mypy passes a correct script (tests/user_types/typed_script.py) and reports each
misspelt attribute of a report, a result, a future or a model (typos_script.py, its lines
marked "typo"). Checked against the package laid out as installed, as the documentation's
examples are (test_example_types)."""
import pathlib
import re
import shutil

import mypy.api
import pytest

from test_example_types import CONFIG, lay_out_package

SCRIPTS = pathlib.Path(__file__).resolve().parent / "user_types"


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """mypy's report line numbers (script name -> {line: message}) for both scripts,
    checked in one run."""
    root = tmp_path_factory.mktemp("user_types")
    lay_out_package(root)
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, root)
    (root / "mypy.ini").write_text(CONFIG)
    stdout, stderr, status = mypy.api.run(["--config-file", str(root / "mypy.ini"),
                                           str(root / "typed_script.py"),
                                           str(root / "typos_script.py")])
    assert not stderr, stderr
    found: dict = {}
    for name, line, message in re.findall(r"^.*?(\w+_script)\.py:(\d+): error: (.*)$",
                                          stdout, re.M):
        found.setdefault(name, {})[int(line)] = message
    return found, stdout


def test_a_correct_script_type_checks(checked):
    found, stdout = checked
    assert "typed_script" not in found, stdout


def test_every_misspelt_attribute_is_reported(checked):
    found, stdout = checked
    lines = (SCRIPTS / "typos_script.py").read_text().splitlines()
    marked = {i for i, line in enumerate(lines, 1) if line.rstrip().endswith("# typo")}
    assert len(marked) == 7
    reported = found.get("typos_script", {})
    assert set(reported) == marked, stdout
    for line, message in reported.items():
        assert "has no attribute" in message, message
    assert '"Report" has no attribute "totl"' in reported[min(marked)]
