"""``ffcode keys DIR NAME``: a CURVE key pair, NAME.key (public) and NAME.key_secret (mode
0600), for encrypted and authenticated tcp between a master and its workers.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode keys")
>>> add_arguments(parser)
>>> parser.parse_args(["keys", "worker1"])
Namespace(dir='keys', name='worker1', force=False)
"""
import argparse

from ffcode.cli.args import argument_parser, namespace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of 'ffcode keys': the directory, the pair's name, --force."""
    argument_parser(parser)
    parser.add_argument("dir", help="the directory (made if missing)")
    parser.add_argument("name", help="the key pair's name")
    parser.add_argument("--force", action="store_true", help="replace an existing pair "
                        "(default: refuse)")


def main(args: argparse.Namespace) -> int:
    """Write the pair and print its two paths: 0; OSError naming the file and --force when
    the pair exists already."""
    namespace(args)
    from ffcode.runtime import generate_keys    # zmq loads only for this command
    try:
        paths = generate_keys(args.dir, args.name, force=args.force)
    except FileExistsError as e:
        raise OSError(f"{e.filename} exists already: pass --force to replace the "
                      f"pair") from None
    for path in paths:
        print(path)
    return 0
