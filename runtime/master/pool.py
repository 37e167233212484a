"""Local worker processes, started fast and always cleaned up.

The master spawns one fresh interpreter, the fork server, which imports numpy, zmq and
ffcode once and then forks a worker per request (slot numbers on its stdin). Nothing in it
holds a zmq context or BLAS threads, so forking is safe; each worker makes its own context.
The server and its workers form one process group in a new session: Ctrl-C reaches only the
master, and closing the pool kills the whole group. When the master dies, the server's
stdin closes and it removes the master's private directory and takes its workers down with
it; workers also exit when the server dies.

Functions defined in the user's script (``__main__``) reach the workers as multiprocessing's
spawn start method brings them: a worker that needs one runs the script once under the name
``__mp_main__``, so that its ``if __name__ == "__main__":`` block stays off.

The fork server starts a worker or a relay through the runtime's entry points
(``ENTRY``), by name: the master's side never imports the workers'.

>>> importlib.import_module(ENTRY).__name__
'ffcode.runtime.entry'
"""
import importlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import traceback
import time
from typing import IO, cast

from ffcode.errors import ClusterError
from ffcode.runtime.shared.local import IN_POOL, MAIN, main_module

_BOOT = ("import json, os, sys; sys.path[:] = json.loads(os.environ['FFCODE_SYS_PATH']); "
         "from ffcode.runtime.master.pool import serve; serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))")
_LOG_LEVEL = "FFCODE_LOG_LEVEL"     # the master's level for ffcode's loggers
ENTRY = "ffcode.runtime.entry"      # where a worker process and a relay start


class LocalPool:
    """``groups``: for relays, each slot's group size (its relay starts that many workers
    of its own); empty: every slot is a worker."""

    def __init__(self, endpoint, directory, groups=()):
        self.groups = tuple(groups)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", **{IN_POOL: "1", MAIN: json.dumps(main_module()),
                                           _LOG_LEVEL: str(_level())},
                   FFCODE_SYS_PATH=json.dumps([os.path.abspath(p) for p in sys.path]))
        self.server = subprocess.Popen([sys.executable, "-c", _BOOT, endpoint, directory,
                                        str(os.getpid())],
                                       env=env, stdin=subprocess.PIPE, start_new_session=True)
        self._orders = cast(IO[bytes], self.server.stdin)      # a pipe: stdin=PIPE
        self.requested: set[int] = set()    # slots asked for whose HELLO is still due
        self.members: set[int] = set()      # pids admitted and not killed

    def owns(self, pid: int) -> bool:
        """Whether pid is a worker of this pool: a process in the server's group, which only
        the server's forks join (so a HELLO cannot name another process to be killed)."""
        try:
            return pid != self.server.pid and os.getpgid(pid) == self.server.pid
        except (ProcessLookupError, PermissionError, OverflowError):
            return False

    def admit(self, slot, meta, sender):
        """The pid this HELLO comes from, or None: its slot was asked for, and the process
        at the other end of its connection (the kernel's word, ``sender.pid``, never the
        HELLO's) is one of this pool's, not admitted before. Where the kernel gives only the
        uid (BSD, macOS), the HELLO's pid, to the same checks."""
        pid = sender.pid
        if pid is None and sender.uid is not None:
            pid = meta.get("pid")
        if slot not in self.requested or pid is None or pid in self.members or \
                not self.owns(pid):
            return None
        self.requested.discard(slot)
        self.members.add(pid)
        return pid

    @staticmethod
    def node(pid):
        return None                     # this host

    def spawn(self, slot: int):
        """Ask for one more worker, announcing itself with this slot."""
        if self.server.poll() is not None:
            raise ClusterError(f"The local fork server exited with code "
                               f"{self.server.returncode}.")
        self.requested.add(slot)
        size = self.groups[slot] if self.groups else 0
        self._orders.write(f"{slot} {size}\n".encode())
        self._orders.flush()

    def check(self):
        """ClusterError when the fork server died."""
        if self.server.poll() is not None:
            raise ClusterError(f"The local worker pool exited with code "
                               f"{self.server.returncode}; run 'python -c \"import "
                               f"ffcode.runtime.entry\"' to see why.")

    @staticmethod
    def missing() -> str:
        return ""

    @staticmethod
    def gone(pid: int):
        """Why the worker with this pid will not answer ("process exited", "process
        frozen"), or None while it runs."""
        try:                            # os-level reads: a third of open()'s cost
            fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
            try:
                stat = os.read(fd, 4096)
            finally:
                os.close(fd)
            state = stat[stat.rindex(b")") + 2:].split(None, 1)[0].decode()
        except FileNotFoundError:
            return "process exited"
        except OSError:                 # no /proc: existence is all we can tell
            try:
                os.kill(pid, 0)
                return None
            except ProcessLookupError:
                return "process exited"
            except PermissionError:
                return None
        return {"Z": "process exited", "X": "process exited", "T": "process frozen",
                "t": "process frozen"}.get(state)

    def kill(self, pid: int):
        """SIGKILL works on frozen (SIGSTOPped) workers too; the server reaps them."""
        self.members.discard(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self, grace=2.0):
        """Close the server's stdin (it exits and takes its workers along), then make sure:
        kill the whole process group. Relays, told to shut down, are given the grace to
        close their groups first."""
        deadline = time.monotonic() + grace
        while self.groups and time.monotonic() < deadline and \
                any(self.gone(pid) is None for pid in self.members):
            time.sleep(0.01)
        try:
            self._orders.close()
        except OSError:
            pass
        try:
            self.server.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.server.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.server.wait()


def _level() -> int:
    return logging.getLogger("ffcode").getEffectiveLevel()


def serve(endpoint, directory, master):
    """The fork server's loop: one worker per line "slot size" read from stdin (a relay
    with a group of size workers, when size > 0), while the master (pid ``master``) lives;
    when stdin closes (the master closed the pool, or died), the master's directory goes
    too. Its workers log to stderr at the master's level."""
    entry = importlib.import_module(ENTRY)  # numpy, zmq and ffcode, imported once before forking
    entry.prepare(int(os.environ.get(_LOG_LEVEL, logging.WARNING)))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)      # the kernel reaps exited workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = os.getpid()
    for line in sys.stdin:
        if os.getppid() != master:      # the master died: requests it left are void
            break
        slot, size = (int(word) for word in line.split())
        if os.fork() == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            sys.stdin.close()
            try:
                if size:
                    entry.relay(endpoint, size=size, slot=slot, parent=server)
                entry.worker(endpoint, slot=slot, parent=server)
            except BaseException:       # a worker's bug: said, not silent
                traceback.print_exc()
            finally:
                os._exit(1)
    shutil.rmtree(directory, ignore_errors=True)
    os.killpg(0, signal.SIGKILL)        # the master is gone: so are the workers (and we)
