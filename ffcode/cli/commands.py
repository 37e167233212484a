"""The ffcode command line (``python -m ffcode`` outside the source tree):

  ffcode run matmul|matvec|lcc ...    a coded job over local (or remote) worker processes
  ffcode learn linear|logistic|multitask   a regression, or related tasks together, trained
                                          by coded gradient descent
  ffcode terasort --records N ...     Coded TeraSort (and TeraSort) on local workers, by phase
  ffcode worker --connect ENDPOINT    a worker for a master on another host
  ffcode keys DIR NAME                a CURVE key pair for encrypted, authenticated tcp
  ffcode experiment --out DIR         simulated runtimes of every scheme, tables and plots
  ffcode demo                         exact GF(p) arithmetic checked against Python integers

A mistake is the command's usage and one 'ffcode run: error: ...' line (named after the
command), exit status 2, before anything else is printed; -v logs what the master and the
workers do.
"""
import argparse
import logging
import sys
from typing import Optional, Sequence

from ffcode.cli import demo, experiment, keys, learn, run, terasort, worker
from ffcode.errors import ClusterError
from ffcode import logs
from ffcode.version import __version__

# Each command's module adds its flags (add_arguments) and runs it (main). In this order
# in the help.
COMMANDS = {
    "run": (run, "a coded job over worker processes"),
    "learn": (learn, "train a linear or logistic regression (linear, logistic), or related "
                     "tasks together (multitask), by coded gradient descent"),
    "terasort": (terasort, "sort records with Coded TeraSort (and TeraSort) on local "
                           "workers; the time of each phase and the bytes shuffled"),
    "worker": (worker, "serve a master at ENDPOINT"),
    "keys": (keys, "write NAME.key and NAME.key_secret (mode 0600) into DIR"),
    "experiment": (experiment, "simulated runtime of every scheme vs stragglers, slowdown, "
                               "pieces and link rate; PNGs"),
    "demo": (demo, "an exact GF(p) product and solve, checked against Python integers"),
}
VERBOSE = "log what the master and the workers do (default: warnings only)"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each flag's default, unless its help already says it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is None or action.default is False or \
                action.default == argparse.SUPPRESS or not action.option_strings:
            return text
        return text + " (default %(default)s)"


def configure_logging(prog: str, verbose: bool) -> None:
    """Log ffcode's messages to stderr as lines of prog: WARNING and up, INFO with -v. Only
    the command line does this: the library never configures logging."""
    logs.to_stderr(prog, logging.INFO if verbose else logging.WARNING, verbose)


def build() -> tuple:
    """(the parser, its commands' parsers by name).

    >>> parser, commands = build()
    >>> args = parser.parse_args(["demo", "-v", "--n", "8"])
    >>> args.command, args.verbose, args.n, commands["demo"].prog
    ('demo', True, 8, 'ffcode demo')
    """
    parser = argparse.ArgumentParser(prog="ffcode", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"ffcode {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (module, text) in COMMANDS.items():
        command = commands.add_parser(name, help=text, description=text,
                                      formatter_class=HelpFormatter)
        # -v after the command too; SUPPRESS keeps a -v given before it
        command.add_argument("-v", "--verbose", action="store_true",
                             default=argparse.SUPPRESS, help=VERBOSE)
        module.add_arguments(command)
    return parser, commands.choices


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command argv names (default: sys.argv[1:]); its exit status. A mistake in
    the flags exits (SystemExit 2) with the command's usage and one error line.

    >>> main(["--version"])             # prints 'ffcode' and the version, then exits
    Traceback (most recent call last):
    ...
    SystemExit: 0
    """
    if argv is None:
        argv = sys.argv[1:]
    if isinstance(argv, str) or not all(isinstance(arg, str) for arg in argv):
        raise TypeError("Argument 'argv' must be a sequence of str.")
    parser, commands = build()
    args = parser.parse_args(argv)
    command: argparse.ArgumentParser = commands[args.command]   # lines: 'ffcode run', ...
    configure_logging(command.prog, args.verbose)
    try:
        return COMMANDS[args.command][0].main(args)
    except (ValueError, TypeError) as e:    # the command's flags ask for the impossible
        command.error(str(e))
    except MemoryError:
        return _fail(command.prog, "not enough memory for these sizes: try smaller ones")
    except (ClusterError, OSError, ImportError) as e:   # ImportError: an extra is missing
        return _fail(command.prog, str(e))
    except KeyboardInterrupt:               # the cluster has already shut its workers down
        print(f"{command.prog}: interrupted", file=sys.stderr)
        return 130


def _fail(prog, message) -> int:
    """One error line (the problem is not the command line's shape: no usage)."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
