"""The loads and bounds of ffcode.mtl on every topology of a small family (all bipartite
graphs of 1 to 4 relays and 1 to 6 users, every user on at least one relay and every relay
serving at least one user, up to relabelling the relays and the users): the lower bounds
against an independent brute force of their linear program; the coded loads meet them,
never exceed the uncoded ones, and keep within the least group size when every update goes
whole (split 1); closed forms of the structured topologies, worked out by hand here."""
import itertools
from fractions import Fraction

import pytest

from topologies import FAMILY

from ffcode.mtl import (Topology, allocation, coded_loads, cuts, downlink_bound,
                        uncoded_loads, uplink_bound, uplink_solution)


def brute_uplink_bound(topology):
    """The uplink program's optimum by its vertices: every choice of K tight constraints
    among all 2^K - 2 cuts (any nonempty S: the relays outside S send >= N - |A_S|) and
    x >= 0, solved in fractions, the least feasible sum."""
    K, N = topology.relays, topology.users
    rows = []
    for size in range(1, K):
        for S in itertools.combinations(range(K), size):
            reached = set().union(*(topology.groups[k] for k in S))
            rows.append(([0 if j in S else 1 for j in range(K)], N - len(reached)))
    rows += [([int(i == j) for j in range(K)], 0) for i in range(K)]
    best = None
    for tight in itertools.combinations(rows, K):
        x = _solve([list(map(Fraction, a)) for a, _ in tight], [Fraction(b) for _, b in tight])
        if x is not None and all(sum(a * v for a, v in zip(row, x)) >= b for row, b in rows):
            best = sum(x) if best is None else min(best, sum(x))
    return best if best is not None else Fraction(0)


def _solve(M, v):
    n = len(v)
    rows = [M[i] + [v[i]] for i in range(n)]
    for c in range(n):
        p = next((r for r in range(c, n) if rows[r][c] != 0), None)
        if p is None:
            return None
        rows[c], rows[p] = rows[p], rows[c]
        rows[c] = [e / rows[c][c] for e in rows[c]]
        for r in range(n):
            if r != c and rows[r][c]:
                rows[r] = [e - rows[r][c] * g for e, g in zip(rows[r], rows[c])]
    return [rows[i][-1] for i in range(n)]


def test_the_family_is_whole():
    # 1 relay: one topology per N; 2 relays: users on {0}, {1} or both, each relay used
    assert sum(t.relays == 1 for t in FAMILY) == 6
    assert sum(t.relays == 2 and t.users == 2 for t in FAMILY) == 3    # {0}{1}, {0}{01}, {01}{01}
    assert len(FAMILY) == len(set(FAMILY)) > 3000


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_the_loads_against_the_bounds_on_every_topology(K):
    for t in (t for t in FAMILY if t.relays == K):
        coded, plain = coded_loads(t), uncoded_loads(t)
        bound = uplink_bound(t)
        assert coded.uplink == bound and coded.downlink == downlink_bound(t), t
        assert coded.uplink <= plain.uplink and coded.downlink <= plain.downlink, t
        assert coded.downlink_links == plain.downlink_links == sum(t.users - len(g)
                                                                   for g in t.groups)
        assert sum(coded.per_relay) == coded.uplink and all(
            x <= len(g) for x, g in zip(coded.per_relay, t.groups))
        whole = coded_loads(t, split=1)                 # every update goes whole
        assert whole.uplink.denominator == 1 and bound <= whole.uplink <= plain.uplink
        assert whole.uplink <= bound * t.least, t


def test_the_bound_is_the_brute_force_optimum():
    # every topology of up to 3 relays (the brute force of 4 solves C(18, 4) systems each)
    for t in (t for t in FAMILY if t.relays < 4):
        assert uplink_bound(t) == brute_uplink_bound(t), t


def test_the_bound_is_scipys_optimum():
    # every topology, against HiGHS on all 2^K - 2 cuts in floating point
    linprog = pytest.importorskip("scipy.optimize").linprog
    for t in FAMILY:
        K, N = t.relays, t.users
        A, b = [], []
        for size in range(1, K):
            for S in itertools.combinations(range(K), size):
                A.append([0 if j in S else -1 for j in range(K)])
                b.append(-(N - len(set().union(*(t.groups[k] for k in S)))))
        best = linprog([1] * K, A_ub=A or None, b_ub=b or None, bounds=(0, None)).fun
        assert abs(float(uplink_bound(t)) - best) < 1e-9, t


