"""Gradient codes (ffcode.gradcoding): the exact sum from every set of n - s workers, for
both codes and for a code defined here, against the sum computed directly; the decoding
vectors against the all-ones vector; and bad input refused with errors that say why."""
import itertools

import numpy as np
import pytest

import ffcode
from ffcode import CyclicRepetition, FractionalRepetition, GradientCode
from ffcode.errors import DecodingError, InvalidParameterError

from helpers import prime_id

PRIMES = [65521, 2**31 - 1, 4294967291, 2**61 - 1, 9223372036854775783]


def gradients(F, k, shape, seed):
    rng = np.random.default_rng(seed)
    return [F.random(shape, rng) for _ in range(k)]


def direct_sum(F, parts):
    """The sum mod p in Python integers (no field code involved)."""
    total = np.zeros(parts[0].shape, dtype=object)
    for g in parts:
        total = total + g.astype(object)
    return np.asarray(total % F.p).astype(F.dtype)


def messages(code, parts):
    return {i: code.combine(i, [parts[j] for j in code.assignment[i]])
            for i in range(code.n_workers)}


def codes_for(F):
    for n in range(1, 8):
        for s in range(n):
            if n % (s + 1) == 0:
                yield FractionalRepetition(F, n, s)
            yield CyclicRepetition(F, n, s)


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
def test_every_survivor_set_gives_the_exact_sum(p):
    """For n up to 7 and every s < n: every set of n - s workers (and every larger one)
    decodes to the sum computed directly, and its decoding vector a has a B_F = 1."""
    F = ffcode.GF(p)
    for code in codes_for(F):
        n, s = code.n_workers, code.stragglers
        code.check()
        parts = gradients(F, code.partitions, (3,), seed=(n, s))
        want = direct_sum(F, parts)
        sent = messages(code, parts)
        for size in (n - s, n):
            for survivors in itertools.combinations(range(n), size):
                got = code.decode({i: sent[i] for i in survivors})
                assert got.dtype == F.dtype and np.array_equal(got, want), (code, survivors)
                a = code.decoding_vector(survivors)
                ones = F.matmul(a[None, :], code.coefficients[list(survivors)])
                assert np.array_equal(ones, np.ones((1, code.partitions), F.dtype))


@pytest.mark.parametrize("shape", [(), (0,), (1, 1), (2, 3)])
def test_shapes_of_gradients(shape):
    """Scalars, empty, 1x1 and matrix gradients decode alike; non-contiguous ones too."""
    F = ffcode.GF(2**61 - 1)
    code = CyclicRepetition(F, 5, 2)
    parts = gradients(F, 5, shape, seed=len(shape))
    if len(shape) == 2:
        parts = [np.asfortranarray(g) for g in parts]
    got = code.decode({i: m for i, m in messages(code, parts).items() if i in (0, 3, 4)})
    assert got.shape == shape and np.array_equal(got, direct_sum(F, parts))


@pytest.mark.parametrize("p", [2, 3])
def test_tiny_fields(p):
    """Fractional repetition needs only 0 and 1; cyclic repetition needs p > n."""
    F = ffcode.GF(p)
    code = FractionalRepetition(F, 4, 1)
    parts = gradients(F, 4, (5,), seed=p)
    sent = messages(code, parts)
    for survivors in itertools.combinations(range(4), 3):
        assert np.array_equal(code.decode({i: sent[i] for i in survivors}),
                              direct_sum(F, parts))
    CyclicRepetition(F, p - 1, 0).check()
    with pytest.raises(InvalidParameterError, match="p > n_workers"):
        CyclicRepetition(F, p, 1)


def test_fractional_repetition_groups_and_orders():
    """Groups of s + 1 workers share s + 1 partitions, each at each place of the order
    once; every message is the plain sum of its group's gradients."""
    F = ffcode.GF(65521)
    code = FractionalRepetition(F, 6, 2)
    assert code.assignment == ((0, 1, 2), (1, 2, 0), (2, 0, 1), (3, 4, 5), (4, 5, 3),
                               (5, 3, 4))
    assert code.coefficients.tolist() == [[1] * 3 + [0] * 3] * 3 + [[0] * 3 + [1] * 3] * 3


