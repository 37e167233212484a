"""Jobs on lossy links (Faults(loss=...)) on real workers: every scheme exact under
independent and bursty loss, with more shares than workers, on resident data, with wrong
workers to correct, over tcp; a link that loses everything loses its worker to the job;
the report counts what each link dropped; cfs's sparse repairs (repair="sparse") exact,
the coefficient vectors the master receives sparse, and refused where they cannot be."""
import numpy as np
import pytest

import ffcode
from ffcode import GF, MDS, Faults
from ffcode.decoding import collectors
from ffcode.errors import InvalidParameterError, JobFailed, JobTimeout

from helpers import reap, shared_cluster
from test_remote import LOOPBACK, start_workers

F = GF(65521)
A, X = F.random((240, 32), seed=1), F.random(32, seed=2)
WANT = F.matmul(A, X)
SCHEMES = ("uncoded", "classic", "systematic", "cfs", "compfs")

cluster = shared_cluster(6, lost_after=60.0)


def run(cluster, scheme, faults, code=MDS(F, 4, 6), **options):
    return cluster.run(code, A, X, scheme=scheme, pieces=4, faults=faults,
                       **{"timeout": 60, **options})


@pytest.mark.bounded(240)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_is_exact_under_independent_and_bursty_loss(bounded, cluster, scheme):
    dropped = 0
    for p, burst in ((0.05, None), (0.2, None), (0.4, None), (0.2, 4), (0.4, 3)):
        for seed in range(2):
            output, report = run(cluster, scheme, Faults(loss=p, burst=burst, seed=seed))
            assert np.array_equal(output, WANT), (p, burst, seed)
            dropped += sum(sum(w.dropped) for w in report.workers)
            assert report.rank == report.needed
    assert dropped > 20             # the links did drop messages, both ways


@pytest.mark.bounded(120)
@pytest.mark.parametrize("scheme", ["cfs", "compfs", "classic"])
def test_more_shares_than_workers(bounded, cluster, scheme):
    """Three shares a worker (a code of 18 points on 6 workers): fresh combinations are
    numbered and filed per share."""
    code = MDS(F, 8, 18)
    for seed in range(3):
        output, report = cluster.run(code, A, X, scheme=scheme, pieces=4, timeout=60,
                                     faults=Faults(loss=0.3, seed=seed))
        assert np.array_equal(output, WANT)


@pytest.mark.bounded(120)
def test_the_report_counts_each_links_drops_and_a_job_repeats_with_its_seed(bounded,
                                                                            cluster):
    faults = Faults(loss={1: 0.5, 4: 0.3}, seed=9)
    _, report = run(cluster, "classic", faults, wait_for_stops=True)
    drops = [w.dropped for w in report.workers]
    assert all(d == [0, 0] for i, d in enumerate(drops) if i not in (1, 4))
    assert sum(drops[1]) + sum(drops[4]) > 0
    assert report.to_dict()["workers"][1]["dropped"] == drops[1]


@pytest.mark.bounded(120)
def test_a_link_that_loses_everything_loses_its_worker_to_the_job(bounded, cluster):
    output, report = run(cluster, "compfs", Faults(loss={2: 1.0, 5: 0.2}, seed=1))
    assert np.array_equal(output, WANT)         # decoded without it, before it is lost
    assert report.workers[2].packets == [] and report.workers[2].dropped[0] == 0
    assert report.workers[2].dropped[1] >= 2    # its task, sent again, and its stop
    with pytest.raises(JobFailed, match=r"workers 0, 1 and 2 lost \(0: its link lost the task"):
        run(cluster, "cfs", Faults(loss={0: 1.0, 1: 1.0, 2: 1.0}))


@pytest.mark.bounded(120)
def test_wrong_workers_are_corrected_under_loss(bounded):
    """(Its own workers: a wrong worker found is excluded, and replaced.)"""
    for scheme in ("cfs", "compfs", "classic"):
        with ffcode.Cluster(6) as own:
            output, report = run(own, scheme, Faults(loss=0.2, corrupt={3: "random"},
                                                     seed=4),
                                 code=MDS(F, 2, 6), adversaries=1)
        assert np.array_equal(output, WANT)     # worker 3 named when its packets were
        assert set(report.wrong) <= {3}         # among those read: never an honest one


