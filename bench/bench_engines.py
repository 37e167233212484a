"""Benchmark ffcode.Cluster's engines, local worker processes and Ray actors (on each of the
Ray engine's transports), against a pure-Ray transport and raw pyzmq, in one run.

Everything at p = 2**31 - 1 (uint32 elements) on N = --workers workers (6; 4 to 8), on
loopback only (Ray keeps to 127.0.0.1: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0). The clusters:
  local          Cluster(N): worker processes on a private ipc socket, plaintext;
  ray            Cluster(N, engine="ray"), the Ray engine's default: actors on the
                 master's own Ray node connect over a private ipc socket (plaintext), the
                 others over tcp with CURVE; on one host, every actor is on that node;
  ray tcp+CURVE  Cluster(N, engine="ray", endpoint="tcp://127.0.0.1:*"): every actor over
                 tcp with CURVE (fresh keys per cluster);
  ray tcp plain  the same with insecure=True: tcp, plaintext (measurement 2 only).
The header prints each cluster's endpoint, whether it holds CURVE keys, and where its
workers were told to connect (a Ray actor's endpoint as its pool records it; the bench
aborts unless all is on loopback and the tcp clusters' workers all use tcp). The bench
starts Ray once, ray.init(address="local", num_cpus=4 N + 2: a CPU for every worker of the
three Ray clusters kept open at once, and room to spare; no dashboard), before the clusters
of measurements 1-3, so that the Ray clusters use that instance (and leave it running when
they close); Ray is shut down at the end. The clusters are started once and kept open while
their jobs alternate, in rounds: every row of a measurement once per round, in its order on
even rounds and reversed on odd ones (A, B, C, then C, B, A: each meets the same noise, and
none always runs right after another); the workers of the clusters not running a job sit
idle. Every round after the first (a warm-up) counts; min and median (min–max) are shown.
1. Job time. MDS(F, k = N - 2, N) for A @ B, A and B n x n (n = 1024; --quick 512), compfs
   with m = 4 pieces, workers N - 2 and N - 1 three times slower (Faults(slowdown=...)), the
   same faults on local, ray and ray tcp+CURVE: report.total (encode + first task sent ->
   decodable + decode + the runtime's default check of the output), min and median of
   2 * repeats jobs per cluster; the median report.compute (first task sent -> decodable)
   is shown too. Every output is checked exactly against F.matmul(A, B).
2. Packet ingest at two packet sizes: 1 MiB (pieces of 1024x256, bandwidth; 128 MiB per
   transfer, --quick 24) and 64 KiB (pieces of 64x256, per-packet cost; 32 MiB per
   transfer, about 500 packets, --quick 8). As in bench_runtime: MDS(F, N, N) on A
   (N*m*rows, 1) and x (1, 256), scheme "systematic" with m pieces, m = the transfer's
   size / N / the packet's size (rounded down): each worker computes one outer product and
   sends it as m packets of one piece, and all N*m are needed. Rate from the report's
   per-packet ``received`` times (stamped after Decoder.add): (packets - 1) / (last -
   first) packets/s, times the packet size for MiB/s. Every output is checked against
   F.matmul(A, x). Rows: local, ray, ray tcp+CURVE, ray tcp plain, then:
   pure Ray: N actors, each computing the same product of its (m*rows, 1) row block of A
   with x and yielding its m pieces from a streaming generator method
   (num_returns="streaming"); the driver takes each generator's next ref (ray.wait on the
   ObjectRefGenerators, then next()), ray.get's the packet and drops it; the rate is
   computed from the driver's arrival times in the same way. ray.get of a 1 MiB packet is
   a zero-copy read-only view into Ray's shared-memory object store (its bytes are not
   read); a 64 KiB one comes inline in the actor's report of the item (objects below Ray's
   default max_direct_call_object_size, 100 KiB, skip that store); ffcode's master checks
   every element below p and copies it into its decoder.
   raw pyzmq, tcp plain and tcp+CURVE: N fresh sender processes (``python -c``, zmq only,
   OPENBLAS_NUM_THREADS=1), each a DEALER connected over tcp to one ROUTER on 127.0.0.1;
   all connect, say "ready" and wait for "go", then each sends its m messages of the
   packet size (one buffer, copy=False); the receiver calls recv_multipart(copy=False)
   until all N*m arrived and drops each message; the rate from its arrival times, in the
   same way. CURVE: a fresh zmq.curve_keypair() for the receiver and one for all senders
   (handed over on their stdin), and a zmq.auth.thread.ThreadAuthenticator that admits
   only that client key (each "ready" is checked to carry it): what CURVE itself allows on
   this host, in the same run. (ffcode's packets carry a header and coefficient frames
   too.) Each round runs all seven rows.
3. Stop, as in bench_runtime: MDS k = N // 2, compfs with m = 64 pieces of 256x64 (64 KiB,
   about 0.5 ms of compute each), so that the output is decodable about halfway through
   the workers' streams; report.stop_latency (per worker: decodable -> its STOPPED ack
   left the worker, on the worker's clock, one host), median over every worker of 2 *
   repeats jobs on local, ray and ray tcp+CURVE. Every output is checked against
   F.matmul(A, x). Pure Ray, after the clusters in each round: each actor computes pieces
   of 256x64 of the same product one at a time and yields each (100 times m of them, so
   that none has finished at the cancel); once the driver has taken k*m packets (where
   ffcode's output is decodable) it calls ray.cancel on every generator and drops the
   packets still arriving unread. Ray ends a cancelled generator of a sync actor at a
   yield (GeneratorExit there); the actor also checks
   ray.get_runtime_context().is_canceled() before every piece, and records which of the
   two it saw first (printed). Latency from the cancel to the actor seeing it (its
   time.time(): what stop_latency measures), and to the generator ending at the driver
   (StopIteration or TaskCancelledError).
4. Start-up: construction + cluster.wait(), then close(), timed apart: the kept clusters
   (one sample each), and without --quick one more Cluster(N) and Cluster(N, engine="ray")
   before them, with Ray running (the bench's instance); and once (not with --quick),
   before the bench starts Ray, a cold Cluster(N, engine="ray"), which calls ray.init
   itself (its time includes starting Ray) and ends Ray when it closes. The bench's own
   ray.init is timed too.
Targets: job time ray / local and ray tcp+CURVE / local at most 1.15x (median
report.total); the median stop latency of ray at most 5 ms; ingest ray / pure Ray at least
5x in packets/s at each packet size; and, no target, ffcode ray tcp+CURVE / raw pyzmq
tcp+CURVE ingest at each size (how close ffcode comes to the CURVE ceiling).
The {nice value: thread count} of one worker process of local and ray is printed: Ray runs
its workers' task thread at nice 15 (ray_config worker_niceness), and with it the threads
that thread starts. The pure-Ray actors are created with num_cpus=0, outside the Ray
clusters' placement groups; on one node a reservation is only bookkeeping (the same worker
processes; Ray sets OMP_NUM_THREADS=1 in both kinds of actor). Each section's header says
how long it took.

    python bench/bench_engines.py              # about three minutes on 2 cores
    python bench/bench_engines.py --quick      # smoke run: smaller jobs, one repeat, no
                                               # cold start (about a minute)
    python bench/bench_engines.py --workers 8 --repeats 3 --json out.json
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import json
import logging
import os
import statistics
import sys
import time

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"    # Ray's node address: 127.0.0.1
try:
    import ray
except ImportError:
    sys.exit("Ray is required: pip install ray")
import numpy as np
import zmq
from zmq.auth.thread import ThreadAuthenticator

import ffcode
from bench_runtime import spread
from benchlib import (at_most, check, fmt, machine_info, n_cores, print_targets, raw_sender,
                      reap, release)

P = 2**31 - 1
MIB = 1 << 20
LOOPBACK = "tcp://127.0.0.1:*"
CLUSTERS = {                            # name -> how to make it, for N workers
    "local": lambda n: ffcode.Cluster(n),
    "ray": lambda n: ffcode.Cluster(n, engine="ray"),
    "ray tcp+CURVE": lambda n: ffcode.Cluster(n, engine="ray", endpoint=LOOPBACK),
    "ray tcp plain": lambda n: ffcode.Cluster(n, engine="ray", endpoint=LOOPBACK,
                                              insecure=True),
}
TCP_ONLY = ("ray tcp+CURVE", "ray tcp plain")   # told to listen on tcp, and only there
JOB_CLUSTERS = ("local", "ray", "ray tcp+CURVE")    # in measurements 1 and 3
PIECE_COLS = 256
INGEST = {"1 MiB": (1024, 128, 24),     # packet: rows of 256 uint32; MiB per transfer,
          "64 KiB": (64, 32, 8)}        # and with --quick
STOP_PIECES, STOP_ROWS, STOP_COLS = 64, 256, 64     # 64 KiB stop packets
JOB_PIECES, SLOWDOWN = 4, 3
STALL = 120.0                           # seconds without a pure-Ray packet: abort
RAY_STREAM = 100                        # a pure-Ray stop stream: 100 times m pieces, never
                                        # finished before its cancel
LABELS = {"local": "ffcode local (ipc)", "ray": "ffcode ray (default)",
          "ray tcp+CURVE": "ffcode ray tcp+CURVE", "ray tcp plain": "ffcode ray tcp plain",
          "pure ray": "pure Ray (streaming gen.)", "raw tcp plain": "raw pyzmq tcp plain",
          "raw tcp+CURVE": "raw pyzmq tcp+CURVE"}



def blas_threads():
    """Threads of the OpenBLAS that numpy loaded in this process, or None if unknown."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
        for path in sorted(paths):
            library = ctypes.CDLL(path)
            for name in ("openblas_get_num_threads", "openblas_get_num_threads64_",
                         "scipy_openblas_get_num_threads64_"):
                if hasattr(library, name):
                    return getattr(library, name)()
    except OSError:
        pass
    return None


