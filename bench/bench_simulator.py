"""The simulator against measured runs: the same injected faults, predicted and measured.

A coded product (PolynomialCode a = b = 2, R = 4, 256 x 256, p = 2**31 - 1) on 6 local
workers with m = 4 pieces. One fault-free compfs run calibrates the compute seconds per
piece (the median over its packets). Then, for each fault setting, ``sim.Model.from_faults``
predicts every scheme's time from the first share sent to decodable (``report.compute``),
and the cluster measures it (median of --repeats runs). The pieces are cheap (under a
millisecond) and the injected pauses tens of milliseconds, the regime the model describes:
compute contention between processes on 2 cores is not modelled.

    python bench/bench_simulator.py             # about 20 s
"""
import argparse
import statistics
import sys
import time

import ffcode
from ffcode import GF, Faults, PolynomialCode, sim
from ffcode.schemes import NAMES

N, R, M, SIZE = 6, 4, 4, 256
SETTINGS = {
    "2 stragglers 3x, pauses 40 ms + Exp(20 ms)":
        Faults(slowdown={4: 3, 5: 3}, delay=(0.04, 0.02), seed=3),
    "pauses 20 ms + Exp(40 ms), no stragglers": Faults(delay=(0.02, 0.04), seed=7),
    "1 straggler 4x, pauses 30 ms + Exp(10 ms), 2 links at 2 MB/s":
        Faults(slowdown={5: 4}, delay=(0.03, 0.01), link_rate={0: 2e6, 1: 2e6}, seed=9),
}


def model(faults, piece_seconds):
    # A share's result is (SIZE/2) x (SIZE/2) uint32 in M row pieces; an uncoded slice is
    # ceil(SIZE/N) rows of A times all of B: that many rows x SIZE columns of work and bytes.
    share = (SIZE // 2) ** 2
    slice_ = -(-SIZE // N) * SIZE
    return sim.Model.from_faults(N, R, M, piece_seconds, faults, piece_bytes=4 * share / M,
                                 uncoded_work=slice_ / share)


def measure(cluster, code, A, B, faults, repeats):
    return {scheme: statistics.median(
                cluster.run(code, A, B, scheme=scheme, pieces=M, faults=faults)[1].compute
                for _ in range(repeats))
            for scheme in NAMES}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    F = GF(2**31 - 1)
    code = PolynomialCode(F, 2, 2, N)
    A, B = F.random((SIZE, SIZE), seed=1), F.random((SIZE, SIZE), seed=2)
    errors = []
    with ffcode.Cluster(N) as cluster:
        for _ in range(2):                      # the second run calibrates
            _, report = cluster.run(code, A, B, scheme="compfs", pieces=M)
        piece = statistics.median(p["compute"] for w in report.workers for p in w.packets)
        print(f"simulator vs measured: {code!r}, {SIZE}x{SIZE}, m = {M}; calibrated "
              f"compute {piece * 1e3:.2f} ms per piece")
        for name, faults in SETTINGS.items():
            predicted = sim.compare(model(faults, piece))
            measured = measure(cluster, code, A, B, faults, args.repeats)
            print(f"\n  {name}\n  {'scheme':<11}{'measured s':>11}{'predicted s':>13}"
                  f"{'error':>8}")
            for scheme in NAMES:
                error = predicted[scheme] / measured[scheme] - 1
                errors.append(abs(error))
                print(f"  {scheme:<11}{measured[scheme]:>11.3f}{predicted[scheme]:>13.3f}"
                      f"{error:>+8.0%}")
    verdict = "PASS" if max(errors) <= 0.2 else "MISS"
    print(f"\n{verdict}  largest error {max(errors):.0%} (target: within 20 %), median "
          f"{statistics.median(errors):.0%}; total run time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
