"""The rank-tracking Decoder: m·R independent packets from any workers decode to exactly what
code.decode returns; malformed packets raise and change nothing; non-innovative packets are
dropped without their payloads being read."""
import dataclasses

import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, Decoder, Packet, PolynomialCode, piece_packets

from codecases import Case, gram, times_W
from helpers import assert_field_array, assert_output, layouts, obj_matmul, prime_id, rand

DECODER_PRIMES = [65521, 2**31 - 1, 2**61 - 1]


CASES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "ProductCode sparse",
         "LCC t=0", "LCC t=1", "LCC gram"]


def product_job(p, a_shape, b_shape, a, b, n_workers, m, seed):
    """A PolynomialCode(a, b) product A @ B at full speed in m pieces: (F, A, B, shares,
    packets), packets[w] all of worker w's."""
    F = ffcode.GF(p)
    A, B = rand(p, a_shape, 1), rand(p, b_shape, 2)
    code = PolynomialCode(F, a, b, n_workers)
    shares = code.encode(A, B, pieces=m, seed=seed)
    return F, A, B, shares, [list(code.compute_pieces(s)) for s in shares]


def budgets(rng, N, m, need, all_or_one=False) -> list:
    """How many packets each of N workers sends (at most m), at least need in all."""
    b = (rng.choice([1, m], N) if all_or_one else rng.integers(0, m + 1, N)).tolist()
    while sum(b) < need:
        b[rng.choice([i for i in range(N) if b[i] < m])] += 1
    return b


def arrival(rng, m, need, N, strategy) -> list:
    """(worker, index) pairs in arrival order; every worker sends packets 0, 1, ... in turn.
    random: random budgets, random interleaving; all or one: each worker sends all its m
    packets or just one, interleaved; fastest first: whole workers one after another;
    round robin: packet j of every worker in turn."""
    b = budgets(rng, N, m, need, all_or_one=strategy == "all or one")
    if strategy in ("random", "all or one"):
        senders = rng.permutation([i for i in range(N) for _ in range(b[i])])
        sent = [0] * N
        order = []
        for w in senders.tolist():
            order.append((w, sent[w]))
            sent[w] += 1
        return order
    workers = rng.permutation(N).tolist()
    if strategy == "fastest first":
        return [(w, j) for w in workers for j in range(b[w])]
    return [(w, j) for j in range(m) for w in workers if j < b[w]]


STRATEGIES = ["random", "all or one", "fastest first", "round robin"]


def feed(decoder, packets, order) -> list:
    """Adds packets[w][j] for (w, j) in order until the decoder completes; what add returned
    for each."""
    flags = []
    for w, j in order:
        if decoder.complete:
            break
        flags.append(decoder.add(packets[w][j]))
    return flags


# -- exact results ---------------------------------------------------------------------------


MODES = [(name, mode) for name in CASES for mode in ("full speed", "random", "systematic")
         if not (name == "LCC gram" and mode == "full speed")]


