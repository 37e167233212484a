"""Where workers come from. An engine starts worker processes for a cluster and answers for
them: the local fork server (runtime/pool.py) and Ray actors (runtime/ray_pool.py) behind
one protocol; hand-started workers (``ffcode worker --connect``) have no engine.

``start`` binds a cluster's transport the way its engine needs and returns the engine;
a new engine is one more class with the methods of ``Engine`` and a branch there.

The engines, and a cluster's arguments checked against one another before anything
starts:

>>> NAMES
('local', 'ray')
>>> check_settings(None, "local", "auto", None, None, False)
Traceback (most recent call last):
...
ValueError: Argument 'address' names a Ray cluster: it needs engine='ray'.
>>> check_settings(None, "ray", "auto", None, None, False)
"""
from __future__ import annotations

import logging
import os
from typing import Any, Optional, Protocol, Sequence

from ffcode import checks
from ffcode.errors import ClusterError
from ffcode.runtime.master import pool
from ffcode.runtime.shared import local
from ffcode.runtime.shared.gate import Peer
from ffcode.runtime.shared.transport import Transport, check_endpoint, reachable

NAMES = ("local", "ray")

log = logging.getLogger(__name__)


class Engine(Protocol):
    """What a cluster asks of the engine that starts its workers. A *member* is what the
    engine knows a worker by (a local pid, a Ray actor)."""

    def spawn(self, slot: int) -> None:
        """Start a worker that announces itself with this slot (replacing an earlier one)."""

    def admit(self, slot: int, meta: dict, sender: Peer) -> Any:
        """The member a HELLO comes from (its slot asked for, its connection proving it is
        that worker), or None."""

    def node(self, member: Any) -> Optional[str]:
        """The node the member runs on (None: this host)."""

    def gone(self, member: Any) -> Optional[str]:
        """Why the member will not answer (exited, frozen, died), or None."""

    def kill(self, member: Any) -> None: ...

    def check(self) -> None:
        """Raise ClusterError if the engine itself failed (while workers are awaited)."""

    def missing(self) -> str:
        """A sentence on why awaited workers may be missing (for an error message)."""

    def close(self) -> None: ...


def start(engine: str, transport: Transport, endpoint: Optional[str], *, size: int,
          address: Optional[str], timeout: float, curve: bool,
          tmpdir: Optional[str], groups: Optional[tuple] = ()) -> Optional[Engine]:
    """Start the engine (None: hand-started workers at ``endpoint``) with size workers, and
    bind the transport where they connect: a private ipc socket in tmpdir for local
    workers; for Ray, tcp (``endpoint``, default this node's Ray address) plus a plaintext
    ipc socket for the actors on this node when no endpoint is given. ``curve``: the
    transport uses CURVE. ``groups``: the relays' group sizes (runtime/relay.py), one
    relay per slot, its group local to it (None on Ray: a relay per node)."""
    if engine == "local" and endpoint is None:
        transport.gate.processes = lambda pid: False    # none is the pool's until it exists
        transport.bind(f"ipc://{tmpdir}/master")
        local = pool.LocalPool(transport.endpoint, tmpdir, groups)
        transport.gate.processes = local.owns
        return local
    if engine == "local" and endpoint is not None:
        transport.bind(endpoint)
        return None
    from ffcode.runtime.master import ray_pool
    ray = ray_pool.RayPool(address, size, timeout, groups)
    try:
        bound = transport.bind(endpoint or f"tcp://{ray.host}:*")     # its first bind
        nearby = None
        if endpoint is None:            # actors on this node may use ipc, proving a token
            nearby = transport.bind(f"ipc://{tmpdir}/master", plaintext=True)
        ray.serve_at(reachable(bound, ray.host), transport.public_key,
                     transport.gate if curve else None, nearby)
    except BaseException:
        ray.close()
        raise
    return ray


def check_settings(endpoint, engine, address, key, clients, insecure) -> None:
    """The cluster's arguments that must agree with one another, and a place where a
    cluster may start."""
    if os.environ.get(local.IN_POOL):
        raise ClusterError("A Cluster cannot start inside ffcode's worker processes: "
                           "they run your script to find the functions defined in it, "
                           "so guard the script's work with 'if __name__ == "
                           "\"__main__\":'.")
    if (key is None) != (clients is None):
        raise ValueError("Arguments 'key' and 'clients' go together (CURVE).")
    checks.choice(engine, "engine", NAMES)
    ray = engine == "ray"
    if ray and key is not None:
        raise ValueError("The Ray engine makes fresh CURVE keys for each cluster: leave "
                         "out key= and clients= (or pass insecure=True for none).")
    if address is not None and not ray:
        raise ValueError("Argument 'address' names a Ray cluster: it needs engine='ray'.")
    if endpoint is None and not ray and key is not None:
        raise ValueError("CURVE keys are for a tcp endpoint: local workers talk over a "
                         "private ipc socket, which needs none.")
    if endpoint is not None:
        check_endpoint(endpoint, secure=key is not None or insecure or ray)
        if ray and not endpoint.startswith("tcp://"):
            raise ValueError(f"Ray workers connect over tcp, not {endpoint!r}.")


def group_sizes(groups: Any, n_workers: int, engine: str = "local") -> Optional[tuple]:
    """Each group's size for ``groups`` (a count of equal groups, or each one's size) of
    n_workers workers behind relays; () for none; None for "nodes" on Ray (a relay per
    node: Ray's nodes decide, ray_pool.node_groups).

    >>> group_sizes(3, 12), group_sizes([2, 3], 5), group_sizes("nodes", 6, "ray")
    ((4, 4, 4), (2, 3), None)
    >>> group_sizes(5, 12)
    Traceback (most recent call last):
    ...
    ValueError: 12 workers do not split into 5 equal groups: give each group's size.
    """
    if groups is None:
        return ()
    if isinstance(groups, str) and groups == "nodes":
        if engine != "ray":
            raise ValueError("groups='nodes' puts a relay on each Ray node: it needs "
                             "engine='ray' (give a count or the sizes otherwise).")
        return None
    if isinstance(groups, Sequence) and not isinstance(groups, str):
        sizes = tuple(checks.integer(size, "groups", low=1) for size in groups)
        if not sizes or sum(sizes) != n_workers:
            raise ValueError(f"The groups' sizes {list(sizes)} must add up to n_workers "
                             f"({n_workers}).")
        return sizes
    count = checks.integer(groups, "groups", low=1, high=n_workers)
    if n_workers % count:
        raise ValueError(f"{n_workers} workers do not split into {count} equal groups: give "
                         f"each group's size.")
    return (n_workers // count,) * count

