"""Build the Cython kernels in ext/ as ffcode._ext.*.

Set FFCODE_CYTHON_CHECKS=1 to compile with bounds and wraparound checks (for debugging), and
FFCODE_PORTABLE=1 to build without -march=native. The modules are translated and compiled
in parallel, a job per core this process may use (FFCODE_BUILD_JOBS=N for N jobs; an
explicit ``build_ext -j N`` wins).
"""
import glob
import os
import shutil

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = os.environ.get("FFCODE_CYTHON_CHECKS") == "1"
# Kernels are tuned for the building machine; FFCODE_PORTABLE=1 builds for any x86-64/arm64.
PORTABLE = os.environ.get("FFCODE_PORTABLE") == "1"


def build_jobs() -> int:
    """FFCODE_BUILD_JOBS, else the cores this process may run on: the first build of the
    kernels (-O3 on large generated C) is the bulk of an install's time."""
    given = os.environ.get("FFCODE_BUILD_JOBS")
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ValueError(f"FFCODE_BUILD_JOBS must be a whole number >= 1, not {given!r}.")
        return int(given)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


JOBS = build_jobs()


class ParallelBuildExt(build_ext):
    """build_ext compiling JOBS extensions at once unless told otherwise (-j N)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = JOBS

# Cython resolves a module's own .pxd and every cimport by dotted name, so the .pxd files
# of ext/ must be visible as ffcode/_ext/*.pxd: stage them in the build tree.
INCLUDE = os.path.join(HERE, "build", "cython-include")
staged = os.path.join(INCLUDE, "ffcode", "_ext")
os.makedirs(staged, exist_ok=True)
for name in ("ffcode/__init__.pxd", "ffcode/_ext/__init__.pxd"):
    open(os.path.join(INCLUDE, name), "a").close()
for pxd in glob.glob(os.path.join(HERE, "ext", "*.pxd")):
    shutil.copy2(pxd, staged)

extensions = [
    Extension(
        f"ffcode._ext.{os.path.splitext(os.path.basename(pyx))[0]}",
        [os.path.relpath(pyx, HERE)],
        include_dirs=[np.get_include(), "ext"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # No errno or FP traps from libm: lets floor/fma/rint inline and loops vectorise.
        extra_compile_args=["-O3", "-fno-math-errno", "-fno-trapping-math"]
        + ([] if PORTABLE else ["-march=native"]),
    )
    for pyx in sorted(glob.glob(os.path.join(HERE, "ext", "*.pyx")))
]

setup(
    cmdclass={"build_ext": ParallelBuildExt},
    ext_modules=cythonize(
        extensions,
        nthreads=JOBS if JOBS > 1 else 0,
        include_path=[INCLUDE],
        compiler_directives={
            "language_level": 3,
            "boundscheck": CHECKS,
            "wraparound": CHECKS,
            "initializedcheck": CHECKS,
            "cdivision": True,
        },
    ),
)
