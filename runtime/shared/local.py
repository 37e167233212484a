"""What the master and its local processes share: the master's private directory, the
environment that marks a pool's processes, and the master's script (``__main__``) run again
in a worker, so that the functions it defines import there as "__main__:name".

A master's private directory, named after its pid, for its owner only:

>>> import shutil
>>> path = private_dir()
>>> os.path.basename(path).startswith(f"ffcode-{os.getpid()}-")
True
>>> oct(stat.S_IMODE(os.stat(path).st_mode))
'0o700'
>>> shutil.rmtree(path)
"""
import json
import multiprocessing.spawn
import os
import re
import shutil
import stat
import tempfile

from ffcode import functions

IN_POOL = "FFCODE_POOL"             # set in the pool's processes: no Cluster starts there
MAIN = "FFCODE_MAIN"                # how the master's __main__ is found again
_PRIVATE = re.compile(r"ffcode-(\d+)-\w+")


def private_dir() -> str:
    """A fresh directory (mode 0700) for a master's ipc socket, named after the master's pid.
    Directories that dead masters left behind (when master and fork server were killed
    together) are removed first: only real directories of this user whose master is gone."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        match = _PRIVATE.fullmatch(name)
        if not match:
            continue
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)           # a symlink is not a directory here
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and \
                not _alive(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"ffcode-{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:             # another user's process
        return True
    return True


def main_module() -> dict:
    """What multiprocessing's spawn needs to run the master's main module again (its path,
    or its module name under ``python -m``); empty in an interactive session."""
    data = multiprocessing.spawn.get_preparation_data("ffcode")
    return {key: data[key] for key in ("init_main_from_name", "init_main_from_path")
            if key in data}


_main_imported = False


def load_function(path: str):
    """The function a task names by its import path ("package.module:name"), the master's
    main module run here first for one defined in the user's script ("__main__:name")."""
    if path.startswith("__main__:"):
        import_main()
    return functions.load(path)


def import_main():
    """Run the master's main module in this worker process (once), so that functions
    defined in the user's script import as "__main__:name"."""
    global _main_imported
    if not _main_imported:
        _main_imported = True
        multiprocessing.spawn.prepare(json.loads(os.environ.get(MAIN, "{}")))
