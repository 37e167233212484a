"""ffcode: exact GF(p) arithmetic for coded distributed computing."""
from ffcode.field import GF, PrimeField
from ffcode.decoding.robust import RobustDecoder
from ffcode.codes import (GASP, LCC, MDS, Code, Encoding, EntangledPolynomialCode, MatDot,
                          PolynomialCode, ProductCode)
from ffcode.decoding.decoder import Decoder
from ffcode.errors import (ClusterError, DecodingError, FFCodeError, JobFailed, JobTimeout,
                           VerificationError, WorkerError)
from ffcode.pieces import Packet, PieceShare, piece_packets

from ffcode.version import __version__  # noqa: F401 (the package's version)

# The runtime (and zmq) load only when one of its names is asked for: the core never
# imports it.
_RUNTIME = ("Cluster", "Faults", "Report")

__all__ = ["Cluster", "ClusterError", "Code", "Decoder", "DecodingError", "Encoding",
           "EntangledPolynomialCode", "FFCodeError", "Faults", "GASP", "GF", "JobFailed", "JobTimeout", "LCC", "MDS", "MatDot",
           "Packet", "PieceShare", "PolynomialCode", "PrimeField", "ProductCode", "Report",
           "RobustDecoder", "VerificationError", "WorkerError", "piece_packets"]


def __getattr__(name):
    if name in _RUNTIME:
        from ffcode import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module 'ffcode' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_RUNTIME))
