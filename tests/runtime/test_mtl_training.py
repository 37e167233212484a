"""Multi-task training through relays on local workers (ffcode.runtime.train_multitask):
coded and uncoded trainings give one model bit for bit, equal to the same training in one
process; each step's bytes per direction are the exchange's loads; the emulated hop takes
its time; a lost relay is done without where its users have another, and named where not;
relays that disagree, and bad arguments and tasks, are refused."""
import os

import numpy as np
import pytest

import ffcode
from ffcode import GF
from ffcode.errors import InvalidParameterError, JobFailed, ProtocolError, WorkerError
from ffcode.mtl import Topology, coded_loads, local
from ffcode.runtime import MultiTaskReport, train_multitask
from ffcode.runtime.master.mtl import check_decoded
from ffcode.runtime.shared.mtl import MultiTask

from helpers import reap, shared_cluster
from test_remote import LOOPBACK, exits, start_workers

cluster = shared_cluster(4)
RATE, COUPLING = np.array([0.1]), np.array([0.5])


def update(W, user, X, y, rate, coupling, *victim):
    """A gradient step of user's least squares, pulled towards the mean of every task's
    parameters; a process named by ``victim`` exits once the model has moved."""
    if victim and os.getpid() == int(victim[0][0]) and np.abs(W).sum() > 0:
        os._exit(1)
    w = W[user]
    gradient = X.T @ (X @ w - y) / len(y) + coupling[0] * (w - W.mean(axis=0))
    return w - rate[0] * gradient


def noisy(W, user, X, y, rate, coupling):
    """An update that differs between processes."""
    return W[user] + os.getpid() % 7


def short(W, user, X, y, rate, coupling):
    """An update one parameter short."""
    return W[user][:-1]


def tasks(users, d=4, seed=0):
    """Each user's related regression task: 30 samples of d features."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=d)
    return [(X, X @ (shared + 0.3 * rng.normal(size=d)) + 0.1 * rng.normal(size=30))
            for X in (rng.normal(size=(30, d)) for _ in range(users))]


def in_one_process(data, steps, W0, scale=2.0 ** 20, p=(1 << 61) - 1, f=update,
                   args=(RATE, COUPLING)):
    """The same training with no exchange: every update in fixed point, in turn."""
    F = GF(p)
    fixed = F.from_real(W0, scale)
    for _ in range(steps):
        W = F.to_real(fixed, scale)
        fixed = np.stack([F.from_real(f(W, u, *data[u], *args), scale)
                          for u in range(len(data))])
    return F.to_real(fixed, scale)


TOPOLOGIES = [Topology.combination(3, 2), Topology.combination(4, 2),
              Topology([[0, 1, 2], [2, 3], [3, 4, 0], [1]]), Topology.disjoint(2, 2)]


@pytest.mark.bounded(90)
@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: str(t.groups))
def test_coded_and_uncoded_give_one_model_bit_for_bit_and_their_loads(bounded, cluster,
                                                                      topology):
    """On both networks, coded and uncoded end with the single process's model, bit for
    bit; every step's bytes are the loads times an update's (d a multiple of the split),
    the coded never above the uncoded."""
    data, steps = tasks(topology.users, d=12), 4
    W0 = np.zeros((topology.users, 12))
    want = in_one_process(data, steps, W0)
    got = {}
    for communication in ("coded", "uncoded"):
        for network in ("turns", "links"):
            W, report = train_multitask(cluster, topology, data, update, steps, model=W0,
                                        args=[RATE, COUPLING], communication=communication,
                                        network=network)
            assert isinstance(report, MultiTaskReport) and report.lost == []
            assert W.tobytes() == want.tobytes(), (communication, network)
            loads, size = report.loads, report.update_bytes
            assert size == 12 * 8 and len(report.uplink) == steps
            down = loads.downlink if network == "turns" else loads.downlink_links
            assert report.uplink == [int(loads.uplink * size)] * steps
            assert report.downlink == [int(down * size)] * steps
            got[communication, network] = report
    for network in ("turns", "links"):
        coded, plain = got["coded", network], got["uncoded", network]
        assert coded.uplink[0] <= plain.uplink[0] and coded.downlink[0] <= plain.downlink[0]
    assert got["coded", "turns"].to_dict()["loads"]["uplink"] == \
        str(got["coded", "turns"].loads.uplink)


@pytest.mark.bounded(60)
def test_related_classifications_with_the_library_update(bounded, cluster):
    """ffcode.mtl.local's logistic step on related binary tasks, coded on links: the
    single process's model bit for bit, and it separates each task's training data."""
    topology, d = Topology.cyclic(4, 2, 1), 5
    data = [(X, (y > np.median(y)).astype(float)) for X, y in tasks(topology.users, d)]
    W0 = np.zeros((topology.users, d))
    W, _ = train_multitask(cluster, topology, data, local.logistic, 30, model=W0,
                           args=[[1.0], [0.1]], network="links")
    want = in_one_process(data, 30, W0, f=local.logistic, args=([1.0], [0.1]))
    assert W.tobytes() == want.tobytes()
    assert all(np.mean((X @ w > 0) == (y > 0.5)) > 0.8 for w, (X, y) in zip(W, data))
    assert local.least_squares(W, 1, *data[1], RATE, COUPLING).tolist() == \
        update(W, 1, *data[1], RATE, COUPLING).tolist()


@pytest.mark.bounded(60)
def test_the_emulated_hop_takes_the_bytes_time(bounded, cluster):
    """At 200 kB/s every step waits for its messages' bytes: on turns the relays' one
    after another, on links the largest; the server's message at the rate."""
    topology, d, steps, rate = Topology.combination(4, 2), 2000, 2, 2e5
    data = tasks(topology.users, d=d)
    W0 = np.zeros((topology.users, d))
    for network in ("turns", "links"):
        W, report = train_multitask(cluster, topology, data, update, steps, model=W0,
                                    args=[RATE, COUPLING], network=network, link_rate=rate)
        assert W.tobytes() == in_one_process(data, steps, W0).tobytes()
        per_relay = report.uplink[0] / 4 / rate
        least = report.uplink[0] / rate if network == "turns" else per_relay
        assert all(s >= 0.5 * least for s in report.uplink_seconds), report.uplink_seconds
        sizes = report.downlink[0] if network == "turns" else report.downlink[0] / 4
        assert report.downlink_seconds == [sizes / rate] * steps
        assert report.total >= steps * report.downlink_seconds[0]