@pytest.mark.bounded(120)
def test_resident_data_and_returning_at_decode(bounded, cluster):
    resident = cluster.load(MDS(F, 4, 6), A, scheme="compfs", pieces=4)
    try:
        for seed in range(3):
            output, _ = cluster.run(resident, X, faults=Faults(loss=0.3, seed=seed),
                                    wait_for_stops=False, timeout=60)
            assert np.array_equal(output, WANT)
    finally:
        cluster.unload(resident)


@pytest.mark.bounded(60)
def test_a_deadline_holds_under_loss(bounded, cluster):
    with pytest.raises(JobTimeout):
        run(cluster, "uncoded", Faults(loss={0: 0.95}, burst=40, slowdown={1: 1e5}),
            timeout=0.5)


@pytest.mark.bounded(90)
def test_on_workers_over_tcp(bounded, tmp_path):
    procs = []
    try:
        with ffcode.Cluster(4, endpoint=LOOPBACK, insecure=True, start_timeout=30) as tcp:
            procs = start_workers(tcp.endpoint, 4, tmp_path)
            tcp.wait()
            for scheme in ("compfs", "systematic"):
                output, _ = tcp.run(MDS(F, 3, 4), A, X, scheme=scheme, pieces=4, timeout=60,
                                    faults=Faults(loss=0.25, burst=2, seed=3))
                assert np.array_equal(output, WANT)
    finally:
        reap(procs)


# -- sparse repairs ----------------------------------------------------------------------------

@pytest.fixture
def received(monkeypatch):
    """The packets the master's collectors take, in order: (packet, innovative)."""
    seen = []

    def spying(*args, **kwargs):
        collector = for_job(*args, **kwargs)
        add = collector.add

        def add_seen(packet):
            innovative = add(packet)
            seen.append((packet, innovative))
            return innovative
        collector.add = add_seen
        return collector
    for_job = collectors.for_job
    monkeypatch.setattr(collectors, "for_job", spying)
    return seen


def check_sparse(seen, m=4):
    """The originals are unit vectors; each repair (piece >= m) mixes only originals of its
    share the master lacked when it came, but for originals deemed lost at a timeout whose
    acknowledgement and polls were all lost, or came late on a busy machine: (repairs,
    those mixing an original the master had, their nonzeros in all)."""
    got: dict = {}                  # share -> its originals the master has
    repairs = overreach = nonzeros = 0
    for packet, _ in seen:
        share, piece = packet.worker, int(packet.index)
        support = set(np.flatnonzero(packet.coeffs).tolist())
        if piece < m:
            assert support == {piece} and packet.coeffs[piece] == 1, (share, piece)
            got.setdefault(share, set()).add(piece)
            continue
        assert support and support <= set(range(m)), (share, piece, support)
        repairs, nonzeros = repairs + 1, nonzeros + len(support)
        lacked = set(range(m)) - got.get(share, set())
        overreach += not support <= lacked
    return repairs, overreach, nonzeros


@pytest.mark.bounded(240)
def test_sparse_repairs_are_exact_and_sparse(bounded, cluster, received):
    repairs = overreach = nonzeros = dropped = 0
    for p, burst in ((0.05, None), (0.2, None), (0.4, None), (0.2, 4), (0.4, 3)):
        for seed in range(2):
            received.clear()
            output, report = run(cluster, "cfs", Faults(loss=p, burst=burst, seed=seed),
                                 repair="sparse")
            assert np.array_equal(output, WANT), (p, burst, seed)
            assert report.rank == report.needed
            made, over, mixed = check_sparse(received)
            repairs, overreach, nonzeros = repairs + made, overreach + over, nonzeros + mixed
            dropped += sum(sum(w.dropped) for w in report.workers)
    assert dropped > 20 and repairs > 10    # the links did drop, and repairs were made
    assert overreach < repairs / 2 and nonzeros < 0.8 * 4 * repairs, \
        (repairs, overreach, nonzeros)      # mostly on what was missing: sparse


