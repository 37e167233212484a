"""Lagrange coded computing: exact f(X_1..X_k) from any (k+t-1)*degree+1 workers, and
t-privacy (structural and statistical) from CSPRNG masks."""
import itertools

import numpy as np
import pytest

import ffcode
from ffcode import LCC, functions
from ffcode.codes import base as base_module, lcc as lcc_module
from ffcode.codes.base import secure_random
from ffcode.codes.lcc import is_row_linear

from helpers import assert_field_array, obj_matmul, rand

LCC_PRIMES = [65521, 2**31 - 1, 2**61 - 1]
W_SEED = 99


def _W(F, cols):
    return rand(F.p, (cols, 2), W_SEED)


# (name, f, degree, exact oracle on Python ints)
FUNCTIONS = [
    ("times W", lambda F, X: F.matmul(X, _W(F, X.shape[1])), 1,
     lambda p, X: obj_matmul(p, X, _W(ffcode.GF(p), X.shape[1]))),
    ("double", lambda F, X: F.add(X, X), 1, lambda p, X: (2 * X.astype(object)) % p),
    ("gram", lambda F, X: F.matmul(X, X.T), 2, lambda p, X: obj_matmul(p, X, X.T)),
    ("square", lambda F, X: F.mul(X, X), 2, lambda p, X: (X.astype(object) ** 2) % p),
    ("cube", lambda F, X: F.mul(F.mul(X, X), X), 3, lambda p, X: (X.astype(object) ** 3) % p),
]


def all_results(code, shares):
    return {i: code.compute(s) for i, s in enumerate(shares)}


def assert_decodes(code, shares, results, expected, seed=0):
    """The first R, the last R and a random subset of every size R..N decode (the encoding
    ``shares``) to expected."""
    R, N = code.recovery_threshold, code.n_workers
    rng = np.random.default_rng(seed)
    subsets = [range(R), range(N - R, N)]
    subsets += [rng.choice(N, size, replace=False) for size in range(R, N + 1)]
    for workers in subsets:
        got = code.decode(shares, {int(w): results[int(w)] for w in workers})
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert isinstance(g, np.ndarray)   # 0-d blocks too, never numpy scalars
            assert_field_array(code.F, g, e)


