"""What the commands write besides their lines of text: a live bar on the terminal, and
files (JSON reports, plots) whose paths are proven writable before any work starts.

>>> import os, tempfile
>>> directory = tempfile.TemporaryDirectory()
>>> path = os.path.join(directory.name, "report.json")
>>> check_writable(path)                    # nothing is left behind
>>> os.path.exists(path)
False
>>> write_json(path, {"runs": []})
>>> open(path).read()
'{\\n "runs": []\\n}\\n'
>>> directory.cleanup()
"""
import json
import os
import sys
from typing import Any


class Bar:
    """A one-line live bar on stderr, shown only when enabled and stderr is a terminal.

    >>> bar = Bar("compfs", enabled=False)
    >>> bar.show(3, 4, "rank"); bar.close()     # --no-progress: nothing is drawn
    """

    WIDTH = 30                              # characters of the bar itself

    def __init__(self, label: str, enabled: bool) -> None:
        if not isinstance(label, str):
            raise TypeError(f"Argument 'label' must be a str, not {type(label).__name__}.")
        self.label, self.enabled = label, bool(enabled) and sys.stderr.isatty()

    def show(self, done: int, total: int, what: str) -> None:
        """Redraw the bar at done of total (``what`` names the unit)."""
        if self.enabled:
            filled = self.WIDTH * done // max(total, 1)
            sys.stderr.write(f"\r  {self.label:<10} [{'#' * filled}"
                             f"{'.' * (self.WIDTH - filled)}] {what} {done}/{total}")
            sys.stderr.flush()

    def close(self) -> None:
        """Blank the line, for the text that follows."""
        if self.enabled:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def check_writable(path: str, what: str = "the report") -> None:
    """Refuse (ValueError) a path that cannot be written, before any work: the file is
    opened for appending, which proves it as no permission test can (root passes those
    even where nothing can be written, as in /proc), and removed again if it was made.

    >>> check_writable("no/such/directory/report.json")
    Traceback (most recent call last):
    ...
    ValueError: cannot write the report to 'no/such/directory/report.json': no such directory
    """
    path, what = _text(path, "path"), _text(what, "what")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        problem = "no such directory"
    elif os.path.isdir(path):
        problem = "it is a directory"
    else:
        existed = os.path.lexists(path)
        try:
            with open(path, "a"):
                pass
        except OSError as e:
            problem = e.strerror or str(e)
        else:
            if not existed:
                os.remove(path)
            return
    raise ValueError(f"cannot write {what} to {path!r}: {problem}")


def write_json(path: str, data: Any, what: str = "the report") -> None:
    """Write data as indented JSON to path. OSError naming the path should it fail (after
    ``check_writable`` passed, the disk changed): not the command line's fault, so main
    answers it with one error line and no usage."""
    path, what = _text(path, "path"), _text(what, "what")
    try:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    except OSError as e:
        raise OSError(f"cannot write {what} to {path!r}: {e.strerror}") from None


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"Argument {name!r} must be a str, not {type(value).__name__}.")
    return value
