"""Relays between the master and groups of local workers (``Cluster(n, groups=...)``): every
pair of outer and inner codes exact in every scheme, faults at both layers (a lost relay, a
frozen worker behind a relay, a wrong relay caught), and the topologies refused."""
import os
import signal
import time

import pytest

import ffcode
from ffcode import GF, MDS, HierarchicalCode, MatDot, PolynomialCode
from ffcode.runtime import Cluster, Faults

from helpers import alive, descendants, process_state, shared_cluster
from test_remote import LOOPBACK, exits, start_workers

F = GF(2**31 - 1)
A, B, X = F.random((40, 18), seed=1), F.random((18, 10), seed=2), F.random(18, seed=3)

cluster = shared_cluster(12, groups=3)

OUTER = {"MDS": MDS(F, 2, 3), "PolynomialCode": PolynomialCode(F, 2, 1, 3),
         "MatDot": MatDot(F, 2, 3)}
INNER = {"MDS": MDS(F, 3, 4), "PolynomialCode": PolynomialCode(F, 1, 2, 4),
         "MatDot": MatDot(F, 2, 4)}
PAIRS = [(o, i) for o in OUTER for i in INNER if o != "MDS" or i == "MDS"]
SCHEMES = ["compfs", "cfs", "classic", "systematic", "uncoded"]


def case(outer, inner):
    """(code, inputs, exact output) of a hierarchical code."""
    code = HierarchicalCode(OUTER[outer], INNER[inner])
    if code.encodes == 1:
        return code, (A, X), F.matmul(A, X)
    return code, (A, B), F.matmul(A, B)


def group_workers(relay_pid) -> set:
    """The worker processes of a relay's group: its fork server's children."""
    below = descendants(relay_pid)
    return {pid for pid in below if process_state(pid)[1] != relay_pid}


@pytest.mark.bounded(120)
@pytest.mark.parametrize("outer, inner", PAIRS)
def test_every_pair_of_codes_is_exact_in_every_scheme(bounded, cluster, outer, inner):
    code, inputs, expected = case(outer, inner)
    for scheme in SCHEMES:
        y, report = cluster.run(code, *inputs, scheme=scheme, timeout=60)
        assert (y == expected).all() and y.shape == expected.shape, scheme
        assert len(report.workers) == 3 and report.scheme == scheme
        assert report.code == report.settings["code"] == repr(code)


@pytest.mark.bounded(60)
def test_jobs_in_flight_through_relays(bounded, cluster):
    futures = [cluster.submit(*case(o, i)[:1], *case(o, i)[1], timeout=60) for o, i in PAIRS]
    for (o, i), future in zip(PAIRS, futures):
        assert (future.result()[0] == case(o, i)[2]).all()


@pytest.mark.bounded(90)
def test_a_lost_relay_is_a_straggler_of_the_outer_code(bounded):
    """Relay 1 crashes after its first packet (the others slowed, so that the job is still
    running): the master decodes from the other two, and before the next job a fresh
    relay (and group) takes its place."""
    code, inputs, expected = case("MDS", "MDS")
    with Cluster(12, groups=3) as c:
        c.wait()
        faults = Faults(crash_after={1: 1}, delay={0: (0.2, 0), 2: (0.2, 0)})
        y, report = c.run(code, *inputs, faults=faults, timeout=60)
        assert (y == expected).all() and report.workers[1].lost == "process exited"
        y, report = c.run(code, *inputs, timeout=60)
        assert (y == expected).all() and not any(w.lost for w in report.workers)


@pytest.mark.bounded(90)
def test_a_frozen_relay_is_given_up_on_and_its_group_goes_with_it(bounded):
    """Relay 1 freezes (SIGSTOP) before its first packet: the master decodes from the
    other two and kills it, and its group's pool and workers exit too (their relay is
    gone); a fresh relay and group take its place before the next job."""
    code, inputs, expected = case("MDS", "MDS")
    with Cluster(12, groups=3, lost_after=1.0) as c:
        relay = c.wait()[1].pid
        group = descendants(relay)
        assert len(group) == 5                  # its group's pool and four workers
        faults = Faults(hang_after={1: 0}, delay={0: (0.5, 0), 2: (0.5, 0)})
        y, report = c.run(code, *inputs, faults=faults, timeout=60)
        assert (y == expected).all() and report.workers[1].lost == "process frozen"
        y, report = c.run(code, *inputs, timeout=60)
        assert (y == expected).all() and not any(w.lost for w in report.workers)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in {relay, *group}) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in {relay, *group})


