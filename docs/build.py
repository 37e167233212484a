"""Build ffcode's documentation and check it: ``python docs/build.py``.

Runs every example of the pages and of the docstrings they document (Sphinx's doctest
builder), then builds the HTML, both with warnings as errors; then checks that the pages
exist and that the doctest builder ran examples and none failed. Exits non-zero on any
failure. Needs ``pip install ".[docs]"``.
"""
import pathlib
import re
import subprocess
import sys
import time

DOCS = pathlib.Path(__file__).resolve().parent
BUILD = DOCS / "_build"
# Pages the site must have: the front page, the user guide and every API reference page.
PAGES = ["index", "getting-started", "guide/index", "architecture", "benchmarks",
         "api/index", "api/field", "api/codes", "api/full-speed", "api/runtime", "api/learn",
         "api/sim", "api/errors"]


def sphinx(builder: str) -> int:
    # -E: a fresh environment, so that edited docstrings and settings are always read again.
    command = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-b", builder,
               str(DOCS), str(BUILD / builder)]
    print("$", " ".join(command), flush=True)
    # From docs/: run from the repository's root, python -m would put the source tree's
    # ffcode (without its compiled kernels) ahead of the installed package.
    return subprocess.run(command, cwd=DOCS).returncode


def doctest_counts(output: pathlib.Path) -> tuple:
    """(tests run, failures) from the doctest builder's summary in output.txt."""
    text = output.read_text()
    run = re.search(r"^\s*(\d+) tests?$", text, re.M)
    failed = re.search(r"^\s*(\d+) failures? in tests?$", text, re.M)
    return (int(run.group(1)) if run else 0, int(failed.group(1)) if failed else 0)


def main() -> int:
    start = time.monotonic()
    problems = []
    for builder in ("doctest", "html"):
        if sphinx(builder) != 0:
            problems.append(f"sphinx-build -b {builder} failed (see above)")
    for page in PAGES:
        if not (BUILD / "html" / f"{page}.html").is_file():
            problems.append(f"missing page: {page}.html")
    output = BUILD / "doctest" / "output.txt"
    if output.is_file():
        run, failed = doctest_counts(output)
        print(f"doctest: {run} examples run, {failed} failed")
        if run == 0:
            problems.append("the doctest builder ran no example")
        if failed:
            problems.append(f"{failed} examples failed (see {output})")
    else:
        problems.append(f"no doctest summary at {output}")
    for problem in problems:
        print("docs: " + problem, file=sys.stderr)
    print(f"docs: {'FAILED' if problems else 'built and checked'} in "
          f"{time.monotonic() - start:.0f} s; HTML in {BUILD / 'html'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
