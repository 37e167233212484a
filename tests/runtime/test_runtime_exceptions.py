"""Bad arguments to ffcode.Cluster, Cluster.run and ffcode.Faults raise a clear TypeError,
ValueError or ClusterError whose message names the problem, before any job is sent."""
import functools
import math
import re

import numpy as np
import pytest

import ffcode
from ffcode import GF, LCC, MDS, Faults, MatDot, PolynomialCode
from ffcode.runtime.shared import keys
from ffcode.errors import ClusterError, JobFailed

from helpers import shared_cluster

P = 2**31 - 1
F = GF(P)
A = F.random((6, 5), 1)
X = F.random((5,), 2)
B = F.random((5, 3), 3)


def module_f(F, X):
    return F.add(X, X)


def original(F, X):
    return X


renamed = original


def original(F, X):    # noqa: F811 -- "renamed" no longer imports as itself
    return F.neg(X)


# -- Cluster(...) ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, -1, -100], ids=str)
def test_cluster_n_workers_too_small(bounded, n):
    with pytest.raises(ValueError, match=rf"'n_workers' must be from 1 to 1024, not {n}"):
        ffcode.Cluster(n)


@pytest.mark.parametrize("n", [True, False, 2.0, 4.5, "4", None, [4], np.float64(3)],
                         ids=repr)
def test_cluster_n_workers_not_an_integer(bounded, n):
    with pytest.raises(TypeError, match=rf"'n_workers' must be an integer, not "
                                        rf"{type(n).__name__}"):
        ffcode.Cluster(n)


@pytest.mark.parametrize("endpoint", [5, b"tcp://127.0.0.1:5555", ["tcp://127.0.0.1:1"]],
                         ids=repr)
def test_cluster_endpoint_not_a_string(bounded, endpoint):
    with pytest.raises(TypeError, match="'endpoint' must be a string"):
        ffcode.Cluster(1, endpoint)


@pytest.mark.parametrize("endpoint", ["", "127.0.0.1:5555", "localhost", "inproc://master",
                                      "tcp://:5555",
                                      "udp://127.0.0.1:5555", "http://127.0.0.1:80",
                                      "ws://127.0.0.1:5555", "pgm://127.0.0.1;239.0.0.1:5555",
                                      "tcp//127.0.0.1:5555"])
def test_cluster_endpoint_bad_transport(bounded, endpoint):
    with pytest.raises(ValueError, match=r"'endpoint' must look like 'tcp://HOST:PORT' "
                                         r"\(PORT a number below 65536, or \* for any free "
                                         r"one\) or 'ipc://PATH'"):
        ffcode.Cluster(1, endpoint)


@pytest.mark.parametrize("endpoint,host", [
    ("tcp://0.0.0.0:5555", "0.0.0.0"), ("tcp://*:5555", "*"),
    ("tcp://192.168.1.10:5555", "192.168.1.10"), ("tcp://example.com:5555", "example.com"),
    ("tcp://eth0:5555", "eth0"), ("tcp://[::]:5555", "[::]"),
    ("tcp://127.0.0.1.evil.com:5555", "127.0.0.1.evil.com")])
def test_cluster_refuses_beyond_loopback_without_curve(bounded, endpoint, host):
    with pytest.raises(ValueError, match=rf"Refusing to listen on '{re.escape(host)}', where "
                                         rf"anyone who reaches it could join as a worker and "
                                         rf"spoil the output: pass key= and clients="):
        ffcode.Cluster(1, endpoint)


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1:5555", "tcp://localhost:*",
                                      "tcp://[::1]:5555"])
def test_cluster_refuses_loopback_without_curve(bounded, endpoint):
    """Loopback is no trust boundary on a shared host: any local process could join."""
    with pytest.raises(ValueError, match=r"on loopback, where any process of this host could "
                                         r"join as a worker .* or insecure=True"):
        ffcode.Cluster(1, endpoint)


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1", "tcp://127.0.0.1:abc", "ipc://",
                                      "tcp://127.0.0.1:99999"])
def test_cluster_endpoint_cannot_bind(bounded, endpoint):
    with pytest.raises((ValueError, ClusterError), match="endpoint"):
        ffcode.Cluster(1, endpoint).close()


def test_cluster_endpoint_in_use(bounded):
    with ffcode.Cluster(1, "tcp://127.0.0.1:*", insecure=True) as first:
        with pytest.raises(ClusterError, match="in use"):
            ffcode.Cluster(1, first.endpoint, insecure=True).close()


