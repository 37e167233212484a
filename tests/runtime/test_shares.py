"""Several shares per worker: a code with more points than the cluster has workers runs
with each worker working through its shares in order, every share its own sender to the
decoder; crashes, wrong workers, resident data, allocation by speed and the report name
workers (processes) whatever shares they hold."""
import itertools

import numpy as np
import pytest

import ffcode
from ffcode import MDS, PolynomialCode, allocation
from ffcode.decoding.decoder import Decoder
from ffcode.schemes import NAMES
from ffcode.runtime import Cluster, Faults

from helpers import shared_cluster

F = ffcode.GF(2**31 - 1)
P = 3                       # the cluster's workers
A = F.random((96, 40), seed=1)
X = F.random((40, 3), seed=2)
SCHEMES = list(NAMES)


cluster = shared_cluster(P, lost_after=1.0)


def product():
    return F.matmul(A, X)


# -- the decoder: any mix of (worker, share) packets -----------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_any_mix_of_shares_decodes_at_exactly_m_r(seed):
    """Packets of 12 shares (2 per worker of 6), fed in a random order and mix: the output
    decodes at exactly m·R independent packets, never before, and is exact."""
    m, code = 3, MDS(F, 4, 12)
    encoding = code.encode(A, pieces=m, seed=seed)
    rng = np.random.default_rng(seed)
    packets = [packet for k in range(12) for packet in code.compute_pieces(encoding[k], X)]
    rng.shuffle(packets)
    decoder = Decoder(encoding, m)
    for count, packet in enumerate(packets, 1):
        decoder.add(packet)
        assert decoder.complete == (decoder.rank == m * 4)
        if decoder.complete:
            break
    assert decoder.rank == m * 4 and count >= m * 4
    senders = {p.worker for p in packets[:count]}
    assert len(senders) >= 4
    assert np.array_equal(decoder.result(), product())


# -- runs ---------------------------------------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_with_three_shares_each(bounded, cluster, scheme):
    """A 9-point code on 3 workers: each holds shares i, i + 3, i + 6 and the packets are
    filed under their shares; the output is exact."""
    code = MDS(F, 4, 9)
    output, report = cluster.run(code, A, X, scheme=scheme, pieces=3, seed=1)
    assert np.array_equal(output, product())
    assert report.n_workers == P and len(report.workers) == P
    assert [w.shares for w in report.workers] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert report.settings["assignment"] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    m = report.pieces
    for w in report.workers:
        for record in w.packets:
            k, j = divmod(record["index"], m)
            assert (record["share"], record["piece"]) == (w.shares[k], j)
        assert w.speed is None or w.speed > 0
    assert report.used == report.needed


@pytest.mark.bounded(60)
def test_fast_worker_keeps_computing(bounded, cluster):
    """With two slow workers, the fast one works through its next shares: it sends more
    than one share's packets, which a one-share job cannot use."""
    faults = Faults(delay={0: (0.0, 0.0), 1: (0.3, 0.0), 2: (0.3, 0.0)})
    code = MDS(F, 3, 6)
    output, report = cluster.run(code, A, X, scheme="compfs", pieces=2, faults=faults)
    assert np.array_equal(output, product())
    fast = report.workers[0]
    assert fast.used > 2 and {r["share"] for r in fast.packets if r["innovative"]} == {0, 3}


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme, sent", [("classic", 1), ("compfs", 3), ("compfs", 4)],
                         ids=["classic", "compfs-after-a-share", "compfs-mid-share"])
def test_crash_in_the_second_share(bounded, scheme, sent):
    """A worker holding two shares crashes after its first share's packets (or one packet
    into its second): the job decodes from what it sent and the others' shares; it is named
    lost by its place."""
    m = 3
    with Cluster(P, lost_after=1.0) as c:
        output, report = c.run(MDS(F, 3, 6), A, X, scheme=scheme, pieces=m, timeout=30,
                               faults=Faults(crash_after={1: sent},
                                             delay={0: (0.15, 0.0), 2: (0.15, 0.0)}))
        assert np.array_equal(output, product())
        crashed = report.workers[1]
        assert crashed.shares == [1, 4] and crashed.lost is not None
        assert {r["share"] for r in crashed.packets} <= {1, 4}
        assert len(crashed.packets) <= sent
        # the replacement holds the same place and shares next time
        output, report = c.run(MDS(F, 3, 6), A, X, scheme=scheme, pieces=m, timeout=30)
        assert np.array_equal(output, product()) and report.workers[1].lost is None


