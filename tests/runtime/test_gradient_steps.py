"""Gradient coding on the runtime (the "gradient" job kind, GradientStep): the exact sum of
every partition's gradient from local workers, with stragglers done without, at full
speed from partial work where no worker finished, in the original protocol from whole
messages; failures named; bad tasks refused as they arrive."""
import numpy as np
import pytest

import ffcode
from ffcode import GF, CyclicRepetition, Faults, FractionalRepetition
from ffcode.errors import InvalidParameterError, JobFailed, ProtocolError, WorkerError
from ffcode.runtime import GradientStep, Options
from ffcode.runtime.shared.gradient import Gradient

from helpers import reap, shared_cluster
from test_remote import LOOPBACK, start_workers

F = GF(2**31 - 1)
cluster = shared_cluster(6)


def cube_sum(F, X, w):
    """A partition's 'gradient': the column sums of X^3 * w (elementwise), in GF(p)."""
    cubes = F.mul(F.mul(F.mul(X, X), X), np.broadcast_to(w, X.shape))
    return F.combine(np.ones((1, X.shape[0]), F.dtype), list(cubes))[0]


def raises(F, X, w):
    raise ArithmeticError("no gradient today")


def wrong_shape(F, X, w):
    return F.asarray(np.zeros(int(X[0, 0]) % 3 + 1, np.int64))


def data(code, seed=0):
    parts = [(F.random((20, 3), seed=(seed, j)),) for j in range(code.partitions)]
    w = F.random(3, seed=(seed, 99))
    want = F.combine(np.ones((1, code.partitions), F.dtype),
                     [cube_sum(F, X, w) for (X,) in parts])[0]
    return parts, w, want


@pytest.mark.bounded(60)
@pytest.mark.parametrize("partial", [True, False])
@pytest.mark.parametrize("make", [lambda: CyclicRepetition(F, 6, 2),
                                  lambda: FractionalRepetition(F, 6, 1),
                                  lambda: CyclicRepetition(F, 4, 0)],
                         ids=["cyclic 6,2", "fractional 6,1", "cyclic 4,0 on 4 of 6"])
def test_the_exact_sum_from_local_workers(bounded, cluster, make, partial):
    code = make()
    parts, w, want = data(code)
    output, report = cluster.run(GradientStep(code, cube_sum, parts, w, partial=partial))
    assert output.dtype == F.dtype and np.array_equal(output, want)
    assert report.code == repr(code)


@pytest.mark.bounded(60)
def test_stragglers_are_done_without(bounded, cluster):
    """s = 2 workers paused for 30 s: the sum comes from the other four (whole or partial
    work), long before the pauses end, and those two sent nothing."""
    code = CyclicRepetition(F, 6, 2)
    parts, w, want = data(code, seed=1)
    for partial in (True, False):
        output, report = cluster.run(GradientStep(code, cube_sum, parts, w, partial=partial),
                                     faults=Faults(delay={1: (30.0, 0), 4: (30.0, 0)}),
                                     timeout=20)
        assert np.array_equal(output, want)
        assert not report.workers[1].packets and not report.workers[4].packets


@pytest.mark.bounded(60)
def test_partial_work_decodes_where_no_worker_finished(bounded, cluster):
    """Every worker pauses 1 s after each partition: at full speed the first partition of
    each of the 6 covers all 6 (the cyclic order), so each worker sent one message and was
    stopped in its second pause; the original protocol needed 4 whole messages."""
    code = CyclicRepetition(F, 6, 2)
    parts, w, want = data(code, seed=2)
    slow = Faults(delay=(1.0, 0))
    output, report = cluster.run(GradientStep(code, cube_sum, parts, w), faults=slow)
    assert np.array_equal(output, want)
    assert [len(t.packets) for t in report.workers] == [1] * 6
    output, report = cluster.run(GradientStep(code, cube_sum, parts, w, partial=False),
                                 faults=Faults(delay=(0.2, 0)))
    assert np.array_equal(output, want)
    assert sum(len(t.packets) for t in report.workers) >= 4
    assert all(p["index"] == 2 for t in report.workers for p in t.packets)


@pytest.mark.bounded(60)
def test_failures_are_named(bounded, cluster):
    """A gradient function that raises fails the job naming a worker; gradients of
    partitions that differ in shape fail it too; partitions no live worker can cover fail
    it naming them."""
    code = CyclicRepetition(F, 6, 2)
    parts, w, _ = data(code, seed=3)
    with pytest.raises(WorkerError, match="worker .* failed: ArithmeticError: no gradient"):
        cluster.run(GradientStep(code, raises, parts, w), timeout=20)
    with pytest.raises(WorkerError, match="differ in shape"):
        cluster.run(GradientStep(code, wrong_shape,
                                 [(F.asarray([[j, 0, 0]]),) for j in range(6)], w),
                    timeout=20)
    fractional = FractionalRepetition(F, 6, 1)
    with pytest.raises(JobFailed, match=r"rank 4/6 after every live worker finished; "
                                        r"partitions \[2, 3\] of 6 not covered; workers 2 "
                                        r"and 3 lost"):
        cluster.run(GradientStep(fractional, cube_sum, data(fractional)[0], w),
                    faults=Faults(crash_after={2: 0, 3: 0}), timeout=20)