@pytest.mark.bounded(90)
def test_a_lost_relay_is_done_without_and_the_model_is_exact(bounded):
    """A relay whose process exits in the second step: every user has another relay, so
    the step runs again on the three left, and the model is still the single process's
    bit for bit; the report names the worker."""
    topology = Topology.combination(4, 2)
    data, steps = tasks(topology.users), 3
    W0 = np.zeros((topology.users, 4))
    with ffcode.Cluster(4) as c:
        victim = c.wait()[2].pid
        W, report = train_multitask(c, topology, data, update, steps, model=W0,
                                    args=[RATE, COUPLING, np.array([victim])], timeout=60)
    assert W.tobytes() == in_one_process(data, steps, W0).tobytes()
    assert report.lost == [2] and report.relays == [0, 1, 3]
    assert report.loads == coded_loads(topology.without(relays=[2]).topology)


@pytest.mark.bounded(90)
def test_a_lost_relay_that_alone_serves_a_user_fails_naming_it(bounded):
    """Relay 1 alone serves user 2: its loss fails the training, naming the worker and
    the user."""
    topology = Topology([[0, 1], [1, 2]])
    data = tasks(3)
    with ffcode.Cluster(2) as c:
        victim = c.wait()[1].pid
        with pytest.raises(JobFailed, match=r"worker 1 lost: User 2 is served only by lost "):
            train_multitask(c, topology, data, update, 3, model=np.zeros((3, 4)),
                            args=[RATE, COUPLING, np.array([victim])], timeout=60)


@pytest.mark.bounded(60)
def test_relays_that_compute_different_updates_are_refused(bounded, cluster):
    """Relays 0 and 1 share user 1 and compute different updates of it: named."""
    with pytest.raises(JobFailed, match="computed different updates of user 1: its local "
                                        "update must be deterministic"):
        train_multitask(cluster, Topology([[0, 1], [1, 2]]), tasks(3), noisy, 1,
                        model=np.zeros((3, 4)), args=[RATE, COUPLING])


@pytest.mark.bounded(60)
def test_failures_in_the_relays_are_named(bounded, cluster):
    """An update beyond the fixed point's range, an update of the wrong shape; the next
    training runs."""
    t, data, W0 = Topology([[0, 1], [1, 2]]), tasks(3), np.zeros((3, 4))
    with pytest.raises(WorkerError, match="would wrap around mod p"):
        train_multitask(cluster, t, data, update, 1, model=W0, args=[[1e9], COUPLING],
                        field=65521, scale=1.0)
    with pytest.raises(WorkerError, match=r"the local update of user \d has shape \(3,\), "
                                          r"not its parameters' \(4,\)"):
        train_multitask(cluster, t, data, short, 1, model=W0, args=[RATE, COUPLING])
    W, _ = train_multitask(cluster, t, data, update, 2, model=W0, args=[RATE, COUPLING])
    assert W.tobytes() == in_one_process(data, 2, W0).tobytes()