@pytest.mark.bounded(60)
@pytest.mark.parametrize("scheme", ["classic", "cfs", "compfs"])
def test_wrong_worker_with_several_shares_named_once(bounded, scheme):
    """A malicious worker holding two shares is wrong on both: correcting one wrong worker
    corrects its two shares, the output is exact and the worker is named once."""
    code = MDS(F, 2, 8)                 # R + 2·2 = 6 <= 8 shares
    honest = {w: (0.03, 0.0) for w in (0, 1, 3)}        # the wrong one is heard first
    with Cluster(4) as c:
        output, report = c.run(code, A, X, scheme=scheme, pieces=2, adversaries=1,
                               faults=Faults(corrupt={2: "random"}, delay=honest),
                               timeout=30)
        assert np.array_equal(output, product())
        assert report.wrong == [2]
        assert report.needed == report.pieces * (2 + 2 * 2)
        assert {r["share"] for r in report.workers[2].packets} == {2, 6}
        assert not any(r["innovative"] for r in report.workers[2].packets)


def test_shares_corrected_count_the_largest_holders():
    """A wrong workers are wrong on the shares of the A workers holding the most."""
    from ffcode.runtime.master.jobs import Options, Plan
    options = Options(scheme="compfs", pieces=2, seed=0, adversaries=1)
    plan = Plan(MDS(F, 2, 9), (A, X), options, allocation.dealt([3, 3, 3]))
    assert plan.wrong_shares == 3 and plan.needed == 2 * (2 + 2 * 3)
    with pytest.raises(ValueError, match=r"holding up to 5 shares needs R \+ 2S = 12"):
        Plan(MDS(F, 2, 9), (A, X), options, allocation.dealt([5, 2, 2]))


# -- allocation -------------------------------------------------------------------------------

@pytest.mark.parametrize("speeds", [[1, 1, 1], [4, 1, 1], [3, 2, 1], [1, 2.5, 7.25],
                                    [10, 10, 1, 1, 1, 1], [1, 1, 1, 0.25, 0.25, 0.25]])
@pytest.mark.parametrize("total", [6, 9, 12, 30])
def test_proportional_within_one_share(speeds, total):
    """Counts within one share of each worker's proportional part whenever every part is
    at least one; they always add up and every worker holds one."""
    counts = allocation.proportional(total, speeds)
    parts = [total * s / sum(speeds) for s in speeds]
    assert sum(counts) == total and min(counts) >= 1
    if min(parts) >= 1:
        assert all(abs(c - q) < 1 for c, q in zip(counts, parts))
    assignment = allocation.dealt(counts)
    assert sorted(k for held in assignment for k in held) == list(range(total))
    assert [len(h) for h in assignment] == list(counts)


def test_proportional_floors_the_slowest_at_one():
    """A worker far slower than the rest still holds one share; the rest are shared out
    among the others in proportion."""
    assert allocation.proportional(6, [100, 1, 1]) == (4, 1, 1)
    assert allocation.proportional(3, [100, 1, 1]) == (1, 1, 1)
    with pytest.raises(ValueError, match="would leave 1 without one"):
        allocation.proportional(2, [1, 1, 1])


def test_uniform_is_round_robin():
    assert allocation.uniform(7, 3) == ((0, 3, 6), (1, 4), (2, 5))
    assert allocation.uniform(2, 4) == ((0,), (1,))
    assert allocation.uniform(4, 4) == ((0,), (1,), (2,), (3,))


@pytest.mark.bounded(60)
def test_allocate_given_speeds(bounded, cluster):
    output, report = cluster.run(MDS(F, 3, 12), A, X, allocate=[2, 1, 1], seed=3)
    assert np.array_equal(output, product())
    assert [len(w.shares) for w in report.workers] == [6, 3, 3]


