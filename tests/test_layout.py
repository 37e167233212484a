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


BRANCH_SITES = 12       # at most: the places outside ffcode.schemes that ask which scheme


def _scheme_branch_sites(tree) -> list:
    """Where the code branches on a scheme: a comparison against a built-in scheme
    (Scheme.CFS, or its name as a string), or a test (if, while, a conditional expression, a
    comprehension's if, a comparison) of a scheme's property .coded, .whole, .holds,
    .piecewise, .plain or .send (not a method of that name called, nor a value compared
    with None); one site per outermost such expression."""
    names = {"uncoded", "classic", "systematic", "cfs", "compfs"}
    members, properties = {n.upper() for n in names}, {"coded", "whole", "holds",
                                                        "piecewise", "plain", "send"}
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}

    def names_a_scheme(node):
        return isinstance(node, ast.Constant) and node.value in names or \
            isinstance(node, ast.Attribute) and node.attr in members and \
            isinstance(node.value, ast.Name) and node.value.id == "Scheme"

    def asks_a_property(node):
        return any(isinstance(n, ast.Attribute) and n.attr in properties and
                   id(n) not in called for n in ast.walk(node))

    tests = [node.test for node in ast.walk(tree)
             if isinstance(node, (ast.If, ast.While, ast.IfExp))]
    tests += [test for node in ast.walk(tree) if isinstance(node, ast.comprehension)
              for test in node.ifs]
    compares = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)]
    found = [node for node in compares
             if any(map(names_a_scheme, [node.left, *node.comparators]))]
    found += [node for node in tests + compares if asks_a_property(node)
              and not (isinstance(node, ast.Compare) and any(
                  isinstance(c, ast.Constant) and c.value is None for c in node.comparators))]
    spans = {(n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) for n in found}
    return sorted(span for span in spans if not any(
        other != span and other[:2] <= span[:2] and other[2:] >= span[2:] for other in spans))


def test_few_places_branch_on_the_scheme(trees):
    """A scheme is a strategy object (ffcode.schemes): the runtime, the simulator and the
    estimators call its methods, so a new scheme needs no edit elsewhere; the few branches
    left (what a worker computes piecewise, which data a layout serves, the command line's
    and the estimators' checks of their arguments) stay counted."""
    sites = [f"{path.relative_to(ROOT)}:{line}" for path, tree in trees.items()
             if path.parts[len(ROOT.parts)] in ("ffcode", "runtime")
             and path != ROOT / "ffcode" / "schemes.py"
             for line, *_ in _scheme_branch_sites(tree)]
    assert len(sites) <= BRANCH_SITES, sites
