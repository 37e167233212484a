"""The public names of ``ffcode``: everything a user needs imports from the package, and the
runtime's names (and zmq) load only when asked for."""
import subprocess
import sys
import tempfile
import types

import pytest

import ffcode

RUNTIME = {"Cluster": "master.cluster", "Faults": "shared.faults", "JobFuture": "master.driver",
           "Report": "shared.report"}
CORE = {"Code": "codes", "Encoding": "codes", "ProductCode": "codes",
        "EntangledPolynomialCode": "codes", "GASP": "codes", "HierarchicalCode": "codes",
        "DecodingError": "errors", "FFCodeError": "errors", "Decoder": "decoding.decoder",
        "InvalidParameterError": "errors",
        "ClusterBusy": "errors", "ClusterError": "errors", "JobFailed": "errors", "JobTimeout": "errors",
        "VerificationError": "errors", "WorkerError": "errors",
        "GF": "field", "LCC": "codes", "MDS": "codes", "MatDot": "codes", "Packet": "pieces",
        "PieceShare": "pieces", "PolynomialCode": "codes", "PrimeField": "field",
        "RobustDecoder": "decoding.robust", "piece_packets": "pieces",
        "GradientCode": "gradcoding.codes", "FractionalRepetition": "gradcoding.codes",
        "CyclicRepetition": "gradcoding.codes"}


def test_all_is_sorted_and_complete():
    """__all__ is sorted, names every public name and no missing one; dir() lists them all,
    the lazy runtime names included."""
    assert ffcode.__all__ == sorted(ffcode.__all__)
    assert set(ffcode.__all__) == set(CORE) | set(RUNTIME)
    public = {name for name in dir(ffcode) if not name.startswith("_")
              and not isinstance(getattr(ffcode, name), types.ModuleType)}
    assert public == set(ffcode.__all__)


@pytest.mark.parametrize("name", sorted(CORE))
def test_core_names(name):
    import importlib
    module = importlib.import_module(f"ffcode.{CORE[name]}")
    assert getattr(ffcode, name) is getattr(module, name)


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_runtime_names(name):
    """The same objects as in ffcode.runtime (one class, whichever way it is imported)."""
    import importlib
    module = importlib.import_module(f"ffcode.runtime.{RUNTIME[name]}")
    assert getattr(ffcode, name) is getattr(module, name)
    namespace = {}
    exec(f"from ffcode import {name}", namespace)
    assert namespace[name] is getattr(module, name)


def test_error_hierarchy():
    """Catching ClusterError catches every failure of a job; a decoding failure is a
    ValueError (bad results), not a runtime error."""
    for name in ("JobFailed", "JobTimeout", "VerificationError", "WorkerError"):
        assert issubclass(getattr(ffcode, name), ffcode.ClusterError)
    assert issubclass(ffcode.JobTimeout, ffcode.JobFailed)
    assert issubclass(ffcode.VerificationError, ffcode.JobFailed)
    assert issubclass(ffcode.DecodingError, ValueError)


def test_one_root_error():
    """Every exception ffcode defines is an FFCodeError, and keeps the built-in base that
    callers catch today (ValueError for decoding, RuntimeError for the runtime)."""
    from ffcode import errors
    from ffcode.decoding import robust as byzantine
    defined = [value for value in vars(errors).values()
               if isinstance(value, type) and issubclass(value, Exception)]
    assert len(defined) >= 9
    for error in defined:
        assert issubclass(error, ffcode.FFCodeError), error
    assert issubclass(ffcode.ClusterError, RuntimeError)
    assert issubclass(errors.ProtocolError, ffcode.FFCodeError)
    assert byzantine.DecodingError is ffcode.DecodingError
    F = ffcode.GF(65521)
    code = ffcode.MDS(F, 1, 3)
    A = F.random((4, 2), seed=1)
    shares = code.encode(A)
    x = F.random(2, seed=2)
    results = {i: code.compute(shares[i], x) for i in range(3)}
    results[0] = F.add(results[0], 1)
    results[1] = F.add(results[1], 2)
    with pytest.raises(ffcode.FFCodeError, match="not within 1 errors"):
        byzantine.decode(shares, results, 1)


def test_unknown_name():
    with pytest.raises(AttributeError, match="has no attribute 'Clusterr'"):
        ffcode.Clusterr
    with pytest.raises(ImportError):
        exec("from ffcode import ProtocolError", {})


def _fresh(code: str):
    """Runs code in a fresh interpreter (nothing imported yet); its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=tempfile.gettempdir())   # not the source tree
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.bounded(60)
def test_import_stays_lazy(bounded):
    """import ffcode, dir(ffcode) and the core names load neither zmq nor ffcode.runtime;
    asking for a runtime name loads it."""
    _fresh("import sys, ffcode\n"
           "names = dir(ffcode)\n"
           "from ffcode import GF, Decoder, RobustDecoder, DecodingError\n"
           "assert 'JobFailed' in names and 'Report' in names\n"
           "loaded = [m for m in sys.modules if m == 'zmq' or m.startswith('zmq.')\n"
           "          or m.startswith('ffcode.runtime')]\n"
           "assert not loaded, loaded\n"
           "from ffcode import Report\n"
           "assert 'ffcode.runtime.shared.report' in sys.modules\n")