@pytest.mark.parametrize("p", DECODER_PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("name, mode", MODES, ids=[f"{n}, {m}" for n, m in MODES])
def test_decodes_exactly(name, mode, m, p):
    """Exactly m·R innovative packets give exactly code.decode's output (and the true one):
    full-speed and random packets from a random mix of workers, systematic packets from R
    whole workers; the share rows (5 or 9) do not divide by every m."""
    F = ffcode.GF(p)
    case = Case(name, F, seed=m)
    code = case.code
    R, N = code.recovery_threshold, code.n_workers
    rng = np.random.default_rng((m, p % 1000, len(name)))
    decoder = case.decoder(m)
    assert decoder.needed == m * R and decoder.rank == 0 and not decoder.complete
    if mode == "systematic":
        packets = case.finished(m, seed=m, systematic=True)
        workers = rng.choice(N, R, replace=False).tolist()
        order = [(w, j) for j in range(m) for w in workers]
    else:
        packets = case.full_speed(m, m) if mode == "full speed" else case.finished(m, m)
        order = arrival(rng, m, m * R, N, "random")
    flags = feed(decoder, packets, order)
    assert flags == [True] * (m * R)
    assert decoder.complete and decoder.rank == m * R and decoder.received == m * R
    case.check(decoder.result())
    case.check(decoder.result())


@pytest.mark.parametrize("p", DECODER_PRIMES, ids=prime_id)
@pytest.mark.parametrize("name", CASES)
def test_classic_whole_results(name, p):
    """m = 1 with whole local results as payloads (coefficient [1]) is classic decoding."""
    F = ffcode.GF(p)
    case = Case(name, F, seed=5)
    R, N = case.code.recovery_threshold, case.code.n_workers
    decoder = case.decoder(1)
    workers = np.random.default_rng(p % 997).choice(N, R, replace=False).tolist()
    for w in workers:
        assert decoder.add(Packet(w, 0, np.ones(1, F.dtype), case.results[w]))
    assert decoder.complete
    case.check(decoder.result())


@pytest.mark.parametrize("p", [2, 3, 1048573, 4294967291, 9223372036854775783], ids=prime_id)
def test_other_primes(p):
    """The tiny fields (systematic packets; GF(2) and GF(3) hold one and two workers), a
    32-bit prime above 2**31 and the largest prime below 2**63."""
    F = ffcode.GF(p)
    A, x = rand(p, (7, 5), 1), rand(p, (5, 2), 2)
    if p < 5:
        code, m = MDS(F, p - 1, p - 1), 3
        shares = code.encode(A)
        results = [code.compute(s, x) for s in shares]
        packets = [list(piece_packets(F, y, m, i, systematic=True))
                   for i, y in enumerate(results)]
    else:
        code, m = MDS(F, 3, 5), 3
        shares = code.encode(A, pieces=m, seed=3)
        packets = [list(code.compute_pieces(s, x)) for s in shares]
    decoder = Decoder(shares, m)
    order = arrival(np.random.default_rng(p % 1000), m, decoder.needed, code.n_workers,
                    "round robin")
    assert feed(decoder, packets, order) == [True] * decoder.needed
    assert_field_array(F, decoder.result(), obj_matmul(p, A, x))


@pytest.mark.parametrize("p", [2**31 - 1, 4294967291, 2**61 - 1], ids=prime_id)
def test_large_payloads(p):
    """Payloads of several thousand elements (15 x 300 pieces) decode exactly."""
    F, A, B, shares, packets = product_job(p, (60, 4), (4, 300), 2, 1, 3, m=2, seed=1)
    decoder = Decoder(shares, 2)
    for w, j in [(2, 1), (0, 0), (1, 1), (2, 0)]:
        assert decoder.add(packets[w][j])
    assert_field_array(F, decoder.result(), obj_matmul(p, A, B))


@pytest.mark.parametrize("shape", ["no columns", "no rows"])
def test_empty_results(shape):
    """Local results with no columns (MDS, x of shape (4, 0)) or no rows (row-linear LCC of
    0-row blocks) decode to empty outputs, exactly as code.decode does."""
    F = ffcode.GF(65521)
    if shape == "no columns":
        A, x = rand(F.p, (7, 4), 1), rand(F.p, (4, 0), 2)
        code, data, args, expected = MDS(F, 2, 3), (A,), (x,), np.zeros((7, 0), dtype=object)
    else:
        X = [np.zeros((0, 3), F.dtype)] * 2
        code = LCC(F, 2, 0, times_W, 1, 3, row_linear=True)
        data, args, expected = (X,), (), [np.zeros((0, 2), dtype=object)] * 2
    whole = code.encode(*data, seed=1)
    reference = code.decode(whole, {i: code.compute(s, *args) for i, s in enumerate(whole)})
    shares = code.encode(*data, pieces=2, seed=1)
    packets = [list(code.compute_pieces(s, *args)) for s in shares]
    decoder = Decoder(shares, 2)
    for w, j in [(0, 0), (1, 0), (2, 0), (2, 1)]:
        assert decoder.add(packets[w][j])
    got = decoder.result()
    for want in (reference, expected):
        assert_output(F, got, want)


# -- how many packets it takes -----------------------------------------------------------------


def tiny_trial(F, trial, strategy, spare=0):
    """The encoding of an MDS code with a one-column share and a random shape, its
    full-speed packets in a random arrival order of the strategy (spare packets beyond m·R
    when the workers have them), and the exact output."""
    p = F.p
    rng = np.random.default_rng((p, trial))
    k, m = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    N = k + int(rng.integers(1, 3)) + spare
    points = rng.choice(np.arange(1, min(p, 10**6)), N, replace=False)
    code = MDS(F, k, N, points=points)
    A, x = rand(p, (int(rng.integers(1, 2 * k * m + 2)), 1), (trial, 1)), rand(p, 1, (trial, 2))
    shares = code.encode(A, pieces=m, seed=trial)
    packets = [list(code.compute_pieces(s, x)) for s in shares]
    order = arrival(rng, m, m * k + spare, N, strategy)
    return shares, m, packets, order, obj_matmul(p, A, x[:, None])[:, 0]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_completes_at_exactly_m_R(strategy):
    """With p = 2**31 - 1, packets from any mix of workers (each sending at most m) are all
    innovative until the decoder completes at exactly m·R packets; later ones are not."""
    F = ffcode.GF(2**31 - 1)
    failures = []
    for trial in range(75):
        shares, m, packets, order, expected = tiny_trial(F, trial, strategy)
        decoder = Decoder(shares, m)
        flags = feed(decoder, packets, order)
        if flags != [True] * decoder.needed:
            failures.append((trial, m, shares.code.recovery_threshold, flags))
            continue
        assert_field_array(F, decoder.result(), expected)
        for w, j in order[len(flags):]:
            assert decoder.add(packets[w][j]) is False
        assert decoder.received == len(order)
    assert not failures, failures


def test_small_field_needs_few_extra_packets():
    """With p = 257 the decoder completes after at most 3 packets beyond m·R in every trial,
    and after less than half a packet more on average."""
    F = ffcode.GF(257)
    extra = []
    for trial in range(300):
        shares, m, packets, order, expected = tiny_trial(F, trial, STRATEGIES[trial % 4],
                                                         spare=3)
        decoder = Decoder(shares, m)
        flags = feed(decoder, packets, order)
        assert decoder.complete, (trial, decoder)
        assert_field_array(F, decoder.result(), expected)
        extra.append(len(flags) - decoder.needed)
    assert min(extra) >= 0
    assert max(extra) <= 3, extra
    assert np.mean(extra) < 0.5, np.mean(extra)


@pytest.mark.parametrize("n_workers, order, systematic_needs", [
    # workers 0 and 1 send piece 0, so worker 2's piece 0 is already known
    (3, [(0, 0), (1, 0), (2, 0), (2, 1), (0, 1), (1, 1)], 5),
    # four workers all send piece 0 first: systematic is stuck at rank R = 2
    (4, [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)], 6),
], ids=["3 workers", "4 workers"])
def test_systematic_needs_more_packets(n_workers, order, systematic_needs):
    """R = 2, m = 2: on this arrival order raw pieces need more packets than m·R = 4, which
    random combinations of the same results (and computation at full speed) need exactly."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    A, x = rand(p, (8, 3), 1), rand(p, 3, 2)
    code = MDS(F, 2, n_workers)
    whole = code.encode(A)
    results = [code.compute(s, x) for s in whole]
    expected = obj_matmul(p, A, x[:, None])[:, 0]
    counts = {}
    for kind in ("systematic", "random", "full speed"):
        if kind == "full speed":
            shares = code.encode(A, pieces=2, seed=4)
            packets = [list(code.compute_pieces(s, x)) for s in shares]
        else:
            shares = whole
            packets = [list(piece_packets(F, y, 2, i, seed=(4, i), systematic=kind != "random"))
                       for i, y in enumerate(results)]
        decoder = Decoder(shares, 2)
        counts[kind] = len(feed(decoder, packets, order))
        assert decoder.complete, kind
        assert_field_array(F, decoder.result(), expected)
    assert counts == {"systematic": systematic_needs, "random": 4, "full speed": 4}


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("delivered", [
    {0: [0], 1: [0, 1], 2: [0, 1, 2], 3: [0], 4: [0, 1], 5: [0, 1, 2]},
    {6: [0, 1, 2], 5: [0, 1, 2], 4: [0, 1, 2], 3: [2], 2: [1], 1: [0]},
    {i: [0, 2] for i in range(6)},
    {0: [1], 1: [2], 2: [0, 2], 3: [1, 2], 4: [0, 1, 2], 6: [0, 1, 2]},
], ids=["1-2-3", "three whole", "two each", "scattered"])
def test_partial_workers(p, delivered):
    """PolynomialCode (R = 4, m = 3, 7 workers): full-speed packets from workers that
    deliver only some of their 3 packets, 12 in all, give A @ B exactly."""
    F, A, B, shares, packets = product_job(p, (9, 5), (5, 7), 2, 2, 7, m=3, seed=8)
    decoder = Decoder(shares, 3)
    rounds = max(len(js) for js in delivered.values())
    order = [(w, js[r]) for r in range(rounds) for w, js in delivered.items() if r < len(js)]
    assert len(order) == 12
    assert feed(decoder, packets, order) == [True] * 12
    assert decoder.complete
    assert_field_array(F, decoder.result(), obj_matmul(p, A, B))


# -- progress and construction ----------------------------------------------------------------


def test_progress():
    """rank, needed, complete and received track the packets; result() before the rank
    reaches m·R says how far it is; packets after completion are not innovative."""
    p = 2**31 - 1
    F, A, B, shares, packets = product_job(p, (9, 5), (5, 7), 2, 2, 6, m=3, seed=1)
    decoder = Decoder(shares, 3)
    assert (decoder.needed, decoder.rank, decoder.received, decoder.complete) == (12, 0, 0, False)
    with pytest.raises(ValueError, match="rank 0/12"):
        decoder.result()
    order = [(w, j) for j in range(3) for w in range(6)]
    for n, (w, j) in enumerate(order[:5], 1):
        assert decoder.add(packets[w][j])
        assert (decoder.rank, decoder.received) == (n, n)
    with pytest.raises(ValueError, match="rank 5/12"):
        decoder.result()
    assert decoder.add(packets[order[0][0]][order[0][1]]) is False      # a repeat
    assert (decoder.rank, decoder.received) == (5, 6)
    for w, j in order[5:12]:
        assert decoder.add(packets[w][j])
    assert decoder.complete and decoder.rank == 12 and decoder.received == 13
    result = decoder.result()
    assert_field_array(F, result, obj_matmul(p, A, B))
    for w, j in order[12:]:
        assert decoder.add(packets[w][j]) is False
    assert decoder.rank == 12 and decoder.received == 19
    assert_field_array(F, decoder.result(), obj_matmul(p, A, B))


def test_constructor_errors():
    """The decoder needs an encoding (what encode returned: a code, even one that encoded
    data, or a list of its shares is a TypeError), pieces >= 1 and, if given, a valid
    result_shape."""
    F = ffcode.GF(65521)
    X = [rand(F.p, (4, 3), j) for j in range(2)]
    mds = MDS(F, 2, 3)
    shares = mds.encode(rand(F.p, (5, 3), 1))
    assert Decoder(shares, 2).needed == 4
    for bad, error in [(0, ValueError), (-1, ValueError), (1.5, TypeError), (None, TypeError)]:
        with pytest.raises(error):
            Decoder(shares, bad)
    for bad in [None, "MDS", F, mds, list(shares), tuple(shares),
                LCC(F, 2, 0, times_W, 1, 3, row_linear=True)]:
        with pytest.raises(TypeError, match="encoding"):
            Decoder(bad, 2)
    lcc = LCC(F, 2, 1, gram, 2, 6)
    encoding = lcc.encode(X, seed=1)
    assert Decoder(encoding, 2).result_shape is None      # until the first packet
    for bad in [(), (-1, 4), (4, -2)]:
        with pytest.raises(ValueError):
            Decoder(encoding, 2, result_shape=bad)
    with pytest.raises(TypeError):
        Decoder(encoding, 2, result_shape=(4.0, 4))
    assert Decoder(encoding, 2, result_shape=(4, 4)).needed == 2 * lcc.recovery_threshold


def test_two_encodings_of_one_code():
    """A code is a value: two encodings of it (data of other shapes) decode side by side,
    their packets interleaved, each decoder to its own product, whichever completes first."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    code = PolynomialCode(F, 2, 1, 4)
    jobs = [(rand(p, (5, 3), 1), rand(p, (3, 4), 2)), (rand(p, (8, 2), 3), rand(p, (2, 6), 4))]
    decoders, packets = [], []
    for n, (A, B) in enumerate(jobs):
        shares = code.encode(A, B, pieces=2, seed=n)
        decoders.append(Decoder(shares, 2))
        packets.append([list(code.compute_pieces(s)) for s in shares])
    order = [(1, 3, 0), (0, 0, 0), (1, 0, 1), (0, 2, 1), (1, 2, 0), (1, 1, 1), (0, 3, 0),
             (0, 1, 1)]
    for n, w, j in order:
        assert decoders[n].add(packets[n][w][j])
    assert all(d.complete for d in decoders)
    for d, (A, B) in zip(decoders, jobs):
        assert_field_array(F, d.result(), obj_matmul(p, A, B))


