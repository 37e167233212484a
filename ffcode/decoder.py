"""The rank-tracking decoder of full-speed coding (DESIGN.md §4).

A packet of worker i with piece coefficients c is one linear equation on the m·R unknown
blocks H_d^(l) (coefficient d of piece l of h): its vector is c ⊗ (1, a_i, ..., a_i^(R-1)).
The vectors accepted so far are kept in reduced row echelon form in Cython (RankBasis), so
whether a packet is innovative is known before its payload is read. The payloads are
eliminated along with them as they arrive: payload row j always equals the combination of
unknowns that basis row j describes, so when the rank reaches m·R every payload row *is*
an unknown block, and the output is read off them (combined only where the code's output
is a combination of coefficients, as for LCC).
"""
import numpy as np

from ffcode import _matmul, _validate
from ffcode._ext.rankbasis import RankBasis
from ffcode.codes._base import Code
from ffcode.pieces import Packet, pieces_count


class Decoder:
    """Decodes ``code`` from packets of m = ``pieces`` pieces per local result, the moment
    it holds m·R independent ones, whoever sent them.

    ``add(packet)`` returns True when the packet was innovative; ``rank``, ``needed`` and
    ``complete`` track progress; ``result()`` returns exactly what ``code.decode`` would.
    A packet's worker, index, coefficients and payload shape are always checked; its
    payload is read (and its elements checked) only when the packet is innovative. A
    malformed packet raises ValueError or TypeError and leaves the decoder unchanged.

    Encode before constructing the decoder: the shapes come from the code. ``result_shape``
    (one local result's shape) is needed only when the code cannot tell, as for LCC with
    an f that is not row-linear.
    """

    def __init__(self, code, pieces, result_shape=None):
        if not isinstance(code, Code):
            raise TypeError(f"Argument 'code' must be an ffcode code, not "
                            f"{type(code).__name__}.")
        self.code, self.F = code, code.F
        self.pieces = pieces_count(pieces)
        R = code.recovery_threshold
        self.needed = self.pieces * R
        if result_shape is not None:
            result_shape = tuple(_validate.integer(s, "result_shape") for s in result_shape)
            if not result_shape or min(result_shape) < 0:
                raise ValueError(f"Argument 'result_shape' must be a non-empty shape, "
                                 f"not {result_shape}.")
            self._rows = result_shape[0]
        else:
            self._rows = code._result_rows()
            if self._rows is None:
                raise ValueError(f"{type(code).__name__} cannot tell the shape of a local "
                                 f"result: pass result_shape (one worker's f(share).shape).")
        self._result_shape = result_shape
        self._piece_shape = None        # fixed by the first packet
        self._payloads = None           # row j: the unknowns' combination of basis row j
        self._basis = RankBasis(code.F.vandermonde(code.points, R).astype(np.uint64),
                                self.pieces, code.F.p)
        self._seen = set()
        self._output = None
        self.received = 0

    def __repr__(self):
        return (f"Decoder({self.code!r}, pieces={self.pieces}, rank={self.rank}/"
                f"{self.needed})")

    @property
    def rank(self) -> int:
        return self._basis.rank

    @property
    def complete(self) -> bool:
        return self._basis.rank == self.needed

    def add(self, packet) -> bool:
        """Take one packet; True if it was innovative (it raised the rank)."""
        if not isinstance(packet, Packet):
            raise TypeError(f"Argument 'packet' must be an ffcode.Packet, not "
                            f"{type(packet).__name__}.")
        worker = self.code._worker_index(packet.worker)
        index = _validate.integer(packet.index, "packet index")
        if index < 0:
            raise ValueError(f"Packet index must be non-negative, not {index}.")
        coeffs = self.F.elements(packet.coeffs, "packet coeffs")
        if coeffs.shape != (self.pieces,):
            raise ValueError(f"Packet coeffs must be a vector of {self.pieces} elements (one "
                             f"per piece), not of shape {coeffs.shape}.")
        payload = packet.payload
        if not isinstance(payload, np.ndarray):
            raise TypeError(f"Packet payload must be a numpy array, not "
                            f"{type(payload).__name__}.")
        _validate.integer_array(payload, "packet payload")
        shape = self._check_shape(payload.shape)
        self.received += 1
        key = (worker, index)
        if key in self._seen or self.complete:
            return False
        if self._basis.probe(coeffs.astype(np.uint64), worker) < 0:
            self._seen.add(key)
            return False
        payload = self.F.elements(payload, "packet payload")   # innovative: now read it
        if self._payloads is None:
            self._piece_shape = shape
            self._payloads = np.empty((self.needed, int(np.prod(shape))), self.F.dtype)
        self._eliminate(payload.reshape(-1))
        self._basis.commit()
        self._seen.add(key)
        return True

    def _check_shape(self, shape: tuple) -> tuple:
        """The expected piece shape, checked against a payload's."""
        if self._piece_shape is not None:
            expected = self._piece_shape
        else:
            if len(shape) < 1:
                raise ValueError("Packet payload must have at least one dimension (rows).")
            full = (self._result_shape or
                    self.code._result_shape((self._rows,) + tuple(shape[1:])))
            expected = (-(-full[0] // self.pieces),) + tuple(full[1:])
        if tuple(shape) != expected:
            raise ValueError(f"Packet payload has shape {tuple(shape)}, expected {expected} "
                             f"(one of {self.pieces} row pieces of a local result).")
        return expected

    def _eliminate(self, payload: np.ndarray) -> None:
        """Payload row r = s (payload - sum_j f_j row j); then row j -= g_j row r."""
        p, r, P = self.F.p, self._basis.rank, self._payloads
        f, s, g = self._basis.multipliers()
        new = P[r:r + 1]
        new[0] = self.F.mul(payload, np.asarray(s, self.F.dtype))
        if r:
            sf = self.F.mul(f.astype(self.F.dtype), np.asarray(s, self.F.dtype))
            _matmul.matmul_into(p, sf[None, :], P[:r], new, accumulate=True, negate=True)
            _matmul.matmul_into(p, g.astype(self.F.dtype)[:, None], new, P[:r],
                                accumulate=True, negate=True)

    def result(self):
        """The decoded output, exactly what code.decode returns (ValueError before the rank
        reaches m·R)."""
        if not self.complete:
            raise ValueError(f"Not decodable yet: rank {self.rank}/{self.needed} "
                             f"({self.needed - self.rank} more independent packets needed).")
        if self._output is None:
            self._output = self._read_output()
        return self._output

    def _read_output(self):
        m, R = self.pieces, self.code.recovery_threshold
        size = self._payloads.shape[1]
        # Basis row j is the unit vector of unknown pivots[j] = l * R + d: its payload row
        # is the block H_d of piece l.
        unknowns = np.empty_like(self._payloads)
        unknowns[self._basis.pivots] = self._payloads
        unknowns = unknowns.reshape(m, R, size)
        C = self.code._output_matrix()
        if C is not None:
            unknowns = np.stack([_matmul.combine(self.F.p, C, list(unknowns[l]), self.F.dtype)
                                 for l in range(m)])
        outputs = unknowns.shape[1]
        piece_rows, rest = self._piece_shape[0], self._piece_shape[1:]
        blocks = unknowns.reshape((m, outputs, piece_rows) + rest).swapaxes(0, 1)
        blocks = blocks.reshape((outputs, m * piece_rows) + rest)[:, :self._rows]
        return self.code._assemble(np.ascontiguousarray(blocks))
