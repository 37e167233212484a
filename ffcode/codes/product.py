"""Codes for matrix products C = A @ B given by the exponents of their encoding polynomials:
the general polynomial framework (entangled polynomial codes, with random mask terms for
security). MDS, PolynomialCode and MatDot are short definitions on it."""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product
from typing import Any, Optional

import numpy as np

from ffcode import checks, fingerprints, functions
from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int, Output, Seed
from ffcode._blocks import rows_of
from ffcode.codes.base import (FLAG, Code, Encoding, Split, encode_rows, magnitude, powers,
                                read_only, secure_random)
from ffcode.constraints import validate
from ffcode.errors import InvalidParameterError

DESCRIBED_TERMS = 1 << 12       # exponents and masks a code built from a description may have
DESCRIBED_EXPONENT = 1 << 20    # and their largest value


class ProductCode(Code):
    """C = A @ B from any R results, for a code given by its exponents.

    A is split into the blocks of a grid shaped like ``a_exponents`` (r row blocks by q
    column blocks) and B into the q by c blocks of ``b_exponents``; worker i multiplies

        A~(x) = sum_uv A_uv x**a_exponents[u][v] + sum_j Z_j x**a_masks[j]
        B~(x) = sum_vw B_vw x**b_exponents[v][w] + sum_j W_j x**b_masks[j]

    at its point, the Z_j and W_j uniformly random blocks (from the operating system's
    CSPRNG unless a seed is given). The product's support is every sum of an A exponent and
    a B exponent; output block C_uw = sum_v A_uv B_vw is the coefficient of the one exponent
    a[u][v] + b[v][w] (equal for every v), which no other pair of terms may reach. With
    ``b_exponents=None`` B is not encoded: it is the job's argument (MDS's x), sent whole
    to every worker, and A is split along its rows only. ``signed=True`` reads elements as
    signed integers (see ``F.from_real``) and refuses data whose exact product could wrap.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> code = ProductCode(F, 4, a_exponents=[[0], [1]], b_exponents=[[0, 3]])
    >>> code.support, code.recovery_threshold
    ((0, 1, 3, 4), 4)
    >>> shares = code.encode([[1, 2], [3, 4]], [[1, 0], [0, 1]])
    >>> code.decode(shares, {i: code.compute(shares[i]) for i in range(4)}).tolist()
    [[1, 2], [3, 4]]
    """
    # (the exponents are grids, checked by _grid; the points by the field)
    _parameter_constraints = {**Code._parameter_constraints, "signed": FLAG}

    def __init__(self, F: PrimeField, n_workers: Int, a_exponents: Sequence[Sequence[Int]],
                 b_exponents: Optional[Sequence[Sequence[Int]]] = None,
                 a_masks: Sequence[Int] = (), b_masks: Sequence[Int] = (),
                 points: Optional[ArrayLike] = None, signed: bool = False) -> None:
        signed = validate(ProductCode._parameter_constraints,
                          {"F": F, "n_workers": n_workers, "signed": signed})["signed"]
        a = _grid(a_exponents, "a_exponents")
        a_masks, b_masks = _masks(a_masks, "a_masks"), _masks(b_masks, "b_masks")
        if b_exponents is None:
            if a.shape[1] != 1:
                raise InvalidParameterError("With B not encoded (b_exponents=None) A splits along "
                                            "its rows only: a_exponents must have one column, not "
                                            f"{a.shape[1]}.")
            if b_masks:
                raise InvalidParameterError("With B not encoded (b_exponents=None) there is "
                                            "nothing to mask: b_masks must be empty.")
            b = np.zeros((1, 1), np.int64)
        else:
            b = _grid(b_exponents, "b_exponents")
            if b.shape[0] != a.shape[1]:
                raise InvalidParameterError(f"a_exponents has {a.shape[1]} columns of blocks, "
                                            f"b_exponents {b.shape[0]} rows: A's column blocks and "
                                            "B's row blocks must match.")
        exponents = _output_exponents(a, b, a_masks, b_masks)
        support = sorted({x + y for x in [*a.flat, *a_masks] for y in [*b.flat, *b_masks]})
        super().__init__(F, n_workers, support, points)
        self.a_exponents, self.b_exponents = read_only(a), read_only(b)
        self.a_masks, self.b_masks = a_masks, b_masks
        self.encodes = 1 if b_exponents is None else 2
        self.inputs = ("A", "x") if b_exponents is None else ("A", "B")
        self.signed = signed
        self.function = functions.matmul
        index = {e: d for d, e in enumerate(self.support)}
        picked = np.array([index[e] for e in exponents.flat])
        if exponents.size == len(support):  # every coefficient is an output block: decoded
            self.outputs = None             # in support order, placed by assemble
            self._placement = read_only(picked.reshape(exponents.shape))
        else:
            outputs = np.zeros((exponents.size, len(support)), F.dtype)
            outputs[np.arange(exponents.size), picked] = 1
            self.outputs = read_only(outputs)
            self._placement = read_only(np.arange(exponents.size).reshape(exponents.shape))
        self.output_exponents = read_only(exponents)

    def description(self) -> dict:
        """The code as plain JSON-ready values: its exponents, masks, points and signedness,
        from which ``from_description`` builds it again (a relay's inner code travels so,
        never pickled)."""
        return {"n_workers": self.n_workers, "a_exponents": self.a_exponents.tolist(),
                "b_exponents": None if self.encodes == 1 else self.b_exponents.tolist(),
                "a_masks": list(self.a_masks), "b_masks": list(self.b_masks),
                "points": [int(a) for a in self.points], "signed": self.signed}

    @classmethod
    def from_description(cls, F: PrimeField, description: Any) -> "ProductCode":
        """The ProductCode over F that ``description()`` gave, every value checked (it may
        come from the network): ValueError or TypeError naming what is wrong, also for a
        code too large to be one (more than DESCRIBED_TERMS exponents and masks, or an
        exponent above DESCRIBED_EXPONENT).

        >>> from ffcode import GF, MDS
        >>> F = GF(65521)
        >>> code = ProductCode.from_description(F, MDS(F, 2, 3).description())
        >>> code.recovery_threshold, code.points.tolist(), code.encodes
        (2, [1, 2, 3], 1)
        """
        fields = {"n_workers", "a_exponents", "b_exponents", "a_masks", "b_masks",
                  "points", "signed"}
        if not isinstance(description, dict) or set(description) != fields:
            raise InvalidParameterError(f"A code's description needs the fields {sorted(fields)}.")
        d = description
        terms = [e for grid in (d["a_exponents"], d["b_exponents"] or [])
                 if isinstance(grid, list) for row in grid
                 for e in (row if isinstance(row, list) else [row])]
        for name in ("a_masks", "b_masks"):
            if not isinstance(d[name], list):
                raise InvalidParameterError(f"A code's description needs a list of {name}.")
            terms += d[name]
        if len(terms) > DESCRIBED_TERMS or any(type(e) is int and e > DESCRIBED_EXPONENT
                                               for e in terms):
            raise InvalidParameterError(f"A described code may have at most {DESCRIBED_TERMS} "
                                        f"exponents and masks, each at most {DESCRIBED_EXPONENT}.")
        if type(d["signed"]) is not bool or not isinstance(d["points"], list):
            raise InvalidParameterError("A code's description needs a list of points and a boolean "
                                        "'signed'.")
        return cls(F, d["n_workers"], d["a_exponents"], d["b_exponents"], d["a_masks"],
                   d["b_masks"], points=d["points"], signed=d["signed"])

    @property
    def masks(self) -> int:
        """The random mask blocks mixed into each share (A's and B's together)."""
        return len(self.a_masks) + len(self.b_masks)

    # -- encoding -----------------------------------------------------------------------------

    def encode(self, A: ArrayLike, B: Optional[ArrayLike] = None, pieces: Optional[Int] = None,
               seed: Seed = None) -> Encoding:
        """The n_workers shares (A~(a_i), B~(a_i)) (just (A~(a_i),) when B is not
        encoded), blocks zero-padded; with pieces=m, PieceShares for computation at full
        speed (random combinations of A~'s row pieces, from seed). The masks come from
        the operating system's CSPRNG unless a seed is given (reproducible, not private)."""
        m = self.pieces_for(pieces)
        if (B is None) != (self.encodes == 1):
            takes = "A alone (x is an argument of compute)" if self.encodes == 1 else "A and B"
            raise InvalidParameterError(f"{type(self).__name__}.encode takes {takes}.")
        A = self.F.matrix(A, "A")
        operands = [(A, self.a_exponents, self.a_masks)]
        if B is not None:
            B = self.F.matrix(B, "B")
            _chain(A, B, "B")
            operands.append((B, self.b_exponents, self.b_masks))
        size_A = magnitude(self.F, A) if self.signed else None
        if self.signed and B is not None:
            self.check_magnitude(A.shape[1] * size_A * magnitude(self.F, B),
                                 "inner * |A| * |B|")
        rng = None if seed is None else np.random.default_rng(seed)
        grids = []
        for X, exponents, masks in operands:
            grid = _split(X, *exponents.shape)
            if masks:
                count = len(masks) * grid[0].size
                noise = secure_random(self.F, count) if rng is None else \
                    self.F.random(count, rng)
                grid += list(noise.reshape((len(masks),) + grid[0].shape))
            grids.append((powers(self.F, self.points, [*exponents.flat, *masks]), grid))
        # the pieces' coefficients after every mask, as make_encoding would draw them, so
        # that A's shares and their piece combinations come out of one product
        coeffs = self.piece_coefficients(m, seed, rng)
        coded = [rows_of(encode_rows(self.F, E, grid, coeffs if o == self.row_linear_operand
                                     else None))
                 for o, (E, grid) in enumerate(grids)]
        return self.make_encoding(list(zip(*coded)), tuple(X.shape for X, _, _ in operands),
                                  tuple(grid[0].shape for _, grid in grids), m, seed, rng,
                                  coeffs, masks=self.masks, magnitude=size_A)

    def arguments(self, encoding: Encoding | Split, *args: ArrayLike) -> tuple:
        """(x,) checked: a vector or matrix that chains with the encoded A, refused if signed
        data could wrap (B not encoded); () otherwise."""
        if self.encodes == 2:
            return super().arguments(encoding, *args)
        self.check_encoding(encoding, split=True)
        if len(args) != 1:
            raise InvalidParameterError(f"{type(self).__name__} takes one argument x beyond its "
                                        f"encoded A, got {len(args)}.")
        x = self.F.elements(args[0], "x")
        checks.ndim(x, (1, 2), "x")
        rows, cols = encoding.shapes[0]
        if x.shape[0] != cols:
            raise InvalidParameterError("Arguments 'A' and 'x' do not chain: shapes "
                                        f"{(rows, cols)} and {x.shape}.")
        if self.signed:
            self.check_magnitude(cols * encoding.magnitude * magnitude(self.F, x),
                                 "cols * |A| * |x|")
        return (x,)

    def compute(self, share: tuple, *args: ArrayLike) -> np.ndarray:
        """The worker's exact product of its share's two operands (A~(a_i) and B~(a_i), or
        A~(a_i) and the job's x)."""
        if not (isinstance(share, tuple) and len(share) == self.encodes):
            what = "(A share,)" if self.encodes == 1 else "pair (A share, B share)"
            size = f" of {len(share)}" if isinstance(share, tuple) else ""
            raise InvalidParameterError(f"Argument 'share' must be the {what} that encode made, "
                                        f"not {type(share).__name__}{size}.")
        if len(args) != 2 - self.encodes:
            raise InvalidParameterError(f"{type(self).__name__}.compute takes {2 - self.encodes} "
                                        f"argument{'' if self.encodes == 1 else 's'} beyond the "
                                        f"share, got {len(args)}.")
        return self.F.matmul(*share, *args)

    # -- decoding -----------------------------------------------------------------------------

    def result_rows(self, encoding: Encoding) -> int:
        return self.check_encoding(encoding).blocks[0][0]

    def result_shape(self, encoding: Encoding, shape: tuple) -> tuple:
        rows = self.result_rows(encoding)
        if self.encodes == 1:       # x's columns, if any, are the job's
            return (rows,) + tuple(shape[1:2])
        return (rows, encoding.blocks[1][1])

    def assemble(self, encoding: Encoding, blocks: np.ndarray) -> np.ndarray:
        """C from its blocks (in support order when every coefficient is one), each copied
        once into its place, padding cut off."""
        r, c = self._placement.shape
        rows = encoding.shapes[0][0]
        block_rows = blocks.shape[1]
        if r * c == 1:                  # one block (MatDot): the output itself, uncopied
            C = blocks[self._placement[0, 0]]
            return C[:rows] if self.encodes == 1 else C[:rows, :encoding.shapes[1][1]]
        if self.encodes == 1:           # one column of blocks, x's columns or a vector
            C = np.empty((r * block_rows,) + blocks.shape[2:], blocks.dtype)
            for u in range(r):
                C[u * block_rows:(u + 1) * block_rows] = blocks[self._placement[u, 0]]
            return C[:rows]
        block_cols, cols = blocks.shape[2], encoding.shapes[1][1]
        C = np.empty((r * block_rows, c * block_cols), blocks.dtype)
        for (u, w), d in np.ndenumerate(self._placement):
            C[u * block_rows:(u + 1) * block_rows, w * block_cols:(w + 1) * block_cols] = \
                blocks[d]
        return C[:rows, :cols]

    # -- checks and the uncoded split ---------------------------------------------------------

    def check(self, inputs: Sequence, output: Output, seed: Seed = None) -> bool:
        """Freivalds' check of output == A @ B (A @ x recomputed for a vector x)."""
        A, B = self.check_inputs(inputs)
        if np.ndim(B) == 1:
            y = self.F.elements(output, "output")
            return y.shape == (self.F.matrix(A, "A").shape[0],) and np.array_equal(
                self.F.matmul(A, B), y)
        return fingerprints.product(self.F, A, B, output, seed)

    def check_cost(self, inputs: Sequence) -> Optional[float]:
        """Freivalds' linear_rounds(p) (n k + k c + n c) multiply-adds over the product's
        n k c; a vector x is checked by recomputing it (fingerprints.RECOMPUTE)."""
        A, B = (np.shape(x) for x in self.check_inputs(inputs))
        if len(B) == 1 or len(A) != 2 or len(B) != 2:
            return fingerprints.RECOMPUTE
        n, inner, c = A[0], A[1], B[1]
        work = n * inner * c
        if not work:
            return fingerprints.RECOMPUTE
        return fingerprints.linear_rounds(self.F.p) * (n * inner + inner * c + n * c) / work

    # Each code's uncoded takes its own data (here A, and B unless it is an argument).
    def uncoded(self, A: ArrayLike,  # type: ignore[override]
                B: Optional[ArrayLike] = None) -> Split:
        """The rows of A split over the n_workers workers, B whole to each (x, when B is not
        encoded, is the job's argument: ``arguments(split, x)``)."""
        if (B is None) != (self.encodes == 1):
            takes = "A alone (x is an argument)" if self.encodes == 1 else "A and B"
            raise InvalidParameterError(f"{type(self).__name__}.uncoded takes {takes}.")
        A = self.F.matrix(A, "A")
        slabs = list(_split(A, self.n_workers, 1))
        rows = A.shape[0]
        shares: tuple
        if B is None:
            shares = tuple((slab,) for slab in slabs)
        else:
            B = self.F.matrix(B, "B")
            _chain(A, B, "B")
            if self.signed:
                self.check_magnitude(A.shape[1] * magnitude(self.F, A) * magnitude(self.F, B),
                                     "inner * |A| * |B|")
            shares = tuple((slab, B) for slab in slabs)
        return Split(shares, lambda results: np.concatenate(results)[:rows], (A.shape,),
                     magnitude(self.F, A) if self.signed else None, self)


