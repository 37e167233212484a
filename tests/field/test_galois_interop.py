"""galois FieldArrays as inputs: one of the same field is taken as its elements everywhere an
array is (GF(2**61 - 1)'s dtype object included), one of another field is refused naming
both fields, and the outputs go back into galois unchanged."""
import re

import galois
import numpy as np
import pytest

import ffcode
from ffcode import GASP, GF, LCC, MDS, Decoder, EntangledPolynomialCode, MatDot
from ffcode import PolynomialCode, ProductCode, piece_packets

PRIMES = [2, 65521, 2**31 - 1, 2**61 - 1]


@pytest.fixture(params=PRIMES, ids=str)
def fields(request):
    return GF(request.param), galois.GF(request.param)


def invertible(G, n, seed):
    """A random invertible n x n FieldArray."""
    rng = np.random.default_rng(seed)
    while True:
        M = G.Random((n, n), seed=rng)
        if np.linalg.matrix_rank(M) == n:
            return M


def test_field_operations_match_galois(fields):
    F, G = fields
    A, B = G.Random((5, 4), seed=1), G.Random((4, 3), seed=2)
    S, x = invertible(G, 4, 3), G.Random(4, seed=4)
    nonzero = G.Random(6, low=1, seed=5)
    assert np.array_equal(G(F.matmul(A, B)), A @ B)
    assert np.array_equal(G(F.matmul(A, x)), A @ x)
    assert np.array_equal(G(F.add(A, A)), A + A)
    assert np.array_equal(G(F.sub(A, G.Ones(A.shape))), A - G.Ones(A.shape))
    assert np.array_equal(G(F.mul(A, A)), A * A)
    assert np.array_equal(G(F.neg(A)), -A)
    assert np.array_equal(G(F.inv(nonzero)), nonzero ** -1)
    assert np.array_equal(G(F.solve(S, B)), np.linalg.solve(S, B))
    assert np.array_equal(G(F.matinv(S)), np.linalg.inv(S))
    assert F.rank(A) == np.linalg.matrix_rank(A)
    assert np.array_equal(G(F.rref(A)), A.row_reduce())
    assert np.array_equal(G(F.combine(S, list(B))), S @ B)
    assert np.array_equal(F.asarray(A), A.view(np.ndarray).astype(F.dtype))
    assert F.elements(A).dtype == F.dtype and type(F.elements(A)) is np.ndarray


def test_large_field_arrays_are_object_dtype_in_galois():
    """The case the gate exists for: galois holds GF(2**61 - 1) as Python ints."""
    assert galois.GF(2**61 - 1)([1, 2]).dtype == object
    F = GF(2**61 - 1)
    assert F.elements(galois.GF(2**61 - 1)([2**61 - 2])).tolist() == [2**61 - 2]


def test_points_from_galois():
    F, G = GF(65521), galois.GF(65521)
    points = G([1, 2, 3])
    assert np.array_equal(G(F.vandermonde(points, 3)), np.vander(points, 3, increasing=True))
    assert F.points(points, "points").tolist() == [1, 2, 3]
    code = MDS(F, 2, 3, points=G([5, 6, 7]))
    assert code.points.tolist() == [5, 6, 7]


CALLS = {
    "add": lambda F, a: F.add(a, [[1]]),
    "mul": lambda F, a: F.mul([[1]], a),
    "matmul A": lambda F, a: F.matmul(a, [[1]]),
    "matmul B": lambda F, a: F.matmul([[1]], a),
    "solve": lambda F, a: F.solve(a, [1]),
    "rank": lambda F, a: F.rank(a),
    "asarray": lambda F, a: F.asarray(a),
    "elements": lambda F, a: F.elements(a, "x"),
    "combine": lambda F, a: F.combine([[1]], [a]),
    "MDS encode": lambda F, a: MDS(F, 1, 2).encode(a),
    "MDS arguments": lambda F, a: _arguments(MDS(F, 1, 2), a[0]),
}


def _arguments(code, x):
    return code.arguments(code.encode([[1]]), x)


@pytest.mark.parametrize("call", CALLS, ids=str)
@pytest.mark.parametrize("other", [65521, 2**61 - 1, 2**8], ids=str)
def test_another_fields_array_is_refused_naming_both(call, other):
    F = GF(2**31 - 1)
    a = galois.GF(other)([[1]])
    with pytest.raises(ValueError, match=re.escape(type(a).name) + rf".*GF\({F.p}\)") as error:
        CALLS[call](F, a)
    assert "view(numpy.ndarray)" in str(error.value)


