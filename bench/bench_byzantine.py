"""Decoding despite wrong workers (ffcode.decoding.robust): what it costs against plain decoding.

All at p = 2**31 - 1 with PolynomialCode a = b = 2 (R = 4) on N = 8 workers, a 2048 x 2048
product (512 x 512 with --quick); a wrong worker sends random field elements.
1. Whole results: byzantine.decode(shares, results, adversaries=2) against code.decode of the
   same 8 local results, with 0, 1 and 2 wrong workers (1, then 1 and 6): median times and
   the ratio robust / plain (plain decodes from workers 0..3, so it is wrong once worker 1
   is). Previously measured: about 101 ms against 33 ms.
2. Packets: RobustDecoder(shares, pieces=4, adversaries=A), A = 1 and 2, with 0..A wrong
   workers, fed every worker's m = 4 random-combination packets (ffcode.piece_packets) in
   a shuffled order until complete: the median and the worst add, the packets taken
   (at most m·(R + A) with nobody wrong, m·(R + 2A) otherwise) and the time to the output
   (every add, then result()) against a plain ffcode.Decoder fed the same packets.
   Then the decision alone, on 16 x 16 pieces (payloads too small to matter), for
   N = 8, 12, 16 and A = 1, 2, 3 with nobody, A and A + 1 wrong workers; the A + 1 wrong
   workers' packets come first, so it never decides and every later packet runs the whole
   search over sets of up to A workers, which grows exponentially with A.
3. Runtime: one matmul job on ffcode.Cluster(8) per scheme classic, cfs and compfs, with
   adversaries=0, adversaries=2 with workers 1 and 6 corrupt (Faults(corrupt=...,
   "random")), and adversaries=2 with nobody corrupt; each with verify=False and the
   default verify ("auto": Freivalds' check, included in the total). Median of --repeats
   report.total (rounds over all configurations, every other one in reverse order), the
   median ratio to the same scheme and verify with adversaries=0 in the same round,
   report.wrong of each run, and every output checked exactly against F.matmul(A, B).
Times in one run are comparable; the machine is noisy, so compare ratios, not absolute
times across runs.

    python bench/bench_byzantine.py            # about 2-3 minutes on 2 cores (110 to 195 s seen)
    python bench/bench_byzantine.py --quick    # 512 x 512, fewer repeats: well under a minute
"""
import statistics
import sys
import time

import numpy as np

import ffcode
from ffcode import GF, Faults, PolynomialCode
from ffcode.decoding import robust as byzantine
from ffcode.decoding.robust import RobustDecoder
from ffcode.errors import ClusterError
from ffcode.schemes import Scheme

from benchlib import check, fmt, print_machine, print_targets, square_options

P = 2**31 - 1
N, M = 8, 4                     # workers, pieces
WRONG = (1, 6)                  # the workers made wrong, in this order
SCHEMES = (Scheme.CLASSIC, Scheme.CFS, Scheme.COMPFS)


def spoiled(F, results, wrong, seed):
    """The results with those of the ``wrong`` workers replaced by random elements."""
    rng = np.random.default_rng(seed)
    return {w: F.random(y.shape, rng) if w in wrong else y for w, y in results.items()}


def shuffled_packets(F, results, seed):
    """Every worker's M random combinations of its result's pieces, shuffled."""
    rng = np.random.default_rng(seed)
    packets = [pk for w, y in results.items()
               for pk in ffcode.piece_packets(F, y, M, w, seed=seed * 100 + w)]
    return [packets[i] for i in rng.permutation(len(packets))]


def stream(decoder, packets) -> dict:
    """Feed packets until complete: the time of each add, then of result() (None if it
    never completes), and the output."""
    adds = []
    for packet in packets:
        t0 = time.perf_counter()
        decoder.add(packet)
        adds.append(time.perf_counter() - t0)
        if decoder.complete:
            break
    if not decoder.complete:
        return {"adds": adds, "total": sum(adds), "output": None}
    t0 = time.perf_counter()
    output = decoder.result()
    return {"adds": adds, "total": sum(adds) + time.perf_counter() - t0, "output": output}


