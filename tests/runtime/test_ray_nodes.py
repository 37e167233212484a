"""The Ray engine beyond one Ray node, and its start-up errors: a Cluster that starts and
ends its own Ray; an unreachable or malformed address; Ray missing; a three-node Ray
cluster on this host (ray.cluster_utils) with the workers spread over the nodes, one node
removed mid-job; workers that cannot reach the master's endpoint."""
import sys
import threading
import time

import numpy as np
import pytest

import ffcode
from ffcode import MDS
from ffcode.runtime import Cluster, ClusterError, Faults
from ffcode.runtime.master import ray_pool

import ray  # noqa: E402  (the test extra installs it)


@pytest.fixture
def no_ray():
    assert not ray.is_initialized(), "another test left Ray running"


@pytest.mark.bounded(90)
def test_cluster_starts_and_ends_its_own_ray(bounded, no_ray, tmp_path, monkeypatch):
    """Without a running Ray, the cluster starts a local one with a CPU per worker (more
    workers than cores), runs on it, and shuts it down on close: no process is left (the
    bounded fixture checks)."""
    monkeypatch.chdir(tmp_path)             # see helpers.outside_source
    F = ffcode.GF(2**61 - 1)
    A, x = F.random((20, 7), seed=1), F.random(7, seed=2)
    with Cluster(5, engine="ray", start_timeout=60) as cluster:
        output, report = cluster.run(MDS(F, 3, 5), A, x, timeout=30)
        assert np.array_equal(output, F.matmul(A, x))
        assert all(w.node for w in report.workers)
    assert not ray.is_initialized()


@pytest.mark.bounded(30)
def test_unreachable_address(bounded, no_ray):
    """A Ray address where nothing listens is a ClusterError at once, not a wait."""
    start = time.monotonic()
    with pytest.raises(ClusterError, match="Cannot reach the Ray cluster at 127.0.0.1:9"):
        Cluster(2, engine="ray", address="127.0.0.1:9")
    assert time.monotonic() - start < 15


@pytest.mark.parametrize("address", ["nowhere", "host:port", ":6379"])
def test_malformed_address(no_ray, address):
    with pytest.raises(ValueError, match="'address' must look like 'HOST:PORT'"):
        Cluster(2, engine="ray", address=address)


def test_bad_engine_arguments(tmp_path):
    with pytest.raises(ValueError, match="'engine' must be one of"):
        Cluster(2, engine="mpi")
    with pytest.raises(ValueError, match="needs engine='ray'"):
        Cluster(2, address="127.0.0.1:6379")
    with pytest.raises(ValueError, match="fresh CURVE keys"):
        Cluster(2, engine="ray", key=str(tmp_path / "k"), clients=str(tmp_path))
    with pytest.raises(ValueError, match="over tcp"):
        Cluster(2, "ipc:///tmp/x", engine="ray")


def test_without_ray_installed(monkeypatch):
    """Ray missing: an ImportError that says what to install."""
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'ffcode\[ray\]'"):
        Cluster(2, engine="ray")


@pytest.fixture(scope="module")
def ray_session():
    """Three Ray nodes on 127.0.0.1 (2 CPUs each) that notice a dead node within a second;
    afterwards no process of them is left."""
    from ray.cluster_utils import Cluster as RayCluster

    from helpers import descendants, outside_source, ray_gone

    before = descendants()
    fast = {"health_check_period_ms": 200, "health_check_failure_threshold": 3,
            "health_check_initial_delay_ms": 0}
    nodes = RayCluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "include_dashboard": False, "_system_config": fast})
    try:
        workers = [nodes.add_node(num_cpus=2) for _ in range(2)]
        with outside_source():
            ray.init(address=nodes.address, logging_level="warning")
        nodes.wait_for_nodes()
        yield nodes, workers
    finally:
        ray.shutdown()
        nodes.shutdown()
        ray_gone(before)


@pytest.mark.bounded(120)
def test_relays_one_per_node_with_their_groups(bounded, ray_session):
    """groups="nodes": a relay of two workers on each live node (a bundle of 2 CPUs a
    relay, its group started on its node). A hierarchical code is exact in every scheme,
    and so is an ordinary one, forwarded; the relays' timelines name every node and show
    their groups' jobs."""
    nodes = sum(1 for node in ray.nodes() if node["Alive"])     # 3, unless one was removed
    F = ffcode.GF(2**31 - 1)
    A, x = F.random((120, 40), seed=5), F.random(40, seed=6)
    code = ffcode.HierarchicalCode(MDS(F, 2, nodes), MDS(F, 1, 2))
    flat = MDS(F, 3, 2 * nodes)
    with Cluster(2 * nodes, engine="ray", groups="nodes", start_timeout=60) as cluster:
        assert cluster.groups == (2,) * nodes
        assert len({h.node for h in cluster.wait()}) == nodes
        for scheme in ("compfs", "cfs", "classic", "systematic", "uncoded"):
            for job in (code, flat):
                output, report = cluster.run(job, A, x, scheme=scheme, timeout=60)
                assert np.array_equal(output, F.matmul(A, x)), (scheme, job)
                assert len(report.workers) == nodes and any(w.group for w in report.workers)


@pytest.mark.bounded(120)
def test_workers_spread_and_a_node_removed_mid_job(bounded, ray_session):
    """Four workers spread over the three nodes (placement group SPREAD); removing a node
    that holds some of them mid-job loses those at once (the actor handle says so) and the
    job is still exact from the rest; the next job runs on fresh actors that Ray placed on
    the remaining nodes."""
    nodes, workers = ray_session
    F = ffcode.GF(2**31 - 1)
    A, x = F.random((1200, 400), seed=3), F.random((400, 60), seed=4)
    code = MDS(F, 2, 4)
    with Cluster(4, engine="ray", start_timeout=60) as cluster:
        handles = cluster.wait()
        placed = {h.node for h in handles}
        assert len(placed) >= 2
        by_id = {node.node_id: node for node in workers}
        victim = next(by_id[h.node] for h in handles if h.node in by_id)
        doomed = [i for i, h in enumerate(handles) if h.node == victim.node_id]
        remover = threading.Timer(0.3, lambda: nodes.remove_node(victim))
        remover.start()
        output, report = cluster.run(code, A, x, pieces=6, timeout=60,
                                     faults=Faults(delay=(0.3, 0)))
        remover.join()
        assert np.array_equal(output, F.matmul(A, x))
        assert [i for i, w in enumerate(report.workers) if w.lost] == doomed
        assert all("Ray actor died" in report.workers[i].lost for i in doomed)
        output, report = cluster.run(code, A, x, timeout=60)
        assert np.array_equal(output, F.matmul(A, x))
        assert not any(w.lost for w in report.workers)
        assert victim.node_id not in {w.node for w in report.workers}


@pytest.mark.bounded(60)
def test_workers_that_cannot_reach_the_master(bounded, ray_session, monkeypatch):
    """Actors told an endpoint they cannot reach (as a node behind a firewall would be;
    every actor uses it, none the master node's ipc socket): a ClusterError within the
    start timeout that names the nodes and the endpoint."""
    serve_at = ray_pool.RayPool.serve_at
    monkeypatch.setattr(ray_pool.RayPool, "serve_at", lambda self, endpoint, *rest:
                        serve_at(self, "tcp://127.0.0.1:9", *rest))
    start = time.monotonic()
    with pytest.raises(ClusterError, match=r"reach tcp://127.0.0.1:9\?"):
        with Cluster(2, "tcp://127.0.0.1:*", engine="ray", start_timeout=4) as cluster:
            cluster.wait()
    assert time.monotonic() - start < 20
