"""ffcode.learn on a cluster of relays: the data ships with every job, the gradient's sum
over the samples (X^T R, coding="mds") is added up at the relays, so that the master
receives one vector per group, and the model is the one a flat cluster of the same
workers trains, bit for bit; coding="lcc" is forwarded, and equally exact."""
import numpy as np
import pytest

from ffcode import Faults, HierarchicalCode, MatDot
from ffcode.learn import LinearRegression, LogisticRegression, MultiTaskLinearRegression
from ffcode.learn.gradients import summed_at_relays

from helpers import shared_cluster
from test_learn import small_problem

cluster = shared_cluster(6, groups=3)
flat = shared_cluster(6)


@pytest.mark.bounded(120)
def test_the_gradients_sum_is_added_up_at_the_relays(bounded, cluster, flat):
    X, y = small_problem(seed=3)
    target = X @ [0.5, -1.0, 2.0, 0.25]
    model = LinearRegression(iterations=6, seed=1).fit(X, target, cluster=cluster)
    same = LinearRegression(iterations=6, seed=1, n_workers=6).fit(X, target, cluster=flat)
    assert np.array_equal(model.coef_, same.coef_) and model.intercept_ == same.intercept_
    assert model.load_seconds_ == 0 and model.loaded_bytes_ == 0     # shipped with each job
    summed = model.codes_[1]
    assert isinstance(summed, HierarchicalCode) and isinstance(summed.outer, MatDot)
    for step in model.history_:
        _, second = step.reports
        assert len(second.workers) == 3             # the relays: one vector per group,
        for relay in second.workers:                # in at most m pieces
            assert len(relay.packets) <= second.pieces
        assert any(relay.group for relay in second.workers)


@pytest.mark.bounded(120)
def test_lcc_and_many_tasks_through_relays(bounded, cluster, flat):
    X, y = small_problem(seed=4)
    model = LogisticRegression(coding="lcc", iterations=4, seed=2).fit(X, y, cluster=cluster)
    same = LogisticRegression(coding="lcc", iterations=4, seed=2).fit(X, y, cluster=flat)
    assert np.array_equal(model.coef_, same.coef_)
    Y = np.column_stack([X @ [1.0, 0, 0, 0], X @ [0, 0, 1.0, -1.0]])
    tasks = MultiTaskLinearRegression(iterations=3, seed=3).fit(X, Y, cluster=cluster)
    again = MultiTaskLinearRegression(iterations=3, seed=3).fit(X, Y, cluster=flat)
    assert np.array_equal(tasks.coef_, again.coef_)


@pytest.mark.bounded(120)
def test_gradient_coding_through_relays(bounded, cluster, flat):
    """coding="gradient": the code's workers are the relays, each group sums its
    partitions' gradients; a relay that never answers changes nothing, bit for bit, and
    the fit is the flat one to the fixed point's precision (each group rounds its parts)."""
    X, y = small_problem(seed=6)
    model = LogisticRegression(coding="gradient", iterations=5).fit(X, y, cluster=cluster)
    assert model.codes_[0].n_workers == 3 and model.loaded_bytes_ == 0
    slow = LogisticRegression(coding="gradient", iterations=5,
                              faults=Faults(delay={0: (30.0, 0)})).fit(X, y, cluster=cluster)
    assert np.array_equal(model.coef_, slow.coef_)
    assert all(not step.reports[0].workers[0].packets for step in slow.history_)
    same = LogisticRegression(coding="gradient", iterations=5).fit(X, y, cluster=flat)
    np.testing.assert_allclose(model.coef_, same.coef_, atol=1e-8)


@pytest.mark.bounded(60)
def test_faults_name_relays(bounded, cluster):
    X, y = small_problem(seed=5)
    model = LinearRegression(iterations=2, faults=Faults(delay={2: (0.05, 0)}))
    model.fit(X, X[:, 0], cluster=cluster)
    with pytest.raises(ValueError, match=r"names workers \[4\]"):
        LinearRegression(iterations=2, faults=Faults(delay={4: (0.05, 0)})).fit(
            X, X[:, 0], cluster=cluster)


def test_the_summing_code_leaves_one_to_spare():
    from ffcode import GF
    F = GF(2**61 - 1)
    for groups, size, R_o, R_i in [(1, 1, 1, 1), (2, 3, 1, 1), (3, 4, 1, 3), (5, 6, 3, 5)]:
        code = summed_at_relays(F, groups, size)
        assert (code.outer.recovery_threshold, code.inner.recovery_threshold) == (R_o, R_i)
        assert code.groups == groups and code.group_size == size
