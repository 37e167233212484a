"""The type stubs of the compiled kernels (ext/*.pyi) match the compiled modules: mypy's
stubtest imports each module and compares every name, argument and default with its stub."""
import os
import pathlib
import shutil
import subprocess
import sys

import mypy.stubtest  # noqa: F401 (the test extra installs mypy: a missing one fails here)

EXT = pathlib.Path(__file__).resolve().parent.parent / "ext"
MODULES = sorted(stub.stem for stub in EXT.glob("*.pyi"))

# Names Cython adds to every module or extension type, which no stub should declare.
ALLOWLIST = """\
# the doctest dictionary of a Cython module
ffcode\\._ext\\.\\w+\\.__test__
# pickling support of a cdef class (Cython leaves a module-level copy too)
ffcode\\._ext\\.\\w+(\\.\\w+)?\\.__(reduce|setstate)_cython__
"""


def test_every_compiled_module_has_a_stub():
    compiled = {path.name.split(".")[0] for path in EXT.glob("*.pyx")}
    assert set(MODULES) == compiled


def test_stubs_match_compiled_modules(tmp_path):
    # mypy reads the stubs from a folder laid out as the package (ext/ is ffcode/_ext once
    # installed), outside the source tree; the compiled modules import as installed.
    stubs = tmp_path / "stubs" / "ffcode" / "_ext"
    stubs.mkdir(parents=True)
    (stubs.parent / "__init__.pyi").touch()
    (stubs / "__init__.pyi").touch()
    for name in MODULES:
        shutil.copy(EXT / f"{name}.pyi", stubs)
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text(ALLOWLIST)
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", *(f"ffcode._ext.{name}" for name in MODULES),
         "--allowlist", str(allowlist), "--ignore-unused-allowlist", "--concise"],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(tmp_path / "stubs")},
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
