# Builders of the structured GF(p) matrices that encode and decode polynomial codes.
# All sizes here are numbers of workers or evaluation points (tens to thousands), so the
# loops use the plain 128-bit mulmod; the big data only ever meets these matrices in matmul.
from libc.stdint cimport uint64_t

from ffcode._ext.modp cimport addmod, elem_t, invmod, mulmod, mulmod_shoup, shoup, submod


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


def lagrange(const elem_t[::1] nodes, const elem_t[::1] targets, elem_t[:, ::1] out,
             uint64_t[::1] scratch, uint64_t p):
    """out[t, j] = l_j(targets[t]) for the Lagrange basis l_j of distinct nodes.

    l_j(x) = P(x) * w_j / (x - nodes[j]) with P(x) = prod_k (x - nodes[k]) and barycentric
    weights w_j = 1 / prod_{k != j} (nodes[j] - nodes[k]); per target the n inverses of
    x - nodes[j] cost one Euclidean inversion (Montgomery's batch trick). A target equal to
    a node gets the unit row. scratch holds 2n words.
    """
    cdef Py_ssize_t n = nodes.shape[0], t, j, k, hit
    cdef uint64_t[::1] w = scratch[:n]
    cdef uint64_t[::1] prefix = scratch[n:]
    cdef uint64_t x, acc, d, inv_all
    with nogil:
        for j in range(n):
            acc = 1 % p
            for k in range(n):
                if k != j:
                    acc = mulmod(acc, submod(nodes[j], nodes[k], p), p)
            w[j] = invmod(acc, p)
        for t in range(targets.shape[0]):
            x = targets[t]
            hit = -1
            acc = 1 % p
            for j in range(n):              # prefix[j] = prod_{k<j} (x - nodes[k])
                prefix[j] = acc
                d = submod(x, nodes[j], p)
                if d == 0:
                    hit = j
                    break
                acc = mulmod(acc, d, p)
            if hit >= 0:
                for j in range(n):
                    out[t, j] = <elem_t>(1 if j == hit else 0)
                continue
            # acc = P(x); walk back: inv_all = 1 / prod_{k<=j} (x - nodes[k]).
            inv_all = invmod(acc, p)
            for j in range(n - 1, -1, -1):
                d = submod(x, nodes[j], p)
                out[t, j] = <elem_t>mulmod(mulmod(acc, w[j], p),
                                           mulmod(inv_all, prefix[j], p), p)
                inv_all = mulmod(inv_all, d, p)


def vandermonde_inverse(const elem_t[::1] points, elem_t[:, ::1] out, uint64_t[::1] scratch,
                        uint64_t p):
    """out = V^-1 for V[i, d] = points[i] ** d with distinct points, in O(n^2).

    Column j of V^-1 holds the coefficients of the Lagrange basis polynomial
    l_j(z) = q_j(z) / q_j(points[j]) with q_j(z) = P(z) / (z - points[j]): one synthetic
    division of the master polynomial P(z) = prod_k (z - points[k]) per column.
    scratch holds 2n + 1 words.
    """
    cdef Py_ssize_t n = points.shape[0], i, j, d
    cdef uint64_t[::1] master = scratch[:n + 1]     # coefficients of P, low degree first
    cdef uint64_t[::1] quot = scratch[n + 1:]
    cdef uint64_t x, neg_x, c, value, scale
    if n == 0:
        return
    with nogil:
        master[0] = 1 % p
        for d in range(1, n + 1):
            master[d] = 0
        for i in range(n):                  # multiply by (z - points[i])
            neg_x = submod(0, points[i], p)
            for d in range(i + 1, 0, -1):
                master[d] = addmod(master[d - 1], mulmod(master[d], neg_x, p), p)
            master[0] = mulmod(master[0], neg_x, p)
        for j in range(n):
            x = points[j]
            c = master[n]                   # synthetic division by (z - x), high to low
            value = 0
            for d in range(n - 1, -1, -1):
                quot[d] = c
                value = addmod(mulmod(value, x, p), c, p)
                c = addmod(master[d], mulmod(c, x, p), p)
            scale = invmod(value, p)        # value = q_j(x) = prod_{k != j} (x - points[k])
            for d in range(n):
                out[d, j] = <elem_t>mulmod(quot[d], scale, p)
