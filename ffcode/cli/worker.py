"""``ffcode worker --connect ENDPOINT``: serve a master as one of its workers (the process
itself is ffcode.runtime.worker's)."""
import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--connect", required=True, metavar="ENDPOINT",
                        help="the master's endpoint, e.g. tcp://HOST:5555")
    parser.add_argument("--key", help="this worker's CURVE secret key file, with --server-key "
                        "(default: none, for a master started with --insecure)")
    parser.add_argument("--server-key", help="the master's CURVE public key file (default: "
                        "none)")
    parser.add_argument("--timeout", type=_seconds, default=60.0, metavar="S",
                        help="give up (exit status 2) if no master answers within S seconds; "
                             "0 waits forever (default 60)")
    parser.add_argument("--buffer", type=float, default=32, metavar="MiB",
                        help="bytes of packets queued for sending at most (default 32 MiB)")


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Serve as the arguments say; the process exits when the worker does."""
    if (args.key is None) != (args.server_key is None):
        raise ValueError("--key and --server-key go together (CURVE).")
    from ffcode.runtime import worker      # the runtime loads only for this command
    worker.run(args.connect, key=args.key, server_key=args.server_key,
               timeout=args.timeout or None, buffer=int(args.buffer * (1 << 20)))
