"""RankBasis: incremental reduced row echelon form of the vectors coeffs (x) powers[worker].
probe reports exactly the innovative vectors (oracle: F.rank), and the (f, s, g) multipliers
rebuild a basis that is the reduced row echelon form of the committed vectors (F.rref);
payload rows committed at once, staged, or deferred and replayed with those multipliers
are the same."""
import numpy as np
import pytest

import ffcode
from ffcode._ext.rankbasis import RankBasis

from helpers import prime_id

RB_PRIMES = [2, 3, 257, 65521, 2**31 - 1, 2**32 - 5, 2**61 - 1, 9223372036854775783]


def distinct_points(p, count, rng) -> list:
    """count distinct elements of GF(p) (count <= p), 0 included as a possibility."""
    if p <= 10**6:
        return sorted(int(v) for v in rng.choice(p, count, replace=False))
    points = set()
    while len(points) < count:
        points.add(int(rng.integers(0, p, dtype=np.uint64)))
    return sorted(points)


def powers_matrix(F, N, R, rng, kind) -> np.ndarray:
    """(N, R) uint64 C-contiguous: Vandermonde rows of N distinct points, or random rows."""
    if kind == "vandermonde":
        P = F.vandermonde(distinct_points(F.p, N, rng), R)
    else:
        P = F.random((N, R), rng)
    return np.ascontiguousarray(P.astype(np.uint64))


def vector(p, coeffs, powers_row) -> np.ndarray:
    """coeffs (x) powers_row in Python ints: entry l * R + d is coeffs[l] * powers_row[d]."""
    return np.array([int(c) * int(a) % p for c in coeffs for a in powers_row], dtype=object)


class Shadow:
    """The basis rows rebuilt in Python ints from what probe and multipliers report."""

    def __init__(self, p, n):
        self.p, self.n, self.rows, self.pivots = p, n, [], []

    def reduce(self, v, c, f, s, g) -> np.ndarray:
        """Check the (f, s, g) contract for vector v with new pivot c; the reduced row."""
        p = self.p
        assert len(f) == len(g) == len(self.rows)
        assert 0 < s < p
        for j, row in enumerate(self.rows):
            assert int(f[j]) == v[self.pivots[j]]          # reduced form: f_j = v[pivot_j]
            assert int(g[j]) == row[c]
        w = v.copy()
        for fj, row in zip(f, self.rows):
            w = (w - int(fj) * row) % p
        w = (s * w) % p
        assert w[c] == 1 and not w[:c].any(), (c, w)       # c is w's first nonzero column
        assert not w[self.pivots].any()
        return w

    def commit(self, w, c, g) -> None:
        self.rows = [(row - int(gj) * w) % self.p for gj, row in zip(g, self.rows)]
        self.rows.append(w)
        self.pivots.append(c)

    def check_rref(self, F, committed) -> None:
        """Row j is 1 at pivot j and 0 at every other pivot, and the rows sorted by pivot are
        F.rref of the committed vectors."""
        for j, row in enumerate(self.rows):
            assert row[self.pivots[j]] == 1
            assert sum(row[self.pivots] != 0) == 1
        order = np.argsort(self.pivots)
        mine = np.array([self.rows[j] for j in order], dtype=object)
        rref = F.rref(np.array(committed, dtype=object).astype(F.dtype))[:len(self.rows)]
        assert np.array_equal(mine, rref.astype(object))


CONFIGS = [(3, 2, 2), (4, 3, 1), (5, 2, 4), (6, 5, 4), (2, 1, 3)]   # (N, R, m)


