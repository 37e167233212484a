# Builders of structured GF(p) matrices used by the encoders.
from libc.stdint cimport uint64_t

from ffcode._ext.modp cimport elem_t, mulmod_shoup, shoup


def vandermonde(const elem_t[::1] points, elem_t[:, ::1] out, uint64_t p):
    """out[i, j] = points[i] ** j mod p."""
    cdef Py_ssize_t i, j, ncols = out.shape[1]
    cdef uint64_t x, xsh, v
    with nogil:
        for i in range(points.shape[0]):
            x = points[i]
            xsh = shoup(x, p)
            v = 1 % p
            for j in range(ncols):
                out[i, j] = <elem_t>v
                v = mulmod_shoup(v, x, xsh, p)