def thread_niceness(pid) -> dict:
    """{nice value: number of threads} of a process of this host (Linux /proc), or {}."""
    counts = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                nice = int(f.read().rsplit(")", 1)[1].split()[16])    # field 19 of stat
            counts[nice] = counts.get(nice, 0) + 1
    except (OSError, ValueError, IndexError):
        return {}
    return dict(sorted(counts.items()))


@ray.remote(num_cpus=0)
class Streamer:
    """One pure-Ray worker: the same products as ffcode's workers, sent as a stream."""

    def __init__(self, p):
        self.F = ffcode.GF(p)
        self.noticed = None

    def environment(self):
        return {"blas threads": blas_threads(),
                **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}

    @ray.method(num_returns="streaming")
    def whole(self, block, x, pieces):
        """block @ x computed at once, then yielded as `pieces` row pieces."""
        y = self.F.matmul(block, x)
        rows = len(y) // pieces
        for j in range(pieces):
            yield y[j * rows:(j + 1) * rows]

    @ray.method(num_returns="streaming")
    def piece_by_piece(self, block, x, pieces, count):
        """count row pieces of block times x (cycling through its `pieces` pieces), each
        computed and yielded in turn, until cancelled."""
        self.noticed = None
        context = ray.get_runtime_context()
        rows = len(block) // pieces
        try:
            for j in range(count):
                if context.is_canceled():
                    self.noticed = time.time(), "is_canceled()"
                    return
                i = j % pieces
                yield self.F.matmul(block[i * rows:(i + 1) * rows], x)
        except BaseException as e:              # however else Ray ends a cancelled stream
            self.noticed = time.time(), type(e).__name__
            raise

    def noticed_cancel(self):
        """(time.time(), how) when the last piece_by_piece() stream saw its cancel, or
        None."""
        return self.noticed


