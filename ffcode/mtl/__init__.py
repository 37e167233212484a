"""Coded multi-task learning through relays: a server, K relays and N users, each user
learning its own task's model.

In a training step each user computes its local update (its model's new parameters, in
signed fixed point: ``PrimeField.from_real``) and sends it to every relay it is connected
to (``Topology``: a bipartite graph, a user on one relay or several). The users' models are
coupled, each by a function of all the tasks' parameters, so every relay must end the step
with every user's update, to hand its users what they lack. Between the relays and the
server:

- **uncoded**, each update some relay lacks goes up once and comes down once;
- **coded** (``Coded``), a relay sends combinations of its users' updates up, and the
  server sends one broadcast of combinations that each relay decodes with the updates it
  already holds. A user on r relays is side information at all r.

Both coded loads meet information-theoretic lower bounds (``bounds``): the downlink
N - min_k #U_k updates (#U_k: relay k's users), the uplink the optimum of a linear program
of cuts, for every topology. With a user on every r-subset of K relays
(``Topology.combination``) they are N (1 - r/K) down and N (K - r)/(K - 1) up, against N
each uncoded.

The flat system (workers storing data sets redundantly, no relays) is the same exchange:
read relay k as worker k and its group as the data sets it stores.

>>> from ffcode.mtl import Topology, coded_loads, uncoded_loads, uplink_bound
>>> topology = Topology.combination(4, 2)              # 6 users, each on 2 of 4 relays
>>> coded, plain = coded_loads(topology), uncoded_loads(topology)
>>> (coded.uplink, coded.downlink), (plain.uplink, plain.downlink)
((Fraction(4, 1), Fraction(3, 1)), (Fraction(6, 1), Fraction(6, 1)))
>>> coded.uplink == uplink_bound(topology)
True
"""
from ffcode.mtl.bounds import cuts, downlink_bound, uplink_bound, uplink_solution
from ffcode.mtl.scheme import (COMMUNICATIONS, Coded, Exchanged, Loads, Uncoded, allocation,
                               coded_loads, exchange, scheme_of, uncoded_loads)
from ffcode.mtl.topology import LAYOUTS, MAX_RELAYS, Reduced, Topology, parse

__all__ = ["COMMUNICATIONS", "Coded", "Exchanged", "LAYOUTS", "Loads", "MAX_RELAYS", "Reduced",
           "Topology", "Uncoded", "allocation", "coded_loads", "cuts", "downlink_bound",
           "exchange", "parse", "scheme_of", "uncoded_loads", "uplink_bound", "uplink_solution"]
