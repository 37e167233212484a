"""FFLAS-FFPACK as an in-process peer of bench_gfp.py: compiles fflas_peer.cpp once into a
cache directory, loads it through ctypes and wraps one configuration's operands.

The library is linked against the BLAS numpy runs on when its CBLAS names can be found (numpy's
wheels ship an OpenBLAS with decorated 64-bit names: fflas_blas_shim.cpp forwards to it), so
that FFLAS, ffcode and float64 share one BLAS and one thread pool; otherwise against the
system BLAS that pkg-config names for fflas-ffpack.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
PEER_SOURCE = HERE / "fflas_peer.cpp"
SHIM_SOURCE = HERE / "fflas_blas_shim.cpp"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ffcode-bench"
CXXFLAGS = ["-O3", "-march=native", "-DNDEBUG", "-std=c++17", "-shared", "-fPIC"]
INSTALL_HINT = "apt-get install fflas-ffpack pkg-config"


class Unavailable(Exception):
    """FFLAS-FFPACK cannot be timed; the message says why."""


@dataclass(frozen=True)
class Blas:
    """What the peer links: extra compiler arguments and a description for the output."""
    args: List[str]
    sources: List[Path]
    description: str


def _pkg_config(*args: str) -> List[str]:
    try:
        out = subprocess.run(["pkg-config", *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise Unavailable(f"headers not found (pkg-config {args[-1]}); {INSTALL_HINT}")
    return out.stdout.split()


def _numpy_blas() -> Optional[Blas]:
    """numpy's own BLAS (as threadpoolctl finds it loaded), if its CBLAS names are known."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    pools = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
    pools.sort(key=lambda d: "numpy" not in d["filepath"])        # numpy's own first
    for pool in pools:
        path = pool["filepath"]
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", "")):
            if not hasattr(lib, f"{prefix}cblas_dgemm{suffix}"):
                continue
            name = (f"{pool.get('internal_api')} {pool.get('version')} ({Path(path).name}"
                    + (", numpy's)" if "numpy" in path else ")"))
            link = [path, f"-Wl,-rpath,{Path(path).parent}"]
            if not prefix and not suffix:                         # plain CBLAS: link as is
                return Blas(link, [PEER_SOURCE], name)
            # 64_ marks an ILP64 build (64-bit sizes), as numpy's and OpenBLAS's builds do.
            shim = [f"-DFFP_BLAS_PREFIX={prefix}", f"-DFFP_BLAS_SUFFIX={suffix}",
                    f"-DFFP_BLAS_INT={'int64_t' if suffix == '64_' else 'int'}"]
            return Blas(shim + link, [PEER_SOURCE, SHIM_SOURCE],
                        f"{name}, via {prefix}cblas_*{suffix} forwarders")
    return None


def _build(log: Callable[[str], None]) -> tuple:
    """(path of the compiled peer, FFLAS-FFPACK's version, the BLAS it links)."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise Unavailable("no C++ compiler (g++ or $CXX)")
    version = _pkg_config("--modversion", "fflas-ffpack")[0]
    blas = _numpy_blas()
    if blas is None:
        system = _pkg_config("--libs", "fflas-ffpack")
        blas = Blas(system, [PEER_SOURCE], "the system BLAS (" + " ".join(system) + ")")
        libs = []
    else:
        libs = _pkg_config("--libs", "givaro")
    command = [cxx, *CXXFLAGS, *_pkg_config("--cflags", "fflas-ffpack"),
               *map(str, blas.sources), *blas.args, *libs]
    # -march=native: a binary per host, rebuilt when a source, the flags or FFLAS change
    key = hashlib.sha256("\0".join([platform.node(), version, *command]
                                   + [s.read_text() for s in blas.sources])
                         .encode()).hexdigest()[:16]
    target = CACHE / f"fflas_peer-{key}.so"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        log(f"compiling the FFLAS-FFPACK {version} peer once (under a minute) into {target}")
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        done = subprocess.run(command + ["-o", str(partial)], capture_output=True, text=True)
        if done.returncode != 0:
            log_file = target.with_suffix(".log")
            log_file.write_text(" ".join(command) + "\n\n" + done.stderr)
            raise Unavailable(f"compilation failed (the compiler's output is in {log_file})")
        partial.replace(target)                   # atomic: a concurrent run sees all or none
        target.with_suffix(".log").unlink(missing_ok=True)
    return target, version, blas.description


def _loaded_blas() -> set:
    try:
        import threadpoolctl
    except ImportError:
        return set()
    return {f"{d.get('internal_api')} {d.get('version')} ({d['filepath']})"
            for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"}


@dataclass(frozen=True)
class Library:
    """The loaded peer: FFLAS-FFPACK's version and the BLAS it runs on."""
    lib: ctypes.CDLL
    version: str
    blas: str

    def field(self, p: int, products: bool) -> str:
        """The Givaro field FFLAS computes in for p, for products (matmul, matvec) or for
        elimination (rank, solve, inverse)."""
        return self.lib.ffp_field(p, products).decode()

    def peer(self, p: int, products: bool, A: np.ndarray, B: np.ndarray) -> "Peer":
        return Peer(self.lib, p, products, A, B)