def ray_stream(generators, nbytes, cancel_after=None) -> dict:
    """Take the generators' packets as they come: ray.get each (checking its size) and drop
    it. With cancel_after, ray.cancel every generator once that many arrived, then drop the
    rest unread until each generator ends. Arrival times are perf_counter, the cancel and
    the ends time.time()."""
    live, arrivals, ends, cancelled, dropped = list(generators), [], {}, None, 0
    last = time.monotonic()
    while live:
        ready, _ = ray.wait(live, num_returns=len(live), timeout=0)
        if not ready:
            ready, _ = ray.wait(live, num_returns=1,
                                timeout=max(STALL - (time.monotonic() - last), 0))
        if not ready:
            raise SystemExit(f"ABORT: the pure-Ray streams sent nothing for {STALL:g} s")
        last = time.monotonic()
        for generator in ready:
            try:
                ref = next(generator)
            except (StopIteration, ray.exceptions.RayError) as end:
                if cancelled is None and not isinstance(end, StopIteration):
                    raise
                ends[generator] = time.time()       # ended, or cancelled (TaskCancelledError)
                live.remove(generator)
                continue
            if cancelled is not None:
                dropped += 1                    # sent before the cancel: dropped unread
                continue
            packet = ray.get(ref)
            arrivals.append(time.perf_counter())
            if packet.nbytes != nbytes:
                raise SystemExit(f"ABORT: a pure-Ray packet of {packet.nbytes} bytes, not "
                                 f"{nbytes}")
            del packet, ref
            if cancel_after is not None and len(arrivals) == cancel_after:
                cancelled = time.time()
                for g in live:
                    ray.cancel(g)
    return {"arrivals": arrivals, "cancelled": cancelled, "dropped": dropped,
            "ends": [ends[g] for g in generators]}


def rate(arrivals, nbytes) -> dict:
    arrivals = sorted(arrivals)
    window = arrivals[-1] - arrivals[0]
    return {"packets_per_s": (len(arrivals) - 1) / window,
            "mib_per_s": (len(arrivals) - 1) * nbytes / MIB / window,
            "window_s": window, "packets": len(arrivals)}


def started(make):
    """(cluster, seconds to construct it and wait for all its workers)."""
    t0 = time.perf_counter()
    cluster = make()
    try:
        cluster.wait()
    except BaseException:
        cluster.close()
        raise
    return cluster, time.perf_counter() - t0


def closed(cluster) -> float:
    t0 = time.perf_counter()
    cluster.close()
    return time.perf_counter() - t0


def in_turn(measures, rep):
    """The measures (clusters, or callables) in their order on even rounds, reversed on odd
    ones: none always runs right after another."""
    items = list(measures.items())
    return items if rep % 2 == 0 else items[::-1]


def exact(output, expected, what):
    if not np.array_equal(output, expected):
        raise SystemExit(f"ABORT: the {what} output differs from F.matmul")


def connections(cluster) -> dict:
    """{endpoint: number of workers} of where the cluster's workers were told to connect:
    a Ray actor's own endpoint (an actor on the master's node may be served over ipc), else
    cluster.endpoint."""
    out = {}
    for handle in cluster.live():
        endpoint = getattr(handle.member, "endpoint", None) or cluster.endpoint
        out[endpoint] = out.get(endpoint, 0) + 1
    return out