@pytest.mark.bounded(90)
def test_a_frozen_worker_is_absorbed_by_its_relay(bounded):
    """A worker of group 0 frozen (SIGSTOP) before a job: its relay's inner code decodes
    from the group's other three, so the relay answers and no relay is lost; its group
    replaces the worker before its next job."""
    code, inputs, expected = case("PolynomialCode", "MDS")
    with Cluster(12, groups=3) as c:
        c.wait()
        c.run(code, *inputs, timeout=60)                # the groups' workers are up
        relay = c.live()[0].pid
        frozen = sorted(group_workers(relay))
        assert len(frozen) == 4
        os.kill(frozen[0], signal.SIGSTOP)
        for _ in range(3):
            y, report = c.run(code, *inputs, faults=Faults(delay={1: (0.3, 0),
                                                                  2: (0.3, 0)}),
                              timeout=60)
            assert (y == expected).all() and not any(w.lost for w in report.workers)
            assert report.workers[0].packets      # relay 0 answered: its group decoded
        assert frozen[0] not in group_workers(relay)


@pytest.mark.bounded(60)
def test_a_wrong_relay_is_caught_and_named(bounded):
    """Relay 2 answers random results (as a wrong worker behind it would make it): the
    master corrects them and names it. The honest relays pause, so that the wrong results
    are in before two honest ones agree (R + A consistent results decode unnamed)."""
    code = HierarchicalCode(MDS(F, 1, 3), MDS(F, 3, 4))
    faults = Faults(corrupt={2: "random"}, delay={0: (0.3, 0), 1: (0.3, 0)})
    with Cluster(12, groups=3) as c:      # its own: a wrong relay is replaced
        y, report = c.run(code, A, X, faults=faults, adversaries=1, scheme="classic",
                          timeout=60)
    expected = F.matmul(A, X)
    assert (y == expected).all() and report.wrong == [2]


@pytest.mark.bounded(60)
def test_a_wrong_worker_behind_a_relay_is_caught_at_the_master(bounded):
    """Worker 0 of group 1 sends random results: its relay decodes a wrong piece, and the
    master, correcting one wrong relay, returns the exact output and names relay 1. The
    group's other workers pause, so that its decoding takes worker 0's results."""
    code = HierarchicalCode(MDS(F, 1, 3), MDS(F, 3, 4))
    wrong = Faults(corrupt={0: "random"}, delay={w: (0.1, 0) for w in (1, 2, 3)})
    with Cluster(12, groups=3) as c:      # its own: a wrong relay is replaced
        for scheme in ("classic", "compfs"):
            y, report = c.run(code, A, X, group_faults={1: wrong},
                              faults=Faults(delay={0: (0.3, 0), 2: (0.3, 0)}),
                              adversaries=1, scheme=scheme, timeout=60)
            assert (y == F.matmul(A, X)).all() and report.wrong == [1], scheme


@pytest.mark.bounded(90)
def test_a_worker_lost_mid_job_is_absorbed_and_the_report_shows_the_tree(bounded):
    """Worker 2 of group 0 crashes after its first packet of each piece: relay 0's inner
    code decodes from the group's other three (the other relays are slowed, so the master
    needs relay 0). The report shows each relay's group jobs: relay 0's with a lost
    worker, and the bytes and packets on both layers."""
    code, inputs, expected = case("MDS", "MDS")
    with Cluster(12, groups=3) as c:
        c.wait()
        crash = Faults(crash_after={2: 1}, delay=(0.1, 0))    # the group still at work
        y, report = c.run(code, *inputs, group_faults={0: crash},
                          faults=Faults(delay={1: (0.5, 0), 2: (0.5, 0)}), timeout=60)
        assert (y == expected).all() and not any(w.lost for w in report.workers)
        relay = report.workers[0]
        assert relay.packets and relay.group and len(relay.group) >= 1
        first = relay.group[0]
        assert [w["lost"] is not None for w in first["workers"]] == [False, False, True,
                                                                    False]
        assert first["shipped"] > 0 and first["received"] >= 3
        data = report.to_dict()
        assert data["schema"] == 10 and data["workers"][0]["group"] == relay.group


@pytest.mark.bounded(90)
def test_a_group_that_cannot_decode_makes_its_relay_a_straggler(bounded):
    """Two of group 2's four workers crash (its MDS(3, 4) absorbs one): relay 2 says done
    without its packets, and the master decodes from relays 0 and 1; with two such groups
    the job fails, naming what happened, instead of waiting for its timeout."""
    code, inputs, expected = case("MDS", "MDS")
    crash = Faults(crash_after={0: 0, 1: 0})
    with Cluster(12, groups=3) as c:
        c.wait()
        y, report = c.run(code, *inputs, group_faults={2: crash}, timeout=60)
        assert (y == expected).all()
        with pytest.raises(ffcode.JobFailed, match="after every live worker finished"):
            c.run(code, *inputs, group_faults={1: crash, 2: crash}, timeout=60)