# -- the shape of a local result from the first packet ------------------------------------------


def _feed_all(decoder, packets) -> None:
    for w, worker_packets in enumerate(packets):
        for packet in worker_packets:
            if decoder.complete:
                return
            decoder.add(packet)


@pytest.mark.parametrize("defer", [False, True], ids=["eager", "defer"])
@pytest.mark.parametrize("m", [1, 2, 3, 4])
@pytest.mark.parametrize("name", ["LCC gram", "LCC square"])
def test_shape_from_the_first_packet(name, m, defer):
    """An LCC whose f is not row-linear decodes without result_shape: the first innovative
    packet fixes the shape (its rows from Packet.rows, which piece_packets sets), exactly
    as with result_shape given."""
    case = Case(name, ffcode.GF(2**31 - 1), seed=m)
    decoder = Decoder(case.encoding, m, defer=defer)
    assert decoder.result_shape is None
    packets = case.finished(m, seed=m)
    assert all(pk.rows == 5 for worker in packets for pk in worker)
    _feed_all(decoder, packets)
    assert decoder.complete and decoder.result_shape == case.result_shape
    case.check(decoder.result())


def test_whole_results_need_no_rows():
    """m = 1: a packet is a whole local result, whose rows are its payload's."""
    case = Case("LCC gram", ffcode.GF(65521), seed=2)
    decoder = Decoder(case.encoding, 1)
    for w in range(case.code.recovery_threshold):
        assert decoder.add(Packet(w, 0, np.ones(1, case.F.dtype), case.results[w]))
    assert decoder.result_shape == (5, 5)
    case.check(decoder.result())


