"""ffcode's log lines on stderr, one format for the command line and the worker processes:
``PROG: level: message`` (``{pid}`` in PROG becomes the logging process's id), with the time
first when verbose. The library itself never configures logging: only the ``ffcode``
command and the worker processes call ``to_stderr``.

>>> import logging
>>> record = logging.LogRecord("ffcode", logging.WARNING, __file__, 1, "slow", None, None)
>>> Lines("ffcode run").format(record)
'ffcode run: warning: slow'
>>> Lines("ffcode worker {pid}").format(record) == f"ffcode worker {record.process}: warning: slow"
True
"""
from __future__ import annotations

import logging
import sys


class Lines(logging.Formatter):
    """``prog: level: message``, the time first when verbose."""

    def __init__(self, prog: str, verbose: bool = False) -> None:
        if not isinstance(prog, str):
            raise TypeError(f"Argument 'prog' must be a str, not {type(prog).__name__}.")
        super().__init__()
        self.prog, self.verbose = prog, bool(verbose)

    def format(self, record: logging.LogRecord) -> str:
        prog = self.prog.replace("{pid}", str(record.process))
        line = f"{prog}: {record.levelname.lower()}: {record.getMessage()}"
        return (self.formatTime(record, "%H:%M:%S") + " " + line) if self.verbose else line


def to_stderr(prog: str, level: int, verbose: bool = False) -> logging.Handler:
    """Send ffcode's loggers to stderr at level, as Lines of prog, replacing what an earlier
    call installed; returns the handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Lines(prog, verbose))
    logger = logging.getLogger("ffcode")
    logger.handlers[:] = [h for h in logger.handlers if not isinstance(h.formatter, Lines)]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return handler