def load(log: Callable[[str], None] = print) -> Library:
    """Build (once) and load the peer; raises Unavailable with the reason."""
    path, version, blas = _build(log)
    before = _loaded_blas()
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise Unavailable(f"cannot load {path}: {e}") from None
    brought = sorted(_loaded_blas() - before)     # a system BLAS, resolved by the loader
    if brought:
        blas += ": " + "; ".join(brought)
    vp, u64 = ctypes.c_void_p, ctypes.c_uint64
    lib.ffp_create.restype = vp
    lib.ffp_create.argtypes = [u64, ctypes.c_int, u64, u64, vp, vp]
    lib.ffp_field.restype, lib.ffp_field.argtypes = ctypes.c_char_p, [u64, ctypes.c_int]
    lib.ffp_rank.restype = ctypes.c_int64
    for name in ("ffp_free", "ffp_matmul", "ffp_rank", "ffp_solve", "ffp_inverse"):
        getattr(lib, name).argtypes = [vp]
    lib.ffp_result.argtypes = [vp, vp]
    return Library(lib, version, blas)


class Peer:
    """A (n x n) and B (n x k) in FFLAS's field for p (for products or for elimination),
    converted once. matmul, rank, solve and inverse are the calls to time; value() reads
    the last result back as numpy."""

    def __init__(self, lib: ctypes.CDLL, p: int, products: bool, A: np.ndarray,
                 B: np.ndarray):
        A = np.ascontiguousarray(A, dtype=np.uint64)
        B = np.ascontiguousarray(B, dtype=np.uint64)
        n, k = B.shape
        if A.shape != (n, n):
            raise ValueError(f"A must be {n} x {n}, not {A.shape}")
        self._handle = lib.ffp_create(p, products, n, k, A.ctypes.data, B.ctypes.data)
        if not self._handle:
            raise MemoryError(f"FFLAS peer for p = {p}, n = {n}: ffp_create failed")
        weakref.finalize(self, lib.ffp_free, self._handle)
        self._lib, self._shape = lib, (n, k)

    def matmul(self) -> None:
        """C = A B (fgemm; fgemv when B is one column)."""
        self._lib.ffp_matmul(self._handle)

    def rank(self) -> int:
        return self._lib.ffp_rank(self._handle)

    def solve(self) -> int:
        """C = A^-1 B (fgesv); 0 when A is invertible."""
        return self._lib.ffp_solve(self._handle)

    def inverse(self) -> int:
        """C = A^-1 (Invert; B must be n x n); 0 when A is invertible."""
        return self._lib.ffp_inverse(self._handle)

    def value(self, status: Optional[int] = None) -> object:
        """C as a uint64 array; given the call's status (solve, inverse), the string
        'singular' unless it is 0."""
        if status:
            return "singular"
        out = np.empty(self._shape, dtype=np.uint64)
        self._lib.ffp_result(self._handle, out.ctypes.data)
        return out
