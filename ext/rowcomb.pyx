# Products with a short inner dimension, out = A @ B for A (m, k) with small k, computed
# directly as m linear combinations of B's rows. This is the shape of encoding and decoding
# a polynomial code (a workers-by-blocks matrix times the stacked data blocks): few flops
# per output element, so the limb products through BLAS would be bound by their float64
# passes over memory, while this kernel reads B once and writes out once.
from libc.stdint cimport uint32_t, uint64_t

DEF CHUNK = 512     # columns per pass: a k x CHUNK slab of B stays in cache across A's rows


def combine_rows_31(const uint32_t[:, :] A, const uint32_t[:, ::1] B, uint32_t[:, ::1] out,
                    uint32_t p, int mode):
    """out = A @ B (mode 0), out + A @ B (mode 1) or out - A @ B (mode -1), for p < 2**31.

    Each term is a Shoup product with a 32-bit quotient: q = floor(w' x / 2**32) for
    w' = floor(w 2**32 / p) leaves w x - q p in [0, 2p), which fits a uint32 because
    p < 2**31; unsigned min(r, r - p) then reduces it without a branch. Every lane op is
    32 bits wide except the one high product, so the loop vectorises 8 columns at a time.
    """
    cdef Py_ssize_t m = A.shape[0], k = A.shape[1], n = B.shape[1]
    cdef Py_ssize_t i, t, j, j0, width
    cdef uint32_t w, wsh, x, q, r, s
    cdef uint32_t acc[CHUNK]
    with nogil:
        for j0 in range(0, n, CHUNK):
            width = min(CHUNK, n - j0)
            for i in range(m):
                for j in range(width):
                    acc[j] = out[i, j0 + j] if mode != 0 else 0
                for t in range(k):
                    w = A[i, t]
                    if mode < 0 and w != 0:
                        w = p - w
                    if w == 0:
                        continue
                    wsh = <uint32_t>((<uint64_t>w << 32) // p)
                    for j in range(width):
                        x = B[t, j0 + j]
                        q = <uint32_t>((<uint64_t>wsh * x) >> 32)
                        r = w * x - q * p
                        r = min(r, r - p)
                        s = acc[j] + r
                        acc[j] = min(s, s - p)
                for j in range(width):
                    out[i, j0 + j] = acc[j]
