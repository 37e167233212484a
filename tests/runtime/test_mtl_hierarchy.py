"""Multi-task training with users as workers of their own (``layout="hierarchical"``): each
user holds its data alone, computes its update and sends it to its relays, which run the
server's exchange and send each user the others' new parameters. Coded and uncoded give
the single process's model bit for bit, as the flat layout does; each step's bytes on both
hops are counted, and the users' hop takes its time at its rate; a lost relay is done
without where its users have another, a lost user is named; bad arguments and tasks are
refused."""
import dataclasses
import os
import signal
import threading

import numpy as np
import pytest

import ffcode
from ffcode.errors import InvalidParameterError, JobFailed, ProtocolError, WorkerError
from ffcode.mtl import Topology, coded_loads, scheme_of
from ffcode.runtime import train_multitask
from ffcode.runtime.master.mtl import check_uplink
from ffcode.runtime.shared.mtl import MultiTask, UserStep
from ffcode.runtime.worker.mtl import Learner, Training, mtl_steps, user_steps

from helpers import shared_cluster
from test_mtl_training import COUPLING, RATE, in_one_process, short, tasks, update

cluster = shared_cluster(9)
TOPOLOGIES = [Topology.combination(3, 2), Topology([[0, 1, 2], [2, 3], [3, 4, 0], [1]]),
              Topology.disjoint(2, 2)]


