"""BLAS threads for one call: small float64 products run on one thread.

A multi-threaded dgemm makes its threads wait for one another at every block. On a machine
whose other cores are busy a waiting thread may be descheduled, and a 128 x 128 product
then takes 30 times as long as on one thread (0.45 ms against 13.5 ms, measured with one
of two cores busy). Products below SINGLE_THREAD_WORK multiply-adds take one thread for the
call and give the BLAS its own setting back afterwards; larger ones use every core, where
the threads' work is long enough to ride out a busy core.

The BLAS is reached through threadpoolctl when it is installed (``pip install
ffcode[threads]``); without it every product keeps the BLAS's own thread count.
"""
import functools
import os
import threading
from typing import Literal, Optional

try:
    from threadpoolctl import ThreadpoolController
except ImportError:                     # optional: products then keep the BLAS's threads
    ThreadpoolController = None

SINGLE_THREAD_WORK = 1 << 24            # m k n: a 256^3 product


class _OneThread:
    """A context in which the BLAS libraries loaded so far use one thread. Re-entrant and
    shared by threads: the first to enter saves the settings, the last to leave restores
    them."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """Start afresh: no lock held, no library asked for."""
        self._lock = threading.Lock()
        self._depth = 0
        self._libraries: Optional[list] = None
        self._saved: list = []

    def libraries(self) -> list:
        """The BLAS libraries loaded when first asked (none without threadpoolctl)."""
        if self._libraries is None:
            found = ThreadpoolController().select(user_api="blas") if ThreadpoolController \
                else None
            self._libraries = list(found.lib_controllers) if found else []
        return self._libraries

    def __enter__(self) -> "_OneThread":
        with self._lock:
            if self._depth == 0:
                libraries = self.libraries()
                self._saved = [lib.num_threads for lib in libraries]
                for lib in libraries:
                    lib.set_num_threads(1)
            self._depth += 1
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                for lib, threads in zip(self.libraries(), self._saved):
                    lib.set_num_threads(threads)
        return False


one_thread = _OneThread()
# A child forked while a thread held the lock would wait for it forever: it starts afresh.
os.register_at_fork(after_in_child=one_thread._reset)


def threads() -> int:
    """How many threads a product may use: as many as the BLAS does (so one inside
    one_thread, and one in a worker process started with OPENBLAS_NUM_THREADS=1)."""
    libraries = one_thread.libraries()
    if libraries:
        return max(1, max(lib.num_threads for lib in libraries))
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return min(int(value), cores())
    return cores()


@functools.lru_cache(maxsize=1)
def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def small(work: int) -> bool:
    """Whether a product of work multiply-adds should run on one BLAS thread."""
    return work < SINGLE_THREAD_WORK
