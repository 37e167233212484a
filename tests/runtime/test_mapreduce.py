"""Coded MapReduce on the runtime (``ffcode.runtime.run_mapreduce``): TeraSort on skewed keys
sorted exactly for every K <= 6 and load r, coded and plain; the bytes each worker sent as
the shuffle's formula says (coded = plain / r when the values split evenly); compressed
sums of GF(p) vectors exact; both emulated networks paced by their rate; workers lost in
the map, after it and mid-shuffle recovered (r >= 2) or named with what is missing (r = 1,
recover=False), a retry on the replacement, no process or peer socket directory left
behind; bad input refused before anything starts or named with its file and worker; Ray
actors and hand-started tcp workers (CURVE keys on the peer links).

This module is also imported by worker processes, for the map and reduce functions below
("test_mapreduce:split_map"): keep its module-level work light.
"""
import functools
import glob
import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import ffcode
from ffcode.errors import ClusterError, JobFailed, WorkerError
from ffcode.mapreduce import terasort
from ffcode.mapreduce.shuffle import Bytes, Placement, Vectors, shuffle, uncoded_transfers
from ffcode.runtime import MapReduceReport, run_mapreduce
from ffcode.runtime.master import mapreduce

from helpers import alive, reap, shared_cluster
from test_remote import LOOPBACK, start_workers

cluster = shared_cluster(4)

# -- functions the workers import by path --------------------------------------------------


def split_map(data, k):
    """A file's K = k[0] values: its K equal consecutive parts (bytes)."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m].tobytes() for i in range(k)]


def vector_map(data, k):
    """A file's K = k[0] values as vectors of GF(p): its K equal consecutive parts."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m] for i in range(k)]


def reversed_vector(v):
    return v[::-1]


def mortal_map(data, k, plan):
    """split_map, but the worker whose pid is plan[0] exits at once (plan[1] == 0) or maps at
    full speed (plan[1] == 1) while the others take plan[2] ms more a file."""
    victim, when, slow = (int(v) for v in plan)
    if os.getpid() == victim:
        if when == 0:
            os._exit(17)
    elif slow:
        time.sleep(slow / 1000)
    return split_map(data, k)


def raising_map(data, k):
    raise KeyError("no such key in map")


def short_map(data, k):
    return split_map(data, k)[:-1]


def number_map(data, k):
    return [7] * int(k[0])


def raising_reduce(values):
    raise ArithmeticError("boom in reduce")


def object_reduce(values):
    return object()


# -- data and checks -----------------------------------------------------------------------

@functools.cache
def sort_case(K, count=2000, seed=1):
    """Skewed TeraSort records and the K ranges' bounds as the job's argument (bytes)."""
    data = terasort.records(count, seed=seed, skew=2.0)
    bounds = terasort.boundaries(data, K, seed=seed + 1).view(np.uint8).reshape(-1)
    return data, bounds


def split_files(data, placement, per_batch=1):
    """The records as per_batch files a batch (flat bytes)."""
    count = len(placement.subsets) * per_batch
    return [f.reshape(-1) for f in np.array_split(data, count)]


def formula(placement, values, algebra, coded):
    """What each worker sends, by ffcode.mapreduce.shuffle.shuffle in this process: values[n]
    are file n's K values."""
    K = placement.workers

    def held(w):
        return {(q, b): (b"".join(values[n][q] for n in placement.batch_files(b))
                         if isinstance(algebra, Bytes) else
                         algebra.add([values[n][q] for n in placement.batch_files(b)]))
                for b in placement.mapped_by(w) for q in range(K)}
    return shuffle(placement, held, algebra, coded)[1]


def sort_job(c, K, r, coded, **options):
    """TeraSort on the cluster, a file a batch: (outputs, report, records, files)."""
    data, bounds = sort_case(K)
    files = split_files(data, Placement(K, r))
    outputs, report = mapreduce.run(c, files, terasort.mapper, terasort.sort, load=r,
                                    coded=coded, args=[bounds], timeout=30, **options)
    return outputs, report, data, files


