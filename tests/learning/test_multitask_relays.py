"""The multi-task estimators through relays (``topology=``, ``communication=``): each task a
user of the topology, its step computed by its relays on a cluster; coded and uncoded give
the same model bit for bit, near the coded-product fit of the same objective; the
topology's spelling is taken; a topology of another number of tasks, and a bad
communication, are refused."""
import numpy as np
import pytest
from sklearn.base import clone

import ffcode
from ffcode import learn
from ffcode.errors import InvalidParameterError
from ffcode.learn import MultiTaskLinearRegression, MultiTaskLogisticRegression
from ffcode.mtl import Topology, coded_loads, uncoded_loads

from helpers import shared_cluster
from test_multitask import labels, related

cluster = shared_cluster(4)


@pytest.mark.bounded(90)
def test_related_regressions_through_relays(bounded, cluster):
    """Six related regressions of their own data (one weighted), a task on every 2 of 4
    relays: coded and uncoded fits equal bit for bit, their steps' bytes the loads, and
    both near the coded product's fit of the same objective."""
    Xs, ys, _ = related(tasks=6)
    weights = [None] * 5 + [np.arange(len(Xs[5])) % 3 + 1.0]
    fits = {}
    for communication in ("coded", "uncoded"):
        model = MultiTaskLinearRegression(coupling=0.5, iterations=40,
                                          topology="combination:4:2",
                                          communication=communication)
        fits[communication] = model.fit(Xs, ys, weights, cluster=cluster)
    coded, plain = fits["coded"], fits["uncoded"]
    assert coded.coef_.tobytes() == plain.coef_.tobytes()
    assert coded.intercept_.tobytes() == plain.intercept_.tobytes()
    topology, update = Topology.combination(4, 2), coded.relay_report_.update_bytes
    assert update == 6 * 8 and coded.history_ == [] and coded.codes_ == ()
    assert coded.relay_report_.uplink == [coded_loads(topology).uplink * update] * 40
    assert plain.relay_report_.downlink == [uncoded_loads(topology).downlink * update] * 40
    product = MultiTaskLinearRegression(coupling=0.5, iterations=40).fit(
        Xs, ys, weights, cluster=cluster)
    assert np.allclose(coded.coef_, product.coef_, atol=1e-3)
    assert np.allclose(coded.intercept_, product.intercept_, atol=1e-3)
    assert coded.score(Xs, ys) > 0.95


@pytest.mark.bounded(90)
def test_one_vs_rest_through_relays(bounded, cluster):
    """Three labels on shared features, a task each on a triangle of relays: near the
    coded product's fit, the same predictions."""
    X, Y = labels(tasks=3)
    relayed = MultiTaskLogisticRegression(coupling=0.2, iterations=30,
                                          topology=Topology.combination(3, 2)).fit(
        X, Y, cluster=cluster)
    product = MultiTaskLogisticRegression(coupling=0.2, iterations=30).fit(
        X, Y, cluster=cluster)
    assert np.allclose(relayed.coef_, product.coef_, atol=1e-3)
    assert (relayed.predict(X) == product.predict(X)).all()
    assert relayed.relay_report_.communication == "coded"
    slow = MultiTaskLogisticRegression(coupling=0.2, iterations=3, link_rate=2e5,
                                       topology=Topology.combination(3, 2)).fit(
        X, Y, cluster=cluster)
    report = slow.relay_report_
    assert report.link_rate == 2e5 and report.network == "turns"
    assert report.downlink_seconds == [report.downlink[0] / 2e5] * 3


@pytest.mark.bounded(90)
def test_users_as_workers_of_their_own_fit_the_same_model(bounded, cluster):
    """layout="hierarchical": each task's user a worker of its own, after the relays (a
    fit without a cluster opens one of a worker per relay and user): the flat fit's model
    bit for bit, with both hops counted at the link rate."""
    Xs, ys, _ = related(tasks=3)
    flat = MultiTaskLinearRegression(coupling=0.5, iterations=6, topology="combination:3:2")
    flat.fit(Xs, ys, cluster=cluster)
    users = clone(flat).set_params(layout="hierarchical", link_rate=1e8).fit(Xs, ys)
    assert users.coef_.tobytes() == flat.coef_.tobytes()
    assert users.intercept_.tobytes() == flat.intercept_.tobytes()
    report = users.relay_report_
    assert report.layout == "hierarchical" and report.users == [3, 4, 5]
    assert report.user_rate == report.link_rate == 1e8
    assert report.user_uplink == [6 * report.update_bytes] * 6


@pytest.mark.bounded(30)
def test_a_bad_topology_or_communication_is_refused(bounded, cluster):
    Xs, ys, _ = related(tasks=3)
    bad = [(dict(topology="combination:4:2"), "a user per task \\(3\\), not 6 users"),
           (dict(topology="ring"), "Topology 'ring'"),
           (dict(topology=Topology.combination(3, 2), communication="loud"),
            "'communication'")]
    triangle = Topology.combination(3, 2)
    hyperparameters = [(dict(communication="uncoded"), "'communication' is for a training through "
                                            "relays \\(topology=\\)"),
            (dict(link_rate=1e6), "'link_rate' is for a training through relays"),
            (dict(layout="hierarchical"), "'layout' is for a training through relays"),
            (dict(topology=triangle, layout="tree"), "'layout'"),
            (dict(topology=triangle, link_rate=-1.0), "'link_rate'"),
            (dict(topology=triangle, faults=ffcode.Faults(slowdown={0: 2})),
             "'faults' is for the coded descent's jobs"),
            (dict(topology=triangle, progress=print), "'progress' is for")]
    for params, message in bad + hyperparameters:
        model = MultiTaskLinearRegression(iterations=2, **params)
        with pytest.raises(InvalidParameterError, match=message):
            model.fit(Xs, ys, cluster=cluster)
        assert not hasattr(model, "coef_")
        if (params, message) in hyperparameters:        # refused before any data is read
            with pytest.raises(InvalidParameterError, match=message):
                learn.settings(model, 4)
    model = MultiTaskLinearRegression(topology="0,1;1,2", communication="uncoded")
    assert clone(model).get_params()["topology"] == "0,1;1,2"
