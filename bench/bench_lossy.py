"""Benchmark coded jobs on lossy links: rateless streaming with rank feedback (compfs, cfs)
against retransmission (classic, uncoded), measured and simulated, in one run.

1. Measured on 6 local workers (ffcode.Cluster(6)): a PolynomialCode product (a = b = 2,
   R = 4, 256 x 256 over p = 2**31 - 1) in m = 8 pieces, every worker's link to the master
   losing the share p of the job's messages both ways (Faults(loss=p)), p = 0, 0.1, 0.2,
   0.3, independent losses. The workers model machines of their own: each piece's compute
   (well under a millisecond) is followed by a pause, 10 ms + Exp(mean 5 ms) on workers
   0-2 and 8x that on workers 3-5 (the stragglers), a new seed a round (the same for every
   scheme and loss of the round, and the same losses: the links are seeded too). compfs
   and cfs deliver by fresh random combinations with rank feedback, classic and uncoded by
   acknowledgement and retransmission (ARQ) with timeouts from the measured round trip;
   the four run in turn, round after round, every output checked against the product
   computed directly. Time: from the first task sent to decodable (``report.compute``),
   min and median over the rounds. Beside it, the simulator's median (ffcode.sim, the same
   pauses and losses, each piece's compute from a loss-free calibration run).
2. Packets: the packets compfs and cfs sent until decodable (``link_packets``: those that
   reached the workers' links, lost ones included) against the least any scheme must
   send, the m·R packets needed divided by 1 - p.
3. Decoding cost, dense against sparse combinations: a worker's fresh combinations mix all
   the pieces it computed of a share; a sparse variant (BATS-like) would mix two. The
   master's decoder (ffcode.decoding.Decoder) takes the m·R packets of a job (MDS, R = 4,
   m = 16, 16 KiB payloads) with dense coefficient vectors and with vectors of two nonzero
   entries, and decodes; seconds per job, min and median, interleaved. Then real jobs:
   cfs on the 6 workers of part 1 at loss 0.2, repair="dense" and repair="sparse" (the
   pieces sent plain, each repair mixing only the lost ones) in turn (A, B, A, B), the
   same faults for both in a round: the master's decoding seconds (every call into the
   job's collector, ``add``, ``eliminate`` and ``result``, timed in the master's thread,
   as the report's ``decode`` counts only what is left once decodable, also shown), and
   the job's time (first task to decodable, ``report.compute``), min and median.
Targets: at loss 0.2, compfs's median time ≥ 1.5x sooner than classic with ARQ; compfs's
and cfs's packets sent ≤ 1.1 x the needed / (1 - p) at every p (medians); each scheme's
median simulated time within 15 % of its measured one at every p; the master's decoding
of cfs's jobs cheaper with sparse repairs than with dense (medians).

    python bench/bench_lossy.py               # about two minutes
    python bench/bench_lossy.py --rounds 3    # shorter
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import ffcode
from ffcode import GF, MDS, Faults, PolynomialCode, sim
from ffcode.decoding import Decoder, collectors
from ffcode.pieces import Packet
from ffcode.schemes import Scheme

from benchlib import Interleaved, at_most, check, print_machine, print_targets

N, R, M, SIZE = 6, 4, 8, 256
LOSSES = (0.0, 0.1, 0.2, 0.3)
SCHEMES = (Scheme.COMPFS, Scheme.CFS, Scheme.CLASSIC, Scheme.UNCODED)
FAST, SLOW = (0.010, 0.005), (0.080, 0.040)     # a piece's pause (shift, mean), s


def faults(p: float, seed: int) -> Faults:
    return Faults(delay={w: FAST if w < 3 else SLOW for w in range(N)}, loss=p, seed=seed)


def model(f: Faults, piece: float) -> sim.Model:
    """The simulator's model of a job with faults ``f``: a share's result is (SIZE/2)^2
    elements in M row pieces; an uncoded slice ceil(SIZE/N) rows of A times all of B."""
    share, slice_ = (SIZE // 2) ** 2, -(-SIZE // N) * SIZE
    return sim.Model.from_faults(N, R, M, piece, f, piece_bytes=4 * share / M,
                                 uncoded_work=slice_ / share, loss=f.loss, seed=f.seed)


def measure(rounds: int) -> tuple:
    """{(scheme, p): [compute seconds]}, {(scheme, p): [packets sent]}, {(scheme, p):
    [simulated seconds]}, the calibrated piece seconds."""
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, N)
    A, B = F.random((SIZE, SIZE), seed=1), F.random((SIZE, SIZE), seed=2)
    want = F.matmul(A, B)
    times: dict = {}
    sent: dict = {}
    simulated: dict = {}
    with ffcode.Cluster(N) as cluster:
        cluster.wait()
        _, report = cluster.run(code, A, B, scheme="compfs", pieces=M)
        piece = statistics.median(p["compute"] for w in report.workers for p in w.packets)
        for r in range(rounds):
            for p in LOSSES:
                for scheme in SCHEMES:
                    f = faults(p, seed=100 + r)
                    out, report = cluster.run(code, A, B, scheme=scheme, pieces=M, faults=f,
                                              timeout=60, wait_for_stops=False)
                    if not np.array_equal(out, want):
                        sys.exit(f"{scheme} at loss {p}: the output is not A·B")
                    times.setdefault((scheme, p), []).append(report.compute)
                    sent.setdefault((scheme, p), []).append(
                        sum(w.link_packets for w in report.workers))
                    simulated.setdefault((scheme, p), []).append(
                        sim.simulate(model(f, piece), scheme))
    return times, sent, simulated, piece


def decoding(rounds: int) -> dict:
    """Seconds to decode a job's m·R packets, with dense and with two-nonzero coefficient
    vectors (the same results), interleaved."""
    F = GF(2**31 - 1)
    m = 16
    code = MDS(F, R, N)
    A, X = F.random((R * m * 4, 64), seed=3), F.random((64, 1024), seed=4)
    encoding = code.encode(A)
    rng = np.random.default_rng(5)
    jobs: dict = {"dense": [], "sparse": []}
    for w in range(R):
        pieces = F.matmul(encoding[w][0], X).reshape(m, -1)    # m pieces of 4 x 1024
        for j in range(m):
            for name in jobs:
                coeffs = np.zeros(m, F.dtype)
                if name == "dense":
                    coeffs[:] = F.random(m, rng)
                else:                       # piece j and one other, nonzero weights
                    other = (j + 1 + int(rng.integers(m - 1))) % m
                    coeffs[[j, other]] = F.add(F.random(2, rng), 1)
                payload = F.matmul(coeffs[None, :], pieces).reshape(4, 1024)
                jobs[name].append(Packet(w, j, coeffs, payload, 4 * m))
    want = F.matmul(A, X)

    def decode(name):
        decoder = Decoder(encoding, m)
        for packet in jobs[name]:
            decoder.add(packet)
        return decoder.result()

    def verify(results):
        for name, result in results.items():
            if not np.array_equal(result, want):
                sys.exit(f"decoding {name} combinations did not give A·X")

    return Interleaved(budget=6.0, min_rounds=rounds, max_rounds=4 * rounds)(
        {name: (lambda name=name: decode(name)) for name in jobs}, verify)


class Timed:
    """A job's collector, the seconds spent in its decoding calls added up."""

    def __init__(self, collector) -> None:
        self._collector, self.seconds = collector, 0.0

    def __getattr__(self, name):
        value = getattr(self._collector, name)
        if name not in ("add", "eliminate", "result"):
            return value

        def timed(*args, **kwargs):
            begun = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - begun
        return timed


