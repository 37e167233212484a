"""Ordinary codes through relays (``Cluster(n, groups=...)`` running a flat code): every
code exact in every scheme, each relay forwarding only packets that add rank to what it
forwarded (every one of them counting at the master when it is alone), faults at both
layers, the master's correction of a wrong relay, and what is refused."""
import dataclasses

import numpy as np
import pytest

import ffcode
from ffcode import GASP, GF, LCC, MDS, EntangledPolynomialCode, MatDot, PolynomialCode
from ffcode.runtime import Cluster, Faults
from ffcode.runtime.master.forwarding import Forwarding
from ffcode.errors import ProtocolError
from ffcode.runtime.master.jobs import Options, Plan, forwarded
from ffcode.runtime.shared.task import Task
from ffcode.runtime.worker.process import split_shares

from helpers import shared_cluster

F = GF(2**31 - 1)
A, B, X = F.random((36, 18), seed=1), F.random((18, 10), seed=2), F.random(18, seed=3)
SCHEMES = ["compfs", "cfs", "classic", "systematic", "uncoded"]

cluster = shared_cluster(6, groups=[2, 4])

CODES = {
    "MDS": (MDS(F, 3, 6), (A, X), F.matmul(A, X)),
    "PolynomialCode": (PolynomialCode(F, 2, 2, 6), (A, B), F.matmul(A, B)),
    "MatDot": (MatDot(F, 3, 6), (A, B), F.matmul(A, B)),
    "EntangledPolynomialCode": (EntangledPolynomialCode(F, 2, 1, 1, 6), (A, B),
                                F.matmul(A, B)),
    "GASP": (GASP(F, 2, 1, 1, 6), (A, B), F.matmul(A, B)),
    "LCC": (LCC(F, 2, 0, "ffcode.functions:square", 2, 6), ([A[:18], A[18:]],),
            [F.mul(A[:18], A[:18]), F.mul(A[18:], A[18:])]),
}


def same(y, expected) -> bool:
    if isinstance(expected, list):
        return len(y) == len(expected) and all(same(a, b) for a, b in zip(y, expected))
    return np.shape(y) == np.shape(expected) and bool((np.asarray(y) == expected).all())


@pytest.mark.bounded(120)
@pytest.mark.parametrize("name", CODES)
def test_every_code_is_exact_in_every_scheme(bounded, cluster, name):
    code, inputs, expected = CODES[name]
    for scheme in SCHEMES if name != "LCC" else SCHEMES[1:]:     # a square: not row-linear
        y, report = cluster.run(code, *inputs, scheme=scheme, timeout=60)
        assert same(y, expected), scheme
        assert [w.shares for w in report.workers] == [[0, 1], [2, 3, 4, 5]] or \
            scheme == "uncoded"             # as many slices as the work has
        for relay in report.workers:     # it forwarded what counted, and no more
            for job in relay.group or ():
                assert job["rank"] <= job["received"]
            assert len(relay.packets) <= sum(job["rank"] for job in relay.group or ())


@pytest.mark.bounded(60)
def test_a_relay_forwards_no_dependent_packet(bounded):
    """MDS with R = 1 in plain pieces: every worker's piece j is the same equation, so
    once one of its group's piece j arrived the others' add nothing. Each worker's link is
    slow, so that the group's pieces arrive round by round, and relay 1 crashes at once:
    relay 0 alone feeds the master, and every packet it forwarded counts there."""
    code = MDS(F, 1, 6)
    slow = Faults(link_rate={w: 1000.0 for w in range(3)})
    with Cluster(6, groups=2) as c:
        c.wait()
        y, report = c.run(code, A, X, scheme="systematic", pieces=4, timeout=60,
                          faults=Faults(crash_after={1: 0}), group_faults={0: slow})
        assert same(y, F.matmul(A, X))
        relay = report.workers[0]
        assert len(relay.packets) == 4 and all(p["innovative"] for p in relay.packets)
        group = relay.group[0]
        assert group["rank"] == 4 and group["received"] > group["rank"]


@pytest.mark.bounded(90)
def test_lost_workers_and_relays(bounded):
    """A worker of group 0 crashes after its first packet and relay 1 after its first:
    the master decodes from what relay 0 forwarded of the others' and relay 2's packets
    (relays 0 and 2 slowed, so that the job is still running), and a fresh relay takes
    relay 1's place before the next job, which is exact with all three."""
    code, inputs, expected = MDS(F, 3, 9), (A, X), F.matmul(A, X)
    with Cluster(9, groups=3) as c:
        c.wait()
        y, report = c.run(code, *inputs, scheme="compfs", timeout=60,
                          faults=Faults(crash_after={1: 1}, delay={0: (0.05, 0), 2: (0.05, 0)}),
                          group_faults={0: Faults(crash_after={1: 1})})
        assert same(y, expected) and report.workers[1].lost == "process exited"
        y, report = c.run(code, *inputs, timeout=60)
        assert same(y, expected) and not any(w.lost for w in report.workers)


@pytest.mark.bounded(60)
def test_a_wrong_worker_behind_a_relay_is_corrected_and_its_relay_named(bounded):
    """Worker 0 of group 1 sends random results: relay 1 forwards them (unfiltered, as the
    master corrects), and the master returns the exact output and names relay 1."""
    code = MDS(F, 1, 6)
    with Cluster(6, groups=3) as c:       # its own: a wrong relay is replaced
        for scheme in ("classic", "compfs"):
            y, report = c.run(code, A, X, adversaries=1, scheme=scheme, timeout=60,
                              group_faults={1: Faults(corrupt={0: "random"})},
                              faults=Faults(delay={0: (0.2, 0), 2: (0.2, 0)}))
            assert same(y, F.matmul(A, X)) and report.wrong == [1], scheme


