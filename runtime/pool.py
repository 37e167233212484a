"""Local worker processes, started fast and always cleaned up.

The master spawns one fresh interpreter, the fork server, which imports numpy, zmq and
ffcode once and then forks a worker per request (slot numbers on its stdin). Nothing in it
holds a zmq context or BLAS threads, so forking is safe; each worker makes its own context.
The server and its workers form one process group in a new session: Ctrl-C reaches only the
master, and closing the pool kills the whole group. When the master dies, the server's
stdin closes and it takes its workers down with it; workers also exit when the server dies.
"""
import json
import os
import signal
import subprocess
import sys

_BOOT = ("import json, os, sys; sys.path[:] = json.loads(os.environ['FFCODE_SYS_PATH']); "
         "from ffcode.runtime.pool import serve; serve(sys.argv[1])")


class LocalPool:
    def __init__(self, endpoint):
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1",
                   FFCODE_SYS_PATH=json.dumps([os.path.abspath(p) for p in sys.path]))
        self.server = subprocess.Popen([sys.executable, "-c", _BOOT, endpoint], env=env,
                                       stdin=subprocess.PIPE, start_new_session=True)
        self.requested = set()          # slots asked for whose HELLO is still due

    def spawn(self, slot: int):
        """Ask for one more worker, announcing itself with this slot."""
        if self.server.poll() is not None:
            raise RuntimeError(f"the local fork server exited with code "
                               f"{self.server.returncode}")
        self.requested.add(slot)
        self.server.stdin.write(f"{slot}\n".encode())
        self.server.stdin.flush()

    def failed(self):
        """The fork server's exit code if it died, else None."""
        return self.server.poll()

    @staticmethod
    def gone(pid: int):
        """Why the worker with this pid will not answer ("process exited", "process
        frozen"), or None while it runs."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
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

    @staticmethod
    def kill(pid: int):
        """SIGKILL works on frozen (SIGSTOPped) workers too; the server reaps them."""
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self, grace=2.0):
        """Close the server's stdin (it exits and takes its workers along), then make sure:
        kill the whole process group."""
        try:
            self.server.stdin.close()
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


def serve(endpoint):
    """The fork server's loop: one worker per slot number read from stdin."""
    from ffcode.runtime import worker    # numpy, zmq and ffcode, imported once before forking
    worker.warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)      # the kernel reaps exited workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = os.getpid()
    for line in sys.stdin:
        slot = int(line)
        if os.fork() == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            sys.stdin.close()
            try:
                worker.run(worker.parse([f"--connect={endpoint}", f"--slot={slot}",
                                         f"--parent={server}"]))
            finally:
                os._exit(1)
    os.killpg(0, signal.SIGKILL)        # the master is gone: so are the workers (and we)
