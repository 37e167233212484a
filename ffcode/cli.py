"""The ffcode command line (``python -m ffcode`` outside the source tree):

  ffcode run matmul|matvec|lcc ...    a coded job over local (or remote) worker processes
  ffcode worker --connect ENDPOINT    a worker for a master on another host
  ffcode keys DIR NAME                a CURVE key pair for encrypted, authenticated tcp
  ffcode experiment --out DIR         simulated runtimes of every scheme, tables and plots
  ffcode demo                         exact GF(p) arithmetic checked against Python integers
"""
import argparse
import sys

from ffcode import _validate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ffcode", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    from ffcode import runs
    runs.add_arguments(commands.add_parser(
        "run", help="a coded job over worker processes (see ffcode run -h)"))
    worker = commands.add_parser("worker", help="serve a master at ENDPOINT")
    keys = commands.add_parser("keys", help="write NAME.key and NAME.key_secret into DIR")
    keys.add_argument("dir")
    keys.add_argument("name")
    experiment = commands.add_parser("experiment", help="simulated runtime of every scheme "
                                     "vs stragglers, slowdown, pieces and link rate; PNGs")
    experiment.add_argument("--out", default="plots", help="directory for the PNGs "
                            "(default ./plots)")
    experiment.add_argument("--sizes", type=int, nargs="+", default=[100, 1000],
                            metavar="N", help="numbers of workers (default 100 1000)")
    experiment.add_argument("--seeds", type=int, default=3, help="runs averaged per point")
    experiment.add_argument("--measured", action="store_true", help="also measure the sweeps "
                            "on 6 local worker processes (about a minute)")
    demo = commands.add_parser("demo", help="an exact GF(p) product and solve, checked "
                                            "against Python integers")
    demo.add_argument("--p", type=int, default=2**31 - 1, help="prime modulus (default 2**31-1)")
    demo.add_argument("--n", type=int, default=1024, help="matrix size (default 1024)")
    demo.add_argument("--seed", type=int, default=0)
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["worker"]:              # imports the runtime only for this command
        from ffcode.runtime import worker as worker_process
        worker_process.add_arguments(worker)
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return runs.run(args)
        if args.command == "worker":
            return worker_process.run(args)
        if args.command == "experiment":
            from ffcode import experiments
            if min(args.sizes) < 1 or args.seeds < 1:
                raise ValueError("--sizes and --seeds must be at least 1")
            for path in experiments.run(args.out, args.sizes, args.seeds, args.measured):
                print(path)
            return 0
        if args.command == "keys":
            from ffcode.runtime import keys as curve
            for path in curve.generate(args.dir, args.name):
                print(path)
            return 0
        from ffcode import demo as demo_job
        return demo_job.run(args.p, _validate.integer(args.n, "n"), args.seed)
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    except KeyboardInterrupt:               # the cluster has already shut its workers down
        print("ffcode: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