def _gram_setup(m=2):
    case = Case("LCC gram", ffcode.GF(65521), seed=3)
    return case, Decoder(case.encoding, m), case.finished(m, seed=4)


@pytest.mark.parametrize("bad, error, match", [
    (None, ValueError, r"does not say \(Packet.rows\): a piece of 3 rows comes from a "
                       r"result of 5 to 6 rows.*result_shape"),
    (7, ValueError, r"shape \(3, 5\), expected \(4, 5\).*local result of 7 rows"),
    (4, ValueError, r"shape \(3, 5\), expected \(2, 5\)"),
    (-1, ValueError, "non-negative"),
    (5.0, TypeError, "'packet rows' must be an integer"),
    (True, TypeError, "'packet rows' must be an integer"),
    ("5", TypeError, "'packet rows' must be an integer"),
], ids=["no rows", "7 rows", "4 rows", "negative", "float", "bool", "str"])
def test_first_packet_rows_checked(bad, error, match):
    """A first packet without rows (m > 1: the rows are ambiguous), with rows its piece
    does not come from, or with rows that are no count, raises and fixes nothing; the good
    packets then decode."""
    case, decoder, packets = _gram_setup()
    with pytest.raises(error, match=match):
        decoder.add(dataclasses.replace(packets[0][0], rows=bad))
    assert decoder.rank == 0 and decoder.received == 0 and decoder.result_shape is None
    _feed_all(decoder, packets)
    case.check(decoder.result())