def repairs(rounds: int) -> dict:
    """{repair: [(master's decoding seconds, report.decode, report.compute)]}: cfs jobs at
    loss 0.2, dense and sparse repairs in turn, the same faults in a round."""
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, N)
    A, B = F.random((SIZE, SIZE), seed=1), F.random((SIZE, SIZE), seed=2)
    want = F.matmul(A, B)
    made: list = []
    for_job = collectors.for_job

    def timed_for_job(*args, **kwargs):
        made.append(Timed(for_job(*args, **kwargs)))
        return made[-1]
    runs: dict = {"dense": [], "sparse": []}
    collectors.for_job = timed_for_job
    try:
        with ffcode.Cluster(N) as cluster:
            cluster.wait()
            for r in range(rounds):
                for repair in runs:
                    made.clear()
                    out, report = cluster.run(code, A, B, scheme="cfs", pieces=M,
                                              faults=faults(0.2, seed=200 + r),
                                              repair=repair, timeout=60,
                                              wait_for_stops=False)
                    if not np.array_equal(out, want):
                        sys.exit(f"cfs with {repair} repairs: the output is not A·B")
                    runs[repair].append((sum(t.seconds for t in made), report.decode,
                                         report.compute))
    finally:
        collectors.for_job = for_job
    return runs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="rounds of part 1 (default 6)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    print_machine()
    times, sent, simulated, piece = measure(args.rounds)
    lines = []
    print(f"\n1. Measured on {N} local workers, {SIZE}x{SIZE} product, R = {R}, m = {M}; "
          f"workers 3-5 pause 8x as long; compute {piece * 1e3:.2f} ms a piece.")
    print("   seconds to decodable, min / median of "
          f"{args.rounds} rounds (interleaved), and the simulator's median")
    print(f"   {'loss':>5}  " + "  ".join(f"{s:>24}" for s in SCHEMES))
    for p in LOSSES:
        cells = []
        for scheme in SCHEMES:
            t, s = times[scheme, p], statistics.median(simulated[scheme, p])
            cells.append(f"{min(t):.3f}/{statistics.median(t):.3f} sim {s:.3f}")
        print(f"   {p:>5.2f}  " + "  ".join(f"{c:>24}" for c in cells))
    med = {key: statistics.median(value) for key, value in times.items()}
    print("   classic / compfs (medians): " + ", ".join(
        f"{p:g}: {med[Scheme.CLASSIC, p] / med[Scheme.COMPFS, p]:.2f}x" for p in LOSSES))
    lines.append(check("at loss 0.2, classic with ARQ / compfs with feedback (median time)",
                       med[Scheme.CLASSIC, 0.2] / med[Scheme.COMPFS, 0.2], 1.5))
    for p in LOSSES:
        worst = max(abs(statistics.median(simulated[s, p]) / med[s, p] - 1) for s in SCHEMES)
        lines.append(at_most(f"loss {p:g}: the schemes' |simulated / measured - 1|, largest",
                             100 * worst, 15, " %"))
    print("\n2. Packets sent until decodable (lost ones included) / (m·R / (1 - p)), "
          "medians")
    lossy = LOSSES[1:]                  # (without loss nothing is sent but the pieces)
    for scheme in (Scheme.COMPFS, Scheme.CFS):
        ratios = [statistics.median(sent[scheme, p]) / (M * R / (1 - p)) for p in lossy]
        print(f"   {scheme:>7}: " + ", ".join(f"{p:g}: {r:.3f}" for p, r in
                                              zip(lossy, ratios)))
        lines += [at_most(f"{scheme} at loss {p:g}: packets sent / (needed / (1 - p))", r,
                          1.1, "x") for p, r in zip(lossy, ratios)]
    timing = decoding(max(3, args.rounds))
    dense, sparse = timing["dense"], timing["sparse"]
    print(f"\n3. Decoding {R}x16 packets of 16 KiB (MDS, R = {R}): dense "
          f"{dense.min * 1e3:.1f} / {dense.median * 1e3:.1f} ms, two-nonzero sparse "
          f"{sparse.min * 1e3:.1f} / {sparse.median * 1e3:.1f} ms (min / median); "
          f"dense / sparse {dense.median / sparse.median:.2f}x")
    jobs = repairs(args.rounds)
    print(f"   cfs jobs at loss 0.2 ({args.rounds} rounds, interleaved), min / median: "
          f"the master's decoding ms, the report's decode ms, seconds to decodable")
    medians = {}
    for repair, runs in jobs.items():
        cells = []
        for column, scale in zip(zip(*runs), (1e3, 1e3, 1.0)):
            cells.append(f"{min(column) * scale:.2f} / {statistics.median(column) * scale:.2f}")
        medians[repair] = statistics.median(run[0] for run in jobs[repair])
        print(f"   {repair:>7}: " + ";  ".join(cells))
    lines.append(check("at loss 0.2, cfs: the master's decoding, dense / sparse repairs "
                       "(median seconds)", medians["dense"] / medians["sparse"], 1.0))
    print()
    print_targets(lines, start)


if __name__ == "__main__":
    main()