def check_loopback(clusters):
    """Every cluster listens on loopback only (ipc, or tcp on 127.0.0.1), and the workers of
    the ones told a tcp endpoint all connect there; CURVE keys exactly where asked for."""
    for name, cluster in clusters.items():
        for endpoint in (cluster.endpoint, *connections(cluster)):
            if not (endpoint.startswith("tcp://127.0.0.1:")
                    or endpoint.startswith("ipc://") and name not in TCP_ONLY):
                raise SystemExit(f"ABORT: the {name} cluster serves at {endpoint}, not only "
                                 f"at {'tcp 127.0.0.1' if name in TCP_ONLY else 'loopback'}")
    if clusters["ray tcp+CURVE"].public_key is None:
        raise SystemExit("ABORT: the ray tcp+CURVE cluster has no CURVE key")
    if clusters["ray tcp plain"].public_key is not None:
        raise SystemExit("ABORT: the ray tcp plain cluster (insecure=True) has a CURVE key")


def jobs(F, clusters, n_workers, n, count) -> dict:
    """report.total and report.compute of straggling compfs jobs, clusters alternating."""
    code = ffcode.MDS(F, n_workers - 2, n_workers)
    A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
    expected = F.matmul(A, B)
    faults = ffcode.Faults(slowdown={n_workers - 2: SLOWDOWN, n_workers - 1: SLOWDOWN})
    runs = {engine: {"total_s": [], "compute_s": [], "verify_s": []} for engine in clusters}
    for rep in range(count + 1):                # the first round warms up
        for engine, cluster in in_turn(clusters, rep):
            output, report = cluster.run(code, A, B, scheme="compfs", pieces=JOB_PIECES,
                                         faults=faults)
            exact(output, expected, f"{engine} cluster's job")
            if rep:
                runs[engine]["total_s"].append(report.total)
                runs[engine]["compute_s"].append(report.compute)
                runs[engine]["verify_s"].append(report.verify)
    return {"code": repr(code), "n": n, "faults": faults.to_dict(), **runs}


def ffcode_ingest(cluster, code, A, x, expected, m, nbytes, engine) -> dict:
    output, report = cluster.run(code, A, x, scheme="systematic", pieces=m)
    exact(output, expected, f"{engine} cluster's ingest")
    if report.received != report.needed or report.rejected or report.stale:
        raise SystemExit(f"ABORT: unexpected ingest job: {report.summary()}")
    return rate([p["received"] for w in report.workers for p in w.packets], nbytes)


def pure_ray_ingest(streamers, blocks, x_ref, m, nbytes) -> dict:
    stream = ray_stream([s.whole.remote(b, x_ref, m) for s, b in zip(streamers, blocks)],
                        nbytes)
    if len(stream["arrivals"]) != len(streamers) * m:
        raise SystemExit(f"ABORT: the pure-Ray stream sent {len(stream['arrivals'])} "
                         f"packets, not {len(streamers) * m}")
    return rate(stream["arrivals"], nbytes)


class OneKey:
    """A ZAP credentials provider that admits a single CURVE public key (z85)."""

    def __init__(self, public: bytes):
        self.public = public

    def callback(self, domain, key) -> bool:
        return key == self.public


def raw_ingest(n_senders, count, nbytes, curve) -> dict:
    """Rate of a raw pyzmq many-to-one transfer over tcp on 127.0.0.1: n_senders fresh
    processes send count messages of nbytes each, timed at the receiver, which drops every
    message. With curve, under fresh CURVE keys (one pair shared by the senders, handed over
    on their stdin), admitted by a ZAP authenticator that knows only that key."""
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    router.rcvtimeo = 30_000                # a sender that died ends the bench, not hangs it
    authenticator, keys, senders = None, b"", []
    try:
        if curve:
            public, secret = zmq.curve_keypair()
            client_public, client_secret = zmq.curve_keypair()
            authenticator = ThreadAuthenticator(context)
            authenticator.start()
            authenticator.configure_curve_callback(
                domain="*", credentials_provider=OneKey(client_public))
            router.curve_secretkey, router.curve_publickey = secret, public
            router.curve_server = True
            keys = b" ".join((client_public, client_secret, public))
        router.bind(LOOPBACK)
        endpoint = router.last_endpoint.decode()
        senders += [raw_sender(endpoint, count, nbytes, keys) for _ in range(n_senders)]
        idents = []
        try:
            while len(idents) < n_senders:
                ident, ready = router.recv_multipart(copy=False)
                if curve and ready.get("User-Id") != client_public.decode():
                    raise SystemExit("ABORT: a raw sender is not CURVE-authenticated")
                idents.append(ident.bytes)
            for ident in idents:
                router.send_multipart([ident, b"go"])
            arrivals, received = [], 0
            for _ in range(n_senders * count):
                frames = router.recv_multipart(copy=False)
                arrivals.append(time.perf_counter())
                received += len(frames[1])
            del frames
        except zmq.Again:
            raise SystemExit(f"ABORT: the raw senders sent nothing for "
                             f"{router.rcvtimeo / 1e3:g} s") from None
        if received != n_senders * count * nbytes:
            raise SystemExit(f"ABORT: the raw transfer received {received} bytes, not "
                             f"{n_senders * count * nbytes}")
        release(router, idents, senders)
    finally:
        reap(senders)
        router.close()
        if authenticator is not None:
            authenticator.stop()
        context.term()
    return rate(arrivals, nbytes)