def test_bad_steps_and_tasks_are_refused():
    code = CyclicRepetition(F, 4, 1)
    parts, w, _ = data(code)
    with pytest.raises(InvalidParameterError, match="4 partitions, not 3"):
        GradientStep(code, cube_sum, parts[:3], w)
    with pytest.raises(InvalidParameterError, match="tuple of its arrays"):
        GradientStep(code, cube_sum, [X for (X,) in parts], w)
    with pytest.raises(InvalidParameterError, match="GradientCode"):
        GradientStep("code", cube_sum, parts, w)
    with pytest.raises(InvalidParameterError, match="bound"):
        GradientStep(code, cube_sum, parts, w, bound=F.max_signed // 4 + 1)   # could wrap
    assert GradientStep(code, cube_sum, parts, w, bound="auto").bound == F.max_signed // 4
    good = Gradient("m:f", 65521, (1, 2)).to_meta()
    for bad in (dict(good, bound=32761), dict(good, bound=-1),
                dict(good, coefficients=[]), dict(good, coefficients=[0, 1]),
                dict(good, coefficients="12"), dict(good, p=1), dict(good, partial="yes"),
                dict(good, f="no path"), {"f": "m:f"}):
        with pytest.raises(ProtocolError):
            Gradient.from_meta(bad)


@pytest.mark.bounded(60)
def test_resident_partitions_ship_once(bounded):
    """cluster.load(code, partitions) leaves each worker its partitions: a step on them ships
    only the arguments, gives the same exact sum, reloads a worker that replaced a lost one,
    and is refused once unloaded or on another cluster."""
    code = CyclicRepetition(F, 6, 2)
    parts, w, want = data(code, seed=5)
    with ffcode.Cluster(6) as cluster:
        resident = cluster.load(code, parts)
        assert "partitions" in repr(resident)
        first, report = cluster.run(GradientStep(resident, cube_sum, w))
        assert np.array_equal(first, want)
        shipped = sum(t.shipped or 0 for t in report.workers)
        assert shipped < 6 * (w.nbytes + 2048)         # the arguments and the tasks only
        output, report = cluster.run(GradientStep(resident, cube_sum, w, partial=False),
                                     faults=Faults(crash_after={3: 0}))
        assert np.array_equal(output, want)
        output, report = cluster.run(GradientStep(resident, cube_sum, w))
        assert np.array_equal(output, want) and report.reloaded == [3]
        with pytest.raises(InvalidParameterError, match="run ffcode.runtime.GradientStep"):
            cluster.run(resident, w)
        cluster.unload(resident)
        with pytest.raises(InvalidParameterError, match="unloaded"):
            cluster.run(GradientStep(resident, cube_sum, w))
        with pytest.raises(InvalidParameterError, match="6 partitions, not 5"):
            cluster.load(code, parts[:5])
        other_data = cluster.load(code, parts)
        with ffcode.Cluster(6) as other:
            with pytest.raises(InvalidParameterError, match="another cluster"):
                other.run(GradientStep(other_data, cube_sum, w))


@pytest.mark.bounded(120)
@pytest.mark.parametrize("how", ["random", "piece", "shape"])
def test_a_wrong_worker_is_corrected_named_and_excluded(bounded, how):
    """adversaries=1 with a code tolerating 2 stragglers: a worker that lies (random
    messages, one element off by one, or a message of the wrong shape), heard first, is
    left out of the exact sum, named in report.wrong and excluded from later jobs."""
    code = CyclicRepetition(F, 6, 2)
    parts, w, want = data(code, seed=4)
    others = Faults(corrupt={3: how}, delay={i: (0.3, 0) for i in (0, 1, 2, 4, 5)})
    with ffcode.Cluster(6) as own:
        output, report = own.run(GradientStep(code, cube_sum, parts, w, partial=False),
                                 faults=others, adversaries=1, timeout=30)
        assert np.array_equal(output, want) and report.wrong == [3]
        output, report = own.run(GradientStep(code, cube_sum, parts, w), timeout=30)
        assert np.array_equal(output, want)
        assert not report.workers[3].packets


@pytest.mark.bounded(90)
def test_wrong_workers_at_full_speed_and_beyond_the_redundancy(bounded):
    """At full speed a liar's partial messages are left out or outvoted; two liars
    cannot be explained with at most one (VerificationError); a code without the
    redundancy for two is refused."""
    from ffcode.errors import VerificationError
    code = CyclicRepetition(F, 6, 2)
    parts, w, want = data(code, seed=5)
    with ffcode.Cluster(6) as own:
        with pytest.raises(VerificationError, match="cannot be explained with at most 1"):
            own.run(GradientStep(code, cube_sum, parts, w, partial=False),
                    faults=Faults(corrupt={1: "random", 4: "random"}), adversaries=1,
                    timeout=30)
        with pytest.raises(InvalidParameterError, match="tolerates 4 stragglers"):
            own.run(GradientStep(code, cube_sum, parts, w), adversaries=2)
        output, report = own.run(GradientStep(code, cube_sum, parts, w),
                                 faults=Faults(corrupt={2: "random"}), adversaries=1,
                                 timeout=30)
        assert np.array_equal(output, want) and report.wrong in ([], [2])


@pytest.mark.bounded(120)
def test_on_a_cluster_of_relays_each_group_sums_its_partitions(bounded):
    """The code's workers are the relays; each relay's group computes each of its
    partitions' gradients as the sum over the partition's cut into the group's parts (a
    gradient step of its own, absorbing a slow member); a lost relay is done without. On
    integer data the sum equals the flat one exactly."""
    from ffcode.learn.descent import gradient_job, local_sum, worker_partitions
    G = GF(2**61 - 1)
    code = CyclicRepetition(G, 3, 1)
    rng = np.random.default_rng(6)
    parts = [(rng.integers(-9, 10, (40, 3)), rng.integers(-9, 10, 40)) for _ in range(3)]
    w = np.array([1.0, -2.0, 3.0])
    path = "ffcode.learn.descent:least_squares"
    want = local_sum(G, path, w, parts, 1)
    shipped, kinds = worker_partitions(code, parts)
    with ffcode.Cluster(9, groups=3) as relays:
        for partial in (True, False):
            output, report = relays.run(
                gradient_job(G, (code, shipped), path, w, 1, kinds, partial),
                faults=Faults(crash_after={1: 0}), group_faults={0: Faults(delay={2: (30.0, 0)})},
                timeout=30)
            assert np.array_equal(G.to_real(output, 1), want)
            assert not report.workers[1].packets
        with pytest.raises(InvalidParameterError, match="the relays: .* has 6, the cluster 3"):
            relays.run(gradient_job(G, (CyclicRepetition(G, 6, 1), shipped * 2), path, w, 1,
                                    kinds))
        with pytest.raises(InvalidParameterError, match="'group_stragglers' must be below"):
            relays.run(GradientStep(code, path, shipped, group_stragglers=3))
        uneven = [(X, y[:-1]) for X, y in parts]
        shipped, kinds = worker_partitions(code, uneven)
        with pytest.raises(WorkerError, match="first axis"):
            relays.run(gradient_job(G, (code, shipped), path, w, 1, kinds), timeout=30)
    with pytest.raises(InvalidParameterError, match="'group_faults' is for a cluster of"):
        cluster_free = GradientStep(code, path, shipped)
        cluster_free.plan(Options(group_faults={0: Faults()}))


@pytest.mark.bounded(60)
def test_steps_in_flight_together(bounded):
    """Several steps submitted at once (a resident one among them), each its exact sum,
    while one worker is slow in all of them."""
    code = CyclicRepetition(F, 6, 2)
    jobs = [data(code, seed=20 + i) for i in range(4)]
    slow = Faults(delay={2: (0.5, 0)})
    with ffcode.Cluster(6) as own:
        resident = own.load(code, jobs[0][0])
        futures = [own.submit(GradientStep(resident, cube_sum, jobs[0][1]), faults=slow)]
        futures += [own.submit(GradientStep(code, cube_sum, parts, w, partial=i % 2 == 0),
                               faults=slow) for i, (parts, w, _) in enumerate(jobs[1:])]
        for future, (_, _, want) in zip(futures, jobs):
            output, _ = future.result(timeout=30)
            assert np.array_equal(output, want)


@pytest.mark.bounded(90)
def test_on_workers_over_tcp(bounded, tmp_path):
    """Workers started by hand, over tcp on loopback (they import what ffcode has: the
    least-squares gradient of ffcode.learn.descent, on integers), resident too."""
    from ffcode.learn.descent import gradient_job, local_sum, worker_partitions
    G = GF(2**61 - 1)
    code = CyclicRepetition(G, 3, 1)
    rng = np.random.default_rng(7)
    parts = [(rng.integers(-9, 10, (20, 2)), rng.integers(-9, 10, 20)) for _ in range(3)]
    w, path = np.array([2.0, -1.0]), "ffcode.learn.descent:least_squares"
    want = local_sum(G, path, w, parts, 1)
    shipped, kinds = worker_partitions(code, parts)
    procs = []
    try:
        with ffcode.Cluster(3, endpoint=LOOPBACK, insecure=True, start_timeout=30) as tcp:
            procs = start_workers(tcp.endpoint, 3, tmp_path)
            tcp.wait()
            output, _ = tcp.run(gradient_job(G, (code, shipped), path, w, 1, kinds),
                                timeout=30)
            assert np.array_equal(G.to_real(output, 1), want)
            resident = tcp.load(code, shipped)
            output, _ = tcp.run(gradient_job(G, resident, path, w, 1, kinds, False),
                                timeout=30)
            assert np.array_equal(G.to_real(output, 1), want)
    finally:
        reap(procs)
