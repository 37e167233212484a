"""Workers as Ray actors: Ray places, starts, restarts and holds them; ZeroMQ carries the
packets.

One actor per worker slot, each in its own bundle of a placement group that spreads them
over the Ray cluster's nodes (one CPU each). Every actor makes a fresh CURVE key pair when
it starts and hands the master only its public key, through Ray: no secret key crosses the
network or touches a disk, the master's own included. The master admits exactly the keys
of its current actors and takes a worker's slot from the key it authenticated with, never
from what the worker says. Actors on the master's own node may connect to a private ipc
socket instead (no network, no encryption to pay for, as local workers do); each proves
itself there with a one-time token the master handed it through Ray. An actor that dies
(its process or its node) shows at once in the result of its serve call; a lost actor is
killed with ``ray.kill`` and a fresh one takes its slot before the next job.

Which HELLOs an actor's slot takes (no Ray needed): over ipc only the actor's token, over
CURVE only its own key, and nothing before it was told to serve:

>>> near = Actor(0, None, serving=object(), endpoint="ipc://x", token="ab" * 16)
>>> admits(near, {"token": "ab" * 16}, None), admits(near, {"token": "ba" * 16}, None)
(True, False)
>>> key = zmq.curve_keypair()[0]
>>> far = Actor(1, None, serving=object(), public=key)
>>> admits(far, {}, key.decode()), admits(far, {}, zmq.curve_keypair()[0].decode())
(True, False)
>>> admits(Actor(2, None, public=key), {}, key.decode())
False
"""
from __future__ import annotations

import hmac
import importlib
import logging
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import zmq

from ffcode.errors import ClusterError, InvalidParameterError, NoMaster
from ffcode.runtime.master.pool import ENTRY

INSTALL = "pip install 'ffcode[ray]'"


def require():
    """The ray module, or an ImportError that says what to install."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"ffcode's Ray engine needs Ray: {INSTALL}") from None
    return ray


class RayWorker:
    """One ffcode worker loop inside a Ray actor (see ffcode.runtime.worker.process)."""

    def __init__(self):
        self.public, self.secret = zmq.curve_keypair()

    def public_key(self) -> bytes:
        return self.public

    def serve(self, endpoint, slot, server_public, timeout, level, token=None,
              group=0) -> int:
        """Serve the master until it says SHUTDOWN (0), goes away or refuses us (1), or
        does not answer within timeout seconds (2). server_public: the master's key for
        CURVE (None: plaintext, over ipc or when insecure). group: serve as a relay of
        that many local worker processes on this node (runtime/worker/relay.py)."""
        entry = importlib.import_module(ENTRY)
        entry.process.log_to_stderr(level)
        sys.setswitchinterval(5e-4)     # the serving thread answers a stop at once
        entry.process.renice(to=0)      # Ray runs workers at nice 15: answer at the usual
                                        # priority where allowed (zmq's threads inherit it)
        curve = None if server_public is None else (self.public, self.secret, server_public)
        make = entry.maker(group)
        process = make(endpoint, slot, curve, connect_timeout=timeout, token=token)
        try:
            return process.serve()
        except NoMaster as e:
            logging.getLogger("ffcode").error("%s", e)
            return 2
        finally:
            process.close()


@dataclass(eq=False)
class Actor:
    """One slot's actor: its handle, its key (None when insecure) and serve call."""
    slot: int
    handle: Any
    key: Any = None                 # the public_key() call, until the actor has started
    public: bytes | None = None     # z85, as zmq makes keys
    serving: Any = None             # the serve() call, once the key is admitted
    endpoint: str | None = None     # where it was told to connect
    token: str | None = None        # its one-time proof over ipc
    node: str | None = None         # the Ray node ID of its bundle
    ended: str | None = None        # why it ended, once it did


def admits(actor, meta, user_id) -> bool:
    """Whether a HELLO (its meta, and the CURVE key it authenticated with, z85, or None)
    comes from this actor: over ipc, it shows the actor's token; over CURVE, the key is
    the actor's own; only an insecure cluster takes the actor's word."""
    if actor.serving is None:
        return False
    if actor.token is not None:
        token = meta.get("token")
        return user_id is None and isinstance(token, str) and hmac.compare_digest(
            token, actor.token)
    return actor.public is None or user_id == actor.public.decode()


