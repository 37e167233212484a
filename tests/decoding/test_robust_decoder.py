"""RobustDecoder: packets of row pieces from workers of whom up to A may be wrong. It completes
as soon as removing the fewest (at most A) workers leaves packets that agree and have full
rank with any A more removed; then the output is exactly code.decode's and ``wrong`` names
exactly the workers whose kept packets were wrong. With more wrong workers whose errors are
independent it never decodes a wrong output (colluding ones can forge one: documented)."""
import dataclasses
import functools
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ffcode import GF, MDS, Packet, piece_packets
from ffcode.decoding.robust import RobustDecoder

from codecases import Case
from helpers import assert_field_array, obj_matmul, prime_id, rand

PRIMES = [257, 65521, 2**31 - 1, 2**61 - 1]
GENERIC = 2**31 - 1     # from here on random packets are independent whenever they can be
NAMES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "LCC t=0", "LCC t=1",
         "LCC gram", "ProductCode sparse"]          # every case with R + 2 <= N (A = 1)
SPOILS = ["random", "one packet", "one element", "lying coeffs"]
STRATEGIES = ["interleaved", "round robin", "fastest first", "wrong first", "wrong last"]


@functools.lru_cache(maxsize=None)
def case(name, p, seed=0) -> Case:
    return Case(name, GF(p), seed)


def mds_a2(p):
    """A case for A = 2: MDS with R = 2 and N = 7 >= R + 2A, and its exact output."""
    F = GF(p)
    A, x = rand(p, (7, 3), 1), rand(p, (3, 2), 2)
    code = MDS(F, 2, 7)
    expected = obj_matmul(p, A, x)
    encoding = code.encode(A)
    return SimpleNamespace(F=F, code=code, encoding=encoding, result_shape=None,
                           results=[code.compute(s, x) for s in encoding],
                           check=lambda got: assert_field_array(F, got, expected))


# -- packets, arrival orders and the expected outcome ------------------------------------------


def off_by_one(F, y, rng):
    """y with one element off by a random nonzero amount: workers spoiled so err
    independently (the same +1 at the same place could, for some points, form a codeword:
    the collusion no decoder can see)."""
    y = y.copy()
    k = int(rng.integers(y.size))
    y.flat[k] = F.add(y.flat[k], int(rng.integers(1, F.p)))
    return y


def combination(F, pieces, coeffs):
    """sum_l coeffs[l] * pieces[l]: what a packet with these coefficients must carry."""
    m = pieces.shape[0]
    return F.matmul(coeffs[None, :], pieces.reshape(m, -1)).reshape(pieces.shape[1:])


