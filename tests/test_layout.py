"""The source keeps the shape its design promises: short functions, a small Cluster, one list
of schemes. (The import layers are checked by import-linter in CI.)"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [p for folder in ("ffcode", "runtime", "bench") for p in (ROOT / folder).rglob("*.py")]
LONGEST = 80            # lines of a function, its docstring included


@pytest.fixture(scope="module")
def trees():
    return {path: ast.parse(path.read_text()) for path in SOURCES}


def test_no_function_is_longer_than_80_lines(trees):
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"
            for path, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (length := node.end_lineno - node.lineno + 1) > LONGEST]
    assert not long, long


def test_the_cluster_module_stays_small(trees):
    assert len((ROOT / "runtime" / "master" / "cluster.py").read_text().splitlines()) < 300


def test_schemes_are_defined_once(trees):
    """Only ffcode.schemes names the schemes; everyone else uses Scheme or NAMES."""
    names = {"uncoded", "classic", "systematic", "cfs", "compfs"}
    lists = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in trees.items()
             for node in ast.walk(tree)
             if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 3
             and {getattr(e, "value", None) for e in node.elts} <= names
             and path.name != "schemes.py"]
    assert not lists, lists
    defined = [f"{path.relative_to(ROOT)}" for path, tree in trees.items()
               for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
               and node.name == "Scheme"]
    assert defined == ["ffcode/schemes.py"]