def test_cyclic_repetition_is_a_polynomial_code():
    """Worker i's message is Q(i + 1) for Q(x) = sum_j m_j(x) g_j, m_j of degree n - s - 1
    vanishing at the points of the workers without partition j, with m_j(0) = 1: checked
    by interpolating each m_j from the coefficients."""
    F = ffcode.GF(2**31 - 1)
    n, s = 7, 3
    code = CyclicRepetition(F, n, s)
    assert code.assignment[5] == (5, 6, 0, 1)
    for j in range(n):
        holders = [i for i in range(n) if j in code.assignment[i]]
        nodes = F.asarray([i + 1 for i in holders])
        values = code.coefficients[holders, j]
        at_zero = F.matmul(F.lagrange(nodes, [0]), values[:, None])
        assert int(at_zero[0, 0]) == 1                # degree n - s - 1 = s: s + 1 nodes
        for i in range(n):
            if i not in holders:
                assert code.coefficients[i, j] == 0


class Uncoded(GradientCode):
    """A code defined outside the package: partition j on worker j only (s = 0)."""

    def __init__(self, F, n):
        super().__init__(F, n, n, 0)

    @property
    def assignment(self):
        return tuple((i,) for i in range(self.n_workers))

    @property
    def coefficients(self):
        return np.eye(self.n_workers, dtype=self.F.dtype)


class Broken(CyclicRepetition):
    """Cyclic supports with coefficients that lose the all-ones vector for some sets."""

    @property
    def coefficients(self):
        B = np.array(super().coefficients)
        B[B != 0] = 1                                   # plain sums on cyclic supports
        return B

    def decoding_vector(self, workers):
        return GradientCode.decoding_vector(self, workers)

    def check(self, limit=1000):
        return GradientCode.check(self, limit)


def test_a_code_defined_outside_the_package():
    """The contract holds for a user's code: check() passes, decode is exact, and one that
    does not keep the contract is named with the workers that fail."""
    F = ffcode.GF(2**61 - 1)
    code = Uncoded(F, 4)
    code.check()
    parts = gradients(F, 4, (2,), seed=4)
    assert np.array_equal(code.decode(messages(code, parts)), direct_sum(F, parts))
    with pytest.raises(DecodingError, match=r"Workers \[0, 1, 3\] .* partitions \[2\]"):
        code.decode({i: m for i, m in messages(code, parts).items() if i != 2})
    broken = Broken(F, 5, 1)        # plain sums around an odd cycle: no 4 workers suffice
    with pytest.raises(DecodingError, match="do not span the all-ones vector"):
        broken.check()
    assert not any(broken.tolerates(w) for w in itertools.combinations(range(5), 4))
    assert broken.tolerates(range(5)) and Broken(F, 4, 1).tolerates([0, 2, 3])


def test_a_layout_that_disagrees_is_refused():
    class Shifted(Uncoded):
        @property
        def coefficients(self):
            return np.roll(np.eye(self.n_workers, dtype=self.F.dtype), 1, axis=1)

    with pytest.raises(InvalidParameterError, match=r"Worker 0 holds partitions \[0\] but its "
                                                    r"coefficients are nonzero on \[1\]"):
        Shifted(ffcode.GF(7), 3).check()


def test_bad_input_is_refused():
    F = ffcode.GF(65521)
    with pytest.raises(InvalidParameterError, match="stragglers"):
        CyclicRepetition(F, 4, 4)                       # s >= n
    with pytest.raises(InvalidParameterError, match="stragglers"):
        FractionalRepetition(F, 4, -1)
    with pytest.raises(InvalidParameterError, match="to divide n_workers = 5"):
        FractionalRepetition(F, 5, 1)                   # partitions in groups that do not fit
    with pytest.raises(InvalidParameterError, match="a field from ffcode.GF"):
        CyclicRepetition(65521, 4, 1)
    code = CyclicRepetition(F, 4, 1)
    g = F.asarray([1, 2])
    with pytest.raises(InvalidParameterError, match="needs their 2 gradients, not 1"):
        code.combine(0, [g])
    with pytest.raises(InvalidParameterError, match="one shape"):
        code.combine(0, [g, F.asarray([1, 2, 3])])
    with pytest.raises(InvalidParameterError):
        code.combine(0, [g, np.array([1, 65521], np.int64)])     # not below p
    with pytest.raises(InvalidParameterError):
        code.combine(0, [g, np.array([1.5, 2.0])])               # not integers
    with pytest.raises(InvalidParameterError, match="worker"):
        code.combine(4, [g, g])
    with pytest.raises(InvalidParameterError, match="done"):
        code.partial(0, 3, [g, g])
    sent = {i: code.combine(i, [g, g]) for i in range(4)}
    with pytest.raises(InvalidParameterError, match="mapping"):
        code.decode(list(sent.values()))
    with pytest.raises(InvalidParameterError, match="one shape"):
        code.decode({0: sent[0], 1: F.asarray([1]), 2: sent[2]})
    with pytest.raises(InvalidParameterError, match="distinct workers"):
        code.decoding_vector([0, 0, 1])
    with pytest.raises(DecodingError, match=r"Workers \[0, 1\]"):
        code.decode({0: sent[0], 1: sent[1]})


