"""The order in which workers process their partitions, and what it costs at worst.

At full speed the sum follows once every partition is done by some worker. Workers run at
any speeds, so the cluster may do many partitions before the last one is covered:
``worst_case_processed`` counts the partitions the whole cluster must have done to be sure
(one more than the most it can do with a partition still missing). A partition missed as
late as possible has every worker not holding it done with everything, and every holder
stopped just before it, so the count is

    1 + max over partitions j of ( sum of the loads of the workers without j
                                   + sum over j's holders of j's place in their order ).

The loads are fixed by the assignment; the order only moves the second term. When every
worker holds d partitions and every partition is on d workers, the places of one
partition sum to at least 0 + 1 + ... + (d - 1) on average, and ``best_orders`` reaches
that for every partition at once: the assignment splits into d perfect matchings of
workers to partitions (Koenig), and matching u puts its partitions at place u.

>>> worst_case_processed([(0, 1), (1, 2), (2, 0)])
4
>>> worst_case_processed([(1, 0), (1, 2), (2, 0)])      # partition 0 last on both holders
5
>>> best_orders([(1, 0), (1, 2), (2, 0)])      # each partition at places 0 and 1
((0, 1), (1, 2), (2, 0))
"""
from __future__ import annotations

from typing import Sequence

from ffcode.errors import InvalidParameterError


def checked_assignment(assignment: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Each worker's partitions as a tuple of distinct ints >= 0; every index below the
    largest held by some worker."""
    try:
        rows = tuple(tuple(int(j) for j in parts) for parts in assignment)
    except (TypeError, ValueError):
        raise InvalidParameterError("An assignment is a sequence (one per worker) of "
                                    "partition indices.") from None
    if not rows:
        raise InvalidParameterError("An assignment needs at least one worker.")
    for i, parts in enumerate(rows):
        if len(set(parts)) != len(parts) or any(j < 0 for j in parts):
            raise InvalidParameterError(f"Worker {i}'s partitions {parts} must be distinct "
                                        "indices >= 0.")
    held = {j for parts in rows for j in parts}
    if held != set(range(len(held))):
        missing = sorted(set(range(max(held, default=-1) + 1)) - held)
        raise InvalidParameterError(f"Partitions {missing} are on no worker.")
    return rows


def worst_case_processed(assignment: Sequence[Sequence[int]]) -> int:
    """The number of partitions the cluster must have processed (workers in the given
    orders, at any speeds) before every partition is surely done by some worker."""
    rows = checked_assignment(assignment)
    total = sum(len(parts) for parts in rows)
    worst = 0
    for j in range(len({j for parts in rows for j in parts})):
        holders = [parts for parts in rows if j in parts]
        undone = total - sum(len(parts) - parts.index(j) for parts in holders)
        worst = max(worst, undone)
    return worst + 1


def best_orders(assignment: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """Orders of each worker's partitions with the least ``worst_case_processed``, for an
    assignment where every worker holds d partitions and every partition is on d workers:
    every partition comes at each place 0, ..., d - 1 once among its holders."""
    rows = checked_assignment(assignment)
    d = len(rows[0])
    counts: dict = {}
    for parts in rows:
        for j in parts:
            counts[j] = counts.get(j, 0) + 1
    if any(len(parts) != d for parts in rows) or any(c != d for c in counts.values()):
        raise InvalidParameterError("best_orders needs every worker to hold the same number "
                                    "d of partitions and every partition to be on d workers.")
    left = [set(parts) for parts in rows]
    places: list[list] = [[None] * d for _ in rows]
    for u in range(d):              # a d-regular bipartite graph minus u matchings is
        match = _perfect_matching(left)     # (d - u)-regular: a perfect matching remains
        for worker, j in enumerate(match):
            places[worker][u] = j
            left[worker].discard(j)
    return tuple(tuple(p) for p in places)


def _perfect_matching(edges: list[set]) -> list[int]:
    """A partition for each worker, each partition once: augmenting paths found breadth
    first (Kuhn's method without recursion, so that any number of workers fits)."""
    owner: dict = {}                # partition -> its worker
    held: dict = {}                 # worker -> its partition
    for start in range(len(edges)):
        came: dict = {}             # partition -> the worker the search reached it from
        frontier, reached, free = [start], {start}, None
        while frontier and free is None:
            ahead = []
            for worker in frontier:
                for j in sorted(edges[worker]):
                    if j in came:
                        continue
                    came[j] = worker
                    if j not in owner:
                        free = j
                        break
                    if owner[j] not in reached:
                        reached.add(owner[j])
                        ahead.append(owner[j])
                if free is not None:
                    break
            frontier = ahead
        if free is None:
            raise InvalidParameterError("The assignment has no perfect matching of workers to "
                                        "partitions.")
        j = free
        while True:                 # flip the path: each worker on it takes the next one
            worker = came[j]
            before = held.get(worker)
            owner[j], held[worker] = worker, j
            if worker == start:
                break
            j = before
    return [held[worker] for worker in range(len(edges))]
