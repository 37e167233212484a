"""The prime field GF(p): canonical elements in [0, p) held in plain numpy arrays."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Sequence

import numpy as np

from ffcode import _linalg, _matmul, checks
from ffcode._types import ArrayLike, Int, Seed, Shape
from ffcode._ext import elementwise, structured
from ffcode.errors import InvalidParameterError

MAX_P = 2**63


def GF(p: Int) -> PrimeField:
    """The prime field of order p, for any prime 2 <= p < 2**63 (one object per p).

    Examples
    --------
    >>> F = GF(7)
    >>> F.mul([3, 4], [5, 2]).tolist()
    [1, 1]
    >>> F.matmul([[1, 2], [3, 4]], [[5, 6], [0, 1]]).tolist()
    [[5, 1], [1, 1]]
    """
    return _field(checks.integer(p, "p"))


@functools.lru_cache(maxsize=None)
def _field(p: int) -> PrimeField:
    return PrimeField(p)


class PrimeField:
    """GF(p). Elements are numpy arrays of dtype ``uint32`` (p < 2**32) or ``uint64``.

    Every operation checks that its inputs are integer arrays with elements in [0, p);
    use :meth:`asarray` to reduce arbitrary integers first.
    """

    def __init__(self, p: Int) -> None:
        self.p = p = checks.prime(p, "p", below=MAX_P)
        self.dtype = np.dtype(np.uint32 if p < 2**32 else np.uint64)

    def __repr__(self) -> str:
        return f"GF({self.p})"

    def __reduce__(self) -> tuple[Any, ...]:
        return GF, (self.p,)

    # -- creating elements -------------------------------------------------------------------

    def random(self, shape: Shape = (), seed: Seed = None) -> np.ndarray:
        """Uniformly random elements; seed is anything numpy.random.default_rng accepts."""
        return np.random.default_rng(seed).integers(0, self.p, size=shape, dtype=self.dtype)

    def asarray(self, x: ArrayLike) -> np.ndarray:
        """Reduce integers (any integer dtype, negatives and Python big ints included) mod p.

        >>> GF(7).asarray([-1, 7, 2**70]).tolist()
        [6, 0, 2]
        """
        a = np.asarray(self._own(x, "x"))
        if a.dtype == object:
            flat = a.reshape(-1)
            for v in flat:
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    raise InvalidParameterError("Argument 'x' must hold integers, not "
                                                f"{type(v).__name__}.")
            reduced = np.array([int(v) % self.p for v in flat], dtype=self.dtype)
            return reduced.reshape(a.shape)
        a = checks.integer_array(a, "x")
        if a.dtype.kind == "u" and a.dtype.itemsize <= self.dtype.itemsize and (
                a.size == 0 or a.max() < self.p):
            return a.astype(self.dtype)
        if a.dtype.kind == "u":
            reduced = a.astype(np.uint64) % np.uint64(self.p)
        else:
            reduced = a.astype(np.int64) % np.int64(self.p)
        return np.asarray(reduced, dtype=self.dtype)

    def elements(self, x: ArrayLike, name: str = "x") -> np.ndarray:
        """x as an array of this field's dtype, after checking every element is in [0, p).

        A galois FieldArray of this field is taken as its elements (also GF(2**61 - 1)'s,
        which galois holds in dtype object); one of another field is refused, naming both.
        """
        a = self._integers(x, name)
        if a.size:
            if a.dtype.kind == "i" and a.min() < 0:
                raise InvalidParameterError(f"Argument {name!r} has negative elements; field "
                                            f"elements lie in [0, {self.p}) (F.asarray reduces "
                                            "integers mod p).")
            if a.max() >= self.p:
                raise self._too_large(name)
        return a.astype(self.dtype, copy=False)

    def _own(self, x: Any, name: str) -> Any:
        """x, or a galois FieldArray's elements as a plain array once its field is checked
        to be this one (galois is only looked at if the caller has imported it)."""
        galois = sys.modules.get("galois")
        if galois is None or not isinstance(x, galois.FieldArray):
            return x
        field = type(x)
        if field.order != self.p:
            raise InvalidParameterError(f"Argument {name!r} is an array of {field.name} (galois), "
                                        f"not of this field GF({self.p}): its elements mean other "
                                        f"numbers here. Pass {name}.view(numpy.ndarray) to use its "
                                        "integers deliberately.")
        plain = x.view(np.ndarray)
        return plain.astype(self.dtype) if plain.dtype == object else plain

    def _integers(self, x: Any, name: str) -> np.ndarray:
        """x as a numpy array of an integer dtype (a FieldArray of this field included)."""
        return checks.integer_array(self._own(x, name), name)

    def _too_large(self, name: str) -> InvalidParameterError:
        return InvalidParameterError(f"Argument {name!r} has elements >= p = {self.p}; field "
                                     f"elements lie in [0, {self.p}) (F.asarray reduces mod p).")

    # -- elementwise -------------------------------------------------------------------------

    def _binary(self, kernel: Callable[..., None], a: ArrayLike, b: ArrayLike) -> np.ndarray:
        a, b = self.elements(a, "a"), self.elements(b, "b")
        try:
            a, b = np.broadcast_arrays(a, b)
        except ValueError:
            raise InvalidParameterError(f"Arguments 'a' and 'b' have shapes {a.shape} and "
                                        f"{b.shape}, which do not broadcast.") from None
        out = np.empty(a.shape, self.dtype)
        kernel(_flat(a), _flat(b), out.reshape(-1), self.p)
        return out

    def _unary(self, kernel: Callable[..., None], a: ArrayLike) -> np.ndarray:
        a = self.elements(a, "a")
        out = np.empty(a.shape, self.dtype)
        kernel(_flat(a), out.reshape(-1), self.p)
        return out

    def add(self, a: ArrayLike, b: ArrayLike) -> np.ndarray:
        """a + b, elementwise with broadcasting."""
        return self._binary(elementwise.add, a, b)

    def sub(self, a: ArrayLike, b: ArrayLike) -> np.ndarray:
        """a - b, elementwise with broadcasting."""
        return self._binary(elementwise.sub, a, b)

    def mul(self, a: ArrayLike, b: ArrayLike) -> np.ndarray:
        """a * b, elementwise with broadcasting."""
        return self._binary(elementwise.mul, a, b)

    def neg(self, a: ArrayLike) -> np.ndarray:
        """-a, elementwise."""
        return self._unary(elementwise.neg, a)

    def inv(self, a: ArrayLike) -> np.ndarray:
        """1 / a, elementwise; ZeroDivisionError if any element is 0.

        >>> GF(7).inv([1, 2, 3]).tolist()
        [1, 4, 5]
        """
        a = self.elements(a, "a")
        if a.size and not a.all():
            raise ZeroDivisionError(f"Argument 'a' has a zero element, which has no inverse "
                                    f"(first at index {np.argwhere(a == 0)[0].tolist()}).")
        return self._unary(elementwise.inv, a)

    # -- matrices ----------------------------------------------------------------------------

    def matrix(self, x: ArrayLike, name: str) -> np.ndarray:
        """x as a 2-D array of field elements."""
        a = self.elements(x, name)
        checks.ndim(a, (2,), name)
        return a

    def matmul(self, A: ArrayLike, B: ArrayLike) -> np.ndarray:
        """A @ B over GF(p), exactly, for a matrix A and a matrix or vector B.

        The product runs at BLAS speed: through float64 products of centred elements (split
        into limbs for larger primes) or an integer kernel, whichever the cost model finds
        cheapest for the prime and the shapes. It is exact for every prime and size.

        Parameters
        ----------
        A : ArrayLike
            An (n, k) matrix of field elements (integers in [0, p)).
        B : ArrayLike
            A (k, m) matrix, or a vector of k field elements.

        Returns
        -------
        numpy.ndarray
            The (n, m) product of the field's dtype, or its n elements if B is a vector.

        Raises
        ------
        TypeError
            If A or B is not an array of integers (a float, bool or object dtype).
        ValueError
            If an element is outside [0, p), A is not a matrix, B is neither a matrix nor a
            vector, or the inner dimensions differ; the message names the argument.

        Examples
        --------
        >>> F = GF(7)
        >>> F.matmul([[1, 2], [3, 4]], [[5, 6], [0, 1]]).tolist()
        [[5, 1], [1, 1]]
        >>> F.matmul([[1, 2], [3, 4]], [5, 6]).tolist()      # a vector B gives a vector
        [3, 4]
        """
        a = self._integers(A, "A")
        # A product with few columns checks an A of the field's dtype as it reads it.
        fused = a.dtype == self.dtype and a.ndim == 2 and np.ndim(B) in (1, 2) and \
            _matmul.checks_left(self.p, a, 1 if np.ndim(B) == 1 else np.shape(B)[1])
        A = a if fused else self.matrix(a, "A")
        B = self.elements(B, "B")
        checks.ndim(B, (1, 2), "B")
        if A.shape[1] != B.shape[0]:
            raise InvalidParameterError(f"Arguments 'A' and 'B' do not chain: shapes {A.shape} and "
                                        f"{B.shape} (inner dimensions {A.shape[1]} != "
                                        f"{B.shape[0]}).")
        B2 = B if B.ndim == 2 else B[:, None]
        out = np.empty((A.shape[0], B2.shape[1]), self.dtype)
        if fused:
            if not _matmul.matmul_checking_left(self.p, A, B2, out):
                raise self._too_large("A")
        else:
            _matmul.matmul_into(self.p, A, B2, out)
        return out if B.ndim == 2 else out[:, 0]

    def combine(self, W: ArrayLike, arrays: Sequence[ArrayLike]) -> np.ndarray:
        """Linear combinations of equally shaped arrays: out[i] = sum_j W[i, j] * arrays[j].

        The product W @ stack(arrays), without stacking the arrays into one copy where the
        inner dimension is short (encoding and decoding blocks of a code).

        >>> GF(7).combine([[1, 2], [3, 0]], [[1, 1], [0, 5]]).tolist()
        [[1, 4], [3, 3]]
        """
        W = self.matrix(W, "W")
        blocks = [self.elements(a, "arrays") for a in arrays]
        if not blocks:
            raise InvalidParameterError("Argument 'arrays' must hold at least one array.")
        if W.shape[1] != len(blocks):
            raise InvalidParameterError(f"Argument 'W' has {W.shape[1]} columns for {len(blocks)} "
                                        "arrays.")
        shapes = {a.shape for a in blocks}
        if len(shapes) > 1:
            raise InvalidParameterError("Argument 'arrays' must hold equally shaped arrays, not "
                                        f"shapes {sorted(shapes)}.")
        out = _matmul.combine(self.p, W, blocks, self.dtype)
        return out.reshape((W.shape[0],) + blocks[0].shape)

    def rank(self, A: ArrayLike) -> int:
        """The rank of matrix A."""
        M = np.array(self.matrix(A, "A"), order="C")
        return _linalg.echelon(self.p, M, M.shape[1], reduced=False)[0]

    def rref(self, A: ArrayLike) -> np.ndarray:
        """The reduced row echelon form of matrix A.

        >>> GF(5).rref([[2, 4, 1], [1, 2, 4]]).tolist()
        [[1, 2, 0], [0, 0, 1]]
        """
        M = np.array(self.matrix(A, "A"), order="C")
        _linalg.echelon(self.p, M, M.shape[1], reduced=True)
        return M

    def solve(self, A: ArrayLike, B: ArrayLike) -> np.ndarray:
        """X with A @ X = B over GF(p), for a square, invertible A.

        Solved by a recursive LU decomposition of A, exactly.

        Parameters
        ----------
        A : ArrayLike
            An (n, n) matrix of field elements.
        B : ArrayLike
            An (n, m) matrix, or a vector of n field elements: the right-hand side.

        Returns
        -------
        numpy.ndarray
            X, of B's shape and the field's dtype.

        Raises
        ------
        numpy.linalg.LinAlgError
            If A is singular (the message gives its rank).
        TypeError
            If A or B is not an array of integers.
        ValueError
            If an element is outside [0, p), A is not square, or B's rows do not match A's.

        Examples
        --------
        >>> F = GF(7)
        >>> F.solve([[1, 2], [3, 4]], [5, 6]).tolist()
        [3, 1]
        >>> F.matmul([[1, 2], [3, 4]], [3, 1]).tolist()      # A @ X == B
        [5, 6]
        >>> F.solve([[1, 2], [2, 4]], [1, 1])
        Traceback (most recent call last):
            ...
        numpy.linalg.LinAlgError: matrix is singular (rank 1 < 2)
        """
        A = self.matrix(A, "A")
        if A.shape[0] != A.shape[1]:
            raise InvalidParameterError(f"Argument 'A' must be square, not of shape {A.shape}.")
        B = self.elements(B, "B")
        checks.ndim(B, (1, 2), "B")
        if B.shape[0] != A.shape[0]:
            raise InvalidParameterError(f"Argument 'B' must have {A.shape[0]} rows to match 'A', "
                                        f"not {B.shape[0]}.")
        X = _linalg.solve(self.p, A, B if B.ndim == 2 else B[:, None])
        return X if B.ndim == 2 else X[:, 0]

    def matinv(self, A: ArrayLike) -> np.ndarray:
        """The inverse of a square matrix A (numpy.linalg.LinAlgError if A is singular)."""
        A = self.matrix(A, "A")
        if A.shape[0] != A.shape[1]:
            raise InvalidParameterError(f"Argument 'A' must be square, not of shape {A.shape}.")
        return _linalg.solve(self.p, A, np.eye(A.shape[0], dtype=self.dtype))

    def vandermonde(self, points: ArrayLike, ncols: Int) -> np.ndarray:
        """V[i, j] = points[i] ** j.

        >>> GF(7).vandermonde([2, 3], 4).tolist()
        [[1, 2, 4, 1], [1, 3, 2, 6]]
        """
        points = self.elements(points, "points")
        checks.ndim(points, (1,), "points")
        ncols = checks.integer(ncols, "ncols", low=0)
        out = np.empty((points.shape[0], ncols), self.dtype)
        structured.vandermonde(_flat(points), out, self.p)
        return out

    def points(self, x: ArrayLike, name: str) -> np.ndarray:
        """x as a 1-D array of pairwise distinct field elements (evaluation points)."""
        a = self.elements(x, name)
        checks.ndim(a, (1,), name)
        values, counts = np.unique(a, return_counts=True)
        if (counts > 1).any():
            raise InvalidParameterError(f"Argument {name!r} must hold distinct points; "
                                        f"{values[counts > 1][0]} appears {counts.max()} times.")
        return _flat(a)

    def vandermonde_inverse(self, points: ArrayLike) -> np.ndarray:
        """The inverse of vandermonde(points, len(points)) for distinct points, in O(n**2).

        Row d, column j is the z**d coefficient of the Lagrange basis polynomial of point j,
        so V^-1 @ values gives the coefficients of the polynomial through (points, values).

        >>> GF(7).vandermonde_inverse([1, 2]).tolist()
        [[2, 6], [6, 1]]
        """
        points = self.points(points, "points")
        n = points.shape[0]
        out = np.empty((n, n), self.dtype)
        structured.vandermonde_inverse(points, out, np.empty(2 * n + 1, np.uint64), self.p)
        return out

    def lagrange(self, nodes: ArrayLike, targets: ArrayLike) -> np.ndarray:
        """L[t, j] = l_j(targets[t]) for the Lagrange basis l_j of the distinct nodes.

        L @ values evaluates the polynomial through (nodes, values) at the targets.

        >>> GF(7).lagrange([1, 2], [0, 2, 3]).tolist()
        [[2, 6], [0, 1], [6, 2]]
        """
        nodes = self.points(nodes, "nodes")
        targets = self.elements(targets, "targets")
        checks.ndim(targets, (1,), "targets")
        out = np.empty((targets.shape[0], nodes.shape[0]), self.dtype)
        structured.lagrange(nodes, _flat(targets), out, np.empty(2 * nodes.shape[0], np.uint64),
                            self.p)
        return out

    # -- signed integers and fixed-point reals -----------------------------------------------

    @property
    def max_signed(self) -> int:
        """The largest magnitude a signed integer can have and survive mod p, (p - 1) // 2."""
        return (self.p - 1) // 2

    def to_signed(self, y: ArrayLike) -> np.ndarray:
        """Elements as int64 in [-(p-1)/2, (p-1)/2]: values above (p-1)/2 mean negatives.

        >>> GF(7).to_signed([0, 3, 4, 6]).tolist()
        [0, 3, -3, -1]
        """
        y = self.elements(y, "y")
        signed = y.astype(np.int64)
        signed[y > self.max_signed] -= self.p
        return signed

    def from_real(self, x: ArrayLike, scale: float) -> np.ndarray:
        """Reals as signed fixed-point elements: round(x * scale) mod p.

        A product of two such arrays carries scale**2, so decode it with to_real(y, scale**2).
        Values that round beyond (p-1)/2 in magnitude would wrap around: ValueError.

        >>> F = GF(65521)
        >>> F.from_real([1.5, -0.25], 4).tolist()
        [6, 65520]
        >>> F.to_real(F.from_real([1.5, -0.25], 4), 4).tolist()
        [1.5, -0.25]
        """
        a = np.asarray(x)
        if a.dtype.kind not in "iuf":
            raise InvalidParameterError("Argument 'x' must be an array of real numbers, not dtype "
                                        f"{a.dtype}.")
        scale = checks.positive(scale, "scale")
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.rint(a.astype(np.float64) * scale)
        if not np.isfinite(scaled).all():
            raise InvalidParameterError("Argument 'x' has non-finite values (or overflows at this "
                                        "scale).")
        # Compare as exact integers: above 2**53 float64 cannot hold (p - 1) / 2 exactly.
        if scaled.size and np.abs(scaled).max() >= 2.0**63:
            raise InvalidParameterError(f"Argument 'x' at scale {scale} reaches magnitude 2**63 or "
                                        f"more, beyond (p-1)/2 = {self.max_signed}: it would wrap "
                                        "around mod p.")
        values = scaled.astype(np.int64)
        largest = int(np.abs(values).max()) if values.size else 0
        if largest > self.max_signed:
            raise InvalidParameterError(f"Argument 'x' at scale {scale} reaches magnitude "
                                        f"{largest}, beyond (p-1)/2 = {self.max_signed}: it would "
                                        "wrap around mod p. Use a smaller scale or a larger p.")
        return np.asarray(values % self.p, dtype=self.dtype)

    def to_real(self, y: ArrayLike, scale: float) -> np.ndarray:
        """Signed fixed-point elements back to float64: to_signed(y) / scale."""
        return self.to_signed(y) / checks.positive(scale, "scale")


def _flat(a: np.ndarray) -> np.ndarray:
    """a as a flat C-contiguous array (a view when it already is one)."""
    return np.asarray(a, order="C").reshape(-1)
