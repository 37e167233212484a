"""Exact GF(p) matrix products through float64 BLAS (DESIGN.md §5).

A float64 dot product of integers is exact while every partial sum stays below 2**53. Each
operand is centred into (-p/2, p/2] and, when p is too large for one product, split into
signed limbs of ``bits`` bits. A *scheme* lists the float64 products to take (one dgemm each)
and the weight mod p of each in the result: the plain product, the left operand split in
two, or Karatsuba over L limbs — the L singles and the L(L-1)/2 pair sums, weighted so that
sum_t w_t P_t = sum_ij 2**(bits (i+j)) A_i B_j. The inner dimension is cut into blocks short
enough to keep every sum exact; the cheapest scheme for (p, k) is taken.
"""
import functools
import itertools
from dataclasses import dataclass

import numpy as np

from ffcode._ext import limbs

EXACT = 2**53 - 1          # largest integer bound a float64 sum stays exact under
MIN_BLOCK = 32             # inner blocks shorter than this waste the dgemm
REDUCE_COST = 64           # cost of folding one product back, in units of inner dimension


@dataclass(frozen=True)
class Scheme:
    bits_a: int
    subsets_a: np.ndarray       # (n_sub, n_limbs) 0/1: which limbs each float operand sums
    bits_b: int
    subsets_b: np.ndarray
    products: tuple             # (index into subsets_a, index into subsets_b) per dgemm
    weights: np.ndarray         # uint64 weight mod p of each product
    block: int                  # longest exact inner dimension

    def cost(self, k: int) -> int:
        blocks = -(-k // self.block)
        return len(self.products) * (k + REDUCE_COST * blocks)


def _limb_bound(p: int, nlimbs: int, bits: int) -> int:
    """Largest |digit| when a centred element is written in nlimbs signed digits of bits bits."""
    if nlimbs == 1:
        return p // 2
    low = 1 << (bits - 1)
    top = (p // 2 + low * sum(1 << (bits * i) for i in range(nlimbs - 1))) >> (bits * (nlimbs - 1))
    return max(low, top + 1)


def _digits(p: int, nlimbs: int) -> tuple:
    """(bits, bound): the fewest bits per limb whose top digit still fits."""
    if nlimbs == 1:
        return 0, p // 2
    for bits in range(1, 63):
        bound = _limb_bound(p, nlimbs, bits)
        if bound <= 1 << (bits - 1):
            return bits, bound
    raise AssertionError("unreachable: 62-bit limbs always fit")


def _subsets(nlimbs: int, pairs: bool) -> tuple:
    sets = [(i,) for i in range(nlimbs)]
    if pairs:
        sets += list(itertools.combinations(range(nlimbs), 2))
    mask = np.zeros((len(sets), nlimbs), np.uint8)
    for s, members in enumerate(sets):
        mask[s, list(members)] = 1
    return sets, mask


def _block(bound: int) -> int:
    return EXACT // max(bound, 1)


def _split_left(p: int) -> Scheme:
    """A in two limbs times the whole centred B: 2 products."""
    bits, bound = _digits(p, 2)
    _, mask_a = _subsets(2, pairs=False)
    _, mask_b = _subsets(1, pairs=False)
    weights = np.array([1, pow(2, bits, p)], np.uint64) % np.uint64(p)
    return Scheme(bits, mask_a, 0, mask_b, ((0, 0), (1, 0)), weights,
                  _block(bound * (p // 2)))


def _karatsuba(p: int, nlimbs: int) -> Scheme:
    """Both operands in nlimbs limbs; singles and pair sums: nlimbs (nlimbs + 1) / 2 products."""
    bits, bound = _digits(p, nlimbs)
    sets, mask = _subsets(nlimbs, pairs=nlimbs > 1)
    weights = []
    for members in sets:
        if len(members) == 2:
            i, j = members
            w = 1 << (bits * (i + j))
        else:
            (i,) = members
            w = (1 << (2 * bits * i)) - sum(1 << (bits * (i + j)) for j in range(nlimbs) if j != i)
        weights.append(w % p)
    products = tuple((s, s) for s in range(len(sets)))
    term = (bound if nlimbs == 1 else 2 * bound) ** 2
    return Scheme(bits, mask, bits, mask, products, np.array(weights, np.uint64), _block(term))


@functools.lru_cache(maxsize=None)
def _schemes(p: int) -> tuple:
    return (_karatsuba(p, 1), _split_left(p), _karatsuba(p, 2), _karatsuba(p, 3),
            _karatsuba(p, 4))


@functools.lru_cache(maxsize=4096)
def scheme(p: int, k: int) -> Scheme:
    """The cheapest exact scheme for an inner dimension k."""
    usable = [s for s in _schemes(p) if s.block >= min(k, MIN_BLOCK)]
    return min(usable, key=lambda s: s.cost(k))


def matmul_into(p: int, A: np.ndarray, B: np.ndarray, out: np.ndarray,
                accumulate: bool = False, negate: bool = False) -> None:
    """out = A @ B mod p, or out += ±A @ B mod p with accumulate (negate: subtract).

    A (m, k) and B (k, n) hold canonical elements of out's dtype; any strides. out (m, n) is
    written in place and may be a strided view.
    """
    m, k = A.shape
    n = B.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        if not accumulate:
            out[...] = 0
        return
    s = scheme(p, k)
    fa = np.empty((s.subsets_a.shape[0], m, k))
    fb = np.empty((s.subsets_b.shape[0], k, n))
    limbs.split_limbs(A, fa, s.subsets_a, p, s.bits_a)
    limbs.split_limbs(B, fb, s.subsets_b, p, s.bits_b)
    weights = (np.uint64(p) - s.weights) % np.uint64(p) if negate else s.weights
    prods = np.empty((len(s.products), m, n))
    for start in range(0, k, s.block):
        stop = min(start + s.block, k)
        for t, (ia, ib) in enumerate(s.products):
            np.matmul(fa[ia, :, start:stop], fb[ib, start:stop, :], out=prods[t])
        limbs.combine_products(prods, weights, out, p, accumulate or start > 0)
