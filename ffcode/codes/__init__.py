"""Polynomial codes: any recovery_threshold of n_workers local results give the exact output.

Every code speaks the contract of ``ffcode.codes.base`` (``encode`` returns an Encoding,
``compute(share, ...)`` is a worker's local result, ``decode(encoding, results)`` the exact
output); ``ProductCode`` defines a code of matrix products by its exponents alone. The codes
by name (``make_code``, ``register_code``: ffcode.codes.registry) are what the command line,
the experiments and ffcode.learn build.
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
from ffcode.codes.registry import (CodeEntry, code_entry, code_names, make_code, register_code,
                                   threshold, unregister_code)

__all__ = ["Code", "CodeEntry", "Encoding", "EntangledPolynomialCode", "GASP",
           "HierarchicalCode", "HierarchicalEncoding", "LCC", "MDS", "MatDot", "PolynomialCode",
           "ProductCode", "Split", "code_entry", "code_names", "make_code", "register_code",
           "threshold", "unregister_code"]