def killer(W, user, X, y, rate, coupling, victim):
    """``update``, and user 0 kills the process ``victim`` once the model has moved."""
    if user == 0 and np.abs(W).sum() > 0:
        try:
            os.kill(int(victim[0]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    return update(W, user, X, y, rate, coupling)


@pytest.mark.bounded(120)
@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: str(t.groups))
def test_users_as_workers_give_the_flat_model_bit_for_bit_and_count_both_hops(
        bounded, cluster, topology):
    """Coded and uncoded on both networks of each hop end with the single process's
    model, bit for bit; the server hop's bytes are the exchange's loads, as the flat
    layout's; on links the users' hop carries each update to each of its relays and each
    user the others' parameters, on a shared medium each update once and one broadcast."""
    data, steps, d = tasks(topology.users, d=12), 3, 12
    W0 = np.zeros((topology.users, d))
    want = in_one_process(data, steps, W0)
    K, N, b = topology.relays, topology.users, d * 8
    ways = [(c, n, u) for c in ("coded", "uncoded") for n in ("turns", "links")
            for u in ("links", "turns")]
    for communication, network, users in ways:
        W, report = train_multitask(cluster, topology, data, update, steps, model=W0,
                                    args=[RATE, COUPLING], communication=communication,
                                    network=network, layout="hierarchical",
                                    user_network=users)
        assert W.tobytes() == want.tobytes(), (communication, network, users)
        loads = report.loads
        down = loads.downlink if network == "turns" else loads.downlink_links
        assert report.uplink == [int(loads.uplink * b)] * steps
        assert report.downlink == [int(down * b)] * steps
        if users == "links":
            assert report.user_uplink == [sum(map(len, topology.groups)) * b] * steps
            assert report.user_downlink == [N * (N - 1) * b] * steps
        else:
            assert report.user_uplink == report.user_downlink == [N * b] * steps
        assert report.layout == "hierarchical" and report.lost == []
        assert report.user_network == users
        assert report.users == list(range(K, K + N)) and report.relays == list(range(K))
        assert len(report.compute) == len(report.seconds) == steps
        assert report.to_dict()["user_uplink"] == report.user_uplink


@pytest.mark.bounded(60)
def test_the_users_hop_takes_its_bytes_time(bounded, cluster):
    """At 400 kB/s on the users' links a step waits an update's time up (the links side
    by side), and each user takes the others' parameters' time down; on a shared medium
    the three updates one after another, and the broadcast of all three; the server hop
    at its own rate."""
    topology, d, steps, rate = Topology.combination(3, 2), 5000, 2, 4e5
    data, W0 = tasks(3, d=d), np.zeros((3, d))
    b = d * 8
    for users, up, down in [("links", b, 2 * b), ("turns", 3 * b, 3 * b)]:
        W, report = train_multitask(cluster, topology, data, update, steps, model=W0,
                                    args=[RATE, COUPLING], layout="hierarchical",
                                    user_network=users, user_rate=rate, link_rate=2 * rate)
        assert W.tobytes() == in_one_process(data, steps, W0).tobytes()
        assert all(up / rate * 0.99 <= s <= up / rate + 0.5
                   for s in report.user_uplink_seconds), report.user_uplink_seconds
        assert report.user_downlink_seconds == [down / rate] * steps
        assert report.user_rate == rate and report.link_rate == 2 * rate
        assert all(s >= up / rate for s in report.seconds)
        assert report.total >= steps * ((up + down) / rate + report.downlink_seconds[0])


@pytest.mark.bounded(120)
def test_a_lost_relay_is_done_without_and_the_model_is_exact(bounded):
    """Relay 2 is killed in the second step: every user has another relay, so the step's
    exchange runs again on the three left, and the model is still the single process's
    bit for bit."""
    topology = Topology.combination(4, 2)
    data, steps = tasks(topology.users), 3
    W0 = np.zeros((topology.users, 4))
    with ffcode.Cluster(10, lost_after=3.0) as c:
        victim = c.wait()[2].pid
        W, report = train_multitask(c, topology, data, killer, steps, model=W0,
                                    args=[RATE, COUPLING, np.array([victim])],
                                    layout="hierarchical", timeout=90)
    assert W.tobytes() == in_one_process(data, steps, W0).tobytes()
    assert report.lost == [2] and report.relays == [0, 1, 3]
    assert report.loads == coded_loads(topology.without(relays=[2]).topology)


@pytest.mark.bounded(90)
def test_a_lost_user_fails_the_training_naming_it(bounded):
    """A user's data are on its worker alone: its loss fails the training, naming the
    worker and the user."""
    topology = Topology.combination(3, 2)
    with ffcode.Cluster(6) as c:
        victim = c.wait()[4].pid
        with pytest.raises(JobFailed, match=r"worker 4 lost at step 1: user 1 is held by no "
                                            r"other worker"):
            train_multitask(c, topology, tasks(3), update, 3, model=np.zeros((3, 4)),
                            args=[RATE, COUPLING, np.array([victim])], layout="hierarchical",
                            timeout=60)


@pytest.mark.bounded(60)
def test_failures_and_bad_arguments_are_named(bounded, cluster):
    """A user's update of the wrong shape; the arguments of the layout refused before
    anything starts; the next training runs."""
    t, data, W0 = Topology([[0, 1], [1, 2]]), tasks(3), np.zeros((3, 4))
    with pytest.raises(WorkerError, match=r"the local update of user \d has shape \(3,\), not "
                                          r"its parameters' \(4,\)"):
        train_multitask(cluster, t, data, short, 1, model=W0, args=[RATE, COUPLING],
                        layout="hierarchical")
    for change, message in [(dict(layout="tree"), "'layout'"),
                            (dict(user_rate=1e6), "only layout='hierarchical' has"),
                            (dict(user_network="links"), "'user_network' is for the hop"),
                            (dict(layout="hierarchical", user_network="air"),
                             "'user_network'"),
                            (dict(layout="hierarchical", user_rate=0), "'user_rate'"),
                            (dict(layout="hierarchical", topology=Topology.disjoint(4, 2)),
                             "4 relays and 8 users, the cluster 9 workers")]:
        call = dict(topology=t, model=W0, args=[RATE, COUPLING]) | change
        with pytest.raises(InvalidParameterError, match=message):
            train_multitask(cluster, call.pop("topology"), data, update, 1, **call)
    W, report = train_multitask(cluster, t, data, update, 2, model=W0, args=[RATE, COUPLING],
                                layout="hierarchical")
    assert W.tobytes() == in_one_process(data, 2, W0).tobytes()
    W, report = train_multitask(cluster, t, data, update, 0, model=W0, layout="hierarchical")
    assert W.tobytes() == in_one_process(data, 0, W0).tobytes() and report.seconds == []


@pytest.mark.parametrize("communication", ["coded", "uncoded"])
def test_a_relay_whose_uplink_is_not_its_users_updates_is_named(communication):
    """The master holds every user's update: each relay's uplink message must be them
    encoded as the exchange says; the first that is not is named, and nothing is made
    of it."""
    F, topology = ffcode.GF(65521), Topology([[0, 1, 2], [2, 3], [3, 4, 0], [1]])
    scheme = scheme_of(communication, topology, F, None, 0)
    updates = F.asarray(np.random.default_rng(1).integers(0, F.p, (5, 6)))
    messages = [scheme.uplink(k, updates[list(g)]) for k, g in enumerate(topology.groups)]
    check_uplink(scheme, updates, messages, [0, 1, 2, 3], 4)
    lie = [m.copy() for m in messages]
    lie[2][0, 0] = (int(lie[2][0, 0]) + 1) % F.p
    with pytest.raises(JobFailed, match=r"worker 7 \(relay 2\) sent an uplink message of "
                                        r"step 4 unlike its users' updates"):
        check_uplink(scheme, updates, lie, [0, 1, 7, 3], 4)
    short = messages[:1] + [messages[1][:0]] + messages[2:]     # relay 1 sends a row
    with pytest.raises(JobFailed, match=r"worker 1 \(relay 1\)"):
        check_uplink(scheme, updates, short, [0, 1, 2, 3], 4)


def test_a_users_task_is_checked_as_it_arrives():
    step = UserStep(run=1, f="m:f", p=7, scale=4.0, user=2, users=4, step=3, start=False,
                    finish=False, network="turns", rate=None)
    assert UserStep.from_meta(step.to_meta()) == step
    for change, message in [(dict(p=8), "prime"), (dict(user=4), "user must be"),
                            (dict(users=0), "users must be"), (dict(rate=0), "positive"),
                            (dict(step=-1), "step must be"), (dict(finish=1), "finish"),
                            (dict(network="air"), "network"),
                            (dict(start="yes"), "start"), (dict(extra=1), "fields")]:
        with pytest.raises((ProtocolError, InvalidParameterError), match=message):
            UserStep.from_meta(dict(step.to_meta(), **change))


class Job:
    """A task as a worker's steps see it, up to the answer."""

    def __init__(self, payload, args, shares=None):
        self.payload, self.args, self.shares = payload, args, shares
        self.stop = threading.Event()


class Worker:
    def __init__(self):
        self.runs = {}


def run_steps(steps, job, worker):
    for _ in steps(job, print, worker):
        pass


def test_a_worker_refuses_what_its_training_cannot_take():
    """A user's or a relay's task that does not fit what the worker holds is refused,
    naming what is wrong (each would otherwise train on the wrong parameters)."""
    F, worker = ffcode.GF(65521), Worker()

    def zeros(*shape):
        return np.zeros(shape, F.dtype)
    user = UserStep(run=1, f="test_mtl_training:update", p=F.p, scale=4.0, user=1, users=3,
                    step=1, start=False, finish=False, network="links", rate=None)
    model, data = zeros(3, 4), [np.zeros((5, 4)).view(np.int64)]
    start = dataclasses.replace(user, step=0, start=True)
    rows = [zeros(1, 4), zeros(1, 4)]
    for job, message in [
            (Job(user, rows), "holds no training 1"),
            (Job(start, [zeros(2, 4)], [data]), "3 users' parameters as rows"),
            (Job(start, [model]), "with its start task alone, and 0 shares"),
            (Job(start, []), "carries parameters first")]:
        with pytest.raises(ValueError, match=message):
            run_steps(user_steps, job, worker)
    worker.runs[1] = Learner(F, model.copy())
    for job, message in [
            (Job(user, [zeros(2, 4), zeros(0, 4)]), r"on links brings parameters of shapes "
             r"\[\(1, 4\), \(1, 4\)\], not \[\(2, 4\), \(0, 4\)\]"),
            (Job(dataclasses.replace(user, network="turns"), rows), r"on turns brings "
             r"parameters of shapes \[\(3, 4\)\], not \[\(1, 4\)\]"),
            (Job(user, rows[:1]), r"not \[\(1, 4\)\]"),
            (Job(user, rows), "computed no update of it"),
            (Job(user, rows, [data]), "1 shares came with step 1")]:
        with pytest.raises(ValueError, match=message):
            run_steps(user_steps, job, worker)
    worker.runs[1].pending = (0, np.arange(4, dtype=F.dtype))
    with pytest.raises(ValueError, match="the parameters of step 0 hold user 1's unlike the "
                                         "update it computed"):
        run_steps(user_steps, Job(dataclasses.replace(user, network="turns"),
                                  [zeros(3, 4)]), worker)
    relay = MultiTask(run=2, f="m:f", p=F.p, scale=4.0, groups=((0, 1), (1, 2)),
                      users=(0, 1, 2), relay=1, communication="coded", split=None, seed=0,
                      step=1, start=False, held=(), finish=False, network="turns", rate=None,
                      given=True)
    worker.runs[2] = Learner(F, model.copy())           # a user's: no relay's training
    with pytest.raises(ValueError, match="holds no training 2"):
        run_steps(mtl_steps, Job(relay, [zeros(4), zeros(4)]), worker)
    worker.runs[2] = Training(F, model.copy())
    for args, message in [([zeros(4)], r"brings 2 arrays of 4 parameters"),
                          ([zeros(4), zeros(3)], r"\[\(4,\), \(3,\)\]")]:
        with pytest.raises(ValueError, match=message):
            run_steps(mtl_steps, Job(relay, args), worker)
    with pytest.raises(ValueError, match="carries the model or the server's message first"):
        run_steps(mtl_steps, Job(dataclasses.replace(relay, start=True), []), worker)
    with pytest.raises(ValueError, match=r"a matrix of its users' parameters, not shape \(4,\)"):
        run_steps(mtl_steps, Job(dataclasses.replace(relay, start=True), [zeros(4)]), worker)
