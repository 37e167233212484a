"""Workers as Ray actors: Ray places, starts, restarts and holds them; ZeroMQ carries the
packets.

One actor per worker slot, each in its own bundle of a placement group that spreads them
over the Ray cluster's nodes (one CPU each). Every actor makes a fresh CURVE key pair when
it starts and hands the master only its public key, through Ray: no secret key crosses the
network or touches a disk, the master's own included. The master admits exactly the keys
of its current actors and takes a worker's slot from the key it authenticated with, never
from what the worker says. An actor that dies (its process or its node) shows at once in
the result of its serve call; a lost actor is killed with ``ray.kill`` and a fresh one
takes its slot before the next job.
"""
from __future__ import annotations

import logging
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any

import zmq

from ffcode.runtime.errors import ClusterError

INSTALL = "pip install 'ffcode[ray]'"


def require():
    """The ray module, or an ImportError that says what to install."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"ffcode's Ray engine needs Ray: {INSTALL}") from None
    return ray


class RayWorker:
    """One ffcode worker loop inside a Ray actor (see ffcode.runtime.worker)."""

    def __init__(self):
        self.public, self.secret = zmq.curve_keypair()

    def public_key(self) -> bytes:
        return self.public

    def serve(self, endpoint, slot, server_public, timeout, level) -> int:
        """Serve the master until it says SHUTDOWN (0), goes away or refuses us (1), or
        does not answer within timeout seconds (2)."""
        from ffcode.runtime import worker

        worker.log_to_stderr(level)
        sys.setswitchinterval(5e-4)     # the serving thread answers a stop at once
        curve = None if server_public is None else (self.public, self.secret, server_public)
        process = worker.Worker(endpoint, slot, curve, connect_timeout=timeout)
        try:
            return process.serve()
        except worker.NoMaster as e:
            logging.getLogger("ffcode").error("%s", e)
            return 2
        finally:
            process.close()


@dataclass(eq=False)
class Actor:
    """One slot's actor: its handle, its key (None when insecure) and serve call."""
    slot: int
    handle: Any
    key: Any = None                 # the public_key() call, until the key is admitted
    public: bytes = None            # z85, as zmq makes keys
    serving: Any = None             # the serve() call, once the key is admitted
    node: str = None                # the Ray node ID of its bundle, known at HELLO
    ended: str = None               # why it ended, once it did


class RayPool:
    """The actors of one Cluster. ``address`` is a Ray cluster's ("HOST:PORT", "auto"),
    or None: the Ray instance this process is connected to, or a new local one with a CPU
    per worker (at least the machine's count)."""

    def __init__(self, address, n_workers, timeout):
        self.ray = ray = require()
        self.timeout = timeout
        self.owns_ray = not ray.is_initialized()
        if not self.owns_ray and address is not None:
            raise ValueError("Ray is already initialised in this process: leave out "
                             "address= (the cluster uses that connection).")
        if self.owns_ray:
            _start(ray, address, n_workers, timeout)
        from ray.util.placement_group import placement_group

        self.actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            RayWorker)
        try:
            cpus = ray.cluster_resources().get("CPU", 0)
            if cpus < n_workers:
                raise ClusterError(f"The Ray cluster has {cpus:g} CPUs; {n_workers} workers "
                                   f"need one each.")
            self.group = placement_group([{"CPU": 1}] * n_workers, strategy="SPREAD")
        except BaseException:
            self._disconnect()
            raise
        self.slots = {}                 # slot -> Actor
        self.requested = set()          # slots asked for whose HELLO is still due
        self.endpoint = self.server_public = self.admitted = None

    @property
    def host(self) -> str:
        """This node's address on the Ray cluster: where the actors reach the master."""
        return self.ray.util.get_node_ip_address()

    def serve_at(self, endpoint, server_public, admitted):
        """Where the actors connect, the master's public key and its admitted set (both
        None when insecure)."""
        self.endpoint, self.server_public, self.admitted = endpoint, server_public, admitted

    def spawn(self, slot: int):
        """A fresh actor for this slot (its earlier one killed)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        if slot in self.slots:
            self.kill(self.slots[slot])
        handle = self.actor_class.options(
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.group, placement_group_bundle_index=slot)).remote()
        actor = self.slots[slot] = Actor(slot, handle)
        if self.admitted is None:
            self._serve(actor)
        else:
            actor.key = handle.public_key.remote()
        self.requested.add(slot)

    def _serve(self, actor):
        level = logging.getLogger("ffcode").getEffectiveLevel()
        actor.serving = actor.handle.serve.remote(self.endpoint, actor.slot,
                                                  self.server_public, self.timeout, level)

    def check(self):
        """Move the actors' start on: admit the keys they made, then let them serve.
        ClusterError when an actor ends before it connected."""
        pending = {actor.key: actor for actor in self.slots.values() if actor.key is not None}
        if pending:
            ready, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=0)
            for ref in ready:
                actor = pending[ref]
                actor.key = None
                try:
                    actor.public = self.ray.get(ref)        # z85, as zmq made it
                except self.ray.exceptions.RayError as e:
                    raise ClusterError(f"The Ray actor of worker {actor.slot} did not start: "
                                       f"{_first_line(e)}") from None
                self.admitted.add(actor.public)
                self._serve(actor)
        for slot in self.requested:
            why = self.gone(self.slots[slot])
            if why is not None:
                raise ClusterError(f"Worker {slot} ended before it connected to "
                                   f"{self.endpoint}: {why}.")

    def admit(self, slot, meta, user_id):
        """The actor this HELLO comes from, or None: its slot was asked for and, with CURVE,
        it authenticated with that slot's key."""
        actor = self.slots.get(slot) if slot in self.requested else None
        if actor is None or actor.serving is None or actor.public is not None and \
                user_id != actor.public.decode():
            return None
        self.requested.discard(slot)
        from ray.util.placement_group import placement_group_table

        actor.node = placement_group_table(self.group)["bundles_to_node_id"].get(slot)
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
                           f"reach {self.endpoint}? (pass the Cluster an endpoint= on an "
                           f"address the nodes reach)"}.get(
                        status, f"its worker loop ended (status {status})")
                except self.ray.exceptions.RayError as e:
                    actor.ended = f"Ray actor died ({_first_line(e)})"
        return actor.ended

    def kill(self, actor):
        """ray.kill works on a frozen actor too (Ray's raylet ends its process)."""
        if self.admitted is not None and actor.public is not None:
            self.admitted.discard(actor.public)
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


def _start(ray, address, n_workers, timeout):
    """ray.init, bounded: an unreachable address is refused before Ray tries it."""
    address = address or os.environ.get("RAY_ADDRESS")
    options = {"include_dashboard": False, "logging_level": logging.WARNING}
    if address is None:
        options["num_cpus"] = max(n_workers, os.cpu_count() or 1)
    elif address not in ("auto", "local"):
        host, _, port = address.removeprefix("ray://").rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"Argument 'address' must look like 'HOST:PORT' (a Ray "
                             f"cluster's head) or 'auto', not {address!r}.")
        try:
            socket.create_connection((host, int(port)), timeout=min(timeout, 10)).close()
        except OSError as e:
            raise ClusterError(f"Cannot reach the Ray cluster at {address}: {e}.") from None
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError) as e:
        raise ClusterError(f"Cannot connect to the Ray cluster at {address}: "
                           f"{_first_line(e)}") from None


def _first_line(error) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
