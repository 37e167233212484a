"""Coded MapReduce on peer links that lose messages (``run_mapreduce(link_loss=,
link_burst=, seed=)``): TeraSort sorted exactly at every load, coded and plain, under
independent and bursty loss from 0.05 to 0.4, on separate links and on a shared medium;
messages of many segments put back together; GF(p) sums exact; the report counting each
link's drops and each worker's segments sent again, the payload bytes unchanged; a
worker's own loss only on its links; a lying peer still named and excluded; a worker lost
mid-shuffle done without; no peer socket left once the jobs end; bad input refused before
anything starts. (Hand-started tcp workers and Ray actors on lossy links:
test_mapreduce.py.)"""
import time

import numpy as np
import pytest

from ffcode.errors import InvalidParameterError, JobFailed
from ffcode.mapreduce import terasort
from ffcode.mapreduce.shuffle import Bytes, Placement
from ffcode.runtime import run_mapreduce
from ffcode.runtime.worker.peer_links import SEGMENT

from helpers import shared_cluster
from test_mapreduce import (formula, killed, settled, sort_case, sort_job, split_files,
                            vector_map)
from test_mapreduce_verify import sort_files
import test_mapreduce
import test_mapreduce_verify

cluster = shared_cluster(4)
liar_cluster = test_mapreduce_verify.liar_cluster      # (fixtures: a liar's cluster, and
fresh = test_mapreduce.fresh                            # four workers of a test's own)
LOSSES = [(0.05, None), (0.2, None), (0.4, None), (0.2, 2.0), (0.4, 3.0)]


def check_losses(report, K, lossy=range(4)):
    """The report's drops: a K x K table, nothing on a worker's link to itself, nothing on
    a link between two workers not in ``lossy``; something dropped and sent again."""
    assert len(report.dropped) == K and len(report.resent) == K
    assert all(len(row) == K and row[k] == 0 for k, row in enumerate(report.dropped))
    assert all(report.dropped[i][j] == 0 for i in range(K) for j in range(K)
               if i not in lossy and j not in lossy)
    assert sum(map(sum, report.dropped)) > 0 and sum(report.resent) > 0
    assert report.to_dict()["dropped"] == report.dropped


@pytest.mark.bounded(90)
@pytest.mark.parametrize("loss,burst", LOSSES, ids=[f"p={p}-burst={b}" for p, b in LOSSES])
def test_terasort_at_every_load_is_exact_under_loss(bounded, cluster, loss, burst):
    """Every load r of 4 workers, coded and plain: the records sorted exactly, the payload
    bytes each worker sent as the shuffle's formula says (a message sent again is not
    counted again), the links' drops counted."""
    K = 4
    for r, coded in ((1, False), (2, True), (2, False), (3, True), (3, False)):
        outputs, report, data, files = sort_job(cluster, K, r, coded, link_loss=loss,
                                                link_burst=burst, seed=11)
        assert terasort.check(outputs, data), (r, coded)
        assert (report.link_loss, report.link_burst) == ((loss,) * K, burst)
        values = [terasort.mapper(f, sort_case(K)[1]) for f in files]
        assert report.sent == formula(Placement(K, r), values, Bytes(), coded)
        assert all(c >= s for c, s in zip(report.copies, report.sent))
        if loss >= 0.2:
            check_losses(report, K)


@pytest.mark.bounded(90)
@pytest.mark.parametrize("loss,burst", [(0.2, None), (0.4, 3.0)], ids=["p=0.2", "p=0.4-burst=3"])
def test_turns_on_a_lossy_medium_are_exact(bounded, cluster, loss, burst):
    """The shared medium ("turns", paced at a rate), each receiver losing its own share:
    every load, coded and plain, sorted exactly; each turn passed on only once what its
    worker sent was acknowledged, and the turn itself answered."""
    K = 4
    for r, coded in ((1, False), (2, True), (3, True)):
        outputs, report, data, files = sort_job(cluster, K, r, coded, network="turns",
                                                link_rate=50e6, link_loss=loss,
                                                link_burst=burst, seed=12)
        assert terasort.check(outputs, data), (r, coded)
        values = [terasort.mapper(f, sort_case(K)[1]) for f in files]
        assert report.sent == formula(Placement(K, r), values, Bytes(), coded)
        check_losses(report, K)


@pytest.mark.bounded(60)
def test_messages_of_many_segments_are_put_back_together(bounded, cluster):
    """10 MB of records: each coded shuffle message (three a worker) spans several
    segments, lost and sent again one by one; sorted exactly, the payload bytes as
    without loss."""
    data, bounds = sort_case(4, count=100000)
    files = split_files(data, Placement(4, 2))
    sent = {}
    for loss in (None, 0.3):
        outputs, report = run_mapreduce(cluster, files, terasort.mapper, terasort.sort,
                                        load=2, args=[bounds], timeout=30, link_loss=loss,
                                        link_burst=2.0 if loss else None, seed=8)
        assert terasort.check(outputs, data)
        sent[loss] = report.sent
    assert sent[None] == sent[0.3] and min(sent[None]) / 3 > 2 * SEGMENT
    check_losses(report, 4)
    assert sum(report.resent) > 8


