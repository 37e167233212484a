"""The ``ffcode`` command line: ``commands`` builds the parser and dispatches to one module
per command (``run``, ``learn``, ``terasort``, ``worker``, ``keys``, ``experiment``,
``demo``), each with its flags (``add_arguments``) and its ``main``; ``args`` holds the
argument types they share, ``output`` the bar and the files they write.

>>> from ffcode.cli import commands
>>> list(commands.COMMANDS)
['run', 'learn', 'terasort', 'worker', 'keys', 'experiment', 'demo']
"""
from ffcode.cli.commands import main

__all__ = ["main"]
