"""Benchmark ffcode's ZeroMQ runtime (ffcode.Cluster) against raw pyzmq, in one run.

Three measurements, at p = 2**31 - 1 (uint32 elements: 1 MiB = 262144 elements):
1. Packet ingest. Raw baseline: N fresh sender processes (``python -c``, zmq only,
   OPENBLAS_NUM_THREADS=1), each a DEALER connected over ipc (temp dir) to one ROUTER; all
   connect, say "ready" and wait for "go", then each sends K messages of 1 MiB with
   copy=False; the receiver calls recv_multipart(copy=False) until all N*K arrived and
   drops each message. A second raw row ("frames kept") holds every received frame until
   the end, as a decoder must hold its payloads, so that every message lands in fresh
   memory. A third ("checked+copied") checks every payload's elements below p and copies
   it into its row of a reused buffer (the decoder's RankBasis.stage), then drops the
   frame: the least work an exact master does with every byte. A fourth ("own data,
   c+c") does the same while each sender sends its own written data part by part, as a
   worker sends its result, instead of one buffer over and over: the bound for ffcode.
   ffcode: ``Cluster(n_workers=N)`` runs MDS(F, k=N, N) on A (N*m*1024, 1) and
   x (1, 256), scheme "systematic" with m pieces: each worker's local result is m MiB, sent
   as m packets of one 1024x256 piece = 1 MiB, and all N*m packets are needed (k = N). The
   compute is one outer product per worker (a single write of its result). Every transfer
   moves 128 MiB. Rate = (packets - 1) * 1 MiB / (last arrival - first arrival); raw
   arrivals are timed at recv_multipart's return, ffcode's are the report's ``received``
   times (stamped after Decoder.add; the last needed packet completes the decoder, so the
   window ends when the output is decodable). The Decoder runs with defer=True, so
   payload elimination is not part of ``add``, but the master also eliminates one pending
   payload whenever its socket looks idle, inside the window: that time is measured with a
   timing wrapper around Decoder.eliminate (count == 1 calls happen only during ingest)
   and printed, as is report.decode (the rest of the elimination and reading the output,
   after the window). A second ffcode row ("aligned") injects a 0.2 s pause after each
   worker's compute (Faults.delay), so that no worker computes inside the window. Every
   output is checked against F.matmul(A, x).
2. Stop. 8 workers, MDS k = 4, compfs with m = 64 pieces of 256x64 (64 KiB, about 0.5 ms
   of compute each): the output is decodable about halfway through the workers' streams.
   report.stop_latency (per worker: decodable -> the worker's STOPPED ack, on the worker's
   clock) and report.quiet (decodable -> the last message of the job left its worker);
   also the time from the packet that completed the rank to the decodable stamp, which
   neither includes. Every output is checked against F.matmul(A, x).
3. Startup: ``Cluster(n_workers=8)`` construction + ``cluster.wait()`` (closing untimed).

    python bench/bench_runtime.py              # about a minute on 2 cores
    python bench/bench_runtime.py --repeats 3 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import zmq

import ffcode
from benchlib import check, machine_info, n_cores, print_targets, raw_sender, reap, release
from ffcode import Decoder
from ffcode._ext.rankbasis import RankBasis      # the decoder's kernel, for a raw bound

P = 2**31 - 1
MIB = 1 << 20
TOTAL_MIB = 128                 # per transfer, raw and ffcode alike
PIECE_ROWS, PIECE_COLS = 1024, 256      # one 1 MiB packet of uint32
ALIGN_PAUSE = 0.2               # seconds after compute in the "aligned" ffcode rows



def raw_ingest(n_senders: int, count: int, size: int = MIB, keep: bool = False,
               stage: np.ndarray | None = None, distinct: bool = False) -> float:
    """GB/s of a raw pyzmq many-to-one transfer: n_senders fresh processes, count messages
    of size bytes each, timed at the receiver from the first message to the last. With
    keep=True the receiver holds every received frame until the end (as a decoder holds
    its payloads) instead of dropping each one at once. With ``stage`` (a flat uint32
    array, already touched) the receiver checks every message's elements below p and
    copies it into its row of stage, with the decoder's own kernel (RankBasis.stage), and
    drops the frame: the least an exact receiver must do with every byte. With
    ``distinct`` each sender sends its own written count * size bytes part by part, as a
    worker sends its result, instead of one buffer over and over."""
    tmpdir = tempfile.mkdtemp(prefix="bench-rawzmq-")
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    endpoint = f"ipc://{tmpdir}/router"
    router.bind(endpoint)
    senders = [raw_sender(endpoint, count, size, distinct=distinct) for _ in range(n_senders)]
    try:
        idents = []
        while len(idents) < n_senders:
            if not router.poll(30_000):
                raise RuntimeError("raw senders did not connect within 30 s")
            idents.append(router.recv_multipart()[0])
        for ident in idents:
            router.send_multipart([ident, b"go"])
        total = n_senders * count
        kept = []
        if stage is not None:
            rows = RankBasis(np.ones((1, 1), np.uint64), total, P)
            rows.reserve(size // 4, stage)
        frames = router.recv_multipart(copy=False)
        first = time.perf_counter()
        received = len(frames[1])
        for k in range(total):
            if keep:
                kept.append(frames)
            if stage is not None:
                rows.stage(k, np.frombuffer(frames[1].buffer, np.uint32))
            if k == total - 1:
                break
            frames = router.recv_multipart(copy=False)
            received += len(frames[1])
        last = time.perf_counter()
        del kept, frames
        if received != total * size:
            raise RuntimeError(f"raw transfer received {received} bytes, not {total * size}")
        release(router, idents, senders)
    finally:
        reap(senders)
        router.close()
        context.term()
        shutil.rmtree(tmpdir, ignore_errors=True)
    return (total - 1) * size / (last - first) / 1e9


class EliminationClock:
    """Times Decoder.eliminate without changing it: calls with count == 1 are the master's
    idle-time eliminations during ingest; result() eliminates the rest in one call."""

    def __init__(self):
        self.ingest = 0.0
        self.calls = 0
        self._original = Decoder.eliminate
        clock = self

        def eliminate(decoder, count=1):
            start = time.perf_counter()
            try:
                return clock._original(decoder, count)
            finally:
                if count == 1:
                    clock.ingest += time.perf_counter() - start
                    clock.calls += 1
        Decoder.eliminate = eliminate

    def reset(self):
        self.ingest, self.calls = 0.0, 0

    def restore(self):
        Decoder.eliminate = self._original


def ffcode_ingest(cluster, code, A, x, expected, m, faults, clock) -> dict:
    """One ingest job on the cluster: rate, window, elimination inside it, decode time."""
    clock.reset()
    output, report = cluster.run(code, A, x, scheme="systematic", pieces=m, faults=faults)
    if not np.array_equal(output, expected):
        raise SystemExit("ABORT: the runtime's output differs from F.matmul(A, x)")
    if report.received != report.needed or report.rejected or report.stale:
        raise SystemExit(f"ABORT: unexpected ingest job: {report.summary()}")
    arrivals = sorted(p["received"] for w in report.workers for p in w.packets)
    window = arrivals[-1] - arrivals[0]
    return {"gbps": (len(arrivals) - 1) * MIB / window / 1e9, "window_s": window,
            "eliminate_s": clock.ingest, "eliminate_calls": clock.calls,
            "decode_s": report.decode, "packets": len(arrivals)}


def ingest(F, n_workers: int, repeats: int, clock) -> dict:
    """Raw and ffcode rates for n_workers, interleaved rep by rep (median of repeats)."""
    m = TOTAL_MIB // n_workers
    A = F.random((n_workers * m * PIECE_ROWS, 1), seed=n_workers)
    x = F.random((1, PIECE_COLS), seed=100 + n_workers)
    expected = F.matmul(A, x)
    code = ffcode.MDS(F, n_workers, n_workers)
    aligned = ffcode.Faults(delay=(ALIGN_PAUSE / m, 0))
    runs = {"raw": [], "raw_kept": [], "raw_staged": [], "raw_distinct": [], "plain": [],
            "aligned": []}
    staging = np.ones(TOTAL_MIB * MIB // 4, np.uint32)      # touched: no page faults
    with ffcode.Cluster(n_workers=n_workers) as cluster:
        cluster.wait()
        raw_ingest(n_workers, m)                                    # warm-ups
        ffcode_ingest(cluster, code, A, x, expected, m, None, clock)
        for _ in range(repeats):
            runs["raw"].append(raw_ingest(n_workers, m))
            runs["raw_kept"].append(raw_ingest(n_workers, m, keep=True))
            runs["raw_staged"].append(raw_ingest(n_workers, m, stage=staging))
            runs["raw_distinct"].append(raw_ingest(n_workers, m, stage=staging, distinct=True))
            runs["plain"].append(ffcode_ingest(cluster, code, A, x, expected, m, None, clock))
            runs["aligned"].append(ffcode_ingest(cluster, code, A, x, expected, m, aligned,
                                                 clock))
    out = {"n_workers": n_workers, "pieces": m, "raw_gbps": runs["raw"],
           "raw_kept_gbps": runs["raw_kept"], "raw_staged_gbps": runs["raw_staged"],
           "raw_distinct_gbps": runs["raw_distinct"]}
    for kind in ("plain", "aligned"):
        out[kind] = {key: [r[key] for r in runs[kind]] for key in runs[kind][0]}
    return out


def add_cost(F, packets: int = 32) -> dict:
    """Median Decoder.add time (defer=True, as in the runtime) of innovative 1 MiB payloads
    that arrive as the master reads them: np.frombuffer over frames received with
    copy=False (writable); and the same arrays marked read-only."""
    k, m = 8, packets // 8
    code = ffcode.MDS(F, k, k)
    shares = code.encode(F.random((k * m * PIECE_ROWS, 1), seed=5))
    context = zmq.Context()
    sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    sender.bind("inproc://bench-add")
    receiver.connect("inproc://bench-add")
    try:
        received = []
        for w in range(k):
            for j in range(m):
                coeffs = np.ascontiguousarray(np.eye(m, dtype=F.dtype)[j])
                payload = F.random((PIECE_ROWS, PIECE_COLS), seed=10 * w + j)
                sender.send_multipart([coeffs, payload], copy=False)
                frames = receiver.recv_multipart(copy=False)
                coeffs, payload = (np.frombuffer(frame.buffer, F.dtype) for frame in frames)
                received.append((w, j, coeffs, payload.reshape(PIECE_ROWS, PIECE_COLS)))
        out = {}
        for label in ("writable", "read-only"):
            warm = np.ones(k * m * PIECE_ROWS * PIECE_COLS, F.dtype)   # reused, as a Cluster does
            decoder, times = Decoder(shares, m, defer=True, buffer=warm), []
            for worker, index, coeffs, payload in received:
                if label == "read-only":
                    payload = payload.view()
                    payload.flags.writeable = False
                t0 = time.perf_counter()
                if not decoder.add(ffcode.Packet(worker, index, coeffs, payload)):
                    raise SystemExit("ABORT: a systematic packet was not innovative")
                times.append(time.perf_counter() - t0)
            out[label] = statistics.median(times)
        out["frames_writable"] = bool(received[0][3].flags.writeable)
    finally:
        sender.close(linger=0)
        receiver.close(linger=0)
        context.term()
    return out


def stop(F, jobs: int) -> dict:
    """Stop latency and quiet time of compfs jobs stopped mid-stream on 8 workers."""
    n_workers, k, m, rows, cols = 8, 4, 64, 256, 64
    A = F.random((k * m * rows, cols), seed=7)
    x = F.random((cols, cols), seed=8)
    expected = F.matmul(A, x)
    code = ffcode.MDS(F, k, n_workers)
    latencies, per_job, quiet, acks, wasted, fraction, gaps = [], [], [], [], [], [], []
    with ffcode.Cluster(n_workers=n_workers) as cluster:
        cluster.wait()
        cluster.run(code, A, x, scheme="compfs", pieces=m)          # warm-up
        for _ in range(jobs):
            output, report = cluster.run(code, A, x, scheme="compfs", pieces=m)
            if not np.array_equal(output, expected):
                raise SystemExit("ABORT: the runtime's compfs output differs from F.matmul")
            latencies += report.stop_latency
            per_job.append(statistics.median(report.stop_latency))
            quiet.append(report.quiet)
            acks.append(len(report.stop_latency))
            wasted.append(report.wasted_after_stop)
            fraction.append(report.received / (n_workers * m))
            gaps.append(completion_gap(report))
    return {"latencies_s": latencies, "job_median_s": per_job, "quiet_s": quiet, "acks": acks,
            "wasted_after_stop": wasted, "streamed_fraction": fraction,
            "completion_gap_s": gaps, "workers": n_workers, "pieces": m}


def completion_gap(report) -> float:
    """Seconds from the arrival of the packet that completed the rank (its ``received``
    time, stamped after Decoder.add) to the master's decodable stamp, where stop_latency
    and quiet start: decodable = the last share sent + report.compute (both from the
    report; the share loop ends microseconds after the last share_sent)."""
    arrivals = sorted((p["received"], p["innovative"]) for w in report.workers
                      for p in w.packets)
    rank = 0
    for received, innovative in arrivals:
        rank += innovative
        if rank == report.needed:
            break
    decodable = max(w.share_sent for w in report.workers if w.share_sent is not None) + \
        report.compute
    return decodable - received


def startup(repeats: int) -> dict:
    """Seconds to construct Cluster(n_workers=8) and wait for all 8 (closing untimed)."""
    times, closes = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cluster = ffcode.Cluster(n_workers=8)
        try:
            cluster.wait()
            times.append(time.perf_counter() - t0)
        finally:
            t1 = time.perf_counter()
            cluster.close()
            closes.append(time.perf_counter() - t1)
    return {"start_s": times, "close_s": closes}


def spread(values, scale=1.0, spec=".2f") -> str:
    values = [v * scale for v in values]
    return (f"{format(statistics.median(values), spec)} "
            f"({format(min(values), spec)}–{format(max(values), spec)})")


def print_machine(info: dict) -> None:
    print("ffcode runtime benchmark: ZeroMQ over ipc, p = 2^31-1")
    for key, value in info.items():
        print(f"  {key:18} {value}")
    print(f"  note               {n_cores()} cores: 4 or 8 senders (each with a zmq I/O "
          f"thread; ffcode workers also run a compute thread)\n"
          f"                     plus the receiver and its I/O thread oversubscribe them")
    print(f"  load average       {' '.join(f'{v:.2f}' for v in os.getloadavg())} (1, 5, 15 min)")


def part_ingest(F, repeats: int) -> tuple:
    """Part 1: the ingest table and the master's time per payload; returns (rows, {N:
    (ffcode / raw, aligned / raw, checked+copied / raw)}, the Decoder.add costs)."""
    clock = EliminationClock()
    try:
        rows = [ingest(F, n, repeats, clock) for n in (4, 8)]
    finally:
        clock.restore()
    print(f"\n1. Packet ingest: 1 MiB packets over ipc, {TOTAL_MIB} MiB per transfer; GB/s "
          f"(1e9 B/s), median (min–max) of {repeats},\n   each repeat runs the raw rows, ffcode "
          f"and ffcode aligned in turn:")
    print(f"   {'N':>2} {'m':>3} {'raw pyzmq':>17} {'raw, frames kept':>17} "
          f"{'raw, checked+copied':>19} {'raw, own data, c+c':>19} {'ffcode':>17} "
          f"{'ffcode aligned':>17}")
    ratios = {}
    for row in rows:
        raw, staged, distinct = (statistics.median(row[key]) for key in
                                 ("raw_gbps", "raw_staged_gbps", "raw_distinct_gbps"))
        plain, aligned = (statistics.median(row[key]["gbps"]) for key in ("plain", "aligned"))
        ratios[row["n_workers"]] = plain / raw, aligned / raw, staged / raw, distinct / raw
        print(f"   {row['n_workers']:>2} {row['pieces']:>3} {spread(row['raw_gbps']):>17} "
              f"{spread(row['raw_kept_gbps']):>17} {spread(row['raw_staged_gbps']):>19} "
              f"{spread(row['raw_distinct_gbps']):>19} {spread(row['plain']['gbps']):>17} "
              f"{spread(row['aligned']['gbps']):>17}")
        kept = statistics.median(row["raw_kept_gbps"]) / raw
        print(f"          / raw pyzmq: frames kept {kept:.2f}×, checked+copied {staged / raw:.2f}×, own data c+c {distinct / raw:.2f}×, ffcode "
              f"{plain / raw:.2f}×, aligned {aligned / raw:.2f}×")
    print("   raw, checked+copied: the raw receiver doing only what an exact master must do "
          "with every byte\n   (each payload checked below p and copied into a reused "
          "buffer by RankBasis.stage): a bound for ffcode;\n   own data: the same, with each "
          "sender sending its own written data part by part (as a worker sends\n   its result) "
          "instead of one buffer over and over: the bound for what ffcode's workers send")
    print_master_time(rows)
    adds = add_cost(F)
    print(f"   the master's Decoder.add of one innovative 1 MiB payload (median of 32): as "
          f"received (a {'writable' if adds['frames_writable'] else 'read-only'} view of the "
          f"zmq frame) {adds['writable'] * 1e6:.0f} µs,\n   the same arrays marked read-only "
          f"{adds['read-only'] * 1e6:.0f} µs (1 MiB per {adds['writable'] * 1e6:.0f} µs = "
          f"{MIB / adds['writable'] / 1e9:.2f} GB/s)")
    return rows, ratios, adds


def print_master_time(rows: list) -> None:
    print("   ffcode (plain runs), medians: the ingest window, the master's time in idle-time "
          "eliminations inside it,\n   and report.decode (the rest of the elimination and "
          "reading the output, after the window):")
    for row in rows:
        plain = row["plain"]
        share = statistics.median(e / w for e, w in zip(plain["eliminate_s"], plain["window_s"]))
        window, eliminating, decode = (statistics.median(plain[key]) * 1e3 for key in
                                       ("window_s", "eliminate_s", "decode_s"))
        print(f"   N = {row['n_workers']}: window {window:.0f} ms, eliminating {eliminating:.0f} "
              f"ms ({share:.0%}, {statistics.median(plain['eliminate_calls']):.0f} payloads); "
              f"decode {decode:.0f} ms")


def part_stop(F, repeats: int) -> dict:
    """Part 2: stop latency and quiet time, printed; returns stop()'s numbers."""
    stops = stop(F, jobs=max(2 * repeats, 4))
    lat_ms = [v * 1e3 for v in stops["latencies_s"]]
    quiet_ms = [v * 1e3 for v in stops["quiet_s"]]
    jobs = len(stops["quiet_s"])
    print(f"\n2. Stop: {stops['workers']} workers, compfs m = {stops['pieces']} (64 KiB pieces), "
          f"{jobs} jobs; at completion the workers had streamed "
          f"{spread(stops['streamed_fraction'], 100, '.0f')} % of their packets:")
    print(f"   stop latency (every worker of every job: {sum(stops['acks'])} acks of "
          f"{jobs * stops['workers']}): median {statistics.median(lat_ms):.2f} ms, "
          f"p90 {np.percentile(lat_ms, 90):.2f} ms, max {max(lat_ms):.2f} ms")
    print(f"   per-job median stop latency: {spread(stops['job_median_s'], 1e3)} ms")
    gap_ms = [v * 1e3 for v in stops["completion_gap_s"]]
    print(f"   before that: the packet completing the rank -> the decodable stamp: "
          f"{spread(gap_ms)} ms\n   (not in stop_latency or quiet; the master finishes its "
          f"batch and may run one idle-time elimination first)")
    print(f"   master quiet: median {statistics.median(quiet_ms):.2f} ms, max "
          f"{max(quiet_ms):.2f} ms; packets arriving after decodable per job: "
          f"{spread(stops['wasted_after_stop'], 1, '.0f')}")
    return stops


