"""setup.py builds the kernels in parallel, a job per usable core by default (cythonize's
threads and build_ext's parallel compilation), and keeps FFCODE_PORTABLE and
FFCODE_CYTHON_CHECKS working. setup.py runs in a fresh interpreter with setuptools' setup
and Cython's cythonize replaced by recorders: nothing is compiled."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Runs setup.py as pip would, recording what it asks of cythonize and setup, then what
# its build_ext makes of -j: (the recorded arguments, as JSON).
RECORD = """
import json, runpy, sys
import Cython.Build, setuptools
from setuptools.dist import Distribution
seen = {}
def cythonize(extensions, **options):
    seen["nthreads"] = options.get("nthreads")
    seen["directives"] = options["compiler_directives"]
    seen["modules"] = sorted(e.name for e in extensions)
    seen["args"] = sorted({a for e in extensions for a in e.extra_compile_args})
    return extensions
def setup(**options):
    seen["cmdclass"] = options.get("cmdclass", {})
Cython.Build.cythonize, setuptools.setup = cythonize, setup
sys.argv = ["setup.py"]
runpy.run_path("setup.py", run_name="__main__")
command = seen.pop("cmdclass").get("build_ext")
for given in (None, "1"):
    build = command(Distribution({"ext_modules": []}))
    build.parallel = given
    build.finalize_options()
    seen["parallel" if given is None else "parallel -j 1"] = build.parallel
print(json.dumps(seen))
"""


def recorded(**env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FFCODE_")}
    done = subprocess.run([sys.executable, "-c", RECORD], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.bounded(240)
def test_parallel_by_default(bounded):
    """A job per core the build may use: cythonize's threads and build_ext's -j (an
    explicit -j 1 kept); every ext/*.pyx a module, tuned for the machine, unchecked."""
    seen = recorded()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert seen["parallel"] == cores and seen["parallel -j 1"] == 1
    assert seen["nthreads"] == (cores if cores > 1 else 0)
    assert seen["modules"] == sorted(f"ffcode._ext.{p.stem}" for p in (ROOT / "ext").glob(
        "*.pyx")) and len(seen["modules"]) >= 8
    assert "-march=native" in seen["args"] and "-O3" in seen["args"]
    assert not seen["directives"]["boundscheck"] and not seen["directives"]["wraparound"]


@pytest.mark.bounded(240)
def test_build_options_from_the_environment(bounded):
    """FFCODE_BUILD_JOBS sets the jobs, FFCODE_PORTABLE leaves out -march=native and
    FFCODE_CYTHON_CHECKS turns the checks on; a bad FFCODE_BUILD_JOBS is refused."""
    seen = recorded(FFCODE_BUILD_JOBS="3", FFCODE_PORTABLE="1", FFCODE_CYTHON_CHECKS="1")
    assert (seen["parallel"], seen["nthreads"], seen["parallel -j 1"]) == (3, 3, 1)
    assert "-march=native" not in seen["args"] and "-O3" in seen["args"]
    assert seen["directives"]["boundscheck"] and seen["directives"]["wraparound"]
    assert recorded(FFCODE_BUILD_JOBS="1")["nthreads"] == 0
    with pytest.raises(AssertionError, match="FFCODE_BUILD_JOBS must be a whole number >= 1, "
                                             "not '0'"):
        recorded(FFCODE_BUILD_JOBS="0")


def test_every_package_is_installed():
    """pyproject.toml lists the packages a wheel holds: every folder of ffcode/ and runtime/
    with an __init__.py (a package missing there imports from the source tree, where the
    tests run, and not from an installed copy)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "ffcode").rglob("__init__.py")}
    found |= {".".join(("ffcode",) + p.parent.relative_to(ROOT).parts)
              for p in (ROOT / "runtime").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