def _chain(A: np.ndarray, B: np.ndarray, name: str) -> None:
    if A.shape[1] != B.shape[0]:
        raise InvalidParameterError(f"Arguments 'A' and {name!r} do not chain: shapes {A.shape} "
                                    f"and {B.shape} (inner dimensions {A.shape[1]} != "
                                    f"{B.shape[0]}).")


def _split(X: np.ndarray, r: int, q: int) -> list:
    """X's r x q grid of equal blocks (zero-padded at the ends), row-major."""
    rows, cols = math.ceil(X.shape[0] / r), math.ceil(X.shape[1] / q)
    if (rows * r, cols * q) != X.shape:
        padded = np.zeros((rows * r, cols * q), X.dtype)
        padded[:X.shape[0], :X.shape[1]] = X
        X = padded
    grid = X.reshape(r, rows, q, cols).transpose(0, 2, 1, 3)
    return [np.ascontiguousarray(grid[u, v]) for u in range(r) for v in range(q)]


def _grid(exponents: Any, name: str) -> np.ndarray:
    try:
        grid = np.array(exponents, dtype=object)
    except ValueError:
        grid = None
    if grid is None or grid.ndim != 2 or not grid.size:
        raise InvalidParameterError(f"Argument {name!r} must be a non-empty grid (a list of "
                                    "equally long lists) of exponents.")
    values = [checks.integer(e, name, low=0) for e in grid.flat]
    return np.array(values, np.int64).reshape(grid.shape)


