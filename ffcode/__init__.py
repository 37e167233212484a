"""ffcode: exact GF(p) arithmetic for coded distributed computing."""
from ffcode._field import GF, PrimeField
from ffcode.codes import LCC, MDS, MatDot, PolynomialCode
from ffcode.decoder import Decoder
from ffcode.pieces import Packet, PieceShare, piece_packets

__all__ = ["GF", "LCC", "MDS", "MatDot", "Cluster", "Decoder", "Faults", "Packet",
           "PieceShare", "PolynomialCode", "PrimeField", "piece_packets"]
__version__ = "0.1.0"

_RUNTIME = ("Cluster", "Faults")


def __getattr__(name):
    # The runtime (and zmq) load only when asked for: the core never imports them.
    if name in _RUNTIME:
        from ffcode import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module 'ffcode' has no attribute {name!r}")
