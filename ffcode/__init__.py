"""ffcode: an exact GF(p) engine for coded distributed computing.

A coded computation splits a large computation (A @ B, A @ x, a polynomial of a data set)
over N workers with a polynomial code, so that the results of any R of them (the code's
recovery threshold) give the exact output. Every name a program needs imports from here:

- the field: ``GF(p)`` for any prime p < 2**63 (a ``PrimeField``), with checked, exact
  arithmetic and matrix products at BLAS speed;
- the codes, one encode / compute / decode contract (``Code``, ``Encoding``,
  ``ProductCode``): ``MDS``, ``PolynomialCode``, ``MatDot``, ``EntangledPolynomialCode``,
  ``GASP`` and ``LCC``;
- coding at full speed: results split into m pieces and sent as packets
  (``piece_packets``, ``Packet``, ``PieceShare``), a ``Decoder`` that decodes from any
  m·R independent packets, and a ``RobustDecoder`` that does so despite wrong workers;
- the runtime, loaded on first use: ``Cluster`` runs coded jobs on local, remote or Ray
  worker processes, ``Faults`` injects stragglers, crashes and wrong results, and each
  job's ``Report`` tells what happened;
- gradient codes (``GradientCode``: ``FractionalRepetition``, ``CyclicRepetition``): the
  exact sum of a data set's gradient from any n - s of n workers, and at full speed from
  the partitions they have finished (``ffcode.gradcoding``);
- the errors, all subclasses of ``FFCodeError``: a bad argument anywhere raises
  ``InvalidParameterError`` (also a ValueError and a TypeError).

``ffcode.learn`` (coded linear and logistic regression), ``ffcode.sim`` (a simulator of
every scheme) and ``ffcode.decoding`` (verification and robust decoding) hold more.

A product coded for 5 workers, any 4 of which suffice:

>>> import ffcode
>>> F = ffcode.GF(2**31 - 1)
>>> A, B = F.random((6, 4), seed=1), F.random((4, 6), seed=2)
>>> code = ffcode.PolynomialCode(F, a=2, b=2, n_workers=5)
>>> code.recovery_threshold
4
>>> shares = code.encode(A, B)
>>> results = {i: code.compute(shares[i]) for i in (0, 2, 3, 4)}    # worker 1 straggles
>>> bool((code.decode(shares, results) == F.matmul(A, B)).all())
True

On worker processes, ``with ffcode.Cluster(n_workers=4) as cluster: C, report =
cluster.run(code, A, B)`` does the same, and decodes as soon as the results suffice.
"""
import typing as _typing

from ffcode.field import GF, PrimeField
from ffcode.decoding.robust import RobustDecoder
from ffcode.codes import (GASP, LCC, MDS, Code, Encoding, EntangledPolynomialCode,
                          HierarchicalCode, MatDot, PolynomialCode, ProductCode)
from ffcode.decoding.decoder import Decoder
from ffcode.gradcoding import CyclicRepetition, FractionalRepetition, GradientCode
from ffcode.errors import (ClusterBusy, ClusterError, DecodingError, FFCodeError,
                           InvalidParameterError, JobFailed, JobTimeout, VerificationError,
                           WorkerError)
from ffcode.pieces import Packet, PieceShare, piece_packets

from ffcode.version import __version__  # noqa: F401 (the package's version)

if _typing.TYPE_CHECKING:   # what __getattr__ loads at run time, as type checkers see it
    from ffcode.runtime import Cluster, Faults, JobFuture, Report

# The runtime (and zmq) load only when one of its names is asked for: the core never
# imports it.
_RUNTIME = ("Cluster", "Faults", "JobFuture", "Report")

__all__ = ["Cluster", "ClusterBusy", "ClusterError", "Code", "CyclicRepetition", "Decoder",
           "DecodingError", "Encoding", "EntangledPolynomialCode", "FFCodeError", "Faults",
           "FractionalRepetition", "GASP", "GF", "GradientCode", "HierarchicalCode",
           "InvalidParameterError", "JobFailed", "JobFuture", "JobTimeout", "LCC", "MDS",
           "MatDot", "Packet", "PieceShare", "PolynomialCode", "PrimeField", "ProductCode",
           "Report", "RobustDecoder", "VerificationError", "WorkerError", "piece_packets"]


def __getattr__(name: str) -> object:
    if name in _RUNTIME:
        from ffcode import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module 'ffcode' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_RUNTIME))