def whole_case(shares, results, expected, wrong, timer):
    """Part 1, one row: plain and robust decoding of the same results."""
    plain_s, _, plain = timer(lambda: shares.code.decode(shares, results))
    robust_s, _, (robust, found) = timer(
        lambda: byzantine.decode(shares, results, adversaries=2, seed=0))
    print(f"  {len(wrong):>5}  {str(list(wrong)):<8}{plain_s * 1e3:>9.1f}"
          f"{robust_s * 1e3:>10.1f}{robust_s / plain_s:>8.2f}×  "
          f"{'yes' if np.array_equal(plain, expected) else 'no':<7}"
          f"{'yes' if np.array_equal(robust, expected) else 'NO':<7}{found}")
    return {"ratio": robust_s / plain_s,
            "ok": np.array_equal(robust, expected) and found == sorted(wrong)}


def packet_case(shares, results, expected, A, wrong, repeats):
    """Part 2, one row: the robust and the plain decoder on the same shuffled packets,
    medians over ``repeats`` shuffles."""
    code = shares.code
    F, runs = code.F, []
    for rep in range(repeats):
        packets = shuffled_packets(F, spoiled(F, results, wrong, rep), seed=rep)
        decoder = RobustDecoder(shares, M, A, seed=rep)
        robust = stream(decoder, packets)
        plain = stream(ffcode.Decoder(shares, M), packets)
        runs.append({"adds": robust["adds"], "robust": robust["total"],
                     "plain": plain["total"], "found": decoder.wrong,
                     "exact": np.array_equal(robust["output"], expected),
                     "plain exact": np.array_equal(plain["output"], expected)})
    bound = M * (code.recovery_threshold + (2 * A if wrong else A))
    taken = [len(r["adds"]) for r in runs]
    robust_s = statistics.median(r["robust"] for r in runs)
    plain_s = statistics.median(r["plain"] for r in runs)
    ok = all(r["exact"] and set(r["found"]) <= set(wrong) for r in runs)
    found = sorted({tuple(r["found"]) for r in runs})
    print(f"  {A:>2}{len(wrong):>7}{fmt(statistics.median(taken), '.0f'):>7}"
          f"{f'({min(taken)}-{max(taken)})':>9}{'≤ ' + str(bound):>8}"
          f"{statistics.median(t for r in runs for t in r['adds']) * 1e3:>9.2f}"
          f"{statistics.median(max(r['adds']) for r in runs) * 1e3:>9.2f}"
          f"{robust_s * 1e3:>10.1f}{plain_s * 1e3:>9.1f}{robust_s / plain_s:>8.2f}×  "
          f"{sum(r['plain exact'] for r in runs)}/{repeats:<4}"
          f"{'yes' if ok else 'NO':<6}{' '.join(map(str, map(list, found)))}")
    return {"bound": bound, "taken": max(taken), "ratio": robust_s / plain_s, "ok": ok,
            "label": f"A = {A}, {len(wrong)} wrong"}


def decision_case(shares, results, expected, A, n_wrong, repeats):
    """Part 2b, one cell: packets taken, total and worst add ms with n_wrong wrong workers
    (medians over shuffles); completing is then checked to be exact. With more than A
    wrong, their packets come first, so every later packet runs the whole search."""
    F, runs, ok = shares.code.F, [], True
    for rep in range(repeats):
        packets = shuffled_packets(F, spoiled(F, results, range(n_wrong), rep), seed=rep)
        if n_wrong > A:         # every wrong packet first: it can never decide
            packets.sort(key=lambda packet: packet.worker >= n_wrong)
        run = stream(RobustDecoder(shares, M, A, seed=rep), packets)
        ok = ok and (run["output"] is None and n_wrong > A or
                     np.array_equal(run["output"], expected))
        runs.append((len(run["adds"]), run["total"], max(run["adds"])))
    taken, total, worst = (statistics.median(column) for column in zip(*runs))
    return f"{taken:>5.0f}{total * 1e3:>8.1f}{worst * 1e3:>7.1f}", ok, total


