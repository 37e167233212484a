"""The code contract: all that decoders, Byzantine correction, verification, the simulator
and the runtime know of a code.

A code is an immutable value over a prime field ``F`` for N = ``n_workers`` workers with
distinct nonzero ``points`` a_0..a_{N-1}. ``encode`` splits a job's data into blocks and
gives worker i a share (a tuple of arrays); the worker computes its local result
``Y_i = function(F, *share, *arguments)``, an evaluation h(a_i) of a matrix polynomial
h(x) = sum over e in ``support`` of H_e x**e. Any R = len(support) local results whose
rows of ``evaluations`` (a_i ** e) are independent determine every H_e, and the output's
blocks are combinations of them (``outputs``), assembled by the code.

Attributes
  F, n_workers, points   the field, the workers, their points (read-only arrays)
  support                the exponents of h, increasing; recovery_threshold = len(support);
                         dense when they are 0..R-1
  evaluations            (N, R) points[i] ** support[d]: worker i's decoding equation
  outputs                (outputs, R) or None: output block o = sum_d outputs[o, d] H_d
                         (None: the output blocks are the H_d in support order);
                         output_selection says which H_d when outputs only selects
  function               the worker's computation, module-level (workers import it by path)
  inputs, encodes        the names of a job's inputs, and how many of them (the first,
                         its data) encode takes; the rest are arguments every worker
                         receives unchanged (as MDS's x), which may change from job to job
                         while the data stays on the workers
  row_linear_operand     the operand of a share that ``function`` is linear in the rows of
                         (f(G @ X) = G @ f(X) for every G mixing rows), or None; computation
                         at full speed (``encode(..., pieces=m)``) needs one
  every_r_decodes        whether any R results determine h (True unless a code says not, as
                         HierarchicalCode does); correcting wrong results needs it
Methods
  encode(*data, pieces=None, seed=None) -> Encoding   shares plus layout; never the masks
  arguments(encoding, *args) -> tuple                 a job's arguments, checked (against
                                                      an Encoding or an uncoded Split)
  compute(share, *args) -> array                      a worker's local result
  result_rows(encoding) -> int | None                 a local result's rows, when fixed
  result_shape(encoding, shape) -> tuple              a local result's shape, given one seen
  assemble(encoding, blocks) -> output                the output from its (outputs, ...) blocks
  decoding_matrix(workers) -> (outputs, R)            the outputs from those R results
  decode(encoding, results) -> output                 from {worker: local result}
  check(inputs, output, seed=None) -> bool            whether output is exact, cheaply
  check_cost(inputs) -> float | None                  the check's work / the job's (None: none)
  uncoded(*data) -> Split                             the data without redundancy
  check_inputs(inputs) -> inputs                      as many as ``inputs`` names

A new code defines ``support``, ``outputs``, ``function``, ``encode`` (building its shares
and calling ``make_encoding``), ``result_rows``, ``result_shape``, ``assemble`` and, if it can,
``check``, ``check_cost`` and ``uncoded``; codes of matrix products need only their
exponents (``ffcode.codes.ProductCode``). ``encode_rows`` makes every worker's combination
of a code's blocks in one product, and with ``piece_coefficients`` (drawn before it) the
piece blocks of computation at full speed too, without the combinations in between.

>>> from ffcode import GF, MDS
>>> code = MDS(GF(65521), k=2, n_workers=3)
>>> code.support, code.recovery_threshold, code.dense, code.evaluations.tolist()
((0, 1), 2, True, [[1, 1], [1, 2], [1, 3]])
>>> shares = code.encode([[1, 2], [3, 4]])
>>> results = {w: code.compute(shares[w], [1, 1]) for w in (2, 0)}
>>> code.decode(shares, results).tolist()
[3, 7]
"""
from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, islice
from numbers import Integral
from typing import Any, ClassVar, Literal, Optional, overload

import numpy as np

from ffcode import _matmul, checks
from ffcode._blocks import rows_of, split_rows
from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int, Output, Seed
from ffcode.constraints import Boolean, InstanceOf, Interval, Spec, validate
from ffcode.errors import DecodingError, InvalidParameterError
from ffcode.pieces import Packet, PieceShare, pieces_count, piece_results