@pytest.mark.parametrize("p", RB_PRIMES, ids=prime_id)
@pytest.mark.parametrize("kind", ["vandermonde", "random"])
def test_probe_matches_rank_oracle(p, kind):
    """probe is -1 exactly when coeffs (x) powers[worker] is in the span of the committed
    vectors (random, zero, scaled and same-worker combined coefficients; probes left
    uncommitted change nothing), and the (f, s, g) contract holds at every step."""
    F = ffcode.GF(p)
    rng = np.random.default_rng(p % 10**9)
    innovative_seen = dependent_seen = 0
    for N, R, m in CONFIGS:
        N = min(N, p)
        n = m * R
        for trial in range(3):
            powers = powers_matrix(F, N, R, rng, kind)
            basis = RankBasis(powers, m, p)
            assert (basis.n, basis.rank) == (n, 0)
            shadow, committed, by_worker = Shadow(p, n), [], {w: [] for w in range(N)}
            for step in range(3 * n + 3):
                w = int(rng.integers(N))
                how = rng.choice(["random", "random", "zero", "combine", "scale"])
                if how == "zero":
                    coeffs = np.zeros(m, np.uint64)
                elif how == "random" or not by_worker[w]:
                    coeffs = F.random(m, rng).astype(np.uint64)
                else:
                    # a combination of coefficients already committed for this worker
                    mix = F.random(len(by_worker[w]), rng) if how == "combine" else None
                    rows = np.array(by_worker[w], dtype=F.dtype)
                    coeffs = (F.matmul(mix[None, :], rows)[0] if mix is not None
                              else F.mul(rows[-1], F.random((), rng)))
                    coeffs = coeffs.astype(np.uint64)
                v = vector(p, coeffs, powers[w])
                stacked = np.array(committed + [v], dtype=object).astype(F.dtype)
                expected = F.rank(stacked) > len(committed)
                c = basis.probe(coeffs, w)
                assert (c >= 0) == expected, (p, kind, N, R, m, step, how)
                assert basis.rank == len(committed)
                if c < 0:
                    dependent_seen += 1
                    with pytest.raises(ValueError):
                        basis.multipliers()
                    continue
                innovative_seen += 1
                f, s, g = basis.multipliers()
                f, g = f.copy(), g.copy()
                wrow = shadow.reduce(v, c, f, s, g)
                if rng.random() < 0.25:
                    continue                                # probed, never committed
                assert basis.commit() == len(committed) + 1
                shadow.commit(wrow, c, g)
                committed.append(v)
                by_worker[w].append(coeffs)
                assert basis.rank == len(committed)
                assert basis.pivots.tolist() == shadow.pivots
                shadow.check_rref(F, committed)
            if basis.rank == n:                             # full: nothing is innovative
                assert basis.probe(F.random(m, rng).astype(np.uint64), 0) == -1
    assert innovative_seen > 50 and dependent_seen > 50


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
def test_reaches_full_rank_from_any_workers(p):
    """m packets from each of R workers, or one from each of m·R workers, fill the basis;
    all m·R pivots are then distinct and one more vector is never innovative."""
    F = ffcode.GF(p)
    m, R = 3, 4
    powers = np.ascontiguousarray(F.vandermonde(np.arange(1, 13), R).astype(np.uint64))
    for workers in ([w for w in range(R) for _ in range(m)], list(range(m * R))):
        basis = RankBasis(powers, m, p)
        for n, w in enumerate(workers, 1):
            assert basis.probe(F.random(m, n).astype(np.uint64), w) >= 0
            assert basis.commit() == n
        assert sorted(basis.pivots.tolist()) == list(range(m * R))
        assert basis.probe(F.random(m, 99).astype(np.uint64), 5) == -1


def test_pivots_is_a_copy():
    """pivots lists the pivot columns in insertion order, as a copy."""
    basis = RankBasis(np.array([[1, 0], [0, 1]], np.uint64), 1, 7)
    assert basis.pivots.tolist() == []
    for w, col in [(1, 1), (0, 0)]:
        assert basis.probe(np.array([3], np.uint64), w) == col
        basis.commit()
    pivots = basis.pivots
    pivots[:] = 5
    assert basis.pivots.tolist() == [1, 0]


def test_nothing_pending():
    """multipliers() and commit() raise ValueError when no innovative vector is pending: at
    the start, after a non-innovative probe, after a commit, and after a full basis."""
    p = 65521
    powers = np.array([[1, 1], [1, 2], [1, 3]], np.uint64)
    basis = RankBasis(powers, 1, p)

    def assert_nothing_pending():
        for call in (basis.multipliers, basis.commit):
            with pytest.raises(ValueError):
                call()

    assert_nothing_pending()
    assert basis.probe(np.array([0], np.uint64), 0) == -1
    assert_nothing_pending()
    assert basis.probe(np.array([5], np.uint64), 0) >= 0
    basis.commit()
    assert_nothing_pending()
    assert basis.probe(np.array([7], np.uint64), 0) == -1          # same worker: in the span
    assert_nothing_pending()
    assert basis.probe(np.array([1], np.uint64), 1) >= 0
    basis.probe(np.array([2], np.uint64), 2)                         # a new probe replaces it
    assert basis.commit() == 2
    assert_nothing_pending()
    assert basis.probe(np.array([1], np.uint64), 2) == -1           # full
    assert_nothing_pending()


