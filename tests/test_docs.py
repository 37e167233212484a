"""Cheap checks of the documentation in docs/ (the full build, which runs every example,
is `python docs/build.py`, in CI): every page is in a toctree, the quick start is the
README's, the pages are written for users, and the guide keeps what its sections promise."""
import pathlib
import re

import pytest

from helpers import section

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "_build" not in path.parts)
_TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```$", re.S | re.M)


def _name(path: pathlib.Path) -> str:
    return path.relative_to(DOCS).with_suffix("").as_posix()


def _toctree_entries() -> set:
    """Every page some toctree names (entries are relative to the page that holds them)."""
    entries = set()
    for page in PAGES:
        base = page.parent.relative_to(DOCS)
        for block in _TOCTREE.findall(page.read_text()):
            for line in block.splitlines():
                line = line.strip()
                if line and not line.startswith(":"):
                    entries.add((base / line).as_posix().lstrip("./"))
    return entries


def test_the_site_has_its_parts():
    names = {_name(page) for page in PAGES}
    assert {"index", "getting-started", "guide/index", "guide/learning", "api/index",
            "architecture", "benchmarks", "development"} <= names
    assert (DOCS / "conf.py").is_file() and (DOCS / "build.py").is_file()


def test_every_page_is_in_a_toctree():
    entries = _toctree_entries()
    orphans = [_name(page) for page in PAGES if _name(page) != "index"
               and _name(page) not in entries]
    assert not orphans, f"pages in no toctree: {orphans}"
    missing = [entry for entry in entries if not (DOCS / f"{entry}.md").is_file()]
    assert not missing, f"toctree entries without a page: {missing}"


def test_quick_start_is_the_readmes():
    """The getting-started page's quick start is the README's, word for word: the two
    commands, the measured table and the measured ranges."""
    readme = section(README.read_text(), "## Quick start")
    readme = readme[:readme.index("\nThe [getting started]")]
    docs = section((DOCS / "getting-started.md").read_text(), "## Quick start")
    assert docs.strip() == readme.strip()
    assert "pip install . && ffcode run matmul --compare --shares 2" in docs
    assert "compfs x2      0.622       2.69x" in docs


def test_api_reference_covers_the_public_names():
    """Every name of ffcode.__all__ and ffcode.runtime.__all__ has an entry in the API
    reference (an autodoc directive or, for re-exported errors, a mention)."""
    import ffcode
    import ffcode.runtime
    api = "\n".join(path.read_text() for path in (DOCS / "api").glob("*.md"))
    for name in ffcode.__all__:
        assert re.search(rf"\.\. auto\w+:: (ffcode\.)?{name}\b", api), name
    for name in ffcode.runtime.__all__:
        assert re.search(rf"(\.\. auto\w+:: (ffcode\.)?(runtime\.)?{name}\b)|`{name}`", api), \
            name
    for module in ("ffcode.codes", "ffcode.decoding", "ffcode.decoding.robust",
                   "ffcode.decoding.verify", "ffcode.learn", "ffcode.sim", "ffcode.sim_tree", "ffcode.sim_gradient",
                   "ffcode.gradcoding",
                   "ffcode.errors",
                   "ffcode.runtime"):
        assert f".. automodule:: {module}\n" in api, module


# Pages that may show a ```python sketch the build does not run: the learning guide's
# grid search needs a cluster and the data of its earlier examples.
SKETCHES = {"guide/learning"}


def test_examples_are_run():
    """Code in the guide is executed by the doctest build: examples are testcode or doctest
    blocks, not plain python blocks, and a block that starts a cluster closes it."""
    for page in PAGES:
        text = page.read_text()
        if _name(page) not in SKETCHES:
            assert "```python" not in text, f"{_name(page)} has a python block that never runs"
        for block in re.findall(r"^```\{testcode\}\n(.*?)^```$", text, re.S | re.M):
            if "Cluster(" in block:
                assert "with ffcode.Cluster(" in block, _name(page)


ENGINES = DOCS / "guide" / "engines.md"


def test_across_hosts_has_redundancy_and_keys():
    """The across-hosts master has more workers than the code's R = 4, and its workers are
    started with the CURVE key files the master makes."""
    part = section(ENGINES.read_text(), "## Across hosts")
    assert "ffcode run matmul --compare --workers 6 --endpoint tcp://127.0.0.1:5555" in part
    assert ("ffcode worker --connect tcp://127.0.0.1:5555 --key ffcode-keys/worker.key_secret "
            "--server-key ffcode-keys/master.key") in part
    assert "--insecure" in part


def test_ray_section_has_the_three_commands():
    """A real Ray cluster takes three commands: the head, each other node, the master."""
    part = section(ENGINES.read_text(), "## On a Ray cluster")
    assert "ray start --head --port=6379" in part
    assert "ray start --address=HEAD:6379" in part
    assert "ffcode run matmul --compare --workers 16 --engine ray --address HEAD:6379" in \
        part
    assert "#SBATCH" in part and 'pip install "ffcode[ray]"' in part


@pytest.mark.parametrize("phrase", ["issue", "DESIGN", "shared with the team",
                                    "this machine", "this 2-core", "the session"])
@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_written_for_users(page, phrase):
    """No internal documents, issue numbers or 'this machine' in the documentation."""
    assert phrase.lower() not in page.read_text().lower()


def test_sphinx_configuration_loads():
    """conf.py loads (Sphinx and MyST are in the test extra) and names the extensions the
    build needs."""
    namespace = {"__file__": str(DOCS / "conf.py")}
    exec(compile((DOCS / "conf.py").read_text(), str(DOCS / "conf.py"), "exec"), namespace)
    assert {"myst_parser", "sphinx.ext.autodoc", "sphinx.ext.doctest"} <= \
        set(namespace["extensions"])
    assert namespace["nitpicky"] is True and namespace["html_theme"] == "furo"