def make_packets(setup, m, seed, spoiled=(), how="random", extra=0):
    """(packets, wrong): per worker, its m + extra packets (random combinations of the m row
    pieces of its local result, from piece_packets, indices 0, 1, ...), those of the
    ``spoiled`` workers spoiled as ``how`` says (random payloads; one element of one packet
    off by one; one element of the local result off by one before splitting; random
    coefficients claimed for honest payloads); and the (worker, index) of every packet
    whose payload is not the combination of the true pieces its coefficients claim."""
    F, rng = setup.F, np.random.default_rng((seed, 999))     # not a seed of piece_packets
    packets, wrong = [], set()
    for w, y in enumerate(setup.results):
        bad = w in spoiled
        sent = off_by_one(F, y, rng) if bad and how == "one element" else y
        mine = []
        for batch in range(-(-(m + extra) // m)):
            for q in piece_packets(F, sent, m, w, seed=(seed, w, batch)):
                mine.append(dataclasses.replace(q, index=len(mine)))
        mine = mine[:m + extra]
        if bad and how == "random":
            mine = [dataclasses.replace(q, payload=F.random(q.payload.shape, rng)) for q in mine]
        elif bad and how == "one packet":
            k = int(rng.integers(len(mine)))
            mine[k] = dataclasses.replace(mine[k], payload=off_by_one(F, mine[k].payload, rng))
        elif bad and how == "lying coeffs":
            mine = [dataclasses.replace(q, coeffs=F.random(m, rng)) for q in mine]
        truth = np.stack([q.payload for q in piece_packets(F, y, m, w, systematic=True)])
        wrong |= {(w, q.index) for q in mine
                  if not np.array_equal(q.payload, combination(F, truth, q.coeffs))}
        packets.append(mine)
    return packets, wrong


def budgets(rng, N, m, R, A, spoiled=(), kind="whole"):
    """How many packets each worker sends: all m ("whole"), a random 1..m ("stragglers"),
    or m or 1 ("all or one", as at full speed), topped up until the workers not spoiled
    alone can decode with any A of them removed."""
    if kind == "whole":
        return [m] * N
    b = (rng.choice([1, m], N) if kind == "all or one" else rng.integers(1, m + 1, N)).tolist()
    honest = [w for w in range(N) if w not in spoiled]
    while least_left([b[w] for w in honest], A) < m * R:
        w = int(rng.choice([w for w in honest if b[w] < m]))
        b[w] = m if kind == "all or one" else b[w] + 1
    return b


def arrival(rng, sends, strategy, spoiled=()) -> list:
    """(worker, index) pairs in arrival order, worker w sending its packets 0..sends[w]-1
    in turn: randomly interleaved; packet j of every worker in turn; whole workers one
    after another; or the spoiled workers' packets before or after all the others."""
    workers = rng.permutation(len(sends)).tolist()
    if strategy == "round robin":
        return [(w, j) for j in range(max(sends)) for w in workers if j < sends[w]]
    if strategy == "fastest first":
        return [(w, j) for w in workers for j in range(sends[w])]

    def interleave(ws):
        slots, sent, order = [w for w in ws for _ in range(sends[w])], Counter(), []
        for w in rng.permutation(slots).tolist() if slots else []:
            order.append((w, sent[w]))
            sent[w] += 1
        return order

    bad, good = [w for w in workers if w in spoiled], [w for w in workers if w not in spoiled]
    if strategy == "wrong first":
        return interleave(bad) + interleave(good)
    if strategy == "wrong last":
        return interleave(good) + interleave(bad)
    return interleave(workers)


def least_left(counts, A) -> int:
    """Packets left after removing the A workers with most."""
    counts = sorted(counts)
    return sum(counts[:max(len(counts) - A, 0)])


def expected_completion(log, wrong, m, R, A):
    """The number of packets after which the decoder must complete when the packets are in
    general position, or None if more than A workers are caught with a wrong kept packet
    first. Removing the caught workers leaves correct packets, of full rank with any A more
    workers removed exactly when m·R are left after removing the A with most."""
    counts, caught = Counter(), set()
    for t, (w, j, kept) in enumerate(log, 1):
        if not kept:
            continue
        counts[w] += 1
        caught |= {w} if (w, j) in wrong else set()
        if len(caught) > A:
            return None
        if least_left([c for v, c in counts.items() if v not in caught], A) >= m * R:
            return t
    return None


def decode_stream(setup, m, A, packets, order, seed=0):
    """A RobustDecoder given every packet in order: (decoder, packets given when it
    completed or None, [(worker, index, kept)]). Checks on the way that rank counts the kept
    packets up to needed, and that nothing is kept once complete."""
    decoder = RobustDecoder(setup.encoding, m, A, result_shape=setup.result_shape, seed=seed)
    done, log = None, []
    for t, (w, j) in enumerate(order, 1):
        was_complete = decoder.complete
        kept = decoder.add(packets[w][j])
        assert not (was_complete and kept)
        log.append((w, j, kept))
        assert decoder.rank == min(sum(k for _, _, k in log), decoder.needed)
        if done is None and decoder.complete:
            done = t
    return decoder, done, log


def check_outcome(setup, decoder, done, log, wrong, m, A, must_complete=True):
    """The decoder completed when expected (later only for small p), with the exact output
    and exactly the caught workers named; it kept at most m packets of any worker."""
    R = setup.code.recovery_threshold
    when = expected_completion(log, wrong, m, R, A)
    assert max(Counter(w for w, _, kept in log if kept).values()) <= m
    if setup.F.p >= GENERIC:
        assert done == when
    elif done is not None:
        assert when is not None and done >= when
    if must_complete:
        assert done is not None
    if done is None:
        assert not decoder.complete and decoder.wrong == []
        with pytest.raises(ValueError, match="Not decodable yet"):
            decoder.result()
        return
    caught = {w for w, j, kept in log[:done] if kept and (w, j) in wrong}
    setup.check(decoder.result())
    setup.check(decoder.result())
    assert decoder.wrong == sorted(caught) and len(caught) <= A


def whole_and_independent(kind, log, spoiled) -> bool:
    """Whether every honest worker sent all m packets and each was kept: then any R of them
    decode, so the decoder must complete at any p (at p = 257 a packet is a combination of
    its worker's earlier ones often enough, 1/257, that it may not)."""
    return kind == "whole" and all(kept for w, _, kept in log if w not in spoiled)


# -- exact outputs, exactly the wrong workers named -------------------------------------------


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_no_wrong_worker(name, m, p):
    """Nobody wrong (A = 1): whole workers one after another complete at exactly m·(R + A)
    packets (for large p; later is allowed at p = 257); any mix of workers each sending at
    most m completes by then, as soon as m·R packets are left with any A workers removed."""
    setup, A = case(name, p), 1
    R, N = setup.code.recovery_threshold, setup.code.n_workers
    rng = np.random.default_rng((m, p % 1000, NAMES.index(name)))
    for strategy, kind in [("fastest first", "whole"), ("round robin", "whole"),
                           ("interleaved", "stragglers"), ("round robin", "all or one")]:
        packets, wrong = make_packets(setup, m, seed=int(rng.integers(1000)))
        order = arrival(rng, budgets(rng, N, m, R, A, kind=kind), strategy)
        decoder, done, log = decode_stream(setup, m, A, packets, order)
        assert wrong == set() and decoder.needed == m * (R + 2 * A)
        check_outcome(setup, decoder, done, log, wrong, m, A,
                      must_complete=p >= GENERIC or whole_and_independent(kind, log, ()))
        assert decoder.wrong == []
        if p >= GENERIC:
            assert done <= m * (R + A)
            if strategy == "fastest first":
                assert done == m * (R + A)


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_one_wrong_worker_is_corrected_and_named(name, m, p):
    """One wrong worker (A = 1), each way of being wrong, arriving first, last or anywhere,
    with whole workers or stragglers: the output is exact and it is named exactly when one of
    its wrong packets was kept; done by m·(R + 2A) packets when nobody straggles (large p)."""
    setup, A = case(name, p), 1
    R, N = setup.code.recovery_threshold, setup.code.n_workers
    rng = np.random.default_rng((m, p % 1000, NAMES.index(name), 1))
    for i, strategy in enumerate(STRATEGIES):
        how = SPOILS[(i + m + PRIMES.index(p)) % len(SPOILS)]
        kind = ["whole", "stragglers", "all or one"][(i + m) % 3]
        spoiled = (int(rng.integers(N)),)
        packets, wrong = make_packets(setup, m, int(rng.integers(1000)), spoiled, how)
        order = arrival(rng, budgets(rng, N, m, R, A, spoiled, kind), strategy, spoiled)
        decoder, done, log = decode_stream(setup, m, A, packets, order)
        check_outcome(setup, decoder, done, log, wrong, m, A,
                      must_complete=p >= GENERIC or whole_and_independent(kind, log, spoiled))
        if p >= GENERIC and kind == "whole":
            assert done <= m * (R + A + len(decoder.wrong)) <= decoder.needed
        if strategy == "wrong first" and how in ("random", "lying coeffs") and p >= GENERIC:
            assert decoder.wrong == list(spoiled)


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_two_wrong_workers_with_a_2(m, p):
    """A = 2 (MDS, R = 2, N = 7): no, one or two wrong workers in every position are
    corrected and named; done by m·(R + 2A) packets with whole workers."""
    setup, A, R, N = mds_a2(p), 2, 2, 7
    rng = np.random.default_rng((m, p % 1000, 2))
    for spoiled, how, strategy in [((), "random", "interleaved"),
                                   ((3,), "one element", "wrong first"),
                                   ((0, 6), "random", "wrong first"),
                                   ((1, 4), "one packet", "round robin"),
                                   ((2, 5), "lying coeffs", "wrong last"),
                                   ((0, 3), "random", "interleaved")]:
        packets, wrong = make_packets(setup, m, int(rng.integers(1000)), spoiled, how)
        order = arrival(rng, [m] * N, strategy, spoiled)
        decoder, done, log = decode_stream(setup, m, A, packets, order)
        check_outcome(setup, decoder, done, log, wrong, m, A)
        assert done <= decoder.needed == m * (R + 2 * A)


def test_stragglers_count():
    """Workers that sent only some of their m packets count: MDS (R = 2), m = 3, A = 1."""
    setup, m, A = case("MDS vector", 2**61 - 1), 3, 1
    # Nobody wrong: 2, 2, 2, 1 and 1 packets, 8 < m·(R + A) = 9, and nobody sent all 3.
    packets, _ = make_packets(setup, m, seed=4)
    order = [(w, 0) for w in range(5)] + [(w, 1) for w in range(3)]
    decoder, done, log = decode_stream(setup, m, A, packets, order)
    assert done == 8 and decoder.wrong == []
    setup.check(decoder.result())
    # Worker 4 wrong and first, then 3, 3, 2 and 1 packets of the others: just enough.
    packets, _ = make_packets(setup, m, seed=4, spoiled=(4,))
    order = [(w, j) for w, n in [(4, 3), (0, 3), (1, 3), (2, 2), (3, 1)] for j in range(n)]
    decoder, done, log = decode_stream(setup, m, A, packets, order)
    assert done == 12 == len(order) and decoder.wrong == [4]
    setup.check(decoder.result())
    assert dict(Counter(w for w, _, kept in log if kept)) == {4: 3, 0: 3, 1: 3, 2: 2, 3: 1}


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("name", ["MDS matrix", "PolynomialCode", "MatDot", "LCC t=1"])
def test_full_speed_packets(name, p):
    """Packets computed at full speed (compute_pieces), each worker sending all or one of its
    m = 3, one of them wrong: exact and named."""
    setup, m, A = case(name, p), 3, 1
    R, N = setup.code.recovery_threshold, setup.code.n_workers
    rng = np.random.default_rng(p % 1000)
    packets = setup.full_speed(m, seed=7)
    for spoiled in range(N):
        bad = [dataclasses.replace(q, payload=setup.F.random(q.payload.shape, rng))
               for q in packets[spoiled]]
        stream = packets[:spoiled] + [bad] + packets[spoiled + 1:]
        wrong = {(spoiled, j) for j in range(m)}
        sends = budgets(rng, N, m, R, A, (spoiled,), "all or one")
        order = arrival(rng, sends, "interleaved")
        decoder, done, log = decode_stream(setup, m, A, stream, order)
        check_outcome(setup, decoder, done, log, wrong, m, A)


# -- more than A wrong workers: never a wrong output ------------------------------------------


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("name", NAMES)
def test_too_many_wrong_workers_never_decode(name, p):
    """A + 1 (and more) workers sending random payloads, every packet of every worker given,
    in several orders: it never completes, result() raises, and rank stops at needed."""
    setup, A, m = case(name, p), 1, 2
    R, N = setup.code.recovery_threshold, setup.code.n_workers
    rng = np.random.default_rng((p % 1000, NAMES.index(name), 2))
    for count, strategy in [(2, "wrong first"), (2, "interleaved"), (3, "wrong last"),
                            (N, "round robin")]:
        spoiled = tuple(rng.choice(N, count, replace=False).tolist())
        packets, wrong = make_packets(setup, m, int(rng.integers(1000)), spoiled)
        decoder, done, log = decode_stream(setup, m, A, packets,
                                           arrival(rng, [m] * N, strategy, spoiled))
        assert done is None and not decoder.complete and decoder.wrong == []
        assert decoder.rank == decoder.needed == m * (R + 2 * A) <= sum(k for _, _, k in log)
        with pytest.raises(ValueError, match="Not decodable yet"):
            decoder.result()


@settings(max_examples=100)
@given(name=st.sampled_from(NAMES), p=st.sampled_from(PRIMES), m=st.integers(1, 3),
       how=st.sampled_from(SPOILS), strategy=st.sampled_from(STRATEGIES),
       extra=st.integers(0, 2), seed=st.integers(0, 2**16), data=st.data())
def test_never_a_wrong_output(name, p, m, how, strategy, extra, seed, data):
    """Any number of wrong workers with independent errors, spoiled any way, possibly
    sending extra packets, in any order: if it completes the output is exact and exactly
    the caught workers are named (at most A); with more than A caught first it never
    completes."""
    setup, A = case(name, p), 1
    N = setup.code.n_workers
    spoiled = tuple(data.draw(st.sets(st.integers(0, N - 1), min_size=1, max_size=N)))
    packets, wrong = make_packets(setup, m, seed, spoiled, how, extra)
    order = arrival(np.random.default_rng(seed), [m + extra] * N, strategy, spoiled)
    decoder, done, log = decode_stream(setup, m, A, packets, order)
    check_outcome(setup, decoder, done, log, wrong, m, A, must_complete=False)


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("strategy", ["wrong first", "interleaved"])
def test_extra_packets_of_a_malicious_worker(strategy, p):
    """A wrong worker sending 4m packets gets at most m kept (they span its m-dimensional
    space), so it is corrected and named; two such workers never decode."""
    setup, m, A = case("PolynomialCode", p), 2, 1
    N = setup.code.n_workers
    rng = np.random.default_rng(p % 1000)
    for spoiled in [(2,), (0, 5)]:
        packets, wrong = make_packets(setup, m, int(rng.integers(1000)), spoiled, extra=3 * m)
        sends = [m + 3 * m if w in spoiled else m for w in range(N)]
        decoder, done, log = decode_stream(setup, m, A, packets,
                                           arrival(rng, sends, strategy, spoiled))
        kept = Counter(w for w, _, k in log if k)
        assert all(kept[w] <= m for w in spoiled)
        if strategy == "wrong first":
            for w in spoiled:
                assert [k for v, _, k in log if v == w] == [True] * m + [False] * 3 * m
        check_outcome(setup, decoder, done, log, wrong, m, A, must_complete=len(spoiled) == 1)
        assert (done is None) == (len(spoiled) > A)


def test_colluding_workers_are_beyond_it():
    """The documented limit: A + 1 colluding workers can forge a codeword that agrees with
    the honest workers heard so far (here h + D (t - a_2) at workers 0 and 1, with worker 2
    honest), and it completes at m·(R + A) on that wrong output with nobody named; only
    checking the output (ffcode.decoding.verify) catches it. Honest workers first are not fooled."""
    F = GF(65521)
    code = MDS(F, 2, 5)                                  # R = 2, A = 1
    A, x = rand(F.p, (4, 3), 1), rand(F.p, 3, 2)
    shares = code.encode(A)
    results = [code.compute(s, x) for s in shares]
    a = [int(v) for v in code.points]
    D = rand(F.p, results[0].shape, 3)
    forged = {w: F.add(results[w], F.mul(D, (a[w] - a[2]) % F.p)) for w in (0, 1)}
    truth = obj_matmul(F.p, A, x[:, None])[:, 0]
    for order, fooled in [((0, 1, 2, 3, 4), True), ((2, 3, 4, 0, 1), False)]:
        decoder = RobustDecoder(shares, 1, 1, seed=0)
        for w in order:
            decoder.add(next(piece_packets(F, forged.get(w, results[w]), 1, w, seed=w)))
        assert decoder.complete and decoder.wrong == []
        assert np.array_equal(decoder.result().astype(object), truth) != fooled


# -- edge cases --------------------------------------------------------------------------------


@pytest.mark.parametrize("p", PRIMES, ids=prime_id)
@pytest.mark.parametrize("name", ["MDS matrix", "PolynomialCode", "LCC gram", "LCC square"])
def test_no_adversaries_is_a_plain_decoder(name, p):
    """A = 0: needed is m·R and it completes on exactly the packet a Decoder given the same
    stream completes on (dependent packets included, at p = 257), with the same output."""
    setup, m = case(name, p), 3
    R, N = setup.code.recovery_threshold, setup.code.n_workers
    rng = np.random.default_rng(p % 1000)
    for strategy in ["interleaved", "round robin"]:
        packets, _ = make_packets(setup, m, int(rng.integers(1000)))
        order = arrival(rng, [m] * N, strategy)
        decoder, done, log = decode_stream(setup, m, 0, packets, order)
        plain = setup.decoder(m)
        plain_done = next(t for t, (w, j) in enumerate(order, 1)
                          if plain.add(packets[w][j]) and plain.complete)
        assert decoder.needed == m * R and done == plain_done and decoder.wrong == []
        setup.check(decoder.result())


def test_no_adversaries_cannot_see_a_wrong_worker():
    """A = 0 has nothing to check against: like a Decoder it completes on the first m·R
    packets, a wrong worker's among them, and decodes their (wrong) output."""
    setup, m = case("MDS matrix", 2**31 - 1), 2
    packets, _ = make_packets(setup, m, seed=8, spoiled=(0,))
    order = [(w, j) for w in range(3) for j in range(m)]
    decoder, done, _ = decode_stream(setup, m, 0, packets, order)
    assert done == m * 2 and decoder.wrong == []
    with pytest.raises(AssertionError):
        setup.check(decoder.result())


def test_arguments():
    F = GF(65521)
    encoding = case("PolynomialCode", F.p).encoding        # R = 4, N = 6
    for adversaries, error in [(-1, ValueError), (1.5, TypeError), (True, TypeError),
                               ("1", TypeError), (None, TypeError)]:
        with pytest.raises(error, match="adversaries"):
            RobustDecoder(encoding, 2, adversaries)
    with pytest.raises(ValueError, match="R \\+ 2A = 8 workers; the code has 6"):
        RobustDecoder(encoding, 2, 2)
    decoder = RobustDecoder(encoding, 2, np.int64(1))
    assert (decoder.adversaries, decoder.needed, decoder.rank) == (1, 12, 0)
    assert not decoder.complete and decoder.wrong == []
    assert "pieces=2, adversaries=1, kept=0/12" in repr(decoder)
    with pytest.raises(ValueError, match="Not decodable yet"):
        decoder.result()
    with pytest.raises(ValueError, match="pieces"):
        RobustDecoder(encoding, 0, 1)
    for not_an_encoding in ("mds", case("PolynomialCode", F.p).code, list(encoding)):
        with pytest.raises(TypeError, match="encoding"):
            RobustDecoder(not_an_encoding, 2, 1)
    with pytest.raises(ValueError, match="result_shape"):
        RobustDecoder(case("LCC gram", F.p).encoding, 2, 1)
    RobustDecoder(case("LCC square", F.p).encoding, 2, 0, result_shape=(5, 3))  # R + 2 > N


def malformed(F, q, N, kind):
    """A broken copy of packet q, and the error it must raise."""
    replace = functools.partial(dataclasses.replace, q)
    big = np.array(q.payload)
    big.flat[0] = F.p
    coeffs_p = np.array(q.coeffs)
    coeffs_p[0] = F.p
    return {
        "not a Packet": ((q.worker, q.index, q.coeffs, q.payload), TypeError),
        "coeffs shape": (replace(coeffs=np.append(q.coeffs, q.coeffs[:1])), ValueError),
        "coeff >= p": (replace(coeffs=coeffs_p), ValueError),
        "coeff >= p (list)": (replace(coeffs=coeffs_p.tolist()), ValueError),
        "payload element >= p": (replace(payload=big), ValueError),
        "negative payload": (replace(payload=q.payload.astype(np.int64) - F.p), ValueError),
        "payload rows": (replace(payload=np.concatenate([q.payload, q.payload[:1]])),
                         ValueError),
        "payload dims": (replace(payload=q.payload[..., None]), ValueError),
        "float payload": (replace(payload=q.payload.astype(float)), TypeError),
        "list payload": (replace(payload=q.payload.tolist()), TypeError),
        "worker out of range": (replace(worker=N), ValueError),
        "negative worker": (replace(worker=-1), ValueError),
        "float worker": (replace(worker=float(q.worker)), TypeError),
        "negative index": (replace(index=-1), ValueError),
        "float index": (replace(index=0.5), TypeError),
    }[kind]


MALFORMED = ["not a Packet", "coeffs shape", "coeff >= p", "coeff >= p (list)",
             "payload element >= p", "negative payload", "payload rows", "payload dims",
             "float payload", "list payload", "worker out of range", "negative worker",
             "float worker", "negative index", "float index"]


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("at", [0, 3])
@pytest.mark.parametrize("kind", MALFORMED)
def test_malformed_packet_changes_nothing(kind, at, p):
    """A broken copy of the packet due next (first, or after three from its own and other
    workers) raises and changes nothing: the packet itself is then kept, and the decoder
    completes on the same packet with the same output and the wrong worker named."""
    setup, m, A = case("MDS matrix", p), 2, 1
    N = setup.code.n_workers
    packets, wrong = make_packets(setup, m, seed=3, spoiled=(1,))
    order = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (3, 1), (4, 1)]
    reference = decode_stream(setup, m, A, packets, order)
    decoder = RobustDecoder(setup.encoding, m, A, seed=0)
    for t, (w, j) in enumerate(order):
        if t == at:
            bad, error = malformed(setup.F, packets[w][j], N, kind)
            rank = decoder.rank
            with pytest.raises(error):
                decoder.add(bad)
            assert decoder.rank == rank and not decoder.complete
        assert decoder.add(packets[w][j]) == (t < reference[1])
    assert decoder.complete and decoder.wrong == reference[0].wrong == [1]
    assert_field_array(setup.F, decoder.result(), reference[0].result())
    setup.check(decoder.result())


def test_packets_not_kept():
    """Duplicates (worker, index), however their payload differs, and combinations of the
    worker's own earlier packets (right or wrong payload) are not kept and do not count;
    once complete nothing is kept and the output stays."""
    setup, m, A = case("MDS matrix", 2**31 - 1), 2, 1
    F, N = setup.F, setup.code.n_workers
    packets, _ = make_packets(setup, m, seed=5)
    decoder = RobustDecoder(setup.encoding, m, A, seed=1)
    first = packets[0][0]
    assert decoder.add(first) and decoder.rank == 1
    assert not decoder.add(first)
    assert not decoder.add(dataclasses.replace(first, payload=F.random(first.payload.shape, 1)))
    for index, payload in [(5, F.mul(first.payload, 3)), (6, F.random(first.payload.shape, 2))]:
        assert not decoder.add(Packet(0, index, F.mul(first.coeffs, 3), payload))
    zero = Packet(1, 0, np.zeros(m, F.dtype), np.zeros_like(first.payload))
    assert not decoder.add(zero) and decoder.rank == 1
    assert decoder.add(packets[0][1]) and decoder.rank == 2
    both = F.add(packets[0][0].coeffs, packets[0][1].coeffs)
    assert not decoder.add(Packet(0, 7, both, F.random(first.payload.shape, 3)))
    for w in range(1, N):
        for q in packets[w]:
            decoder.add(q)
    assert decoder.complete and decoder.wrong == []
    output = decoder.result()
    setup.check(output)
    rank = decoder.rank
    fresh = make_packets(setup, m, seed=6)[0]
    assert not any(decoder.add(q) for qs in fresh for q in qs)
    assert decoder.rank == rank and decoder.result() is output


@pytest.mark.parametrize("p", [11, 13])
def test_small_prime(p):
    """GF(11) and GF(13): dependent packets are common, so it may complete later or never,
    yet every stream that completes gives the exact output and names exactly the wrong
    worker (a projection misses a wrong packet with probability 2/p, so this takes enough
    of them), and most complete."""
    F = GF(p)
    A_, x = rand(p, (6, 3), 1), rand(p, (3, 2), 2)
    code = MDS(F, 2, 5)
    expected = obj_matmul(p, A_, x)
    encoding = code.encode(A_)
    setup = SimpleNamespace(F=F, code=code, encoding=encoding, result_shape=None,
                            results=[code.compute(s, x) for s in encoding],
                            check=lambda got: assert_field_array(F, got, expected))
    completed = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        spoiled = (seed % 5,)
        m = 1 + seed % 3
        packets, wrong = make_packets(setup, m, seed, spoiled, SPOILS[seed % 4])
        order = arrival(rng, [m] * 5, STRATEGIES[seed % 5], spoiled)
        decoder, done, log = decode_stream(setup, m, 1, packets, order, seed=seed)
        check_outcome(setup, decoder, done, log, wrong, m, 1,
                      must_complete=whole_and_independent("whole", log, spoiled))
        completed += done is not None
    assert completed >= 50


def test_rank_is_capped_at_needed():
    """rank counts kept packets only up to needed = m·(R + 2A), also when more are kept."""
    setup, m, A = case("MDS vector", 65521), 3, 1
    packets, _ = make_packets(setup, m, seed=2, spoiled=(0, 1))
    decoder, done, log = decode_stream(setup, m, A, packets,
                                       [(w, j) for w in range(5) for j in range(m)])
    assert done is None and sum(k for _, _, k in log) == 15 > decoder.needed == 12
    assert decoder.rank == 12


@pytest.mark.parametrize("given", [False, True], ids=["shape from the first", "result_shape"])
def test_wrong_shape_from_a_wrong_worker(given):
    """The documented limit: when the code cannot tell a local result's columns (MDS), the
    first kept packet fixes them, so a wrong worker's first packet of 7 columns makes every
    honest one raise; with result_shape given, its packet raises instead and the honest ones
    decode."""
    setup, m, A = case("MDS matrix", 2**31 - 1), 2, 1
    F = setup.F
    packets, _ = make_packets(setup, m, seed=1)
    shape = setup.results[0].shape if given else None
    decoder = RobustDecoder(setup.encoding, m, A, result_shape=shape, seed=0)
    q = packets[4][0]
    odd = dataclasses.replace(q, payload=F.random((q.payload.shape[0], 7), 1))
    if given:
        with pytest.raises(ValueError, match="expected \\(3, 3\\)"):
            decoder.add(odd)
    else:
        assert decoder.add(odd)
    for w in range(4):
        for q in packets[w]:
            if given:
                decoder.add(q)
            else:
                with pytest.raises(ValueError, match="expected \\(3, 7\\)"):
                    decoder.add(q)
    assert decoder.complete == given
    if given:
        assert decoder.wrong == []
        setup.check(decoder.result())
