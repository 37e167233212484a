"""Codes defined outside ffcode, against its public contract only (ffcode.codes.base), run
through every layer: decode, Decoder (CFS and CompFS), RobustDecoder, Byzantine decoding,
verify, the simulator and a local Cluster with every scheme, with no change to ffcode.

PolyDot is a ProductCode given by its exponents; SparseMDS implements the contract by hand.
"""
from itertools import combinations

import numpy as np
import pytest

import ffcode
from ffcode import GF, Code, Decoder, ProductCode, RobustDecoder, functions
from ffcode.decoding import robust as byzantine, verify
from ffcode.codes import Split
from ffcode.sim import Model, ShiftedExponential, compare


class PolyDot(ProductCode):
    """C = A @ B, both split t x t (Dutta et al. 2018): A_ij at x**(j + t i), B_jl at
    x**(t - 1 - j + t (2t - 1) l); C_il is the coefficient of x**(t - 1 + t i + t (2t - 1) l).
    The support has gaps, so R is below the dense degree."""

    def __init__(self, F, t, n_workers, points=None):
        super().__init__(F, n_workers, [[j + t * i for j in range(t)] for i in range(t)],
                         [[t - 1 - j + t * (2 * t - 1) * l for l in range(t)]
                          for j in range(t)], points=points)


class SparseMDS(Code):
    """y = A @ x with A's k row blocks at the given exponents (k = len(exponents))."""
    inputs, encodes = ("A", "x"), 1

    def __init__(self, F, exponents, n_workers):
        super().__init__(F, n_workers, exponents)
        self.function = functions.matmul

    def encode(self, A, pieces=None, seed=None):
        m, A = self.pieces_for(pieces), self.F.matrix(A, "A")
        blocks = row_blocks(A, self.recovery_threshold)
        shares = zip(self.encode_blocks(self.support, list(blocks)))
        return self.make_encoding(shares, (A.shape,), (blocks[0].shape,), m, seed)

    def arguments(self, encoding, *args):
        x = self.F.elements(*args, "x")
        if x.shape[0] != encoding.shapes[0][1]:
            raise ValueError(f"x has {x.shape[0]} rows, A {encoding.shapes[0][1]} columns.")
        return (x,)

    def result_rows(self, encoding):
        return encoding.blocks[0][0]

    def result_shape(self, encoding, shape):
        return (encoding.blocks[0][0],) + tuple(shape[1:2])

    def assemble(self, encoding, blocks):
        return blocks.reshape((-1,) + blocks.shape[2:])[:encoding.shapes[0][0]]

    def check(self, inputs, output, seed=None):
        return np.array_equal(self.F.matmul(*inputs), output)

    def check_cost(self, inputs):
        return verify.RECOMPUTE

    def uncoded(self, A):
        A = self.F.matrix(A, "A")
        slabs = row_blocks(A, self.n_workers)
        return Split(tuple((slab,) for slab in slabs), lambda Y: np.concatenate(Y)[:len(A)],
                     shapes=(A.shape,))