def split_files_of(K, count, m, seed):
    """count random files of K parts of m bytes each."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, K * m, dtype=np.uint8) for _ in range(count)]


def split_outputs(files, K):
    """What each function's output is with split_map and no reduce: its part of every file,
    in file order."""
    m = len(files[0]) // K
    return [b"".join(f[q * m:(q + 1) * m].tobytes() for f in files) for q in range(K)]


def peer_dirs(c) -> set:
    """The peers' ipc socket directories the workers have inside the cluster's private
    directory."""
    return set(glob.glob(os.path.join(os.path.dirname(c.endpoint[len("ipc://"):]),
                                      "peers-*")))


def bound_dirs(pid) -> set:
    """The directories of the peers' unix sockets that process pid has open (from /proc;
    none once it is gone)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[len("socket:["):-1])
    except OSError:
        return set()
    found = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[6] in inodes and \
                    os.path.basename(os.path.dirname(parts[7])).startswith("peers-"):
                found.add(os.path.dirname(parts[7]))
    return found


DEAD: set = set()      # peer directories of workers killed with a socket open: they stay


def settled(c, within=5.0) -> set:
    """The peer directories once no live worker holds a peer socket and only those of
    killed workers are left (the background drop of a finished job, or its sockets'
    linger, may still be at work)."""
    deadline = time.monotonic() + within
    while (any(bound_dirs(h.pid) for h in c.live()) or peer_dirs(c) - DEAD) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(bound_dirs(h.pid) for h in c.live()), "a live worker keeps a peer socket"
    return peer_dirs(c)


def killed(c, job, victim, ready, delay=0.0):
    """job() in a thread, the process ``victim`` killed once ready() (and ``delay`` s more):
    (what the job returned, or its ClusterError; the peer directories the victim had
    open, which stay)."""
    done = {}

    def target():
        try:
            done["result"] = job()
        except ClusterError as e:
            done["error"] = e

    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + 10
    while not ready() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    dirs = bound_dirs(victim)
    os.kill(victim, signal.SIGKILL)
    DEAD.update(dirs)
    thread.join(30)
    assert not thread.is_alive() and done
    return done.get("result") or done["error"], dirs


def check_report(report, K, r, coded, network="links"):
    assert isinstance(report, MapReduceReport)
    assert (report.workers, report.load, report.coded, report.network) == \
        (K, r, coded, network)
    assert report.lost == [] and report.attempts == 1 and len(report.jobs) == 2
    assert set(report.phases) == set(mapreduce.PHASES)
    assert all(report.phases[p] == max(w[p] for w in report.per_worker) >= 0
               for p in mapreduce.PHASES)
    assert report.total >= report.phases["map"]
    assert report.to_dict()["phases"]["total"] == report.total


# -- every K <= 6 and load r ---------------------------------------------------------------

@pytest.fixture(scope="module", params=[2, 3, 4, 5, 6], ids=lambda K: f"K={K}")
def sized(request):
    """A cluster of K local workers, one K after the other."""
    with ffcode.Cluster(request.param) as c:
        c.wait()
        yield c


@pytest.mark.bounded(60)
def test_terasort_every_load_coded_and_plain(bounded, sized):
    """For every r < K, coded and plain: the skewed records sorted exactly (two files a
    batch), each worker's sent bytes as the shuffle's formula says for the same mapped
    values, coded multicasts put on r links each, and no peer socket left once done."""
    K = sized.n_workers
    data, bounds = sort_case(K)
    for r in range(1, K):
        placement = Placement(K, r, files=2 * math.comb(K, r))
        files = split_files(data, placement, per_batch=2)
        values = [terasort.mapper(f, bounds) for f in files]
        for coded in (True, False):
            outputs, report = mapreduce.run(sized, files, terasort.mapper, terasort.sort,
                                            load=r, coded=coded, args=[bounds], timeout=30)
            assert terasort.check(outputs, data), (K, r, coded)
            assert [len(o) for o in outputs] == [len(b"".join(v[q] for v in values))
                                                for q in range(K)]
            check_report(report, K, r, coded)
            assert report.sent == formula(placement, values, Bytes(), coded), (K, r, coded)
            assert report.copies == [s * (r if coded else 1) for s in report.sent]
    assert settled(sized) == set()