def ingest(F, clusters, streamers, n_workers, rows, total_mib, repeats) -> dict:
    """Packets/s of ffcode on each cluster, of the pure-Ray stream and of raw pyzmq (tcp
    plain and CURVE), for packets of rows x 256 elements, every row in turn each round."""
    nbytes = rows * PIECE_COLS * 4
    m = total_mib * MIB // nbytes // n_workers
    A = F.random((n_workers * m * rows, 1), seed=n_workers)
    x = F.random((1, PIECE_COLS), seed=100 + n_workers)
    expected = F.matmul(A, x)
    code = ffcode.MDS(F, n_workers, n_workers)
    blocks = [ray.put(A[i * m * rows:(i + 1) * m * rows]) for i in range(n_workers)]
    measures = {engine: functools.partial(ffcode_ingest, cluster, code, A, x, expected, m,
                                          nbytes, engine)
                for engine, cluster in clusters.items()}
    measures["pure ray"] = functools.partial(pure_ray_ingest, streamers, blocks, ray.put(x),
                                             m, nbytes)
    for kind, curve in (("raw tcp plain", False), ("raw tcp+CURVE", True)):
        measures[kind] = functools.partial(raw_ingest, n_workers, m, nbytes, curve)
    runs = {kind: [] for kind in measures}
    for rep in range(repeats + 1):              # the first round warms up
        for kind, measure in in_turn(measures, rep):
            result = measure()
            if rep:
                runs[kind].append(result)
    return {"rows": rows, "bytes": nbytes, "pieces": m, "packets": n_workers * m,
            "rates": {kind: {key: [r[key] for r in results] for key in results[0]}
                      for kind, results in runs.items()}}


def stop(F, clusters, streamers, n_workers, count) -> dict:
    """Stop latencies of compfs jobs decodable mid-stream, and of ray.cancel on the same
    pure-Ray streams, clusters alternating."""
    k, m = n_workers // 2, STOP_PIECES
    A = F.random((k * m * STOP_ROWS, STOP_COLS), seed=7)
    x = F.random((STOP_COLS, STOP_COLS), seed=8)
    expected = F.matmul(A, x)
    code = ffcode.MDS(F, k, n_workers)
    size = m * STOP_ROWS
    blocks = [ray.put(A[(i % k) * size:(i % k + 1) * size]) for i in range(n_workers)]
    x_ref = ray.put(x)
    out = {engine: {"latencies_s": [], "job_median_s": [], "acks": [], "quiet_s": [],
                    "streamed_fraction": []} for engine in clusters}
    out["pure ray"] = {"noticed_s": [], "ended_s": [], "acks": [], "how": {},
                       "dropped": []}
    for rep in range(count + 1):                # the first round warms up
        for engine, cluster in in_turn(clusters, rep):
            output, report = cluster.run(code, A, x, scheme="compfs", pieces=m)
            exact(output, expected, f"{engine} cluster's stop job")
            if not report.stop_latency:
                raise SystemExit(f"ABORT: no worker acknowledged the stop: {report.summary()}")
            if rep:
                row = out[engine]
                row["latencies_s"] += report.stop_latency
                row["job_median_s"].append(statistics.median(report.stop_latency))
                row["acks"].append(len(report.stop_latency))
                row["quiet_s"].append(report.quiet)
                row["streamed_fraction"].append(report.received / (n_workers * m))
        stream = ray_stream([s.piece_by_piece.remote(b, x_ref, m, RAY_STREAM * m)
                             for s, b in zip(streamers, blocks)],
                            STOP_ROWS * STOP_COLS * 4, cancel_after=k * m)
        noticed = [n for n in ray.get([s.noticed_cancel.remote() for s in streamers]) if n]
        if rep:
            row, cancelled = out["pure ray"], stream["cancelled"]
            row["noticed_s"] += [t - cancelled for t, _ in noticed]
            row["ended_s"] += [t - cancelled for t in stream["ends"]]
            row["acks"].append(len(noticed))
            row["dropped"].append(stream["dropped"])
            for _, how in noticed:
                row["how"][how] = row["how"].get(how, 0) + 1
    out.update(workers=n_workers, k=k, pieces=m)
    return out


def startup_samples(n_workers, count) -> dict:
    """Start times (construction + wait) of fresh local and warm Ray clusters, alternating,
    each closed before the next starts; empty lists for the other clusters."""
    out = {key: [] for name in CLUSTERS for key in (name, f"close_{name}")}
    for _ in range(count):
        for name in ("local", "ray"):
            cluster, seconds = started(lambda: CLUSTERS[name](n_workers))
            out[name].append(seconds)
            out[f"close_{name}"].append(closed(cluster))
    return out


