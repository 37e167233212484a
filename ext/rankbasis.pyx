# Incremental rank tracking of packet coefficient vectors (DESIGN.md §4). The accepted
# vectors are kept in reduced row echelon form, so reducing a new one takes one pass per
# basis row, and whether it is innovative is known before its payload is touched; then
# eliminate() applies the same row operations to the payloads.
from libc.stdint cimport uint32_t, uint64_t

import numpy as np

from ffcode._ext.modp cimport addmod, elem_t, invmod, mulmod, mulmod_shoup, shoup, submod

cdef extern from "shoup32.h" nogil:
    void shoup32_axpy(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w, uint32_t p)

ctypedef fused word_t:     # storage: uint32 lanes below 2**31 (vectorised), else uint64
    uint32_t
    uint64_t


cdef inline void _subtract_multiple(word_t *v, const word_t *row, Py_ssize_t n, uint64_t f,
                                    uint64_t p) noexcept nogil:
    # v -= f * row (raw pointers: slicing a memoryview per basis row costs more than a row)
    cdef uint64_t fsh
    cdef Py_ssize_t u
    if word_t is uint32_t:
        shoup32_axpy(v, row, n, <uint32_t>(p - f), <uint32_t>p)
    else:
        fsh = shoup(f, p)
        for u in range(n):
            v[u] = submod(v[u], mulmod_shoup(row[u], f, fsh, p), p)


cdef Py_ssize_t _probe(word_t[:, ::1] rows, word_t[::1] work, const Py_ssize_t[::1] pivots,
                       Py_ssize_t rank, const uint64_t[::1] coeffs, const uint64_t[::1] powers,
                       uint64_t[::1] mult, uint64_t[::1] column, uint64_t p) noexcept nogil:
    # Reduce coeffs (x) powers into work; returns its first nonzero column or -1.
    cdef Py_ssize_t R = powers.shape[0], n = work.shape[0], l, d, j, c
    cdef uint64_t f
    for l in range(coeffs.shape[0]):
        for d in range(R):
            work[l * R + d] = <word_t>mulmod(coeffs[l], powers[d], p)
    for j in range(rank):
        # In reduced form the multiplier of row j is the vector's entry at its pivot.
        f = work[pivots[j]]
        mult[j] = f
        if f != 0:
            _subtract_multiple(&work[0], &rows[j, 0], n, f, p)
    c = 0
    while c < n and work[c] == 0:
        c = c + 1
    if c == n:
        return -1
    for j in range(rank):
        column[j] = rows[j, c]
    return c


cdef void _commit(word_t[:, ::1] rows, word_t[::1] work, Py_ssize_t rank, Py_ssize_t c,
                  uint64_t scale, uint64_t p) noexcept nogil:
    cdef Py_ssize_t j, u
    cdef uint64_t g
    for u in range(work.shape[0]):
        work[u] = <word_t>mulmod(work[u], scale, p)
    for j in range(rank):
        g = rows[j, c]
        if g != 0:
            _subtract_multiple(&rows[j, 0], &work[0], work.shape[0], g, p)
    rows[rank, :] = work


