"""The ffcode command line: ``ffcode demo`` (or ``python -m ffcode demo`` outside the source
tree)."""
import argparse
import sys

from ffcode import _validate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ffcode", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="an exact GF(p) product and solve, checked twice, "
                                             "and a coded product over local worker processes")
    demo.add_argument("--p", type=int, default=2**31 - 1, help="prime modulus (default 2**31-1)")
    demo.add_argument("--n", type=int, default=1024, help="matrix size (default 1024)")
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from ffcode import demo as demo_job
    try:
        return demo_job.run(args.p, _validate.integer(args.n, "n"), args.seed)
    except ValueError as e:
        parser.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