def row_blocks(A, k):
    """A's rows as k equal blocks (zero-padded at the end): local results of one shape."""
    rows = -(-A.shape[0] // k)
    padded = np.zeros((k * rows, A.shape[1]), A.dtype)
    padded[:A.shape[0]] = A
    return padded.reshape(k, rows, -1)


F = GF(2**31 - 1)
N = 6


def job(name):
    """(code, inputs of a job, the exact output)."""
    if name == "polydot":
        A, B = F.random((9, 7), seed=1), F.random((7, 5), seed=2)
        return PolyDot(F, 2, 12), (A, B), F.matmul(A, B)
    A, x = F.random((10, 4), seed=3), F.random((4, 3), seed=4)
    return SparseMDS(F, [0, 2, 5], N), (A, x), F.matmul(A, x)


CODES = ["polydot", "sparse-mds"]


def local_results(code, shares, args, workers):
    return {w: code.compute(shares[w], *args) for w in workers}


@pytest.mark.parametrize("name", CODES)
def test_support_and_threshold(name):
    code, _, _ = job(name)
    if name == "polydot":
        assert code.support == (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)    # no x**5: R = 10, not 11
    else:
        assert code.support == (0, 2, 5)
    assert code.recovery_threshold == len(code.support)
    with pytest.raises(AttributeError, match="immutable"):
        code.n_workers = 3


@pytest.mark.parametrize("name", CODES)
def test_decode_from_every_subset(name):
    """Every R-subset of workers decodes; R - 1 results are refused."""
    code, inputs, expected = job(name)
    shares = code.encode(*inputs[:code.encodes])
    args = code.arguments(shares, *inputs[code.encodes:])
    R = code.recovery_threshold
    everyone = local_results(code, shares, args, range(code.n_workers))
    for workers in combinations(range(code.n_workers), R):
        assert np.array_equal(code.decode(shares, {w: everyone[w] for w in workers}),
                              expected)
    with pytest.raises(ValueError, match="1 more needed"):
        code.decode(shares, {w: everyone[w] for w in range(R - 1)})


@pytest.mark.parametrize("name", CODES)
def test_decoder_cfs_and_compfs(name):
    code, inputs, expected = job(name)
    m, order = 3, list(range(code.n_workers))[::-1]
    shares = code.encode(*inputs[:code.encodes])
    args = code.arguments(shares, *inputs[code.encodes:])
    decoder = Decoder(shares, m, defer=True)
    for w in order:
        for packet in ffcode.piece_packets(F, code.compute(shares[w], *args), m, w, seed=w):
            decoder.add(packet)
    assert decoder.complete and np.array_equal(decoder.result(), expected)
    pieces = code.encode(*inputs[:code.encodes], pieces=m, seed=5)
    decoder = Decoder(pieces, m)
    for w in order:
        for packet in code.compute_pieces(pieces[w], *args):
            decoder.add(packet)
    assert decoder.complete and np.array_equal(decoder.result(), expected)


@pytest.mark.parametrize("name", CODES)
def test_wrong_worker_is_corrected(name):
    code, inputs, expected = job(name)
    shares = code.encode(*inputs[:code.encodes])
    args = code.arguments(shares, *inputs[code.encodes:])
    everyone = local_results(code, shares, args, range(code.n_workers))
    everyone[1] = F.add(everyone[1], 1)
    R = code.recovery_threshold
    chosen = {w: everyone[w] for w in range(R + 2)}
    output, wrong = byzantine.decode(shares, chosen, adversaries=1, seed=0)
    assert np.array_equal(output, expected) and wrong == [1]
    decoder = RobustDecoder(shares, 2, adversaries=1, seed=0)
    for w in range(R + 2):
        for packet in ffcode.piece_packets(F, everyone[w], 2, w, seed=w):
            decoder.add(packet)
    assert decoder.complete and decoder.wrong == [1]
    assert np.array_equal(decoder.result(), expected)


@pytest.mark.parametrize("name", CODES)
def test_verify_and_simulate(name):
    code, inputs, expected = job(name)
    assert verify.output(code, inputs, expected)
    assert not verify.output(code, inputs, F.add(expected, 1))
    times = compare(Model.for_code(code, 4, piece_time=ShiftedExponential(0.1, 0),
                                   slowdown={0: 4}))
    assert times["compfs"] <= times["classic"] and times["ideal"] <= times["compfs"]


@pytest.mark.bounded(120)
@pytest.mark.parametrize("name", CODES)
def test_cluster_every_scheme(bounded, name):
    code, inputs, expected = job(name)
    with ffcode.Cluster(n_workers=code.n_workers) as cluster:
        for scheme in ("uncoded", "classic", "systematic", "cfs", "compfs"):
            output, report = cluster.run(code, *inputs, scheme=scheme, pieces=2, verify=True)
            assert np.array_equal(output, expected) and report.verified, scheme
        others = {w: (0.1, 0) for w in range(code.n_workers) if w != 2}
        faults = ffcode.Faults(corrupt={2: "random"}, delay=others)   # 2 is heard first
        output, report = cluster.run(code, *inputs, scheme="compfs", pieces=2,
                                     adversaries=1, faults=faults)
        assert np.array_equal(output, expected) and report.wrong == [2]
