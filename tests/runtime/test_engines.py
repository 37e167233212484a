"""Engines as objects: a name and an object give the same engine and the same cluster; bad
engines and settings that do not go together are refused before anything starts; the
registry refuses bad entries; an engine defined here (a local engine that records what it
spawns), registered by name, runs real jobs on local workers, a killed worker replaced
through it; and the Ray engine as an object, with its settings on it."""
import os
import signal
import tempfile
import threading
import time

import numpy as np
import pytest

import ffcode
from ffcode import MDS
from ffcode.runtime import (Cluster, Engine, LocalEngine, RayEngine, RemoteWorkers,
                            engine_names, register_engine, unregister_engine)
from ffcode.runtime.master import engines

from helpers import descendants, local_ray, reap
from test_remote import LOOPBACK, start_workers

F = ffcode.GF(65521)
A, X = F.random((12, 5), seed=1), F.random(5, seed=2)


def job(cluster):
    """An exact MDS job on two of the cluster's workers (any R = 2 of them)."""
    output, report = cluster.run(MDS(F, 2, cluster.n_workers), A, X, seed=1, timeout=30)
    assert np.array_equal(output, F.matmul(A, X))
    return report


class Recording(LocalEngine):
    """A local engine of this test's own: it records every slot it is asked to spawn."""

    name = "recording"

    def __init__(self):
        self.spawned = []

    def spawn(self, slot):
        self.spawned.append(slot)
        super().spawn(slot)


@pytest.fixture
def recording():
    register_engine("recording", Recording)
    yield
    unregister_engine("recording")


# -- names and objects ---------------------------------------------------------------------


@pytest.mark.parametrize("name, settings, made", [
    ("local", {}, LocalEngine()),
    ("local", {"insecure": True}, LocalEngine()),
    ("ray", {}, RayEngine()),
    ("ray", {"address": "10.0.0.1:6379", "insecure": True},
     RayEngine("10.0.0.1:6379", insecure=True)),
    ("ray", {"endpoint": "tcp://127.0.0.1:*"}, RayEngine(endpoint="tcp://127.0.0.1:*")),
    ("local", {"endpoint": LOOPBACK, "insecure": True}, RemoteWorkers(LOOPBACK, insecure=True)),
    ("remote", {"endpoint": LOOPBACK, "key": "k", "clients": "c"},
     RemoteWorkers(LOOPBACK, key="k", clients="c")),
])
def test_a_name_makes_the_engine_its_object_is(name, settings, made):
    engine = engines.choose(name, **settings)
    assert type(engine) is type(made) and repr(engine) == repr(made)
    assert engine == made.name and engine.name == made.name


def test_what_an_engine_tells_the_cluster():
    remote = RemoteWorkers(LOOPBACK, insecure=True)
    assert [e.starts_workers for e in (LocalEngine(), RayEngine(), remote)] == \
        [True, True, False]
    assert [e.local for e in (LocalEngine(), RayEngine(), remote)] == [True, False, False]
    assert [e.max_workers for e in (LocalEngine(), RayEngine(), remote)] == \
        [1024, 1024, 1 << 16]
    assert LocalEngine() == "local" and RayEngine() == "ray" and RayEngine() != "local"
    assert hash(RayEngine()) == hash("ray") and len({RayEngine(), RayEngine()}) == 2
    assert engine_names()[:3] == ("local", "ray", "remote")
    assert LocalEngine().group_sizes(3, 12) == (4, 4, 4)
    assert RayEngine().group_sizes("nodes", 6) is None
    assert LocalEngine().group_sizes(None, 6) == ()


@pytest.mark.bounded(60)
def test_a_name_and_an_object_give_the_same_cluster(bounded):
    seen = []
    for options in ({}, {"engine": "local"}, {"engine": LocalEngine()}):
        with Cluster(2, **options) as cluster:
            report = job(cluster)
            seen.append((type(cluster.engine), cluster.engine.name, cluster.local,
                         cluster.members, cluster.groups, len(report.workers)))
            assert cluster.engine.running
        assert not cluster.engine.running
    assert seen == [(LocalEngine, "local", True, 2, (), 2)] * 3