@pytest.mark.bounded(60)
def test_allocate_by_measured_speed(bounded):
    """A worker measured 4x slower in a job gets fewer shares in the next; speeds() says
    what was measured."""
    with Cluster(P) as c:
        with pytest.raises(ValueError, match="needs speeds measured in an earlier job"):
            c.run(MDS(F, 3, 9), A, X, allocate="speed")
        pause = {w: (0.03, 0.0) for w in range(P)}
        pause[2] = (0.12, 0.0)
        c.run(MDS(F, 3, 9), A, X, pieces=2, faults=Faults(delay=pause))
        speeds = c.speeds()
        assert all(s > 0 for s in speeds) and speeds[2] < min(speeds[:2]) / 2
        output, report = c.run(MDS(F, 3, 9), A, X, allocate="speed")
        assert np.array_equal(output, product())
        counts = [len(w.shares) for w in report.workers]
        assert counts[2] < min(counts[:2]) and sum(counts) == 9


# -- resident data --------------------------------------------------------------------------

@pytest.mark.bounded(90)
@pytest.mark.parametrize("scheme", ["classic", "compfs"])
def test_resident_shares_reloaded_together(bounded, scheme):
    """Resident data with two shares per worker: jobs ship only x; a lost worker's
    replacement gets both its shares again before its next job."""
    with Cluster(P, lost_after=1.0) as c:
        data = c.load(MDS(F, 3, 6), A, scheme=scheme, pieces=2, seed=4)
        assert data.assignment == ((0, 3), (1, 4), (2, 5))
        for seed in range(3):
            x = F.random((40, 2), seed=10 + seed)
            output, report = c.run(data, x)
            assert np.array_equal(output, F.matmul(A, x)) and report.reloaded == []
        with pytest.raises(ValueError, match="keeps the assignment it was loaded with"):
            c.run(data, X, allocate="speed")
        c.run(data, X, faults=Faults(crash_after={0: 0}, delay={1: (0.05, 0.0)}),
              timeout=30)
        output, report = c.run(data, X, timeout=30)
        assert np.array_equal(output, product())
        assert report.reloaded == [0]
        shares = data.layout.held(0)
        assert [k for k, _ in shares] == [0, 3]
        assert report.workers[0].reloaded >= sum(a.nbytes for _, s in shares for a in s)


@pytest.mark.bounded(60)
def test_product_code_with_shares(bounded, cluster):
    """PolynomialCode a = b = 2 (R = 4) with 6 points on 3 workers: exact, every share's
    first piece from each worker."""
    code = PolynomialCode(F, 2, 2, 6)
    B = F.random((40, 24), seed=5)
    output, report = cluster.run(code, A, B, scheme="compfs", pieces=2)
    assert np.array_equal(output, F.matmul(A, B))
    assert list(itertools.chain(*(w.shares for w in report.workers))) == [0, 3, 1, 4, 2, 5]


@pytest.mark.bounded(60)
def test_private_code_with_several_shares_warns(bounded, cluster, caplog, monkeypatch):
    """LCC's privacy counts shares: with two shares per worker and t = 1, a single worker
    may see two, which the cluster warns of (and says at INFO when t covers a worker)."""
    import logging
    from ffcode import LCC
    monkeypatch.setattr(logging.getLogger("ffcode"), "propagate", True)   # the CLI's off
    blocks = [F.random((8, 4), seed=3)]
    for t, level in ((1, logging.WARNING), (2, logging.INFO)):
        code = LCC(F, 1, t, "ffcode.functions:square", 2, 2 * P)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ffcode.runtime.master.options"):
            output, _ = cluster.run(code, blocks, scheme="cfs")
        assert all(np.array_equal(o, F.mul(b, b)) for o, b in zip(output, blocks))
        said = [r for r in caplog.records if "keeps the data from any" in r.getMessage()]
        assert said and {r.levelno for r in said} == {level}   # pytest 9.2 may see it twice
        assert f"any {t // 2} workers learn nothing" in said[0].getMessage()
