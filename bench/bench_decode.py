"""Benchmark ffcode's rank-tracking Decoder (full-speed coding) at p = 2**31 - 1.

Three measurements, all in one run:
1. Coefficient ingest at m·R = 64 (PolynomialCode a = b = 4 would need R = 16; here MDS
   k = 16, m = 4, N = 32): packets whose payloads are single elements, so the time is the
   rank tracking and the per-packet bookkeeping. Reported as packets per second for
   Decoder.add, and for the bare Cython RankBasis (probe + commit) underneath it.
2. Innovative against non-innovative packets with real payloads (PolynomialCode R = 8,
   m = 4, 2048x2048 product: pieces of 256x512): the median Decoder.add time of each kind.
   Non-innovative packets are genuine linear dependencies (extra combinations from workers
   whose pieces are already spanned), not repeats.
3. Time to result for the same code and data: the time from the arrival of the last
   needed packet (its add, then result()) against the classic decoder (code.decode of R
   whole results), for random-combination packets of finished workers (cfs) and for
   computation-at-full-speed packets (compfs); plus the decoder's total CPU time.

    python bench/bench_decode.py            # full run (about a minute on 2 cores)
    python bench/bench_decode.py --quick    # 1024x1024, fewer repeats
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import ffcode
from benchlib import check, machine_info, print_targets
from ffcode._ext.rankbasis import RankBasis

P = 2**31 - 1


def ingest(F, repeats: int) -> dict:
    """Packets per second through Decoder.add and RankBasis at m·R = 64."""
    k, m, N = 16, 4, 32
    code = ffcode.MDS(F, k, N)
    shares = code.encode(F.random((k * m, 1), seed=1))
    rng = np.random.default_rng(2)
    packets = [ffcode.Packet(int(w), j, F.random(m, rng), F.random((1, 1), rng))
               for j in range(m) for w in rng.permutation(N)]
    powers = code.evaluations.astype(np.uint64)
    coeffs = [pk.coeffs.astype(np.uint64) for pk in packets]
    decoder_rates, basis_rates = [], []
    for _ in range(repeats):
        decoder = ffcode.Decoder(shares, m)
        t0 = time.perf_counter()
        for n, packet in enumerate(packets, 1):
            decoder.add(packet)
            if decoder.complete:
                break
        decoder_rates.append(n / (time.perf_counter() - t0))
        basis = RankBasis(powers, m, F.p)
        t0 = time.perf_counter()
        for n, (c, packet) in enumerate(zip(coeffs, packets), 1):
            if basis.probe(c, packet.worker) >= 0:
                basis.multipliers()
                basis.commit()
                if basis.rank == m * k:
                    break
        basis_rates.append(n / (time.perf_counter() - t0))
    return {"needed": m * k, "decoder_packets_per_s": statistics.median(decoder_rates),
            "rankbasis_packets_per_s": statistics.median(basis_rates)}


def product_setup(F, n: int):
    """PolynomialCode R = 8 on N = 12 workers: its encoding of A, B and local results."""
    code = ffcode.PolynomialCode(F, a=2, b=4, n_workers=12)
    A, B = F.random((n, n), seed=3), F.random((n, n), seed=4)
    shares = code.encode(A, B)
    results = {i: code.compute(shares[i]) for i in range(code.n_workers)}
    return shares, A, B, results


def classic_time(shares, results, repeats: int) -> tuple:
    first = {i: results[i] for i in range(shares.code.recovery_threshold)}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = shares.code.decode(shares, first)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def stream(encoding, m: int, packets) -> dict:
    """Feed packets until complete: per-add times, the last add + result, and the output."""
    decoder = ffcode.Decoder(encoding, m)
    adds = []
    for packet in packets:
        t0 = time.perf_counter()
        innovative = decoder.add(packet)
        adds.append((time.perf_counter() - t0, innovative))
        if decoder.complete:
            break
    t0 = time.perf_counter()
    out = decoder.result()
    result_time = time.perf_counter() - t0
    return {"adds": adds, "last": adds[-1][0] + result_time, "result": result_time,
            "cpu": sum(t for t, _ in adds) + result_time, "packets": len(adds),
            "output": out}


def cfs_packets(F, results, m: int, seed: int):
    """Every finished worker's m random combinations, in a random interleaving."""
    rng = np.random.default_rng(seed)
    packets = [pk for w, y in results.items()
               for pk in ffcode.piece_packets(F, y, m, w, seed=seed * 100 + w)]
    return [packets[i] for i in rng.permutation(len(packets))]


def compfs_packets(code, A, B, m: int, seed: int):
    """(the encoding, every worker's computed blocks (each a packet) in a random
    interleaving)."""
    shares = code.encode(A, B, pieces=m, seed=seed)
    rng = np.random.default_rng(seed)
    packets = [pk for share in shares for pk in code.compute_pieces(share)]
    return shares, [packets[i] for i in rng.permutation(len(packets))]