class RayPool:
    """The actors of one Cluster. ``address`` is a Ray cluster's ("HOST:PORT", "auto" for
    the one 'ray start' began on this host), or None: the Ray instance this process is
    connected to, else $RAY_ADDRESS, else a new local one with a CPU per worker (at least
    the machine's count). ``groups``: the relays' group sizes, a relay per slot (None: a
    relay on each live node, ``groups`` then says their sizes)."""

    def __init__(self, address, n_workers, timeout, groups=()):
        self.ray = ray = require()
        self.groups = tuple(groups or ())   # relays': each slot's group, on its node
        self.timeout = timeout
        self.owns_ray = not ray.is_initialized()
        if not self.owns_ray and address is not None:
            raise InvalidParameterError("Ray is already initialised in this process: leave "
                                        "out address= (the cluster uses that connection).")
        if self.owns_ray:
            _start(ray, address, n_workers, timeout)
        from ray.util.placement_group import placement_group

        self.actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            RayWorker)
        try:
            if groups is None:          # a relay per node, each bundle on its own node
                self.groups = node_groups(n_workers, [
                    node["Resources"].get("CPU", 0) for node in ray.nodes() if node["Alive"]])
            cpus = ray.cluster_resources().get("CPU", 0)
            need = sum(self.groups) or n_workers
            if cpus < need:
                raise ClusterError(f"The Ray cluster has {cpus:g} CPUs; {need} workers "
                                   f"need one each.")
            self.group = placement_group(
                [{"CPU": size} for size in self.groups] or [{"CPU": 1}] * n_workers,
                strategy="STRICT_SPREAD" if groups is None else "SPREAD")
        except BaseException:
            self._disconnect()
            raise
        self.slots = {}                 # slot -> Actor
        self.requested = set()          # slots asked for whose HELLO is still due
        self.endpoint = self.server_public = self.admitted = self.nearby = None
        self.here = ray.get_runtime_context().get_node_id()

    @property
    def host(self) -> str:
        """This node's address on the Ray cluster: where the actors reach the master."""
        return self.ray.util.get_node_ip_address()

    def serve_at(self, endpoint, server_public, admitted, nearby=None):
        """Where the actors connect, the master's public key and the gate that admits
        their keys (runtime.gate.Gate; both None when insecure), and the ipc endpoint for
        actors on this node (or None)."""
        self.endpoint, self.server_public, self.admitted = endpoint, server_public, admitted
        self.nearby = nearby

    def spawn(self, slot: int):
        """A fresh actor for this slot (its earlier one killed)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if slot in self.slots:
            self.kill(self.slots[slot])
        handle = self.actor_class.options(
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.group, placement_group_bundle_index=slot)).remote()
        actor = self.slots[slot] = Actor(slot, handle)
        actor.key = handle.public_key.remote()  # also tells when Ray has placed it
        self.requested.add(slot)

    def _serve(self, actor, nodes):
        """Let the (started) actor serve: over ipc with a fresh token when it runs on this
        node, else at the endpoint. nodes: the placement group's bundle -> node ID."""
        level = logging.getLogger("ffcode").getEffectiveLevel()
        actor.node = nodes.get(actor.slot)
        if self.nearby is not None and actor.node == self.here:
            actor.endpoint, actor.token = self.nearby, secrets.token_hex(16)
            server_public = None
        else:
            actor.endpoint, server_public = self.endpoint, self.server_public
        actor.serving = actor.handle.serve.remote(
            actor.endpoint, actor.slot, server_public, self.timeout, level, actor.token,
            self.groups[actor.slot] if self.groups else 0)

    def check(self):
        """Move the actors' start on: admit the keys they made, then let them serve.
        ClusterError when an actor ends before it connected."""
        from ray.util.placement_group import placement_group_table

        pending = {actor.key: actor for actor in self.slots.values() if actor.key is not None}
        ready = self.ray.wait(list(pending), num_returns=len(pending), timeout=0)[0] \
            if pending else []
        if ready:                       # where Ray placed them, asked once for all
            nodes = placement_group_table(self.group)["bundles_to_node_id"]
            for ref in ready:
                actor = pending[ref]
                actor.key = None
                try:
                    public = self.ray.get(ref)              # z85, as zmq made it
                except self.ray.exceptions.RayError as e:
                    raise ClusterError(f"The Ray actor of worker {actor.slot} did not start: "
                                       f"{_first_line(e)}") from None
                if self.admitted is not None:               # not when insecure
                    actor.public = public
                    self.admitted.admit_key(public.decode())
                self._serve(actor, nodes)
        for slot in self.requested:
            why = self.gone(self.slots[slot])
            if why is not None:
                raise ClusterError(f"Worker {slot} ended before it connected to "
                                   f"{self.slots[slot].endpoint}: {why}.")

    def admit(self, slot, meta, sender):
        """The actor this HELLO comes from, or None: its slot was asked for and it proved
        to be that slot's actor (``admits``, with the key its connection authenticated,
        ``sender.key``)."""
        actor = self.slots.get(slot) if slot in self.requested else None
        if actor is None or not admits(actor, meta, sender.key):
            return None
        self.requested.discard(slot)
        return actor

    @staticmethod
    def node(actor) -> str:
        return actor.node

    def gone(self, actor):
        """Why this actor will not answer (its process or node died, or its loop ended),
        or None while it runs."""
        if actor.ended is None and actor.serving is not None:
            ready, _ = self.ray.wait([actor.serving], timeout=0)
            if ready:
                try:
                    status = self.ray.get(actor.serving)
                    actor.ended = {
                        1: "the master refused it (CURVE) or went away",
                        2: f"no master answered within {self.timeout:g} s: can its node "
                           f"reach {actor.endpoint}? (pass the Cluster an endpoint= on an "
                           f"address the nodes reach)"}.get(
                        status, f"its worker loop ended (status {status})")
                except self.ray.exceptions.RayError as e:
                    actor.ended = f"Ray actor died ({_first_line(e)})"
        return actor.ended

    def kill(self, actor):
        """ray.kill works on a frozen actor too (Ray's raylet ends its process)."""
        if self.admitted is not None and actor.public is not None:
            self.admitted.forget_key(actor.public.decode())
        actor.ended = actor.ended or "killed"
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception:               # already gone with its node
            pass

    def missing(self) -> str:
        """Why workers have not connected yet, for a start-up error."""
        from ray.util.placement_group import placement_group_table

        nodes = placement_group_table(self.group)["bundles_to_node_id"]
        waiting = sorted(self.requested)
        unplaced = [slot for slot in waiting if not nodes.get(slot)]
        if unplaced:
            free = self.ray.available_resources().get("CPU", 0)
            return (f" Ray has not placed workers {unplaced}: each needs a free CPU, and the "
                    f"cluster has {free:g} free.")
        if not waiting:
            return ""
        where = sorted({nodes[slot][:12] for slot in waiting})
        return (f" Workers {waiting} run on Ray nodes {', '.join(where)} but did not "
                f"connect: can those nodes reach {self.endpoint}? (pass the Cluster an "
                f"endpoint= on an address they reach)")

    def close(self):
        """Kill every actor, release the placement group, and end a Ray instance this pool
        started."""
        try:
            for actor in self.slots.values():
                self.kill(actor)
            from ray.util.placement_group import remove_placement_group
            remove_placement_group(self.group)
        finally:
            self._disconnect()

    def _disconnect(self):
        if self.owns_ray:
            self.ray.shutdown()


