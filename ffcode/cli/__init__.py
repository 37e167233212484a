"""The ``ffcode`` command line: one module per command (``run``, ``learn``, ``experiment``,
``demo``; ``worker`` and ``keys`` come from the runtime), ``main`` dispatching to them."""
from ffcode.cli.commands import main

__all__ = ["main"]
