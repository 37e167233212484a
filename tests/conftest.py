import hypothesis
import pytest

import ffcode

from helpers import PRIMES, galois_field as _galois_field, prime_id

hypothesis.settings.register_profile(
    "ffcode", max_examples=40, deadline=None, derandomize=True, database=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large])
hypothesis.settings.load_profile("ffcode")


@pytest.fixture(params=PRIMES, ids=prime_id)
def field(request):
    """ffcode.GF(p) for every prime of the suite."""
    return ffcode.GF(request.param)


@pytest.fixture
def galois_field(field):
    """The reference galois.GF(p) for the same p as the field fixture (cached per p)."""
    return _galois_field(field.p)