def test_same_integers_of_another_field_are_taken_deliberately():
    F = GF(2**31 - 1)
    a = galois.GF(65521)([[7]])
    assert F.add(a.view(np.ndarray), [[1]]).tolist() == [[8]]


def _codes(F):
    """Every code with its data and arguments, shaped to be small."""
    G = galois.GF(F.p)
    A, B, x = G.Random((4, 4), seed=1), G.Random((4, 4), seed=2), G.Random(4, seed=3)
    return {
        "MDS": (MDS(F, 2, 3), (A,), (x,)),
        "PolynomialCode": (PolynomialCode(F, 2, 2, 5), (A, B), ()),
        "MatDot": (MatDot(F, 2, 4), (A, B), ()),
        "Entangled": (EntangledPolynomialCode(F, 2, 2, 2, 9), (A, B), ()),
        "GASP": (GASP(F, 2, 2, 1, 9), (A, B), ()),
        "ProductCode": (ProductCode(F, 4, [[0], [1]], [[0, 2]]), (A, B), ()),
        "LCC": (LCC(F, 2, 1, "ffcode.functions:square", 2, 6), ([A[:2], A[2:]],), ()),
    }


@pytest.mark.parametrize("name", ["MDS", "PolynomialCode", "MatDot", "Entangled", "GASP",
                                  "ProductCode", "LCC"])
def test_every_code_takes_galois_inputs(name):
    """Encoded from FieldArrays (dtype object at 2**61 - 1), computed, decoded from galois
    results and full-speed packets: the output equals the plain arrays' output."""
    F = GF(2**61 - 1)
    G = galois.GF(F.p)
    code, data, args = _codes(F)[name]
    plain = tuple(d.view(np.ndarray).astype(F.dtype) if isinstance(d, np.ndarray)
                  else [b.view(np.ndarray).astype(F.dtype) for b in d] for d in data)
    expected = code.decode(code.encode(*plain, seed=0),
                           {w: code.compute(s, *(a.view(np.ndarray).astype(F.dtype)
                                                 for a in args))
                            for w, s in enumerate(code.encode(*plain, seed=0))})
    encoding = code.encode(*data, seed=0)
    results = {w: G(code.compute(share, *args)) for w, share in enumerate(encoding)}
    decoded = code.decode(encoding, results)
    assert _equal(decoded, expected)
    if code.check_cost(data + args) is not None:
        assert code.check(data + args, decoded, seed=1)
    if code.row_linear_operand is not None:
        encoding = code.encode(*data, pieces=2, seed=0)
        decoder = Decoder(encoding, 2)
        for share in encoding:
            for packet in code.compute_pieces(share, *args):
                decoder.add(packet)
        assert decoder.complete and _equal(decoder.result(), expected)


def test_piece_packets_take_galois_results():
    F = GF(65521)
    G = galois.GF(F.p)
    result = G.Random((4, 3), seed=0)
    packets = list(piece_packets(F, result, pieces=2, worker=0, seed=1))
    plain = list(piece_packets(F, result.view(np.ndarray), pieces=2, worker=0, seed=1))
    assert len(packets) == 2 and all(np.array_equal(a.payload, b.payload)
                                     for a, b in zip(packets, plain))


def _equal(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b)


@pytest.mark.bounded(120)
def test_cluster_runs_and_loads_galois_arrays(bounded):
    """Through the runtime: FieldArrays of GF(2**61 - 1) (dtype object) as data and as a
    job's argument, run and loaded, exact; another field's refused before any worker is
    asked."""
    F, G = GF(2**61 - 1), galois.GF(2**61 - 1)
    A, x = G.Random((8, 5), seed=1), G.Random(5, seed=2)
    with ffcode.Cluster(3) as cluster:
        y, report = cluster.run(MDS(F, 2, 3), A, x, scheme="compfs", pieces=2)
        assert np.array_equal(G(y), A @ x)
        resident = cluster.load(MDS(F, 2, 3), A)
        y, _ = cluster.run(resident, x)
        assert np.array_equal(G(y), A @ x)
        cluster.unload(resident)
        with pytest.raises(ValueError, match=r"GF\(65521\).*GF\(2305843009213693951\)"):
            cluster.run(MDS(F, 2, 3), galois.GF(65521).Random((8, 5), seed=3), x)
    assert isinstance(report, ffcode.Report)
