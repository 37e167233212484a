"""Exact GF(p) matrix products through float64 BLAS (DESIGN.md §5).

A float64 dot product of integers is exact while every partial sum stays below 2**53. Each
operand is centred into (-p/2, p/2] and, when p is too large for one product, split into
signed limbs of ``bits`` bits. A *limb plan* lists the float64 products to take (one dgemm each)
and how they add up to each diagonal of the limb product sum_ij 2**(bits (i+j)) A_i B_j: the
plain product, the left operand split in two, or Karatsuba over L limbs (the L limbs and the
L(L-1)/2 sums of two limbs). The inner dimension is cut into equal blocks short enough to
keep every sum exact, and a cost model takes the cheapest limb plan for (p, k). From 2**26 to
2**32, large products go to mul32's integer kernel instead (32 x 32 -> 64-bit products in
exact 64-bit sums), which beats the two or three dgemms of the limb plans there.
"""
import functools
import itertools
import math
import os
import threading
from typing import Any, Callable, Optional, Sequence, Union
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import DTypeLike

from ffcode import _blas
from ffcode._ext import limbs, matvec, mul32, rowcomb

EXACT = 2**53 - 1          # float64 sums of integers stay exact up to this bound
MIN_BLOCK = 32             # inner blocks shorter than this waste the dgemm
REDUCE_COST = 128          # a block's fold and dgemm start-up cost about this much inner dimension
SCRATCH_LIMIT = 32 << 20   # bytes of float64 scratch kept per thread and role between calls
CHUNK_BYTES = 4 << 20      # float64 scratch per column chunk of a wide product
MIN_WIDTH = 512            # narrower column chunks would waste the dgemm
INTEGER_FROM = 2**26       # mul32's integer products replace two or more dgemms from here
INTEGER_MIN_WORK = 1 << 29 # m k n from which they do (about 800^3; below, the dgemms)
PARALLEL_WORK = 1 << 18    # elements (or m k n) from which a pass runs on every core
ROWCOMB_PER_PRODUCT = 16   # below 16 inner terms per dgemm of the limb plan, rowcomb is faster
ROWCOMB64_PER_PRODUCT = 4  # the same from 2**31, where rowcomb's 128-bit sums cost more
FEW_ROWS = 4               # a few output rows: rowcomb beats stacking and converting, any k
# Products with at most this many columns go to matvec's dot products, which read A once per
# column where the limb plans convert it and run their dgemms (medians, interleaved):
FEW_COLUMNS_31 = 4         # below 2**31: 1.1-9x faster up to 4 columns, slower from 8 at large m
FEW_COLUMNS_32 = 2         # uint32 from 2**31 (128-bit sums): 1.2-6x faster up to 2, not at 4
FEW_COLUMNS_64 = 16        # from 2**32 (3-6 dgemms per product): 1.2-11x faster up to 16
ROWCOMB_COLUMNS = 0        # short k stays with rowcomb (dot products win 1.2-4x only to n = 2)
TRANSPOSED_ROWS = 16       # a column-major A of this many rows: rowcomb on the transposed
                           # product, 2.5-3.5x the dot products at 101 x 33334 (13 rows: even)

_scratch = threading.local()


def _scratch_array(role: str, shape: tuple) -> np.ndarray:
    """Float64 scratch for one role of a product, kept per thread between calls up to
    SCRATCH_LIMIT: fresh memory would page-fault its way in on every product."""
    size = math.prod(shape)
    if 8 * size > SCRATCH_LIMIT:
        return np.empty(shape)
    buffer = getattr(_scratch, role, None)
    if buffer is None or buffer.size < size:
        buffer = np.empty(size)
        setattr(_scratch, role, buffer)
    return buffer[:size].reshape(shape)


@dataclass(frozen=True)
class Operand:
    """How one factor is split: nlimbs limbs of bits bits, then the listed sums of two."""
    nlimbs: int
    bits: int
    pairs: np.ndarray           # (n_pairs, 2) intp

    @property
    def count(self) -> int:
        return self.nlimbs + len(self.pairs)

    def split(self, p: int, X: np.ndarray, role: Optional[str] = None) -> np.ndarray:
        """The float64 operands of X; in the thread's scratch for role (reused!) if given."""
        shape = (self.count,) + X.shape
        out = np.empty(shape) if role is None else _scratch_array(role, shape)
        limbs.split_limbs(X, out, self.nlimbs, self.pairs, p, self.bits)
        return out


