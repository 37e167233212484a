"""Build the Cython kernels in ext/ as ffcode._ext.*.

Set FFCODE_CYTHON_CHECKS=1 to compile with bounds and wraparound checks (for debugging), and
FFCODE_PORTABLE=1 to build without -march=native.
"""
import glob
import os
import shutil

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = os.environ.get("FFCODE_CYTHON_CHECKS") == "1"
# Kernels are tuned for the building machine; FFCODE_PORTABLE=1 builds for any x86-64/arm64.
PORTABLE = os.environ.get("FFCODE_PORTABLE") == "1"

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
    ext_modules=cythonize(
        extensions,
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