GOOD = np.array([[1, 1], [1, 2], [1, 3]], np.uint64)


@pytest.mark.parametrize("powers, m, p", [
    pytest.param(GOOD, 0, 7, id="m=0"),
    pytest.param(GOOD, -1, 7, id="m=-1"),
    pytest.param(GOOD, 1.5, 7, id="m=1.5"),
    pytest.param(np.zeros((3, 0), np.uint64), 2, 7, id="R=0"),
    pytest.param(GOOD, 2, 1, id="p=1"),
    pytest.param(GOOD, 2, 0, id="p=0"),
    pytest.param(GOOD, 2, -7, id="p=-7"),
    pytest.param(GOOD, 2, 2**63, id="p=2**63"),
    pytest.param(GOOD, 2, 2**64, id="p=2**64"),
    pytest.param(GOOD.astype(np.int64), 2, 7, id="int64 powers"),
    pytest.param(GOOD[:, 0].copy(), 2, 7, id="1-D powers"),
    pytest.param(np.asfortranarray(np.arange(6, dtype=np.uint64).reshape(2, 3)), 2, 7,
                 id="Fortran-ordered powers"),
    pytest.param(GOOD.tolist(), 2, 7, id="list powers"),
])
def test_bad_constructor_arguments(powers, m, p):
    """RankBasis needs C-contiguous 2-D uint64 powers with R >= 1, m >= 1 and 2 <= p < 2**63."""
    with pytest.raises((ValueError, TypeError, OverflowError)):
        RankBasis(powers, m, p)


def test_bad_probe_arguments():
    """A coefficient vector of the wrong length or a worker out of range is a ValueError and
    leaves the basis as it was."""
    basis = RankBasis(GOOD, 2, 65521)                          # N = 3, R = 2, m = 2
    assert basis.probe(np.array([1, 2], np.uint64), 0) >= 0
    basis.commit()
    for coeffs, worker in [([1], 1), ([1, 2, 3], 1), ([1, 2, 3, 4], 1), ([], 1),
                           ([1, 2], -1), ([1, 2], 3), ([1, 2], 100)]:
        with pytest.raises(ValueError):
            basis.probe(np.array(coeffs, np.uint64), worker)
        assert basis.rank == 1
    assert basis.probe(np.array([3, 4], np.uint64), 1) >= 0
    assert basis.commit() == 2


@pytest.mark.parametrize("p", RB_PRIMES, ids=prime_id)
def test_staged_commit_equals_direct_commit(p):
    """Payloads staged in their rows on arrival (stage) and committed from there in place
    give exactly the payload rows of committing them directly, in a given buffer too."""
    rng = np.random.default_rng(p % 1000)
    dtype = np.uint32 if p < 2**32 else np.uint64
    powers = np.array([[pow(a, d, p) for d in range(3)] for a in (1, 2, 3, 5)], np.uint64)
    m, size = 2, 4099                           # more than one CHUNK of columns
    packets = [(rng.integers(0, p, m, dtype=np.uint64), w,
                rng.integers(0, p, size, dtype=np.uint64).astype(dtype))
               for w in (0, 3, 1, 2) * 6]
    direct, staged = RankBasis(powers, m, p), RankBasis(powers, m, p)
    direct.reserve(size)
    buffer = np.full(direct.n * size + 7, 1, dtype)
    staged.reserve(size, buffer)
    assert np.shares_memory(staged.payloads, buffer)
    queue = []
    for coeffs, w, payload in packets:
        if direct.probe(coeffs, w) >= 0:
            direct.commit(payload)
            assert staged.probe(coeffs, w) >= 0
            staged.stage(staged.rank + len(queue), payload)
            queue.append((coeffs, w))
    for coeffs, w in queue:                     # later, oldest first, as Decoder.eliminate
        assert staged.probe(coeffs, w) >= 0
        staged.commit(staged.payloads[staged.rank])
    assert staged.rank == direct.rank == len(queue) == (6 if p > 5 else direct.rank) >= 2
    assert np.array_equal(staged.payloads[:staged.rank], direct.payloads[:direct.rank])


