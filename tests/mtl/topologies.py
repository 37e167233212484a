"""The small family of topologies the tests of ffcode.mtl run on: every bipartite graph of 1
to 4 relays and 1 to 6 users (every user on at least one relay, every relay serving at
least one user), up to relabelling the relays and the users."""
import itertools

from ffcode.mtl import Topology


def family(relays, users):
    """Every topology of ``relays`` and ``users`` up to relabelling: a user is a nonempty
    set of relays, a topology a multiset of users whose relays each serve one."""
    subsets = [s for r in range(1, relays + 1) for s in itertools.combinations(range(relays), r)]
    seen = set()
    for chosen in itertools.combinations_with_replacement(subsets, users):
        groups = [[u for u, s in enumerate(chosen) if k in s] for k in range(relays)]
        if any(not g for g in groups):
            continue
        key = min(tuple(sorted(tuple(sorted(p[k] for k in s)) for s in chosen))
                  for p in itertools.permutations(range(relays)))
        if key not in seen:
            seen.add(key)
            yield Topology(groups)


FAMILY = [t for K in range(1, 5) for N in range(1, 7) for t in family(K, N)]
