"""The ffcode command line (``python -m ffcode`` outside the source tree):

  ffcode run matmul|matvec|lcc ...    a coded job over local (or remote) worker processes
  ffcode learn linear|logistic ...    a regression trained by coded gradient descent
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

from ffcode import __version__
from ffcode.cli import learn as learning, run as runs, worker
from ffcode.errors import ClusterError

_handler = None                             # the log handler main installed last


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each flag's default, unless its help already says it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is None or action.default is False or \
                action.default == argparse.SUPPRESS or not action.option_strings:
            return text
        return text + " (default %(default)s)"


class _Lines(logging.Formatter):
    """'ffcode run: warning: ...', and with -v the time first."""

    def __init__(self, prog, verbose):
        super().__init__("%(asctime)s " if verbose else "")
        self.prog, self.verbose = prog, verbose

    def format(self, record):
        line = f"{self.prog}: {record.levelname.lower()}: {record.getMessage()}"
        return (self.formatTime(record, "%H:%M:%S") + " " + line) if self.verbose else line


def configure_logging(prog, verbose):
    """Log ffcode's messages to stderr as lines of prog: WARNING and up, INFO with -v. Only
    the command line does this: the library never configures logging."""
    global _handler
    logger = logging.getLogger("ffcode")
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(_Lines(prog, verbose))
    logger.addHandler(_handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False


def build(argv):
    """(the parser, its subcommands' parsers by name)."""
    parser = argparse.ArgumentParser(prog="ffcode", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"ffcode {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log what the master and the workers do (default: warnings only)")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, help):
        sub = commands.add_parser(name, help=help, description=help,
                                  formatter_class=HelpFormatter)
        sub.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="log what the master and the workers do (default: warnings "
                              "only)")
        return sub

    runs.add_arguments(command("run", "a coded job over worker processes"))
    learning.add_arguments(command("learn", "train a linear or logistic regression by "
                                            "coded gradient descent"))
    worker.add_arguments(command("worker", "serve a master at ENDPOINT"))
    keys = command("keys", "write NAME.key and NAME.key_secret (mode 0600) into DIR")
    keys.add_argument("dir", help="the directory (made if missing)")
    keys.add_argument("name", help="the key pair's name")
    keys.add_argument("--force", action="store_true", help="replace an existing pair "
                      "(default: refuse)")
    experiment = command("experiment", "simulated runtime of every scheme vs stragglers, "
                         "slowdown, pieces and link rate; PNGs")
    experiment.add_argument("--out", default="plots", help="directory for the PNGs")
    experiment.add_argument("--sizes", type=runs.at_least(1), nargs="+", default=[100, 1000],
                            metavar="N", help="numbers of workers (default 100 1000)")
    experiment.add_argument("--seeds", type=runs.at_least(1), default=3,
                            help="runs averaged per point")
    experiment.add_argument("--measured", action="store_true", help="also measure the sweeps "
                            "on 6 local worker processes, about a minute (default: simulated "
                            "only)")
    demo = command("demo", "an exact GF(p) product and solve, checked against Python "
                           "integers")
    demo.add_argument("--p", type=runs.int_expression, default=2**31 - 1, metavar="P",
                      help="prime modulus, e.g. 65521 or 2**61-1 (default 2**31-1)")
    demo.add_argument("--n", type=runs.at_least(1), default=1024, help="matrix size")
    demo.add_argument("--seed", type=runs.at_least(0), default=0, help="seed of the data")
    return parser, commands.choices


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser, commands = build(argv)
    args = parser.parse_args(argv)
    command = commands[args.command]        # its lines are named 'ffcode run', ...
    configure_logging(command.prog, args.verbose)
    try:
        return _dispatch(args)
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


def _dispatch(args) -> int:
    if args.command == "run":
        return runs.run(args)
    if args.command == "learn":
        return learning.run(args)
    if args.command == "worker":
        return worker.run(args)
    if args.command == "experiment":
        from ffcode.cli import experiment as experiments
        for path in experiments.run(args.out, args.sizes, args.seeds, args.measured):
            print(path)
        return 0
    if args.command == "keys":
        from ffcode.runtime import keys
        try:
            paths = keys.generate(args.dir, args.name, force=args.force)
        except FileExistsError as e:
            raise OSError(f"{e.filename} exists already: pass --force to replace the "
                          f"pair") from None
        for path in paths:
            print(path)
        return 0
    from ffcode.cli import demo
    return demo.run(args.p, args.n, args.seed)


if __name__ == "__main__":
    sys.exit(main())