def test_stage_checks_before_anything_counts():
    """stage refuses elements >= p, rows below the rank or beyond n, wrong sizes, and a
    basis without payload rows; reserve refuses an unusable buffer."""
    p = 65521
    basis = RankBasis(GOOD, 2, p)
    with pytest.raises(ValueError):
        basis.stage(0, np.zeros(5, np.uint32))                  # nothing reserved
    with pytest.raises(ValueError, match="buffer"):
        basis.reserve(5, np.zeros(4 * 5 - 1, np.uint32))        # too small
    with pytest.raises(ValueError, match="buffer"):
        basis.reserve(5, np.zeros(4 * 5, np.uint64))            # wrong dtype
    basis.reserve(5)
    bad = np.array([1, 2, p, 4, 5], np.uint32)
    with pytest.raises(ValueError, match="elements >= p"):
        basis.stage(0, bad)
    for row, payload in [(4, np.zeros(5, np.uint32)), (-1, np.zeros(5, np.uint32)),
                         (0, np.zeros(6, np.uint32))]:
        with pytest.raises(ValueError):
            basis.stage(row, payload)
    assert basis.probe(np.array([1, 2], np.uint64), 0) >= 0
    basis.stage(0, np.arange(5, dtype=np.uint32))
    basis.commit(basis.payloads[0])
    with pytest.raises(ValueError):
        basis.stage(0, np.zeros(5, np.uint32))                  # below the rank: committed
    assert basis.rank == 1


# -- deferred commits: the payload reduced later, with the multipliers of its probe ------------


def deferred_setup(p, size, seed):
    """Packets (coeffs, worker, payload) of m = 2 pieces for 4 workers of R = 3 (points
    1, 2, 3, 5), payloads of size elements of the payload dtype, from a fixed seed."""
    rng = np.random.default_rng(seed)
    dtype = np.uint32 if p < 2**32 else np.uint64
    powers = np.array([[pow(a, d, p) for d in range(3)] for a in (1, 2, 3, 5)], np.uint64)
    packets = [(rng.integers(0, p, 2, dtype=np.uint64), w,
                rng.integers(0, p, size, dtype=np.uint64).astype(dtype))
               for w in (0, 3, 1, 2, 2, 0) * 3]
    return rng, powers, packets


@pytest.mark.parametrize("p", RB_PRIMES, ids=prime_id)
@pytest.mark.parametrize("replays", ["at the end", "interleaved"])
def test_deferred_replay_equals_immediate_commit(p, replays):
    """commit(deferred=True) of a payload staged in row rank, then replay(row, f, s, g) with
    copies of the multipliers its probe gave, rows oldest first (all at the end, or a random
    number after each packet), gives exactly the payload rows of commit(payload) at once,
    over more than one CHUNK of columns, in a given buffer too; the basis itself (pivots,
    which packets are innovative) is the same as with immediate commits."""
    size = 4099
    rng, powers, packets = deferred_setup(p, size, p % 1000)
    dtype = packets[0][2].dtype
    direct, deferred = RankBasis(powers, 2, p), RankBasis(powers, 2, p)
    direct.reserve(size)
    buffer = np.full(deferred.n * size + 3, 1, dtype)
    deferred.reserve(size, buffer)
    recorded, replayed = [], 0
    for coeffs, w, payload in packets:
        c = direct.probe(coeffs, w)
        assert deferred.probe(coeffs, w) == c
        if c < 0:
            continue
        direct.commit(payload)
        row = deferred.rank
        deferred.stage(row, payload)
        f, s, g = deferred.multipliers()
        recorded.append((row, f.copy(), s, g.copy()))
        assert deferred.commit(deferred=True) == direct.rank == row + 1
        assert deferred.pivots.tolist() == direct.pivots.tolist()
        if replays == "interleaved":
            for _ in range(int(rng.integers(0, 3))):
                if replayed < len(recorded):
                    deferred.replay(*recorded[replayed])
                    replayed += 1
    assert deferred.rank == direct.rank == len(recorded) == (6 if p > 5 else direct.rank) >= 2
    for args in recorded[replayed:]:
        deferred.replay(*args)
    assert np.shares_memory(deferred.payloads, buffer)
    assert np.array_equal(deferred.payloads[:deferred.rank], direct.payloads[:direct.rank])
    assert int(deferred.payloads[:deferred.rank].max()) < p