# -- the bytes sent ------------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_sent_bytes_closed_form(bounded, cluster):
    """Values that split evenly (K parts of 60 bytes a file, 60 divisible by every r): coded,
    each worker sends one packet of V / r bytes per group of r + 1 it is in, C(K-1, r) V / r;
    plain, V per value its turn gives it, C(K, r) (K - r) V in all: coded = plain / r; the
    map given by import path."""
    K, m = 4, 60
    args = [np.array([K])]
    for r in range(1, K):
        placement = Placement(K, r)
        files = split_files_of(K, len(placement.subsets), m, seed=r)
        expected = split_outputs(files, K)
        sent = {}
        for coded in (True, False):
            outputs, report = run_mapreduce(cluster, files, "test_mapreduce:split_map",
                                            load=r, coded=coded, args=args, timeout=30)
            assert outputs == expected
            check_report(report, K, r, coded)
            sent[coded] = report.sent
            assert report.sent == formula(placement, [split_map(f, args[0]) for f in files],
                                          Bytes(), coded)
        plain = [m * sum(1 for s, _, _ in uncoded_transfers(placement) if s == w)
                 for w in range(K)]
        assert sent[False] == plain and sum(plain) == math.comb(K, r) * (K - r) * m
        assert sent[True] == [math.comb(K - 1, r) * m // r] * K
        assert sum(sent[True]) * r == sum(sent[False])


# -- compressed sums in GF(p) --------------------------------------------------------------

@pytest.mark.bounded(60)
@pytest.mark.parametrize("p", [65521, 2**61 - 1])
def test_sum_reduce_in_a_field_is_exact(bounded, cluster, p):
    """Each file gives K vectors of GF(p) (7 elements: segments of unequal lengths for
    r = 2, 3), p - 1 everywhere in one file: each output is the sum over every file of its
    part, as Python ints say; a batch of 3 files still sends one vector per function (the
    shuffle's formula on the batches' sums: coded, packets of floor(m / r) to ceil(m / r)
    elements); a reduce applies to the sum."""
    F = ffcode.GF(p)
    K, m, per_batch = 4, 7, 3
    args = [np.array([K])]
    for r in (1, 2, 3):
        placement = Placement(K, r, files=per_batch * math.comb(K, r))
        files = [F.random(K * m, seed=(p % 1000, r, n)) for n in range(placement.files)]
        files[0][:] = p - 1
        sums = [[sum(int(f[q * m + i]) for f in files) % p for i in range(m)]
                for q in range(K)]
        for coded in (True, False):
            outputs, report = mapreduce.run(cluster, files, vector_map, load=r, coded=coded,
                                            field=p, args=args, timeout=30)
            assert [o.dtype for o in outputs] == [F.dtype] * K
            assert [o.tolist() for o in outputs] == sums, (r, coded)
            check_report(report, K, r, coded)
            elements = formula(placement, [vector_map(f, args[0]) for f in files],
                               Vectors(F), coded)
            assert report.sent == [n * F.dtype.itemsize for n in elements]
            packets = K * math.comb(K - 1, r)       # per_batch aside
            assert packets * (m // r) <= sum(elements) <= packets * -(-m // r) if coded else \
                sum(elements) == math.comb(K, r) * (K - r) * m
        outputs, _ = mapreduce.run(cluster, files, vector_map, reversed_vector, load=r,
                                   field=p, args=args, timeout=30)
        assert [o.tolist() for o in outputs] == [s[::-1] for s in sums]


# -- the emulated networks -----------------------------------------------------------------

@pytest.mark.bounded(60)
def test_turns_and_links_at_a_rate_give_the_same_outputs(bounded, cluster):
    """The same coded TeraSort on a shared medium taken in turns and on per-pair links, both
    at 400 kB/s: the same exact outputs and sent bytes; the turns take at least every
    worker's bytes one after another, the links at least a worker's busiest link."""
    K, r, rate = 4, 2, 400e3
    runs = {}
    for network in ("turns", "links"):
        outputs, report, data, _ = sort_job(cluster, K, r, True, network=network,
                                            link_rate=rate)
        assert terasort.check(outputs, data), network
        check_report(report, K, r, True, network)
        assert report.link_rate == rate
        runs[network] = outputs, report
    (turns, on_turns), (links, on_links) = runs["turns"], runs["links"]
    assert turns == links and on_turns.sent == on_links.sent
    assert on_turns.phases["shuffle"] >= 0.8 * sum(on_turns.sent) / rate
    assert on_links.phases["shuffle"] >= 0.8 * max(on_links.copies) / (K - 1) / rate


@pytest.mark.bounded(60)
@pytest.mark.parametrize("network", ["links", "turns"])
def test_a_link_delay_holds_every_message_and_changes_nothing_else(bounded, cluster, network):
    """Every message arrives link_delay seconds late (the links stay free meanwhile): the
    shuffle takes at least the delay (taking turns, once per worker's turn), and the outputs
    and bytes are those of the undelayed job."""
    K, r, delay = 4, 2, 0.15
    plain, plain_report, data, _ = sort_job(cluster, K, r, True, network=network)
    outputs, report, _, _ = sort_job(cluster, K, r, True, network=network, link_delay=delay)
    assert outputs == plain and report.sent == plain_report.sent
    assert report.link_delay == delay and report.to_dict()["link_delay"] == delay
    assert report.phases["shuffle"] >= delay * (K if network == "turns" else 1)
    with pytest.raises(ValueError, match="link_delay"):
        sort_job(cluster, K, r, True, link_delay=7200)
    with pytest.raises(ValueError, match="link_delay"):
        sort_job(cluster, K, r, True, link_delay=-1)


# -- lost workers (a test's own cluster each: a lost worker's replacement is a new process,
# which goes as the cluster closes) -------------------------------------------------------

@pytest.fixture
def fresh():
    """Four local workers for one test."""
    with ffcode.Cluster(4) as c:
        c.wait()
        yield c


@pytest.mark.bounded(60)
def test_a_worker_lost_in_the_map_at_load_1_fails_naming_it_and_a_retry_recovers(bounded,
                                                                                  fresh):
    """At r = 1 batch 3 is mapped by worker 3 alone: its process exiting in its map fails the
    job within moments, naming it and the batch no other worker mapped; the survivors let
    go of their sockets. With retries=1 the job runs again from the map on its replacement,
    exactly, and the next job too."""
    K = 4
    files = split_files_of(K, K, 30, seed=7)
    expected = split_outputs(files, K)
    victim = fresh.wait()[3].pid
    began = time.monotonic()
    with pytest.raises(JobFailed) as failed:
        mapreduce.run(fresh, files, mortal_map, load=1,
                      args=[np.array([K]), np.array([victim, 0, 0])], timeout=30)
    assert time.monotonic() - began < 10
    assert str(failed.value).startswith(
        "worker 3 lost: the reduce function and shuffle messages of it are missing; batches "
        "[3] were mapped by no other worker")
    assert failed.value.report.workers[3].lost == "process exited"
    assert not alive(victim) and peer_dirs(fresh) == set()
    victim = fresh.wait()[3].pid                    # its replacement, which exits in turn
    outputs, report = mapreduce.run(fresh, files, mortal_map, load=1, retries=1,
                                    args=[np.array([K]), np.array([victim, 0, 0])],
                                    timeout=30)
    assert outputs == expected and report.attempts == 2 and report.lost == []
    assert not alive(victim)
    outputs, report = mapreduce.run(fresh, files, split_map, load=1, args=[np.array([K])],
                                    timeout=30)
    assert outputs == expected and report.attempts == 1
    assert settled(fresh) == set()


@pytest.mark.bounded(60)
def test_workers_lost_before_the_shuffle_are_recovered_at_load_2(bounded, fresh):
    """At r = 2 every batch has a second mapper: a worker whose process exits in its map,
    then one killed once its map answered (idle, while the others still map), is finished
    without: each time the outputs are exact within moments, the report names it (its
    entries None) and the survivors let go of their sockets; the next job runs on the
    replacements."""
    K = 4
    placement = Placement(K, 2)
    files = split_files_of(K, len(placement.subsets), 40, seed=8)
    expected = split_outputs(files, K)

    def job(plan):
        return mapreduce.run(fresh, files, mortal_map, load=2, timeout=20,
                             args=[np.array([K]), np.array(plan)])

    left = set()                # the killed workers' peer directories, which stay
    for place, when in ((1, "in its map"), (2, "after its map")):
        victim = fresh.wait()[place].pid
        began = time.monotonic()
        if when == "in its map":
            (outputs, report), dirs = job([victim, 0, 0]), set()
        else:
            (outputs, report), dirs = killed(fresh, lambda: job([victim, 1, 300]), victim,
                                             lambda: bound_dirs(victim), delay=0.1)
            assert len(dirs) == 1
        assert time.monotonic() - began < 10, when
        assert outputs == expected and report.lost == [place] and report.attempts == 1
        assert report.sent[place] is None and report.per_worker[place] is None
        assert None not in report.sent[:place] + report.sent[place + 1:]
        left |= dirs
        assert not alive(victim) and settled(fresh) == left
    outputs, report = mapreduce.run(fresh, files, split_map, load=2, args=[np.array([K])],
                                    timeout=30)
    assert outputs == expected and report.lost == []


@pytest.mark.bounded(60)
def test_a_worker_lost_mid_shuffle(bounded, fresh):
    """A worker killed during the exchange (plain TeraSort of 300 records on a slow shared
    medium: turns at 25 kB/s, 0.6-0.9 s; the kill 0.2 s in). Where it cannot be done
    without (r = 1, or r = 2 with recover=False) the job fails within moments, naming it and
    what is missing, and every survivor let go of its peer socket (the killed process's
    directory stays until the cluster closes). At r = 2 the survivors shuffle again without
    it, exactly, the report holding both shuffle attempts. The cluster then runs the next
    job exactly."""
    K = 4
    data, bounds = sort_case(K, count=300)
    left = set()                # the killed workers' peer directories, which stay
    for load, options, place in ((1, {}, 3), (2, {"recover": False}, 3), (2, {}, 0)):
        files = split_files(data, Placement(K, load))
        victim = fresh.wait()[place].pid
        start = fresh.epoch
        began = time.monotonic()

        def job():
            return mapreduce.run(fresh, files, terasort.mapper, terasort.sort, load=load,
                                 coded=False, args=[bounds], network="turns",
                                 link_rate=25e3, timeout=30, **options)

        result, dirs = killed(fresh, job, victim, lambda: fresh.epoch >= start + 2,
                              delay=0.2)                # the shuffle's job, under way
        assert time.monotonic() - began < 15 and len(dirs) == 1
        left |= dirs
        if options or load == 1:
            assert isinstance(result, JobFailed), result
            assert not any(bound_dirs(h.pid) for h in fresh.live())
            message = str(result)
            assert message.startswith(f"worker {place} lost: the reduce function and "
                                      f"shuffle messages of it are missing; ")
            assert ("batches [3] were mapped by no other worker" if load == 1 else
                    "every batch is still mapped by another worker (load 2), but "
                    "recover=False") in message
            assert "shuffle phase" in result.report.code
            assert peer_dirs(fresh) == left     # the drop came before the error
        else:
            outputs, report = result
            assert terasort.check(outputs, data) and report.lost == [place]
            assert [j.code for j in report.jobs] == ["MapReduce map phase on 4 workers"] + \
                ["MapReduce shuffle phase on 4 workers"] * 2
        assert settled(fresh) == left
    outputs, _, data, _ = sort_job(fresh, K, 2, True)
    assert terasort.check(outputs, data)


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.bounded(60)
def test_bad_arguments_are_refused_before_anything_starts(bounded, cluster):
    """Each bad argument is refused with an error naming it, and no job starts."""
    data, bounds = sort_case(4)
    files = split_files(data, Placement(4, 2))
    epoch = cluster.epoch

    def refused(error, match, files=files, map=terasort.mapper, **options):
        options = {"load": 2, "args": [bounds], **options}
        with pytest.raises(error, match=match):
            mapreduce.run(cluster, files, map, terasort.sort, **options)

    refused(ValueError, "'load' must be at least 1, not 0", load=0)
    refused(ValueError, "Computation load r = 4 must be below the workers K = 4", load=4)
    refused(ValueError, "5 files do not split into the 6 batches of K = 4, r = 2",
            files=files[:5])
    refused(TypeError, "'files' must hold integer arrays", files=[f.astype(float)
                                                                   for f in files])
    refused(TypeError, "'args' must hold integer arrays", args=[1.5])
    refused(ValueError, "'network' must be one of 'links', 'turns'; not 'wifi'",
            network="wifi")
    refused(ValueError, "'field' must be a prime, not 65520", field=65520)
    refused(ValueError, "'field' must be a prime, not True", field=True)
    refused(ValueError, "'link_rate' must be positive", link_rate=0)
    refused(ValueError, "'retries' must be non-negative", retries=-1)
    refused(ValueError, "cannot be imported by worker processes", map=lambda f, b: [f])
    refused(ValueError, "Cannot import 'test_mapreduce:nothing'",
            map="test_mapreduce:nothing")
    with pytest.raises(TypeError, match="'cluster' must be an ffcode.Cluster"):
        mapreduce.run(None, files, terasort.mapper, load=2)
    assert cluster.epoch == epoch                   # no job ran


@pytest.mark.bounded(30)
def test_a_cluster_with_relays_is_refused(bounded):
    """A MapReduce job needs every worker at the master's hand: relays are refused."""
    data, bounds = sort_case(4)
    with ffcode.Cluster(4, groups=2) as c:
        with pytest.raises(ValueError, match="without relays"):
            mapreduce.run(c, split_files(data, Placement(4, 2)), terasort.mapper,
                          terasort.sort, load=2, args=[bounds])
        assert c.epoch == 0


FAILING = [
    ("records", terasort.mapper, None,
     (r"worker 3 failed: ValueError: the map function failed on file 3: InvalidParameterError: "
      r"Records must be whole records of 100 bytes: 150 bytes is not a multiple of 100")),
    ("map raises", raising_map, None,
     (r"worker \d failed: ValueError: the map function failed on file \d: KeyError: 'no such "
      r"key in map'")),
    ("map short", short_map, None,
     (r"worker \d failed: ValueError: the map function gave 3 values for file \d, not one per "
      r"reduce function \(4\)")),
    ("map not bytes", number_map, None,
     (r"worker \d failed: ValueError: the map function's value for file \d is not bytes but "
      r"int")),
    ("reduce raises", split_map, raising_reduce,
     (r"worker (\d) failed: ValueError: the reduce function failed on function \1's values at "
      r"worker \1: ArithmeticError: boom in reduce")),
    ("reduce not bytes", split_map, object_reduce,
     r"worker \d failed: ValueError: the reduce function's output is not bytes but object"),
]


@pytest.mark.bounded(60)
@pytest.mark.parametrize("what,map,reduce,match", FAILING, ids=[f[0] for f in FAILING])
def test_a_failing_function_is_named_with_its_file_and_worker(bounded, cluster, what, map,
                                                             reduce, match):
    """A map or reduce function that fails on a worker fails the job with a WorkerError
    naming the worker (and the file, for the map); every worker lets go of the job's
    sockets; the cluster runs the next job exactly."""
    K = 4
    placement = Placement(K, 1)
    files = split_files_of(K, K, 100, seed=10)
    args = [np.array([K])]
    if what == "records":                       # TeraSort's map on a cut record
        data, bounds = sort_case(K)
        files = split_files(data, placement)
        files[3] = files[3][:150]
        args = [bounds]
    before = settled(cluster)
    with pytest.raises(WorkerError, match=match) as failed:
        mapreduce.run(cluster, files, map, reduce, load=1, args=args, timeout=30)
    message = str(failed.value)
    assert "worker" in message and ("file" in message or what.startswith("reduce"))
    assert peer_dirs(cluster) == before
    outputs, _, data, _ = sort_job(cluster, K, 1, True)
    assert terasort.check(outputs, data)


# -- Ray actors and hand-started workers over tcp ------------------------------------------

@pytest.fixture
def ray_session():
    """Ray on 127.0.0.1 for one test (the bounded fixture leaves the processes to it):
    afterwards no process of it is left."""
    from helpers import local_ray
    with local_ray(4) as ray:
        yield ray


@pytest.mark.bounded(120)
def test_terasort_on_ray_actors(bounded, ray_session):
    """Coded TeraSort on three Ray actors, their peer links over tcp with CURVE keys made
    for the job: sorted exactly, each worker's bytes as the formula says; plain at r = 1
    too; and on peer links losing 0.3 in runs of 2."""
    K = 3
    with ffcode.Cluster(K, engine="ray", start_timeout=60) as c:
        c.wait()
        for r, coded, loss in ((2, True, None), (1, False, None), (2, True, 0.3),
                               (1, False, 0.3)):
            outputs, report, data, files = sort_job(c, K, r, coded, link_loss=loss,
                                                    link_burst=loss and 2.0, seed=6)
            assert terasort.check(outputs, data), (r, coded)
            check_report(report, K, r, coded)
            values = [terasort.mapper(f, sort_case(K)[1]) for f in files]
            assert report.sent == formula(Placement(K, r), values, Bytes(), coded)
            assert len(report.resent) == (K if loss else 0)


@pytest.mark.bounded(60)
def test_terasort_on_remote_workers_over_tcp(bounded, tmp_path):
    """Coded TeraSort on three hand-started 'ffcode worker --connect' processes (the
    master's link in the clear on loopback, the peers' links with CURVE keys made for the
    job), on both networks, and on links losing 0.3 in runs of 2: sorted exactly; the
    workers exit with status 0 at the close."""
    K = 3
    procs = []
    try:
        with ffcode.Cluster(endpoint=LOOPBACK, n_workers=K, start_timeout=30,
                            insecure=True) as c:
            procs = start_workers(c.endpoint, K, tmp_path)
            c.wait(timeout=30)
            for network, loss in (("links", None), ("turns", None), ("links", 0.3)):
                outputs, report, data, files = sort_job(c, K, 2, True, network=network,
                                                        link_loss=loss,
                                                        link_burst=loss and 2.0, seed=4)
                assert terasort.check(outputs, data), network
                check_report(report, K, 2, True, network)
                values = [terasort.mapper(f, sort_case(K)[1]) for f in files]
                assert report.sent == formula(Placement(K, 2), values, Bytes(), True)
                assert len(report.resent) == (K if loss else 0)
        assert [proc.wait(10) for proc in procs] == [0] * K
    finally:
        reap(procs)