@pytest.mark.parametrize("given", [{"key": "master.key_secret"}, {"clients": "clients/"}],
                         ids=["key-only", "clients-only"])
def test_cluster_key_and_clients_go_together(bounded, given):
    with pytest.raises(ValueError, match="'key' and 'clients' go together"):
        ffcode.Cluster(1, "tcp://127.0.0.1:5555", **given)
    with pytest.raises(ValueError, match="'key' and 'clients' go together"):
        ffcode.Cluster(1, "tcp://0.0.0.0:5555", **given)


@pytest.mark.bounded(20)
def test_cluster_curve_key_files(bounded, tmp_path):
    public, secret = keys.generate(tmp_path / "keys", "master")
    clients = tmp_path / "clients"
    clients.mkdir()
    endpoint = "tcp://127.0.0.1:*"
    with pytest.raises(ValueError, match="CURVE clients directory .* does not exist"):
        ffcode.Cluster(1, endpoint, key=secret, clients=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="CURVE key file .* does not exist"):
        ffcode.Cluster(1, endpoint, key=str(tmp_path / "nope"), clients=str(clients))
    with pytest.raises(ValueError, match="holds no secret key: pass the .key_secret file"):
        ffcode.Cluster(1, endpoint, key=public, clients=str(clients))
    with ffcode.Cluster(1, endpoint, key=secret, clients=str(clients)) as cluster:
        assert cluster.endpoint.startswith("tcp://127.0.0.1:")


@pytest.mark.bounded(20)
def test_local_cluster_with_curve_keys(bounded, tmp_path):
    public, secret = keys.generate(tmp_path / "keys", "master")
    clients = tmp_path / "clients"
    clients.mkdir()
    try:
        cluster = ffcode.Cluster(2, key=secret, clients=str(clients), start_timeout=1)
    except ValueError as e:                     # refusing the combination is a fix too
        assert "endpoint" in str(e)
        return
    with cluster:
        y, report = cluster.run(MDS(F, 1, 2), A, X, timeout=10)
        assert np.array_equal(y, F.matmul(A, X))


@pytest.mark.parametrize("name", ["start_timeout", "lost_after"])
@pytest.mark.parametrize("value", [0, 0.0, -1, -0.5, math.nan, -math.inf], ids=repr)
def test_cluster_times_not_positive(bounded, name, value):
    with pytest.raises(ValueError, match=rf"'{name}' must be positive"):
        ffcode.Cluster(1, **{name: value})


@pytest.mark.parametrize("name", ["start_timeout", "lost_after"])
@pytest.mark.parametrize("value", ["1", None, True, [1], 1j], ids=repr)
def test_cluster_times_not_numbers(bounded, name, value):
    with pytest.raises(TypeError, match=rf"'{name}' must be a number of seconds, not "
                                        rf"{type(value).__name__}"):
        ffcode.Cluster(1, **{name: value})


@pytest.mark.bounded(20)
def test_wait_bounds(bounded):
    with ffcode.Cluster(1, "tcp://127.0.0.1:*", insecure=True) as cluster:  # nobody connects
        with pytest.raises(ClusterError, match=rf"Only 0 of 1 workers connected to "
                                               rf"{cluster.endpoint} within 0.2 s"):
            cluster.wait(timeout=0.2)
        with pytest.raises(ValueError, match="'timeout' must be positive"):
            cluster.wait(timeout=0)
        with pytest.raises(TypeError, match="'count' must be an integer"):
            cluster.wait(1.0)
    with ffcode.Cluster(2) as cluster:
        with pytest.raises(ValueError, match="This cluster has 2 workers, not 3"):
            cluster.wait(3)


# -- Cluster.run(...) --------------------------------------------------------------------------

cluster = shared_cluster(4, lost_after=60.0)


def refused(cluster, error, match, code, *inputs, **options):
    """run raises error (matching) before any job is sent."""
    epoch = cluster.epoch
    with pytest.raises(error, match=match):
        cluster.run(code, *inputs, **options)
    assert cluster.epoch == epoch, "a job was sent before the error"


@pytest.mark.parametrize("code", ["mds", None, F, MDS], ids=repr)
def test_run_not_a_code(bounded, cluster, code):
    refused(cluster, TypeError, "'code' must be an ffcode code", code, A, X)


