"""Verification of a job's output: every code's check accepts exact outputs and refuses any
corrupted one; the runtime checks by default where it is cheap and never returns an output
a malicious worker spoiled. (The random projections themselves: tests/field/
test_fingerprints.py.)"""
import numpy as np
import pytest

import ffcode
from ffcode import GF, LCC, MDS, Faults, MatDot, PolynomialCode, ProductCode
from ffcode.decoding import verify
from ffcode.runtime import VerificationError

from codecases import gram, times_W

WIDE_PRIMES = [2**31 + 11, 2**32 - 5, 2**61 - 1, 2**63 - 25]     # the 64-bit kernel's


def shaped(*shape):
    """An array of that shape that takes no memory: cheap and by_default read shapes only."""
    return np.broadcast_to(np.uint64(0), shape)


@pytest.mark.parametrize("p", [65521] + WIDE_PRIMES)
def test_output_of_every_checkable_code(p):
    """Every code with a check (cost not None: a fraction of the job, or RECOMPUTE for MDS
    with a vector x) accepts its exact output and refuses it with one element changed;
    verify.output takes the code or one of its encodings."""
    F = GF(p)
    A, B = F.random((6, 4), seed=1), F.random((4, 5), seed=2)
    x, X = F.random(4, seed=3), F.random((4, 2), seed=4)
    blocks = [F.random((5, 3), seed=5 + j) for j in range(2)]
    cases = [(PolynomialCode(F, 2, 2, 4), (A, B), F.matmul(A, B)),
             (MatDot(F, 2, 3), (A, B), F.matmul(A, B)),
             (ProductCode(F, 5, [[0], [1]], [[0, 3]]), (A, B), F.matmul(A, B)),
             (MDS(F, 2, 3), (A, x), F.matmul(A, x)),
             (MDS(F, 2, 3), (A, X), F.matmul(A, X)),
             (LCC(F, 2, 1, times_W, 1, 4, row_linear=True), (blocks,),
              [times_W(F, b) for b in blocks])]
    for code, inputs, out in cases:
        cost = verify.cost(code, inputs)
        assert cost is not None and cost > 0
        assert (cost == verify.RECOMPUTE) == (isinstance(code, MDS) and inputs[1].ndim == 1)
        encoding = code.encode(*inputs[:code.encodes], seed=1)
        for checked in (code, encoding):
            assert verify.output(checked, inputs, out, seed=0), code
        bad = [o.copy() for o in out] if isinstance(out, list) else out.copy()
        target = bad[1] if isinstance(bad, list) else bad
        target.flat[-1] = F.add(target.flat[-1], 1)
        for checked in (code, encoding):
            assert not verify.output(checked, inputs, bad, seed=0), code


@pytest.mark.parametrize("p", [65521, 2**61 - 1])
def test_lcc_0d_blocks_are_recomputed(p):
    """Row-linear LCC of 0-d blocks (no rows to project): the check recomputes f on them, so
    an exact output passes and a wrong one fails, at the cost of a recomputation."""
    F = GF(p)

    def twice(F, X):
        return F.add(X, X)

    code = LCC(F, 2, 0, twice, 1, 3, row_linear=True)
    blocks = [np.array(5, F.dtype), np.array(p - 2, F.dtype)]
    out = [twice(F, b) for b in blocks]
    assert verify.cost(code, (blocks,)) == verify.RECOMPUTE
    assert verify.output(code, (blocks,), out, seed=0)
    assert not verify.output(code, (blocks,), [out[0], F.add(out[1], 1)], seed=0)
    assert not verify.output(code, (blocks,), out[:1], seed=0)
    assert not verify.cheap(code, (blocks,)) and not verify.by_default(code, (blocks,), 1)


def test_not_row_linear_lcc_cannot_be_checked():
    F = GF(65521)
    code = LCC(F, 2, 1, gram, 2, 7)
    blocks = [F.random((3, 2), seed=1)] * 2
    assert verify.cost(code, (blocks,)) is None
    assert not verify.cheap(code, (blocks,)) and not verify.by_default(code, (blocks,), 1)
    with pytest.raises(ValueError, match="not row-linear"):
        verify.output(code, ([F.random((3, 2), seed=1)] * 2,), [], seed=0)
    with pytest.raises(TypeError, match="code"):
        verify.output("code", (), None)


@pytest.mark.bounded(90)
def test_runtime_never_returns_a_spoiled_output(bounded):
    """Every worker is needed (N = R), one of them malicious: every scheme raises
    VerificationError with the report, for random garbage and for a one-element change;
    with verify=False the spoiled output would have been returned."""
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, 4)
    A, B = F.random((16, 8), seed=1), F.random((8, 12), seed=2)
    C = F.matmul(A, B)
    with ffcode.Cluster(4, lost_after=30) as cluster:
        for scheme in ("uncoded", "classic", "systematic", "cfs", "compfs"):
            for mode in ("random", "piece"):
                faults = Faults(corrupt={2: mode})
                with pytest.raises(VerificationError, match="wrong result") as e:
                    cluster.run(code, A, B, scheme=scheme, pieces=3, faults=faults,
                                verify=True)
                assert e.value.report.verified is False and e.value.report.verify > 0
                out, report = cluster.run(code, A, B, scheme=scheme, pieces=3,
                                          faults=faults, verify=False)
                assert not np.array_equal(out, C) and report.verified is None
            out, report = cluster.run(code, A, B, scheme=scheme, pieces=3, verify=True)
            assert np.array_equal(out, C) and report.verified is True