@pytest.mark.parametrize("change, match", [
    (dict(rows=6), "claims a local result of 6 rows, expected 5"),
    (dict(rows=np.int64(6)), "claims a local result of 6 rows, expected 5"),
    (dict(rows=5.0), "'packet rows' must be an integer"),
    ("columns", r"shape \(3, 4\), expected \(3, 5\)"),
], ids=["other rows", "other rows, numpy", "float rows", "other columns"])
def test_later_packets_checked_against_the_first(change, match):
    """Once the first packet fixed the shape, a packet that claims other rows, or whose
    payload has other columns, raises and changes nothing; packets that say no rows are
    taken (the rows are known)."""
    case, decoder, packets = _gram_setup()
    assert decoder.add(packets[0][0]) and decoder.result_shape == (5, 5)
    later = packets[1][0]
    if change == "columns":
        later = dataclasses.replace(later, payload=later.payload[:, :4])
    else:
        later = dataclasses.replace(later, **change)
    with pytest.raises((ValueError, TypeError), match=match):
        decoder.add(later)
    assert decoder.rank == 1 and decoder.received == 1
    assert decoder.add(dataclasses.replace(packets[1][0], rows=None))
    assert decoder.add(dataclasses.replace(packets[1][1], rows=np.int64(5)))
    _feed_all(decoder, packets)
    case.check(decoder.result())