cdef class RankBasis:
    """The span of the accepted coefficient vectors over GF(p), in reduced row echelon form:
    row j has a 1 in column pivots[j] and 0 in every other pivot column.

    A packet of worker w with piece coefficients c (length m) stands for the vector
    c (x) powers[w] of length n = m * R (entry l * R + d is c[l] * powers[w, d]).
    probe(c, w) reduces it against the basis, leaves the basis as it is, and returns the new
    pivot column or -1 when the vector is in the span. After a successful probe,
    ``multipliers()`` gives what the payloads need and ``commit()`` inserts the vector.
    """
    cdef readonly Py_ssize_t n, rank
    cdef uint64_t p
    cdef bint small
    cdef const uint64_t[:, ::1] powers
    cdef uint32_t[:, ::1] rows32
    cdef uint32_t[::1] work32
    cdef uint64_t[:, ::1] rows64
    cdef uint64_t[::1] work64
    cdef Py_ssize_t[::1] pivot_cols
    cdef uint64_t[::1] mult, column
    cdef object mult_array, column_array
    cdef Py_ssize_t pending
    cdef uint64_t scale

    def __init__(self, const uint64_t[:, ::1] powers, Py_ssize_t m, uint64_t p):
        if m < 1 or powers.shape[1] < 1 or not 2 <= p < 2**63:
            raise ValueError("RankBasis needs m >= 1, R >= 1 and 2 <= p < 2**63")
        n = m * powers.shape[1]
        self.n, self.p, self.rank, self.pending = n, p, 0, -1
        self.powers = powers
        self.small = p < 2**31
        storage = np.uint32 if self.small else np.uint64
        rows, work = np.zeros((n, n), storage), np.zeros(n, storage)
        if self.small:
            self.rows32, self.work32 = rows, work
        else:
            self.rows64, self.work64 = rows, work
        self.pivot_cols = np.zeros(n, np.intp)
        self.mult_array, self.column_array = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
        self.mult, self.column = self.mult_array, self.column_array

    @property
    def pivots(self):
        """The pivot column of each basis row, in insertion order."""
        return np.asarray(self.pivot_cols[:self.rank]).copy()

    def probe(self, const uint64_t[::1] coeffs, Py_ssize_t worker):
        """Reduce coeffs (x) powers[worker]; the new pivot column, or -1 if not innovative."""
        cdef Py_ssize_t c
        if coeffs.shape[0] * self.powers.shape[1] != self.n:
            raise ValueError("coefficient vector of the wrong length")
        if not 0 <= worker < self.powers.shape[0]:
            raise ValueError("worker out of range")
        self.pending = -1
        if self.rank == self.n:
            return -1
        with nogil:
            if self.small:
                c = _probe(self.rows32, self.work32, self.pivot_cols, self.rank, coeffs,
                           self.powers[worker], self.mult, self.column, self.p)
                if c >= 0:
                    self.scale = invmod(self.work32[c], self.p)
            else:
                c = _probe(self.rows64, self.work64, self.pivot_cols, self.rank, coeffs,
                           self.powers[worker], self.mult, self.column, self.p)
                if c >= 0:
                    self.scale = invmod(self.work64[c], self.p)
        self.pending = c
        return c

    def multipliers(self):
        """(f, s, g) of the pending vector: it is s * (v - sum_j f[j] * row j), and
        committing it subtracts g[j] times it from row j. f and g are views, valid until
        the next probe."""
        if self.pending < 0:
            raise ValueError("no innovative vector is pending")
        return self.mult_array[:self.rank], int(self.scale), self.column_array[:self.rank]

    def commit(self):
        """Insert the pending vector; returns the new rank."""
        cdef Py_ssize_t c = self.pending
        if c < 0:
            raise ValueError("no innovative vector is pending")
        with nogil:
            if self.small:
                _commit(self.rows32, self.work32, self.rank, c, self.scale, self.p)
            else:
                _commit(self.rows64, self.work64, self.rank, c, self.scale, self.p)
        self.pivot_cols[self.rank] = c
        self.rank += 1
        self.pending = -1
        return self.rank


DEF CHUNK = 2048    # payload columns per pass: row r's chunk stays in L1 while P's stream by


cdef inline void _axpy(elem_t *acc, const elem_t *y, Py_ssize_t n, uint64_t w,
                       uint64_t p) noexcept nogil:
    # acc += w * y
    cdef uint64_t wsh
    cdef Py_ssize_t u
    if w == 0:
        return
    if elem_t is uint32_t:
        if p < (<uint64_t>1 << 31):
            shoup32_axpy(acc, y, n, <uint32_t>w, <uint32_t>p)
            return
    wsh = shoup(w, p)
    for u in range(n):
        acc[u] = <elem_t>addmod(acc[u], mulmod_shoup(y[u], w, wsh, p), p)


def eliminate(elem_t[:, ::1] P, Py_ssize_t r, const elem_t[::1] payload,
              const uint64_t[::1] f, uint64_t s, const uint64_t[::1] g, uint64_t p):
    """The payload side of RankBasis.commit, in place on the payload rows P:
    row r = s * (payload - sum_{j<r} f[j] * row j), then row j -= g[j] * row r for j < r.
    """
    cdef Py_ssize_t n = P.shape[1], j, c0, width, u
    if not (0 <= r < P.shape[0] and payload.shape[0] == n and f.shape[0] >= r and
            g.shape[0] >= r):
        raise ValueError("eliminate: operands do not fit together")
    with nogil:
        for c0 in range(0, n, CHUNK):
            width = min(CHUNK, n - c0)
            for u in range(width):
                P[r, c0 + u] = 0
            _axpy(&P[r, c0], &payload[c0], width, s, p)
            for j in range(r):
                if f[j] != 0:
                    _axpy(&P[r, c0], &P[j, c0], width, p - mulmod(s, f[j], p), p)
            for j in range(r):
                if g[j] != 0:
                    _axpy(&P[j, c0], &P[r, c0], width, p - g[j], p)