@pytest.mark.bounded(60)
def test_runtime_verify_modes(bounded):
    F = GF(65521)
    A, x = F.random((8, 4), seed=1), F.random(4, seed=2)
    with ffcode.Cluster(3, lost_after=30) as cluster:
        mds = MDS(F, 2, 3)
        assert cluster.run(mds, A, x)[1].verified is None          # a vector: not by default
        assert cluster.run(mds, A, x, verify=True)[1].verified is True
        gram_code = LCC(F, 2, 0, "ffcode.functions:square", 2, 3)
        with pytest.raises(ValueError, match="cannot be verified"):
            cluster.run(gram_code, [A, A], scheme="classic", verify=True)
        for bad in ("yes", 1, None):
            with pytest.raises(TypeError, match="'verify'"):
                cluster.run(mds, A, x, verify=bad)


def test_cheap_is_at_most_five_percent():
    """auto checks large products and tall row-linear LCC blocks at every prime."""
    F, G = GF(2**31 - 1), GF(2**61 - 1)
    big, small = (np.zeros((256, 256), np.uint32),) * 2, (np.zeros((16, 8), np.uint32),) * 2
    assert verify.cheap(PolynomialCode(F, 2, 2, 4), big)
    assert not verify.cheap(PolynomialCode(F, 2, 2, 4), small)
    assert verify.cheap(PolynomialCode(G, 2, 2, 4), big)
    assert not verify.cheap(PolynomialCode(G, 2, 2, 4), small)
    assert not verify.cheap(MDS(F, 2, 3), (big[0], np.zeros(256, np.uint32)))
    assert verify.cheap(MDS(F, 2, 3), big)
    lcc = LCC(F, 2, 1, times_W, 1, 4, row_linear=True)
    assert verify.cheap(lcc, ([np.zeros((100, 3), np.uint32)] * 2,))
    assert not verify.cheap(lcc, ([np.zeros((10, 3), np.uint32)] * 2,))
    assert not verify.cheap(LCC(F, 2, 1, gram, 2, 7), ([np.zeros((100, 3), np.uint32)] * 2,))


def test_corrupt_faults_are_checked():
    assert Faults(corrupt={1: "piece"}).for_worker(1, 2).corrupt == "piece"
    assert Faults(corrupt={1: "piece"}).for_worker(0, 2).corrupt is None
    for bad in ({1: "all"}, {-1: "random"}, ["random"]):
        with pytest.raises(ValueError, match="corrupt"):
            Faults(corrupt=bad)
    with pytest.raises(ValueError, match="'corrupt' names workers"):
        Faults(corrupt={5: "random"}).check_workers(3)


@pytest.mark.parametrize("p", [11, 65521, 2**31 - 1, 2**32 - 5, 2**61 - 1, 2**63 - 25])
def test_cheap_threshold_in_multiply_adds(p):
    """Square products are cheap exactly from n = 60 rounds(p) (3 rounds(p) n**2 against n**3
    multiply-adds), and row-linear LCC blocks from 20 rounds(p) rows, at every prime."""
    F, r = GF(p), verify.rounds(p)
    code = PolynomialCode(F, 2, 2, 4)
    assert verify.cheap(code, (shaped(60 * r, 60 * r),) * 2)
    assert not verify.cheap(code, (shaped(60 * r - 1, 60 * r - 1),) * 2)
    lcc = LCC(F, 2, 1, times_W, 1, 4, row_linear=True)
    assert verify.cheap(lcc, ([shaped(20 * r, 3)] * 2,))
    assert not verify.cheap(lcc, ([shaped(20 * r - 1, 3)] * 2,))


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1])
def test_by_default_checks_a_2048_product(p):
    """Cluster.run's "auto" checks a 2048 x 2048 product at 2**31 - 1 and at 2**61 - 1 (one
    round there) for every product code and MDS with a matrix x, with or without
    adversaries, but never MDS with a vector x (the check would be a recomputation)."""
    F = GF(p)
    A, B, x = shaped(2048, 2048), shaped(2048, 2048), shaped(2048)
    for code in (PolynomialCode(F, 2, 2, 4), MatDot(F, 2, 3), MDS(F, 2, 3)):
        for adversaries in (0, 1):
            assert verify.by_default(code, (A, B), adversaries), (code, adversaries)
    assert not verify.by_default(MDS(F, 2, 3), (A, x)) and \
        not verify.by_default(MDS(F, 2, 3), (A, x), adversaries=1)
    assert verify.rounds(p) == (1 if p > 2**60 else 2)
