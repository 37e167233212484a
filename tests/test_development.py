"""docs/development.md's layout table names every package and module of the source tree
(ffcode/ and its subpackages, ext/, runtime/), and nothing that is not there."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ["ext", "runtime", "runtime/master", "runtime/worker", "runtime/shared"]
# beside ffcode/ and every package under it


def table() -> dict:
    """path (as the first column gives it, e.g. 'ffcode/codes/') -> the file names its row
    names in backquotes."""
    rows = {}
    for line in (ROOT / "docs" / "development.md").read_text().splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \|(.*)\|", line)
        if match:
            rows[match[1]] = set(re.findall(r"`([\w]+\.pyx?)`", match[2]))
    return rows


def modules(folder: pathlib.Path) -> set:
    """The modules of a folder: its .py and .pyx files, a package's __init__.py left out
    unless it holds code of its own (ffcode's face), ext/'s empty one always."""
    names = {p.name for p in folder.glob("*.py*") if p.suffix in (".py", ".pyx")}
    return names - {"__init__.py"} | ({"__init__.py"} if folder.name == "ffcode" else set())


def test_every_module_is_in_the_layout_table():
    rows = table()
    packages = sorted(p.parent for p in (ROOT / "ffcode").rglob("__init__.py"))
    folders = [*packages, *(ROOT / name for name in FOLDERS)]
    assert len(packages) >= 6                           # ffcode and five subpackages
    for folder in folders:
        path = f"{folder.relative_to(ROOT)}/"
        assert path in rows, f"{path} has no row in docs/development.md's layout table"
        assert rows[path] == modules(folder), (path, "missing", modules(folder) - rows[path],
                                               "not there", rows[path] - modules(folder))
