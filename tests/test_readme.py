"""README.md is the front page: its ```python blocks run as they stand, each in a fresh
namespace (a block must not lean on an earlier one), in a temporary directory (blocks may
write files); its quick start is the two commands; its links into the documentation lead
to pages that exist. The user guide itself is checked in tests/test_docs.py."""
import pathlib
import re

import pytest

from helpers import section

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks() -> list:
    """(first line number, source) of every ```python block of the README."""
    text = README.read_text()
    return [(text[:m.start()].count("\n") + 1, m.group(1)) for m in _BLOCK.finditer(text)]


BLOCKS = python_blocks()


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 1
    assert all(source.strip() for _, source in BLOCKS)


@pytest.mark.bounded(120)
@pytest.mark.parametrize("line, source", BLOCKS, ids=[f"line {line}" for line, _ in BLOCKS])
def test_block_runs(line, source, bounded, tmp_path, monkeypatch):
    """The block runs without error (the cluster ones start and close their workers: the
    bounded fixture checks that none is left)."""
    monkeypatch.chdir(tmp_path)
    code = compile(source, f"README.md, block at line {line}", "exec")
    exec(code, {"__name__": "__readme__"})


def _section(title: str) -> str:
    return section(README.read_text(), title)


def test_quick_start_is_two_commands():
    """The quick start is exactly two commands: install and run the main job, install and
    run the tests."""
    block = re.search(r"```bash\n(.*?)```", _section("## Quick start"), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["pip install . && ffcode run matmul --compare --shares 2",
                        'pip install ".[test]" && pytest']


def test_links_lead_to_pages():
    """Every relative link of the README names a file of the repository."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    relative = [link for link in links if "://" not in link]
    assert relative, "the README links into the documentation"
    missing = [link for link in relative if not (ROOT / link).exists()]
    assert not missing, missing


def test_documentation_is_one_command():
    assert 'pip install ".[docs]" && python docs/build.py' in _section("## Documentation")


@pytest.mark.parametrize("phrase", ["issue", "DESIGN", "shared with the team",
                                    "this machine", "this 2-core"])
def test_written_for_users(phrase):
    """No internal documents, issue numbers or 'this machine' on the front page."""
    assert phrase.lower() not in README.read_text().lower()
