"""ffcode: exact GF(p) arithmetic for coded distributed computing."""
from ffcode._field import GF, PrimeField
from ffcode.codes import LCC, MDS, MatDot, PolynomialCode
from ffcode.decoder import Decoder
from ffcode.pieces import Packet, PieceShare, piece_packets

__all__ = ["GF", "LCC", "MDS", "MatDot", "Decoder", "Packet", "PieceShare", "PolynomialCode",
           "PrimeField", "piece_packets"]
__version__ = "0.1.0"
