"""``ffcode worker --connect ENDPOINT``: serve a master on another host as one of its
workers (the process itself is the runtime's ``run_worker``), or with ``--group N`` as a
relay of N local workers (``run_relay``).

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode worker")
>>> add_arguments(parser)
>>> args = parser.parse_args(["--connect", "tcp://master:5555", "--timeout", "0"])
>>> args.connect, args.timeout, args.buffer
('tcp://master:5555', 0.0, 32)
"""
import argparse

from ffcode.cli.args import argument_parser, integer, namespace, non_negative, positive


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode worker': the master's endpoint, the CURVE keys, the waits."""
    argument_parser(parser)
    parser.add_argument("--connect", required=True, metavar="ENDPOINT",
                        help="the master's endpoint, e.g. tcp://HOST:5555")
    parser.add_argument("--key", help="this worker's CURVE secret key file, with --server-key "
                        "(default: none, for a master started with --insecure)")
    parser.add_argument("--server-key", help="the master's CURVE public key file (default: "
                        "none)")
    parser.add_argument("--timeout", type=non_negative("seconds"), default=60.0, metavar="S",
                        help="give up (exit status 2) if no master answers within S seconds; "
                             "0 waits forever (default 60)")
    parser.add_argument("--buffer", type=positive("MiB"), default=32, metavar="MiB",
                        help="bytes of packets queued for sending at most (default 32 MiB)")
    parser.add_argument("--group", type=integer(low=1, high=1024), metavar="N",
                        help="serve as a relay with a group of N local worker processes, "
                             "for a master of groups that runs hierarchical codes "
                             "(default: a worker)")


def main(args: argparse.Namespace) -> int:
    """Serve as the arguments say. It does not return: the process exits when the worker
    does, with its status (0 told to shut down, 1 the master went away, 2 none answered)."""
    if (namespace(args).key is None) != (args.server_key is None):
        raise ValueError("--key and --server-key go together (CURVE).")
    from ffcode.runtime import run_relay, run_worker  # the runtime loads only for this
    options = dict(key=args.key, server_key=args.server_key, timeout=args.timeout or None,
                   buffer=int(args.buffer * (1 << 20)))
    if args.group:
        run_relay(args.connect, size=args.group, **options)
    run_worker(args.connect, **options)
