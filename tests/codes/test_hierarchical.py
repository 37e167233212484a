"""HierarchicalCode: an outer code across groups, an inner code inside each; every pair of
MDS, PolynomialCode and MatDot (and a masked outer GASP) decodes exactly, all at once, at
full speed from packets, and in two layers (a group's inner code, then the outer code over
the groups), against an independent product; what it cannot do is refused clearly."""
import itertools

import numpy as np
import pytest

from ffcode import (GASP, GF, LCC, MDS, Decoder, DecodingError, HierarchicalCode, MatDot,
                    PolynomialCode, RobustDecoder)
from ffcode.codes import HierarchicalEncoding
from ffcode.decoding import robust

from helpers import assert_field_array, obj_matmul, rand

PRIMES = [65521, 2**61 - 1]
OUTER = {"MDS": lambda F: MDS(F, 2, 3), "PolynomialCode": lambda F: PolynomialCode(F, 2, 1, 3),
         "MatDot": lambda F: MatDot(F, 2, 4), "GASP": lambda F: GASP(F, 2, 1, 1, 5)}
INNER = {"MDS": lambda F: MDS(F, 2, 3), "PolynomialCode": lambda F: PolynomialCode(F, 1, 2, 3),
         "MatDot": lambda F: MatDot(F, 2, 3)}
PAIRS = [(o, i) for o, i in itertools.product(OUTER, INNER)
         if o != "MDS" or i == "MDS"]          # an outer MDS leaves x whole: MDS inside


def case(p, outer, inner, seed=0):
    """(code, data, args, expected) of a pair, A 7 x 6 (rows that pad) and B 6 x 5 or x."""
    F = GF(p)
    code = HierarchicalCode(OUTER[outer](F), INNER[inner](F))
    A = rand(p, (7, 6), seed)
    if code.encodes == 1:
        x = rand(p, (6,), seed + 1)
        return code, (A,), (x,), obj_matmul(p, A, x.reshape(-1, 1)).reshape(-1)
    B = rand(p, (6, 5), seed + 1)
    return code, (A, B), (), obj_matmul(p, A, B)


def workers_from(code, groups, rng):
    """R_i random workers from each of these groups."""
    R_i = code.inner.recovery_threshold
    return sorted(g * code.group_size + int(w) for g in groups
                  for w in rng.choice(code.group_size, R_i, replace=False))


@pytest.mark.parametrize("p", PRIMES, ids=["p16", "p61"])
@pytest.mark.parametrize("outer, inner", PAIRS, ids=[f"{o}-{i}" for o, i in PAIRS])
def test_every_pair_decodes_all_at_once_and_in_two_layers(p, outer, inner):
    code, data, args, expected = case(p, outer, inner)
    F, rng = code.F, np.random.default_rng(1)
    shares = code.encode(*data, seed=3)
    args = code.arguments(shares, *args)
    results = {w: code.compute(shares[w], *args) for w in range(code.n_workers)}
    assert code.n_workers == code.groups * code.group_size
    assert code.recovery_threshold == code.outer.recovery_threshold * \
        code.inner.recovery_threshold
    for trial in range(3):
        groups = sorted(rng.choice(code.groups, code.outer.recovery_threshold,
                                   replace=False).tolist())
        chosen = workers_from(code, groups, rng)
        assert len(chosen) == code.recovery_threshold
        assert_field_array(F, code.decode(shares, {w: results[w] for w in chosen}),
                           expected)
        decoded = {g: code.decode_group(shares, g, results) for g in groups}
        for g, y in decoded.items():           # each group's is the outer code's result
            outer_args = code.outer.arguments(shares.outer, *args)
            assert_field_array(F, y, code.outer.compute(shares.outer[g], *outer_args))
        assert_field_array(F, code.decode_groups(shares, decoded), expected)


@pytest.mark.parametrize("outer, inner", PAIRS, ids=[f"{o}-{i}" for o, i in PAIRS])
def test_every_pair_decodes_at_full_speed_from_packets(outer, inner):
    """Computation at full speed: the workers' packets, in a random order, into the
    Decoder until it is complete."""
    code, data, args, expected = case(2**31 - 1, outer, inner, seed=5)
    shares = code.encode(*data, pieces=3, seed=7)
    args = code.arguments(shares, *args)
    decoder = Decoder(shares, pieces=3)
    for w in np.random.default_rng(2).permutation(code.n_workers):
        for packet in code.compute_pieces(shares[int(w)], *args):
            decoder.add(packet)
        if decoder.complete:
            break
    assert decoder.complete
    assert_field_array(code.F, decoder.result(), expected)