SUBSETS_CHECKED = 4096      # R-subsets of points tried at construction for a sparse support

# The constraints codes declare on their arguments (see Code._parameter_constraints).
FIELD = InstanceOf(PrimeField, what="a field from ffcode.GF")
COUNT = Interval(Integral, 1, None)         # workers, blocks, a degree: at least 1
FLAG = Boolean()


@dataclass(frozen=True, eq=False)
class Encoding(Sequence):
    """What ``encode`` returns: worker i's share is ``encoding[i]`` (a tuple of arrays, or a
    PieceShare for computation at full speed), and the layout decoding needs: the shapes of
    the data as given, each encoded operand's block shape (after zero padding), the number
    of pieces, the seed of the piece combinations, how many random mask blocks were mixed
    in (never their values) and the data's largest magnitude (signed codes)."""
    code: "Code"
    shares: tuple
    shapes: tuple
    blocks: tuple
    pieces: Optional[int] = None
    seed: Any = None
    masks: int = 0
    magnitude: Optional[int] = None

    def __len__(self) -> int:
        return len(self.shares)

    def __getitem__(self, i: Any) -> Any:
        return self.shares[i]

    def __iter__(self) -> Iterator:
        return iter(self.shares)

    def __repr__(self) -> str:
        return (f"Encoding({self.code!r}, shapes={self.shapes}, blocks={self.blocks}, "
                f"pieces={self.pieces}, masks={self.masks})")


@dataclass(frozen=True, eq=False)
class Split:
    """The data of a job without redundancy: ``shares[j]`` for worker j (a tuple of arrays;
    workers beyond them idle), who computes ``function(F, *shares[j], *arguments)``; the local
    results, in order, ``assemble`` turns into the output. They must share one shape (pad
    the slabs, as ProductCode does): the master refuses a result shaped unlike the first.
    ``shapes`` and ``magnitude`` describe the data as an Encoding's do, for ``arguments``
    to check a job's arguments against; ``code`` is the code that split it (None: not
    said)."""
    shares: tuple
    assemble: Callable[[list], Output]
    shapes: tuple = ()
    magnitude: Optional[int] = None
    code: Optional["Code"] = None

    def __len__(self) -> int:
        return len(self.shares)

    def __getitem__(self, j: int) -> Any:
        return self.shares[j]

    def __iter__(self) -> Iterator:
        return iter(self.shares)


