"""A HierarchicalCode runs through a cluster as any code: every scheme exact with the master
decoding all of it, on resident data too, verified when asked; correcting wrong workers is
refused before any work."""
import numpy as np
import pytest

from ffcode import GF, MDS, HierarchicalCode, MatDot, PolynomialCode
from ffcode.runtime import Faults

from helpers import shared_cluster

F = GF(2**31 - 1)
A, B, x = F.random((12, 6), seed=1), F.random((6, 5), seed=2), F.random(6, seed=3)
SCHEMES = ["compfs", "cfs", "classic", "systematic", "uncoded"]


cluster = shared_cluster(9)


@pytest.mark.bounded(90)
def test_every_scheme_is_exact(bounded, cluster):
    cases = [(HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 3)), (A, x), F.matmul(A, x)),
             (HierarchicalCode(PolynomialCode(F, 2, 1, 3), MatDot(F, 2, 3)), (A, B),
              F.matmul(A, B))]
    for code, inputs, expected in cases:
        for scheme in SCHEMES:
            y, report = cluster.run(code, *inputs, scheme=scheme, seed=4, timeout=30,
                                    verify=scheme != "uncoded",
                                    faults=Faults(slowdown={0: 3.0, 5: 3.0}))
            assert np.array_equal(y, expected), (code, scheme)
            assert report.verified is (True if scheme != "uncoded" else None)


@pytest.mark.bounded(60)
def test_resident_data_and_jobs_in_flight(bounded, cluster):
    code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 3))
    data = cluster.load(code, A)
    try:
        xs = [F.random(6, seed=10 + j) for j in range(4)]
        futures = [cluster.submit(data, v, timeout=30) for v in xs]
        assert all(np.array_equal(f.result(timeout=30)[0], F.matmul(A, v))
                   for f, v in zip(futures, xs))
    finally:
        cluster.unload(data)


@pytest.mark.bounded(30)
def test_adversaries_are_refused_before_any_work(bounded, cluster):
    code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 3))
    with pytest.raises(ValueError, match="any R results determine"):
        cluster.run(code, A, x, scheme="classic", adversaries=1)
