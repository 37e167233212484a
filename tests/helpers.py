"""Shared helpers of the ffcode test suite: the primes, the reference oracles and checks."""
import contextlib
import functools
import itertools
import os
import signal
import subprocess
import tempfile

import flint
import galois
import numpy as np

from ffcode import _matmul

# The primes every operation is checked on: tiny, 16-bit, ~20-bit, 31-bit, the largest
# uint32 prime, a Mersenne prime near 2**61 and the largest prime below 2**63.
PRIMES = [2, 3, 65521, 1048573, 2**31 - 1, 4294967291, 2**61 - 1, 9223372036854775783]
BIG_PRIMES = [p for p in PRIMES if p >= 2**32]    # ffcode uses uint64 for these
GALOIS_JIT = 2**31                                # galois computes on Python ints from here


def prime_id(p: int) -> str:
    return f"p={p}"


@functools.lru_cache(maxsize=None)
def galois_field(p: int):
    """The reference field galois.GF(p), built once per p.

    Below 2**31 galois would JIT-compile each of its ufuncs for each field, taking seconds
    apiece; the test arrays are small, so its pure-Python mode is faster overall. Above 2**31
    galois always computes on Python ints.
    """
    if p < GALOIS_JIT:
        return galois.GF(p, compile="python-calculate")
    return galois.GF(p)


def to_galois(p: int, a):
    """a (canonical elements) as an array of galois.GF(p)."""
    a = np.asarray(a)
    return galois_field(p)(a.astype(np.int64 if p < GALOIS_JIT else object))


def as_objects(x) -> np.ndarray:
    """Any array-like of integers (ndarray, galois array, flint matrix, list) as Python ints."""
    if isinstance(x, flint.nmod_mat):
        return np.array([[int(v) for v in row] for row in x.tolist()],
                        dtype=object).reshape(x.nrows(), x.ncols())
    if isinstance(x, galois.FieldArray):
        x = x.view(np.ndarray)
    a = np.asarray(x)
    if a.dtype == object:
        return np.vectorize(int, otypes=[object])(a) if a.size else a.copy()
    return a.astype(object)


def assert_field_array(F, got, expected) -> None:
    """got is a plain ndarray of F.dtype, canonical, and equal to expected exactly."""
    assert type(got) is np.ndarray, type(got)
    assert got.dtype == F.dtype, (got.dtype, F.dtype)
    exp = as_objects(expected)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    g = got.astype(object)
    if g.size:
        assert int(got.max()) < F.p
    if not np.array_equal(g, exp):
        bad = np.argwhere(g != exp)
        i = tuple(bad[0])
        raise AssertionError(f"{len(bad)} of {g.size} entries differ; first at {i}: "
                             f"got {g[i]}, expected {exp[i]} (p = {F.p})")


def assert_output(F, got, expected) -> None:
    """got is expected exactly: an array, or LCC's list of arrays."""
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_field_array(F, g, e)
    else:
        assert_field_array(F, got, expected)