class Code:
    """The base of every code (see the module docstring for the contract). Attributes are
    set once, in ``__init__``; afterwards setting one raises AttributeError."""
    inputs: tuple = ("data",)
    encodes = 1
    # Each code's encode takes its own data (``inputs``); every one returns an Encoding.
    encode: Callable[..., Encoding]
    row_linear_operand: Optional[int] = 0
    # What each argument of the constructor may be, as data (ffcode.constraints; a code
    # extends its base's): ``validate`` checks them first, in the order of the signature,
    # and gives them converted (int() only tells the type checker that an integer is an
    # int); the rules that tie arguments together (k <= n_workers, ...) are code after it.
    _parameter_constraints: ClassVar[Mapping[str, Spec]] = {"F": FIELD, "n_workers": COUNT}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def frozen_init(self: Code, *args: Any, **kw: Any) -> None:
            init(self, *args, **kw)
            if type(self).__init__ is frozen_init:         # the outermost __init__ is done
                object.__setattr__(self, "_frozen", True)

        setattr(cls, "__init__", frozen_init)   # wraps the class's own __init__

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable: make a new code "
                                 f"instead of setting {name!r}.")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}.")

    def __init__(self, F: PrimeField, n_workers: Int, support: Sequence[Int],
                 points: Optional[ArrayLike] = None, reserved: int = 0) -> None:
        """``support``: the exponents of the workers' polynomial h; ``reserved``: distinct
        nonzero points the code needs besides the workers' (LCC's interpolation points)."""
        n_workers = int(validate(Code._parameter_constraints,
                                 {"F": F, "n_workers": n_workers})["n_workers"])
        support = tuple(sorted({checks.integer(e, "support", low=0) for e in support}))
        if not support:
            raise InvalidParameterError("A code's support must hold at least one exponent.")
        R = len(support)
        if n_workers < R:
            raise InvalidParameterError(f"This code needs results from {R} workers (its recovery "
                                        f"threshold), but n_workers is {n_workers}.")
        if n_workers + reserved > F.p - 1:
            extra = f" plus {reserved} interpolation points" if reserved else ""
            raise InvalidParameterError(f"GF({F.p}) is too small for {n_workers} workers{extra}: "
                                        f"it has only {F.p - 1} distinct nonzero points.")
        points = np.arange(1, n_workers + 1) if points is None else points
        points = F.points(points, "points")
        if points.shape[0] != n_workers:
            raise InvalidParameterError(f"Argument 'points' must hold one point per worker "
                                        f"({n_workers}), not {points.shape[0]}.")
        if not points.all():
            raise InvalidParameterError("Argument 'points' must be nonzero.")
        self.F, self.n_workers, self.support = F, n_workers, support
        self.recovery_threshold = R
        self.points = read_only(points)
        self.evaluations = read_only(powers(F, points, support))
        if not self.dense:
            self._check_subsets()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.F!r}, n_workers={self.n_workers}, "
                f"recovery_threshold={self.recovery_threshold})")

    def _check_subsets(self) -> None:
        """Refuse points at which some R results would not determine h (a singular
        generalized Vandermonde): every R-subset up to SUBSETS_CHECKED of them."""
        R, N = self.recovery_threshold, self.n_workers
        subsets = combinations(range(N), R)
        for chosen in islice(subsets, SUBSETS_CHECKED):
            if self.F.rank(self.evaluations[list(chosen)]) < R:
                raise InvalidParameterError(
                    f"At the points {self.points.tolist()} the results of workers "
                    f"{list(chosen)} do not determine the code's polynomial (support "
                    f"{list(self.support)}): their generalized Vandermonde matrix is "
                    f"singular in GF({self.F.p}). Choose other points or a larger prime.")

    # -- the contract's defaults -----------------------------------------------------------

    outputs: Optional[np.ndarray] = None
    function: Optional[Callable] = None
    every_r_decodes = True      # any R results determine h (what correcting wrong ones needs)

    @property
    def dense(self) -> bool:
        """Whether the support is 0..R-1, so that h is any polynomial of degree < R, its
        evaluations a Vandermonde system (inverted in O(R**2), Reed-Solomon correctable)."""
        return self.support == tuple(range(self.recovery_threshold))

    @property
    def row_linear(self) -> bool:
        """Whether the code computes at full speed (it has a row-linear operand)."""
        return self.row_linear_operand is not None

    def check_inputs(self, inputs: Sequence) -> Sequence:
        """A job's inputs, checked to be as many as ``inputs`` names."""
        names = ", ".join(self.inputs) + ("," if len(self.inputs) == 1 else "")
        if len(inputs) != len(self.inputs):
            raise InvalidParameterError(f"{type(self).__name__} runs on inputs ({names}), got "
                                        f"{len(inputs)} argument{'s' if len(inputs) != 1 else ''}.")
        return inputs

    def arguments(self, encoding: Encoding | Split, *args: ArrayLike) -> tuple:
        """A job's arguments, checked against the encoding or split (none by default)."""
        self.check_encoding(encoding, split=True)
        if args:
            raise InvalidParameterError(f"{type(self).__name__} takes no arguments beyond its "
                                        f"encoded data, got {len(args)}.")
        return ()

    def compute(self, share: tuple, *args: ArrayLike) -> np.ndarray:
        """The worker's local result: ``function(F, *share, *args)``, checked to be elements."""
        if not isinstance(share, tuple):
            raise InvalidParameterError(f"Argument 'share' must be a share from encode (a tuple of "
                                        f"arrays), not {type(share).__name__}.")
        if self.function is None:
            raise TypeError(f"{type(self).__name__} defines no function for its workers.")
        return self.F.elements(self.function(self.F, *share, *args), "local result")

    def compute_pieces(self, share: PieceShare, *args: ArrayLike) -> Iterator[Packet]:
        """The packets of a PieceShare, each yielded the moment its block is computed."""
        if not isinstance(share, PieceShare):
            raise InvalidParameterError(f"Argument 'share' must be a PieceShare from encode(..., "
                                        f"pieces=m), not {type(share).__name__}.")
        if not 0 <= share.worker < self.n_workers:
            raise InvalidParameterError(f"The share's worker {share.worker} is not a worker of "
                                        "this code.")
        return piece_results(lambda *operands: self.compute(operands, *args), share)

    def result_rows(self, encoding: Encoding) -> Optional[int]:
        """The rows of a local result, or None when the encoding does not fix them."""
        return None

    def result_shape(self, encoding: Encoding, shape: tuple) -> tuple:
        """The shape every local result must have, given one seen (or implied by a packet)."""
        return tuple(shape)

    def check(self, inputs: Sequence, output: Output, seed: Seed = None) -> bool:
        raise ValueError(f"{self!r} has no cheap check of its outputs.")

    def check_cost(self, inputs: Sequence) -> Optional[float]:
        """The check's multiply-adds over the job's (fingerprints.RECOMPUTE: the check computes
        the output again; None: no check)."""
        return None

    def uncoded(self, *data: ArrayLike) -> Split:
        raise ValueError(f"{self!r} has no uncoded split.")

    # -- encoding helpers for codes ---------------------------------------------------------

    def pieces_for(self, pieces: Optional[Int]) -> Optional[int]:
        """The checked number of pieces for computation at full speed, or None; encode
        asks first, before any work."""
        if pieces is None:
            return None
        m = pieces_count(pieces)
        if self.row_linear_operand is None:
            raise InvalidParameterError(f"{type(self).__name__} computes at full speed only when f "
                                        "is row-linear (linear in the rows: f(G @ X) = G @ f(X) "
                                        "for every matrix G mixing the rows of X, as for f(X) = X "
                                        "@ W; an elementwise f such as the square is not); "
                                        "construct it with row_linear=True if f is.")
        return m

    def encode_blocks(self, exponents: Sequence[int], blocks: Sequence[np.ndarray]) -> list:
        """Worker i's sum_j blocks[j] * points[i] ** exponents[j], for every worker."""
        return rows_of(encode_rows(self.F, powers(self.F, self.points, exponents), blocks))

    def piece_coefficients(self, pieces: Optional[int], seed: Seed = None,
                           rng: Optional[np.random.Generator] = None) -> Optional[list]:
        """The workers' (m, m) piece coefficients G_0..G_{N-1} for pieces=m (None for None),
        drawn in worker order from rng (default: a generator seeded by seed, fresh entropy for
        None), exactly as make_encoding draws them: a code that draws them first (after its
        masks) encodes its row-linear operand and its pieces in one product (encode_rows)
        and gives them to make_encoding."""
        if pieces is None:
            return None
        rng = np.random.default_rng(seed) if rng is None else rng
        return [self.F.random((pieces, pieces), rng) for _ in range(self.n_workers)]

    def make_encoding(self, shares: Sequence[tuple], shapes: tuple, blocks: tuple,
                      pieces: Optional[int] = None, seed: Seed = None,
                      rng: Optional[np.random.Generator] = None,
                      coeffs: Optional[Sequence[np.ndarray]] = None, **layout: Any) -> Encoding:
        """The Encoding of these shares; with pieces=m (checked by pieces_for) each share's
        row-linear operand becomes m random combinations of its row pieces, drawn from rng
        (default: a generator seeded by seed, fresh entropy for None). Given ``coeffs`` (what
        piece_coefficients drew), the row-linear operand of share i already is those
        combinations, (m, ceil(rows / m), ...) as encode_rows makes them with coeffs[i]."""
        made: list = [tuple(s) for s in shares]
        if pieces is not None:
            if coeffs is None:
                rng = np.random.default_rng(seed) if rng is None else rng
                made = [self._piece_share(w, share, pieces, rng)
                        for w, share in enumerate(made)]
            else:
                o = self._operand()
                made = [PieceShare(w, G, share[o], share[:o] + share[o + 1:], o)
                        for w, (G, share) in enumerate(zip(coeffs, made))]
        if isinstance(seed, np.random.Generator):
            seed = None                     # a generator's state is not a seed to record
        return Encoding(self, tuple(made), shapes, blocks, pieces, seed, **layout)

    def _operand(self) -> int:
        """The row-linear operand, which a code that computes in pieces has."""
        if self.row_linear_operand is None:
            raise TypeError(f"{type(self).__name__} has no row-linear operand to split "
                            "into pieces.")
        return self.row_linear_operand

    def _piece_share(self, worker: int, share: tuple, m: int,
                     rng: np.random.Generator) -> PieceShare:
        o = self._operand()
        G = self.F.random((m, m), rng)
        blocks = encode_rows(self.F, np.ones((1, 1), self.F.dtype), [share[o]], [G])
        return PieceShare(worker, G, blocks[0], share[:o] + share[o + 1:], o)

    @overload
    def check_encoding(self, encoding: Encoding, split: Literal[False] = ...) -> Encoding: ...

    @overload
    def check_encoding(self, encoding: Encoding | Split,
                       split: bool = ...) -> Encoding | Split: ...

    def check_encoding(self, encoding: Encoding | Split,
                       split: bool = False) -> Encoding | Split:
        """The encoding, checked to be this code's (or, with split=True, also a Split that
        this code's uncoded made or that names no code)."""
        if split and isinstance(encoding, Split):
            if encoding.code not in (None, self):
                raise InvalidParameterError(f"The split was made by {encoding.code!r}, not by this "
                                            f"{self!r}.")
            return encoding
        if not isinstance(encoding, Encoding):
            raise InvalidParameterError("Argument 'encoding' must be what "
                                        f"{type(self).__name__}.encode returned, not "
                                        f"{type(encoding).__name__}.")
        if encoding.code is not self:
            raise InvalidParameterError(f"The encoding was made by {encoding.code!r}, not by this "
                                        f"{self!r}.")
        return encoding

    # -- decoding ---------------------------------------------------------------------------

    def decoding_matrix(self, workers: Sequence[int]) -> np.ndarray:
        """W (outputs x R): the output blocks are W @ (the local results of these R
        workers); DecodingError when their results do not determine h."""
        workers = list(workers)
        if self.dense:              # a Vandermonde matrix: inverted in O(R**2)
            inverse = self.F.vandermonde_inverse(self.points[workers])
        else:
            try:
                inverse = self.F.matinv(self.evaluations[workers])
            except np.linalg.LinAlgError:
                raise DecodingError(f"The results of workers {workers} do not determine the "
                                    f"output: their generalized Vandermonde is singular.") \
                    from None
        return inverse if self.outputs is None else self.F.matmul(self.outputs, inverse)

    @property
    def output_selection(self) -> Optional[np.ndarray]:
        """Which coefficient each output block is, when ``outputs`` only selects (as
        MatDot's one of 2s - 1), else None: decoders then read just those."""
        return None if self.outputs is None else _selection(self.outputs)

    def output_blocks(self, H: np.ndarray) -> np.ndarray:
        """The output blocks (outputs, ...) from the R coefficient blocks H (R, ...)."""
        if self.outputs is None:
            return H
        picked = self.output_selection
        if picked is not None:
            return H[picked]
        flat = H.reshape(H.shape[0], -1)
        out = _matmul.combine(self.F.p, self.outputs, list(flat), self.F.dtype)
        return out.reshape((self.outputs.shape[0],) + H.shape[1:])

    def worker_index(self, w: Any) -> int:
        w = checks.integer(w, "worker index")
        if not 0 <= w < self.n_workers:
            raise InvalidParameterError(f"Worker index {w} is out of range: this code has workers "
                                        f"0..{self.n_workers - 1}.")
        return w

    def checked_results(self, encoding: Encoding, results: Mapping[int, ArrayLike],
                        least: int, what: str = "Decoding") -> tuple[list, list]:
        """(sorted worker indices, their local results as checked arrays of the shape the
        encoding implies) of a {worker: result} mapping of at least ``least`` workers."""
        self.check_encoding(encoding)
        if not isinstance(results, Mapping):
            raise InvalidParameterError("Argument 'results' must be a mapping of worker index to "
                                        f"local result, not {type(results).__name__}.")
        workers = sorted(self.worker_index(w) for w in results)
        if len(workers) < least:
            raise InvalidParameterError(f"{what} needs results from {least} distinct workers, got "
                                        f"{len(workers)}: {least - len(workers)} more needed.")
        arrays = [self.F.elements(results[w], "results") for w in workers]
        expected = self.result_shape(encoding, arrays[0].shape)
        for y in arrays:
            if y.shape != expected:
                raise InvalidParameterError(f"A local result has shape {y.shape}, expected "
                                            f"{expected}.")
        return workers, arrays

    def independent(self, workers: Sequence[int]) -> list[int]:
        """The first R of these workers whose results determine h (DecodingError if no R
        of them do)."""
        R = self.recovery_threshold
        if self.dense:
            return list(workers[:R])
        chosen: list = []
        for w in workers:
            if self.F.rank(self.evaluations[chosen + [w]]) > len(chosen):
                chosen.append(w)
                if len(chosen) == R:
                    return chosen
        raise DecodingError(f"The results of workers {list(workers)} do not determine the "
                            f"output: their equations have rank {len(chosen)} < R = {R}.")

    def decode(self, encoding: Encoding, results: Mapping[int, ArrayLike]) -> Output:
        """The exact output from a {worker_index: local_result} mapping of at least R
        workers. Every result is checked; the lowest worker indices whose results
        determine h are used when there are more."""
        workers, arrays = self.checked_results(encoding, results, self.recovery_threshold)
        checked = dict(zip(workers, arrays))
        chosen = self.independent(workers)
        Y = [checked[w] for w in chosen]
        W = self.decoding_matrix(chosen)
        blocks = _matmul.combine(self.F.p, W, Y, self.F.dtype)
        return self.assemble(encoding, blocks.reshape((W.shape[0],) + Y[0].shape))

    def assemble(self, encoding: Encoding, blocks: np.ndarray) -> Output:
        raise NotImplementedError

    # -- signed (fixed-point) data ------------------------------------------------------------

    def check_magnitude(self, bound: int, what: str) -> None:
        """Refuse signed data whose exact integer result could wrap around mod p."""
        refuse_wraparound(self.F, bound, what)


