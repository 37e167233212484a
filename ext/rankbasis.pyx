# Incremental rank tracking of packet coefficient vectors (DESIGN.md §4). The accepted
# vectors are kept in reduced row echelon form, so reducing a new one takes one pass per
# basis row, and whether it is innovative is known before its payload is touched; commit
# then applies the same row operations to the payload rows.
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

from ffcode._ext.modp cimport addmod, elem_t, invmod, mulmod, mulmod_shoup, shoup, submod

cdef extern from "shoup32.h" nogil:
    void shoup32_axpy(uint32_t *acc, const uint32_t *y, Py_ssize_t n, uint32_t w, uint32_t p)

cdef extern from "copybelow.h" nogil:
    bint copy_below_u32(uint32_t *dst, const uint32_t *src, Py_ssize_t n, uint32_t p)

ctypedef fused word_t:     # coefficient storage: uint32 lanes below 2**31, else uint64
    uint32_t
    uint64_t

DEF CHUNK = 2048    # payload columns per pass: row r's chunk stays in L1 while rows stream by


cdef inline uint64_t _neg(uint64_t x, uint64_t p) noexcept nogil:
    return p - x if x else 0


cdef inline void _axpy(word_t *acc, const word_t *y, Py_ssize_t n, uint64_t w,
                       uint64_t p) noexcept nogil:
    # acc += w * y (raw pointers: slicing a memoryview per row costs more than a short row)
    cdef uint64_t wsh
    cdef Py_ssize_t u
    if w == 0:
        return
    if word_t is uint32_t:
        if p < (<uint64_t>1 << 31):
            shoup32_axpy(acc, y, n, <uint32_t>w, <uint32_t>p)
            return
    wsh = shoup(w, p)
    for u in range(n):
        acc[u] = <word_t>addmod(acc[u], mulmod_shoup(y[u], w, wsh, p), p)


cdef Py_ssize_t _probe(word_t[:, ::1] rows, word_t[::1] work, const Py_ssize_t[::1] pivots,
                       Py_ssize_t rank, const elem_t[::1] coeffs, const uint64_t[::1] powers,
                       uint64_t[::1] mult, uint64_t[::1] column, uint64_t p) noexcept nogil:
    # Reduce coeffs (x) powers into work; returns its first nonzero column, -1 if none, or
    # -2 if a coefficient is not below p.
    cdef Py_ssize_t R = powers.shape[0], n = work.shape[0], l, d, j, c
    cdef uint64_t f
    for l in range(coeffs.shape[0]):
        if coeffs[l] >= p:
            return -2
        for d in range(R):
            work[l * R + d] = <word_t>mulmod(coeffs[l], powers[d], p)
    for j in range(rank):
        # In reduced form the multiplier of row j is the vector's entry at its pivot.
        f = work[pivots[j]]
        mult[j] = f
        _axpy(&work[0], &rows[j, 0], n, _neg(f, p), p)
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
    for u in range(work.shape[0]):
        work[u] = <word_t>mulmod(work[u], scale, p)
    for j in range(rank):
        _axpy(&rows[j, 0], &work[0], work.shape[0], _neg(rows[j, c], p), p)
    rows[rank, :] = work


cdef bint _eliminate(word_t[:, ::1] P, Py_ssize_t r, const word_t[::1] payload,
                     const uint64_t[::1] f, uint64_t s, const uint64_t[::1] g,
                     uint64_t p, bint checked) noexcept nogil:
    # Payload row r = s * (payload - sum_{j<r} f[j] row j), then row j -= g[j] * row r;
    # False (and nothing written) if an element of payload is not below p (not looked at
    # when ``checked``: staged rows were checked as they were copied in).
    # payload may be row r itself (staged there on arrival): it is read chunk by chunk
    # before that chunk of row r is written.
    cdef Py_ssize_t n = P.shape[1], j, c0, width, u
    if not checked:
        for u in range(n):
            if payload[u] >= p:
                return False
    for c0 in range(0, n, CHUNK):
        width = min(CHUNK, n - c0)
        if <const void *>&P[r, c0] != <const void *>&payload[c0]:
            memcpy(&P[r, c0], &payload[c0], width * sizeof(word_t))
        _axpy(&P[r, c0], &P[r, c0], width, s - 1, p)      # row r *= s, in place
        for j in range(r):
            _axpy(&P[r, c0], &P[j, c0], width, _neg(mulmod(s, f[j], p), p), p)
        for j in range(r):
            _axpy(&P[j, c0], &P[r, c0], width, _neg(g[j], p), p)
    return True


cdef bint _copy_below(word_t *dst, const word_t *src, Py_ssize_t n,
                      uint64_t p) noexcept nogil:
    # dst = src, and whether every element is below p (one pass; a max reduction, which
    # the compiler vectorises)
    cdef Py_ssize_t u
    cdef word_t v, top = 0
    for u in range(n):
        v = src[u]
        dst[u] = v
        top = v if v > top else top
    return n == 0 or top < p