@pytest.mark.parametrize("p", LCC_PRIMES)
@pytest.mark.parametrize("name, f, degree, oracle", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
@pytest.mark.parametrize("k, t", [(1, 0), (3, 0), (1, 1), (2, 2), (3, 1)], ids=str)
def test_lcc_decodes(p, name, f, degree, oracle, k, t):
    """f(X_j) for every j from every subset size, R = (k + t - 1) * degree + 1."""
    F = ffcode.GF(p)
    R = (k + t - 1) * degree + 1
    code = LCC(F, k, t, f, degree, R + 2)
    assert (code.recovery_threshold, code.n_workers, code.k, code.t) == (R, R + 2, k, t)
    X = [rand(p, (4, 3), (k, t, j)) for j in range(k)]
    shares = code.encode(X, seed=1)
    assert len(shares) == R + 2
    assert all(isinstance(s, tuple) and len(s) == 1 and s[0].shape == (4, 3) for s in shares)
    assert_decodes(code, shares, all_results(code, shares), [oracle(p, x) for x in X])


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (5,), (2, 3, 2)], ids=str)
def test_lcc_block_shapes(shape):
    """Scalars, vectors and higher-dimensional blocks with an elementwise f."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    code = LCC(F, 2, 1, FUNCTIONS[4][1], 3, 10)
    X = [rand(p, shape, j) for j in range(2)]
    shares = code.encode(X, seed=2)
    assert_decodes(code, shares, all_results(code, shares),
                   [(x.astype(object) ** 3) % p for x in X])


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0)], ids=str)
def test_lcc_empty_blocks(shape):
    """Blocks with a zero dimension: f of an empty array is an empty array."""
    p = 65521
    F = ffcode.GF(p)
    code = LCC(F, 2, 1, FUNCTIONS[3][1], 2, 6)
    X = [rand(p, shape, j) for j in range(2)]
    shares = code.encode(X, seed=3)
    assert_decodes(code, shares, all_results(code, shares), [np.zeros(shape, dtype=object)] * 2)


def test_lcc_small_fields():
    """GF(5) and GF(7) hold few points: the largest codes that fit still decode."""
    for p, k, t, degree, N in [(5, 1, 0, 1, 3), (5, 2, 0, 1, 2), (7, 1, 1, 1, 4),
                               (7, 2, 1, 1, 3), (7, 1, 1, 2, 4)]:
        F = ffcode.GF(p)
        f = FUNCTIONS[1][1] if degree == 1 else FUNCTIONS[3][1]
        code = LCC(F, k, t, f, degree, N)
        X = [rand(p, (3, 2), (p, j)) for j in range(k)]
        expected = [(x.astype(object) * (2 if degree == 1 else x.astype(object))) % p for x in X]
        shares = code.encode(X, seed=4)
        assert_decodes(code, shares, all_results(code, shares), expected)
        with pytest.raises(ValueError, match="too small"):
            LCC(F, k, t, f, degree, N + 1)


def test_lcc_non_contiguous_blocks():
    p = 65521
    F = ffcode.GF(p)
    code = LCC(F, 2, 1, FUNCTIONS[2][1], 2, 7)
    base = [rand(p, (5, 4), j) for j in range(2)]
    X = [np.asfortranarray(base[0]), np.repeat(base[1], 2, axis=1)[:, ::2]]
    assert not X[1].flags.c_contiguous
    shares = code.encode(X, seed=5)
    assert_decodes(code, shares, all_results(code, shares), [obj_matmul(p, x, x.T) for x in base])


def test_lcc_custom_points_and_betas():
    """Given points and betas (0 allowed among the betas) are used as given."""
    p = 2**61 - 1
    F = ffcode.GF(p)
    points = [p - 1, 7, 2**40, 3, 12345, 99, 5]
    betas = [0, 2**60, 11, 4]
    code = LCC(F, 3, 1, FUNCTIONS[3][1], 2, 7, points=points, betas=betas)
    assert code.points.tolist() == points and code.betas.tolist() == betas
    assert_field_array(F, code.encoding_matrix, F.lagrange(betas, points))
    X = [rand(p, (3, 3), j) for j in range(3)]
    shares = code.encode(X, seed=6)
    assert_decodes(code, shares, all_results(code, shares),
                   [(x.astype(object) ** 2) % p for x in X])


def test_lcc_default_betas_avoid_points():
    """Default betas are the k + t smallest nonzero elements that are not worker points."""
    F = ffcode.GF(65521)
    f = FUNCTIONS[1][1]
    assert LCC(F, 2, 1, f, 1, 4).betas.tolist() == [5, 6, 7]
    code = LCC(F, 2, 1, f, 1, 4, points=[2, 4, 6, 100])
    assert code.betas.tolist() == [1, 3, 5]
    X = [rand(F.p, 4, j) for j in range(2)]
    shares = code.encode(X, seed=0)
    assert_decodes(code, shares, all_results(code, shares),
                   [(2 * x.astype(object)) % F.p for x in X])


def test_lcc_bad_betas():
    F = ffcode.GF(65521)
    f = FUNCTIONS[1][1]
    for betas, match in [([1, 10, 11], "disjoint"), ([10, 11, 4], "disjoint"),
                         ([10, 10, 11], "distinct"), ([10, 11], "k \\+ t = 3"),
                         ([10, 11, 12, 13], "k \\+ t = 3"), ([10, 11, F.p], ">= p"),
                         ([[10, 11, 12]], "1-D")]:
        with pytest.raises(ValueError, match=match):
            LCC(F, 2, 1, f, 1, 4, betas=betas)


def test_lcc_bad_arguments():
    """f and result_bound must be callable; blocks a list of k equally shaped arrays;
    f must return field elements."""
    F = ffcode.GF(65521)
    f = FUNCTIONS[1][1]
    with pytest.raises(TypeError, match="callable"):
        LCC(F, 2, 1, 3, 2, 5)
    with pytest.raises(ValueError, match="'package.module:function', not 'square'"):
        LCC(F, 2, 1, "square", 2, 5)                # a string is an import path
    with pytest.raises(TypeError, match="result_bound"):
        LCC(F, 2, 1, f, 1, 5, result_bound=3)
    code = LCC(F, 2, 1, f, 1, 5)
    X = [rand(F.p, 3, 0), rand(F.p, 3, 1)]
    with pytest.raises(TypeError, match="list"):
        code.encode(np.stack(X))
    with pytest.raises(TypeError, match="list"):
        code.encode(5)
    for bad in ([X[0]], X + [X[0]], []):
        with pytest.raises(ValueError, match="k = 2"):
            code.encode(bad)
    with pytest.raises(ValueError, match="equally shaped"):
        code.encode([X[0], rand(F.p, 4, 2)])
    with pytest.raises(ValueError, match=">= p"):
        code.encode([X[0], np.full(3, F.p, np.int64)])
    with pytest.raises(TypeError):
        code.encode([X[0], X[1].astype(float)])
    share = code.encode(X, seed=1)[0]
    for bad_f, err in [(lambda F, X: X.astype(np.uint64) + F.p, ValueError),
                       (lambda F, X: X.astype(float), TypeError)]:
        bad_code = LCC(F, 2, 1, bad_f, 1, 5)
        bad_code.encode(X, seed=1)
        with pytest.raises(err, match="f\\(F, share\\)"):
            bad_code.compute(share)


def test_lcc_seeds():
    """A seed makes the shares reproducible; different seeds give different masks."""
    F = ffcode.GF(2**31 - 1)
    code = LCC(F, 2, 2, FUNCTIONS[1][1], 1, 6)
    X = [rand(F.p, (4, 4), j) for j in range(2)]
    a, b, c = code.encode(X, seed=7), code.encode(X, seed=7), code.encode(X, seed=8)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not any(np.array_equal(x[0], y[0]) for x, y in zip(a, c))


# -- the row-linear claim ----------------------------------------------------------------------

# (name, f): linear in the rows, f(G @ X) = G @ f(X) for every G mixing the rows
ROW_LINEAR = [("times W", FUNCTIONS[0][1]), ("double", FUNCTIONS[1][1]),
              ("columns mixed", lambda F, X: F.matmul(X, F.matmul(_W(F, X.shape[1]),
                                                                 _W(F, 2).T)))]
# (name, f): not row-linear, though some are linear or compute each row from its own row
NOT_ROW_LINEAR = [("square", functions.square), ("cube", functions.cube),
                  ("gram", FUNCTIONS[2][1]),
                  ("plus one", lambda F, X: F.add(X, 1)),
                  ("rows reversed", lambda F, X: X[::-1]),
                  ("first row", lambda F, X: X[:1]),
                  ("transposed", lambda F, X: X.T),
                  ("fixed rows", lambda F, X: F.matmul(_W(F, 3).T, X))]


@pytest.mark.parametrize("p", LCC_PRIMES)
@pytest.mark.parametrize("name, f", ROW_LINEAR, ids=[c[0] for c in ROW_LINEAR])
def test_is_row_linear_accepts_linear_in_the_rows(p, name, f):
    F = ffcode.GF(p)
    for trailing in [(3,), (5,), (0,)]:
        assert is_row_linear(F, f, trailing, seed=1), (name, trailing)


@pytest.mark.parametrize("p", LCC_PRIMES)
@pytest.mark.parametrize("name, f", NOT_ROW_LINEAR, ids=[c[0] for c in NOT_ROW_LINEAR])
def test_is_row_linear_refuses(p, name, f):
    """The elementwise square is the case of the definition's old wording: each row of f(X)
    depends only on that row of X, yet f is not linear in the rows."""
    F = ffcode.GF(p)
    for seed in range(3):
        assert not is_row_linear(F, f, (3,), seed=seed), (name, seed)


def test_row_linear_claim_is_checked_at_encode():
    """row_linear=True for a square is refused by encode (with or without pieces), naming f
    and saying why; a true claim encodes, and an unclaimed square encodes without pieces."""
    F = ffcode.GF(65521)
    X = [rand(F.p, (4, 3), j) for j in range(2)]
    for f, name in [("ffcode.functions:square", "f = ffcode.functions:square"),
                    (FUNCTIONS[3][1], "f = <function <lambda>")]:
        code = LCC(F, 2, 1, f, 2, 6, row_linear=True)
        for pieces in (None, 2):
            with pytest.raises(ValueError, match=f"{name}.* is not row-linear: "
                                                 r"f\(G @ X\) != G @ f\(X\)"):
                code.encode(X, seed=1, pieces=pieces)
    assert len(LCC(F, 2, 1, "ffcode.functions:square", 2, 6).encode(X, seed=1)) == 6
    linear = LCC(F, 2, 1, FUNCTIONS[0][1], 1, 4, row_linear=True)
    assert len(linear.encode(X, seed=1, pieces=2)) == 4
    shares = linear.encode(X, seed=1)
    assert_decodes(linear, shares, all_results(linear, shares),
                   [obj_matmul(F.p, x, _W(F, 3)) for x in X])


def test_not_row_linear_message_defines_it():
    """Asking an unclaimed LCC for pieces says what row-linear means (not "each row depends
    only on its own row", which the square satisfies)."""
    F = ffcode.GF(65521)
    code = LCC(F, 2, 1, functions.square, 2, 6)
    with pytest.raises(ValueError, match=r"linear in the rows: f\(G @ X\) = G @ f\(X\) "
                                         r"for every matrix G mixing the rows") as e:
        code.encode([rand(F.p, (4, 3), j) for j in range(2)], seed=1, pieces=2)
    assert "depends only" not in str(e.value) and "square is not" in str(e.value)


# -- privacy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("k, t", [(1, 2), (3, 2), (2, 3), (1, 1)], ids=str)
def test_privacy_masks_are_invertible_on_any_t_workers(k, t):
    """The mask columns of the encoding matrix restricted to any t workers have rank t, so
    any t shares are the data plus a uniformly random vector."""
    p = 65521
    F = ffcode.GF(p)
    N = 7
    code = LCC(F, k, t, FUNCTIONS[1][1], 1, N)
    E = code.encoding_matrix
    assert E.shape == (N, k + t)
    # the encoding matrix really interpolates: rows are the Lagrange basis at the points
    assert_field_array(F, F.matmul(E, np.ones(k + t, F.dtype)), np.ones(N, dtype=object))
    masks = E[:, k:]
    for workers in itertools.combinations(range(N), t):
        assert F.rank(masks[list(workers)]) == t, workers
    # while t + 1 workers see the data: some combination of their shares cancels the masks
    # but not the data (so t is exactly the privacy level)
    for workers in itertools.combinations(range(N), t + 1):
        assert F.rank(E[list(workers)]) == t + 1, workers


def _share_counts(code, value, worker, samples, per_encode=100):
    """How often each element appears in one worker's share over many seeded encodes of
    blocks that all equal value."""
    F = code.F
    counts = np.zeros(F.p, np.int64)
    X = [np.full(per_encode, value, F.dtype)] * code.k
    for seed in range(samples // per_encode):
        share = code.encode(X, seed=seed)[worker][0]
        counts += np.bincount(share, minlength=F.p)
    return counts


def _uniform(counts, tolerance=0.25):
    expected = counts.sum() / len(counts)
    return np.all(np.abs(counts - expected) <= tolerance * expected)


@pytest.mark.parametrize("p", [5, 7])
def test_privacy_statistical_one_worker(p):
    """With t = 1, each worker's share is uniform whatever the data (20000 samples, every
    count within 25% of the expected one), the same for two different data values."""
    F = ffcode.GF(p)
    N = p - 3                         # N + k + t points must fit in GF(p)
    code = LCC(F, 1, 1, FUNCTIONS[1][1], 1, N)
    for worker in range(N):
        zero = _share_counts(code, 0, worker, 20000)
        other = _share_counts(code, p - 2, worker, 20000)
        assert zero.sum() == other.sum() == 20000
        assert _uniform(zero) and _uniform(other), (worker, zero, other)
        assert np.all(np.abs(zero - other) <= 0.25 * 20000 / p)


def test_privacy_statistical_two_workers():
    """With t = 2, the joint distribution of any two workers' shares is uniform on GF(7)**2."""
    p = 7
    F = ffcode.GF(p)
    code = LCC(F, 1, 2, FUNCTIONS[1][1], 1, 3)
    X = [np.full(200, 5, F.dtype)]
    pairs = {w: np.zeros(p * p, np.int64) for w in itertools.combinations(range(3), 2)}
    for seed in range(150):
        shares = code.encode(X, seed=seed)
        for (i, j), c in pairs.items():
            c += np.bincount(shares[i][0].astype(np.int64) * p + shares[j][0],
                             minlength=p * p)
    for c in pairs.values():
        assert _uniform(c, 0.25), c


def test_privacy_negative_control_without_masks():
    """With t = 0 the shares reveal the data: the same statistic tells the values apart."""
    p = 7
    F = ffcode.GF(p)
    code = LCC(F, 1, 0, FUNCTIONS[1][1], 1, 3)
    zero = _share_counts(code, 0, 1, 2000)
    other = _share_counts(code, 5, 1, 2000)
    assert not _uniform(zero) and not _uniform(other)
    assert zero[0] == 2000 and other[0] == 0


def test_unseeded_masks_come_from_the_csprng(monkeypatch):
    """seed=None draws masks through secure_random (os.urandom), never F.random, and two
    encodes differ; the data still decodes."""
    F = ffcode.GF(65521)
    code = LCC(F, 2, 2, FUNCTIONS[3][1], 2, 8)
    X = [rand(F.p, (4, 4), j) for j in range(2)]
    calls = []

    def spy(F_, size):
        calls.append(size)
        return secure_random(F_, size)

    def no_random(*args, **kwargs):
        raise AssertionError("F.random used for unseeded masks")

    monkeypatch.setattr(lcc_module, "secure_random", spy)
    monkeypatch.setattr(F, "random", no_random)
    a, b = code.encode(X), code.encode(X)
    assert calls == [2 * 16, 2 * 16]
    assert not any(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    expected = [(x.astype(object) ** 2) % F.p for x in X]
    for shares in (a, b):
        got = code.decode(shares, all_results(code, shares))
        for g, e in zip(got, expected):
            assert_field_array(F, g, e)


@pytest.mark.parametrize("p", [2, 3, 65521, 2**61 - 1])
def test_secure_random(p):
    """Elements in [0, p) of F.dtype, roughly uniform over 8 (or p) equal ranges."""
    F = ffcode.GF(p)
    x = secure_random(F, 40000)
    assert x.dtype == F.dtype and x.shape == (40000,)
    assert int(x.max()) < p
    bins = min(p, 8)
    counts = np.bincount((x.astype(object) * bins // p).astype(np.int64), minlength=bins)
    assert _uniform(counts, 0.1), counts
    assert secure_random(F, 0).shape == (0,)


@pytest.mark.parametrize("p, dtype", [(3, np.uint32), (2**61 - 1, np.uint64)])
def test_secure_random_rejects_the_top_partial_range(monkeypatch, p, dtype):
    """Words at or above the largest multiple of p are dropped, not reduced (no bias)."""
    F = ffcode.GF(p)
    word = np.iinfo(dtype).max              # in the top partial range for these p
    limit = (int(word) + 1) // p * p
    feeds = iter([[word, 5, limit], [limit - 1, word], [8]])

    def urandom(n):
        words = np.array(next(feeds), dtype)
        assert n == words.nbytes        # asks for exactly the words still missing
        return words.tobytes()

    monkeypatch.setattr(base_module.os, "urandom", urandom)
    x = secure_random(F, 3)
    assert x.tolist() == [5 % p, (limit - 1) % p, 8 % p]
    assert x.dtype == F.dtype


# -- per-job arguments -------------------------------------------------------------------------

def _affine(F, X, w, c):
    """X @ w + c: degree 1 in X."""
    return F.add(F.matmul(X, w), c)


def _gradient(F, X, w, c):
    """X^T ((X @ w) * c): degree 2 in X, as a least-squares gradient."""
    return F.matmul(X.T, F.mul(F.matmul(X, w), c))


def _cubed_rows(F, X, w):
    """(X @ w) ** 3: degree 3 in X."""
    z = F.matmul(X, w)
    return F.mul(F.mul(z, z), z)


def _obj(p, x):
    return np.asarray(x).astype(object) % p


# (name, f, degree, arguments, exact oracle on Python ints)
WITH_ARGUMENTS = [
    ("affine", _affine, 1, ("w", "c"),
     lambda p, X, w, c: (obj_matmul(p, X, w[:, None])[:, 0] + _obj(p, c)) % p),
    ("gradient", _gradient, 2, ("w", "c"),
     lambda p, X, w, c: obj_matmul(p, X.T, obj_matmul(p, X, w[:, None]) * _obj(p, c)[:, None]
                                   % p)[:, 0]),
    ("cubed rows", _cubed_rows, 3, ("w",),
     lambda p, X, w: obj_matmul(p, X, w[:, None])[:, 0] ** 3 % p),
]


def _job_arguments(p, names, seed):
    """A job's arguments for 4 x 3 blocks: w a 3-vector, c a 4-vector."""
    return [rand(p, 3 if name == "w" else 4, (seed, i)) for i, name in enumerate(names)]


@pytest.mark.parametrize("p", LCC_PRIMES)
@pytest.mark.parametrize("name, f, degree, names, oracle", WITH_ARGUMENTS,
                         ids=[c[0] for c in WITH_ARGUMENTS])
@pytest.mark.parametrize("k, t", [(1, 0), (2, 1), (3, 2), (1, 2)], ids=str)
def test_lcc_with_arguments_decodes(p, name, f, degree, names, oracle, k, t):
    """One encoding serves jobs with different arguments: every job decodes f(X_j, *args)
    exactly from every subset size, R = (k + t - 1) * degree + 1 (the degree in X only)."""
    F = ffcode.GF(p)
    R = (k + t - 1) * degree + 1
    code = LCC(F, k, t, f, degree, R + 2, arguments=names)
    assert code.inputs == ("blocks", *names) and code.encodes == 1
    assert code.argument_names == names and code.recovery_threshold == R
    X = [rand(p, (4, 3), (k, t, j)) for j in range(k)]
    shares = code.encode(X, seed=1)
    for job in range(2):
        args = code.arguments(shares, *_job_arguments(p, names, job))
        assert all(a.dtype == F.dtype for a in args)
        results = {i: code.compute(s, *args) for i, s in enumerate(shares)}
        assert_decodes(code, shares, results, [oracle(p, x, *args) for x in X], seed=job)


def test_lcc_with_arguments_uncoded():
    """The uncoded split gives block j to worker j; the job's arguments are appended to each
    share, and the assembled results are f(X_j, *args)."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    code = LCC(F, 3, 1, _affine, 1, 5, arguments=("w", "c"))
    X = [rand(p, (4, 3), j) for j in range(3)]
    split = code.uncoded(X)
    assert len(split) == 3 and split.code is code and split.shapes == ((4, 3),)
    assert all(len(share) == 1 for share in split)
    for job in range(2):
        args = code.arguments(split, *_job_arguments(p, ("w", "c"), job))
        got = split.assemble([code.compute(share, *args) for share in split])
        for g, x in zip(got, X):
            assert_field_array(F, g, WITH_ARGUMENTS[0][4](p, x, *args))
    other = LCC(F, 3, 1, _affine, 1, 5, arguments=("w", "c"))
    with pytest.raises(ValueError, match="split was made by"):
        other.arguments(split, *_job_arguments(p, ("w", "c"), 0))


def test_lcc_arguments_counted_and_checked():
    """arguments() and compute() take exactly the named arguments, as field elements; an f
    that cannot take their shapes says so; arguments (or their absence) fit the encoding."""
    F = ffcode.GF(65521)
    code = LCC(F, 2, 1, _affine, 1, 5, arguments=("w", "c"))
    shares = code.encode([rand(F.p, (4, 3), j) for j in range(2)], seed=1)
    w, c = _job_arguments(F.p, ("w", "c"), 0)
    for args in ((), (w,), (w, c, c)):
        with pytest.raises(TypeError, match=r"takes arguments \(w, c\) beyond the share, "
                                            f"got {len(args)}"):
            code.arguments(shares, *args)
        with pytest.raises(TypeError, match=r"takes arguments \(w, c\)"):
            code.compute(shares[0], *args)
    with pytest.raises(ValueError, match="'c' has elements >= p"):
        code.arguments(shares, w, np.full(4, F.p))
    with pytest.raises(ValueError, match="'w' has negative elements"):
        code.arguments(shares, -np.ones(3, np.int64), c)
    with pytest.raises(TypeError, match="'w' must be an array of integers"):
        code.arguments(shares, w.astype(float), c)
    with pytest.raises(ValueError, match="do not chain"):
        code.compute(shares[0], rand(F.p, 5, 0), c)           # X is 4 x 3: w has 3 rows
    with pytest.raises(ValueError, match="broadcast"):
        code.compute(shares[0], w, rand(F.p, 5, 0))
    with pytest.raises(TypeError, match="must be what LCC.encode returned"):
        code.arguments(list(shares), w, c)
    plain = LCC(F, 2, 1, FUNCTIONS[1][1], 1, 5)
    plain_shares = plain.encode([rand(F.p, 3, j) for j in range(2)], seed=1)
    assert plain.inputs == ("blocks",) and plain.arguments(plain_shares) == ()
    with pytest.raises(TypeError, match="LCC takes no arguments beyond its encoded data"):
        plain.arguments(plain_shares, w)
    with pytest.raises(TypeError, match="LCC's f takes no arguments beyond the share, got 1"):
        plain.compute(plain_shares[0], w)


def test_lcc_arguments_construction_refused():
    """Names must be distinct identifiers other than 'blocks'; an LCC with arguments is not
    row-linear (a per-job operand of a product is MDS's x); signed needs a bound that says
    the arguments."""
    F = ffcode.GF(65521)
    with pytest.raises(TypeError, match="sequence of names"):
        LCC(F, 2, 1, _affine, 1, 5, arguments="w")
    for bad in [("w", "w"), ("blocks",), ("w", 3), ("not a name",)]:
        with pytest.raises(ValueError, match="'arguments' must hold"):
            LCC(F, 2, 1, _affine, 1, 5, arguments=bad)
    with pytest.raises(ValueError, match="cannot be row_linear: for a product with a "
                                         "per-job operand use MDS or a ProductCode"):
        LCC(F, 2, 1, _affine, 1, 5, arguments=("w", "c"), row_linear=True)
    with pytest.raises(ValueError, match=r"needs result_bound\(M, \|w\|, \|c\|\): a bound "
                                         r"on \|f\(F, X, w, c\)\|"):
        LCC(F, 2, 1, _affine, 1, 5, arguments=("w", "c"), signed=True)
    with pytest.raises(TypeError, match=r"callable as f\(F, X, w\)"):
        LCC(F, 2, 1, 3, 1, 5, arguments=("w",))


def _signed_rows(F, X, w):
    return F.matmul(X, w)


def test_lcc_signed_arguments_refused_when_they_could_wrap():
    """With signed=True the bound is result_bound(M, *magnitudes of the arguments), checked
    per job against the data's magnitude stored at encode (or in the uncoded split): a job
    that could wrap is refused naming the bound, one that cannot decodes negatives exactly."""
    F = ffcode.GF(65521)                                  # (p-1)/2 = 32760
    cols = 3

    def bound(M, size_w):
        return cols * M * size_w

    code = LCC(F, 2, 1, _signed_rows, 1, 5, signed=True, result_bound=bound,
               arguments=("w",))
    X = [np.array([[-100, 20, 3], [7, -50, 0]]), np.array([[1, 2, 3], [-100, -100, -100]])]
    blocks = [F.asarray(x) for x in X]
    shares = code.encode(blocks, seed=1)                  # the data alone cannot wrap
    split = code.uncoded(blocks)
    assert shares.magnitude == split.magnitude == 100
    w = np.array([-100, 9, 1])
    for data in (shares, split):
        args = code.arguments(data, F.asarray(w))           # 3 * 100 * 100 = 30000: fits
        if data is shares:
            results = {i: code.compute(s, *args) for i, s in enumerate(shares)}
            got = code.decode(shares, results)
        else:
            got = split.assemble([code.compute(s, *args) for s in split])
        assert [F.to_signed(g).tolist() for g in got] == [(x @ w).tolist() for x in X]
        with pytest.raises(ValueError, match=r"could reach result_bound\(\|X\|, \|w\|\) = "
                                             r"33000, beyond \(p-1\)/2 = 32760, and wrap"):
            code.arguments(data, F.asarray([-110, 0, 0]))
    hand_made = ffcode.codes.Split(split.shares, list, split.shapes)
    with pytest.raises(ValueError, match="does not say its data's magnitude"):
        code.arguments(hand_made, F.asarray(w))
