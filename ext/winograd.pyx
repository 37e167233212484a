# One Strassen-Winograd level over the exact float64 product (DESIGN.md §5): 7 dgemms of half
# size instead of 8. With A and B cut into quadrants,
#
#   S1 = A21 + A22   S2 = S1 - A11   S3 = A11 - A21   S4 = A12 - S2
#   T1 = B12 - B11   T2 = B22 - T1   T3 = B22 - B12   T4 = T2 - B21
#   P1 = A11 B11  P2 = A12 B21  P3 = S4 B22  P4 = A22 T4  P5 = S1 T1  P6 = S2 T2  P7 = S3 T3
#   C11 = P1 + P2   C12 = P1 + P6 + P5 + P3   C21 = P1 + P6 + P7 - P4   C22 = P1 + P6 + P7 + P5
#
# For centred elements |a|, |b| <= h and inner dimension 2k, |S| <= 4h, |T| <= 4h, and every
# P and every partial sum above is at most 18 k h**2 in magnitude: all of it is exact in
# float64 while 9 (2k) h**2 < 2**53, which the caller checks. The split writes the seven
# left and seven right factors in one pass over each operand, and the fold reads the seven
# products once and writes C mod p.
from libc.math cimport floor, fma
from libc.stdint cimport int64_t, uint32_t

LEFT = ("A11", "A12", "S4", "A22", "S1", "S2", "S3")     # the left factor of P1..P7
RIGHT = ("B11", "B21", "B22", "T4", "T1", "T2", "T3")    # the right factor of P1..P7


cdef inline double _centred(uint32_t x, uint32_t half, double p) noexcept nogil:
    return <double>x - (p if x > half else 0.0)


def split_left(const uint32_t[:, :] A, double[:, :, ::1] out, uint32_t p):
    """out[t] = the left factor of P(t+1) (LEFT) from A's quadrants, centred, as float64."""
    cdef Py_ssize_t r = out.shape[1], c = out.shape[2], i, j
    cdef uint32_t half = p // 2
    cdef double pd = p, a11, a12, a21, a22, s1, s2
    if out.shape[0] != 7 or A.shape[0] != 2 * r or A.shape[1] != 2 * c:
        raise ValueError("the factors must be 7 quadrants of A")
    with nogil:
        for i in range(r):
            for j in range(c):
                a11 = _centred(A[i, j], half, pd)
                a12 = _centred(A[i, c + j], half, pd)
                a21 = _centred(A[r + i, j], half, pd)
                a22 = _centred(A[r + i, c + j], half, pd)
                s1 = a21 + a22
                s2 = s1 - a11
                out[0, i, j] = a11
                out[1, i, j] = a12
                out[2, i, j] = a12 - s2
                out[3, i, j] = a22
                out[4, i, j] = s1
                out[5, i, j] = s2
                out[6, i, j] = a11 - a21


def split_right(const uint32_t[:, :] B, double[:, :, ::1] out, uint32_t p):
    """out[t] = the right factor of P(t+1) (RIGHT) from B's quadrants, centred, as float64."""
    cdef Py_ssize_t r = out.shape[1], c = out.shape[2], i, j
    cdef uint32_t half = p // 2
    cdef double pd = p, b11, b12, b21, b22, t1, t2
    if out.shape[0] != 7 or B.shape[0] != 2 * r or B.shape[1] != 2 * c:
        raise ValueError("the factors must be 7 quadrants of B")
    with nogil:
        for i in range(r):
            for j in range(c):
                b11 = _centred(B[i, j], half, pd)
                b12 = _centred(B[i, c + j], half, pd)
                b21 = _centred(B[r + i, j], half, pd)
                b22 = _centred(B[r + i, c + j], half, pd)
                t1 = b12 - b11
                t2 = b22 - t1
                out[0, i, j] = b11
                out[1, i, j] = b21
                out[2, i, j] = b22
                out[3, i, j] = t2 - b21
                out[4, i, j] = t1
                out[5, i, j] = t2
                out[6, i, j] = b22 - b12


cdef inline uint32_t _fold(double x, double p, double pinv, double prior,
                           int mode) noexcept nogil:
    # (prior + mode x) mod p for an integer-valued |x| < 2**53 and canonical prior: the
    # floored quotient is off by at most one, and the fused multiply-add is exact.
    cdef double r = fma(-floor(x * pinv), p, x)
    r = r + p if r < 0 else r
    r = r - p if r >= p else r
    if mode != 0:
        r = prior + mode * r
        r = r + p if r < 0 else r
        r = r - p if r >= p else r
    return <uint32_t><int64_t>r


def fold(const double[:, :, ::1] P, uint32_t[:, :] out, uint32_t p, int mode):
    """out = C mod p (mode 0), out + C (mode 1) or out - C (mode -1), C from P1..P7."""
    cdef Py_ssize_t r = P.shape[1], c = P.shape[2], i, j
    cdef double pd = p, pinv = 1.0 / p, u2, u3
    if P.shape[0] != 7 or out.shape[0] != 2 * r or out.shape[1] != 2 * c:
        raise ValueError("the products must be 7 quadrants of out")
    if mode not in (-1, 0, 1):
        raise ValueError("mode must be -1, 0 or 1")
    with nogil:
        for i in range(r):
            for j in range(c):
                u2 = P[0, i, j] + P[5, i, j]
                u3 = u2 + P[6, i, j]
                out[i, j] = _fold(P[0, i, j] + P[1, i, j], pd, pinv, out[i, j], mode)
                out[i, c + j] = _fold(u2 + P[4, i, j] + P[2, i, j], pd, pinv,
                                      out[i, c + j], mode)
                out[r + i, j] = _fold(u3 - P[3, i, j], pd, pinv, out[r + i, j], mode)
                out[r + i, c + j] = _fold(u3 + P[4, i, j], pd, pinv, out[r + i, c + j],
                                          mode)