@pytest.mark.bounded(60)
def test_sums_in_a_field_are_exact_under_bursty_loss(bounded, cluster):
    """Compressed sums of GF(p) vectors (the coded shuffle adds them up) at load 2 on links
    losing 0.3 in runs of 2: the same outputs as without loss."""
    K, p = 4, 2**31 - 1
    files = [np.random.default_rng(n).integers(0, 256, K * 64, dtype=np.uint8)
             for n in range(len(Placement(K, 2).subsets))]
    outputs = {}
    for loss in (None, 0.3):
        outputs[loss], report = run_mapreduce(
            cluster, files, vector_map, load=2, field=p, args=[np.array([K])], timeout=30,
            link_loss=loss, link_burst=2.0 if loss else None, seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(outputs[None], outputs[0.3]))
    check_losses(report, K)


@pytest.mark.bounded(60)
def test_a_workers_loss_is_on_its_own_links_only(bounded, cluster):
    """link_loss={1: 0.5}: only the links from and to worker 1 drop anything."""
    outputs, report, data, _ = sort_job(cluster, 4, 2, True, link_loss={1: 0.5}, seed=2)
    assert terasort.check(outputs, data)
    assert report.link_loss == (0.0, 0.5, 0.0, 0.0)
    check_losses(report, 4, lossy=[1])


@pytest.mark.bounded(60)
def test_no_peer_socket_is_left_once_lossy_jobs_end(bounded, cluster):
    """A finished job's workers answer their peers' copies until the job is let go of,
    then close their peer sockets: none is left."""
    for _ in range(3):
        outputs, _, data, _ = sort_job(cluster, 4, 2, True, link_loss=0.3, seed=None)
        assert terasort.check(outputs, data)
    assert settled(cluster) == set()


@pytest.mark.bounded(90)
def test_a_lying_peer_is_named_under_loss(bounded, liar_cluster):
    """The shuffle's check on lossy links: the liar named and excluded, the records
    sorted exactly by the others (the second shuffle lossy too)."""
    K = 4
    c = liar_cluster(K, "2:send")
    data, bounds, files = sort_files(K, 2)
    outputs, report = run_mapreduce(c, files, terasort.mapper, terasort.sort, load=2,
                                    args=[bounds], timeout=60, link_loss=0.2, seed=3)
    assert terasort.check(outputs, data)
    assert report.verified is True and report.excluded == [2]
    assert report.dropped[2] is None and report.resent[2] is None


@pytest.mark.bounded(60)
def test_a_worker_lost_mid_lossy_shuffle_is_done_without(bounded, fresh):
    """A worker killed during a lossy exchange (links at 4 kB/s, the kill 0.2 s in): at
    load 2 the survivors shuffle again without it, on lossy links again, exactly."""
    K, place = 4, 1
    data, bounds = sort_case(K, count=300)
    files = split_files(data, Placement(K, 2))
    victim = fresh.wait()[place].pid
    start = fresh.epoch
    began = time.monotonic()

    def job():
        return run_mapreduce(fresh, files, terasort.mapper, terasort.sort, load=2,
                             coded=False, args=[bounds], link_rate=4e3, link_loss=0.2,
                             seed=1, timeout=30)

    result, _ = killed(fresh, job, victim, lambda: fresh.epoch >= start + 2, delay=0.2)
    assert time.monotonic() - began < 20
    assert not isinstance(result, JobFailed), result
    outputs, report = result
    assert terasort.check(outputs, data) and report.lost == [place]
    assert [j.code for j in report.jobs][1:] == ["MapReduce shuffle phase on 4 workers"] * 2
    assert report.dropped[place] is None


@pytest.mark.parametrize("options, message", [
    ({"link_loss": 1.0}, "a peer link losing every message cannot carry the shuffle"),
    ({"link_loss": {0: 1}}, "a peer link losing every message"),
    ({"link_loss": 1.5}, "must be a probability in [0, 1], not 1.5"),
    ({"link_loss": -0.1}, "must be a probability in [0, 1], not -0.1"),
    ({"link_loss": float("nan")}, "must be a probability in [0, 1], not nan"),
    ({"link_loss": "0.2"}, "must be a number in [0, 1], not str"),
    ({"link_loss": {7: 0.1}}, "names worker 7, which the job has not"),
    ({"link_loss": 0.2, "link_burst": 0.5}, "mean run of losses >= 1"),
    ({"link_loss": 0.6, "link_burst": 1.0}, "too short for p = 0.6"),
    ({"link_loss": 0.2, "seed": -1}, "'seed'"),
])
def test_bad_losses_are_refused_before_anything_starts(cluster, options, message):
    data, bounds = sort_case(4)
    epoch = cluster.epoch
    with pytest.raises(InvalidParameterError) as e:
        run_mapreduce(cluster, split_files(data, Placement(4, 2)), terasort.mapper,
                      terasort.sort, load=2, args=[bounds], **options)
    assert message in str(e.value)
    assert cluster.epoch == epoch
