"""The Decoder's deferred mode (``defer=True``, the runtime's): rank tracking at once, payload
elimination later (``eliminate``, ``pending``), with exactly the result of immediate mode and of
code.decode, payloads of at most EAGER_BYTES eliminated on arrival; and ``ffcode.functions``,
the import paths by which workers find an LCC's f."""
import dataclasses
import types

import numpy as np
import pytest

import ffcode
from ffcode import LCC, MDS, Decoder, Packet, PolynomialCode, functions, piece_packets
from ffcode.decoding import decoder
from ffcode.runtime.shared import wire

from codecases import Case, times_W
from helpers import assert_field_array, obj_matmul, prime_id, rand

DEFER_PRIMES = [65521, 2**31 - 1, 4294967291, 2**61 - 1]


@pytest.fixture(autouse=True)
def defer_every_payload(monkeypatch, request):
    """The deferred mechanics on this module's small payloads: none is eager, but in the
    test of eagerness itself."""
    if "eager" not in request.node.name:
        monkeypatch.setattr(decoder, "EAGER_BYTES", -1)


@pytest.mark.parametrize("columns", [1, 256, 257])
def test_small_payloads_are_eliminated_on_arrival_eagerly(columns):
    """A deferring decoder eliminates payloads of at most EAGER_BYTES (4096: a piece of 2
    rows of 256 uint64) as they come and stages larger ones; the output is the same."""
    F = ffcode.GF(2**61 - 1)
    code = MDS(F, 2, 3)
    shares = code.encode(F.random((8, 3), seed=1))
    x = F.random((3, columns), seed=2)
    deferring, immediate = Decoder(shares, pieces=2, defer=True), Decoder(shares, pieces=2)
    for w in (2, 0):
        for packet in piece_packets(F, code.compute(shares[w], x), 2, w, seed=w):
            assert deferring.add(packet) == immediate.add(packet)
    assert deferring.pending == (4 if 2 * columns * 8 > decoder.EAGER_BYTES else 0)
    assert same(deferring.result(), immediate.result())
    assert same(deferring.result(), F.matmul(F.random((8, 3), seed=1), x))


CASES = ["MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "ProductCode sparse",
         "LCC t=1", "LCC gram", "LCC square"]


def random_order(rng, N, m) -> list:
    """Every packet of every worker, each worker's in index order, randomly interleaved."""
    senders = rng.permutation([w for w in range(N) for _ in range(m)]).tolist()
    sent, order = [0] * N, []
    for w in senders:
        order.append((w, sent[w]))
        sent[w] += 1
    return order


