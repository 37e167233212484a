"""The documentation's examples type-check: every Python example of README.md and of the
Sphinx pages (docs/**/*.md, and the Markdown files they include) passes mypy against the
package, so an example cannot call the API in a way its signatures refuse.

The examples are fenced blocks whose info string names Python (``python``, ``py``, or
``{code-block} python``) or a doctest directive (``{testcode}``, ``{doctest}``); for doctest
blocks (and Python blocks written as a session) the ``>>>``/``...`` lines are the code, and
an example whose expected output is a traceback is left out (it shows a mistake on
purpose). As Sphinx's doctest builder runs them, the blocks of one page (and group) make
one module, in order, after ``doctest_global_setup`` from docs/conf.py. One mypy run (its
API, in this process) checks every module against the package laid out as installed.
"""
import ast
import doctest
import pathlib
import re
import shutil

import mypy.api

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PYTHON = {"python", "py", "python3", "pycon"}      # pycon: a session, read as doctest
DOCTEST = {"testcode", "doctest"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*)$")
OPTION = re.compile(r"^:[\w-]+:")
# The examples' own mypy settings: the package's modules are followed silently (the
# package's own errors are `mypy -p ffcode`'s business), untyped libraries are Any, and an
# example may rebind a name to a new type as a reader's session does.
CONFIG = """\
[mypy]
strict_equality = True
warn_unused_ignores = True
warn_redundant_casts = True
allow_redefinition = True
cache_dir = /dev/null

[mypy-ffcode.*]
follow_imports = silent

[mypy-galois.*,flint.*,ray.*,sklearn.*,scipy.*,threadpoolctl.*,matplotlib.*]
ignore_missing_imports = True
"""


def pages() -> list:
    """README.md, every Markdown page of docs/ (not its build) and what they include."""
    found = [ROOT / "README.md"] + sorted(
        p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)
    for page in list(found):
        for include in re.findall(r"^\s*[`:~]{3,}\s*\{include\}\s*(\S+)", page.read_text(),
                                  re.M):
            target = (page.parent / include).resolve()
            if target.suffix == ".md" and target.is_file() and target not in found:
                found.append(target)
    return [p for p in found if p.is_file()]


def fenced_blocks(text: str):
    """(kind, group, body) of every top-level fenced block: kind "python", "testcode" or
    "doctest" (None for other languages); group is the directive's argument ("default" if
    none)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match["fence"], match["info"].split()
        body = []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if closing and closing["fence"][0] == fence[0] and \
                    len(closing["fence"]) >= len(fence) and not closing["info"].strip():
                break
            body.append(lines[i])
            i += 1
        i += 1
        word = info[0].strip("{}").lower() if info else ""
        rest = info[1:]
        if word in ("code-block", "code", "sourcecode") and rest:
            word, rest = rest[0].lower(), rest[1:]
        kind = word if word in DOCTEST else "python" if word in PYTHON else None
        yield kind, (rest[0] if rest and word in DOCTEST else "default"), _options_off(body)


def _options_off(body: list) -> list:
    """The block without its directive options (``:hide:`` lines or a --- YAML block)."""
    if body and body[0].strip() == "---":
        end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), None)
        if end is not None:
            return body[end + 1:]
    k = 0
    while k < len(body) and OPTION.match(body[k].strip()):
        k += 1
    return body[k:]


def code_of(kind: str, body: list) -> str:
    """The code of a block: a doctest block's (or a session's) examples, else the body."""
    text = "\n".join(body) + "\n"
    if kind == "doctest" or any(line.lstrip().startswith(">>>") for line in body):
        examples = doctest.DocTestParser().get_examples(text)
        # An example expecting an exception shows a mistake on purpose.
        return "".join(e.source for e in examples if e.exc_msg is None)
    return text


def global_setup() -> str:
    """doctest_global_setup of docs/conf.py (its f-string's fields as placeholder text)."""
    conf = DOCS / "conf.py"
    if not conf.is_file():
        return ""
    for node in ast.walk(ast.parse(conf.read_text())):
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "doctest_global_setup" for t in node.targets):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            if isinstance(value, ast.JoinedStr):
                return "".join(part.value if isinstance(part, ast.Constant) else "'placeholder'"
                               for part in value.values)
    return ""


def example_modules() -> dict:
    """{module name: source}: one module per page and group, its blocks in order. A page's
    plain Python blocks belong to its default group: a reader reads them as continuing the
    examples above them."""
    setup = global_setup()
    blocks: dict = {}
    for page in pages():
        where = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
        for kind, group, body in fenced_blocks(page.read_text()):
            code = code_of(kind, body) if kind is not None else ""
            if code.strip():
                name = f"example_{where}_{group}"
                blocks.setdefault(re.sub(r"\W", "_", name).lower(), []).append((kind, code))
    return {name: (setup if any(kind in DOCTEST for kind, _ in found) else "") +
            "".join(code for _, code in found) for name, found in blocks.items()}


def lay_out_package(target: pathlib.Path) -> None:
    """The package as installed: ffcode/, runtime/ as ffcode/runtime, ext's stubs as
    ffcode/_ext (in the source tree they sit side by side, where mypy does not look); and
    beside it the example modules the guide imports (docs/examples)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.c", "*.pyx", "*.pxd", "*.h")
    shutil.copytree(ROOT / "ffcode", target / "ffcode", ignore=ignore)
    shutil.copytree(ROOT / "runtime", target / "ffcode" / "runtime", ignore=ignore)
    ext = target / "ffcode" / "_ext"
    ext.mkdir()
    for path in [*(ROOT / "ext").glob("*.py"), *(ROOT / "ext").glob("*.pyi")]:
        shutil.copy(path, ext)
    for path in (ROOT / "docs" / "examples").glob("*.py"):    # modules the guide imports
        shutil.copy(path, target)


def test_the_extractor_reads_every_kind_of_block():
    text = ("```python\nx = 1\n```\n"
            "```{testcode}\n:hide:\ny = 2\n```\n"
            "```{doctest} other\n>>> z = 3\n>>> z\n3\n>>> 1 / 0\nTraceback (most recent "
            "call last):\nZeroDivisionError: division by zero\n```\n"
            "```bash\nls\n```\n"
            ":::{testoutput}\n2\n:::\n")
    blocks = [(kind, group, code_of(kind, body) if kind else None)
              for kind, group, body in fenced_blocks(text)]
    assert blocks == [("python", "default", "x = 1\n"), ("testcode", "default", "y = 2\n"),
                      ("doctest", "other", "z = 3\nz\n"), (None, "default", None),
                      (None, "default", None)]


def test_documentation_examples_type_check(tmp_path, monkeypatch):
    modules = example_modules()
    assert any("readme" in name for name in modules), "README.md has no Python example"
    lay_out_package(tmp_path)
    files = []
    for name, source in modules.items():
        (tmp_path / f"{name}.py").write_text(source)
        files.append(f"{name}.py")
    (tmp_path / "mypy.ini").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)         # no other ffcode (the source tree's) on the path
    stdout, stderr, status = mypy.api.run(["--config-file", "mypy.ini", *files])
    assert status == 0, stdout + stderr
