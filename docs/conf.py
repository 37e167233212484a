"""Sphinx configuration of ffcode's documentation (built by ``python docs/build.py``)."""
import atexit
import importlib
import os
import shutil
import tempfile

import sphinx.util.inspect

import ffcode

project = "ffcode"
author = "the ffcode authors"
copyright = "the ffcode authors"
release = version = ffcode.__version__

extensions = [
    "myst_parser",               # the pages are Markdown (MyST)
    "sphinx.ext.autodoc",        # the API reference, from the docstrings
    "sphinx.ext.napoleon",       # docstrings in numpy style (Parameters, Returns, Examples)
    "sphinx.ext.doctest",        # every example runs: sphinx-build -b doctest
    "sphinx.ext.viewcode",
]
# intersphinx (links into the Python and numpy manuals) needs the network at build time;
# FFCODE_DOCS_INTERSPHINX=1 turns it on where there is one. Off, those names are plain text.
if os.environ.get("FFCODE_DOCS_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {"python": ("https://docs.python.org/3", None),
                           "numpy": ("https://numpy.org/doc/stable", None)}

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"ffcode {release}"

# -- autodoc ----------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_numpy_docstring = True
napoleon_google_docstring = False

# -- doctest ----------------------------------------------------------------------------------
# Every group of examples starts from ffcode and numpy imported, in a scratch directory (an
# example may write files); the Ray example runs where Ray is installed.
_SCRATCH = tempfile.mkdtemp(prefix="ffcode-docs-")
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
_EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")
doctest_global_setup = f"""
import importlib.util
import os
import sys
if {_EXAMPLES!r} not in sys.path:       # the guide's example modules (workers import them too)
    sys.path.insert(0, {_EXAMPLES!r})
import numpy as np
import ffcode
os.chdir({_SCRATCH!r})
HAVE_RAY = importlib.util.find_spec("ray") is not None
"""
doctest_test_doctest_blocks = "default"   # any plain >>> block runs too (docstrings: see below)

# -- references: every cross-reference must resolve -------------------------------------------
nitpicky = True
# Only names that cannot resolve offline: without intersphinx, the annotations' numpy and
# standard-library classes have no target here (with FFCODE_DOCS_INTERSPHINX=1 they link).
nitpick_ignore_regex = [
    ("py:(class|exc)", r"(numpy|np)(\.[\w.]+)?"),   # numpy.ndarray (np. in dataclass fields), ...
    ("py:class", r"(collections\.abc|typing|os|pathlib|threading|logging|fractions)\.\w+"),  # stdlib
    ("py:class", r"zmq\.[\w.]+"),                         # pyzmq's sockets and contexts
    ("py:class", r"concurrent\.futures\.[\w.]+"),          # JobFuture's base, Future
    ("py:class", r"sklearn\.[\w.]+"),                     # the estimators' scikit-learn bases
    # Private base classes (shown by show-inheritance) have no page: their public members
    # are documented on the public subclasses.
    ("py:class", r"ffcode\.(\w+\.)*_\w+"),
]
# The type aliases of the signatures (ffcode._types) are shown by name; they are numpy's
# ArrayLike and unions of built-in and numpy types, defined in the API reference's
# introduction rather than as objects of their own, so they are no link targets.
autodoc_type_aliases = {name: name for name in ("ArrayLike", "Int", "Seed", "Shape", "Output")}
nitpick_ignore = [("py:class", name) for name in autodoc_type_aliases]
# The runtime's own bookkeeping, named in the signatures of Cluster.exclude and Plan: a
# program never builds one, so they are not part of the API reference.
nitpick_ignore += [("py:class", "ffcode.runtime.master.roster.WorkerHandle"),
                   ("py:class", "ffcode.runtime.master.jobs.Layout"),
                   ("py:class", "ffcode.runtime.shared.task.FaultPlan"),
                   ("py:class", "ffcode.runtime.master.driver.Driver"),
                   ("py:class", "ffcode.runtime.master.jobrun.JobRun"),
                   ("py:class", "ffcode.runtime.master.driver.Job"),
                   ("py:class", "ffcode.runtime.shared.payloads.Coded")]

# Sphinx renders an alias nested in a generic (Sequence[ArrayLike]) by the repr of its
# placeholder, "TypeAliasForwardRef('ArrayLike')"; its name is what a reader should see.
sphinx.util.inspect.TypeAliasForwardRef.__repr__ = lambda self: self.name


def _skip_foreign(app, what, name, obj, skip, options):
    """Leave out members that a class inherits from a third-party base (scikit-learn's
    metadata-routing setters on the estimators): their docstrings refer to that library's
    manual, which is not part of this one."""
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] in {"sklearn", "numpy", "zmq"}:
        return True
    return None


def _module_of(what, name, obj):
    """The module whose globals an object's docstring examples run in (as doctest.testmod
    runs them): the object's own module, else the longest importable prefix of its name."""
    if what == "module":
        return obj.__name__
    target = getattr(obj, "fget", None) or getattr(obj, "func", None) or obj
    module = getattr(target, "__module__", None)
    if isinstance(module, str) and module.split(".")[0] == "ffcode":
        return module
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:end])).__name__
        except ImportError:
            continue
    return "ffcode"


def _run_examples(app, what, name, obj, options, lines):
    """Runs a docstring's >>> examples in the doctest build: each block becomes a doctest
    directive of the object's own group, set up with its module's globals, so that the
    examples run as tests/test_docstrings.py runs them, and read the same."""
    if not any(line.lstrip().startswith(">>>") for line in lines):
        return
    group = name
    out, i = [], 0
    setup = (f".. testsetup:: {group}", "",
             f"   import importlib as _importlib",
             f"   globals().update({{k: v for k, v in vars(_importlib.import_module("
             f"{_module_of(what, name, obj)!r})).items() if not k.startswith('__')}})", "")
    out.extend(setup)
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = line[:len(line) - len(line.lstrip())]
            out.extend([f"{indent}.. doctest:: {group}", ""])
            while i < len(lines) and lines[i].strip():
                out.append("   " + lines[i])
                i += 1
            out.append("")
            continue
        out.append(line)
        i += 1
    lines[:] = out


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign)
    app.connect("autodoc-process-docstring", _run_examples)