def cold_start(n_workers) -> dict:
    """Start and close times of a Ray cluster started before Ray runs: it calls ray.init
    itself, and ends Ray when it closes."""
    cluster, seconds = started(lambda: CLUSTERS["ray"](n_workers))
    closing = closed(cluster)
    if ray.is_initialized():
        raise SystemExit("ABORT: the cold Ray cluster left Ray running after close()")
    return {"ray_cold": [seconds], "close_ray_cold": [closing]}


def informational(label, ratio, note=""):
    """A line in print_targets' format without a target (its tally counts none)."""
    return "info", f"info  {label}: {ratio:.2f}× (no target){note}"


def ms(values, spec=".2f") -> str:
    return spread(values, 1e3, spec)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=6, help="N, 4 to 8 (default 6)")
    ap.add_argument("--repeats", type=int, help="repeats of each measurement; jobs and "
                    "stops run twice as many (default 5, --quick 1)")
    ap.add_argument("--quick", action="store_true", help="smoke run: smaller jobs and "
                    "transfers, one repeat, no cold start")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    args = ap.parse_args(argv)
    if args.json:
        args.json = os.path.abspath(args.json)
    if not 4 <= args.workers <= 8:
        ap.error(f"--workers must be 4 to 8, not {args.workers}")
    return args


def print_machine(n_workers: int, quick: bool) -> dict:
    """The title and the machine; returns the machine description."""
    print(f"ffcode engines benchmark: local processes (ipc) vs Ray actors (default, tcp+CURVE, "
          f"tcp plain) vs pure Ray vs raw pyzmq,\nN = {n_workers}, p = 2^31-1"
          + (" (--quick)" if quick else ""))
    info = machine_info()
    info["ray"] = ray.__version__
    info["pyzmq"] = f"{zmq.pyzmq_version()} (libzmq {zmq.zmq_version()})"
    info["blas threads"] = blas_threads()
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  note               {n_cores()} cores for the master, {n_workers} workers of "
          f"each of {len(CLUSTERS)} clusters, {n_workers} pure-Ray actors\n"
          f"                     and Ray's own processes (local workers run OpenBLAS with "
          f"one thread: the pool sets it)")
    print(f"  load average       {' '.join(f'{v:.2f}' for v in os.getloadavg())} (1, 5, 15 min)")
    return info


def measure_all(F, n_workers: int, n: int, repeats: int, transfers: dict,
                quick: bool) -> dict:
    """Measurements 1 to 3 under a local Ray started here, and the start-up times (4) taken
    on the way: the cold start first (not with --quick), then ray.init."""
    cold = {"ray_cold": [], "close_ray_cold": []} if quick else cold_start(n_workers)
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=4 * n_workers + 2,      # a CPU for every Ray worker
             include_dashboard=False, logging_level=logging.WARNING)
    init_s = time.perf_counter() - t0
    try:
        streamers = [Streamer.remote(P) for _ in range(n_workers)]
        actor_env = ray.get(streamers[0].environment.remote())
        print(f"  in a Ray actor     {actor_env}")
        starts = startup_samples(n_workers, 0 if quick else 1)
        out = measure_clusters(F, streamers, starts, n_workers, n, repeats, transfers)
    finally:
        ray.shutdown()
    starts.update(cold, ray_init=[init_s])
    return dict(out, actor_env=actor_env, starts=starts)


def measure_clusters(F, streamers, starts: dict, n_workers: int, n: int, repeats: int,
                     transfers: dict) -> dict:
    """One cluster of each kind (their start and close times added to starts), then the
    jobs, the ingest of each packet size and the stops, each printed as it ends."""
    with contextlib.ExitStack() as stack:       # closes the clusters in reverse, timed
        clusters = {}
        for name, make in CLUSTERS.items():
            clusters[name], seconds = started(lambda: make(n_workers))
            starts[name].append(seconds)
            stack.callback(lambda c=clusters[name], times=starts[f"close_{name}"]:
                           times.append(closed(c)))
        check_loopback(clusters)
        print_endpoints(clusters)
        endpoints = {name: {"listens": c.endpoint, "workers": connections(c)}
                     for name, c in clusters.items()}
        niceness = {name: thread_niceness(clusters[name].live()[0].pid)
                    for name in ("local", "ray")}
        print(f"  worker threads     {{nice: count}} of a local worker "
              f"{niceness['local']}, of a Ray-engine worker {niceness['ray']}")
        measured = {name: clusters[name] for name in JOB_CLUSTERS}
        t0 = time.perf_counter()
        job = jobs(F, measured, n_workers, n, 2 * repeats)
        print_jobs(job, n_workers, 2 * repeats, time.perf_counter() - t0)
        flows = {}
        for size, (rows, _, _) in INGEST.items():
            t0 = time.perf_counter()
            flows[size] = ingest(F, clusters, streamers, n_workers, rows, transfers[size],
                                 repeats)
            print_ingest(flows[size], size, n_workers, repeats, time.perf_counter() - t0)
        t0 = time.perf_counter()
        stops = stop(F, measured, streamers, n_workers, 2 * repeats)
        print_stop(stops, time.perf_counter() - t0)
    return {"endpoints": endpoints, "niceness": niceness, "job": job, "flows": flows,
            "stops": stops}


