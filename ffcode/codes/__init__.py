"""Polynomial codes: any recovery_threshold of n_workers local results give the exact output.

Every code speaks the contract of ``ffcode.codes.base`` (``encode`` returns an Encoding,
``compute(share, ...)`` is a worker's local result, ``decode(encoding, results)`` the exact
output); ``ProductCode`` defines a code of matrix products by its exponents alone.
"""
from ffcode.codes.base import Code, Encoding, Split
from ffcode.codes.entangled import EntangledPolynomialCode
from ffcode.codes.gasp import GASP
from ffcode.codes.hierarchical import HierarchicalCode, HierarchicalEncoding
from ffcode.codes.lcc import LCC
from ffcode.codes.matdot import MatDot
from ffcode.codes.mds import MDS
from ffcode.codes.polynomial import PolynomialCode
from ffcode.codes.product import ProductCode

__all__ = ["Code", "Encoding", "EntangledPolynomialCode", "GASP", "HierarchicalCode",
           "HierarchicalEncoding", "LCC", "MDS", "MatDot", "PolynomialCode", "ProductCode",
           "Split"]