def runtime_case(cluster, code, inputs, scheme, A, corrupt, verify):
    """Part 3, one job: (report, output) or the error's message when the combination is
    refused (ValueError: unsupported) or the job fails."""
    try:
        output, report = cluster.run(code, *inputs, scheme=scheme, adversaries=A,
                                     faults=Faults(corrupt={w: "random" for w in corrupt}),
                                     verify=verify, timeout=600)
    except ValueError as e:
        return None, f"unsupported: {e}"
    except ClusterError as e:
        return None, f"FAILED ({type(e).__name__}): {e}"
    return report, output


def part_runtime(code, inputs, expected, repeats):
    """Part 3: every configuration once per round, the order reversed every other round
    (so drift hits all alike); prints the table and returns ({config: (median total,
    median ratio to adversaries=0 of the same round)}, packet-count verdicts, failures)."""
    configs = [(scheme, A, corrupt, verify) for scheme in SCHEMES
               for A, corrupt in ((0, ()), (2, WRONG), (2, ())) for verify in (False, "auto")]
    runs = {config: [] for config in configs}
    with ffcode.Cluster(N) as cluster:
        cluster.wait()
        runtime_case(cluster, code, inputs, "compfs", 0, (), False)     # warm-up, not timed
        for round_ in range(repeats):
            for config in configs[::-1] if round_ % 2 else configs:
                runs[config].append(runtime_case(cluster, code, inputs, *config))
    print(f"  {'scheme':<8}{'A':>2}  {'corrupt':<8}{'verify':<7}{'total s':>8}"
          f"{'(min-max)':>15}{'vs A=0':>8}{'verify ms':>10}{'packets':>8}{'≤':>4}  "
          f"{'exact':<6}report.wrong per run")
    rows, most, failures = {}, {}, []
    for (scheme, A, corrupt, verify), results in runs.items():
        label = f"  {scheme:<8}{A:>2}  {str(list(corrupt)):<8}{str(verify):<7}"
        message = next((m for r, m in results if r is None), None)
        if message:
            print(label + message)
            failures.append((scheme, A, corrupt, verify, message))
            continue
        totals = [r.total for r, _ in results]
        base = runs[scheme, 0, (), verify]
        ratio = (None if any(r is None for r, _ in base) else
                 statistics.median(t / r.total for t, (r, _) in zip(totals, base)))
        rows[scheme, A, corrupt, verify] = statistics.median(totals), ratio
        exact = all(np.array_equal(out, expected) for _, out in results)
        honest = all(set(r.wrong) <= set(corrupt) for r, _ in results)
        verify_ms = (statistics.median(r.verify for r, _ in results) * 1e3
                     if verify else None)
        packets = max(r.received for r, _ in results)
        R = code.recovery_threshold
        bound = (R + 2 * A if scheme == "classic" else
                 M * (R + (2 * A if corrupt else A)))
        print(label + f"{statistics.median(totals):>8.3f}"
                      f"{f'({min(totals):.3f}-{max(totals):.3f})':>15}"
                      f"{fmt(ratio, '.2f', '×'):>8}{fmt(verify_ms, '.1f'):>10}"
                      f"{packets:>8}{bound:>4}  {'yes' if exact else 'NO':<6}"
                      + " ".join(str(r.wrong) for r, _ in results)
                      + ("" if honest else "   <- an honest worker named wrong!"))
        if not (exact and honest):
            failures.append((scheme, A, corrupt, verify, "wrong output or worker"))
        key = scheme, A, corrupt
        most[key] = max(packets, most.get(key, (0,))[0]), bound
    checks = [check(f"runtime {scheme} A={A} corrupt={list(corrupt)}: bound {bound} / "
                    f"most packets received", bound / packets, 1)
              for (scheme, A, corrupt), (packets, bound) in most.items()]
    return rows, checks, failures