def target_lines(job: dict, flows: dict, stops: dict) -> list:
    totals = {name: statistics.median(job[name]["total_s"]) for name in JOB_CLUSTERS}
    packets = {size: {kind: statistics.median(row["packets_per_s"])
                      for kind, row in flow["rates"].items()} for size, flow in flows.items()}
    mib = {size: {kind: statistics.median(row["mib_per_s"])
                  for kind, row in flow["rates"].items()} for size, flow in flows.items()}
    stop_ms = {name: statistics.median(stops[name]["latencies_s"]) * 1e3
               for name in JOB_CLUSTERS}
    return [
        *(at_most(f"job time: {name} / local (median report.total, start-up excluded)",
                  totals[name] / totals["local"], 1.15, "×",
                  f"  [{totals[name]:.3f} s / {totals['local']:.3f} s]")
          for name in ("ray", "ray tcp+CURVE")),
        at_most("stop: ray's median stop latency (all workers, all jobs)",
                stop_ms["ray"], 5, " ms",
                f"  [local {stop_ms['local']:.2f} ms, ray tcp+CURVE "
                f"{stop_ms['ray tcp+CURVE']:.2f} ms]"),
        *(check(f"packet ingest, {size} packets: ffcode ray / pure-Ray stream (packets/s)",
                rates["ray"] / rates["pure ray"], 5,
                f"  [{rates['ray']:.0f} / {rates['pure ray']:.0f} packets/s]")
          for size, rates in packets.items()),
        *(informational(f"packet ingest, {size} packets: ffcode ray tcp+CURVE / raw pyzmq "
                        f"tcp+CURVE (the CURVE ceiling)",
                        rates["ray tcp+CURVE"] / rates["raw tcp+CURVE"],
                        f"  [{rates['ray tcp+CURVE']:.0f} / {rates['raw tcp+CURVE']:.0f} MiB/s]")
          for size, rates in mib.items()),
    ]


def main(argv=None) -> None:
    args = parse_args(argv)
    # Ray puts the driver's working directory on its workers' sys.path: not the repository
    # root, whose ffcode/ lacks the compiled kernels of an installed (not editable) ffcode.
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    n_workers = args.workers
    repeats = max(args.repeats or (1 if args.quick else 5), 1)
    n = 512 if args.quick else 1024
    transfers = {size: quick if args.quick else full
                 for size, (_, full, quick) in INGEST.items()}      # MiB per transfer
    if os.environ.get("RAY_ADDRESS"):
        sys.exit("RAY_ADDRESS is set: unset it, this benchmark starts its own local Ray")
    start = time.perf_counter()
    F = ffcode.GF(P)
    info = print_machine(n_workers, args.quick)
    run = measure_all(F, n_workers, n, repeats, transfers, args.quick)
    print_startup(run["starts"], n_workers)
    print()
    lines = target_lines(run["job"], run["flows"], run["stops"])
    print_targets(lines, start)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "ray_actor": run["actor_env"],
                       "niceness": run["niceness"], "endpoints": run["endpoints"],
                       "workers": n_workers, "quick": args.quick, "jobs": run["job"],
                       "ingest": run["flows"], "stop": run["stops"], "startup": run["starts"],
                       "targets": [line for _, line in lines]}, f, indent=1, default=str)


def print_endpoints(clusters):
    for i, (name, cluster) in enumerate(clusters.items()):
        keys = " (CURVE keys)" if cluster.public_key is not None else ""
        workers = ", ".join(f"{endpoint} x{count}"
                            for endpoint, count in connections(cluster).items())
        print(f"  {'endpoints' if i == 0 else '':18} {name:14} {cluster.endpoint}{keys}; "
              f"workers at {workers}")


def print_jobs(job, n_workers, count, seconds):
    k = n_workers - 2
    print(f"\n1. Job: MDS k = {k} on {n_workers} workers, A @ B with A, B {job['n']}x"
          f"{job['n']}, compfs m = {JOB_PIECES}, workers {k} and {k + 1} {SLOWDOWN}x slower;\n"
          f"   {count} jobs per cluster after a warm-up round, in rounds of one job each "
          f"(order alternating), {seconds:.0f} s; seconds:")
    print(f"   {'cluster':14} {'total min':>9} {'total median (min–max)':>24} "
          f"{'compute median':>14} {'verify median':>13}")
    for engine in JOB_CLUSTERS:
        row = job[engine]
        print(f"   {engine:14} {min(row['total_s']):>9.3f} "
              f"{spread(row['total_s'], 1, '.3f'):>24} "
              f"{statistics.median(row['compute_s']):>14.3f} "
              f"{statistics.median(row['verify_s']):>13.3f}")
    median = {(engine, key): statistics.median(job[engine][key])
              for engine in JOB_CLUSTERS for key in ("total_s", "compute_s")}
    for engine in JOB_CLUSTERS[1:]:
        print(f"   {engine} / local: total median "
              f"{median[engine, 'total_s'] / median['local', 'total_s']:.2f}×, min "
              f"{min(job[engine]['total_s']) / min(job['local']['total_s']):.2f}×; compute "
              f"(tasks sent -> decodable) median "
              f"{median[engine, 'compute_s'] / median['local', 'compute_s']:.2f}×")