@pytest.mark.bounded(90)
def test_hand_started_workers_by_name_and_by_object(bounded, tmp_path):
    """Cluster(2, endpoint, insecure=True), as before engines were objects, and
    Cluster(2, engine=RemoteWorkers(endpoint, insecure=True)): the same cluster, which
    starts no worker and admits the two started by hand."""
    seen = []
    for options in ({"endpoint": LOOPBACK, "insecure": True},
                    {"engine": RemoteWorkers(LOOPBACK, insecure=True)}):
        procs = []
        try:
            with Cluster(2, start_timeout=30, **options) as cluster:
                procs = start_workers(cluster.endpoint, 2, tmp_path)
                assert all(h.engine is None and h.slot is None for h in cluster.wait())
                job(cluster)
                seen.append((type(cluster.engine), cluster.engine.name, cluster.local,
                             cluster.public_key))
            assert [proc.wait(10) for proc in procs] == [0, 0]
        finally:
            reap(procs)
    assert seen == [(RemoteWorkers, "remote", False, None)] * 2


# -- refused before anything starts --------------------------------------------------------


def started():
    """What a cluster leaves once started: processes, threads, private directories."""
    mine = f"ffcode-{os.getpid()}-"
    return (descendants(), threading.active_count(),
            {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(mine)})


@pytest.mark.parametrize("options, error, match", [
    ({"engine": 5}, TypeError, r"'engine' must be an engine's name \('local', 'ray'"),
    ({"engine": LocalEngine}, TypeError, "not type"),
    ({"engine": "mpi"}, ValueError, "'engine' must be one of"),
    ({"address": "127.0.0.1:6379"}, ValueError,
     "'address' is not a setting of engine 'local': it needs engine='ray'"),
    ({"engine": "remote", "address": "127.0.0.1:6379"}, ValueError, "needs engine='ray'"),
    ({"engine": "remote"}, ValueError, "Engine 'remote' needs argument 'endpoint'"),
    ({"endpoint": LOOPBACK, "key": "k"}, ValueError, "'key' and 'clients' go together"),
    ({"engine": "remote", "endpoint": LOOPBACK, "clients": "c"}, ValueError, "go together"),
    ({"key": "k", "clients": "c"}, ValueError, "CURVE keys are for a tcp endpoint"),
    ({"engine": "ray", "key": "k", "clients": "c"}, ValueError, "fresh CURVE keys"),
    ({"engine": "ray", "endpoint": "ipc:///tmp/x"}, ValueError, "over tcp"),
    ({"engine": "ray", "address": "nowhere"}, ValueError, "'address' must look like"),
    ({"endpoint": LOOPBACK}, ValueError, "could join as a worker"),
    ({"engine": LocalEngine(), "endpoint": LOOPBACK}, ValueError,
     "'endpoint' is a setting of the engine.*LocalEngine\\(\\): pass endpoint= to it"),
    ({"engine": RayEngine(), "address": "127.0.0.1:6379"}, ValueError, "pass address= to it"),
    ({"groups": "nodes"}, ValueError, "groups='nodes' puts a relay on each Ray node: it "
                                      "needs engine='ray'"),
    ({"engine": RemoteWorkers(LOOPBACK, insecure=True), "groups": "nodes"}, ValueError,
     "needs engine='ray'"),
    ({"engine": LocalEngine(), "n_workers": 1025}, ValueError, "from 1 to 1024"),
    ({"engine": RemoteWorkers(LOOPBACK, insecure=True), "n_workers": 1025}, None, None),
])
def test_bad_engines_are_refused_before_anything_starts(bounded, options, error, match):
    before = started()
    if error is None:               # RemoteWorkers waits for up to 65536: it starts
        Cluster(**options).close()
        return
    with pytest.raises(error, match=match):
        Cluster(**options)
    assert started() == before


