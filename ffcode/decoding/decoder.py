"""The rank-tracking decoder of full-speed coding.

A packet of worker i with piece coefficients c is one linear equation on the m·R unknown
blocks H_d^(l) (coefficient d of piece l of h): its vector is c ⊗ (1, a_i, ..., a_i^(R-1)).
The vectors accepted so far are kept in reduced row echelon form in Cython (RankBasis), so
whether a packet is innovative is known before its payload is read. The payloads are
eliminated along with them as they arrive: payload row j always equals the combination of
unknowns that basis row j describes, so when the rank reaches m·R every payload row *is*
an unknown block, and the output is read off them (combined only where the code's output
is a combination of coefficients, as for LCC).

With ``defer=True`` (the runtime's mode) an innovative payload is only checked and copied
into its payload row when it arrives (one pass): rank tracking stays instant, so the master
keeps up with the wire, and ``eliminate()`` does the payload work in arrival order whenever
the master is idle, each payload reduced in place in the row it was staged in with the
multipliers its coefficient vector's reduction found on arrival. Payloads of at most
``EAGER_BYTES`` are eliminated on arrival all the same: staging one and replaying its
multipliers later costs more than its elimination.

The equations come from the code (``Code.evaluations``: a_i ** e over its support), so any
code of the contract decodes here, dense support or sparse.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Optional, Sequence

import numpy as np

from ffcode import checks
from ffcode._ext import rankbasis
from ffcode._types import ArrayLike, Int, Output
from ffcode.codes.base import Encoding
from ffcode.pieces import Packet, pieces_count
from ffcode.errors import InvalidParameterError


EAGER_BYTES = 4096      # a deferring decoder eliminates payloads this small on arrival
IN_PLACE_BYTES = 1 << 20    # payload rows this large are put in order in place, not copied


class Decoder:
    """Decodes an ``encoding`` (what ``code.encode`` returned) from packets of m = ``pieces``
    pieces per local result, the moment it holds m·R independent ones, whoever sent them.

    ``add(packet)`` returns True when the packet was innovative; ``rank``, ``needed`` and
    ``complete`` track progress; ``result()`` returns exactly what ``code.decode`` would.
    Only the encoding's layout is used, never its shares: the shares may be elsewhere.
    A packet's worker, index, coefficients and payload shape are always checked; its
    payload is read (and its elements checked) only when the packet is innovative. A
    malformed packet raises ValueError or TypeError and leaves the decoder unchanged.

    The shapes come from the encoding. When the code cannot tell a local result's rows (LCC
    with an f that is not row-linear), the first innovative packet fixes the shape: its
    payload's with m = 1, else its ``rows`` (as ``piece_packets`` sets them) and its
    payload's other dimensions; later packets must agree. ``result_shape`` (one local
    result's shape) fixes it beforehand instead, so that no packet can. With ``defer=True``
    innovative payloads wait in ``pending`` until ``eliminate()`` (or ``result()``) reduces
    them; ``buffer`` (a flat array of the field's dtype, e.g. a previous decoder's
    ``buffer``) holds the payload rows when it is large enough, sparing the allocation.

    >>> from ffcode import GF, MDS, piece_packets
    >>> F = GF(65521)
    >>> code = MDS(F, k=2, n_workers=3)
    >>> shares = code.encode([[1, 2], [3, 4], [5, 6], [7, 8]])
    >>> decoder = Decoder(shares, pieces=2)
    >>> for w in (2, 0):
    ...     for packet in piece_packets(F, code.compute(shares[w], [1, 1]), 2, w, seed=w):
    ...         _ = decoder.add(packet)
    >>> decoder.rank, decoder.needed, decoder.result().tolist()
    (4, 4, [3, 7, 11, 15])
    """

    def __init__(self, encoding: Encoding, pieces: Int,
                 result_shape: Optional[Sequence[Int]] = None, defer: bool = False,
                 buffer: Optional[np.ndarray] = None):
        if not isinstance(encoding, Encoding):
            raise InvalidParameterError("Argument 'encoding' must be what a code's encode "
                                        f"returned, not {type(encoding).__name__}.")
        code = encoding.code
        self.encoding, self.code, self.F = encoding, code, code.F
        self.pieces = pieces_count(pieces)
        R = code.recovery_threshold
        self.needed = self.pieces * R
        if result_shape is not None:
            result_shape = tuple(checks.integer(s, "result_shape", low=0)
                                 for s in result_shape)
            if not result_shape:
                raise InvalidParameterError("Argument 'result_shape' must be a non-empty shape, "
                                            "not ().")
            self._rows: Optional[int] = result_shape[0]
        else:
            self._rows = code.result_rows(encoding)     # None: the first innovative packet's
        self._result_shape = result_shape
        self._piece_shape: Optional[tuple] = None   # fixed by the first innovative packet
        powers = code.evaluations.astype(np.uint64)
        self._basis = rankbasis.RankBasis(powers, self.pieces, code.F.p)
        self._defer = bool(defer)
        self._pending: deque = deque()  # (row, multipliers) of staged payload rows
        self._reduced = 0               # payload rows reduced so far (defer=True)
        self._buffer = buffer if defer else None
        self._seen: set = set()
        self._output: Optional[Output] = None
        self.received = 0

    def __repr__(self) -> str:
        return (f"Decoder({self.code!r}, pieces={self.pieces}, rank={self.rank}/"
                f"{self.needed})")

    @property
    def rank(self) -> int:
        return self._basis.rank

    @property
    def wrong(self) -> list:
        """Always empty, as a Decoder trusts every worker."""
        return []

    def counted(self, worker: int, index: int) -> bool:
        """Every kept packet counts towards the output."""
        return True

    def exclude(self, worker: int) -> None:
        """Refused (ValueError): a Decoder trusts every worker; RobustDecoder excludes."""
        raise ValueError("A Decoder trusts every worker: only a collector that corrects "
                         "wrong ones (RobustDecoder) excludes a worker.")

    @property
    def complete(self) -> bool:
        return self._basis.rank == self.needed

    def add(self, packet: Packet) -> bool:
        """Take one packet; True if it was innovative (it raised the rank)."""
        worker, index, coeffs, shape = self.checked_header(packet)
        key = (worker, index)
        if key in self._seen or self._basis.rank == self.needed:
            self.received += 1
            return False
        if self._basis.probe(coeffs, worker) < 0:      # checks the coefficients < p
            self._seen.add(key)
            self.received += 1
            return False
        payload = self.checked_payload(packet, shape)     # innovative: read it
        if self._piece_shape is None:
            size = math.prod(shape)
            if self._defer:                             # payload rows staged on arrival
                buffer = self._buffer
                if not (isinstance(buffer, np.ndarray) and buffer.dtype == self.F.dtype and
                        buffer.ndim == 1 and buffer.size >= self.needed * size):
                    buffer = np.empty(self.needed * size, self.F.dtype)
                self._buffer = buffer
                if size * self.F.dtype.itemsize <= EAGER_BYTES:
                    self._defer = False                 # eliminated at once: cheaper
            self._basis.reserve(size, self._buffer)
            self._piece_shape = shape
            if self._rows is None:
                self._rows = self._claimed_rows(packet.rows, shape)
        if self._defer:
            row = self._basis.rank
            self._basis.stage(row, payload.reshape(-1))   # checks the elements < p
            f, s, g = self._basis.multipliers()
            self._pending.append((row, f.copy(), s, g.copy()))
            self._basis.commit(deferred=True)
        else:
            self._basis.commit(payload.reshape(-1))     # checks the elements < p first
        self._seen.add(key)
        self.received += 1
        return True

    def checked_header(self, packet: Packet) -> tuple[int, int, np.ndarray, tuple[int, ...]]:
        """(worker, index, coefficients, payload shape) of a packet, all checked (and the
        rows it claims for its local result, if any); the payload's elements are left for
        ``checked_payload``, read only when needed."""
        if not isinstance(packet, Packet):
            raise InvalidParameterError(f"Argument 'packet' must be an ffcode.Packet, not "
                                        f"{type(packet).__name__}.")
        worker, index = packet.worker, packet.index
        if type(worker) is not int or not 0 <= worker < self.code.n_workers:
            worker = self.code.worker_index(worker)
        if type(index) is not int or index < 0:
            index = checks.integer(index, "packet index", low=0)
        coeffs = self._in_field(packet.coeffs, (self.pieces,), "packet coeffs")
        payload = packet.payload
        if not (isinstance(payload, np.ndarray) and payload.dtype is self.F.dtype):
            if not isinstance(payload, np.ndarray):
                raise InvalidParameterError(f"Packet payload must be a numpy array, not "
                                            f"{type(payload).__name__}.")
            if payload.dtype.kind not in "iu":
                raise InvalidParameterError("Packet payload must be an array of integers, not "
                                            f"dtype {payload.dtype}.")
        shape, rows = self._piece_shape, packet.rows
        if payload.shape != shape or rows is not None and (type(rows) is not int or
                                                          rows != self._rows):
            shape = self._check_shape(payload.shape, rows)
        return worker, index, coeffs, shape

    def checked_payload(self, packet: Packet, shape: tuple[int, ...]) -> np.ndarray:
        """The packet's payload as a C-contiguous array of the field, elements checked."""
        return self._in_field(packet.payload, shape, "packet payload")

    @property
    def result_shape(self) -> Optional[tuple[int, ...]]:
        """One local result's shape, as given, else once the code or the first innovative
        packet tells it (None before)."""
        if self._result_shape is not None:
            return self._result_shape
        if self._piece_shape is None:
            return None
        return self.code.result_shape(self.encoding, (self._rows,) + self._piece_shape[1:])

    @property
    def buffer(self) -> Optional[np.ndarray]:
        """The flat storage of the staged payload rows (defer=True; None before the first
        innovative packet), free for a next decoder once this one's result is read (None
        then if the output lies in it: the output is the caller's)."""
        return self._buffer

    @property
    def pending(self) -> int:
        """Innovative packets whose payloads still wait for elimination (defer=True)."""
        return len(self._pending)

    def eliminate(self, count: Int = 1) -> int:
        """Reduce up to ``count`` pending payloads, oldest first; returns how many."""
        count = checks.integer(count, "count")
        done = 0
        while self._pending and done < count:
            self._basis.replay(*self._pending.popleft())   # in the row it was staged in
            done += 1
        return done

    def _in_field(self, x: ArrayLike, shape: tuple, name: str) -> np.ndarray:
        """x as a C-contiguous array of the field's dtype and the given shape; a packet off
        the wire usually is one already, and then the range check is left to the kernel."""
        if not (isinstance(x, np.ndarray) and x.dtype is self.F.dtype and
                x.flags.c_contiguous):
            x = np.ascontiguousarray(self.F.elements(x, name))
        if x.shape != shape:
            why = " (one coefficient per piece)" if name == "packet coeffs" else ""
            raise InvalidParameterError(f"{name.capitalize()} must have shape {shape}, not "
                                        f"{x.shape}{why}.")
        return x

    def _check_shape(self, shape: tuple, rows: Optional[Int]) -> tuple:
        """The expected piece shape, checked against a payload's and against the rows of
        the local result its packet claims (None: no claim)."""
        if len(shape) < 1:
            raise InvalidParameterError("Packet payload must have at least one dimension (rows).")
        rows = self._claimed_rows(rows, shape)
        expected = self._piece_shape
        if expected is None:
            full = (self._result_shape or
                    self.code.result_shape(self.encoding, (rows,) + tuple(shape[1:])))
            expected = (-(-full[0] // self.pieces),) + tuple(full[1:])
        if shape != expected:
            raise InvalidParameterError(f"Packet payload has shape {tuple(shape)}, expected "
                                        f"{expected} (one of {self.pieces} row pieces of a local "
                                        f"result of {rows} rows).")
        return expected

    def _claimed_rows(self, rows: Optional[Int], shape: tuple) -> int:
        """The rows of a packet's local result: its claim (checked against what is known)
        or, when it makes none, what is known, else what its piece's rows imply (all of
        them when m = 1)."""
        known = self._rows
        if rows is None:
            if known is not None:
                return known
            m, piece = self.pieces, shape[0]
            if m > 1 and piece > 0:
                raise InvalidParameterError(
                    f"{type(self.code).__name__} cannot tell the rows of a local result and "
                    f"the packet does not say (Packet.rows): a piece of {piece} rows comes "
                    f"from a result of {m * (piece - 1) + 1} to {m * piece} rows. Send "
                    f"packets that carry rows (piece_packets does), or pass result_shape.")
            return piece
        rows = checks.integer(rows, "packet rows", low=0)
        if known is not None and rows != known:
            raise InvalidParameterError(f"Packet claims a local result of {rows} rows, expected "
                                        f"{known}.")
        return rows

    def result(self) -> Output:
        """The decoded output, exactly what code.decode returns (ValueError before the rank
        reaches m·R)."""
        if not self.complete:
            raise ValueError(f"Not decodable yet: rank {self.rank}/{self.needed} "
                             f"({self.needed - self.rank} more independent packets needed).")
        if self._output is None:
            self.eliminate(len(self._pending))
            self._output = self._read_output()
        return self._output

    def _read_output(self) -> Output:
        m, R = self.pieces, self.code.recovery_threshold
        # Basis row j is the unit vector of unknown pivots[j] = l * R + d: payload row j is
        # the block H_d of piece l. Gathered in the order (d, l), the m pieces of each H_d
        # are adjacent and form its rows.
        payloads, shape, rows = self._basis.payloads, self._piece_shape, self._rows
        assert payloads is not None and shape is not None and rows is not None, \
            "complete: the first innovative packet fixed the shapes"
        row_of = np.empty(self.needed, np.intp)
        row_of[self._basis.pivots] = np.arange(self.needed)
        order = row_of.reshape(m, R).T              # (R, m): payload row of H_d's piece l
        picked = self.code.output_selection
        if picked is not None:                      # read only the output's coefficients
            H = payloads[order[picked].reshape(-1)]
            return output_of(self.encoding, H.reshape(len(picked), m, -1), shape, rows,
                             selected=True)
        H = in_order(payloads, order.reshape(-1))
        output = output_of(self.encoding, H.reshape(R, m, -1), shape, rows)
        if self._buffer is not None and _shares(output, self._buffer):
            self._buffer = None             # the output lives there: it is the caller's now
        return output


def in_order(rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """rows[order] for a permutation ``order`` of the rows: a copy when small, else the
    rows themselves put in that order in place (one row's copy aside), which spares large
    payloads a second copy into fresh memory.

    >>> rows = np.arange(6).reshape(3, 2)
    >>> in_order(rows, np.array([2, 0, 1])).tolist()
    [[4, 5], [0, 1], [2, 3]]
    """
    if rows.nbytes < IN_PLACE_BYTES:
        return rows[order]
    placed = np.zeros(len(order), bool)
    for start in range(len(order)):
        if placed[start] or order[start] == start:
            continue
        held, at = rows[start].copy(), start        # walk the cycle through start
        while order[at] != start:
            rows[at] = rows[order[at]]
            placed[at], at = True, order[at]
        rows[at], placed[at] = held, True
    return rows


def _shares(output: Output, buffer: np.ndarray) -> bool:
    """Whether the output (an array, or a list of them) may lie in buffer's memory."""
    arrays = output if isinstance(output, (list, tuple)) else [output]
    return any(isinstance(a, np.ndarray) and np.may_share_memory(a, buffer) for a in arrays)


def output_of(encoding: Encoding, H: np.ndarray, piece_shape: tuple, rows: int,
              selected: bool = False) -> Output:
    """The output from the coefficient blocks of h in pieces: H[d, l] is piece l (flat, of
    piece_shape) of H_d (of the output's own coefficients only, if ``selected``); a local
    result has ``rows`` rows."""
    code = encoding.code
    R, m = H.shape[:2]
    blocks = H if selected else code.output_blocks(H.reshape(R, -1))
    blocks = blocks.reshape((blocks.shape[0], m * piece_shape[0]) + tuple(piece_shape[1:]))
    return code.assemble(encoding, blocks[:, :rows])