@pytest.mark.parametrize("scheme", ["fast", "COMPFS", "", 3, "coded"], ids=repr)
def test_run_unknown_scheme(bounded, cluster, scheme):
    refused(cluster, ValueError, r"'scheme' must be one of uncoded, classic, systematic, cfs, "
                                 r"compfs; not ", MDS(F, 2, 4), A, X, scheme=scheme)


@pytest.mark.parametrize("scheme", ["systematic", "cfs", "compfs"])
@pytest.mark.parametrize("pieces", [0, -1], ids=str)
def test_run_pieces_too_small(bounded, cluster, scheme, pieces):
    refused(cluster, ValueError, rf"'pieces' must be at least 1, not {pieces}",
            MDS(F, 2, 4), A, X, scheme=scheme, pieces=pieces)


@pytest.mark.parametrize("scheme", ["systematic", "cfs", "compfs"])
@pytest.mark.parametrize("pieces", [1.5, 2.0, "2", True], ids=repr)
def test_run_pieces_not_an_integer(bounded, cluster, scheme, pieces):
    refused(cluster, TypeError, "'pieces' must be an integer", MDS(F, 2, 4), A, X,
            scheme=scheme, pieces=pieces)


@pytest.mark.parametrize("faults", [{}, {"slowdown": {0: 2}}, "none", 0, [Faults()]],
                         ids=repr)
def test_run_faults_not_faults(bounded, cluster, faults):
    refused(cluster, TypeError, rf"'faults' must be an ffcode.Faults, not "
                                rf"{type(faults).__name__}", MDS(F, 2, 4), A, X,
            faults=faults)


@pytest.mark.parametrize("faults,name,beyond", [
    (Faults(slowdown={4: 2}), "slowdown", "[4]"),
    (Faults(link_rate={0: 10, 9: 10}), "link_rate", "[9]"),
    (Faults(crash_after={5: 0, 6: 1}), "crash_after", "[5, 6]"),
    (Faults(hang_after={3: 0, 4: 0}), "hang_after", "[4]")], ids=lambda v: str(v)[:20])
def test_run_faults_beyond_the_job(bounded, cluster, faults, name, beyond):
    refused(cluster, ValueError, rf"Faults '{name}' names workers {re.escape(beyond)}, but "
                                 rf"the job has workers 0\.\.3", MDS(F, 2, 4), A, X,
            faults=faults)


def test_run_faults_beyond_a_smaller_job(bounded, cluster):
    refused(cluster, ValueError, r"names workers \[2\], but the job has workers 0\.\.1",
            MDS(F, 2, 2), A, X, faults=Faults(slowdown={2: 2}))


@pytest.mark.parametrize("options,error,match", [
    (dict(assignment=[[0, 4], [1, 5], [2], []]), ValueError,
     r"leaves worker 3 without shares"),
    (dict(assignment=[[0, 4], [1], [2], [3]]), ValueError, r"leaves share 5 without a worker"),
    (dict(assignment=[[0, 4], [1, 4], [2, 5], [3]]), ValueError,
     r"Share 4 is assigned to both worker 0 and worker 1"),
    (dict(assignment=[[0, 6], [1, 4], [2, 5], [3]]), ValueError,
     r"Worker 0 is assigned share 6, but the code has shares 0\.\.5"),
    (dict(assignment=[[0], [1], [2], [3], [4], [5]]), ValueError,
     r"names 6 workers; the cluster has 4"),
    (dict(assignment=[0, 1, 2, 3, 4, 5]), TypeError, r"Worker 0's shares must be a sequence"),
    (dict(assignment="0,1"), TypeError, r"'assignment' must be a sequence"),
    (dict(allocate=[1, 2, 0, 1]), ValueError, r"'allocate' must hold positive speeds, not 0 \(worker 2\)"),
    (dict(allocate=[1, 2, float("nan"), 1]), ValueError, r"'allocate' must hold finite"),
    (dict(allocate=[1, 2, -1, 1]), ValueError, r"'allocate' must hold positive"),
    (dict(allocate=[1, 2, "3", 1]), TypeError, r"'allocate' must hold numbers, not str"),
    (dict(allocate=[1, 2, 3]), ValueError, r"gives 3 speeds; the cluster has 4 workers"),
    (dict(allocate="fastest"), ValueError, r"'allocate' must be one of 'uniform', 'speed'"),
    (dict(allocate="uniform", assignment=[[0, 4], [1, 5], [2], [3]]), ValueError,
     r"either 'assignment' or 'allocate', not both"),
    (dict(adversaries=1), ValueError,
     r"Correcting 1 wrong workers holding up to 2 shares needs R \+ 2S = 7 shares; the "
     r"code has 6")],
    ids=["worker-without", "share-without", "twice", "beyond", "too-many-workers",
         "flat", "string", "zero-speed", "nan-speed", "negative-speed", "text-speed",
         "short-speeds", "unknown-allocate", "both", "adversary-shares"])
