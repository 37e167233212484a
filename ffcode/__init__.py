"""ffcode: exact GF(p) arithmetic for coded distributed computing."""
from ffcode._field import GF, PrimeField

__all__ = ["GF", "PrimeField"]
__version__ = "0.1.0"
