import os

import hypothesis
import pytest

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"     # Ray's nodes on 127.0.0.1 only

import ffcode

from helpers import PRIMES, galois_field as _galois_field, prime_id

hypothesis.settings.register_profile(
    "ffcode", max_examples=40, deadline=None, derandomize=True, database=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large])
hypothesis.settings.load_profile("ffcode")


def pytest_collection_modifyitems(config, items):
    """@pytest.mark.bounded(s) bounds a test even when it does not ask for the fixture."""
    for item in items:
        if item.get_closest_marker("bounded") and "bounded" not in item.fixturenames:
            item.fixturenames.insert(0, "bounded")


@pytest.fixture(params=PRIMES, ids=prime_id)
def field(request):
    """ffcode.GF(p) for every prime of the suite."""
    return ffcode.GF(request.param)


@pytest.fixture
def galois_field(field):
    """The reference galois.GF(p) for the same p as the field fixture (cached per p)."""
    return _galois_field(field.p)


@pytest.fixture
def bounded(request):
    """A hang guard for tests that start processes or sockets: SIGALRM after the seconds
    of @pytest.mark.bounded(s) (default 60), and afterwards no process of ours is left
    (the workers get a moment to exit). Under a running Ray (ray_session) Ray owns the
    processes: that fixture checks them when Ray shuts down."""
    import signal
    import time

    from helpers import descendants

    marker = request.node.get_closest_marker("bounded")
    seconds = marker.args[0] if marker else 60

    def expire(signum, frame):
        raise TimeoutError(f"test exceeded its bound of {seconds} s")

    before = descendants()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if "ray_session" in request.fixturenames:
        return
    deadline = time.monotonic() + 5
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not descendants() - before, f"processes left behind: {descendants() - before}"
