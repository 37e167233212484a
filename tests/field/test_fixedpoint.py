"""Signed integers and fixed-point reals in GF(p) (max_signed, to_signed, from_real, to_real),
and the codes with signed=True: refusing results that could wrap, decoding negatives exactly."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ffcode
from ffcode import LCC, MDS, MatDot, PolynomialCode

from helpers import PRIMES, assert_field_array, rand

WRAP = r"\(p-1\)/2"


def largest_accepted(ms: int) -> float:
    """The largest float64 that is <= ms."""
    v = float(ms)
    return v if int(v) <= ms else float(np.nextafter(v, 0))


def smallest_refused(ms: int) -> float:
    """The smallest float64 that is an integer > ms."""
    v = float(ms + 1)
    return v if int(v) > ms else float(np.nextafter(v, np.inf))


# -- max_signed and to_signed ------------------------------------------------------------------


def test_max_signed(field):
    assert field.max_signed == (field.p - 1) // 2
    assert type(field.max_signed) is int


def test_to_signed(field):
    """Elements above (p-1)/2 become negatives: int64 in [-(p-1)/2, (p-1)/2], same class mod p."""
    p, ms = field.p, field.max_signed
    y = np.array(sorted({0, 1 % p, ms, (ms + 1) % p, p - 1}) + rand(p, 50, 1).tolist(),
                 dtype=np.uint64).astype(field.dtype)
    s = field.to_signed(y[None, :])
    assert s.dtype == np.int64 and s.shape == (1, len(y))
    s = s.reshape(-1)
    expected = [int(v) if int(v) <= ms else int(v) - p for v in y]
    assert s.tolist() == expected
    if p > 2:
        assert int(s.max()) <= ms and int(s.min()) >= -ms
    assert_field_array(field, field.asarray(s), y)
    assert field.to_signed(np.zeros((0, 3), field.dtype)).shape == (0, 3)


def test_to_signed_examples():
    F = ffcode.GF(7)
    assert F.to_signed([0, 3, 4, 6]).tolist() == [0, 3, -3, -1]
    G = ffcode.GF(9223372036854775783)
    assert G.to_signed([G.p - 1, G.max_signed, G.max_signed + 1]).tolist() == [
        -1, G.max_signed, -G.max_signed]


def test_to_signed_checks_elements():
    F = ffcode.GF(65521)
    with pytest.raises(ValueError, match=">= p"):
        F.to_signed([65521])
    with pytest.raises(ValueError, match="negative"):
        F.to_signed([-1])
    with pytest.raises(TypeError):
        F.to_signed([1.0])


# -- from_real and to_real ---------------------------------------------------------------------


def test_from_real_integers(field):
    """Integers at scale 1 round-trip through to_signed; negatives land above (p-1)/2."""
    p, ms = field.p, field.max_signed
    top = largest_accepted(ms)
    small = np.random.default_rng(2).integers(-min(ms, 2**40), min(ms, 2**40) + 1, 30)
    x = np.concatenate([small, [0]]).astype(np.float64)
    if ms:
        x = np.concatenate([x, [1, -1, top, -top, top - 1 if top < 2**53 else top]])
    y = field.from_real(x, 1)
    assert y.dtype == field.dtype and y.shape == x.shape
    assert field.to_signed(y).tolist() == [int(v) for v in x]
    negative = x < 0
    assert (y[negative].astype(object) > ms).all() and (y[~negative].astype(object) <= ms).all()
    assert (y[negative].astype(object) == [p + int(v) for v in x[negative]]).all()


def test_from_real_bound(field):
    """The largest magnitude at or below (p-1)/2 is accepted; the next one is refused with a
    message naming the bound (for every p, where the bound is not a float64 too)."""
    ms = field.max_signed
    top, beyond = largest_accepted(ms), smallest_refused(ms)
    y = field.from_real([top, -top], 1)
    assert field.to_signed(y).tolist() == [int(top), -int(top)]
    for x in (beyond, -beyond):
        with pytest.raises(ValueError, match=rf"{WRAP} = {ms}"):
            field.from_real([0.0, x], 1)
    with pytest.raises(ValueError, match=rf"{WRAP} = {ms}"):
        field.from_real(np.array([ms + 1]), 1)


@pytest.mark.parametrize("p", PRIMES)
@given(x=st.lists(st.floats(-1e6, 1e6), max_size=8),
       scale=st.sampled_from([1, 3, 0.5, 2**10, 2**20, 1e9, 2**40]))
def test_from_real_is_exact_or_refuses(p, x, scale):
    """from_real gives round(x * scale) exactly, or refuses when that exceeds (p-1)/2."""
    F = ffcode.GF(p)
    rounded = [int(np.rint(v * float(scale))) for v in x]
    if any(abs(r) > F.max_signed for r in rounded):
        with pytest.raises(ValueError, match=WRAP):
            F.from_real(x, scale)
    else:
        assert F.to_signed(F.from_real(np.array(x, dtype=np.float64), scale)).tolist() == rounded


def test_real_round_trip():
    """to_real(from_real(x, s), s) is x within half a quantum; dyadic values exactly."""
    F = ffcode.GF(2**61 - 1)
    x = np.random.default_rng(3).uniform(-5, 5, (4, 6))
    for scale in (1, 7, 2**10, 2**30):
        back = F.to_real(F.from_real(x, scale), scale)
        assert back.dtype == np.float64 and back.shape == x.shape
        assert np.abs(back - x).max() <= 0.5 / scale
    G = ffcode.GF(65521)
    assert G.from_real([1.5, -0.25], 4).tolist() == [6, 65520]
    assert G.to_real(G.from_real([1.5, -0.25], 4), 4).tolist() == [1.5, -0.25]
    assert G.from_real([0.26, -0.26, 0.74, -0.74], 4).tolist() == [1, 65520, 3, 65518]


def test_from_real_shapes_and_dtypes():
    F = ffcode.GF(65521)
    assert F.from_real(-2.0, 1).shape == () and int(F.from_real(-2.0, 1)) == 65519
    assert F.from_real(np.zeros((0, 3)), 5).shape == (0, 3)
    for dt in (np.int8, np.int64, np.uint8, np.uint64, np.float32, np.float64):
        y = F.from_real(np.array([[3, 1], [0, 2]], dtype=dt), 2)
        assert y.dtype == np.uint32 and y.tolist() == [[6, 2], [0, 4]]
    assert F.from_real(np.array([-3, 4], np.int16), 3).tolist() == [65512, 12]
    assert F.from_real([1, 2], np.float32(2)).tolist() == [2, 4]
    assert F.from_real([1, 2], np.int64(3)).tolist() == [3, 6]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("x", [[np.nan], [1.0, np.inf], [-np.inf], [1e300]], ids=repr)
def test_from_real_non_finite(x):
    """NaN, infinities and values that overflow at the scale: ValueError."""
    with pytest.raises(ValueError, match="non-finite"):
        ffcode.GF(65521).from_real(x, 1e10)


@pytest.mark.parametrize("x", [np.array([True, False]), np.array([1 + 2j]),
                               np.array([1, 2], dtype=object), np.array(["1.5"]), [1.5, "2"]],
                         ids=["bool", "complex", "object", "str", "mixed"])
def test_from_real_bad_dtype(x):
    with pytest.raises(TypeError, match="real numbers"):
        ffcode.GF(65521).from_real(x, 2)


@pytest.mark.parametrize("scale, err", [
    (0, ValueError), (0.0, ValueError), (-1, ValueError), (-0.5, ValueError),
    (np.inf, ValueError), (np.nan, ValueError), ("2", TypeError), (True, TypeError),
    (np.True_, TypeError), (None, TypeError), ([2], TypeError), (2 + 0j, TypeError)], ids=repr)
def test_bad_scale(scale, err):
    """from_real and to_real take a positive finite real scale."""
    F = ffcode.GF(65521)
    with pytest.raises(err, match="scale"):
        F.from_real([1.0], scale)
    with pytest.raises(err, match="scale"):
        F.to_real([1], scale)


def test_to_real():
    F = ffcode.GF(2**31 - 1)
    y = np.array([0, 1, F.p - 1, F.max_signed, F.max_signed + 1], np.uint32)
    got = F.to_real(y, 4)
    assert got.dtype == np.float64
    assert got.tolist() == [0, 0.25, -0.25, F.max_signed / 4, -F.max_signed / 4]
    with pytest.raises(ValueError, match=">= p"):
        F.to_real([F.p], 4)


def test_p2_edge():
    """GF(2) holds only the signed value 0: from_real refuses +-1; to_signed keeps classes."""
    F = ffcode.GF(2)
    assert F.max_signed == 0
    assert F.from_real([0.0, 0.4, -0.4, -0.0], 1).tolist() == [0, 0, 0, 0]
    for x in (1.0, -1.0, 0.6):
        with pytest.raises(ValueError, match=rf"{WRAP} = 0"):
            F.from_real([x], 1)
    s = F.to_signed([0, 1])
    assert s[0] == 0 and abs(int(s[1])) == 1


# -- codes with signed=True --------------------------------------------------------------------


def signed_ints(shape, bound, seed):
    """Random ints in [-bound, bound] with -bound and +bound both present (when big enough)."""
    x = np.random.default_rng(seed).integers(-bound, bound + 1, size=shape)
    flat = x.reshape(-1)
    if flat.size >= 2:
        flat[0], flat[-1] = -bound, bound
    return x


def run_signed(kind, F, A, B):
    """Encode the signed integer A and B (MDS: A, with B the argument x, checked by
    arguments), run every worker, decode from the last R."""
    a, b = F.asarray(A), F.asarray(B)
    if kind == "MDS":
        code = MDS(F, 2, 4, signed=True)
        shares = code.encode(a)
        x, = code.arguments(shares, b)
        results = {i: code.compute(s, x) for i, s in enumerate(shares)}
    else:
        code = (PolynomialCode(F, 2, 2, 5, signed=True) if kind == "PolynomialCode"
                else MatDot(F, 2, 4, signed=True))
        shares = code.encode(a, b)
        results = {i: code.compute(s) for i, s in enumerate(shares)}
    R, N = code.recovery_threshold, code.n_workers
    return F.to_signed(code.decode(shares, {w: results[w] for w in range(N - R, N)}))


KINDS = ["MDS", "PolynomialCode", "MatDot"]


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 2**61 - 1])
@pytest.mark.parametrize("kind", KINDS)
def test_signed_codes_decode_negative_results(kind, p):
    """inner * |A| * |B| <= (p-1)/2: the decoded signed result equals numpy's int64 product."""
    F = ffcode.GF(p)
    inner, MA = 6, min(1000, F.max_signed // 6 // 10)
    MB = F.max_signed // (inner * MA)
    A, B = signed_ints((5, inner), MA, 1), signed_ints((inner, 3), MB, 2)
    expected = A @ B
    assert (expected < 0).any() and (expected > 0).any()
    assert run_signed(kind, F, A, B).tolist() == expected.tolist()
    with pytest.raises(ValueError, match=WRAP):
        run_signed(kind, F, A, signed_ints((inner, 3), MB + 1, 2))


@pytest.mark.parametrize("kind", KINDS)
def test_signed_codes_exactly_at_the_bound(kind):
    """In GF(65521), (p-1)/2 = 32760 = 8 * 63 * 65: A all -63 times B all 65 gives -32760
    exactly; |B| = 66 (or |A| = 64) is refused."""
    F = ffcode.GF(65521)
    A, B = np.full((3, 8), -63), np.full((8, 2), 65)
    assert run_signed(kind, F, A, B).tolist() == [[-32760] * 2] * 3
    assert run_signed(kind, F, -A, -B).tolist() == [[-32760] * 2] * 3
    for A2, B2 in [(A, np.full((8, 2), -66)), (np.full((3, 8), 64), B)]:
        with pytest.raises(ValueError, match="32760"):
            run_signed(kind, F, A2, B2)
    B3 = B.copy()
    B3[5, 1] = 65521 - 66          # a single -66 entry is enough
    with pytest.raises(ValueError, match=WRAP):
        run_signed(kind, F, A, B3)


def test_unsigned_codes_do_not_check_magnitudes():
    """signed=False (the default) takes any elements: the check is the signed mode's."""
    F = ffcode.GF(65521)
    A, B = F.asarray(np.full((3, 8), -63)), F.asarray(np.full((8, 2), 66))
    for code in (PolynomialCode(F, 2, 1, 2), MatDot(F, 2, 3)):
        code.encode(A, B)
    code = MDS(F, 2, 2)
    shares = code.encode(A)
    code.compute(shares[0], *code.arguments(shares, B))


def test_signed_mds_checks_x_by_arguments():
    """MDS encodes A alone; arguments(encoding, x) checks each x against the |A| the
    encoding recorded (compute cannot know the encoding), and only that encoding's code
    takes it."""
    F = ffcode.GF(65521)
    code = MDS(F, 2, 3, signed=True)
    shares = code.encode(F.asarray(np.full((4, 8), -63)))
    assert shares.magnitude == 63
    x, = code.arguments(shares, F.asarray(np.full(8, 65)))
    results = {i: code.compute(s, x) for i, s in enumerate(shares)}
    assert F.to_signed(code.decode(shares, results)).tolist() == [-32760] * 4
    with pytest.raises(ValueError, match=r"cols \* \|A\| \* \|x\|.*32760"):
        code.arguments(shares, F.asarray(np.full(8, -66)))
    small = code.encode(F.asarray(np.full((4, 8), -1)))     # another A: another bound
    code.arguments(small, F.asarray(np.full(8, -66)))
    with pytest.raises(ValueError, match=r"cols \* \|A\| \* \|x\|"):
        code.arguments(shares, F.asarray(np.full(8, -66)))
    fresh = MDS(F, 2, 3, signed=True)
    with pytest.raises(ValueError, match="encoding was made by"):
        fresh.arguments(shares, F.asarray(np.full(8, 1)))


# -- LCC with signed=True ----------------------------------------------------------------------


def _cube(F, X):
    return F.mul(F.mul(X, X), X)


def test_signed_lcc_needs_result_bound():
    F = ffcode.GF(65521)
    with pytest.raises(ValueError, match="result_bound"):
        LCC(F, 2, 1, _cube, 3, 9, signed=True)
    with pytest.raises(TypeError, match="result_bound"):
        LCC(F, 2, 1, _cube, 3, 9, signed=True, result_bound=100)


@pytest.mark.parametrize("t", [0, 1, 2])
def test_signed_lcc_cube(t):
    """|X| <= 31 in GF(65521): 31**3 = 29791 <= 32760, decoded exactly with signs; 32 refused."""
    F = ffcode.GF(65521)
    seen = []

    def bound(M):
        seen.append(M)
        return M ** 3

    code = LCC(F, 2, t, _cube, 3, (1 + t) * 3 + 3, signed=True, result_bound=bound)
    X = [signed_ints((3, 4), 31, 5), signed_ints((3, 4), 20, 6)]
    shares = code.encode([F.asarray(x) for x in X], seed=7)
    assert seen == [31]
    results = {i: code.compute(s) for i, s in enumerate(shares)}
    R, N = code.recovery_threshold, code.n_workers
    got = code.decode(shares, {w: results[w] for w in range(N - R, N)})
    assert [F.to_signed(g).tolist() for g in got] == [(x ** 3).tolist() for x in X]
    with pytest.raises(ValueError, match=WRAP):
        code.encode([F.asarray(X[0]), F.asarray(np.full((3, 4), -32))], seed=7)


def test_signed_lcc_bound_edge():
    """result_bound(M) == (p-1)/2 is accepted, one more is refused."""
    F = ffcode.GF(2**31 - 1)
    X = [F.asarray(signed_ints(4, 9, 8))]
    for extra, ok in ((0, True), (1, False)):
        code = LCC(F, 1, 1, lambda F, X: X, 1, 3, signed=True,
                   result_bound=lambda M, e=extra: F.max_signed + e)
        if ok:
            code.encode(X, seed=1)
        else:
            with pytest.raises(ValueError, match=rf"{WRAP} = {F.max_signed}"):
                code.encode(X, seed=1)


# -- end to end with real numbers --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS + ["LCC"])
def test_real_matrices_end_to_end(kind):
    """Reals -> from_real(scale) -> code -> decode -> to_real(scale**2) matches numpy's float
    product within the quantisation error."""
    F = ffcode.GF(2**31 - 1)
    scale = 2**12
    rng = np.random.default_rng(9)
    A, B = rng.uniform(-1, 1, (7, 5)), rng.uniform(-2, 2, (5, 4))
    tolerance = A.shape[1] * (1 * 0.5 + 2 * 0.5 + 0.25 / scale) / scale
    if kind == "LCC":
        Bq = F.from_real(B, scale)
        code = LCC(F, 2, 1, lambda F, X: F.matmul(X, Bq), 1, 4, signed=True,
                   result_bound=lambda M: 5 * M * 2 * scale)
        blocks = [A, -A[::-1]]
        shares = code.encode([F.from_real(x, scale) for x in blocks], seed=10)
        got = code.decode(shares, {i: code.compute(s) for i, s in enumerate(shares)})
        for g, x in zip(got, blocks):
            err = np.abs(F.to_real(g, scale**2) - x @ B).max()
            assert err <= tolerance
        return
    C = run_signed(kind, F, F.from_real(A, scale), F.from_real(B, scale)) / scale**2
    assert np.abs(C - A @ B).max() <= tolerance
    assert np.abs(C - A @ B).max() > 0          # quantised, not the float product itself
