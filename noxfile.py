"""Test ffcode on every supported Python: `nox -s tests` (or `nox -s tests-3.9`).

Each session builds ffcode from source (the Cython kernels included) into its own venv and
runs the fast subset: field, kernels, codes and decoding, plus a runtime smoke test with
local worker processes. Interpreters that are not found are skipped. `nox -s full` runs the
whole suite on the default Python. nox is a dev tool: `pip install nox`.
"""
import glob
import os

import nox

PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]

# What the fast subset needs: the oracles (galois, python-flint) are imported by
# tests/conftest.py; ray and scikit-learn stay out of it.
FAST_DEPS = ["pytest>=7", "hypothesis>=6", "galois>=0.4", "python-flint>=0.6"]
FAST = ["tests/field", "tests/kernels", "tests/codes", "tests/decoding",
        # the runtime smoke test: a local cluster of worker processes, with stragglers
        "tests/runtime/test_runtime.py::test_exact_with_stragglers"]

nox.options.error_on_missing_interpreters = False
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


def _find_pyenv_pythons() -> None:
    """Put pyenv's interpreters (python3.X) on PATH: its shims refuse versions that are
    not selected, so nox would not find them by name."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", "*", "bin")))
    if found:
        os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_find_pyenv_pythons()


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Build ffcode from source and run the fast subset (extra pytest args pass through)."""
    session.install(".", *FAST_DEPS)
    session.run("pytest", "-q", "-p", "no:cacheprovider", *(session.posargs or FAST))


@nox.session
def full(session: nox.Session) -> None:
    """The whole suite with every extra on the default Python."""
    session.install(".[test]")
    session.run("pytest", "-q", *session.posargs)