@pytest.mark.bounded(60)
def test_bad_topologies_are_refused(bounded, cluster):
    code, inputs, _ = case("MDS", "MDS")
    with pytest.raises(ValueError, match="fewer than the inner code's recovery threshold 3"):
        with Cluster(6, groups=3) as c:
            c.run(code, *inputs)
    with pytest.raises(ValueError, match="has 3 groups .* this cluster 4"):
        with Cluster(8, groups=4) as c:
            c.run(HierarchicalCode(MDS(F, 2, 3), MDS(F, 1, 2)), *inputs)
    with pytest.raises(ValueError, match="Group 1 has 5 workers, the inner code 4 points"):
        with Cluster(13, groups=[4, 5, 4]) as c:
            c.run(code, *inputs)
    with pytest.raises(ValueError, match="Resident data is for a cluster without groups"):
        cluster.load(code, A)
    with pytest.raises(ValueError, match=r"group_faults names groups \[3\]"):
        cluster.run(code, *inputs, group_faults={3: Faults()})
    with pytest.raises(ValueError, match=r"'corrupt' names workers \[4\]"):
        cluster.run(code, *inputs, group_faults={0: Faults(corrupt={4: "random"})})
    with pytest.raises(TypeError, match="must map groups to ffcode.Faults"):
        cluster.run(code, *inputs, group_faults={0: {"corrupt": {0: "random"}}})
    with Cluster(2) as flat:
        with pytest.raises(ValueError, match="'group_faults' is for a cluster of relays"):
            flat.run(MDS(F, 2, 2), A, X, group_faults={0: Faults()})


@pytest.mark.bounded(90)
def test_remote_relays_over_tcp(bounded, tmp_path):
    """Two relays started by hand ('ffcode worker --connect ENDPOINT --group 4'), each with
    its own group of local workers, serve a master on loopback tcp: exact in every scheme,
    and they exit with status 0 when the cluster closes. Relays whose groups are not the
    size the master was given fail its jobs, naming both sizes."""
    code = HierarchicalCode(MDS(F, 1, 2), MDS(F, 3, 4))
    for size in (4, 3):
        with Cluster(8, LOOPBACK, groups=2, insecure=True) as c:
            relays = start_workers(c.endpoint, 2, tmp_path, "--group", str(size))
            c.wait()
            if size == 3:
                with pytest.raises(ffcode.WorkerError,
                                   match="the inner code has 4 workers, this relay's group 3"):
                    c.run(code, A, X, timeout=60)
            for scheme in SCHEMES if size == 4 else ():
                for job in (code, MDS(F, 3, 8)):        # hierarchical, and forwarded
                    y, report = c.run(job, A, X, scheme=scheme, timeout=60)
                    assert (y == F.matmul(A, X)).all() and len(report.workers) == 2, scheme
        assert exits(relays) == [0, 0]


@pytest.mark.parametrize("groups, error", [
    (5, "12 workers do not split into 5 equal groups"),
    ([4, 4], r"sizes \[4, 4\] must add up to n_workers \(12\)"),
    ([6, 0, 6], "must be at least 1"), (0, "must be from 1 to 12"), (13, "must be from 1 to 12"),
    ("3", "must be an integer"), ([], "must add up"), ("nodes", "needs engine='ray'")])
def test_bad_groups_are_refused_before_anything_starts(groups, error):
    with pytest.raises((ValueError, TypeError), match=error):
        Cluster(12, groups=groups)


def test_a_relay_refuses_a_task_without_an_inner_code_and_a_worker_one_with():
    """A coded task is refused by a relay (its group computes), a relay's by a worker."""
    from ffcode.runtime.shared.payloads import Coded, Relayed
    from ffcode.runtime.shared.task import Task
    from ffcode.runtime.worker import coded as coded_kind, relay

    coded = Coded(f="ffcode.functions:matmul", p=F.p, scheme="classic", pieces=1, shares=1)
    task = Task(Relayed(coded, MDS(F, 2, 3).description(), Faults(delay=(0.1, 0)).to_dict()))
    assert Task.from_meta(task.to_meta()) == task and task.kind == "relay"

    class Host:
        relays = False

    class Job:
        payload = task.payload
    Job.coded = coded
    with pytest.raises(ValueError, match="not a relay"):
        relay.relayed_steps(Job, print, Host())
    Host.relays = True
    with pytest.raises(ValueError, match="is a relay"):
        coded_kind.coded_steps(Job, print, Host())
    with pytest.raises(ffcode.errors.ProtocolError, match="code must be an object"):
        Task.from_meta(dict(task.to_meta(), payload=dict(task.payload.to_meta(), code=[1])))
