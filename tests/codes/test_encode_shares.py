"""Encoding every share in as few products as possible (ffcode.codes.base.encode_rows): the
shares, and for computation at full speed their piece combinations, are exactly what the
straightforward computation gives, one worker and one piece at a time in Python ints, with
the documented randomness (a seed's masks operand by operand, then each worker's (m, m)
piece coefficients in worker order), for every code, small and large primes, one share or
several per worker, and any number of pieces (both the fused product and the two products
per worker); the runtime's Layout and Plan carry exactly those arrays."""
import numpy as np
import pytest

import ffcode
from ffcode import (GASP, LCC, MDS, Decoder, EntangledPolynomialCode, MatDot, PieceShare,
                    PolynomialCode, ProductCode, _blas, allocation)
from ffcode.codes import base
from ffcode.runtime.master.jobs import Layout, Options, Plan
from ffcode.schemes import Scheme

from helpers import as_objects, assert_field_array, prime_id, rand, row_pieces

# a small prime (every point count here fits), 16 bits, 31 bits (rowcomb's Shoup kernel),
# the largest uint32 prime (products through matmul_into) and a Mersenne prime near 2**61
ENCODE_PRIMES = [13, 65521, 2**31 - 1, 4294967291, 2**61 - 1]
# K m <= K + m + 3 fuses; m = 8 (K >= 2) takes two products per worker
PIECES = [None, 1, 2, 3, 4, 8]


def piece_blocks(p, G, y) -> np.ndarray:
    """Block l = sum_l' G[l, l'] * (row piece l' of y), mod p, in Python ints."""
    pieces = row_pieces(y, G.shape[0])
    out = np.zeros(pieces.shape, dtype=object)
    for l in range(G.shape[0]):
        for lp in range(G.shape[0]):
            out[l] = out[l] + int(G[l, lp]) * pieces[lp]
    return out % p


