"""The runtime's shape: no class over 20 methods (state lives in small machines, I/O in
thin shells), and its sub-packages as the architecture page draws them."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MOST_METHODS = 20


def classes():
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                yield f"{path.relative_to(ROOT)}:{node.name}", [
                    item for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_runtime_class_has_more_than_20_methods():
    large = {name: len(methods) for name, methods in classes() if len(methods) > MOST_METHODS}
    assert not large, large


def test_the_runtime_has_its_three_sides_and_nothing_loose():
    """Beside the face and the entry points, every module is on a side."""
    loose = sorted(p.name for p in (ROOT / "runtime").glob("*.py"))
    assert loose == ["__init__.py", "entry.py"]
    assert sorted(p.name for p in (ROOT / "runtime").iterdir() if p.is_dir() and
                  p.name != "__pycache__") == ["master", "shared", "worker"]