def non_innovative(F, shares, results, m: int, repeats: int):
    """Median Decoder.add time of innovative packets and of dependent ones, with real
    payloads: once worker 0 has sent its m packets, four further random combinations of
    its pieces (new indices, so not repeats) lie in their span."""
    R = shares.code.recovery_threshold
    innovative, dependent = [], []

    def timed(decoder, packet, into):
        t0 = time.perf_counter()
        accepted = decoder.add(packet)
        into.append(time.perf_counter() - t0)
        return accepted

    for rep in range(repeats):
        decoder = ffcode.Decoder(shares, m)
        for packet in ffcode.piece_packets(F, results[0], m, 0, seed=rep):
            assert timed(decoder, packet, innovative)
        for packet in further_combinations(F, results[0], m, 4, rep):
            assert not timed(decoder, packet, dependent)
        for w in range(1, R):
            for packet in ffcode.piece_packets(F, results[w], m, w, seed=rep):
                timed(decoder, packet, innovative)
    return statistics.median(innovative), statistics.median(dependent)


def further_combinations(F, result, m: int, count: int, seed: int):
    """count more random combinations of worker 0's m pieces, with indices m, m + 1, ..."""
    rng = np.random.default_rng(seed + 7)
    pieces = [pk.payload for pk in ffcode.piece_packets(F, result, m, 0, systematic=True)]
    for j in range(count):
        c = F.random(m, rng)
        yield ffcode.Packet(0, m + j, c, F.combine(c[None, :], pieces)[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1024x1024 product, fewer repeats")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers to FILE")
    args = ap.parse_args(argv)
    n, repeats = (1024, 3) if args.quick else (2048, 5)
    F = ffcode.GF(P)
    start = time.perf_counter()
    print("ffcode decoder benchmark: p = 2^31-1" + (" (--quick)" if args.quick else ""))
    for key, value in machine_info().items():
        print(f"  {key:18} {value}")

    rates = ingest(F, repeats=max(repeats, 7))
    print(f"\n1. Coefficient ingest, m·R = {rates['needed']} (1-element payloads):")
    print(f"   Decoder.add       {rates['decoder_packets_per_s']:10,.0f} packets/s")
    print(f"   RankBasis alone   {rates['rankbasis_packets_per_s']:10,.0f} packets/s")

    shares, A, B, results = product_setup(F, n)
    code = shares.code
    m = 4
    t_inn, t_dep = non_innovative(F, shares, results, m, repeats)
    print(f"\n2. PolynomialCode R = 8, m = 4, {n}x{n}: median Decoder.add of an innovative "
          f"packet {t_inn * 1e3:.2f} ms, of a dependent one {t_dep * 1e6:.1f} µs "
          f"({t_dep / t_inn:.2%})")

    t_classic, expected = classic_time(shares, results, repeats)
    print(f"\n3. Time to result, same code and data (classic decode = code.decode of "
          f"R = 8 whole results: {t_classic * 1e3:.1f} ms):")
    print(f"   {'scheme':8} {'packets':>8} {'last add+result ms':>19} {'of which result ms':>19} "
          f"{'vs classic':>11} {'decoder CPU ms':>15}")
    runs = {}
    for scheme in ("cfs", "compfs"):
        trials = []
        for rep in range(repeats):
            if scheme == "cfs":
                encoding, packets = shares, cfs_packets(F, results, m, rep)
            else:
                encoding, packets = compfs_packets(code, A, B, m, rep)
            run = stream(encoding, m, packets)
            if not np.array_equal(run.pop("output"), expected):
                raise SystemExit(f"ABORT: the {scheme} decoder's result differs from "
                                 f"code.decode's")
            trials.append(run)
        last = statistics.median(r["last"] for r in trials)
        runs[scheme] = {"last_s": last, "result_s": statistics.median(r["result"] for r in trials),
                        "cpu_s": statistics.median(r["cpu"] for r in trials),
                        "packets": statistics.median(r["packets"] for r in trials)}
        r = runs[scheme]
        print(f"   {scheme:8} {r['packets']:8.0f} {last * 1e3:19.1f} {r['result_s'] * 1e3:19.1f} "
              f"{last / t_classic:10.2f}× {r['cpu_s'] * 1e3:15.1f}")

    print()
    results_lines = [
        check("coefficient ingest (Decoder.add) / 100 000 packets/s",
              rates["decoder_packets_per_s"] / 1e5, 1),
        check("non-innovative / innovative packet cost, inverted, / 20 (i.e. < 5 %)",
              t_inn / t_dep / 20, 1),
        *(check(f"{s}: 1.5 × classic decode / (last packet to result)",
                1.5 * t_classic / runs[s]["last_s"], 1) for s in runs),
    ]
    print_targets(results_lines, start)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "n": n, "ingest": rates,
                       "innovative_s": t_inn, "dependent_s": t_dep,
                       "classic_decode_s": t_classic, "runs": runs,
                       "targets": [line for _, line in results_lines]}, f, indent=1,
                      default=str)


if __name__ == "__main__":
    main()
