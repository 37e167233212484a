"""Allocation by speed at the edges of the numbers: speeds as large as a float goes (or an
int larger than any float), or as small, allocate exactly as their ratios say, and NaN,
infinities, non-positive speeds and non-numbers are refused naming the problem."""
from fractions import Fraction

import numpy as np
import pytest

import ffcode
from ffcode import MDS, allocation
from ffcode.runtime import Cluster

F = ffcode.GF(2**31 - 1)
A = F.random((12, 5), seed=1)
X = F.random((5, 2), seed=2)


@pytest.mark.parametrize("n_shares, speeds, counts", [
    (6, [1e308, 1, 1], (4, 1, 1)),              # 6 * 1e308 overflowed a float
    (6, [1e308, 1e308], (3, 3)),                # so did their sum
    (9, [1e308, 1e308, 1e308], (3, 3, 3)),
    (6, [1.7976931348623157e308, 1e308], (4, 2)),
    (6, [10**400, 1, 1], (4, 1, 1)),            # no float holds 10**400
    (6, [10**400, 2 * 10**400], (2, 4)),
    (6, [5e-324, 5e-324], (3, 3)),              # subnormal: their ratio is still exact
    (6, [1e308, 5e-324], (5, 1)),
    (6, [np.float64(1e308), np.int64(1), Fraction(1, 10**400)], (4, 1, 1)),
])
def test_extreme_speeds_allocate_by_their_ratios(n_shares, speeds, counts):
    assert allocation.proportional(n_shares, speeds) == counts


@pytest.mark.parametrize("speeds", [[3, 2, 1], [1, 2.5, 7.25], [10, 10, 1, 1, 1, 1],
                                    [1, 1, 1, 0.25, 0.25, 0.25]])
@pytest.mark.parametrize("scale", [2.0 ** -1000, 2.0 ** 1000, 10**400])
def test_only_the_ratios_of_speeds_matter(speeds, scale):
    """The same speeds scaled to the edges of the floats (or past them) allocate the same."""
    for total in (6, 12, 30):
        scaled = [Fraction(s) * scale for s in speeds] if isinstance(scale, int) else \
            [s * scale for s in speeds]
        assert allocation.proportional(total, scaled) == \
            allocation.proportional(total, speeds)


@pytest.mark.parametrize("speeds, error, message", [
    ([float("nan"), 1, 1], ValueError, r"'speeds' must hold finite speeds, not nan "
                                        r"\(worker 0\)"),
    ([1, float("inf"), 1], ValueError, r"finite speeds, not inf \(worker 1\)"),
    ([1, 1, -float("inf")], ValueError, r"finite speeds, not -inf \(worker 2\)"),
    ([1, 0, 1], ValueError, r"'speeds' must hold positive speeds, not 0 \(worker 1\)"),
    ([1, -10**400, 1], ValueError, r"positive speeds"),
    ([1, -2.5], ValueError, r"positive speeds, not -2.5"),
    ([True, 1], TypeError, r"'speeds' must hold numbers, not bool"),
    ([1, "2"], TypeError, r"must hold numbers, not str \(worker 1\)"),
    ([1, None], TypeError, r"not NoneType"),
    ([1, 1j], TypeError, r"not complex"),
    ([], ValueError, r"at least one worker's speed"),
    ("fast", TypeError, r"'speeds' must be a sequence of numbers"),
])
def test_bad_speeds_refused(speeds, error, message):
    with pytest.raises(error, match=message):
        allocation.proportional(6, speeds)
    with pytest.raises(error, match=message):
        allocation.checked_speeds(speeds)


def test_checked_speeds_names_the_argument():
    with pytest.raises(ValueError, match="Argument 'allocate' must hold finite speeds"):
        allocation.checked_speeds([1, float("nan")], "allocate")


@pytest.mark.bounded(60)
def test_cluster_allocates_extreme_speeds(bounded):
    """Cluster.run(allocate=...) with speeds at or past the floats' range: the job runs with
    the shares their ratios give (before: OverflowError); NaN is refused naming it."""
    with Cluster(3) as cluster:
        cluster.wait()
        for speeds in ([1e308, 1, 1], [10**400, 1, 1]):
            output, report = cluster.run(MDS(F, 3, 6), A, X, allocate=speeds, seed=1)
            assert np.array_equal(output, F.matmul(A, X))
            assert [len(w.shares) for w in report.workers] == [4, 1, 1]
        with pytest.raises(ValueError, match="finite speeds, not nan"):
            cluster.run(MDS(F, 3, 6), A, X, allocate=[float("nan"), 1, 1])