@pytest.mark.parametrize("make, error, match", [
    (lambda: RayEngine(address=":6379"), ValueError, "'address' must look like 'HOST:PORT'"),
    (lambda: RayEngine(address=6379), TypeError, "'address' must be None or a string"),
    (lambda: RayEngine(insecure="yes"), TypeError, "insecure"),
    (lambda: RayEngine(endpoint="tcp://nowhere"), ValueError, "'endpoint' must look like"),
    (lambda: RemoteWorkers("tcp://127.0.0.1:*"), ValueError, "could join as a worker"),
    (lambda: RemoteWorkers(None), TypeError, "'endpoint' must be a string, not NoneType"),
    (lambda: RemoteWorkers(LOOPBACK, key="k"), ValueError, "go together"),
    (lambda: RemoteWorkers(LOOPBACK, key=5, clients="c"), TypeError,
     "'key' must be None or a path"),
    (lambda: RemoteWorkers(LOOPBACK, insecure=1), TypeError, "insecure"),
])
def test_an_engine_checks_its_settings(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_the_registry_refuses_bad_entries(recording):
    for args, error, match in [
        (("", Recording), ValueError, "must be a word"),
        ((5, Recording), TypeError, "'name'"),
        (("other", 5), TypeError, "'factory'"),
        (("recording", Recording), ValueError, "engine named 'recording' already"),
        (("local", LocalEngine), ValueError, "engine named 'local' already"),
    ]:
        with pytest.raises(error, match=match):
            register_engine(*args)
    with pytest.raises(ValueError, match="built-in engine 'ray' cannot be unregistered"):
        unregister_engine("ray")
    with pytest.raises(ValueError, match="No engine is registered as 'mpi'"):
        unregister_engine("mpi")
    assert engine_names() == ("local", "ray", "remote", "recording")


def test_a_registered_engine_is_checked_too(bounded, recording):
    before = started()
    with pytest.raises(ValueError, match="'address' is not a setting of engine 'recording': "
                                         "it needs engine='ray'"):
        Cluster(2, engine="recording", address="127.0.0.1:6379")
    with pytest.raises(ValueError, match="'endpoint' is not a setting of engine 'recording': "
                                         "it needs engine='local' or 'ray' or 'remote'"):
        Cluster(2, LOOPBACK, engine="recording")
    register_engine("bogus", lambda: object())
    try:
        with pytest.raises(TypeError, match="engine 'bogus' made a object, not an Engine"):
            Cluster(2, engine="bogus")
    finally:
        unregister_engine("bogus")
    with pytest.raises(NotImplementedError, match="Engine does not say how it starts"):
        Cluster(2, engine=Engine())
    assert started() == before


# -- an engine of one's own ----------------------------------------------------------------


@pytest.mark.bounded(90)
def test_an_engine_registered_outside_runs_jobs(bounded, recording):
    """The test's engine, by name: local workers it spawns run an exact job; a worker
    killed is replaced through it; while its cluster is open no other
    cluster may take it, and once closed it serves another."""
    with Cluster(3, engine="recording", start_timeout=30) as cluster:
        engine = cluster.engine
        assert type(engine) is Recording and engine == "recording" and cluster.local
        job(cluster)
        assert sorted(engine.spawned) == [0, 1, 2]
        killed = cluster.live()[1].pid
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while len(engine.spawned) < 4 and time.monotonic() < deadline:
            cluster.wait(timeout=20)        # the lost worker replaced first
            time.sleep(0.05)
        assert engine.spawned[3:] == [1]
        assert job(cluster).workers[1].pid not in (killed, 0)
        with pytest.raises(ValueError, match="serves one cluster at a time"):
            Cluster(1, engine=engine)
    assert not engine.running
    with Cluster(2, engine=engine, start_timeout=30) as again:
        job(again)
        assert again.engine is engine and sorted(engine.spawned[4:]) == [0, 1]


# -- Ray -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_session():
    """Ray on 127.0.0.1 (conftest: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), 3 CPUs."""
    pytest.importorskip("ray")
    with local_ray(3) as session:
        yield session


@pytest.mark.bounded(120)
def test_ray_engine_as_an_object(bounded, ray_session):
    """RayEngine(endpoint=..., insecure=True) carries its settings: its actors all connect
    over that tcp endpoint, in plaintext; by name the same engine is made."""
    engine = RayEngine(endpoint="tcp://127.0.0.1:*", insecure=True)
    with Cluster(2, engine=engine, start_timeout=60) as cluster:
        assert cluster.engine is engine and cluster.engine == "ray" and not cluster.local
        assert cluster.public_key is None
        assert all(h.member.endpoint.startswith("tcp://127.0.0.1:") for h in cluster.wait())
        report = job(cluster)
        assert all(w.node for w in report.workers)
    assert not engine.running
    named = engines.choose("ray", endpoint="tcp://127.0.0.1:*", insecure=True)
    assert repr(named) == repr(engine)