@pytest.mark.bounded(60)
def test_assignments_over_the_groups_workers(bounded, cluster):
    code, inputs, expected = CODES["MDS"]
    y, report = cluster.run(code, *inputs, assignment=[[5], [4], [3], [2], [1], [0]],
                            timeout=60)
    assert same(y, expected) and [w.shares for w in report.workers] == [[5, 4], [3, 2, 1, 0]]
    y, report = cluster.run(MDS(F, 3, 12), *inputs[:1], X, allocate=[1, 1, 1, 1, 1, 7],
                            timeout=60)
    assert same(y, expected) and len(report.workers[1].shares) == 10
    with pytest.raises(ValueError, match="measures relays, not their workers"):
        cluster.run(code, *inputs, allocate="speed")
    y, report = cluster.run(code, *inputs, assignment=[[0, 1, 2], [3, 4, 5]], timeout=60)
    assert same(y, expected) and [w.shares for w in report.workers] == [list(range(6)), []]
    with pytest.raises(ValueError, match="Share 0 is assigned to both worker 0 and worker 5"):
        cluster.run(code, *inputs, assignment=[[0], [1], [2], [3], [4], [5, 0]])
    with pytest.raises(ValueError, match="names 7 workers; the cluster has 6"):
        cluster.run(code, *inputs, assignment=[[0], [1], [2], [3], [4], [5], []])
    with pytest.raises(ValueError, match=r"'corrupt' names workers \[2\]"):
        cluster.run(code, *inputs, group_faults={0: Faults(corrupt={2: "random"})})


def relay_task(code=MDS(F, 2, 6), groups=(3, 3), relay=1, **options):
    assignment, relayed = forwarded(code, groups, Options(**options))
    plan = Plan(code, (A, X), Options(**options), assignment, relayed=relayed)
    return plan.tasks[relay]


@pytest.mark.parametrize("change, error", [
    (dict(members=[1, 1]), "does not add up"), (dict(members=[1, 1, 2]), "does not add up"),
    (dict(members=[1, -1, 3]), "members"), (dict(work=0), "work"),
    (dict(powers=[[1, 4], [1, 5]]), "powers must be a list of 3"),
    (dict(powers=[[1, 4], [1, 5], [1]]), "powers must be a list of 2"),
    (dict(powers=[[], [], []]), "one decoding equation per share"),
    (dict(filter="yes"), "filter"), (dict(faults=[1]), "faults"),
    (dict(extra=1), "needs the fields")])
def test_a_relay_refuses_a_malformed_forwarding_task(change, error):
    """Checked as the task arrives, before the relay looks at it."""
    task, _ = relay_task()
    meta = task.to_meta()
    meta["payload"].update(change)
    with pytest.raises(ProtocolError, match=error):
        Task.from_meta(meta)


@pytest.mark.parametrize("change, error", [
    (dict(scheme="classic"), "sends by the compfs scheme"),
    (dict(scheme="nope"), "a nope job's task sends by the compfs"),
    (dict(powers=((1, 4), (1, 5), (1, 2**31 - 1))), "decoding equations"),
    (dict(faults={"slowdown": {}}), "Faults as data"),
    (dict(faults=Faults(corrupt={3: "random"}).to_dict()), r"names workers \[3\]")])
def test_a_relay_refuses_a_forwarding_task_that_does_not_fit(change, error):
    """Well-formed, but not what this relay's group can run."""
    task, arrays = relay_task()
    bad = dataclasses.replace(task, payload=dataclasses.replace(task.payload, **change))
    with pytest.raises((ValueError, TypeError), match=error):
        Forwarding(bad, split_shares(arrays, bad.counts), 3, print)
    job = Forwarding(task, split_shares(arrays, task.counts), 3, print)
    assert job.payload.members == (1, 1, 1)
    with pytest.raises(ValueError, match="over this group's 4"):
        Forwarding(task, split_shares(arrays, task.counts), 4, print)


def test_what_a_relays_task_carries():
    task, _ = relay_task(scheme="uncoded")
    assert task.payload.powers == ((0, 0, 0, 1, 0, 0), (0, 0, 0, 0, 1, 0),
                                   (0, 0, 0, 0, 0, 1)) and task.payload.filter
    task, _ = relay_task(code=MDS(F, 1, 6), groups=(2, 2, 2), adversaries=1)
    assert not task.payload.filter
    task, _ = relay_task(code=MDS(F, 2, 3), groups=(2, 4), relay=1)
    assert task.payload.members == (1, 0, 0, 0) and task.payload.coded.shares == 1


def test_faults_of_the_workers_by_group():
    faults = Faults(slowdown={0: 2, 5: 3}, delay={1: (0.1, 0.0), 4: (0.2, 0.1)},
                    link_rate={3: 1e6}, hang_after={2: 1}, corrupt={5: "piece"}, seed=7)
    by = faults.by_group([2, 1, 3])
    assert sorted(by) == [0, 1, 2]
    assert by[0] == Faults(slowdown={0: 2}, delay={1: (0.1, 0.0)}, seed=7)
    assert by[1] == Faults(hang_after={0: 1}, seed=7)
    assert by[2] == Faults(slowdown={2: 3}, delay={1: (0.2, 0.1)}, link_rate={0: 1e6},
                           corrupt={2: "piece"}, seed=7)
    everyone = Faults(delay=(0.1, 0.0)).by_group([2, 2])
    assert everyone == {0: Faults(delay=(0.1, 0.0)), 1: Faults(delay=(0.1, 0.0))}
    assert Faults().by_group([3, 3]) == {}
    with pytest.raises(ValueError, match=r"names workers \[6\]"):
        Faults(crash_after={6: 0}).by_group([3, 3])