def part_whole(F, shares, results, expected, timer) -> list:
    """Part 1: a row per number of wrong workers (0, 1, 2)."""
    print(f"\n1. Whole results, adversaries = 2 (R + 2A = 8): byzantine.decode vs "
          f"code.decode, median ms ({timer.min_repeats}..{timer.max_repeats} repeats)")
    print(f"  {'wrong':>5}  {'workers':<8}{'plain':>9}{'robust':>10}{'ratio':>9}  "
          f"{'plain':<7}{'robust':<7}found wrong")
    print(f"  {'':>5}  {'':<8}{'ms':>9}{'ms':>10}{'':>9}  {'exact':<7}{'exact':<7}")
    return [whole_case(shares, spoiled(F, results, WRONG[:k], k), expected, WRONG[:k], timer)
            for k in range(3)]


def part_packets(shares, results, expected, repeats) -> list:
    """Part 2: a row per A = 1, 2 and number of wrong workers up to A."""
    print(f"\n2. Packets, m = {M}: RobustDecoder vs Decoder on the same shuffled packets "
          f"(medians over {repeats} shuffles; ms)")
    print(f"  {'A':>2}{'wrong':>7}{'taken':>7}{'(range)':>9}{'bound':>8}{'add med':>9}"
          f"{'add max':>9}{'robust':>10}{'plain':>9}{'ratio':>9}  {'plain':<6}"
          f"{'exact':<6}found wrong")
    print(f"  {'':>2}{'':>7}{'':>7}{'':>9}{'':>8}{'':>9}{'':>9}{'to out':>10}"
          f"{'to out':>9}{'':>9}  {'exact':<6}")
    return [packet_case(shares, results, expected, adv, WRONG[:k], repeats)
            for adv in (1, 2) for k in range(adv + 1)]


def part_decision(F, small) -> tuple:
    """Part 2b: the decision alone on small pieces, for N = 8, 12, 16 and A = 1, 2, 3;
    returns ({(N, A, wrong): total seconds}, whether every completed output was exact)."""
    print(f"\n   The decision alone, 16x16 pieces (payloads negligible): packets taken, "
          f"total ms of the adds (and result()), worst add ms; medians over "
          f"{small} shuffle{'s' if small > 1 else ''}")
    print(f"  {'N':>3}{'A':>3} | {'nobody wrong':^20} | {'A wrong':^20} | "
          f"{'A + 1 wrong, first':^20}")
    print(f"  {'':>6} | " + " | ".join(f"{'pkts':>5}{'ms':>8}{'worst':>7}" for _ in range(3)))
    decision, ok = {}, True
    for workers in (8, 12, 16):
        small_code = PolynomialCode(F, 2, 2, workers)
        X, Y = F.random((32 * M, 16), seed=3), F.random((16, 32), seed=4)
        small_shares = small_code.encode(X, Y)
        small_results = {i: small_code.compute(s) for i, s in enumerate(small_shares)}
        small_expected = F.matmul(X, Y)
        for adv in (1, 2, 3):
            if small_code.recovery_threshold + 2 * adv > workers:
                print(f"  {workers:>3}{adv:>3} | unsupported: R + 2A = "
                      f"{small_code.recovery_threshold + 2 * adv} > N")
                continue
            cells = []
            for n_wrong in (0, adv, adv + 1):
                text, cell_ok, total = decision_case(small_shares, small_results,
                                                     small_expected, adv, n_wrong, small)
                ok = ok and cell_ok
                cells.append(text + ("" if cell_ok else " NOT EXACT"))
                decision[workers, adv, n_wrong] = total
            print(f"  {workers:>3}{adv:>3} | " + " | ".join(cells))
    return decision, ok