def refuse_wraparound(F: PrimeField, bound: int, what: str) -> None:
    """InvalidParameterError when an exact signed result, up to ``bound`` in magnitude
    (``what`` names that bound), could pass (p - 1) / 2 and wrap around mod p."""
    if bound > F.max_signed:
        raise InvalidParameterError(f"With signed data the exact result could reach {what} = "
                                    f"{bound}, beyond (p-1)/2 = {F.max_signed}, and wrap "
                                    "around mod p. Use a larger prime or a smaller fixed-point "
                                    "scale.")


def powers(F: PrimeField, points: np.ndarray, exponents: Sequence[Int]) -> np.ndarray:
    """(len(points), len(exponents)): points[i] ** exponents[j] in F."""
    p = F.p
    return np.array([[pow(int(a), int(e), p) for e in exponents] for a in points],
                    dtype=F.dtype).reshape(len(points), len(exponents))


# Encoding: every worker's combination of the blocks, in as few products as the shapes allow.
# A fused product (one row per worker's piece block, one column per piece of a block) costs
# K*m multiply-adds per element of output against K + m for two products (the combination,
# then its pieces' combinations), but it reads the blocks once and writes only the output:
# on the main job's shapes (N = 12, 8 MiB blocks) it is the faster while K*m is at most
# K + m + FUSED_EXTRA (bench/bench_shares.py --encode).
FUSED_EXTRA = 3