@pytest.mark.bounded(120)
def test_dense_repairs_mix_every_packet(bounded, cluster, received):
    """The default: random originals, and repairs that mix all of their share's (what
    check_sparse tells apart)."""
    for seed in range(3):
        output, _ = run(cluster, "cfs", Faults(loss=0.3, seed=seed))
        assert np.array_equal(output, WANT)
    assert all(np.count_nonzero(packet.coeffs) >= 2 for packet, _ in received)
    with pytest.raises(AssertionError):
        check_sparse(received)


@pytest.mark.bounded(120)
def test_sparse_repairs_with_more_shares_and_without_loss(bounded, cluster, received):
    """Three shares a worker: repairs filed per share, mixing their own share's only; on
    links that lose nothing, the pieces go plain and nothing else."""
    code = MDS(F, 8, 18)
    for seed in range(2):
        output, _ = cluster.run(code, A, X, scheme="cfs", pieces=4, timeout=60,
                                repair="sparse", faults=Faults(loss=0.3, seed=seed))
        assert np.array_equal(output, WANT)
    repairs, overreach, nonzeros = check_sparse(received)
    assert overreach < repairs and nonzeros < 4 * repairs, (repairs, overreach, nonzeros)
    received.clear()
    output, _ = run(cluster, "cfs", Faults(slowdown={5: 2}), repair="sparse")
    assert np.array_equal(output, WANT) and received
    assert check_sparse(received) == (0, 0, 0)


@pytest.mark.bounded(60)
def test_bad_repairs_are_refused(bounded, cluster):
    with pytest.raises(InvalidParameterError, match="'repair' must be one of"):
        run(cluster, "cfs", Faults(loss=0.1), repair="bats")
    for scheme in ("classic", "systematic", "uncoded"):
        with pytest.raises(InvalidParameterError, match="sends a lost packet again"):
            run(cluster, scheme, Faults(loss=0.1), repair="sparse")
    with pytest.raises(InvalidParameterError, match="fixed when its data was encoded"):
        run(cluster, "compfs", Faults(loss=0.1), repair="sparse")
    with pytest.raises(InvalidParameterError, match="compfs"):     # the default scheme
        cluster.run(MDS(F, 4, 6), A, X, repair="sparse", timeout=60)


@pytest.mark.bounded(120)
def test_sparse_repairs_on_workers_over_tcp(bounded, tmp_path, received):
    procs = []
    try:
        with ffcode.Cluster(4, endpoint=LOOPBACK, insecure=True, start_timeout=30) as tcp:
            procs = start_workers(tcp.endpoint, 4, tmp_path)
            tcp.wait()
            repairs = overreach = nonzeros = 0
            for p, burst in ((0.25, 2), (0.4, None), (0.3, None)):
                received.clear()
                output, _ = tcp.run(MDS(F, 3, 4), A, X, scheme="cfs", pieces=4, timeout=60,
                                    repair="sparse", faults=Faults(loss=p, burst=burst,
                                                                   seed=3))
                assert np.array_equal(output, WANT)
                made, over, mixed = check_sparse(received)
                repairs, overreach, nonzeros = repairs + made, overreach + over, \
                    nonzeros + mixed
            assert overreach < repairs and nonzeros < 4 * repairs, \
                (repairs, overreach, nonzeros)
    finally:
        reap(procs)


def test_a_task_asking_sparse_repairs_where_they_cannot_be_is_refused():
    """A worker checks the repair a task asks for (nothing from the network is trusted)."""
    from ffcode.errors import ProtocolError
    from ffcode.runtime.master.jobs import Plan
    from ffcode.runtime.master.options import Options
    from ffcode.runtime.shared.task import Task
    plan = Plan(MDS(F, 2, 3), (A, X), Options(scheme="cfs", pieces=2, repair="sparse"),
                assignment=((0,), (1,), (2,)))
    meta = plan.tasks[0][0].to_meta()
    assert Task.from_meta(meta).repair == "sparse"
    for scheme, seeds in (("compfs", None), ("classic", None)):
        bad = dict(meta, payload=dict(meta["payload"], scheme=scheme, seeds=seeds))
        with pytest.raises(ProtocolError, match="repair 'sparse'"):
            Task.from_meta(bad)
    with pytest.raises(ProtocolError, match="repair"):
        Task.from_meta(dict(meta, repair="bats"))