def test_run_bad_assignments(bounded, cluster, options, error, match):
    """A code with more points than the cluster's 4 workers: each bad assignment, speed
    vector or adversary count is a clear error before any worker is asked."""
    refused(cluster, error, match, MDS(F, 3, 6), A, X, **options)


def test_more_shares_than_the_field_has_points():
    with pytest.raises(ValueError, match=r"GF\(7\) is too small for 7 workers"):
        MDS(GF(7), 2, 7)


@pytest.mark.parametrize("code,inputs,message", [
    (MDS(F, 2, 4), (A,), r"MDS runs on inputs \(A, x\), got 1 argument\."),
    (MDS(F, 2, 4), (A, X, X), r"MDS runs on inputs \(A, x\), got 3 arguments"),
    (MDS(F, 2, 4), (), r"MDS runs on inputs \(A, x\), got 0 arguments"),
    (PolynomialCode(F, 2, 1, 4), (A,), r"PolynomialCode runs on inputs \(A, B\), got 1 "),
    (MatDot(F, 2, 4), (A, B, B), r"MatDot runs on inputs \(A, B\), got 3 arguments"),
    (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), ([A, A], [A, A]),
     r"LCC runs on inputs \(blocks,\), got 2 arguments"),
    (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), (),
     r"LCC runs on inputs \(blocks,\), got 0 arguments")],
    ids=["mds-1", "mds-3", "mds-0", "poly-1", "matdot-3", "lcc-2", "lcc-0"])
@pytest.mark.parametrize("scheme", ["uncoded", "compfs"])
def test_run_wrong_number_of_inputs(bounded, cluster, code, inputs, message, scheme):
    refused(cluster, TypeError, message, code, *inputs, scheme=scheme)


@pytest.mark.parametrize("code,inputs,error,message", [
    (MDS(F, 2, 4), (np.full((3, 2), P, np.uint64), X[:2]), ValueError, "elements >= p"),
    (MDS(F, 2, 4), (A, np.full(5, P, np.uint64)), ValueError, "'x' has elements >= p"),
    (MDS(F, 2, 4), (A, F.random((5, 2, 2), 1)), ValueError, "'x' must be 1-D or 2-D"),
    (MDS(F, 2, 4), (A, X.astype(float)), TypeError, "array of integers"),
    (PolynomialCode(F, 2, 2, 4), (A, A), ValueError, "do not chain"),
    (MatDot(F, 2, 4), (A, F.random((4, 3), 1)), ValueError, "do not chain"),
    (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), ([A],), ValueError,
     "must hold k = 2 arrays"),
    (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), ([A, B],), ValueError,
     "equally shaped"),
    (LCC(F, 2, 0, "ffcode.functions:square", 2, 4), (np.stack([A, A]),), TypeError,
     "list of k arrays")],
    ids=["A>=p", "x>=p", "x-3d", "x-float", "poly-chain", "matdot-chain", "lcc-k",
         "lcc-shapes", "lcc-ndarray"])
@pytest.mark.parametrize("scheme", ["uncoded", "cfs"])
def test_run_bad_inputs(bounded, cluster, code, inputs, error, message, scheme):
    refused(cluster, error, message, code, *inputs, scheme=scheme)


@pytest.mark.parametrize("scheme", ["uncoded", "compfs"])
@pytest.mark.parametrize("x", [X[:4], F.random((6, 2), 1)], ids=["vector", "matrix"])
def test_run_mds_x_does_not_chain(bounded, cluster, scheme, x):
    refused(cluster, ValueError, r"Arguments 'A' and 'x' do not chain: shapes \(6, 5\) and",
            MDS(F, 2, 4), A, x, scheme=scheme)


def _nested():
    def inner(F, X):
        return X
    return inner


class _Callable:
    def __call__(self, F, X):
        return X


