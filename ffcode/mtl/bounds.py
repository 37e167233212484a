"""The information-theoretic lower bounds on the loads between the relays and the server,
in units of one user's update, exactly (``fractions.Fraction``); #X is the number of
users in X.

Every relay ends a step knowing every user's update: its own users' from the user layer,
the others' from the server's downlink.

- **Downlink.** Relay k decodes the N - #U_k updates it lacks from the server's
  broadcast Y and what it holds, so H(Y) >= N - #U_k for every k:
  L_down >= N - min_k #U_k.
- **Uplink.** Take any relays S (not empty) and k in S. Relay k decodes everything from Y,
  a function of all relays' messages, and its own updates; the messages of S are
  functions of the updates of A_S (the users of S's groups). So the messages of the relays
  outside S carry the N - #A_S updates outside A_S:

      sum of L_j over j not in S  >=  N - #A_S     for every S not empty.

  The least sum of L_j under all these cuts is a linear program (``uplink_bound`` solves
  it exactly); only the cuts whose outside J = [K] \\ S is a union of users' relay sets
  bind, and they are the ones kept.

>>> from ffcode.mtl.topology import Topology
>>> t = Topology([[0, 1], [1, 2], [0, 2]])          # three relays, each user on two
>>> downlink_bound(t), uplink_bound(t)
(Fraction(1, 1), Fraction(3, 2))
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ffcode.mtl.topology import Topology


def downlink_bound(topology: Topology) -> Fraction:
    """The least downlink load: N - min_k #U_k updates."""
    return Fraction(topology.users - topology.least)


def cuts(topology: Topology) -> list[tuple[int, int]]:
    """The uplink's binding cuts as (J, b) pairs: the relays of bit mask J must send at
    least b updates, b the users whose relays all lie in J (J a proper union of users'
    relay sets; a J that is not such a union is weaker than the union of what it holds)."""
    masks, counts = np.unique(np.array(topology.masks(), dtype=np.int64), return_counts=True)
    full = (1 << topology.relays) - 1
    kept = []
    for J in range(1, full):
        inside = (masks & ~J) == 0
        if inside.any() and int(np.bitwise_or.reduce(masks[inside])) == J:
            kept.append((J, int(counts[inside].sum())))
    return kept


def uplink_solution(topology: Topology) -> tuple[Fraction, ...]:
    """A least uplink allocation L_0..L_{K-1} (updates each relay sends) meeting every
    cut, exactly: an optimal vertex of the linear program."""
    return _least_cover(topology.relays, cuts(topology))


def uplink_bound(topology: Topology) -> Fraction:
    """The least uplink load: the linear program's optimum over the cuts."""
    return sum(uplink_solution(topology), Fraction(0))


def _least_cover(n: int, rows: list[tuple[int, int]]) -> tuple[Fraction, ...]:
    """min sum(x) subject to sum(x_j for j in J) >= b for each (J, b), x >= 0, exactly.

    Through its dual, max sum(b_i y_i) subject to sum(y_i : j in J_i) <= 1 for each j,
    y >= 0, whose origin is feasible: the simplex method finds an optimal basis in
    floating point (fast), then that basis is solved in fractions and checked exactly
    (primal and dual feasible, hence optimal); were it not, the exact simplex goes on from
    it with Bland's rule, which cannot cycle."""
    if not rows:
        return tuple(Fraction(0) for _ in range(n))
    A = np.array([[(J >> j) & 1 for J, _ in rows] for j in range(n)], dtype=np.int64)
    b = np.array([value for _, value in rows], dtype=np.int64)
    basis = _float_basis(A, b)
    while True:
        columns = [_column(A, c) for c in basis]            # B's columns: the rows of B^T
        B = [list(row) for row in zip(*columns)]
        y = _solve(B, [Fraction(1)] * n)
        x = _solve(columns, [Fraction(int(b[c])) if c < len(b) else Fraction(0) for c in basis])
        # optimal when every reduced cost is >= 0: x meets every row (the y's) and x >= 0
        # (the slacks); else the first that is not enters (Bland's rule)
        entering = next((i for i in range(len(b))
                         if sum(x[j] for j in range(n) if A[j, i]) < b[i]), None)
        if entering is None:
            entering = next((len(b) + j for j in range(n) if x[j] < 0), None)
        if entering is None:
            return tuple(x)
        # one exact step of the dual: Bland's rule picks the row that leaves
        d = _solve(B, _column(A, entering))
        leaving = min((y[r] / d[r], basis[r], r) for r in range(n) if d[r] > 0)[2]
        basis[leaving] = entering


def _float_basis(A: np.ndarray, b: np.ndarray) -> list[int]:
    """The dual's optimal basis found in float64 (columns 0..m-1 the y's, m.. the slacks),
    by the simplex method with Dantzig's rule and Bland's after many degenerate steps."""
    n, m = A.shape
    table = np.hstack([A.astype(float), np.eye(n), np.ones((n, 1))])
    cost = np.concatenate([-b.astype(float), np.zeros(n + 1)])
    basis = list(range(m, m + n))
    for step in range(50 * (m + n)):
        candidates = np.flatnonzero(cost[:-1] < -1e-9)
        if not candidates.size:
            break
        entering = candidates[0] if step > 10 * n else candidates[np.argmin(cost[candidates])]
        column = table[:, entering]
        rows = np.flatnonzero(column > 1e-9)
        ratios = table[rows, -1] / column[rows]
        r = rows[np.lexsort(([basis[i] for i in rows], ratios))[0]]
        table[r] /= table[r, entering]
        others = np.arange(n) != r
        table[others] -= np.outer(table[others, entering], table[r])
        cost -= cost[entering] * table[r]
        basis[r] = int(entering)
    return basis


def _column(A: np.ndarray, c: int) -> list:
    """Column c of the dual's constraints [A | I] (c < m a y's, else a slack's), in
    fractions."""
    n, m = A.shape
    return [Fraction(int(A[j, c])) if c < m else Fraction(int(j == c - m)) for j in range(n)]


def _solve(M: list, v: list) -> list:
    """x with M x = v for a square invertible matrix of fractions (Gauss-Jordan)."""
    size = len(v)
    rows = [list(M[i]) + [v[i]] for i in range(size)]
    for c in range(size):
        p = next(r for r in range(c, size) if rows[r][c] != 0)
        rows[c], rows[p] = rows[p], rows[c]
        pivot = rows[c][c]
        rows[c] = [e / pivot for e in rows[c]]
        for r in range(size):
            if r != c and rows[r][c] != 0:
                f = rows[r][c]
                rows[r] = [e - f * g for e, g in zip(rows[r], rows[c])]
    return [rows[i][-1] for i in range(size)]
