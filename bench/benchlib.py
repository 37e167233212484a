"""What every ffcode benchmark shares: timing, machine description, exact comparison of
results across libraries, ratio verdicts and integer command-line arguments."""
from __future__ import annotations

import argparse
import ast
import gc
import glob
import importlib.util
import operator
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import numpy as np

import ffcode

try:
    import flint
except ImportError:
    sys.exit("python-flint is required: pip install python-flint")
try:
    import galois
except ImportError:
    sys.exit("galois is required: pip install galois")


def n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@dataclass
class Timing:
    """One contender's timed rounds (seconds) and the result of its warm-up call."""
    times: List[float]
    result: object

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass(frozen=True)
class Interleaved:
    """Times the contenders of one configuration in rounds: one warm-up call each (then
    `verify` sees the warm-up results, before any timing), then rounds of one call per
    contender in turn (a, b, c, a, b, c, ...) until `budget` seconds of rounds are spent
    or `max_rounds` have run, never fewer than `min_rounds`. Interleaving exposes every
    contender to the same moments of a noisy machine, so min-to-min ratios hold up. A
    contender whose warm-up took longer than `slow` seconds runs in the first round only:
    a peer that slow is far from any ratio that matters. The garbage collector is off
    during the rounds (as in timeit)."""
    budget: float = 3.0
    min_rounds: int = 3
    max_rounds: int = 15
    slow: float = 5.0

    def __call__(self, calls: Dict[str, Callable[[], object]],
                 verify: Optional[Callable[[Dict[str, object]], None]] = None
                 ) -> Dict[str, Timing]:
        results, warm_up = {}, {}
        for name, fn in calls.items():
            t0 = time.perf_counter()
            results[name] = fn()
            warm_up[name] = time.perf_counter() - t0
        if verify is not None:
            verify(results)
        times: Dict[str, List[float]] = {name: [] for name in calls}
        gc_was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for done in range(1, self.max_rounds + 1):
                for name, fn in calls.items():
                    if done == 1 or warm_up[name] <= self.slow:
                        t0 = time.perf_counter()
                        fn()
                        times[name].append(time.perf_counter() - t0)
                repeating = any(t <= self.slow for t in warm_up.values())
                if not repeating or (done >= self.min_rounds
                                     and time.perf_counter() - start >= self.budget):
                    break
        finally:
            if gc_was_enabled:
                gc.enable()
        return {name: Timing(times[name], results[name]) for name in calls}


@dataclass(frozen=True)
class Timer:
    """One contender alone: a warm-up call, then repeats until `budget` seconds or
    `max_repeats` runs (at least `min_repeats`, or a single one when the warm-up alone
    took longer than `slow` seconds); returns (median seconds, number of repeats, warm-up
    result). Interleaved times several contenders against each other."""
    budget: float = 1.0
    min_repeats: int = 3
    max_repeats: int = 7
    slow: float = 5.0

    def __call__(self, fn: Callable[[], object]):
        timing = Interleaved(self.budget, self.min_repeats, self.max_repeats,
                             self.slow)({"": fn})[""]
        return timing.median, len(timing.times), timing.result


def exact_value(result):
    """A result of ffcode, galois or flint as a Python int (rank) or a uint64 array."""
    if isinstance(result, flint.nmod_mat):
        entries = np.fromiter(map(int, result.entries()), dtype=np.uint64)
        return entries.reshape(result.nrows(), result.ncols())
    if isinstance(result, np.ndarray):
        return np.asarray(result.view(np.ndarray), dtype=np.uint64)
    return int(result)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


def prime_label(p: int) -> str:
    k = p.bit_length()
    return f"2^{k}-{2**k - p}" if k > 20 and 2**k - p < 1000 else str(p)


def fmt(value: Optional[float], spec: str, suffix: str = "") -> str:
    return "—" if value is None else format(value, spec) + suffix


def blas_info() -> str:
    try:
        import threadpoolctl
        pools = [f"{d.get('internal_api')} {d.get('version')} ({d.get('num_threads')} threads, "
                 f"{d.get('architecture')})" for d in threadpoolctl.threadpool_info()
                 if d.get("user_api") == "blas"]
        if pools:
            return "; ".join(pools) + " [threadpoolctl]"
    except ImportError:
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        config = blas.get("openblas configuration")
        return f"{blas.get('name')} {blas.get('version')}" + (f" ({config})" if config else "")
    except Exception:                                   # numpy < 1.25 or an unusual build
        return "unknown (numpy.show_config gives no dict; threadpoolctl not installed)"


SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "bmi2", "adx", "avx512f", "avx512dq", "avx512bw",
              "avx512vl", "avx512ifma", "avx512_vnni", "asimd", "sve", "sve2")


def cpu_flags() -> str:
    """The vector-unit flags of /proc/cpuinfo that matter to the kernels and to BLAS."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next(set(line.split(":", 1)[1].split()) for line in f
                         if line.startswith(("flags", "Features")))
    except (OSError, StopIteration):
        return "unknown (no /proc/cpuinfo)"
    have = [flag for flag in SIMD_FLAGS if flag in flags]
    missing = "" if "avx512f" in flags or "asimd" in flags else "; no avx512f"
    return " ".join(have) + missing


def cpu_seconds(pids) -> Optional[float]:
    """The CPU seconds the processes ``pids`` have spent, every thread of them: the
    scheduler's nanoseconds (/proc/PID/task/TID/schedstat) where the kernel keeps them,
    else user and system clock ticks (/proc/PID/stat: sum differences over many jobs).
    None where there is no /proc, or a process is gone."""
    total = 0.0
    for pid in pids:
        seconds = _scheduled(pid)
        if seconds is None:
            seconds = _ticks(pid)
        if seconds is None:
            return None
        total += seconds
    return total


def _scheduled(pid) -> Optional[float]:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total, found = 0, False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
            found = True
        except FileNotFoundError:       # the thread ended, or no schedstat in this kernel
            continue
        except (OSError, IndexError, ValueError):
            return None
    return total / 1e9 if found else None


def _ticks(pid) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def ffcode_kernels() -> str:
    """Which of ffcode's compiled kernels contain 256-bit (ymm: AVX/AVX2) or 512-bit (zmm:
    AVX-512) instructions, as objdump disassembles them. setup.py compiles them with
    -march=native unless FFCODE_PORTABLE=1 was set, so this follows the building CPU."""
    build = "setup.py: -march=native unless FFCODE_PORTABLE=1"
    spec = importlib.util.find_spec("ffcode._ext")
    objdump = shutil.which("objdump")
    if spec is None or not spec.submodule_search_locations:
        return f"{build}; compiled kernels not found"
    if objdump is None or platform.machine() not in ("x86_64", "AMD64"):
        return f"{build}; not inspected (needs objdump on x86-64)"
    wide: Dict[str, List[str]] = {"ymm": [], "zmm": []}
    paths = sorted(glob.glob(os.path.join(spec.submodule_search_locations[0], "*.so")))
    for path in paths:
        code = subprocess.run([objdump, "-d", "--no-show-raw-insn", path],
                              capture_output=True, text=True).stdout
        for register, names in wide.items():
            if f"%{register}" in code:
                names.append(os.path.basename(path).split(".")[0])
    found = {register: f"{len(names)} of {len(paths)} kernels ({', '.join(names)})"
             if names else "none" for register, names in wide.items()}
    return (f"AVX2 (ymm) code in {found['ymm']}, AVX-512 (zmm) in {found['zmm']} "
            f"[objdump; {build}]")


def machine_info() -> Dict[str, object]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    env = {k: os.environ[k] for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS") if k in os.environ}
    return {"python": platform.python_version(), "numpy": np.__version__,
            "blas": blas_info(), "cpu": cpu, "cpu flags": cpu_flags(), "cores": n_cores(),
            "ffcode": getattr(ffcode, "__version__", "?"), "ffcode kernels": ffcode_kernels(),
            "galois": galois.__version__,
            "python-flint": flint.__version__, "flint.ctx.threads": flint.ctx.threads,
            "thread env": env or "none set"}


def print_machine() -> None:
    """The machine description, an indented line per item."""
    for key, value in machine_info().items():
        print(f"  {key:<18} {value}")


def square_options(doc: str, argv, repeats_help: str, repeats: tuple,
                   budget: tuple) -> argparse.Namespace:
    """The command line of a benchmark on n x n operands: --repeats and --quick (512 x 512
    instead of 2048 x 2048, fewer repeats). repeats and budget (the Timer's seconds) are
    pairs (default, with --quick). Returns quick, n, repeats and timer."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=None, help=repeats_help)
    parser.add_argument("--quick", action="store_true", help="512 x 512, fewer repeats")
    args = parser.parse_args(argv)
    return argparse.Namespace(quick=args.quick, n=512 if args.quick else 2048,
                              repeats=args.repeats or repeats[args.quick],
                              timer=Timer(budget=budget[args.quick]))


def check(label: str, ratio: Optional[float], minimum: float, note: str = "") -> tuple:
    if ratio is None:
        return "n/a", f"n/a   {label}: not measured{note}"
    verdict = "PASS" if ratio >= minimum else "MISS"
    return verdict, f"{verdict}  {label}: {ratio:.2f}× (target ≥ {minimum:g}×){note}"


def at_most(label: str, value: float, limit: float, unit: str, note: str = "") -> tuple:
    """A PASS/MISS line in print_targets' format, for a value that must stay below limit."""
    verdict = "PASS" if value <= limit else "MISS"
    return verdict, f"{verdict}  {label}: {value:.2f}{unit} (target ≤ {limit:g}{unit}){note}"


def print_targets(results: List[tuple], start: float) -> None:
    """The verdict lines, then the tally and the run time since start."""
    print("Targets (ratios from this run):")
    for _, line in results:
        print("  " + line)
    verdicts = [v for v, _ in results]
    print(f"\n{verdicts.count('PASS')} PASS, {verdicts.count('MISS')} MISS, "
          f"{verdicts.count('n/a')} n/a; total run time {time.perf_counter() - start:.0f} s")


_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Pow: operator.pow}


