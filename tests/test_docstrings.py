"""The examples in ffcode's docstrings run and give what they show."""
import doctest
import importlib

import pytest

MODULES = ["ffcode", "ffcode.field", "ffcode._matmul", "ffcode._linalg", "ffcode.checks", "ffcode.schemes", "ffcode.errors",
           "ffcode.codes.base", "ffcode.codes.product", "ffcode.codes.mds",
           "ffcode.codes.polynomial", "ffcode.codes.matdot", "ffcode.codes.lcc",
           "ffcode.codes.entangled", "ffcode.codes.gasp", "ffcode.allocation",
           "ffcode.decoding.collectors", "ffcode.pieces", "ffcode.decoding.decoder", "ffcode.functions",
           "ffcode.sim", "ffcode.decoding.verify", "ffcode.decoding.robust", "ffcode.learn"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.failed == 0
    if name == "ffcode.field":     # GF, asarray, inv, rref and vandermonde have examples
        assert result.attempted >= 6
    if name == "ffcode.codes.product":
        assert result.attempted >= 4
    if name == "ffcode.learn":     # gradient_terms and sigmoid_polynomial
        assert result.attempted >= 5