def _masks(exponents: Any, name: str) -> tuple:
    return tuple(checks.integer(e, name, low=0) for e in exponents)


def _output_exponents(a: np.ndarray, b: np.ndarray, a_masks: tuple,
                      b_masks: tuple) -> np.ndarray:
    """(r, c): the exponent of each output block C_uw, checked to be one exponent that no
    term of the product but A_uv B_vw reaches."""
    r, q = a.shape
    c = b.shape[1]
    out = np.empty((r, c), np.int64)
    for u, w in product(range(r), range(c)):
        sums = {int(a[u, v] + b[v, w]) for v in range(q)}
        if len(sums) != 1:
            raise InvalidParameterError(f"Output block ({u}, {w}) = sum_v A_{u}v B_v{w} must be "
                                        "the coefficient of one exponent, but its terms reach "
                                        f"{sorted(sums)}.")
        out[u, w] = sums.pop()
    owner: dict = {}                    # exponent -> the output block it is the coefficient of
    for (u, w), e in np.ndenumerate(out):
        if e in owner:
            raise InvalidParameterError(f"Output blocks {owner[e]} and {(u, w)} are both the "
                                        f"coefficient of x**{e}.")
        owner[int(e)] = (u, w)
    Terms = list[tuple[int, tuple]]     # (exponent, ("A", u, v) or ("B", v, w) or ("mask",))
    a_terms: Terms = [(int(e), ("A", u, v)) for (u, v), e in np.ndenumerate(a)] + \
        [(e, ("mask",)) for e in a_masks]
    b_terms: Terms = [(int(e), ("B", v, w)) for (v, w), e in np.ndenumerate(b)] + \
        [(e, ("mask",)) for e in b_masks]
    for (ea, ta), (eb, tb) in product(a_terms, b_terms):
        reached = ea + eb
        if reached in owner:
            wanted = ta[0] == "A" and tb[0] == "B" and ta[2] == tb[1] and \
                (ta[1], tb[2]) == owner[reached]
            if not wanted:
                raise InvalidParameterError(f"The term {_term(ta)} * {_term(tb)} reaches "
                                            f"x**{reached}, the exponent of output block "
                                            f"{owner[reached]}: choose exponents that keep the "
                                            "outputs' coefficients apart.")
    return out


def _term(t: tuple) -> str:
    return "a mask" if t[0] == "mask" else f"{t[0]}_{t[1]}{t[2]}"