def print_summary(whole, packet_rows, decision, rows, failures, ok, quick) -> None:
    print("\nSummary:")
    print(f"  whole results: byzantine.decode costs {whole[0]['ratio']:.2f}×, "
          f"{whole[1]['ratio']:.2f}×, {whole[2]['ratio']:.2f}× code.decode with 0, 1, 2 "
          f"wrong workers" + ("" if quick else
                              " (previously measured at 2048x2048: 101 vs 33 ms, 3.1×)"))
    print("  packets: RobustDecoder to the output costs "
          + ", ".join(f"{r['ratio']:.2f}× ({r['label']})" for r in packet_rows)
          + " the plain Decoder on the same packets")
    if (16, 1, 2) in decision and (16, 3, 4) in decision:
        print(f"  decision search, N = 16, A + 1 wrong: {decision[16, 1, 2] * 1e3:.0f} ms "
              f"(A = 1), {decision[16, 2, 3] * 1e3:.0f} ms (A = 2), "
              f"{decision[16, 3, 4] * 1e3:.0f} ms (A = 3) for all 64 packets")
    for scheme in SCHEMES:
        line = [f"{what} {fmt(rows[key][1], '.2f', '×')}"
                for what, key in (("A=2 corrupt", (scheme, 2, WRONG, False)),
                                  ("A=2 clean", (scheme, 2, (), False)),
                                  ("A=2 corrupt, verify auto", (scheme, 2, WRONG, "auto")))
                if key in rows]
        print(f"  runtime {scheme}: " + (", ".join(line) + " its time with adversaries=0"
                                         if line else "not measured"))
    for scheme, A_, corrupt, verify, message in failures:
        print(f"  runtime {scheme} A={A_} corrupt={list(corrupt)} verify={verify}: {message}")
    print(f"  every output exact and no honest worker named wrong: {'yes' if ok else 'NO'}\n")


def main(argv=None):
    run = square_options(__doc__, argv,
                         "runtime jobs and packet shuffles per case (3; 2 with --quick)",
                         repeats=(3, 2), budget=(0.5, 0.3))
    n, repeats = run.n, run.repeats
    start = time.perf_counter()
    print("ffcode Byzantine benchmark: decoding despite wrong workers, p = 2^31-1, "
          f"PolynomialCode R = 4, N = {N}, {n}x{n}" + (" (--quick)" if run.quick else ""))
    print_machine()
    F = GF(P)
    code = PolynomialCode(F, 2, 2, N)
    A, B = F.random((n, n), seed=1), F.random((n, n), seed=2)
    expected = F.matmul(A, B)
    shares = code.encode(A, B)
    results = {i: code.compute(share) for i, share in enumerate(shares)}

    whole = part_whole(F, shares, results, expected, run.timer)
    packet_rows = part_packets(shares, results, expected, repeats)
    decision, decided = part_decision(F, 1 if run.quick else repeats)
    print(f"\n3. Runtime: ffcode.Cluster({N}), {n}x{n} matmul, m = {M}, median of {repeats} "
          f"report.total; corrupt workers send random elements")
    print("   (vs A=0: median over rounds of the total / that of the same scheme and "
          "verify with adversaries=0 in the same round; packets: the most "
          "received until decodable, ≤ the bound: classic R + 2A whole results, the others "
          "m·(R + A) with nobody wrong, m·(R + 2A) otherwise)")
    rows, packet_checks, failures = part_runtime(code, (A, B), expected, repeats)
    ok = (all(w["ok"] for w in whole) and all(r["ok"] for r in packet_rows) and decided
          and not failures)
    targets = [check(f"packets taken, {r['label']}: bound {r['bound']} / most taken",
                     r["bound"] / r["taken"], 1) for r in packet_rows] + packet_checks
    print_summary(whole, packet_rows, decision, rows, failures, ok, run.quick)
    print_targets(targets, start)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
