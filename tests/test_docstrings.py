"""The examples in ffcode's docstrings run and give what they show, in every module of the
package, and every public module has at least one."""
import doctest
import importlib
import inspect
import pkgutil

import pytest

import ffcode
import ffcode.runtime

# Optional dependencies (extras): a module that needs an absent one is skipped.
OPTIONAL = {"ray", "sklearn", "matplotlib", "threadpoolctl"}

# Modules whose examples are counted, not just run: (module, at least this many).
MINIMUM = {"ffcode.field": 6,             # GF, asarray, inv, rref and vandermonde
           "ffcode.codes.product": 4,
           "ffcode.learn": 5}             # gradient_terms and sigmoid_polynomial


def _module_names():
    # In the source tree the runtime sits in runtime/, not under ffcode/, so an editable
    # install is walked from both; the compiled kernels have no docstring examples, and
    # running a __main__ runs the command line. A subpackage that fails to import is still
    # listed, so its test reports the error instead of the walk skipping it.
    names = set()
    for package in (ffcode, ffcode.runtime):
        names.add(package.__name__)
        names.update(info.name for info in pkgutil.walk_packages(
            package.__path__, package.__name__ + ".", onerror=lambda name: None))
    return sorted(name for name in names if not name.startswith("ffcode._ext")
                  and name.rsplit(".", 1)[-1] != "__main__")


MODULES = _module_names()


def _import(name):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs {error.name}, which is not installed")
        raise


def _is_public(name):
    return not any(part.startswith("_") for part in name.split("."))


def _only_reexports(module):
    """A package face: its own code defines no function or class, it only re-exports."""
    if not hasattr(module, "__path__"):
        return False
    return not any((inspect.isfunction(value) or inspect.isclass(value))
                   and value.__module__ == module.__name__ and not key.startswith("_")
                   for key, value in vars(module).items())


def _examples(module):
    return sum(len(test.examples) for test in doctest.DocTestFinder().find(module))


def test_walk_finds_every_layer():
    assert {"ffcode", "ffcode.field", "ffcode.runtime", "ffcode.cli", *MINIMUM} <= set(MODULES)
    for package in ("ffcode.codes", "ffcode.decoding", "ffcode.runtime"):
        assert any(name.startswith(package + ".") for name in MODULES), package


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = _import(name)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.failed == 0
    assert result.attempted >= MINIMUM.get(name, 0)


@pytest.mark.parametrize("name", [name for name in MODULES if _is_public(name)])
def test_public_module_has_an_example(name):
    """A package face that only re-exports needs none; any other module does."""
    module = _import(name)
    assert _examples(module) >= 1 or _only_reexports(module), \
        f"{name} has no docstring example"