def test_every_cut_holds_and_only_binding_cuts_are_kept():
    for t in FAMILY[::7]:
        L = uplink_solution(t)
        K, N = t.relays, t.users
        for size in range(1, K):
            for S in itertools.combinations(range(K), size):
                reached = set().union(*(t.groups[k] for k in S))
                assert sum(L[j] for j in range(K) if j not in S) >= N - len(reached)
        for J, b in cuts(t):
            relays = {j for j in range(K) if J >> j & 1}
            inside = [u for u in range(N) if set(t.relays_of(u)) <= relays]
            assert b == len(inside) and set().union(*(t.relays_of(u) for u in inside)) == relays


@pytest.mark.parametrize("K, r", [(K, r) for K in range(2, 8) for r in range(1, K + 1)])
def test_a_user_on_every_r_subset(K, r):
    # worked out here: C(K, r) users, groups of C(K-1, r-1); the cut of one relay is
    # binding by symmetry, C(K-1, r) updates that the other K - 1 relays share equally
    t = Topology.combination(K, r)
    N = len(list(itertools.combinations(range(K), r)))
    coded, plain = coded_loads(t), uncoded_loads(t)
    assert coded.downlink == Fraction(N * (K - r), K)
    assert coded.uplink == (Fraction(N * (K - r), K - 1) if K > 1 else 0)
    assert plain.uplink == plain.downlink == (N if r < K else 0)


def test_worked_examples():
    # three relays, each user on two (a triangle): a broadcast of u0 + u1 + u2 serves
    # every relay; the uplink's cuts ask 1 of every two relays, 3/2 in all, met by halves
    t = Topology([[0, 1], [1, 2], [0, 2]])
    assert (downlink_bound(t), uplink_bound(t)) == (1, Fraction(3, 2))
    assert allocation(t) == (2, (1, 1, 1)) and allocation(t, 1) == (1, (0, 1, 1))
    # a tree: no side information to use, coded and uncoded alike
    tree = Topology.disjoint(3, 2)
    assert (coded_loads(tree).uplink, coded_loads(tree).downlink) == (6, 4)
    assert (uncoded_loads(tree).uplink, uncoded_loads(tree).downlink) == (6, 6)
    # one relay serving everyone: nothing moves
    one = Topology([[0, 1, 2]])
    assert coded_loads(one).uplink == coded_loads(one).downlink == uncoded_loads(one).uplink == 0
    # a ring of 5 relays, 2 users each, each user on 2 neighbours: 15/2 up, 6 down
    ring = Topology.cyclic(5, 2, 2)
    assert (coded_loads(ring).uplink, coded_loads(ring).downlink) == (Fraction(15, 2), 6)
    # uneven groups: relay 1 serves only user 0, so relays 0, 2, 3 must carry the rest
    uneven = Topology([[0, 1, 2, 3], [0], [1, 4], [4, 5]])
    assert uplink_solution(uneven) == (3, 0, 1, 1) and downlink_bound(uneven) == 5


def test_split_rounds_and_refuses():
    t = Topology.combination(5, 2)
    assert allocation(t) == (2, (3, 3, 3, 3, 3))
    s, a = allocation(t, 3)
    assert s == 3 and sum(a) >= 3 * uplink_bound(t)
    with pytest.raises(ValueError, match="'split' must be at least 1"):
        allocation(t, 0)


def test_the_exact_simplex_alone_finds_the_same_bound(monkeypatch):
    # the float basis skipped: the exact steps start from the origin (every slack basic)
    from ffcode.mtl import bounds
    expected = {t: uplink_bound(t) for t in FAMILY[::25]}
    monkeypatch.setattr(bounds, "_float_basis", lambda A, b: list(range(A.shape[1],
                                                                         sum(A.shape))))
    assert all(uplink_bound(t) == bound for t, bound in expected.items())