def same(a, b) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(
            x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


# -- the same result ---------------------------------------------------------------------------


@pytest.mark.parametrize("p", DEFER_PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("name", CASES)
def test_defer_decodes_like_immediate(name, m, p):
    """On the same random arrival order (all packets of all workers), defer=True and
    defer=False accept the same packets as innovative, complete at the same packet, and give
    exactly code.decode's (and the true) output; pending counts the innovative packets."""
    F = ffcode.GF(p)
    case = Case(name, F, seed=m)
    N = case.code.n_workers
    rng = np.random.default_rng((m, p % 1009, len(name)))
    packets = case.full_speed(m, seed=m) if case.full_speed_ok else case.finished(m, seed=m)
    order = random_order(rng, N, m)
    now, later = case.decoder(m, defer=False), case.decoder(m, defer=True)
    assert later.needed == now.needed == m * case.code.recovery_threshold
    innovative = 0
    for w, j in order:
        flag = now.add(packets[w][j])
        assert later.add(packets[w][j]) is flag
        innovative += flag
        assert later.rank == now.rank == innovative
        assert later.pending == innovative and now.pending == 0
        assert later.complete is now.complete
        assert later.received == now.received
    assert now.complete and innovative == now.needed
    assert later.pending == now.needed
    got = later.result()
    assert later.pending == 0
    case.check(got)
    assert same(got, now.result())
    assert same(later.result(), got)                # a second call: the same


@pytest.mark.parametrize("p", DEFER_PRIMES, ids=prime_id)
@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("kind", ["full speed", "random", "systematic"])
def test_sparse_support_defers_like_immediate(kind, m, p):
    """A code of sparse support, ProductCode(F, 5, a_exponents=[[0], [1]],
    b_exponents=[[0, 3]]) (h of support 0, 1, 3, 4: no Vandermonde), decodes in deferred
    mode, elimination interleaved at random, exactly as in immediate mode, from full-speed
    packets or packets of whole results (random or systematic pieces) of all 5 workers in
    a random order: the same packets innovative, the same output, code.decode's and A @ B."""
    F = ffcode.GF(p)
    code = ffcode.ProductCode(F, 5, a_exponents=[[0], [1]], b_exponents=[[0, 3]])
    assert code.support == (0, 1, 3, 4)
    A, B = rand(p, (9, 3), (m, 1)), rand(p, (3, 7), (m, 2))
    whole = code.encode(A, B, seed=m)
    results = [code.compute(share) for share in whole]
    reference = code.decode(whole, {w: results[w] for w in (4, 1, 3, 0)})
    if kind == "full speed":
        shares = code.encode(A, B, pieces=m, seed=(m, 3))
        packets = [list(code.compute_pieces(share)) for share in shares]
    else:
        shares = whole
        packets = [list(piece_packets(F, y, m, w, seed=(m, w), systematic=kind == "systematic"))
                   for w, y in enumerate(results)]
    rng = np.random.default_rng((m, p % 1009, len(kind)))
    now, later = Decoder(shares, m), Decoder(shares, m, defer=True)
    for w, j in random_order(rng, code.n_workers, m):
        assert later.add(packets[w][j]) is now.add(packets[w][j])
        assert later.rank == now.rank and later.complete is now.complete
        later.eliminate(int(rng.integers(0, 3)))
    assert now.complete and now.rank == m * code.recovery_threshold
    got = later.result()
    assert same(got, now.result())
    for want in (reference, obj_matmul(p, A, B)):
        assert_field_array(F, got, want)


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("pattern", ["each", "every other", "random", "batches", "once"])
def test_interleaved_elimination(pattern, name, p):
    """Any interleaving of add and eliminate (after every packet, every other one, a random
    count, in batches, or everything at the end) gives the same output; eliminate(k) returns
    min(k, pending) and leaves the rank alone."""
    F = ffcode.GF(p)
    m = 2
    case = Case(name, F, seed=7)
    N = case.code.n_workers
    rng = np.random.default_rng((len(pattern), len(name), p % 97))
    packets = case.full_speed(m, seed=3) if case.full_speed_ok else case.finished(m, seed=3)
    decoder = case.decoder(m, defer=True)
    pending, eliminated = 0, 0
    for n, (w, j) in enumerate(random_order(rng, N, m)):
        if decoder.complete:
            assert decoder.add(packets[w][j]) is False
            assert decoder.pending == pending
            continue
        pending += decoder.add(packets[w][j])
        assert decoder.pending == pending
        if pattern == "each":
            want = 1
        elif pattern == "every other":
            want = 1 if n % 2 else 0
        elif pattern == "random":
            want = int(rng.integers(0, 4))
        elif pattern == "batches":
            want = 3 if n % 3 == 2 else 0
        else:
            want = 0
        rank = decoder.rank
        done = decoder.eliminate(want)
        assert done == min(want, pending)
        pending -= done
        eliminated += done
        assert decoder.pending == pending and decoder.rank == rank
    assert decoder.complete and eliminated + pending == decoder.needed
    if pattern == "once":
        assert decoder.eliminate(10**6) == decoder.needed and decoder.pending == 0
    case.check(decoder.result())
    assert decoder.pending == 0 and decoder.eliminate(5) == 0


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
def test_eliminate_counts(p):
    """eliminate() reduces one pending payload by default, eliminate(k) up to k, oldest
    first; eliminate(0) and eliminate on an empty queue do nothing; an immediate decoder
    never has pending payloads."""
    F = ffcode.GF(p)
    case = Case("PolynomialCode", F, seed=2)
    packets = case.full_speed(3, seed=5)
    decoder = case.decoder(3, defer=True)
    immediate = case.decoder(3, defer=False)
    assert decoder.pending == 0 and decoder.eliminate() == 0 and decoder.eliminate(4) == 0
    order = [(w, j) for j in range(3) for w in range(6)][:7]
    for w, j in order:
        assert decoder.add(packets[w][j]) and immediate.add(packets[w][j])
        assert immediate.pending == 0 and immediate.eliminate(3) == 0
    assert (decoder.rank, decoder.pending) == (7, 7)
    assert decoder.eliminate(0) == 0 and decoder.pending == 7
    assert decoder.eliminate() == 1 and decoder.pending == 6
    assert decoder.eliminate(4) == 4 and decoder.pending == 2
    assert decoder.eliminate(5) == 2 and decoder.pending == 0
    assert decoder.eliminate() == 0
    assert decoder.rank == 7 and not decoder.complete
    with pytest.raises(ValueError, match="rank 7/12"):
        decoder.result()
    for w, j in [(w, j) for j in range(3) for w in range(6)][7:12]:
        assert decoder.add(packets[w][j]) and immediate.add(packets[w][j])
    assert decoder.complete and decoder.pending == 5
    case.check(decoder.result())
    assert same(decoder.result(), immediate.result())


@pytest.mark.parametrize("p", [2**31 - 1, 2**61 - 1], ids=prime_id)
def test_non_innovative_not_pending(p):
    """Repeats, packets in a worker's span and packets after completion never join pending."""
    F = ffcode.GF(p)
    A, x = rand(p, (8, 3), 1), rand(p, 3, 2)
    code = MDS(F, 2, 3)
    shares = code.encode(A)
    results = [code.compute(s, x) for s in shares]
    one = list(piece_packets(F, results[0], 1, 0, seed=1))[0]
    decoder = Decoder(shares, 1, defer=True)
    assert decoder.add(one) and decoder.pending == 1
    assert decoder.add(one) is False                               # repeated key
    assert decoder.add(dataclasses.replace(one, index=1)) is False  # same span (m = 1)
    assert decoder.pending == 1 and decoder.rank == 1 and decoder.received == 3
    two = list(piece_packets(F, results[2], 1, 2, seed=2))[0]
    assert decoder.add(two) and decoder.complete and decoder.pending == 2
    late = list(piece_packets(F, results[1], 1, 1, seed=3))[0]
    assert decoder.add(late) is False and decoder.pending == 2
    assert_field_array(F, decoder.result(), obj_matmul(p, A, x[:, None])[:, 0])


@pytest.mark.parametrize("shape", ["no columns", "no rows"])
def test_defer_empty_results(shape):
    """Empty payloads (no columns; or row-linear LCC of 0-row blocks) defer and decode to the
    same empty outputs as immediate mode."""
    F = ffcode.GF(65521)
    if shape == "no columns":
        A, x = rand(F.p, (7, 4), 1), rand(F.p, (4, 0), 2)
        code, data, args = MDS(F, 2, 3), (A,), (x,)
    else:
        code = LCC(F, 2, 0, times_W, 1, 3, row_linear=True)
        data, args = ([np.zeros((0, 3), F.dtype)] * 2,), ()
    shares = code.encode(*data, pieces=2, seed=1)
    packets = [list(code.compute_pieces(s, *args)) for s in shares]
    outputs = []
    for defer in (False, True):
        decoder = Decoder(shares, 2, defer=defer)
        for w, j in [(0, 0), (1, 0), (2, 0), (2, 1)]:
            assert decoder.add(packets[w][j])
        assert decoder.pending == (4 if defer else 0)
        outputs.append(decoder.result())
    assert same(outputs[0], outputs[1])


# -- read-only payloads, as off the wire ------------------------------------------------------


def over_the_wire(packet, dtype) -> Packet:
    """The packet as the master gets it: frames made by wire.packet, read back by
    wire.read_packet as read-only arrays over immutable bytes."""
    header = wire.Header(wire.Kind.PACKET, 1, 1, packet.worker, packet.index)
    frames = wire.packet(header, packet.coeffs, packet.payload)
    back = wire.Header.unpack(frames[0])
    coeffs, payload = wire.read_packet(back, [bytes(frames[1]), bytes(frames[2])], dtype)
    return Packet(back.worker, back.index, coeffs, payload)


@pytest.mark.parametrize("p", DEFER_PRIMES, ids=prime_id)
@pytest.mark.parametrize("name", ["MDS matrix", "MatDot", "LCC t=1"])
def test_read_only_payloads(name, p):
    """Read-only coefficient and payload arrays (zero-copy views of received frames) decode
    exactly in both modes, with elimination interleaved."""
    F = ffcode.GF(p)
    case = Case(name, F, seed=4)
    packets = [[over_the_wire(pk, F.dtype) for pk in worker]
               for worker in case.full_speed(2, seed=9)]
    assert not packets[0][0].payload.flags.writeable
    assert not packets[0][0].coeffs.flags.writeable
    order = random_order(np.random.default_rng(p % 101), case.code.n_workers, 2)
    outputs = []
    for defer in (False, True):
        decoder = case.decoder(2, defer)
        for n, (w, j) in enumerate(order):
            decoder.add(packets[w][j])
            if defer and n % 2:
                decoder.eliminate()
        assert decoder.complete
        outputs.append(decoder.result())
        case.check(outputs[-1])
    assert same(*outputs)


def test_defer_does_not_alias_caller_payload():
    """A payload array reused (overwritten) by the caller after add() does not change the
    result: defer=True gives what defer=False gives."""
    F = ffcode.GF(2**31 - 1)
    case = Case("MDS matrix", F, seed=1)
    packets = case.full_speed(2, seed=2)
    decoder = case.decoder(2, defer=True)
    for w, j in [(0, 0), (1, 0), (2, 1), (3, 1)]:
        payload = packets[w][j].payload.copy()
        decoder.add(dataclasses.replace(packets[w][j], payload=payload))
        payload[...] = 0                # the caller reuses its receive buffer
    case.check(decoder.result())


# -- malformed packets in deferred mode ----------------------------------------------------------


def _set_first(a, value, dtype):
    a = a.astype(dtype)
    a.reshape(-1)[0] = value
    return a


def malformed(F):
    p = F.p
    big = 2**64 - 1 if F.dtype == np.uint64 else 2**32 - 1
    return {
        "payload == p, field dtype": (lambda pk: dataclasses.replace(
            pk, payload=_set_first(pk.payload, p, F.dtype)), ValueError),
        "payload max, field dtype": (lambda pk: dataclasses.replace(
            pk, payload=_set_first(pk.payload, big, F.dtype)), ValueError),
        "payload == p, uint64": (lambda pk: dataclasses.replace(
            pk, payload=_set_first(pk.payload, p, np.uint64)), ValueError),
        "last payload element >= p": (lambda pk: dataclasses.replace(
            pk, payload=np.concatenate([pk.payload.reshape(-1)[:-1], [p]]).astype(
                F.dtype).reshape(pk.payload.shape)), ValueError),
        "read-only payload >= p": (lambda pk: dataclasses.replace(
            pk, payload=np.frombuffer(_set_first(pk.payload, p, F.dtype).tobytes(),
                                      F.dtype).reshape(pk.payload.shape)), ValueError),
        "negative payload": (lambda pk: dataclasses.replace(
            pk, payload=_set_first(pk.payload, -1, np.int64)), ValueError),
        "coeffs >= p": (lambda pk: dataclasses.replace(
            pk, coeffs=_set_first(pk.coeffs, p, F.dtype)), ValueError),
        "extra row": (lambda pk: dataclasses.replace(
            pk, payload=np.vstack([pk.payload, pk.payload[:1]])), ValueError),
        "missing column": (lambda pk: dataclasses.replace(
            pk, payload=pk.payload[:, :-1].copy()), ValueError),
        "1-D payload": (lambda pk: dataclasses.replace(
            pk, payload=pk.payload.reshape(-1)), ValueError),
        "short coeffs": (lambda pk: dataclasses.replace(pk, coeffs=pk.coeffs[:1]), ValueError),
        "float payload": (lambda pk: dataclasses.replace(
            pk, payload=pk.payload.astype(float)), TypeError),
        "list payload": (lambda pk: dataclasses.replace(
            pk, payload=pk.payload.tolist()), TypeError),
    }


MALFORMED = list(malformed(ffcode.GF(65521)))


@pytest.mark.parametrize("p", [65521, 2**61 - 1], ids=prime_id)
@pytest.mark.parametrize("before, eliminated", [(0, 0), (2, 0), (2, 1), (2, 2)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_changes_nothing_deferred(bad, before, eliminated, p):
    """A malformed packet raises in deferred mode and leaves rank, pending and received as
    they were (into an empty decoder, or after 2 packets with 0, 1 or 2 of them eliminated);
    the good packets that follow still decode exactly."""
    F = ffcode.GF(p)
    make, error = malformed(F)[bad]
    A, B = rand(p, (5, 3), 1), rand(p, (3, 4), 2)
    code = PolynomialCode(F, 2, 1, 4)
    shares = code.encode(A, B, pieces=2, seed=2)
    packets = [list(code.compute_pieces(s)) for s in shares]
    good = [packets[0][0], packets[2][1], packets[3][0], packets[2][0]]
    decoder = Decoder(shares, 2, defer=True)
    for packet in good[:before]:
        assert decoder.add(packet)
    assert decoder.eliminate(eliminated) == eliminated
    state = (decoder.rank, decoder.pending, decoder.received)
    assert state == (before, before - eliminated, before)
    with pytest.raises(error):
        decoder.add(make(good[before]))
    assert (decoder.rank, decoder.pending, decoder.received) == state
    assert not decoder.complete
    for packet in good[before:]:
        assert decoder.add(packet)
    assert decoder.complete and decoder.pending == 4 - eliminated
    assert_field_array(F, decoder.result(), obj_matmul(p, A, B))


def test_malformed_first_packet_then_other_shape():
    """A first innovative packet rejected for its elements (>= p) after its shape was checked
    does not stop a later good packet of that shape from being accepted and decoded."""
    p = 2**31 - 1
    F = ffcode.GF(p)
    A, x = rand(p, (6, 3), 1), rand(p, (3, 2), 2)
    code = MDS(F, 2, 3)
    shares = code.encode(A, pieces=3, seed=1)
    packets = [list(code.compute_pieces(s, x)) for s in shares]
    decoder = Decoder(shares, 3, defer=True)
    bad = dataclasses.replace(packets[1][0], payload=_set_first(packets[1][0].payload, p,
                                                                F.dtype))
    with pytest.raises(ValueError, match=">= p"):
        decoder.add(bad)
    assert (decoder.rank, decoder.pending, decoder.received) == (0, 0, 0)
    for w, j in [(1, 0), (0, 1), (2, 2), (0, 0), (1, 2), (2, 0)]:
        assert decoder.add(packets[w][j])
    assert_field_array(F, decoder.result(), obj_matmul(p, A, x))


def test_defer_repr_and_result_before_complete():
    """result() before completion names the rank in deferred mode too and eliminates nothing."""
    F = ffcode.GF(65521)
    case = Case("MatDot", F, seed=3)
    packets = case.full_speed(2, seed=1)
    decoder = case.decoder(2, defer=True)
    assert decoder.add(packets[0][0]) and decoder.add(packets[1][1])
    with pytest.raises(ValueError, match="rank 2/6"):
        decoder.result()
    assert decoder.pending == 2
    assert "rank=2/6" in repr(decoder)


# -- ffcode.functions ---------------------------------------------------------------------------


def double(F, X):
    """A module-level function of this test module (importable by its path)."""
    return F.add(X, X)


class Holder:
    @staticmethod
    def triple(F, X):
        return F.add(F.add(X, X), X)


def test_load_and_path_of_round_trip():
    """load(path_of(f)) is f for ffcode's own functions, a function of this module and a
    static method reached through its class; load follows dotted attribute names."""
    assert functions.load("ffcode.functions:square") is functions.square
    assert functions.load("ffcode.functions:cube") is functions.cube
    for f, path in [(functions.square, "ffcode.functions:square"),
                    (functions.cube, "ffcode.functions:cube")]:
        assert functions.path_of(f) == path
        assert functions.load(path) is f
    for f in (double, Holder.triple):
        path = functions.path_of(f)
        assert path.endswith(":double") or path.endswith(":Holder.triple")
        assert functions.load(path) is f
    F = ffcode.GF(7)
    assert functions.square(F, np.array([3, 4], F.dtype)).tolist() == [2, 2]
    assert functions.cube(F, np.array([2, 3], F.dtype)).tolist() == [1, 6]


@pytest.mark.parametrize("path, error, message", [
    ("ffcode.functions.square", ValueError, "looks like 'package.module:function'"),
    (":square", ValueError, "looks like"),
    ("ffcode.functions:", ValueError, "looks like"),
    ("", ValueError, "looks like"),
    ("ffcode_no_such_module_xyz:f", ValueError, "Cannot import 'ffcode_no_such_module_xyz:f'"),
    ("ffcode.functions:no_such_function", ValueError, "Cannot import"),
    ("ffcode.functions:square.nope", ValueError, "Cannot import"),
    ("ffcode:__version__", TypeError, "is not callable"),
    ("ffcode.functions:__doc__", TypeError, "is not callable"),
    (3, TypeError, "must be a string"),
    (None, TypeError, "must be a string"),
    (functions.square, TypeError, "must be a string"),
])
def test_load_refuses(path, error, message):
    with pytest.raises(error, match=message):
        functions.load(path)


def test_path_of_refuses():
    """Lambdas, local functions, functions of __main__ that the script does not define
    (here pytest's) and functions whose path leads to another object cannot be named for
    worker processes."""
    def local(F, X):
        return X

    main = types.FunctionType(double.__code__, {"__name__": "__main__"}, "double")
    assert main.__module__ == "__main__"
    impostor = types.FunctionType(functions.square.__code__, functions.square.__globals__,
                                  "square")
    assert impostor.__module__ == "ffcode.functions" and impostor.__qualname__ == "square"
    for f, message in [(lambda F, X: X, "cannot be imported by worker processes"),
                       (local, "cannot be imported by worker processes"),
                       (main, "Cannot import '__main__:double'"),
                       (impostor, "does not import as the same function")]:
        with pytest.raises(ValueError, match=message):
            functions.path_of(f)


def test_lcc_with_a_path():
    """LCC(f="ffcode.functions:square") loads square and decodes X_j * X_j exactly; a bad
    path is refused at construction."""
    p = 65521
    F = ffcode.GF(p)
    code = LCC(F, 2, 1, "ffcode.functions:square", 2, 6)
    assert code.f is functions.square and functions.path_of(code.f) == "ffcode.functions:square"
    X = [rand(p, (4, 3), j) for j in range(2)]
    shares = code.encode(X, seed=1)
    got = code.decode(shares, {i: code.compute(shares[i]) for i in (5, 1, 3, 0, 2)})
    for g, x in zip(got, X):
        assert_field_array(F, g, (x.astype(object) ** 2) % p)
    with pytest.raises(ValueError, match="Cannot import"):
        LCC(F, 2, 1, "ffcode.functions:nope", 2, 6)
    with pytest.raises(ValueError, match="looks like"):
        LCC(F, 2, 1, "square", 2, 6)
