"""The examples in ffcode's docstrings run and give what they show."""
import doctest
import importlib

import pytest

MODULES = ["ffcode", "ffcode._field", "ffcode._matmul", "ffcode._linalg", "ffcode._validate",
           "ffcode.codes.base", "ffcode.codes.product", "ffcode.codes.mds",
           "ffcode.codes.polynomial", "ffcode.codes.matdot", "ffcode.codes.lcc",
           "ffcode.codes.entangled", "ffcode.codes.gasp", "ffcode.allocation",
           "ffcode.collect", "ffcode.pieces", "ffcode.decoder", "ffcode.functions",
           "ffcode.sim", "ffcode.verify", "ffcode.byzantine", "ffcode.learn"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.failed == 0
    if name == "ffcode._field":     # GF, asarray, inv, rref and vandermonde have examples
        assert result.attempted >= 6
    if name == "ffcode.codes.product":
        assert result.attempted >= 4
    if name == "ffcode.learn":     # gradient_terms and sigmoid_polynomial
        assert result.attempted >= 5