@pytest.mark.parametrize("p", [65521, 4294967291, 2**61 - 1], ids=prime_id)
def test_deferred_and_immediate_commits_mix(p):
    """Rows committed with their payload and rows committed deferred (replayed in order
    before the next immediate commit) give the payload rows of committing all at once."""
    size = 37
    _, powers, packets = deferred_setup(p, size, 5)
    direct, mixed = RankBasis(powers, 2, p), RankBasis(powers, 2, p)
    direct.reserve(size)
    mixed.reserve(size)
    waiting = []
    for n, (coeffs, w, payload) in enumerate(packets):
        if direct.probe(coeffs, w) < 0:
            assert mixed.probe(coeffs, w) < 0
            continue
        direct.commit(payload)
        assert mixed.probe(coeffs, w) >= 0
        if n % 3:
            mixed.stage(mixed.rank, payload)
            f, s, g = mixed.multipliers()
            waiting.append((mixed.rank, f.copy(), s, g.copy()))
            mixed.commit(deferred=True)
        else:
            # an immediate commit needs every earlier row reduced: replay them first
            while waiting:
                mixed.replay(*waiting.pop(0))
            mixed.commit(payload)
    while waiting:
        mixed.replay(*waiting.pop(0))
    assert mixed.rank == direct.rank == 6
    assert np.array_equal(mixed.payloads, direct.payloads)


DEFERRED = [([1, 2], 0), ([3, 1], 2), ([2, 5], 1)]         # three innovative packets


def deferred_basis(p, size=5):
    """A basis of N = 3, R = 2, m = 2 with payload rows reserved and the DEFERRED packets
    committed deferred: the basis and the recorded (row, f, s, g) of each, none replayed."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    basis = RankBasis(GOOD, 2, p)
    basis.reserve(size)
    recorded = []
    for coeffs, w in DEFERRED:
        assert basis.probe(np.array(coeffs, np.uint64), w) >= 0
        basis.stage(basis.rank, np.arange(1, size + 1, dtype=dtype) * (w + 1))
        f, s, g = basis.multipliers()
        recorded.append((basis.rank, f.copy(), s, g.copy()))
        basis.commit(deferred=True)
    return basis, recorded


@pytest.mark.parametrize("p", [65521, 4294967291, 2**61 - 1], ids=prime_id)
def test_bad_deferred_commit_changes_nothing(p):
    """commit(deferred=True) with a payload, or without reserved payload rows, or with
    nothing pending is a ValueError; a refused commit leaves the vector pending and the
    basis as it was."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    bare = RankBasis(GOOD, 2, p)
    assert bare.probe(np.array([1, 2], np.uint64), 0) >= 0
    with pytest.raises(ValueError, match="reserved rows"):
        bare.commit(deferred=True)
    assert bare.rank == 0 and bare.commit() == 1           # still pending: commits plainly
    basis = RankBasis(GOOD, 2, p)
    basis.reserve(5)
    with pytest.raises(ValueError, match="no innovative vector"):
        basis.commit(deferred=True)
    assert basis.probe(np.array([1, 2], np.uint64), 0) >= 0
    payload = np.arange(5, dtype=dtype)
    with pytest.raises(ValueError, match="takes no payload"):
        basis.commit(payload, deferred=True)
    assert basis.rank == 0
    basis.stage(0, payload)
    assert basis.commit(deferred=True) == 1
    with pytest.raises(ValueError, match="no innovative vector"):
        basis.commit(deferred=True)                         # committed: nothing pending
    assert basis.rank == 1