def test_rows_checked_when_the_code_tells_them():
    """A code that knows its local results' rows (PolynomialCode: 5 here) refuses a packet
    that claims others, before and after the first packet."""
    case = Case("PolynomialCode", ffcode.GF(65521), seed=1)
    decoder = Decoder(case.encoding, 2)
    packets = case.finished(2, seed=1)
    for before in (0, 1):
        with pytest.raises(ValueError, match="claims a local result of 6 rows, expected 5"):
            decoder.add(dataclasses.replace(packets[2][0], rows=6))
        assert decoder.rank == before
        assert decoder.add(packets[before][0])
    _feed_all(decoder, packets)
    case.check(decoder.result())


# -- malformed and non-innovative packets -------------------------------------------------------


P_SMALL = 65521


def _with(packet, **changes):
    return dataclasses.replace(packet, **changes)


def _set_first(a, value, dtype):
    a = a.astype(dtype)
    a.reshape(-1)[0] = value
    return a


MALFORMED = {
    "tuple": (lambda pk: (pk.worker, pk.index, pk.coeffs, pk.payload), TypeError),
    "None": (lambda pk: None, TypeError),
    "unknown worker": (lambda pk: _with(pk, worker=4), ValueError),
    "negative worker": (lambda pk: _with(pk, worker=-1), ValueError),
    "bool worker": (lambda pk: _with(pk, worker=True), TypeError),
    "float worker": (lambda pk: _with(pk, worker=float(pk.worker)), TypeError),
    "negative index": (lambda pk: _with(pk, index=-1), ValueError),
    "float index": (lambda pk: _with(pk, index=0.0), TypeError),
    "bool index": (lambda pk: _with(pk, index=False), TypeError),
    "short coeffs": (lambda pk: _with(pk, coeffs=pk.coeffs[:1]), ValueError),
    "long coeffs": (lambda pk: _with(pk, coeffs=np.append(pk.coeffs, 1)), ValueError),
    "2-D coeffs": (lambda pk: _with(pk, coeffs=pk.coeffs[None]), ValueError),
    "coeffs >= p": (lambda pk: _with(pk, coeffs=_set_first(pk.coeffs, P_SMALL, np.uint64)),
                    ValueError),
    "coeffs >= p, field dtype": (lambda pk: _with(pk, coeffs=_set_first(
        pk.coeffs, P_SMALL, pk.coeffs.dtype)), ValueError),
    "negative coeffs": (lambda pk: _with(pk, coeffs=_set_first(pk.coeffs, -1, np.int64)),
                        ValueError),
    "float coeffs": (lambda pk: _with(pk, coeffs=pk.coeffs.astype(float)), TypeError),
    "list payload": (lambda pk: _with(pk, payload=pk.payload.tolist()), TypeError),
    "float payload": (lambda pk: _with(pk, payload=pk.payload.astype(float)), TypeError),
    "0-d payload": (lambda pk: _with(pk, payload=np.array(1, pk.payload.dtype)), ValueError),
    "extra row": (lambda pk: _with(pk, payload=np.vstack([pk.payload, pk.payload[:1]])),
                  ValueError),
    "missing column": (lambda pk: _with(pk, payload=pk.payload[:, :-1]), ValueError),
    "3-D payload": (lambda pk: _with(pk, payload=pk.payload[..., None]), ValueError),
    "1-D payload": (lambda pk: _with(pk, payload=pk.payload.reshape(-1)), ValueError),
    "payload >= p": (lambda pk: _with(pk, payload=_set_first(pk.payload, P_SMALL, np.uint64)),
                     ValueError),
    "payload >= p, field dtype": (lambda pk: _with(pk, payload=_set_first(
        pk.payload, 2**32 - 1, pk.payload.dtype)), ValueError),
    "negative payload": (lambda pk: _with(pk, payload=_set_first(pk.payload, -1, np.int64)),
                         ValueError),
}


def small_setup():
    """PolynomialCode R = 2, m = 2 over GF(65521): A @ B, four full-speed packets that
    complete it (pieces of 2 x 4), and a decoder."""
    F, A, B, shares, packets = product_job(P_SMALL, (5, 3), (3, 4), 2, 1, 4, m=2, seed=2)
    good = [packets[0][0], packets[2][1], packets[3][0], packets[2][0]]
    return F, obj_matmul(P_SMALL, A, B), Decoder(shares, 2), good