def target_lines(ratios: dict, stops: dict, starts: dict) -> list:
    stop_median = statistics.median(stops["latencies_s"])
    quiet_median = statistics.median(stops["quiet_s"])
    start_median = statistics.median(starts["start_s"])
    return [
        *(check(f"packet ingest, {n} workers: ffcode / raw pyzmq", ratios[n][0], 0.8)
          for n in (4, 8)),
        *(check(f"packet ingest, {n} workers, no compute in the window (aligned) / raw",
                ratios[n][1], 0.8, f"  [raw checked+copied / raw: {ratios[n][2]:.2f}×, with "
                                   f"own data: {ratios[n][3]:.2f}×]")
          for n in (4, 8)),
        check("stop: 2 ms / median stop latency (all workers, all jobs)",
              2e-3 / stop_median, 1, f"  [median {stop_median * 1e3:.2f} ms]"),
        check("stop: 20 ms / median master quiet", 20e-3 / quiet_median, 1,
              f"  [median {quiet_median * 1e3:.2f} ms, max "
              f"{max(stops['quiet_s']) * 1e3:.2f} ms]"),
        check("startup: 1 s / median start of 8 workers", 1 / start_median, 1,
              f"  [median {start_median * 1e3:.0f} ms]"),
    ]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each measurement")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    args = ap.parse_args(argv)
    repeats = max(args.repeats, 1)
    start = time.perf_counter()
    F = ffcode.GF(P)
    info = machine_info()
    print_machine(info)
    rows, ratios, adds = part_ingest(F, repeats)
    stops = part_stop(F, repeats)
    starts = startup(repeats)
    print(f"\n3. Startup: Cluster(n_workers=8) + wait(): {spread(starts['start_s'], 1e3, '.0f')}"
          f" ms over {repeats}; close(): {spread(starts['close_s'], 1e3, '.0f')} ms")
    print()
    lines = target_lines(ratios, stops, starts)
    print_targets(lines, start)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "ingest": rows, "decoder_add_s": adds, "stop": stops,
                       "startup": starts, "targets": [line for _, line in lines]}, f,
                      indent=1, default=str)


if __name__ == "__main__":
    main()