def rand(p: int, shape, seed) -> np.ndarray:
    """Uniform canonical elements, generated independently of F.random."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    return np.random.default_rng(seed).integers(0, p, size=shape, dtype=np.uint64).astype(dtype)


def layouts(a: np.ndarray, seed=0) -> dict:
    """The same values as C-ordered, Fortran-ordered, strided (like A[::2, 1::3]), reversed
    (negative strides) and read-only arrays."""
    ro = np.array(a)
    ro.flags.writeable = False
    out = {"C": np.ascontiguousarray(a), "F": np.asfortranarray(a), "read-only": ro,
           "reversed": np.flip(np.flip(a).copy())}
    if a.ndim:
        big_shape = tuple(2 * s for s in a.shape[:-1]) + (3 * a.shape[-1] + 1,)
        big = np.random.default_rng(seed).integers(0, 2, size=big_shape).astype(a.dtype)
        index = tuple(slice(None, None, 2) for _ in a.shape[:-1]) + (slice(1, None, 3),)
        view = big[index]
        view[...] = a
        out["strided"] = view
    return out


def obj_matmul(p: int, A, B) -> np.ndarray:
    """An independent exact product: numpy object (Python int) arithmetic, reduced mod p."""
    A, B = as_objects(A), as_objects(B)
    if A.shape[1] == 0:
        shape = (A.shape[0],) + B.shape[1:]
        return np.zeros(shape, dtype=object)
    return (A @ B) % p


def to_flint(p: int, A) -> "flint.nmod_mat":
    A = np.asarray(A)
    return flint.nmod_mat(A.shape[0], A.shape[1], [int(v) for v in A.reshape(-1)], p)


def extremes(p: int) -> list:
    """Field elements whose centred value or float64 limbs are largest in magnitude.

    matmul centres each element into (-p/2, p/2] and (for large p) splits it into signed
    limbs of b bits, the lower ones in [-2**(b-1), 2**(b-1)); the inner dimension is blocked
    so that sums of products of such limbs stay exact in float64. The elements here reach
    the largest limbs (and sums of two limbs) of every scheme, on both signs, so that a
    product of them summed over a whole block comes as close to 2**53 as the scheme allows.
    """
    half_p = p // 2
    vals = {0, 1, p - 1, half_p, p - half_p, max(half_p - 1, 0), (half_p + 2) % p}
    for s in _matmul._limb_plans(p):
        for op in (s.left, s.right):
            if op.nlimbs < 2:
                continue
            b = op.bits
            half, base = 1 << (b - 1), 1 << (b * (op.nlimbs - 1))
            # every lower limb at (or next to) its most negative or most positive value;
            # +2**(b-1) too, which a split rounding to nearest may also produce
            for digits in itertools.product((-half, 1 - half, half - 1, half),
                                            repeat=op.nlimbs - 1):
                low = sum(d << (b * i) for i, d in enumerate(digits))
                vals.add((-half_p + (low + half_p) % base) % p)    # and the top limb too
                vals.add((half_p - (half_p - low) % base) % p)
    return sorted(vals)


def worst_values(p: int, s) -> tuple:
    """(row values, column values) among extremes(p) whose limbs are largest for scheme s.

    For each float product of the scheme, the left value with the largest |limb| and the
    right value with the largest |limb| (limb sums included): constant rows and columns of
    these make every product's sum over a block as large as the scheme's split allows.
    The largest limbs are often powers of two, whose sums stay exact past 2**53, so the
    values with the largest odd limbs are taken too.
    """
    dtype = np.uint32 if p < 2**32 else np.uint64
    ex = np.array(extremes(p), dtype=np.uint64).astype(dtype)
    fa = np.abs(s.left.split(p, ex[None, :])[:, 0, :])     # (limbs, values)
    fb = np.abs(s.right.split(p, ex[:, None])[:, :, 0])

    def best(f):
        odd = np.where(f % 2 == 1, f, -1)
        return {int(ex[np.argmax(f)]), int(ex[np.argmax(odd)])}

    rows = set().union(*(best(fa[ia]) for ia, _ in s.products))
    cols = set().union(*(best(fb[ib]) for _, ib in s.products))
    return sorted(rows), sorted(cols)


def flint_product(p: int, A, B) -> np.ndarray:
    """A @ B mod p by python-flint (exact; fast for the large matrices of the suite)."""
    return as_objects(to_flint(p, A) * to_flint(p, B))


def invertible(p: int, n: int, seed) -> np.ndarray:
    """A random invertible n x n matrix: lower unitriangular @ upper with nonzero diagonal."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    if n == 0:
        return np.zeros((0, 0), dtype)
    L = np.tril(rand(p, (n, n), seed), -1) + np.eye(n, dtype=dtype)
    U = np.triu(rand(p, (n, n), (seed, 1)), 1)
    U[np.arange(n), np.arange(n)] = rand(p - 1, n, (seed, 2)) + 1
    return flint_product(p, L, U).astype(dtype)