cdef class RankBasis:
    """The span of the accepted coefficient vectors over GF(p), in reduced row echelon form:
    row j has a 1 in column pivots[j] and 0 in every other pivot column.

    A packet of worker w with piece coefficients c (length m) stands for the vector
    c (x) powers[w] of length n = m * R (entry l * R + d is c[l] * powers[w, d]).
    probe(c, w) reduces it against the basis, leaves the basis as it is, and returns the new
    pivot column or -1 when the vector is in the span; commit() then inserts it. With
    payload rows reserved (``reserve``), commit(payload) applies the same row operations to
    them, so payload row j always carries the combination that basis row j describes.
    """
    cdef readonly Py_ssize_t n, rank
    cdef uint64_t p
    cdef bint small
    cdef const uint64_t[:, ::1] powers
    cdef uint32_t[:, ::1] rows32, pay32
    cdef uint32_t[::1] work32
    cdef uint64_t[:, ::1] rows64, pay64
    cdef uint64_t[::1] work64
    cdef Py_ssize_t[::1] pivot_cols
    cdef uint64_t[::1] mult, column
    cdef object mult_array, column_array, payload_array
    cdef uint8_t[::1] staged        # payload rows staged whole and checked, not yet replayed
    cdef Py_ssize_t pending, reduced
    cdef uint64_t scale

    def __init__(self, const uint64_t[:, ::1] powers, Py_ssize_t m, uint64_t p):
        if m < 1 or powers.shape[1] < 1 or not 2 <= p < 2**63:
            raise ValueError("RankBasis needs m >= 1, R >= 1 and 2 <= p < 2**63")
        n = m * powers.shape[1]
        self.n, self.p, self.rank, self.pending, self.reduced = n, p, 0, -1, 0
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
        self.payload_array = None

    @property
    def pivots(self):
        """The pivot column of each basis row, in insertion order."""
        return np.asarray(self.pivot_cols[:self.rank]).copy()

    @property
    def payloads(self):
        """The reserved payload rows (n, size), row j carrying basis row j; or None."""
        return self.payload_array

    def reserve(self, Py_ssize_t size, buffer=None):
        """Keep n payload rows of size elements (dtype uint32 for p < 2**32, else uint64),
        in the first n * size elements of buffer (a flat array of that dtype) if given."""
        if self.payload_array is not None or self.rank:
            raise ValueError("payload rows are reserved once, before the first commit")
        dtype = np.dtype(np.uint32 if self.p < 2**32 else np.uint64)
        if buffer is None:
            rows = np.empty((self.n, size), dtype)
        elif (isinstance(buffer, np.ndarray) and buffer.dtype == dtype and buffer.ndim == 1
                and buffer.flags.c_contiguous and buffer.flags.writeable
                and buffer.shape[0] >= self.n * size):
            rows = buffer[:self.n * size].reshape(self.n, size)
        else:
            raise ValueError(f"buffer must be a writable flat {dtype} array of at least "
                             f"{self.n * size} elements")
        if self.p < 2**32:
            self.payload_array = self.pay32 = rows
        else:
            self.payload_array = self.pay64 = rows
        self.staged = np.zeros(self.n, np.uint8)

    def stage(self, Py_ssize_t row, payload):
        """Copy a payload (flat, of the reserved size) into payload row ``row`` >= rank, to
        be committed from there once the rows before it are; ValueError if an element is
        not below p (the row then holds garbage, and nothing else changed)."""
        cdef const uint32_t[::1] v32
        cdef const uint64_t[::1] v64
        cdef bint ok
        if self.payload_array is None or not self.rank <= row < self.n:
            raise ValueError("stage needs reserved payload rows and rank <= row < n")
        if payload.shape != (self.payload_array.shape[1],):
            raise ValueError("payload of the wrong size")
        self.staged[row] = False
        if self.p < 2**32:
            v32 = payload
            with nogil:
                ok = copy_below_u32(&self.pay32[row, 0], &v32[0] if v32.shape[0] else NULL,
                                    v32.shape[0], <uint32_t>self.p)
        else:
            v64 = payload
            with nogil:
                ok = _copy_below(&self.pay64[row, 0], &v64[0] if v64.shape[0] else NULL,
                                 v64.shape[0], self.p)
        if not ok:
            raise ValueError(f"packet payload has elements >= p = {self.p}")
        self.staged[row] = True

    def probe(self, coeffs, Py_ssize_t worker):
        """Reduce coeffs (x) powers[worker] (coeffs: uint32 or uint64, each below p); the
        new pivot column, or -1 if not innovative."""
        cdef Py_ssize_t c, m
        cdef const uint32_t[::1] c32
        cdef const uint64_t[::1] c64
        cdef bint narrow = coeffs.itemsize == 4
        if narrow:
            c32 = coeffs
            m = c32.shape[0]
        else:
            c64 = coeffs
            m = c64.shape[0]
        if m * self.powers.shape[1] != self.n:
            raise ValueError("coefficient vector of the wrong length")
        if not 0 <= worker < self.powers.shape[0]:
            raise ValueError("worker out of range")
        self.pending = -1
        if self.rank == self.n:
            return -1
        with nogil:
            if narrow:
                c = _probe_basis(self, c32, worker)
            else:
                c = _probe_basis(self, c64, worker)
        if c == -2:
            raise ValueError(f"packet coeffs has elements >= p = {self.p}")
        self.pending = c
        return c

    def multipliers(self):
        """(f, s, g) of the pending vector: it is s * (v - sum_j f[j] * row j), and
        committing it subtracts g[j] times it from row j. f and g are views, valid until
        the next probe."""
        if self.pending < 0:
            raise ValueError("no innovative vector is pending")
        return self.mult_array[:self.rank], int(self.scale), self.column_array[:self.rank]

    def commit(self, payload=None, bint deferred=False):
        """Insert the pending vector (and its payload, a flat array of the reserved size and
        dtype, when payload rows are reserved); returns the new rank. A payload element not
        below p raises ValueError and changes nothing. ``deferred=True`` inserts the vector
        alone: its payload, staged in row rank beforehand, is reduced later by ``replay``
        with this probe's multipliers."""
        cdef Py_ssize_t c = self.pending
        cdef const uint32_t[::1] v32
        cdef const uint64_t[::1] v64
        cdef bint ok = True
        if c < 0:
            raise ValueError("no innovative vector is pending")
        if deferred:
            if payload is not None or self.payload_array is None:
                raise ValueError("a deferred commit takes no payload and needs reserved rows")
        elif (payload is None) != (self.payload_array is None):
            raise ValueError("commit takes a payload exactly when payload rows are reserved")
        if payload is not None:
            if payload.shape != (self.payload_array.shape[1],):
                raise ValueError("payload of the wrong size")
            if self.reduced != self.rank:
                raise ValueError("commit with a payload needs every earlier row replayed")
            if self.p < 2**32:
                v32 = payload
                with nogil:
                    ok = _eliminate(self.pay32, self.rank, v32, self.mult, self.scale,
                                    self.column, self.p, False)
            else:
                v64 = payload
                with nogil:
                    ok = _eliminate(self.pay64, self.rank, v64, self.mult, self.scale,
                                    self.column, self.p, False)
            if not ok:
                raise ValueError(f"packet payload has elements >= p = {self.p}")
            self.staged[self.rank] = False
        with nogil:
            if self.small:
                _commit(self.rows32, self.work32, self.rank, c, self.scale, self.p)
            else:
                _commit(self.rows64, self.work64, self.rank, c, self.scale, self.p)
        self.pivot_cols[self.rank] = c
        self.rank += 1
        if payload is not None:
            self.reduced = self.rank
        self.pending = -1
        return self.rank

    def replay(self, Py_ssize_t row, const uint64_t[::1] f, uint64_t s,
               const uint64_t[::1] g):
        """Reduce the payload staged in ``row`` with the multipliers (f, s, g) that
        ``multipliers()`` gave for its vector (copies of them). Rows are replayed in order,
        each once: ``row`` must be the first not yet reduced. Payload row ``row`` then
        carries basis row ``row``'s combination. A row staged whole is not checked again;
        any other (ValueError if an element is not below p)."""
        cdef Py_ssize_t j
        if self.payload_array is None or not 0 <= row < self.rank:
            raise ValueError("replay needs reserved payload rows and a committed row")
        if row != self.reduced:
            raise ValueError(f"rows are replayed in order: the next is {self.reduced}, "
                             f"not {row}")
        if f.shape[0] != row or g.shape[0] != row:
            raise ValueError("multipliers of the wrong length")
        if not 0 < s < self.p:
            raise ValueError(f"the scale must be a nonzero element below p = {self.p}")
        for j in range(row):
            if f[j] >= self.p or g[j] >= self.p:
                raise ValueError(f"multipliers must be below p = {self.p}")
        cdef bint narrow = self.p < 2**32, checked = self.staged[row], ok
        with nogil:
            if narrow:
                ok = _eliminate(self.pay32, row, self.pay32[row], f, s, g, self.p, checked)
            else:
                ok = _eliminate(self.pay64, row, self.pay64[row], f, s, g, self.p, checked)
        if not ok:
            raise ValueError(f"payload row {row} has elements >= p = {self.p} (it was not "
                             f"staged)")
        self.staged[row] = False
        self.reduced = row + 1


cdef Py_ssize_t _probe_basis(RankBasis b, const elem_t[::1] coeffs,
                             Py_ssize_t worker) noexcept nogil:
    cdef Py_ssize_t c
    if b.small:
        c = _probe(b.rows32, b.work32, b.pivot_cols, b.rank, coeffs, b.powers[worker],
                   b.mult, b.column, b.p)
        if c >= 0:
            b.scale = invmod(b.work32[c], b.p)
    else:
        c = _probe(b.rows64, b.work64, b.pivot_cols, b.rank, coeffs, b.powers[worker],
                   b.mult, b.column, b.p)
        if c >= 0:
            b.scale = invmod(b.work64[c], b.p)
    return c