@dataclass(frozen=True)
class LimbPlan:
    left: Operand
    right: Operand
    products: tuple             # (left float operand, right float operand) per dgemm
    diagonals: np.ndarray       # int64 (n_diag, n_products): A B = sum_s 2**(bits s) D[s] . P
    bits: int                   # limb size, the shift between diagonals
    block: int                  # longest exact inner dimension

    def cost(self, k: int) -> int:
        return len(self.products) * (k + REDUCE_COST * -(-k // self.block))


def _digits(p: int, nlimbs: int) -> tuple:
    """(bits, bound): the fewest bits per limb and the largest |limb| of a centred element."""
    if nlimbs == 1:
        return 0, p // 2
    for bits in range(1, 63):
        low = 1 << (bits - 1)
        rest = low * sum(1 << (bits * i) for i in range(nlimbs - 1))
        top = ((p // 2 + rest) >> (bits * (nlimbs - 1))) + 1
        if top <= low:
            return bits, low
    raise AssertionError("unreachable: 62-bit limbs always fit")


def _operand(p: int, nlimbs: int, with_pairs: bool) -> tuple:
    bits, bound = _digits(p, nlimbs)
    pairs = list(itertools.combinations(range(nlimbs), 2)) if with_pairs else []
    return Operand(nlimbs, bits, np.array(pairs, np.intp).reshape(-1, 2)), bound


def _split_left(p: int) -> LimbPlan:
    """A in two limbs times the whole centred B: 2 products, A0 B + 2**bits A1 B."""
    left, bound = _operand(p, 2, False)
    right, whole = _operand(p, 1, False)
    diagonals = np.eye(2, dtype=np.int64)
    return LimbPlan(left, right, ((0, 0), (1, 0)), diagonals, left.bits,
                  EXACT // max(bound * whole, 1))


def _karatsuba(p: int, nlimbs: int) -> LimbPlan:
    """Both factors in nlimbs limbs, then limbs and pair sums: nlimbs (nlimbs + 1) / 2 products.

    Diagonal i + j of the product gets (A_i + A_j)(B_i + B_j) - A_i B_i - A_j B_j, and
    diagonal 2 i gets A_i B_i.
    """
    side, bound = _operand(p, nlimbs, True)
    diagonals = np.zeros((2 * nlimbs - 1, side.count), np.int64)
    for i in range(nlimbs):
        diagonals[2 * i, i] += 1
    for q, (i, j) in enumerate(side.pairs):
        diagonals[i + j, nlimbs + q] += 1
        diagonals[i + j, [i, j]] -= 1
    term = (bound if nlimbs == 1 else 2 * bound) ** 2
    products = tuple((s, s) for s in range(side.count))
    return LimbPlan(side, side, products, diagonals, side.bits, EXACT // max(term, 1))


@functools.lru_cache(maxsize=None)
def _limb_plans(p: int) -> tuple:
    return (_karatsuba(p, 1), _split_left(p), _karatsuba(p, 2), _karatsuba(p, 3),
            _karatsuba(p, 4))


@functools.lru_cache(maxsize=4096)
def limb_plan(p: int, k: int) -> LimbPlan:
    """The cheapest exact limb plan for inner dimension k."""
    usable = [s for s in _limb_plans(p) if s.block >= min(k, MIN_BLOCK)]
    return min(usable, key=lambda s: s.cost(k))


def matmul_into(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray,
                accumulate: bool = False, negate: bool = False) -> None:
    """out = A @ B mod p, or out += A @ B (out -= A @ B with negate) when accumulating.

    A (m, k) and B (k, n) hold canonical elements of out's dtype, with any strides; out (m, n)
    is written in place and may be a strided view.
    """
    if negate and not accumulate:
        raise ValueError("negate subtracts from out: it needs accumulate")
    m, k = A.shape
    n = B.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        if not accumulate:
            out[...] = 0
        return
    mode = (-1 if negate else 1) if accumulate else 0
    if _dot_rows_serves(p, m, k, n):
        if _column_major(A, m):
            # A's columns are contiguous (a transposed array, as X.T): out.T = B.T @ A.T
            # combines A.T's rows in the order they lie in memory
            _combine_rows(p, np.ascontiguousarray(B.T), A.T, out.T, mode)
        else:
            _dot_rows(p, A, B, out, mode)
        return
    if _rowcomb_serves(p, k):
        _combine_rows(p, A, np.ascontiguousarray(B), out, mode)
        return
    if _integer_serves(p, m, k, n):
        _integer_product(p, A, B, out, mode)
    elif _blas.small(m * k * n):
        with _blas.one_thread:
            _limb_product(p, A, B, out, mode, negate)
    else:
        _limb_product(p, A, B, out, mode, negate)


def _integer_serves(p: int, m: int, k: int, n: int) -> bool:
    """Whether mul32's integer products beat the limb plans' dgemms: from INTEGER_FROM,
    where those need two or three float64 products."""
    return INTEGER_FROM <= p < 2**32 and m * k * n >= INTEGER_MIN_WORK


def _integer_product(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray,
                     mode: int) -> None:
    """matmul_into by mul32: B packed once, A's rows shared among the cores (each call runs
    without the GIL on its own scratch)."""
    packed = mul32.pack_b(B, p)
    _in_parts(A.shape[0], A.size * B.shape[1],
              lambda r0, r1: mul32.mul_packed(A[r0:r1], packed, out[r0:r1], mode))


def _in_parts(rows: int, work: int, job: Callable[[int, int], object],
              least: int = 8) -> None:
    """job(r0, r1) over row ranges that cover range(rows), each of at least ``least`` rows:
    one range per thread the BLAS may use for work of at least PARALLEL_WORK (the kernels
    release the GIL), else one range."""
    parts = 1 if work < PARALLEL_WORK else max(1, min(_blas.threads(), rows // least))
    if parts == 1:
        job(0, rows)
        return
    bounds = [rows * t // parts for t in range(parts + 1)]
    for running in [_pool().submit(job, r0, r1) for r0, r1 in zip(bounds, bounds[1:])]:
        running.result()


@functools.lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(_blas.cores(), thread_name_prefix="ffcode-matmul")


# A forked child has none of the pool's threads: it makes a pool of its own.
os.register_at_fork(after_in_child=_pool.cache_clear)


def _limb_product(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray, mode: int,
                  negate: bool) -> None:
    """matmul_into by the cheapest limb plan: one dgemm per limb product and inner block."""
    m, k = A.shape
    n = B.shape[1]
    s = limb_plan(p, k)
    if len(s.products) == 1 and k <= s.block:
        _plain_product(p, s, A, B, out, mode)
        return
    fa = s.left.split(p, A, "left")
    step = -(-k // -(-k // s.block))       # equal blocks, none longer than s.block
    # Wide products go in column chunks, so their float64 scratch stays in cache.
    width = max(MIN_WIDTH, CHUNK_BYTES // (8 * (s.right.count * k + len(s.products) * m)))
    for c0 in range(0, n, width):
        c1 = min(c0 + width, n)
        fb = s.right.split(p, B[:, c0:c1], "right")
        prods = _scratch_array("products", (len(s.products), m, c1 - c0))
        for start in range(0, k, step):
            stop = min(start + step, k)
            for t, (ia, ib) in enumerate(s.products):
                np.matmul(fa[ia, :, start:stop], fb[ib, start:stop, :], out=prods[t])
            limbs.combine_products(prods, s.diagonals, s.bits, out[:, c0:c1], p,
                                   mode if start == 0 else (-1 if negate else 1))


def _plain_product(p: int, s: LimbPlan, A: np.ndarray, B: np.ndarray, out: np.ndarray,
                   mode: int) -> None:
    """One dgemm of the centred operands, whole: nothing in it is reused across products, so
    column chunks would only cut the dgemm up. The passes over memory before and after it
    (centring, folding) run on every core."""
    m, k = A.shape
    n = B.shape[1]
    fa = _scratch_array("left", (1, m, k))
    fb = _scratch_array("right", (1, k, n))
    prods = _scratch_array("products", (1, m, n))
    no_pairs = s.left.pairs
    _in_parts(m, m * k, lambda r0, r1: limbs.split_limbs(A[r0:r1], fa[:, r0:r1], 1, no_pairs,
                                                         p, 0))
    _in_parts(k, k * n, lambda r0, r1: limbs.split_limbs(B[r0:r1], fb[:, r0:r1], 1, no_pairs,
                                                         p, 0))
    np.matmul(fa[0], fb[0], out=prods[0])
    _in_parts(m, m * n, lambda r0, r1: limbs.combine_products(
        prods[:, r0:r1], s.diagonals, s.bits, out[r0:r1], p, mode))


def combine(p: int, W: np.ndarray, rows: Union[np.ndarray, Sequence[np.ndarray]],
            dtype: DTypeLike) -> np.ndarray:
    """W @ (the rows stacked) mod p for W (m, k) and k >= 1 arrays of one size L (flattened),
    without stacking them into one copy where rowcomb serves, or W @ rows for a (k, L)
    matrix rows: (m, L)."""
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        rows = np.ascontiguousarray(rows)
    else:
        rows = [np.ascontiguousarray(r).reshape(-1) for r in rows]
    out = np.empty((W.shape[0], rows[0].shape[0]), dtype)
    combine_into(p, W, rows, out)
    return out


def combine_into(p: int, W: np.ndarray, rows: Union[np.ndarray, Sequence[np.ndarray]],
                 out: np.ndarray, rowcomb: bool = False) -> None:
    """out = W @ (rows stacked) mod p, for rows a list of contiguous 1-D arrays or a
    C-contiguous matrix, each out.shape[1] long, into a C-contiguous out. Short inner
    dimensions and a few output rows (or any, with rowcomb=True) by rowcomb without
    stacking, the output rows (or one row's columns) shared among the cores; the others by
    matmul_into."""
    k = W.shape[1]
    if not (rowcomb or _rowcomb_serves(p, k) or W.shape[0] <= FEW_ROWS):
        matmul_into(p, W, rows if isinstance(rows, np.ndarray) else np.stack(rows), out)
        return
    r, n = out.shape
    if r == 1:                          # one row: its columns in parts
        _in_parts(n, n * k, lambda c0, c1: _combine_rows(
            p, W, [row[c0:c1] for row in rows], out[:, c0:c1], 0))
    else:
        _in_parts(r, r * n * k, lambda r0, r1: _combine_rows(p, W[r0:r1], rows,
                                                            out[r0:r1], 0), least=1)


def _rowcomb_serves(p: int, k: int) -> bool:
    per_product = ROWCOMB_PER_PRODUCT if p < 2**31 else ROWCOMB64_PER_PRODUCT
    return 0 < k < per_product * len(limb_plan(p, k).products)


def few_columns(p: int, k: int) -> int:
    """The widest product of inner dimension k that matvec's dot products serve."""
    if _rowcomb_serves(p, k):
        return ROWCOMB_COLUMNS
    return FEW_COLUMNS_31 if p < 2**31 else FEW_COLUMNS_32 if p < 2**32 else FEW_COLUMNS_64


def _dot_rows_serves(p: int, m: int, k: int, n: int) -> bool:
    return n <= few_columns(p, k)


def _column_major(A: np.ndarray, m: int) -> bool:
    return m >= TRANSPOSED_ROWS and A.T.flags.c_contiguous and not A.flags.c_contiguous


def _dot_rows(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray, mode: int) -> None:
    """The product with few columns in Cython (matvec), any strides: m n dot products of A's
    rows with B's columns, lazily reduced 64-bit sums below 2**31, 128-bit sums from there."""
    matvec.dot_rows(A, B, out, p, mode)


def checks_left(p: int, A: np.ndarray, n: int) -> bool:
    """Whether matmul_checking_left serves A (m, k) times n columns: a product that goes to
    matvec's dot products, whose kernel can check A's elements as it reads them."""
    m, k = A.shape
    return m > 0 and k > 0 and n > 0 and _dot_rows_serves(p, m, k, n) and \
        not _column_major(A, m)


def matmul_checking_left(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray) -> bool:
    """out = A @ B for a product checks_left serves, A's elements not yet checked (B's are):
    False if one is >= p (out is then meaningless). One pass over A instead of two."""
    return matvec.dot_rows(A, B, out, p, 0, True)


def _combine_rows(p: int, A: np.ndarray, rows: Any, out: np.ndarray, mode: int) -> None:
    """The short-inner-dimension product in Cython (rowcomb) into any out: AVX2 Shoup
    products below 2**31, lazily reduced 128-bit sums from there."""
    kernel = rowcomb.combine_rows_31 if p < 2**31 else rowcomb.combine_rows_64
    if out.flags.c_contiguous:
        kernel(A, rows, out, p, mode)
    else:
        contiguous = np.ascontiguousarray(out) if mode else np.empty(out.shape, out.dtype)
        kernel(A, rows, contiguous, p, mode)
        out[...] = contiguous