@pytest.mark.parametrize("before", [0, 2], ids=lambda b: f"after {b}")
@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_packet_changes_nothing(name, before):
    """A malformed packet (into an empty decoder or one of rank 2) raises and leaves the
    decoder as it was: same rank, its (worker, index) still free, and the good packets that
    follow still decode exactly."""
    make, error = MALFORMED[name]
    F, expected, decoder, good = small_setup()
    for packet in good[:before]:
        assert decoder.add(packet)
    with pytest.raises(error):
        decoder.add(make(good[before]))
    assert decoder.rank == before and not decoder.complete
    with pytest.raises(ValueError, match=f"rank {before}/4"):
        decoder.result()
    for packet in good[before:]:
        assert decoder.add(packet)
    assert decoder.complete
    assert_field_array(F, decoder.result(), expected)


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_packet_is_not_received(name):
    """A malformed packet is not counted in ``received`` (the decoder is left unchanged)."""
    make, error = MALFORMED[name]
    _, _, decoder, good = small_setup()
    decoder.add(good[0])
    with pytest.raises(error):
        decoder.add(make(good[1]))
    assert decoder.received == 1


def test_non_innovative_payload_is_not_read():
    """Repeats, packets in the span and packets after completion are dropped unread: their
    payload elements may be anything (>= p, negative); only the type and shape are checked."""
    F, expected, decoder, good = small_setup()
    junk = [np.full((2, 4), P_SMALL, np.uint64), np.full((2, 4), 2**64 - 1, np.uint64),
            np.full((2, 4), -5, np.int64)]
    assert decoder.add(good[1]) and decoder.add(good[3])    # both packets of worker 2
    for n, payload in enumerate(junk):
        coeffs = F.random(2, n)
        assert decoder.add(Packet(2, 7 + n, coeffs, payload)) is False   # in worker 2's span
        assert decoder.add(Packet(1, 5 + n, np.zeros(2, F.dtype), payload)) is False
        assert decoder.add(Packet(2, 1, good[0].coeffs, payload)) is False  # repeated key
    assert decoder.rank == 2
    with pytest.raises(ValueError):                         # a wrong shape is always checked
        decoder.add(Packet(2, 9, F.random(2, 9), junk[0][:1]))
    with pytest.raises(TypeError):                          # and so is the dtype
        decoder.add(Packet(2, 9, F.random(2, 9), junk[0].astype(float)))
    assert decoder.add(good[0]) and decoder.add(good[2])
    assert decoder.complete
    for payload in junk:
        assert decoder.add(Packet(1, 0, F.random(2, 1), payload)) is False
    assert decoder.received == 2 + 3 * 3 + 2 + 3
    assert_field_array(F, decoder.result(), expected)


@pytest.mark.parametrize("layout", ["C", "F", "read-only", "reversed", "strided", "int64"])
def test_packet_layouts_and_dtypes(layout):
    """Payloads and coefficients in any memory layout or integer dtype, with numpy integer
    worker and index numbers, decode the same."""
    F, expected, decoder, good = small_setup()
    for n, pk in enumerate(good):
        if layout == "int64":
            coeffs, payload = pk.coeffs.astype(np.int64), pk.payload.astype(np.int64)
        else:
            coeffs, payload = layouts(pk.coeffs, n)[layout], layouts(pk.payload, n)[layout]
        assert decoder.add(Packet(np.int64(pk.worker), np.uint8(pk.index), coeffs, payload))
    assert_field_array(F, decoder.result(), expected)


def test_repeated_key_is_not_innovative():
    """A second packet with the same (worker, index) is dropped even when its coefficients
    would be new, whether the first one was innovative or not."""
    F, expected, decoder, good = small_setup()
    assert decoder.add(good[1])                             # worker 2, index 1
    assert decoder.add(_with(good[3], index=1)) is False    # worker 2, index 0's contents
    assert decoder.add(_with(good[0], coeffs=np.zeros(2, F.dtype))) is False
    assert decoder.add(good[0]) is False                    # worker 0, index 0 again
    assert decoder.rank == 1 and decoder.received == 4
    for packet in (good[3], _with(good[0], index=1), good[2]):
        assert decoder.add(packet)
    assert_field_array(F, decoder.result(), expected)