@pytest.mark.parametrize("f", [lambda F, X: F.mul(X, X), _nested(),
                               functools.partial(module_f), _Callable()],
                         ids=["lambda", "nested", "partial", "instance"])
@pytest.mark.parametrize("scheme", ["uncoded", "classic", "cfs"])
def test_run_lcc_f_not_importable(bounded, cluster, f, scheme):
    code = LCC(F, 2, 0, f, 2, 4)
    refused(cluster, ValueError, "cannot be imported by worker processes: define f at the "
                                 "top level of a module or script", code, [A, A],
            scheme=scheme)


def test_run_lcc_f_imports_as_another_function(bounded, cluster):
    code = LCC(F, 2, 0, renamed, 1, 4)
    refused(cluster, ValueError, r"'test_runtime_exceptions:original' does not import as the "
                                 r"same function", code, [A, A])


@pytest.mark.parametrize("f", ["ffcode.functions:square", module_f], ids=["path", "function"])
def test_run_compfs_needs_row_linear(bounded, cluster, f):
    code = LCC(F, 2, 0, f, 2, 4)
    refused(cluster, ValueError, "LCC computes at full speed only when f is row-linear",
            code, [A, A], scheme="compfs", pieces=2)


@pytest.mark.parametrize("timeout", [0, -1, math.nan], ids=repr)
def test_run_timeout_not_positive(bounded, cluster, timeout):
    refused(cluster, ValueError, "'timeout' must be positive", MDS(F, 2, 4), A, X,
            timeout=timeout)


@pytest.mark.parametrize("timeout", ["10", None, True], ids=repr)
def test_run_timeout_not_a_number(bounded, cluster, timeout):
    refused(cluster, TypeError, "'timeout' must be a number of seconds", MDS(F, 2, 4), A, X,
            timeout=timeout)


@pytest.mark.parametrize("timeout", [np.int64(30), np.float32(30.5), 30], ids=repr)
def test_run_timeout_numbers(bounded, cluster, timeout):
    y, report = cluster.run(MDS(F, 2, 4), A, X, timeout=timeout)
    assert np.array_equal(y, F.matmul(A, X))


@pytest.mark.parametrize("progress", [1, "bar", [print]], ids=repr)
def test_run_progress_not_callable(bounded, cluster, progress):
    refused(cluster, TypeError, r"'progress' must be callable as progress\(rank, needed\)",
            MDS(F, 2, 4), A, X, progress=progress)


def test_run_still_works_after_refusals(bounded, cluster):
    for scheme in ("uncoded", "compfs"):
        y, report = cluster.run(MDS(F, 2, 4), A, X, scheme=scheme, timeout=30)
        assert np.array_equal(y, F.matmul(A, X)) and report.rejected == {}


@pytest.mark.bounded(20)
def test_run_on_a_closed_cluster(bounded):
    cluster = ffcode.Cluster(1)
    cluster.close()
    with pytest.raises(ClusterError, match="This cluster is closed"):
        cluster.run(MDS(F, 1, 1), A, X)
    assert not issubclass(ClusterError, JobFailed) and issubclass(JobFailed, ClusterError)


# -- Faults(...) -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["slowdown", "link_rate", "crash_after", "hang_after"])
@pytest.mark.parametrize("given", [[1, 2], (1,), "0:2", 3, None], ids=repr)
def test_faults_not_a_mapping(name, given):
    with pytest.raises(TypeError, match=rf"Faults '{name}' must be a mapping of worker to "
                                        rf"value, not {type(given).__name__}"):
        Faults(**{name: given})


@pytest.mark.parametrize("name,value", [("slowdown", 2), ("link_rate", 100.0),
                                        ("crash_after", 1), ("hang_after", 0)])
@pytest.mark.parametrize("worker", [1.0, "0", True, None, np.float64(1)], ids=repr)
def test_faults_worker_not_an_integer(name, value, worker):
    with pytest.raises(TypeError, match=rf"'{name} worker' must be an integer"):
        Faults(**{name: {worker: value}})


@pytest.mark.parametrize("name,value", [("slowdown", 2), ("link_rate", 100.0),
                                        ("crash_after", 1), ("hang_after", 0)])
def test_faults_negative_worker(name, value):
    with pytest.raises(ValueError, match=rf"Faults '{name}' needs workers >= 0 .* not -1: "):
        Faults(**{name: {-1: value}})


