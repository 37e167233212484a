"""run_mapreduce against a lying shuffle peer, on real workers: one worker spoils one element
of the shuffle messages it sends (and may lie in its fingerprints too); at load r >= 2 the
check finds it, names it in the report, the shuffle is redone without it and the outputs
are exact (TeraSort sorted, GF(p) sums right), on local workers and on hand-started tcp
workers; the liar gets no further job. Without the check the outputs are silently wrong;
at load 1 the check is refused. The liar is a test hook read from the worker's
environment as it starts (FFCODE_TEST_SHUFFLE_LIE), out of reach of the network.

This module is also imported by worker processes (test_mapreduce_verify:split_map)."""

import numpy as np
import pytest

import ffcode
from ffcode.errors import VerificationError
from ffcode.mapreduce import terasort
from ffcode.mapreduce.shuffle import Placement
from ffcode.runtime import run_mapreduce

from helpers import reap
from test_remote import LOOPBACK, start_workers

LIE = "FFCODE_TEST_SHUFFLE_LIE"
P = 2**31 - 1


def vector_map(data, k):
    """A file's K = k[0] values as vectors of GF(P): its K equal consecutive parts."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m].astype(np.uint64) % P for i in range(k)]


def sort_files(K, r, count=400, seed=1):
    data = terasort.records(count, seed=seed, skew=2.0)
    bounds = terasort.boundaries(data, K, seed=seed + 1).view(np.uint8).reshape(-1)
    files = [f.reshape(-1) for f in np.array_split(data, len(Placement(K, r).subsets))]
    return data, bounds, files


def sums(files, K):
    """Each function's exact sum over the files of its part (int64: few files of < 2**31)."""
    m = len(files[0]) // K
    total = np.sum(np.stack(files), axis=0) % P
    return [total[q * m:(q + 1) * m] for q in range(K)]


@pytest.fixture
def liar_cluster(monkeypatch, request):
    """start(K, "INDEX:MODE"): K local workers, the one at place INDEX lying as MODE says
    (runtime/shuffler.py's test hook)."""
    def start(K, lie):
        monkeypatch.setenv(LIE, lie)
        c = ffcode.Cluster(K)
        request.addfinalizer(c.close)
        c.wait()
        monkeypatch.delenv(LIE)
        return c
    return start


@pytest.mark.bounded(90)
@pytest.mark.parametrize("r,coded", [(2, True), (2, False), (3, True)])
def test_a_lying_peer_is_named_excluded_and_the_sort_is_exact(bounded, liar_cluster, r,
                                                               coded):
    K = 4
    c = liar_cluster(K, "1:send")
    before = {h.slot: h for h in c.live()}
    data, bounds, files = sort_files(K, r)
    outputs, report = run_mapreduce(c, files, terasort.mapper, terasort.sort, load=r,
                                    coded=coded, args=[bounds], timeout=60)
    assert terasort.check(outputs, data)
    assert report.verified is True and report.excluded == [1] and 1 in report.lost
    assert report.checks[0]["liars"] == [1] and report.checks[0]["disputed"] > 0
    assert report.checks[-1]["disputed"] == 0 and report.verify > 0
    assert report.to_dict()["excluded"] == [1]
    assert before[1].lost == "excluded: sent wrong MapReduce shuffle values"
    assert all(before[s].lost is None for s in (0, 2, 3))
    after = {h.slot: h for h in c.wait()}      # the liar's slot has a fresh process
    assert after[1].pid != before[1].pid
    assert all(after[s] is before[s] for s in (0, 2, 3))


@pytest.mark.bounded(90)
def test_sums_in_a_field_with_a_liar_in_messages_and_fingerprints(bounded, liar_cluster):
    """GF(p) sums, r = 2 coded then r = 3 plain: a liar spoiling its messages and lying as
    a voucher about others' is named; the sums are exact. verify=False: silently wrong,
    which is what the check is for. (The liar's replacement is forked from the same pool
    server, so it lies too.)"""
    K = 4
    c = liar_cluster(K, "2:send,vouch")
    rng = np.random.default_rng(3)
    for r, coded in ((2, True), (3, False)):
        files = [rng.integers(0, P, K * 5, dtype=np.int64)
                 for _ in range(len(Placement(K, r).subsets))]
        expected = sums(files, K)
        if r == 2:
            wrong, report = run_mapreduce(c, files, vector_map, load=r, coded=coded,
                                          field=P, args=[np.array([K])], timeout=60,
                                          verify=False)
            assert report.verified is None and report.checks == []
            assert any(not np.array_equal(w, e) for w, e in zip(wrong, expected))
        outputs, report = run_mapreduce(c, files, vector_map, load=r, coded=coded, field=P,
                                        args=[np.array([K])], timeout=60)
        assert all(np.array_equal(o, e) for o, e in zip(outputs, expected)), (r, coded)
        assert report.excluded == [2] and report.verified is True
        c.wait()            # the liar's slot restarted (the test's liar again)