def test_the_sum_in_fixed_point_and_its_bound():
    """Real gradients as signed fixed point: the decoded sum equals the sum of the rounded
    values, and a bound that could wrap around is refused."""
    F = ffcode.GF(2**31 - 1)
    code = CyclicRepetition(F, 6, 2)
    rng = np.random.default_rng(6)
    real = [rng.normal(size=4) for _ in range(6)]
    scale = 2.0**16
    parts = [F.from_real(g, scale) for g in real]
    code.check_magnitude(int(max(np.abs(np.rint(g * scale)).max() for g in real)))
    got = code.decode({i: m for i, m in messages(code, parts).items() if i > 1})
    want = sum(np.rint(g * scale) for g in real) / scale
    assert np.array_equal(F.to_real(got, scale), want)
    with pytest.raises(InvalidParameterError, match="wrap around"):
        code.check_magnitude(F.max_signed // 6 + 1)
    code.check_magnitude(F.max_signed // 6)


def test_a_code_given_its_layout_with_more_partitions_than_workers():
    """GradientCode(F, n, k, s, assignment, coefficients) defines a code directly: here 3
    workers, 6 partitions each on 2 of them, coefficients from polynomials of degree 1
    with m_j(0) = 1 vanishing at the worker without partition j (built here, in Python
    integers): any 2 workers give the sum. Half a layout is refused."""
    p = 2**61 - 1
    F = ffcode.GF(p)
    assignment = [(0, 1, 2, 3), (2, 3, 4, 5), (4, 5, 0, 1)]
    B = np.zeros((3, 6), np.uint64)
    for j in range(6):
        (absent,) = [i for i in range(3) if j not in assignment[i]]
        for i in range(3):
            if j in assignment[i]:      # m_j(x) = 1 - x / a_absent, points a_i = i + 1
                B[i, j] = (1 - (i + 1) * pow(absent + 1, p - 2, p)) % p
    code = GradientCode(F, 3, 6, 1, assignment, B)
    code.check()
    parts = gradients(F, 6, (4,), seed=36)
    sent = messages(code, parts)
    for pair in itertools.combinations(range(3), 2):
        assert np.array_equal(code.decode({i: sent[i] for i in pair}), direct_sum(F, parts))
    with pytest.raises(InvalidParameterError, match="both its assignment and its coefficients"):
        GradientCode(F, 3, 6, 1, assignment)
    with pytest.raises(NotImplementedError, match="defines no assignment"):
        GradientCode(F, 3, 6, 1).assignment
    with pytest.raises(InvalidParameterError, match=r"Worker 0 holds partitions \[0, 1, 2, 3\]"):
        GradientCode(F, 3, 6, 1, assignment, np.ones((3, 6), np.uint64))


@pytest.mark.parametrize("p", [7, 65521, 2**61 - 1], ids=prime_id)
def test_cyclic_coefficients_are_the_products_they_are_defined_as(p):
    """B[i, j] = prod over the workers l without partition j of (1 - (i + 1) / (l + 1)),
    computed here term by term in Python integers, for every n < p up to 40 (p = 7: up
    to 6) and a few s."""
    F = ffcode.GF(p)
    for n in range(1, min(p, 41), 3):
        for s in sorted({s for s in (0, 1, n // 2, n - 1) if s < n}):
            code = CyclicRepetition(F, n, s)
            for j in range(n):
                holders = {(j - u) % n for u in range(s + 1)}
                for i in range(n):
                    want = 0
                    if i in holders:
                        want = 1
                        for l in range(n):
                            if l not in holders:
                                want = want * (1 - (i + 1) * pow(l + 1, p - 2, p)) % p
                    assert int(code.coefficients[i, j]) == want, (n, s, i, j)