def node_groups(n_workers: int, cpus: Sequence[float]) -> tuple:
    """A group per node, for nodes with these CPU counts: n_workers dealt as evenly as
    they go over the nodes with a CPU (at most one group per worker), the larger groups
    first.

    >>> node_groups(12, [4, 4, 4]), node_groups(10, [8, 2, 0, 2]), node_groups(2, [4, 4, 4])
    ((4, 4, 4), (4, 3, 3), (1, 1))
    """
    count = min(sum(1 for c in cpus if c >= 1), n_workers)
    if not count:
        raise ClusterError("The Ray cluster has no node with a CPU for a relay's group.")
    return tuple(n_workers // count + (g < n_workers % count) for g in range(count))


def _start(ray, address, n_workers, timeout):
    """ray.init, bounded: an unreachable address is refused before Ray tries it."""
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    options = {"include_dashboard": False, "logging_level": logging.WARNING}
    head = check_address(address)
    if address == "local":              # a new instance, never a 'ray start' one by chance
        options["num_cpus"] = max(n_workers, os.cpu_count() or 1)
    elif head is not None:
        try:
            socket.create_connection(head, timeout=min(timeout, 10)).close()
        except OSError as e:
            raise ClusterError(f"Cannot reach the Ray cluster at {address}: {e}.") from None
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError) as e:
        raise ClusterError(f"Cannot connect to the Ray cluster at {address}: "
                           f"{_first_line(e)}") from None


def check_address(address) -> tuple | None:
    """A Ray cluster's head to reach, (host, port), for an address "HOST:PORT" (or
    "ray://HOST:PORT"); None for "auto" (the one 'ray start' began on this host), "local"
    (a new instance) or None (decided as Ray starts).

    >>> check_address("10.0.0.1:6379"), check_address("auto")
    (('10.0.0.1', 6379), None)
    >>> check_address(":6379")     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ffcode.errors.InvalidParameterError: Argument 'address' must look like 'HOST:PORT' ...
    """
    if address is None or address in ("auto", "local"):
        return None
    if not isinstance(address, str):
        raise InvalidParameterError(f"Argument 'address' must be a string, not "
                                    f"{type(address).__name__}.")
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise InvalidParameterError(f"Argument 'address' must look like 'HOST:PORT' (a Ray "
                                    f"cluster's head) or 'auto', not {address!r}.")
    return host, int(port)


def _first_line(error) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
