"""Every ```python block of README.md runs as it stands, each in a fresh namespace (a block
must not lean on an earlier one), in a temporary directory (blocks may write files)."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks() -> list:
    """(first line number, source) of every ```python block of the README."""
    text = README.read_text()
    return [(text[:m.start()].count("\n") + 1, m.group(1)) for m in _BLOCK.finditer(text)]


BLOCKS = python_blocks()


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 5
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
    text = README.read_text()
    start = text.index(f"\n{title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_quick_start_is_two_commands():
    """The quick start is exactly two commands: install and run the main job, install and
    run the tests."""
    block = re.search(r"```bash\n(.*?)```", _section("## Quick start"), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["pip install . && ffcode run matmul --compare --shares 2",
                        'pip install ".[test]" && pytest']


def test_across_hosts_has_redundancy_and_keys():
    """The across-hosts master has more workers than the code's R = 4, and its workers are
    started with the CURVE key files the master makes."""
    section = _section("### Across hosts")
    assert "ffcode run matmul --compare --workers 6 --endpoint tcp://127.0.0.1:5555" in section
    assert ("ffcode worker --connect tcp://127.0.0.1:5555 --key ffcode-keys/worker.key_secret "
            "--server-key ffcode-keys/master.key") in section
    assert "--insecure" in section


@pytest.mark.parametrize("phrase", ["issue", "DESIGN", "shared with the team",
                                    "this machine", "this 2-core"])
def test_written_for_users(phrase):
    """No internal documents, issue numbers or 'this machine' in the user guide."""
    assert phrase.lower() not in README.read_text().lower()


def test_ray_section_has_the_three_commands():
    """A real Ray cluster takes three commands: the head, each other node, the master."""
    section = _section("### On a Ray cluster")
    assert "ray start --head --port=6379" in section
    assert "ray start --address=HEAD:6379" in section
    assert "ffcode run matmul --compare --workers 16 --engine ray --address HEAD:6379" in \
        section
    assert "#SBATCH" in section and 'pip install "ffcode[ray]"' in section
