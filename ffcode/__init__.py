"""ffcode: exact GF(p) arithmetic for coded distributed computing."""
from ffcode._field import GF, PrimeField
from ffcode.codes import LCC, MDS, MatDot, PolynomialCode

__all__ = ["GF", "LCC", "MDS", "MatDot", "PolynomialCode", "PrimeField"]
__version__ = "0.1.0"