@pytest.mark.bounded(30)
def test_bad_arguments_are_refused_before_anything_starts(bounded, cluster):
    t, data, W0 = Topology([[0, 1], [1, 2]]), tasks(3), np.zeros((3, 4))
    bad = [(dict(topology=[[0, 1]]), "must be an ffcode.mtl.Topology"),
           (dict(topology=Topology.combination(5, 2)), "5 relays, the cluster 4 workers"),
           (dict(model=np.zeros((2, 4))), "3 users' finite parameters"),
           (dict(model=np.full((3, 4), np.nan)), "finite parameters"),
           (dict(data=data[:2]), "3 users' arrays"),
           (dict(communication="loud"), "'communication'"),
           (dict(network="air"), "'network'"),
           (dict(link_rate=0), "'link_rate'"),
           (dict(field=12), "prime"),
           (dict(scale=-1.0), "'scale'"),
           (dict(steps=-1), "'steps'"),
           (dict(data=[("text",)] * 3), "arrays of reals")]
    for change, message in bad:
        call = dict(topology=t, data=data, f=update, steps=1, model=W0,
                    args=[RATE, COUPLING]) | change
        with pytest.raises(InvalidParameterError, match=message):
            train_multitask(cluster, call.pop("topology"), call.pop("data"), call.pop("f"),
                            call.pop("steps"), **call)


def test_a_task_is_checked_as_it_arrives():
    task = MultiTask(run=1, f="m:f", p=7, scale=4.0, groups=((0, 1), (1, 2)),
                     users=(0, 1, 2), relay=1, communication="coded", split=None, seed=0,
                     step=0, start=True, held=(1, 2), finish=False, network="links",
                     rate=1e6, given=False)
    assert MultiTask.from_meta(task.to_meta()) == task
    assert task.topology().groups == ((0, 1), (1, 2))
    for change, message in [(dict(p=8), "prime"), (dict(groups=[[0, 3]]), "group's user"),
                            (dict(users=[0, 0, 1]), "distinct"), (dict(network="x"), "network"),
                            (dict(rate=0), "positive"), (dict(scale=0), "positive"),
                            (dict(groups=[]), "1 to 16"), (dict(split=0), "split"),
                            (dict(communication="loud"), "communication"),
                            (dict(groups=[[0, 1], [1]]), "serve each of its users"),
                            (dict(given=1), "given")]:
        with pytest.raises((ProtocolError, InvalidParameterError), match=message):
            MultiTask.from_meta(dict(task.to_meta(), **change))
    with pytest.raises(ProtocolError, match="no topology"):
        MultiTask.from_meta(dict(task.to_meta(), groups=[[0, 1], [1, 1, 2]])).topology()


def test_what_a_relay_decoded_is_checked_against_what_was_computed():
    """A relay's digests of the updates it decoded must be every user's, as its relays
    computed them: a wrong message of the exchange is named, never trained on."""
    computed = {0: "a" * 32, 3: "b" * 32}
    check_decoded({"0": "a" * 32, "3": "b" * 32}, computed, 1, 4)
    for decoded, message in [({"0": "a" * 32}, "no digest of every user's update"),
                             ({"0": "a" * 32, "3": 7}, "no digest"),
                             (None, "no digest"),
                             ({"0": "a" * 32, "2": "b" * 32}, "no digest"),
                             ({"0": "a" * 32, "3": "c" * 32},
                              "worker 1 decoded user 3's update of step 4 unlike its relays "
                              "computed it")]:
        with pytest.raises(JobFailed, match=message):
            check_decoded(decoded, computed, 1, 4)


@pytest.mark.bounded(90)
@pytest.mark.parametrize("layout, workers", [("flat", 3), ("hierarchical", 6)])
def test_a_training_on_remote_workers_over_tcp(bounded, tmp_path, layout, workers):
    """Hand-started 'ffcode worker --connect' processes as the relays (and, hierarchical,
    the users; the installed library's least-squares step, as remote workers import it),
    coded on links at a rate: the single process's model bit for bit; the workers exit
    with status 0 at the close."""
    topology, steps = Topology.combination(3, 2), 3
    data, W0 = tasks(topology.users), np.zeros((topology.users, 4))
    procs = []
    try:
        with ffcode.Cluster(endpoint=LOOPBACK, n_workers=workers, start_timeout=30,
                            insecure=True) as c:
            procs = start_workers(c.endpoint, workers, tmp_path)
            c.wait(timeout=30)
            W, report = train_multitask(c, topology, data, local.least_squares, steps,
                                        model=W0, args=[RATE, COUPLING], network="links",
                                        link_rate=1e6, layout=layout)
            assert W.tobytes() == in_one_process(data, steps, W0,
                                                 f=local.least_squares).tobytes()
            assert report.downlink == [int(coded_loads(topology).downlink_links *
                                           report.update_bytes)] * steps
        assert exits(procs) == [0] * workers
    finally:
        reap(procs)