def integer_expression(text: str) -> int:
    """An integer written as digits combined with + - * ** (for example 2**61-1)."""
    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return _ARITH[type(node.op)](value(node.left), value(node.right))
        raise ValueError(text)
    try:
        return value(ast.parse(text.strip().replace("^", "**"), mode="eval").body)
    except (SyntaxError, ValueError):
        raise argparse.ArgumentTypeError(f"not an integer expression: {text!r}") from None


def int_list(text: str) -> List[int]:
    return [integer_expression(part) for part in text.split(",") if part.strip()]


def release(router, idents, senders, timeout=30):
    """Tell raw zmq senders (subprocesses) that the transfer is over; wait for them."""
    for ident in idents:
        router.send_multipart([ident, b"done"])
    for sender in senders:
        sender.wait(timeout)


def reap(senders):
    """Kill whatever raw sender still runs (after a failure) and collect it."""
    for sender in senders:
        if sender.poll() is None:
            sender.kill()
            sender.wait()


_SENDER = r"""
import sys, zmq
endpoint, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
distinct = sys.argv[4] == "1"                   # each message its own part of written data
keys = sys.stdin.read().split()                 # CURVE: own public, own secret, receiver's
data = memoryview(bytearray(b"\1") * (size * count) if distinct else bytearray(size))
context = zmq.Context()
dealer = context.socket(zmq.DEALER)
if keys:
    dealer.curve_publickey, dealer.curve_secretkey, dealer.curve_serverkey = map(str.encode, keys)
dealer.linger = 5000
dealer.connect(endpoint)
dealer.send(b"ready")
dealer.recv()                                   # go
for k in range(count):
    dealer.send(data[k * size:(k + 1) * size] if distinct else data, copy=False)
dealer.recv()                                   # done
dealer.close()
context.term()
"""


_RESPONDER = r"""
import sys, zmq
endpoint, parts, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
reply = [bytes(size)] * parts
context = zmq.Context()
dealer = context.socket(zmq.DEALER)
dealer.linger = 1000
dealer.connect(endpoint)
dealer.send(b"ready")
while dealer.recv_multipart()[0] != b"done":
    dealer.send_multipart(reply)
dealer.close()
context.term()
"""


def raw_responder(endpoint, parts, size):
    """A fresh ``python -c`` process (zmq only) with a DEALER at endpoint: it says "ready",
    then answers every message with one of ``parts`` frames of size bytes, until "done"
    (stop it with ``release``)."""
    return subprocess.Popen([sys.executable, "-c", _RESPONDER, endpoint, str(parts),
                             str(size)], env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))


def raw_sender(endpoint, count, size, keys=b"", distinct=False):
    """A fresh ``python -c`` process (zmq only, one BLAS thread) with a DEALER at endpoint:
    it says "ready", waits for "go", sends count messages of size bytes (one buffer, or
    with ``distinct`` each its own part of count * size bytes written beforehand, as a
    worker sends the parts of its result; copy=False) and exits after "done". keys:
    b"own-public own-secret server-public" (z85) for CURVE, handed over on its stdin
    rather than its command line."""
    sender = subprocess.Popen([sys.executable, "-c", _SENDER, endpoint, str(count),
                               str(size), "1" if distinct else "0"], stdin=subprocess.PIPE,
                              env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    sender.stdin.write(keys)
    sender.stdin.close()
    return sender
