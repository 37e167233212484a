"""Lagrange coded computing (Yu et al. 2019): f(X_1), ..., f(X_k) for a polynomial f, with
t-privacy from uniformly random masks."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

import numpy as np

from ffcode import fingerprints, functions
from ffcode._blocks import rows_of
from ffcode.field import PrimeField
from ffcode._types import ArrayLike, Int, Output, Seed
from ffcode.codes.base import (COUNT, FLAG, Code, Encoding, Split, encode_rows, magnitude,
                                read_only, secure_random)
from ffcode.constraints import Callables, InstanceOf, Interval, check, validate
from ffcode.errors import InvalidParameterError


class LCC(Code):
    """f(X_1), ..., f(X_k) for a polynomial f of degree ``degree`` in X; any
    (k + t - 1) * degree + 1 results give them all, and any t workers learn nothing.

    u(z) interpolates X_1..X_k at betas[:k] and t uniformly random masks at betas[k:]
    (the k + t smallest nonzero elements that are not worker points, unless given); worker i
    computes f(u(points[i])), and f(X_j) = f(u(betas[j])) is read off by interpolation.

    f is called as ``f(F, X, *args)`` and must use exact ffcode operations; it may be given by
    its import path ("package.module:function"), which is how worker processes find it.
    ``arguments`` names the job's arguments: every worker receives them unchanged in every
    job (as MDS's x), so the data can stay on the workers while they change (an
    iteration's weights); f's degree counts X only, the arguments are constants. With
    ``signed=True`` elements are read as signed integers (see ``F.from_real``), and
    ``result_bound(M, *magnitudes)`` must bound ``|f(X, *args)|`` for inputs with
    ``|X| <= M`` and arguments of those largest magnitudes (``result_bound(M)`` without
    arguments): encode refuses data whose result could wrap, ``arguments`` each job's
    arguments.
    ``row_linear=True`` declares that f is linear in the rows of X: f(G @ X) = G @ f(X) for
    every matrix G that mixes the rows (as for f(X) = X @ W). Computation at full speed
    (``pieces=``) and the cheap check of the output need it. Rows that do not interact are
    not enough: the elementwise square computes each row of f(X) from that row of X alone,
    yet (G @ X)**2 != G @ X**2. encode tests the claim on random data (``is_row_linear``)
    and refuses an f that fails it.

    >>> from ffcode import GF
    >>> F = GF(65521)
    >>> square = lambda F, X: F.mul(X, X)
    >>> code = LCC(F, k=2, t=1, f=square, degree=2, n_workers=5)
    >>> shares = code.encode([[3], [4]], seed=1)
    >>> results = {i: code.compute(shares[i]) for i in range(5)}
    >>> [y.tolist() for y in code.decode(shares, results)]
    [[9], [16]]

    With an argument, the shares stay and each job brings its own c:

    >>> scaled = lambda F, X, c: F.mul(F.mul(X, X), c)
    >>> code = LCC(F, k=2, t=1, f=scaled, degree=2, n_workers=5, arguments=("c",))
    >>> shares = code.encode([[3], [4]], seed=1)
    >>> c = code.arguments(shares, [10])
    >>> results = {i: code.compute(shares[i], *c) for i in range(5)}
    >>> [y.tolist() for y in code.decode(shares, results)]
    [[90], [160]]
    """
    inputs = ("blocks",)
    argument_names: tuple = ()
    # (points and betas are checked by the field, the arguments' names by _argument_names;
    # f and result_bound after them, as callables of those arguments)
    _parameter_constraints = {**Code._parameter_constraints, "k": COUNT,
                              "t": Interval(Integral, 0, None), "degree": COUNT,
                              "signed": FLAG, "row_linear": FLAG}

    def __init__(self, F: PrimeField, k: Int, t: Int, f: Callable | str, degree: Int,
                 n_workers: Int, points: ArrayLike | None = None,
                 betas: ArrayLike | None = None, signed: bool = False,
                 result_bound: Callable[..., int] | None = None,
                 row_linear: bool = False, arguments: Sequence[str] = ()) -> None:
        checked = validate(LCC._parameter_constraints,
                           {"F": F, "k": k, "t": t, "degree": degree, "n_workers": n_workers,
                            "signed": signed, "row_linear": row_linear})
        k, t, degree = (int(checked[name]) for name in ("k", "t", "degree"))
        signed, row_linear = checked["signed"], checked["row_linear"]
        names = _argument_names(arguments)
        if row_linear and names:
            raise InvalidParameterError(f"An LCC with arguments ({', '.join(names)}) cannot be "
                                        "row_linear: for a product with a per-job operand use MDS "
                                        "or a ProductCode, whose x is that operand.")
        call = f"f(F, X{''.join(', ' + n for n in names)})"
        bound = f"result_bound(M{''.join(', |' + n + '|' for n in names)})"
        check((Callables(f"callable as {call}"), InstanceOf(str, what="an import path")), f, "f")
        check((None, Callables(f"callable as {bound}")), result_bound, "result_bound")
        if isinstance(f, str):
            f = functions.load(f)           # refuses a path to no callable
        if signed and result_bound is None:
            raise InvalidParameterError(f"LCC with signed=True needs {bound}: a bound on |{call}| "
                                        "for inputs with |X| <= M, to refuse results that would "
                                        "wrap.")
        R = self.threshold_for(k, t, degree)
        super().__init__(F, n_workers, range(R), points,
                         reserved=0 if betas is not None else k + t)
        self.k, self.t, self.f, self.degree = k, t, f, degree
        self.function = f
        self.signed, self.result_bound = signed, result_bound
        self.row_linear_operand = 0 if row_linear else None
        self.argument_names = names
        self.inputs = ("blocks", *names)
        self._bound = bound.replace("M", "|X|", 1)     # as check_magnitude names it
        self.betas = read_only(self._betas(betas))
        self.encoding_matrix = read_only(F.lagrange(self.betas, self.points))
        self.outputs = read_only(F.vandermonde(self.betas[:k], R))

    @staticmethod
    def threshold_for(k: int, t: int, degree: int) -> int:
        """The recovery threshold of an LCC of k blocks, privacy t and an f of that degree:
        R = (k + t - 1) * degree + 1, the degree of f(u(z)) plus one.

        >>> LCC.threshold_for(k=2, t=1, degree=2)
        5
        """
        return (k + t - 1) * degree + 1

    def _betas(self, betas: ArrayLike | None) -> np.ndarray:
        count = self.k + self.t
        if betas is None:
            free = np.setdiff1d(np.arange(1, self.n_workers + count + 1), self.points)
            return self.F.points(free[:count], "betas")
        betas = self.F.points(betas, "betas")
        if betas.shape[0] != count:
            raise InvalidParameterError(f"Argument 'betas' must hold k + t = {count} points, "
                                        f"not {betas.shape[0]}.")
        if np.isin(betas, self.points).any():
            raise InvalidParameterError("Arguments 'betas' and 'points' must be disjoint.")
        return betas

    def encode(self, blocks: Sequence[ArrayLike], seed: Seed = None,
               pieces: Int | None = None) -> Encoding:
        """The n_workers shares (u(points[i]),) of k equally shaped blocks.

        The masks come from the operating system's CSPRNG (os.urandom) unless a seed is
        given; a seed makes runs reproducible and gives no privacy. With pieces=m (for a
        row-linear f), PieceShares for computation at full speed. A code declared
        row-linear first tests f on random data of the blocks' trailing shape (ValueError
        if f(G @ X) != G @ f(X)).
        """
        m = self.pieces_for(pieces)
        X = self.checked_blocks(blocks)
        shape = X[0].shape
        if self.row_linear and shape and not is_row_linear(self.F, self.f, shape[1:]):
            raise InvalidParameterError(f"f = {_name(self.f)} is not row-linear: f(G @ X) != G @ "
                                        "f(X) for a random G mixing the rows of a random X "
                                        "(row-linear means linear in the rows, as f(X) = X @ W; an "
                                        "elementwise square is not). Construct the LCC without "
                                        "row_linear=True.")
        size = int(np.prod(shape)) * self.t
        rng = None if seed is None else np.random.default_rng(seed)
        masks = secure_random(self.F, size) if rng is None else self.F.random(size, rng)
        mask_blocks = list(masks.reshape((self.t,) + shape))
        coeffs = self.piece_coefficients(m, seed, rng)     # drawn after the masks
        coded = encode_rows(self.F, self.encoding_matrix, X + mask_blocks, coeffs)
        shares = [(y,) for y in rows_of(coded)]
        return self.make_encoding(shares, (shape,), (shape,), m, seed, rng, coeffs,
                                  masks=self.t, magnitude=self._magnitude(X))

    def checked_blocks(self, blocks: Sequence[ArrayLike]) -> list[np.ndarray]:
        """The k data blocks as equally shaped arrays of field elements, refused when
        signed data could wrap around (with arguments, each job's ``arguments`` decides)."""
        if isinstance(blocks, np.ndarray) or not hasattr(blocks, "__len__"):
            raise InvalidParameterError("Argument 'blocks' must be a list of k arrays.")
        if len(blocks) != self.k:
            raise InvalidParameterError(f"Argument 'blocks' must hold k = {self.k} arrays, "
                                        f"not {len(blocks)}.")
        X = [self.F.elements(x, "blocks") for x in blocks]
        shapes = {x.shape for x in X}
        if len(shapes) > 1:
            raise InvalidParameterError("Argument 'blocks' must hold equally shaped arrays, not "
                                        f"shapes {sorted(shapes)}.")
        if self.signed and self.result_bound is not None and not self.argument_names:
            self.check_magnitude(int(self.result_bound(self._magnitude(X))),
                                 "result_bound(|X|)")
        return X

    def _magnitude(self, X: Sequence[np.ndarray]) -> int | None:
        """The blocks' largest signed magnitude (None for unsigned codes)."""
        return max(magnitude(self.F, x) for x in X) if self.signed else None

    def arguments(self, encoding: Encoding | Split, *args: ArrayLike) -> tuple:
        """The job's arguments as field elements, as many as the code names, refused when
        the signed result on the encoded data could wrap around."""
        if not self.argument_names:
            return super().arguments(encoding, *args)
        encoding = self.check_encoding(encoding, split=True)
        values = self._checked_arguments(args)
        if self.signed and self.result_bound is not None:
            if encoding.magnitude is None:
                raise InvalidParameterError("The split does not say its data's magnitude, which a "
                                            "signed LCC needs to bound the result: use this code's "
                                            "uncoded.")
            sizes = [magnitude(self.F, a) for a in values]
            self.check_magnitude(int(self.result_bound(encoding.magnitude, *sizes)),
                                 self._bound)
        return values

    def _checked_arguments(self, args: Sequence[ArrayLike]) -> tuple:
        names = self.argument_names
        if len(args) != len(names):
            takes = f"arguments ({', '.join(names)})" if names else "no arguments"
            raise InvalidParameterError(f"LCC's f takes {takes} beyond the share, got {len(args)}.")
        return tuple(self.F.elements(a, name) for a, name in zip(args, names))

    def compute(self, share: tuple, *args: ArrayLike) -> np.ndarray:
        """The worker's ``f(F, share, *args)``, checked to be field elements."""
        if not isinstance(share, tuple) or len(share) != 1:
            raise InvalidParameterError("Argument 'share' must be an LCC share from encode (a "
                                        f"1-tuple), not {type(share).__name__}.")
        args = self._checked_arguments(args)
        X = self.F.elements(share[0], "share")
        return self.F.elements(self.f(self.F, X, *args), "f(F, share)")

    def decoding_matrix(self, workers: Sequence[int]) -> np.ndarray:
        return self.F.lagrange(self.points[list(workers)], self.betas[:self.k])  # = C V^-1

    def result_rows(self, encoding: Encoding) -> int | None:
        shape = self.check_encoding(encoding).blocks[0]
        return shape[0] if self.row_linear and shape else None

    def assemble(self, encoding: Encoding, blocks: np.ndarray) -> list[np.ndarray]:
        return rows_of(blocks)

    def check(self, inputs: Sequence, output: Output, seed: Seed = None) -> bool:
        """Whether output[j] == f(X_j) for every block, on a random projection of the rows:
        R f(X) = f(R X) for a row-linear f (0-d blocks are recomputed)."""
        if not self.row_linear:
            raise ValueError(f"{self!r} computes an f that is not row-linear: its output "
                             f"cannot be checked on a random projection.")
        blocks = self.check_inputs(inputs)[0]
        if len(output) != len(blocks):
            return False
        F, rng = self.F, np.random.default_rng(seed)
        for X, Y in zip(blocks, output):
            X, Y = F.elements(X, "blocks"), F.elements(Y, "output")
            if X.ndim < 1:
                if not np.array_equal(F.elements(self.f(F, X), "f(F, X)"), Y):
                    return False
                continue
            if Y.ndim < 1 or Y.shape[0] != X.shape[0]:
                return False
            if not fingerprints.rows(F, lambda Z: self.f(F, Z), X, Y, rng):
                return False
        return True

    def check_cost(self, inputs: Sequence) -> float | None:
        """f on linear_rounds(p) projected rows instead of on all of them."""
        if not self.row_linear:
            return None
        first = self.check_inputs(inputs)[0][0]
        rows = np.shape(first)[0] if np.ndim(first) else 0
        if not rows:
            return fingerprints.RECOMPUTE
        return fingerprints.linear_rounds(self.F.p) / rows

    # Each code's uncoded takes its own data (here a list of blocks): not Code.uncoded's.
    def uncoded(self, blocks: Sequence[ArrayLike]) -> Split:  # type: ignore[override]
        """Block X_j to worker j (k workers; the rest idle)."""
        X = self.checked_blocks(blocks)
        if self.k > self.n_workers:
            raise InvalidParameterError(f"Uncoded LCC gives each of the k = {self.k} blocks to its "
                                        f"own worker, but there are only {self.n_workers}.")
        return Split(tuple((x,) for x in X), list, (X[0].shape,), self._magnitude(X), self)


def is_row_linear(F: PrimeField, f: Callable, trailing: tuple = (), seed: Seed = None) -> bool:
    """Whether f(F, G @ X) == G @ f(F, X) for a random 2 x 3 matrix G and a random X of 3
    rows and the given trailing shape: a check of linearity in the rows that a nonlinear
    polynomial f of degree d passes with probability at most (d + 1) / p per output element.
    An f that raises on such an X, or does not return one row per row of X, fails it."""
    rng = np.random.default_rng(seed)
    X = F.random((3,) + tuple(trailing), rng)
    G = F.random((2, 3), rng)
    try:
        Y = F.elements(f(F, X), "f(F, X)")
        mixed = F.elements(f(F, F.matmul(G, X.reshape(3, -1)).reshape((2,) + X.shape[1:])),
                           "f(F, G @ X)")
    except (ValueError, TypeError, IndexError):
        return False
    if Y.ndim < 1 or Y.shape[0] != 3 or mixed.shape != (2,) + Y.shape[1:]:
        return False
    return np.array_equal(mixed.reshape(2, -1), F.matmul(G, Y.reshape(3, -1)))


def _argument_names(arguments: Any) -> tuple:
    """The names of an LCC's per-job arguments, checked: distinct identifiers other than
    the data's."""
    if isinstance(arguments, str) or not isinstance(arguments, Sequence):
        raise InvalidParameterError("Argument 'arguments' must be a sequence of names (as ('w',)), "
                                    f"not {type(arguments).__name__}.")
    names = tuple(arguments)
    for name in names:
        if not isinstance(name, str) or not name.isidentifier() or name == "blocks":
            raise InvalidParameterError(f"Argument 'arguments' must hold identifiers other than "
                                        f"'blocks', not {name!r}.")
    if len(set(names)) < len(names):
        raise InvalidParameterError(f"Argument 'arguments' must hold distinct names, not {names}.")
    return names


def _name(f: Any) -> str:
    """f's import path when it has one, else its repr."""
    try:
        return functions.path_of(f)
    except ValueError:
        return repr(f)