@pytest.mark.parametrize("value", [0.5, 0, 0.999, -2], ids=repr)
def test_faults_slowdown_below_one(value):
    with pytest.raises(ValueError, match=rf"Faults 'slowdown' needs workers >= 0 and values "
                                         rf">= 1.0, not 0: {float(value)}"):
        Faults(slowdown={0: value})


@pytest.mark.parametrize("value", [0, 0.0, -1, -1e-9], ids=repr)
def test_faults_link_rate_not_positive(value):
    with pytest.raises(ValueError, match=r"Faults 'link_rate' needs workers >= 0 and values "
                                         r"> 0, not 2: "):
        Faults(link_rate={2: value})


@pytest.mark.parametrize("name", ["slowdown", "link_rate"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")],
                         ids=repr)
def test_faults_rates_not_finite(name, value):
    with pytest.raises(ValueError, match=rf"Faults '{name}' values must be finite"):
        Faults(**{name: {0: value}})


@pytest.mark.parametrize("name", ["slowdown", "link_rate"])
@pytest.mark.parametrize("value", [True, False, np.bool_(True), "2", None, [2], 2j],
                         ids=repr)
def test_faults_rates_not_numbers(name, value):
    with pytest.raises(TypeError, match=rf"Faults '{name}' values must be numbers, not "
                                        rf"{type(value).__name__}"):
        Faults(**{name: {0: value}})


@pytest.mark.parametrize("name", ["crash_after", "hang_after"])
@pytest.mark.parametrize("value", [-1, -5], ids=repr)
def test_faults_counts_negative(name, value):
    with pytest.raises(ValueError, match=rf"Faults '{name}' needs workers >= 0 and values "
                                         rf">= 0, not 1: {value}"):
        Faults(**{name: {1: value}})


@pytest.mark.parametrize("name", ["crash_after", "hang_after"])
@pytest.mark.parametrize("value", [1.0, 1.5, math.nan, True, "1", None], ids=repr)
def test_faults_counts_not_integers(name, value):
    with pytest.raises(TypeError, match=rf"'{name}' must be an integer, not "
                                        rf"{type(value).__name__}"):
        Faults(**{name: {1: value}})


@pytest.mark.parametrize("delay", [0.5, "ab", (0.5,), (1, 2, 3), [], {0: 1}],
                         ids=repr)
def test_faults_delay_not_a_pair(delay):
    with pytest.raises(TypeError, match=r"Faults 'delay' must be a pair \(shift, mean\)"):
        Faults(delay=delay)


@pytest.mark.parametrize("delay", [(-0.1, 0), (0, -1), (-1, -1)], ids=repr)
def test_faults_delay_negative(delay):
    with pytest.raises(ValueError, match=r"Faults 'delay' needs shift, mean >= 0"):
        Faults(delay=delay)


@pytest.mark.parametrize("delay", [(math.nan, 0), (0, math.inf), (math.inf, 1)], ids=repr)
def test_faults_delay_not_finite(delay):
    with pytest.raises(ValueError, match=r"Faults 'delay' values must be finite"):
        Faults(delay=delay)


@pytest.mark.parametrize("delay", [(True, 0), (0, False), ("1", 0), (None, 1)], ids=repr)
def test_faults_delay_not_numbers(delay):
    with pytest.raises(TypeError, match=r"Faults 'delay' values must be numbers"):
        Faults(delay=delay)


@pytest.mark.parametrize("seed", [1.5, 2.0, True, "1", None, [1]], ids=repr)
def test_faults_seed_not_an_integer(seed):
    with pytest.raises(TypeError, match=r"'seed' must be an integer"):
        Faults(seed=seed)


@pytest.mark.parametrize("seed", [-1, -2**40], ids=str)
def test_faults_negative_seed(seed):
    with pytest.raises(ValueError, match=rf"Faults 'seed' must be non-negative, not {seed}"):
        Faults(delay=(0.1, 0.1), seed=seed)


def test_faults_valid_edges():
    """The boundary values are accepted."""
    faults = Faults(slowdown={0: 1}, link_rate={0: 1e-3}, crash_after={1: 0},
                    hang_after={2: 0}, delay=(0, 0), seed=0)
    assert faults.slowdown == {0: 1.0} and faults.delay == (0.0, 0.0)
    assert faults.for_worker(0, 2).delays == (0.0, 0.0)