def grid(X, r, q) -> list:
    """X (Python ints) zero-padded and cut into its r x q grid of blocks, row-major."""
    X = as_objects(X)
    rows, cols = -(-X.shape[0] // r), -(-X.shape[1] // q)
    padded = np.zeros((rows * r, cols * q), dtype=object)
    padded[:X.shape[0], :X.shape[1]] = X
    return [padded[u * rows:(u + 1) * rows, v * cols:(v + 1) * cols]
            for u in range(r) for v in range(q)]


def coefficients_drawn(F, n, m, rng) -> list:
    return [F.random((m, m), rng) for _ in range(n)] if m else None


def reference_product(code, A, B, m, seed) -> list:
    """Worker by worker: [(operand 0 (or its (m, ...) piece blocks), operand 1), ...] and
    the piece coefficients, from seed as documented (A's masks, B's masks, then G_0..)."""
    F, p = code.F, code.F.p
    rng = np.random.default_rng(seed)
    operands = [(A, code.a_exponents, code.a_masks)]
    if B is not None:
        operands.append((B, code.b_exponents, code.b_masks))
    grids = []
    for X, exponents, masks in operands:
        blocks = grid(X, *exponents.shape)
        if masks:
            noise = as_objects(F.random(len(masks) * blocks[0].size, rng))
            blocks += list(noise.reshape((len(masks),) + blocks[0].shape))
        grids.append(([*exponents.flat, *masks], blocks))
    Gs = coefficients_drawn(F, code.n_workers, m, rng)
    shares = []
    for i, a in enumerate(code.points.tolist()):
        share = []
        for o, (exponents, blocks) in enumerate(grids):
            coded = sum(pow(a, int(e), p) * b for e, b in zip(exponents, blocks)) % p
            share.append(piece_blocks(p, Gs[i], coded) if m and o == 0 else coded)
        shares.append(share)
    return shares, Gs


def lagrange(p, betas, a) -> list:
    """The Lagrange basis at betas, evaluated at a, in Python ints."""
    out = []
    for j, bj in enumerate(betas):
        num = den = 1
        for l, bl in enumerate(betas):
            if l != j:
                num, den = num * (a - bl) % p, den * (bj - bl) % p
        out.append(num * pow(den, p - 2, p) % p)
    return out


def reference_lcc(code, X, m, seed) -> list:
    F, p = code.F, code.F.p
    rng = np.random.default_rng(seed)
    shape = np.shape(X[0])
    size = int(np.prod(shape)) * code.t
    masks = list(as_objects(F.random(size, rng)).reshape((code.t,) + shape))
    blocks = [as_objects(x) for x in X] + masks
    Gs = coefficients_drawn(F, code.n_workers, m, rng)
    shares = []
    for i, a in enumerate(code.points.tolist()):
        weights = lagrange(p, code.betas.tolist(), a)
        coded = sum(w * b for w, b in zip(weights, blocks)) % p
        shares.append([piece_blocks(p, Gs[i], coded) if m else coded])
    return shares, Gs


def assert_shares(F, encoding, expected, Gs, m):
    """The encoding's shares are the expected ones exactly, PieceShares with the Gs."""
    assert len(encoding) == len(expected) and encoding.pieces == m
    for i, (share, want) in enumerate(zip(encoding, expected)):
        if m is None:
            assert isinstance(share, tuple) and len(share) == len(want)
            for got, w in zip(share, want):
                assert_field_array(F, got, w)
            continue
        assert isinstance(share, PieceShare)
        assert (share.worker, share.operand) == (i, 0)
        assert_field_array(F, share.coeffs, Gs[i])
        assert_field_array(F, share.blocks, want[0])
        assert len(share.rest) == len(want) - 1
        for got, w in zip(share.rest, want[1:]):
            assert_field_array(F, got, w)


def product_cases(F):
    """(name, code, A, B): the matrix-product codes, with shapes that pad unevenly, one
    point per worker and several, 1 x 1 blocks and a code of one share."""
    p, small = F.p, F.p < 100
    cases = [
        ("polynomial N=6", PolynomialCode(F, 2, 2, 6), rand(p, (9, 5), 1), rand(p, (5, 7), 2)),
        ("polynomial N=12", PolynomialCode(F, 2, 2, 12), rand(p, (8, 3), 3), rand(p, (3, 6), 4)),
        ("polynomial 1x1 blocks", PolynomialCode(F, 2, 2, 5), rand(p, (2, 1), 5),
         rand(p, (1, 2), 6)),
        ("one share", PolynomialCode(F, 1, 1, 1), rand(p, (1, 1), 7), rand(p, (1, 1), 8)),
        ("matdot", MatDot(F, 2, 5), rand(p, (5, 6), 9), rand(p, (6, 3), 10)),
        ("mds", MDS(F, 3, 7), rand(p, (10, 4), 11), None),
        ("mds vector rows", MDS(F, 2, 4), rand(p, (3, 1), 12), None),
        ("entangled", EntangledPolynomialCode(F, 2, 2, 1, 6), rand(p, (5, 4), 13),
         rand(p, (4, 3), 14)),
    ]
    if not small:       # masks: R distinct sums need a larger field
        cases += [
            ("gasp", GASP(F, 2, 2, 1, 9), rand(p, (6, 4), 15), rand(p, (4, 5), 16)),
            ("masked product", ProductCode(F, 9, [[0], [1]], [[0, 2]], a_masks=[4],
                                           b_masks=[5]), rand(p, (7, 3), 17),
             rand(p, (3, 4), 18)),
        ]
    return cases


@pytest.mark.parametrize("p", ENCODE_PRIMES, ids=prime_id)
def test_product_codes_encode_as_one_worker_at_a_time(p):
    """Every product code's shares, with pieces or not, equal the reference."""
    F = ffcode.GF(p)
    for _, code, A, B in product_cases(F):
        data = (A,) if B is None else (A, B)
        for m in PIECES:
            for seed in (0, 5):
                expected, Gs = reference_product(code, A, B, m, seed)
                encoding = code.encode(*data, pieces=m, seed=seed)
                assert_shares(F, encoding, expected, Gs, m)


def times_W(F, X):
    return F.matmul(X, rand(F.p, (X.shape[1], 2), 19))


def identity(F, X):
    return X


@pytest.mark.parametrize("p", ENCODE_PRIMES[1:], ids=prime_id)
@pytest.mark.parametrize("k, t, shape, f", [(2, 0, (5, 3), times_W), (2, 1, (5, 3), times_W),
                                            (3, 2, (4, 3), times_W), (1, 1, (1, 1), times_W),
                                            (2, 1, (7,), identity)],
                         ids=["t=0", "t=1", "k=3 t=2", "1x1", "vectors"])
def test_lcc_encodes_as_one_worker_at_a_time(p, k, t, shape, f):
    """LCC's shares (the Lagrange combination of the blocks and masks), with pieces or not,
    equal the reference."""
    F = ffcode.GF(p)
    code = LCC(F, k, t, f, 1, k + t + 3, row_linear=True)
    X = [rand(p, shape, 20 + j) for j in range(k)]
    for m in PIECES:
        expected, Gs = reference_lcc(code, X, m, 3)
        assert_shares(F, code.encode(X, pieces=m, seed=3), expected, Gs, m)


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
def test_make_encoding_combines_pieces_the_same_way(p):
    """A code that builds plain shares and lets make_encoding draw and combine the pieces
    (as codes defined outside ffcode do) gets the same PieceShares as encode's one product:
    the coefficients are drawn in the same order from the same seed."""
    F = ffcode.GF(p)
    code = PolynomialCode(F, 2, 2, 6)
    A, B = rand(p, (9, 5), 1), rand(p, (5, 7), 2)
    plain = code.encode(A, B)
    for m in (1, 3, 4, 8):
        late = code.make_encoding(list(plain), plain.shapes, plain.blocks, m, 4)
        fused = code.encode(A, B, pieces=m, seed=4)
        for x, y in zip(late, fused):
            assert np.array_equal(x.coeffs, y.coeffs) and np.array_equal(x.blocks, y.blocks)
            assert x.blocks.shape == y.blocks.shape
            assert all(np.array_equal(u, v) for u, v in zip(x.rest, y.rest))


def reference_rows(p, C, blocks, Gs):
    coded = [sum(int(c) * as_objects(b) for c, b in zip(row, blocks)) % p for row in C]
    if Gs is None:
        return np.array(coded, dtype=object)
    return np.array([piece_blocks(p, G, y) for G, y in zip(Gs, coded)], dtype=object)


@pytest.mark.parametrize("p", [65521, 2**31 - 1, 4294967291, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("path", ["fused", "two products"])
@pytest.mark.parametrize("K, m, shape", [(1, 1, (1,)), (2, 4, (9, 5)), (3, 4, (4, 2, 3)),
                                         (2, 8, (3, 4)), (5, 2, (6, 1)), (1, 8, (17, 3))],
                         ids=str)
def test_encode_rows_both_paths(monkeypatch, p, path, K, m, shape):
    """encode_rows gives the same exact blocks through the fused product and through two
    products per worker (with a scratch buffer whose padding rows must stay zero), by
    rowcomb or (m = 8 near 2**32) matmul_into."""
    monkeypatch.setattr(base, "FUSED_EXTRA", 10**6 if path == "fused" else -10**6)
    F = ffcode.GF(p)
    N = 5
    C = rand(p, (N, K), 1)
    blocks = [rand(p, shape, 2 + j) for j in range(K)]
    Gs = [rand(p, (m, m), 10 + i) for i in range(N)]
    rows = -(-shape[0] // m)
    got = base.encode_rows(F, C, blocks, Gs)
    assert got.shape == (N, m, rows) + shape[1:]
    assert_field_array(F, got, reference_rows(p, C, blocks, Gs))
    plain = base.encode_rows(F, C, blocks)
    assert_field_array(F, plain, reference_rows(p, C, blocks, None))


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("path", ["fused", "two products"])
def test_encode_rows_shared_among_threads(monkeypatch, p, path):
    """Products large enough to be shared among the cores (by output rows, or one row's
    columns) give what one thread gives, and the reference."""
    monkeypatch.setattr(base, "FUSED_EXTRA", 10**6 if path == "fused" else -10**6)
    F = ffcode.GF(p)
    N, K, m, shape = 6, 2, 4, (201, 700)            # rows not a multiple of m: padded
    C = rand(p, (N, K), 1)
    blocks = [rand(p, shape, 2 + j) for j in range(K)]
    Gs = [rand(p, (m, m), 10 + i) for i in range(N)]
    size, piece = shape[0] * shape[1], -(-shape[0] // m) * shape[1]
    assert min(size * K, m * piece * m) >= ffcode._matmul.PARALLEL_WORK     # every product
    shared = base.encode_rows(F, C, blocks, Gs)
    plain = base.encode_rows(F, C, blocks)
    with _blas.one_thread:
        assert np.array_equal(base.encode_rows(F, C, blocks, Gs), shared)
        assert np.array_equal(base.encode_rows(F, C, blocks), plain)
    expected = reference_rows(p, C, blocks, None)
    assert_field_array(F, plain, expected)
    for i in range(N):
        assert_field_array(F, shared[i], piece_blocks(p, Gs[i], expected[i]))


def test_encode_rows_refuses_what_does_not_fit():
    F = ffcode.GF(65521)
    with pytest.raises(ValueError, match="0-d"):
        base.encode_rows(F, rand(F.p, (3, 2), 1), [np.uint32(1), np.uint32(2)],
                         [rand(F.p, (2, 2), i) for i in range(3)])
    with pytest.raises(ValueError, match="blocks"):
        base.encode_rows(F, rand(F.p, (3, 2), 1), [rand(F.p, (2, 2), 2)])
    with pytest.raises(ValueError, match="equally large"):
        base.encode_rows(F, rand(F.p, (3, 2), 1), [rand(F.p, (2, 2), 2), rand(F.p, (2, 3), 3)])
    with pytest.raises(ValueError, match="workers"):
        base.encode_rows(F, rand(F.p, (3, 1), 1), [rand(F.p, (2, 2), 2)],
                         [rand(F.p, (2, 2), 3)])


def test_empty_blocks_encode():
    """Data without rows or columns gives shares of the padded empty shapes."""
    F = ffcode.GF(65521)
    code = PolynomialCode(F, 2, 2, 6)
    A, B = np.zeros((0, 3), F.dtype), np.zeros((3, 4), F.dtype)
    for m in (None, 2):
        expected, Gs = reference_product(code, A, B, m, 1)
        assert_shares(F, code.encode(A, B, pieces=m, seed=1), expected, Gs, m)
    A, B = np.zeros((4, 0), F.dtype), np.zeros((0, 4), F.dtype)
    expected, Gs = reference_product(code, A, B, 2, 1)
    assert_shares(F, code.encode(A, B, pieces=2, seed=1), expected, Gs, 2)


@pytest.mark.parametrize("m", [2, 4])
def test_unseeded_pieces_decode_exactly(m):
    """Without a seed (masks from the CSPRNG, fresh coefficients) the shares are not
    reproducible but still decode exactly from m R packets of any workers."""
    F = ffcode.GF(2**31 - 1)
    A, B = rand(F.p, (6, 4), 1), rand(F.p, (4, 5), 2)
    expected = as_objects(F.matmul(A, B))
    for code in (GASP(F, 2, 2, 1, 9), PolynomialCode(F, 2, 2, 12)):
        encoding = code.encode(A, B, pieces=m)
        decoder = Decoder(encoding, m)
        for i in reversed(range(code.n_workers)):
            for packet in code.compute_pieces(encoding[i]):
                decoder.add(packet)
            if decoder.complete:
                break
        assert_field_array(F, decoder.result(), expected)


@pytest.mark.parametrize("scheme", ["classic", "compfs"])
@pytest.mark.parametrize("shares", [1, 2])
def test_layout_and_plan_carry_the_shares(scheme, shares):
    """The main job's layout (PolynomialCode a = b = 2, six workers, one or two shares each,
    m = 4), smaller: every task carries its worker's shares in order, exactly the
    reference's arrays (for compfs: the piece blocks, their coefficients, then B's share)."""
    F = ffcode.GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, 6 * shares)
    A, B = rand(F.p, (64, 48), 1), rand(F.p, (48, 40), 2)
    assignment = allocation.uniform(code.n_workers, 6)
    plan = Plan(code, (A, B), Options(scheme=scheme, pieces=4, seed=7), assignment)
    m = 4 if scheme == "compfs" else None
    expected, Gs = reference_product(code, A, B, m, 7)
    assert_shares(F, plan.layout.encoding, expected, Gs, m)
    layout = Layout(code, (A, B), Scheme(scheme), 4, 7, assignment)
    assert layout.nbytes == plan.layout.nbytes
    assert plan.arguments == []                     # a task carries its shares alone
    for worker, (task, carried) in enumerate(plan.tasks):
        arrays = []
        for k in assignment[worker]:
            arrays += [expected[k][0], Gs[k], expected[k][1]] if m else expected[k]
        assert task.payload.shares == len(assignment[worker]) and len(carried) == len(arrays)
        for got, want in zip(carried, arrays):
            assert_field_array(F, got, want)
