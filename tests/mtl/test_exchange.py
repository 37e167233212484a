"""The coded and uncoded exchanges of ffcode.mtl, run message by message: every relay
decodes every user's update exactly, on a shared medium and on separate links, for every
topology of the small family and for larger random ones; the messages' sizes are the
loads; reals in signed fixed point come back bit for bit; bad input is refused."""
import numpy as np
import pytest

from topologies import FAMILY

from ffcode.field import GF
from ffcode.mtl import (Coded, Topology, Uncoded, coded_loads, exchange, parse,
                        uncoded_loads)
from ffcode.mtl import scheme as scheme_module

F = GF(65521)


def run(scheme, updates, links=False):
    """One exchange (ffcode.mtl.exchange): (decoded per relay, rows up, rows down), a row
    one part of an update (the last part padded)."""
    done = exchange(scheme, updates, links)
    row = -(-updates.shape[1] // scheme.split) * updates.dtype.itemsize
    assert done.uplink % row == 0 and done.downlink % row == 0
    return done.decoded, done.uplink // row, done.downlink // row


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_every_relay_decodes_everything_on_every_topology(K):
    rng = np.random.default_rng(K)
    for i, t in enumerate(t for t in FAMILY if t.relays == K):
        if K == 4 and i % 3:
            continue                     # a third of the 4-relay topologies: CI's minutes
        updates = F.asarray(rng.integers(0, F.p, (t.users, 5)))
        for scheme in (Coded(t, F, seed=i), Uncoded(t, F)):
            loads = scheme.loads
            for links in (False, True):
                decoded, up, down = run(scheme, updates, links)
                assert all((d == updates).all() for d in decoded), (t, scheme, links)
                assert up == loads.uplink * scheme.split
                assert down == (loads.downlink_links if links else loads.downlink) * scheme.split


@pytest.mark.parametrize("seed", range(6))
def test_larger_random_topologies(seed):
    rng = np.random.default_rng(100 + seed)
    K = int(rng.integers(5, 9))
    N = int(rng.integers(K, 3 * K))
    relays = [rng.choice(K, size=int(rng.integers(1, 4)), replace=False) for _ in range(N)]
    groups = [[u for u in range(N) if k in relays[u]] for k in range(K)]
    t = Topology([g or [int(rng.integers(N))] for g in groups])
    updates = F.asarray(rng.integers(0, F.p, (t.users, 7)))
    scheme = Coded(t, F, seed=seed)
    decoded, up, down = run(scheme, updates)
    assert all((d == updates).all() for d in decoded)
    assert scheme.loads == coded_loads(t)
    assert up <= uncoded_loads(t).uplink * scheme.split


@pytest.mark.parametrize("p", [2, 3, 2**31 - 1, 2**61 - 1])
def test_fields_small_and_huge(p):
    field = GF(p)
    t = Topology([[0, 1], [1, 2], [0, 2]])
    updates = field.random((3, 4), seed=p % 1000)
    for scheme in (Coded(t, field, seed=1), Uncoded(t, field)):
        decoded, _, _ = run(scheme, updates)
        assert all((d == updates).all() for d in decoded)


def test_a_small_field_serves_every_topology():
    # as the guide says: GF(5) serves the whole family, GF(3) all but one topology
    field, refused = GF(5), []
    for i, t in enumerate(FAMILY):
        scheme = Coded(t, field, seed=0)
        if i % 10 == 0:
            updates = field.random((t.users, 3), seed=i)
            assert all((d == updates).all() for d in run(scheme, updates)[0])
        try:
            Coded(t, GF(3), seed=0)
        except ValueError as error:
            refused.append((t, str(error)))
    assert len(refused) == 1 and "GF(3) is too small" in refused[0][1]


def test_a_field_too_small_is_refused(monkeypatch):
    monkeypatch.setattr(scheme_module, "TRIES", 0)
    with pytest.raises(ValueError, match=r"GF\(65521\) is too small for this topology"):
        Coded(Topology.combination(4, 2), F)


def test_reals_in_fixed_point_come_back_bit_for_bit():
    rng = np.random.default_rng(7)
    t = Topology.combination(4, 2)
    params = rng.normal(size=(t.users, 9))              # each user's new parameters
    scale = 2.0**20
    field = GF(2**61 - 1)
    updates = field.from_real(params, scale)
    for scheme in (Coded(t, field), Uncoded(t, field)):
        for links in (False, True):
            decoded, _, _ = run(scheme, updates, links)
            for d in decoded:
                assert np.array_equal(field.to_real(d, scale), field.to_real(updates, scale))


def test_non_contiguous_updates_and_the_same_scheme_from_a_seed():
    t = Topology.cyclic(4, 2)
    updates = F.random((t.users, 12), seed=3)[:, ::2]
    a, b = Coded(t, F, seed=5), Coded(t, F, seed=5)
    assert all((x == y).all() for x, y in zip(a.encoders, b.encoders))
    decoded, _, _ = run(a, updates)
    assert all((d == updates).all() for d in decoded)


def test_bad_arguments_are_refused():
    t = Topology([[0, 1], [1, 2], [0, 2]])
    scheme = Coded(t, F)
    updates = F.random((3, 4), seed=0)
    with pytest.raises(ValueError, match="relay 0's 2 users' updates as rows"):
        scheme.uplink(0, updates)
    with pytest.raises(ValueError, match="'relay' must be from 0 to 2, not 3"):
        scheme.uplink(3, updates[:2])
    with pytest.raises(ValueError, match="'updates' has negative elements"):
        scheme.uplink(0, np.full((2, 4), -1))
    messages = [scheme.uplink(k, updates[list(g)]) for k, g in enumerate(t.groups)]
    with pytest.raises(ValueError, match="one message per relay"):
        scheme.downlink(messages[:2])
    with pytest.raises(ValueError, match="Message 1 must be 1 rows"):
        scheme.downlink([messages[0], np.vstack([messages[1]] * 2), messages[2]])
    Y = scheme.downlink(messages)
    with pytest.raises(ValueError, match="Argument 'Y' must be"):
        scheme.decode(0, updates[:2], Y[:, :1])
    with pytest.raises(ValueError, match="'width' must be from 0 to 4, not 5"):
        scheme.decode(0, updates[:2], Y, width=5)
    with pytest.raises(ValueError, match="must be 3 users' updates as rows"):
        exchange(scheme, updates[:2])
    with pytest.raises(TypeError, match="'scheme' must be an ffcode.mtl Coded or Uncoded"):
        exchange(t, updates)
    with pytest.raises(TypeError, match="'topology' must be"):
        Coded([[0, 1]], F)
    with pytest.raises(TypeError, match="'field' must be"):
        Uncoded(t, 7)
    with pytest.raises(ValueError, match="'seed' must be non-negative"):
        Coded(t, F, seed=-1)


@pytest.mark.parametrize("groups, message", [
    ([], "at least one relay"),
    ([[0, 1], []], "Group 1 is empty"),
    ([[0, 2]], "User 1 is in no group"),
    ([[0, 0, 1]], "Group 0 lists user 0 more than once"),
    ([[0, -1]], r"'groups\[0\]' must be non-negative"),
    ([[0, 1.5]], r"'groups\[0\]' must be"),
    ("0,1", "sequence of groups"),
    ([3], "Group 0 must be a sequence"),
    ([[0]] * 17, "at most 16 relays"),
])
def test_bad_topologies_are_refused(groups, message):
    with pytest.raises(ValueError, match=message):
        Topology(groups)


@pytest.mark.parametrize("text, message", [
    ("combination:4", "combination takes 2 to 2 whole numbers"),
    ("combination:4:5", "'r' must be from 1 to 4, not 5"),
    ("cyclic:a:2", "cyclic takes 2 to 3"),
    ("0,1;x", "group 1 must list users as whole numbers"),
    ("0,1;", "Group 1 is empty"),
])
def test_bad_spellings_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_constructors_and_spellings():
    assert parse("combination:4:2") == Topology.combination(4, 2)
    assert parse("cyclic:4:2:2") == Topology.cyclic(4, 2, 2)
    assert parse("disjoint:3:2").groups == ((0, 1), (2, 3), (4, 5))
    assert Topology.cyclic(3, 2).groups == ((0, 2), (0, 1), (1, 2))
    t = Topology.combination(5, 3)
    assert t.users == 10 and {len(g) for g in t.groups} == {6} and t.load == 3
    assert t.everywhere == () and Topology.combination(3, 3).everywhere == (0,)
    import pickle
    assert pickle.loads(pickle.dumps(t)) == t and hash(t) == hash(Topology(t.groups))


def test_losses_leave_a_smaller_topology_that_still_exchanges():
    t = Topology.combination(4, 2)
    left = t.without(relays=[0], users=[5])
    # relays 1..3 are left; user 5 (on relays 2 and 3) is gone, the others renumbered
    assert left.relays == (1, 2, 3) and left.users == (0, 1, 2, 3, 4)
    for k, old in enumerate(left.relays):
        assert [left.users[u] for u in left.topology.groups[k]] == \
            [u for u in t.groups[old] if u != 5]
    updates = F.random((left.topology.users, 6), seed=2)
    decoded, _, _ = run(Coded(left.topology, F), updates)
    assert all((d == updates).all() for d in decoded)
    # a relay left serving no one is dropped
    assert Topology([[0, 1], [1], [0]]).without(users=[1]).relays == (0, 2)


@pytest.mark.parametrize("relays, users, message", [
    ([0, 1], (), r"User 0 is served only by lost relays 0, 1: its update cannot reach"),
    ((), [0, 1, 2, 3, 4, 5], "Every user is lost"),
    ([4], (), "'relays' must be from 0 to 3, not 4"),
    ((), [-1], "'users' must be from 0 to 5, not -1"),
    ("0", (), "'relays' must be a sequence of indices"),
])
def test_losses_that_leave_nothing_are_refused(relays, users, message):
    with pytest.raises(ValueError, match=message):
        Topology.combination(4, 2).without(relays=relays, users=users)