def low_rank(p: int, m: int, n: int, r: int, seed) -> np.ndarray:
    """A random m x n matrix of rank at most r: (m x r) @ (r x n)."""
    dtype = np.uint32 if p < 2**32 else np.uint64
    if r == 0 or m == 0 or n == 0:
        return np.zeros((m, n), dtype)
    return flint_product(p, rand(p, (m, r), seed), rand(p, (r, n), (seed, 1))).astype(dtype)


def process_state(pid):
    """(state, parent pid) of a process from /proc/PID/stat, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def alive(pid) -> bool:
    """True while pid is a process that is not a zombie."""
    state = process_state(pid)
    return state is not None and state[0] != "Z"


def descendants(pid=None) -> set:
    """The pids of every living process below pid (default: this one), from /proc."""
    import os
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            state = process_state(entry)
            if state is not None and state[0] != "Z":   # zombies are already dead
                parents.setdefault(state[1], []).append(int(entry))
    found, todo = set(), [os.getpid() if pid is None else pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def ray_gone(before: set, timeout: float = 20.0) -> None:
    """After ray.shutdown(): wait until no process below this one but ``before`` is left
    (Ray's take a moment to exit); AssertionError if one still is after timeout seconds."""
    import time
    deadline = time.monotonic() + timeout
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not descendants() - before, "Ray left processes behind"


@contextlib.contextmanager
def local_ray(num_cpus: int):
    """Ray on 127.0.0.1 with num_cpus CPUs and no dashboard, for the block (the test extra
    installs Ray); afterwards no process of it is left."""
    import ray
    before = descendants()
    with outside_source():
        ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()
        ray_gone(before)


@contextlib.contextmanager
def outside_source():
    """Run the block in the temporary directory: Ray puts the driver's working directory on
    its workers' sys.path when it connects, and the repository root holds an ffcode/ without
    the compiled kernels, which would shadow the installed package there."""
    here = os.getcwd()
    os.chdir(tempfile.gettempdir())
    try:
        yield
    finally:
        os.chdir(here)


def row_pieces(y, m) -> np.ndarray:
    """y's rows zero-padded to a multiple of m, as m stacked pieces of Python ints."""
    y = as_objects(y)
    rows = -(-y.shape[0] // m) * m
    padded = np.zeros((rows,) + y.shape[1:], dtype=object)
    padded[:y.shape[0]] = y
    return padded.reshape((m, rows // m) + y.shape[1:])


def reap(procs, grace=0.0):
    """Give each process up to ``grace`` seconds to exit, kill whatever still runs (after a
    failure), and collect every exit status."""
    for proc in procs:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def joined_dealer(endpoint, host):
    """(context, DEALER) connected to a master and announced with a HELLO as a worker that
    claims slot 99 (which a remote master ignores) and this host name."""
    import zmq

    from ffcode.runtime.shared import wire
    from ffcode.runtime.shared.wire import Header, Kind

    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.connect(endpoint)
    dealer.send_multipart(wire.control(Header(Kind.HELLO, 0, 0),
                                       {"slot": 99, "pid": 0, "host": host}))
    return context, dealer


def shared_cluster(n_workers, **options):
    """A module's fixture ``cluster``: local workers started once for the module's tests and
    waited for, closed after them (``cluster = shared_cluster(6, lost_after=60.0)``)."""
    import pytest

    import ffcode

    @pytest.fixture(scope="module")
    def cluster():
        with ffcode.Cluster(n_workers, **options) as c:
            c.wait()
            yield c
    return cluster


def section(text: str, title: str, stop: str = "\n## ") -> str:
    """The part of a Markdown text from the heading line ``title`` to the next ``stop``."""
    start = text.index(f"\n{title}\n")
    end = text.find(stop, start + 1)
    return text[start:end if end >= 0 else len(text)]


def default_ctrl_c():
    """Runs in the child between fork and exec (``preexec_fn``): SIGINT to its default, as a
    shell gives a program in the foreground. A test started as a background job (pytest &,
    nohup) has SIGINT ignored, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def scheme_registered(scheme):
    """A scheme defined in a test, registered for the block (ffcode.schemes.register) and
    unregistered after it."""
    from ffcode.schemes import register, unregister

    try:
        yield register(scheme)
    finally:
        unregister(scheme.value)