def print_ingest(flow, size, n_workers, repeats, seconds):
    rates = flow["rates"]
    print(f"\n2. Packet ingest, {size} packets: {n_workers} workers x {flow['pieces']} packets "
          f"of {flow['rows']}x{PIECE_COLS} ({flow['packets'] * flow['bytes'] / MIB:.0f} MiB "
          f"per transfer), median (min–max)\n   of {repeats}; each round runs every row, in "
          f"this order, then reversed, {seconds:.0f} s:")
    print(f"   {'':26} {'packets/s':>20} {'MiB/s':>20} {'window ms':>20}")
    for kind, row in rates.items():
        print(f"   {LABELS[kind]:26} {spread(row['packets_per_s'], 1, '.0f'):>20} "
              f"{spread(row['mib_per_s'], 1, '.0f'):>20} {ms(row['window_s']):>20}")
    med = {kind: statistics.median(row["packets_per_s"]) for kind, row in rates.items()}
    print(f"   medians: ffcode ray / pure Ray {med['ray'] / med['pure ray']:.2f}×; ffcode "
          f"/ ffcode local: ray {med['ray'] / med['local']:.2f}×, ray tcp+CURVE "
          f"{med['ray tcp+CURVE'] / med['local']:.2f}×, ray tcp plain "
          f"{med['ray tcp plain'] / med['local']:.2f}×;\n   ffcode / raw pyzmq: tcp+CURVE "
          f"{med['ray tcp+CURVE'] / med['raw tcp+CURVE']:.2f}×, tcp plain "
          f"{med['ray tcp plain'] / med['raw tcp plain']:.2f}×; raw tcp+CURVE / raw tcp "
          f"plain {med['raw tcp+CURVE'] / med['raw tcp plain']:.2f}×")


def print_stop(stops, seconds):
    n_workers, m, k = stops["workers"], stops["pieces"], stops["k"]
    jobs_run = len(stops["local"]["acks"])
    print(f"\n3. Stop: {n_workers} workers, MDS k = {k}, compfs m = {m} (64 KiB pieces), "
          f"{jobs_run} jobs per cluster, {seconds:.0f} s; ms:")
    for engine in JOB_CLUSTERS:
        row = stops[engine]
        lat = [v * 1e3 for v in row["latencies_s"]]
        quiet = [v for v in row["quiet_s"] if v is not None]
        print(f"   ffcode {engine:13} stop latency median {statistics.median(lat):.2f}, p90 "
              f"{np.percentile(lat, 90):.2f}, max {max(lat):.2f} ({sum(row['acks'])} acks of "
              f"{jobs_run * n_workers}); per-job median {ms(row['job_median_s'])};\n"
              f"                quiet {ms(quiet) if quiet else '—'}; streamed "
              f"{spread(row['streamed_fraction'], 100, '.0f')} % of the packets")
    row = stops["pure ray"]
    how = ", ".join(f"{what} {count}" for what, count in row["how"].items()) or "none"
    noticed = [v * 1e3 for v in row["noticed_s"]]
    print(f"   pure Ray, ray.cancel once the driver took {k * m} packets: -> the actor saw it "
          f"({sum(row['acks'])} of {jobs_run * n_workers}; by {how}):\n"
          f"                median {fmt(statistics.median(noticed) if noticed else None, '.2f')}"
          f", max {fmt(max(noticed) if noticed else None, '.2f')}; -> the generator ended at the "
          f"driver: "
          f"median {statistics.median(row['ended_s']) * 1e3:.2f}, max "
          f"{max(row['ended_s']) * 1e3:.2f};\n"
          f"                packets already sent, dropped unread per round "
          f"{spread(row['dropped'], 1, '.0f')}")


def print_startup(starts, n_workers):
    print(f"\n4. Start-up of {n_workers} workers: construction + wait(), then close(); ms, "
          f"median (min–max):")
    rows = (("local", f"local Cluster({n_workers})"), ("ray", "ray, Ray running"),
            ("ray tcp+CURVE", "ray tcp+CURVE, Ray running"),
            ("ray tcp plain", "ray tcp plain, Ray running"),
            ("ray_cold", "ray, cold: starts Ray"))
    for key, label in rows:
        if not starts[key]:
            print(f"   {label:30} {'—':>20}   (not with --quick)")
            continue
        print(f"   {label:30} {ms(starts[key], '.0f'):>20}   close "
              f"{ms(starts['close_' + key], '.0f')}"
              + ("  (this close ends Ray)" if key == "ray_cold" else ""))
    print(f"   {'the bench’s own ray.init':30} {ms(starts['ray_init'], '.0f'):>20}")


if __name__ == "__main__":
    main()