def test_equations_are_the_kronecker_products_of_the_two_codes():
    F = GF(65521)
    outer, inner = PolynomialCode(F, 2, 1, 3), MatDot(F, 2, 4)
    code = HierarchicalCode(outer, inner)
    for worker in range(code.n_workers):
        g, w = code.group_of(worker)
        assert worker == g * 4 + w
        expected = np.kron(outer.evaluations[g].astype(object),
                           inner.evaluations[w].astype(object)) % F.p
        assert code.evaluations[worker].tolist() == expected.tolist()
        assert code.points[worker].tolist() == [outer.points[g], inner.points[w]]
    assert not code.dense and not code.every_r_decodes


def test_r_results_from_too_few_groups_do_not_decode():
    """R = 4 results, but only group 0 gives R_i = 2 (groups 1 and 2 one each, the same
    inner point): their equations have rank 3, and group 1 alone cannot be decoded."""
    code, data, args, _ = case(65521, "MDS", "MDS")
    shares = code.encode(*data, seed=1)
    results = {w: code.compute(shares[w], *args) for w in (0, 1, 3, 6)}
    with pytest.raises(DecodingError, match="rank 3 < R = 4"):
        code.decode(shares, results)
    with pytest.raises(ValueError, match="needs results from 2 distinct workers"):
        code.decode_group(shares, 1, results)


def test_an_outer_gasp_keeps_its_masks():
    """The outer code's masks reach every worker's share: GASP's t = 1 privacy holds for a
    group's encoded share, and the output is exact (seeded: reproducible)."""
    code, data, _, expected = case(65521, "GASP", "PolynomialCode")
    one, two = code.encode(*data, seed=1), code.encode(*data, seed=1)
    other = code.encode(*data, seed=2)
    assert all(np.array_equal(a, b) for a, b in zip(one[0], two[0]))
    assert not np.array_equal(one[0][0], other[0][0])
    assert one.masks == code.outer.masks


@pytest.mark.parametrize("inner", ["PolynomialCode", "MatDot"])
def test_an_outer_mds_needs_an_mds_inside(inner):
    F = GF(65521)
    with pytest.raises(ValueError, match="leaves x to the job"):
        HierarchicalCode(MDS(F, 2, 3), INNER[inner](F))


def test_bad_codes_are_refused():
    F, G = GF(65521), GF(2**31 - 1)
    with pytest.raises(ValueError, match="field"):
        HierarchicalCode(MDS(F, 2, 3), MDS(G, 2, 3))
    with pytest.raises(TypeError, match="matrix products"):
        HierarchicalCode(LCC(F, 2, 0, "ffcode.functions:square", 2, 4), MDS(F, 2, 3))
    with pytest.raises(TypeError, match="matrix products"):
        HierarchicalCode(MDS(F, 2, 3), "MDS")
    code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 2, 3))
    shares = code.encode(rand(65521, (4, 3), 0))
    with pytest.raises(TypeError, match="1 array of data"):
        code.encode(rand(65521, (4, 3), 0), rand(65521, (3, 2), 1))
    with pytest.raises(ValueError, match="Group 3 is out of range"):
        code.decode_group(shares, 3, {})
    with pytest.raises(ValueError, match="Worker index 9"):
        code.group_of(9)
    with pytest.raises(ValueError, match="The encoding was made by MDS"):
        code.decode_groups(code.outer.encode(rand(65521, (4, 3), 0)), {})
    with pytest.raises(AttributeError, match="immutable"):
        code.groups = 4
    assert isinstance(shares, HierarchicalEncoding) and len(shares.inner) == 3


def test_correcting_wrong_workers_is_refused():
    """Any R results do not determine the output, so R + 2A results may not tell the
    wrong ones: adversaries are refused before any work, everywhere."""
    code, data, args, _ = case(65521, "PolynomialCode", "MDS")
    shares = code.encode(*data, seed=1)
    results = {w: code.compute(shares[w], *args) for w in range(code.n_workers)}
    with pytest.raises(ValueError, match="any R results determine"):
        robust.decode(shares, results, adversaries=1)
    with pytest.raises(ValueError, match="any R results determine"):
        RobustDecoder(shares, pieces=2, adversaries=1)