@pytest.mark.bounded(90)
def test_one_spoiled_value_is_sent_again_by_another_mapper(bounded, liar_cluster):
    """Plain at r = 2, the liar spoils only its first message (to one receiver): its word
    against the receiver's, so the pair is distrusted and the value comes from the other
    mapper; spoiling its next first message too, it is common to both disputes: named."""
    K = 4
    c = liar_cluster(K, "1:send1")
    data, bounds, files = sort_files(K, 2)
    outputs, report = run_mapreduce(c, files, terasort.mapper, terasort.sort, load=2,
                                    coded=False, args=[bounds], timeout=60)
    assert terasort.check(outputs, data)
    assert report.checks[0]["liars"] == [] and len(report.checks[0]["distrust"]) == 1
    assert report.checks[0]["distrust"][0][0] == 1
    assert report.distrusted and all(pair[0] == 1 for pair in report.distrusted)
    assert report.excluded == [1] and report.verified is True


@pytest.mark.bounded(90)
def test_mappers_at_odds_fail_the_job_naming_both(bounded, liar_cluster):
    """K = 3, r = 2 plain, the liar spoils its one value and lies about the other mapper's:
    either could have lied, so the job fails naming both, and nobody is excluded."""
    c = liar_cluster(3, "1:send1,vouch")
    handles = c.live()
    data, bounds, files = sort_files(3, 2)
    with pytest.raises(VerificationError, match=r"workers \(0, 1\) at odds"):
        run_mapreduce(c, files, terasort.mapper, terasort.sort, load=2, coded=False,
                      args=[bounds], timeout=60)
    assert all(h.lost is None for h in handles)


@pytest.mark.bounded(60)
def test_load_1_cannot_be_checked(bounded, liar_cluster):
    """At r = 1 each batch has one mapper: verify=True is refused, "auto" does not check
    (and a liar's spoiled values go through: nothing can check them)."""
    K = 3
    c = liar_cluster(K, "0:send")
    data, bounds, files = sort_files(K, 1)
    with pytest.raises(ValueError, match="load r = 1 nothing can check"):
        run_mapreduce(c, files, terasort.mapper, terasort.sort, load=1, args=[bounds],
                      verify=True)
    with pytest.raises(TypeError, match="verify"):
        run_mapreduce(c, files, terasort.mapper, terasort.sort, load=1, args=[bounds],
                      verify="yes")
    outputs, report = run_mapreduce(c, files, terasort.mapper, terasort.sort, load=1,
                                    args=[bounds], timeout=60)
    assert report.verified is None and report.checks == []
    assert not terasort.check(outputs, data)


@pytest.mark.bounded(90)
def test_a_lying_tcp_worker_is_named_and_the_sort_is_exact(bounded, tmp_path):
    """Three hand-started 'ffcode worker --connect' processes over tcp (CURVE keys on the
    peer links), one started lying: at r = 2 coded it is named and excluded (told to
    exit), the records sorted exactly by the other two."""
    K = 3
    procs = []
    try:
        with ffcode.Cluster(endpoint=LOOPBACK, n_workers=K, start_timeout=30,
                            insecure=True) as c:
            for n in range(K):
                procs += start_workers(c.endpoint, 1, tmp_path,
                                       env={LIE: "any:send"} if n == 0 else None)
                c.wait(n + 1, timeout=30)       # connected in order: the liar is place 0
            data, bounds, files = sort_files(K, 2)
            outputs, report = run_mapreduce(c, files, terasort.mapper, terasort.sort,
                                            load=2, args=[bounds], timeout=60)
            assert terasort.check(outputs, data)
            assert report.excluded == [0] and report.verified is True
            assert procs[0].wait(20) is not None        # told to exit
        assert [proc.wait(10) for proc in procs[1:]] == [0] * (K - 1)
    finally:
        reap(procs)