@pytest.mark.parametrize("p", [65521, 4294967291, 2**61 - 1], ids=prime_id)
def test_bad_replay_arguments(p):
    """replay refuses a basis without payload rows, a row that is not committed (negative,
    at or beyond the rank), multipliers of the wrong length, dtype or layout (ValueError),
    and multipliers that are no array (a list, None) or a negative scale; a refused replay
    changes no payload row, and the right replays then give the immediate commits' rows."""
    basis, recorded = deferred_basis(p)
    before = basis.payloads.copy()
    (_, f0, s0, g0), (_, f1, s1, g1), (_, f2, s2, g2) = recorded
    three = np.zeros(3, np.uint64)
    bad_values = [
        (-1, f0, s0, g0), (3, f2, s2, three), (4, three, s2, three),       # not committed
        (1, f0, s1, g1), (1, f1, s1, g0), (0, f1, s0, g0), (2, f1, s2, g1),  # wrong lengths
        (2, f2, s2, g1), (2, three, s2, three),
        (2, f2.astype(np.int64), s2, g2), (2, f2, s2, g2.astype(np.uint32)),  # dtype
        (2, np.repeat(f2, 2)[::2], s2, g2), (2, f2, s2, g2[::-1]),          # not contiguous
    ]
    for row, f, s, g in bad_values:
        with pytest.raises(ValueError):
            basis.replay(row, f, s, g)
        assert np.array_equal(basis.payloads, before)
    for args in [(1, f1.tolist(), s1, g1), (1, f1, -1, g1), (1, f1, s1, None)]:
        with pytest.raises((TypeError, OverflowError, ValueError)):
            basis.replay(*args)
        assert np.array_equal(basis.payloads, before)
    bare = RankBasis(GOOD, 2, p)
    assert bare.probe(np.array([1, 2], np.uint64), 0) >= 0
    bare.commit()
    with pytest.raises(ValueError, match="reserved payload rows"):
        bare.replay(0, np.zeros(0, np.uint64), 1, np.zeros(0, np.uint64))
    for args in recorded:
        basis.replay(*args)
    direct = RankBasis(GOOD, 2, p)
    direct.reserve(5)
    for row, (coeffs, w) in enumerate(DEFERRED):
        assert direct.probe(np.array(coeffs, np.uint64), w) >= 0
        direct.commit(before[row].copy())
    assert np.array_equal(basis.payloads[:3], direct.payloads[:3])


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 4294967291, 2**61 - 1], ids=prime_id)
def test_replay_refuses_multipliers_outside_the_field(p):
    """A scale s outside 1..p-1 (multipliers() never gives 0: it is an inverse) or an
    element of f or g not below p is a ValueError, and changes no payload row: replayed,
    they would leave elements >= p in the payload rows."""
    basis, recorded = deferred_basis(p)
    basis.replay(*recorded[0])
    before = basis.payloads.copy()
    row, f, s, g = recorded[1]
    top = np.full(1, 2**64 - 1, np.uint64)
    for bad in [(row, f, 0, g), (row, f, p, g), (row, f, p + 5, g), (row, f, 2**64 - 1, g),
                (row, f + np.uint64(p), s, g), (row, f, s, g + np.uint64(p)),
                (row, top, s, g), (row, f, s, top)]:
        with pytest.raises(ValueError):
            basis.replay(*bad)
        assert np.array_equal(basis.payloads, before), bad[1:]


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 4294967291, 2**61 - 1], ids=prime_id)
def test_replay_checks_a_row_that_was_not_staged_whole(p):
    """A staged row was checked as it was copied in, and replay does not read it twice; a
    row committed deferred without a good staging (never staged, or its staging refused)
    is checked at replay: elements >= p there are a ValueError that changes no payload row,
    where they once went on into the output unnoticed."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    size = 5
    for stage_first in (False, True):
        buffer = np.full(3 * 2 * size, p, dtype)         # every element out of the field
        basis = RankBasis(GOOD, 2, p)
        basis.reserve(size, buffer)
        coeffs, w = DEFERRED[0]
        assert basis.probe(np.array(coeffs, np.uint64), w) >= 0
        if stage_first:
            with pytest.raises(ValueError, match="elements >= p"):
                basis.stage(0, np.full(size, p, dtype))
        f, s, g = basis.multipliers()
        basis.commit(deferred=True)
        before = basis.payloads.copy()
        with pytest.raises(ValueError, match="not staged"):
            basis.replay(0, f.copy(), s, g.copy())
        assert np.array_equal(basis.payloads, before)
    basis, recorded = deferred_basis(p)             # staged whole: replayed as before
    for args in recorded:
        basis.replay(*args)
    assert (basis.payloads[:3] < p).all()