def encode_rows(F: PrimeField, coefficients: np.ndarray, blocks: Sequence[np.ndarray],
                coeffs: Optional[Sequence[np.ndarray]] = None) -> np.ndarray:
    """Every worker's combination of K equally shaped blocks: (N, *shape), worker i's
    sum_j coefficients[i, j] blocks[j], for coefficients (N, K) in F.

    With coeffs (N matrices (m, m): the pieces for computation at full speed), worker i's m
    random combinations of the row pieces of that combination instead: (N, m, ceil(rows /
    m), *shape[1:]), block l = sum_l' coeffs[i][l, l'] (row piece l' of worker i's
    combination, zero-padded as split_rows pads), computed without the combinations
    themselves: in one product of the (N m, K m) matrix of the coefficients[i, j]
    coeffs[i][l, l'] against the K m pieces of the blocks, or, when that would cost too
    many multiply-adds, two products per worker through one scratch buffer."""
    C = np.asarray(coefficients)
    N, K = C.shape
    if K != len(blocks) or K < 1:
        raise InvalidParameterError(f"encode_rows: {K} coefficients per worker for {len(blocks)} "
                                    "blocks.")
    blocks = [np.asarray(b) for b in blocks]
    shape = blocks[0].shape
    size = math.prod(shape)
    if any(b.size != size for b in blocks):
        raise InvalidParameterError(f"encode_rows: the blocks must be equally large, not of shapes "
                                    f"{sorted({b.shape for b in blocks})}.")
    blocks = [np.ascontiguousarray(b).reshape(shape) for b in blocks]    # 0-d stays 0-d
    if coeffs is None:
        out = np.empty((N,) + shape, F.dtype)
        _matmul.combine_into(F.p, C, [b.reshape(-1) for b in blocks], out.reshape(N, size))
        return out
    if len(shape) < 1:
        raise InvalidParameterError("Full-speed computation splits the shares into rows; 0-d "
                                    "blocks have none.")
    if len(coeffs) != N:
        raise InvalidParameterError(f"encode_rows: {len(coeffs)} piece coefficient matrices for "
                                    f"{N} workers.")
    m = coeffs[0].shape[0]
    rows = -(-shape[0] // m)
    piece = rows * math.prod(shape[1:])
    out = np.empty((N, m, rows) + shape[1:], F.dtype)
    flat = out.reshape(N * m, piece)
    if not piece:
        return out
    G = np.stack(coeffs)
    if K * m <= K + m + FUSED_EXTRA:
        W = F.mul(C[:, None, :, None], G[:, :, None, :]).reshape(N * m, K * m)
        pieces = [row for b in blocks for row in split_rows(b, m).reshape(m, piece)]
        # several blocks and pieces: K m <= 10 terms, which rowcomb takes at every prime
        # (through the limb products' dgemms, a few columns of this shape are slow)
        _matmul.combine_into(F.p, W, pieces, flat, rowcomb=K > 1 and m > 1)
        return out
    # Two products per worker: its combination into the scratch (whose padding rows stay
    # zero), then the combinations of its pieces into its place in out.
    scratch = np.zeros(m * piece, F.dtype)
    combination = scratch[:size].reshape(1, size)
    whole = [b.reshape(-1) for b in blocks]
    for i in range(N):
        _matmul.combine_into(F.p, C[i:i + 1], whole, combination)
        _matmul.combine_into(F.p, G[i], scratch.reshape(m, piece), flat[i * m:(i + 1) * m])
    return out


def magnitude(F: PrimeField, x: ArrayLike) -> int:
    """max |x| for elements read as signed integers (0 for empty x)."""
    signed = F.to_signed(x)
    return int(np.abs(signed).max()) if signed.size else 0


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of a, which cannot be made writable again (a code's arrays are
    part of its value)."""
    a.flags.writeable = False
    view = a.view()
    view.flags.writeable = False
    return view


def secure_random(F: PrimeField, size: int) -> np.ndarray:
    """size uniform elements of F from os.urandom, by rejection of the top partial range."""
    word = np.dtype(np.uint32 if F.dtype == np.uint32 else np.uint64)
    span = 2 ** (8 * word.itemsize)
    limit = span // F.p * F.p
    out = np.empty(size, F.dtype)
    filled = 0
    while filled < size:
        words = np.frombuffer(os.urandom(word.itemsize * (size - filled)), word)
        if limit < span:
            words = words[words < limit]
        take = words % word.type(F.p)
        out[filled:filled + take.shape[0]] = take
        filled += take.shape[0]
    return out


def _selection(outputs: np.ndarray) -> Optional[np.ndarray]:
    """The column each output row picks when outputs is a 0/1 selection, else None."""
    if ((outputs != 0).sum(axis=1) == 1).all() and set(np.unique(outputs)) <= {0, 1}:
        return outputs.argmax(axis=1)
    return None
