"""``ffcode learn linear|logistic``: a model trained by gradient descent on coded workers
(ffcode.learn), with one scheme or, with ``--compare``, uncoded, classic and compfs on the
same injected stragglers: the time of an iteration and of the whole training, and how well
each model does on held-out data.

``ffcode learn multitask``: T related tasks trained together (ffcode.learn's multi-task
estimators): the digits one-vs-rest, ten tasks on shared features, one coded product per
step (``--tasks digits``), or related regressions each with its own data set, their jobs
submitted together (``--tasks regression``); each task's test accuracy (or R^2) and the
fit's time, and with ``--compare`` the T tasks fitted separately one after another and
scikit-learn's fit of each task beside them. With ``--topology`` the tasks are users of a
topology of relays (ffcode.mtl), each relay a worker computing its users' steps, their
weights exchanged between the relays and the server (``--communication`` coded or
uncoded, the server hop emulated at ``--link-rate``); ``--compare`` then trains both
ways and says whether they learned the same model and how long each took.

The data sets are scikit-learn's (the optional ``learn`` extra): every flag is checked, and
scikit-learn looked for, before anything is printed and before a worker starts.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="ffcode learn")
>>> add_arguments(parser)
>>> args = settle(parser.parse_args(["linear", "--dataset", "diabetes", "--workers", "5"]))
>>> schemes, notes = schemes_for(args)
>>> args.k, [str(scheme) for scheme in schemes]
(3, ['compfs'])
"""
import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from ffcode.cli import output
from ffcode.cli.args import (argument_parser, check_stragglers, integer, namespace,
                             non_negative, positive)
from ffcode.codes.registry import code_entry, code_names, threshold
from ffcode.mtl import COMMUNICATIONS, LAYOUTS
from ffcode.mtl import parse as parse_topology
from ffcode.schemes import Scheme, default, names
from ffcode.version import __version__

TASKS = {"linear": "LinearRegression", "logistic": "LogisticRegression"}
# --tasks of 'ffcode learn multitask': (the multi-task model, the single-task one, metric)
MULTITASK = {"digits": ("MultiTaskLogisticRegression", "LogisticRegression", "accuracy"),
             "regression": ("MultiTaskLinearRegression", "LinearRegression", "R^2")}
# --tasks regression: tasks, samples and features of each, the noise of the tasks' weights
RELATED = (4, 200, 10, 0.2)
# name -> the task its labels are for (None: both, generated for the task)
DATASETS = {"breast_cancer": "logistic", "digits": "logistic", "diabetes": "linear",
            "synthetic": None}
COMPARED = [Scheme.UNCODED, Scheme.CLASSIC, Scheme.COMPFS]
GRADIENT = "gradient"                       # --coding of gradient codes
# --coding gradient's protocols, --compare's three: (the code's redundancy, partial work)
PROTOCOLS = {"uncoded": (False, True), "original": (True, False), "partial": (True, True)}
DEFAULTS = {"samples": 2000, "features": 20, "slowdown": 4.0}
DEFAULT_RATE = 100.0                        # Mbit/s of --topology's server hop
TEST_FRACTION = 0.25
EXTRA = "ffcode learn needs scikit-learn for its data sets: pip install ffcode[learn]"


# -- the flags ---------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode learn': the task, its data, the training and the stragglers."""
    argument_parser(parser)
    parser.add_argument("task", choices=[*TASKS, "multitask"], help="linear: least squares "
                        "(LinearRegression, scored by R^2); logistic: a binary classifier "
                        "(LogisticRegression, scored by accuracy); multitask: related tasks "
                        "trained together (see --tasks)")
    data = parser.add_argument_group("data (scikit-learn's, split into train and test: "
                                     f"{TEST_FRACTION:.0%} held out, stratified for "
                                     "logistic, by --seed)")
    data.add_argument("--dataset", choices=list(DATASETS),
                      help="(linear and logistic: required, no default; multitask uses "
                           "digits) breast_cancer: 569 tumours x "
                           "30 features, malignant (0) or benign (1), logistic; digits: "
                           "1797 8x8 images x 64 pixels, digit < 5 (0) or >= 5 (1), "
                           "logistic; diabetes: 442 patients x 10 features, disease "
                           "progression a year on, linear; synthetic: "
                           "make_classification (logistic) or make_regression (linear, "
                           "noise 10) with --seed")
    data.add_argument("--samples", type=integer(low=10), metavar="N",
                      help=f"synthetic: N samples (default {DEFAULTS['samples']})")
    data.add_argument("--features", type=integer(low=1), metavar="D",
                      help=f"synthetic: D features (default {DEFAULTS['features']})")
    model = parser.add_argument_group("training")
    model.add_argument("--workers", type=integer(low=1), default=6, metavar="N",
                       help="N local worker processes")
    model.add_argument("--coding", choices=code_names("matvec") + code_names("lcc") +
                       [GRADIENT], default="mds", help="mds: X w and X^T r as two "
                       "MDS-coded products per iteration; lcc: the whole gradient as one "
                       "Lagrange-coded job, private against any one worker; gradient: "
                       "each worker holds --stragglers + 1 of the samples' partitions and "
                       "sends coded sums of their gradients as it finishes each; or a code "
                       "registered for matvec or lcc (ffcode.codes.registry) (default mds)")
    model.add_argument("--original", action="store_true", help="with --coding gradient: "
                       "the original protocol, each worker sending once, after its last "
                       "partition (default: after each; --compare trains with uncoded, "
                       "original and partial)")
    model.add_argument("--k", type=integer(low=1), metavar="K", help="the data's blocks "
                       "(default: with mds the workers that are not stragglers, so that "
                       "classic can do without them; with lcc the most that fit)")
    model.add_argument("--scheme", choices=names(), help="how results travel (default "
                       "compfs, or cfs with --coding lcc)")
    model.add_argument("--compare", action="store_true", help="train with uncoded, classic "
                       "and compfs (cfs with --coding lcc) on the same stragglers and print "
                       "a table with speedups against uncoded (default: one scheme); "
                       "multitask: also fit the tasks separately, one after another, and "
                       "each with scikit-learn")
    model.add_argument("--iterations", type=integer(low=1), default=20, metavar="I",
                       help="gradient steps")
    model.add_argument("--shares", type=integer(low=1), default=1, metavar="W",
                       help="each worker holds W shares of the data, so that fast workers "
                            "keep computing while stragglers are waited for (with lcc the "
                            "privacy counts the shares a worker holds) (default 1)")
    model.add_argument("--learning-rate", type=positive(), metavar="ETA",
                       help="the step size (default: ffcode.learn's)")
    model.add_argument("--seed", type=integer(low=0), default=0, help="seed of the "
                       "synthetic data, the split, the encoding and the injected faults")
    model.add_argument("--report", metavar="FILE", help="write the runs as JSON: {ffcode, "
                       "date, settings, runs: [...]} (default: none)")
    model.add_argument("--no-progress", action="store_true", help="no live iteration bar "
                       "(default: a bar on a terminal)")
    _multitask_arguments(parser)
    faults = parser.add_argument_group("injected stragglers (the same in every iteration)")
    faults.add_argument("--stragglers", type=integer(low=0), metavar="K",
                        help="the last K workers are --slowdown times slower (default 2; "
                             "none with --topology)")
    faults.add_argument("--slowdown", type=positive(), metavar="S",
                        help=f"the stragglers' factor (default {DEFAULTS['slowdown']:g})")


def _multitask_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of 'ffcode learn multitask': its tasks, their coupling and the relays."""
    tasks = parser.add_argument_group("multi-task learning (ffcode learn multitask)")
    tasks.add_argument("--tasks", choices=list(MULTITASK), help="digits: one-vs-rest on "
                       "scikit-learn's digits, a logistic task per digit on the same 64 "
                       "pixels (MultiTaskLogisticRegression), scored by each task's test "
                       f"accuracy; regression: {RELATED[0]} related linear regressions "
                       f"({RELATED[1]} samples x {RELATED[2]} features "
                       "each, true weights a common vector plus task noise), each its own "
                       "data set (MultiTaskLinearRegression), scored by each task's test "
                       "R^2 (default digits)")
    tasks.add_argument("--coupling", type=non_negative(), metavar="LAMBDA",
                       help="pull each task's weights towards the tasks' mean by LAMBDA "
                            "(default 0: independent tasks); --compare then fits the "
                            "tasks separately one after another and with scikit-learn")
    tasks.add_argument("--topology", metavar="SPEC",
                       help="train through relays, a task a user: combination:K:r (a user "
                            "on every r of K relays), cyclic:K:r[:P], disjoint:K:P or the "
                            "relays' users, 0,1;1,2;... (as many users as tasks: digits "
                            f"10, regression {RELATED[0]}); each relay is a worker; "
                            "--compare then trains coded and uncoded (default none: the "
                            "coded product on every worker)")
    tasks.add_argument("--communication", choices=COMMUNICATIONS,
                       help="with --topology: the exchange between the relays and the "
                            "server (default coded)")
    tasks.add_argument("--link-rate", type=positive("Mbit/s"), metavar="MBIT",
                       help="with --topology: the server hop's rate, one shared medium, in "
                            f"Mbit/s, and with --layout hierarchical each user's links' to "
                            f"its relays (default {DEFAULT_RATE:g})")
    tasks.add_argument("--layout", choices=LAYOUTS,
                       help="with --topology: flat (each relay computes its users' steps) "
                            "or hierarchical (each user a worker of its own after the "
                            "relays, sending its step to them; default flat)")


def settle(args: argparse.Namespace) -> argparse.Namespace:
    """Refuse contradictions and flags the data set would ignore, then fill in the defaults
    (in place; returns args)."""
    if namespace(args).task == "multitask":
        _settle_tasks(args)
    else:
        _settle_dataset(args)
    if args.topology is not None:
        return _settle_topology(args)
    for flag in ("communication", "link_rate", "layout"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag.replace('_', '-')} is for a training through relays "
                             f"(--topology).")
    if args.stragglers is None:
        args.stragglers = 2
    if args.scheme is not None:
        args.scheme = Scheme.parse(args.scheme)
    if args.slowdown is not None and args.stragglers == 0:
        raise ValueError("--slowdown is the stragglers' factor, and --stragglers is 0.")
    check_stragglers(args.stragglers, args.workers)
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.coding == GRADIENT:
        _settle_gradient(args)
        return args
    if args.original:
        raise ValueError("--original is the protocol of --coding gradient.")
    if args.k is None and not _lagrange(args.coding):
        args.k = max(1, args.workers - args.stragglers)
    if args.k is not None:      # R: k for mds, 2 (k + W - 1) + 1 for lcc (t = 1, degree 1)
        needed = threshold(args.coding, k=args.k, t=args.shares, degree=2) if \
            _lagrange(args.coding) else threshold(args.coding, k=args.k)
        if needed is not None and needed > args.workers * args.shares:
            raise ValueError(f"--k {args.k} with --coding {args.coding} needs results from "
                             + (f"{needed} workers, but --workers is {args.workers}."
                                if args.shares == 1 else
                                f"{needed} shares, but --workers {args.workers} with "
                                f"--shares {args.shares} hold {args.workers * args.shares}."))
    return args


def _lagrange(coding: str) -> bool:
    """Whether --coding runs the gradient as one Lagrange-coded job (as lcc)."""
    return coding != GRADIENT and code_entry(coding).job == "lcc"


def _settle_gradient(args: argparse.Namespace) -> None:
    """--coding gradient: the code tolerates --stragglers (below --workers), and the
    products' flags do not apply."""
    for flag, given in (("k", args.k is not None), ("scheme", args.scheme is not None),
                        ("shares", args.shares != 1)):
        if given:
            raise ValueError(f"--{flag} is for the coded products (--coding mds or lcc); "
                             "--coding gradient codes the gradient's sum (see --stragglers).")
    if args.task == "multitask":
        raise ValueError("--coding gradient is for 'ffcode learn linear|logistic'; "
                         "multitask codes the product X W (--coding mds or lcc).")
    if args.stragglers >= args.workers:
        raise ValueError(f"--coding gradient tolerates fewer stragglers than --workers "
                         f"({args.workers}), not {args.stragglers}.")
    if args.compare and args.original:
        raise ValueError("--compare trains with uncoded, original and partial: leave out "
                         "--original.")


def _settle_tasks(args: argparse.Namespace) -> None:
    """multitask: --tasks and --coupling, and none of the single-task data flags."""
    for flag in ("dataset", "samples", "features"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag} is for 'ffcode learn linear|logistic': multitask "
                             f"trains on --tasks digits or regression.")
    args.tasks = args.tasks or "digits"
    args.coupling = 0.0 if args.coupling is None else args.coupling


def _settle_topology(args: argparse.Namespace) -> argparse.Namespace:
    """multitask --topology: a user per task, a worker per relay, the relays' settings
    filled in, and none of the coded product's or the injected stragglers' flags."""
    given = {"k": args.k is not None, "scheme": args.scheme is not None,
             "shares": args.shares != 1, "coding": args.coding != "mds",
             "stragglers": args.stragglers is not None, "slowdown": args.slowdown is not None}
    for flag in (flag for flag, is_given in given.items() if is_given):
        raise ValueError(f"--{flag} is for the coded product; --topology trains through "
                         f"relays, a worker each.")
    topology = parse_topology(args.topology)
    tasks = 10 if args.tasks == "digits" else RELATED[0]
    if topology.users != tasks:
        raise ValueError(f"--topology {args.topology} has {topology.users} users, and "
                         f"--tasks {args.tasks} {tasks} tasks: give it a user per task.")
    args.layout = args.layout or "flat"
    if args.layout == "flat" and topology.relays > args.workers:
        raise ValueError(f"--topology {args.topology} has {topology.relays} relays, and "
                         f"--workers is {args.workers}: a relay is a worker.")
    if args.layout == "hierarchical" and topology.relays + topology.users > args.workers:
        raise ValueError(f"--topology {args.topology} has {topology.relays} relays and "
                         f"{topology.users} users, and --workers is {args.workers}: with "
                         f"--layout hierarchical each relay and each user is a worker.")
    args.communication = args.communication or "coded"
    args.link_rate = DEFAULT_RATE if args.link_rate is None else args.link_rate
    args.stragglers, args.slowdown = 0, DEFAULTS["slowdown"]
    return args


def _settle_dataset(args: argparse.Namespace) -> None:
    """linear and logistic: --dataset, for the task, and the flags it takes."""
    if args.dataset is None:
        raise ValueError("the following arguments are required: --dataset")
    for flag in ("tasks", "coupling", "topology"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag} is for 'ffcode learn multitask', not {args.task}.")
    serves = DATASETS[args.dataset]
    if serves is not None and serves != args.task:
        kind = ("binary labels, a classification" if serves == "logistic" else
                "real targets, a regression")
        raise ValueError(f"--dataset {args.dataset} has {kind} data set: it is for "
                         f"'ffcode learn {serves}', not {args.task}.")
    for name in ("samples", "features"):
        if getattr(args, name) is not None and args.dataset != "synthetic":
            raise ValueError(f"--{name} is for --dataset synthetic: {args.dataset} has its "
                             f"own size.")
    if args.compare and args.scheme is not None:
        raise ValueError("--compare trains with uncoded, classic and compfs: leave out "
                         "--scheme.")


def schemes_for(args: argparse.Namespace) -> tuple[list, list]:
    """(the schemes to train with, notes saying why --compare picks cfs); prints nothing."""
    if namespace(args).coding == GRADIENT:
        return (list(PROTOCOLS) if args.compare else
                ["original" if args.original else "partial"]), []
    lcc = _lagrange(args.coding)
    if args.compare and args.task != "multitask":
        notes = ["  cfs in place of compfs: an LCC gradient is not row-linear in the data"] \
            if lcc else []
        return [s.for_computation(not lcc) for s in COMPARED], notes
    return [args.scheme or default(not lcc)], []


# -- the data ----------------------------------------------------------------------------------

def data_set(args: argparse.Namespace) -> tuple:
    """(X_train, X_test, y_train, y_test, a description) of settled args; ImportError
    without scikit-learn."""
    namespace(args)
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    logistic = args.task == "logistic"
    if args.dataset == "synthetic":
        n, d = args.samples, args.features
        informative = max(1, d // 2)
        if logistic:
            X, y = datasets.make_classification(n, d, n_informative=informative,
                                                n_redundant=0, n_clusters_per_class=1,
                                                random_state=args.seed)
        else:
            X, y = datasets.make_regression(n, d, n_informative=informative, noise=10.0,
                                            random_state=args.seed)
        what = f"synthetic ({'make_classification' if logistic else 'make_regression'})"
    else:
        X, y = getattr(datasets, f"load_{args.dataset}")(return_X_y=True)
        what = args.dataset
        if args.dataset == "digits":
            y = (y >= 5).astype(np.int64)
            what = "digits (< 5 vs >= 5)"
    split = train_test_split(X, y, test_size=TEST_FRACTION, random_state=args.seed,
                             stratify=y if logistic else None)
    return (*split, (f"{what}, {X.shape[0]} samples x {X.shape[1]} features "
                     f"({len(split[0])} train, {len(split[1])} test)"))


@dataclass
class Tasks:
    """The data of 'ffcode learn multitask': ``train`` and ``test``, (X, y) as the
    multi-task model fits and scores them; ``each``, every task's (X_train, y_train,
    X_test, y_test) as a single-task model fits and scores it; ``names``, the tasks';
    ``what``, a description."""
    train: tuple
    test: tuple
    each: list
    names: list
    what: str

    def scores(self, model) -> list:
        """Each task's test score (accuracy or R^2) of the fitted multi-task model."""
        X, y = self.test
        if isinstance(X, list):                 # regression: each task its own data
            from sklearn.metrics import r2_score
            return [float(r2_score(y_t, p)) for y_t, p in zip(y, model.predict(X))]
        decision = model.decision_function(X)
        return [float(np.mean((decision[:, t] > 0) == y_t))
                for t, (_, _, _, y_t) in enumerate(self.each)]


def task_data(args: argparse.Namespace) -> Tasks:
    """The tasks of settled 'ffcode learn multitask' args; ImportError without
    scikit-learn."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    if namespace(args).tasks == "digits":
        X, y = datasets.load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=TEST_FRACTION, random_state=args.seed, stratify=y)
        classes = np.unique(y_train)
        each = [(X_train, (y_train == c).astype(np.int64), X_test,
                 (y_test == c).astype(np.int64)) for c in classes]
        return Tasks((X_train, y_train), (X_test, y_test), each,
                     [str(c) for c in classes],
                     f"digits one-vs-rest, {len(classes)} tasks on {X.shape[0]} samples x "
                     f"{X.shape[1]} features ({len(y_train)} train, {len(y_test)} test)")
    each = [train_test_split(X, y, test_size=TEST_FRACTION, random_state=args.seed)
            for X, y in related_regressions(args.seed, *RELATED)]
    each = [(X_train, y_train, X_test, y_test) for X_train, X_test, y_train, y_test in each]
    T, n, d, _ = RELATED
    return Tasks(([e[0] for e in each], [e[1] for e in each]),
                 ([e[2] for e in each], [e[3] for e in each]), each,
                 [str(t) for t in range(T)],
                 f"{T} related regressions, each its own data set of {n} samples x {d} "
                 f"features ({len(each[0][1])} train, {len(each[0][3])} test)")


def related_regressions(seed: int, tasks: int, samples: int, features: int,
                        noise: float) -> list:
    """[(X_t, y_t)] of related linear regressions: w_t = w + noise * N(0, 1) for a common
    w, X_t of its own means and spreads, y_t = X_t w_t + N(0, 1) (synthetic, by seed)."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(features)
    spreads = rng.uniform(0.5, 3.0, features)
    out = []
    for _ in range(tasks):
        w = common + noise * rng.standard_normal(features)
        X = rng.standard_normal((samples, features)) * spreads + rng.standard_normal(features)
        out.append((X, X @ w + rng.standard_normal(samples)))
    return out


def stragglers(args: argparse.Namespace):
    """The injected stragglers (a ``Faults``): the last --stragglers workers, --slowdown
    times slower."""
    from ffcode.runtime import Faults
    last = range(namespace(args).workers - args.stragglers, args.workers)
    return Faults(slowdown={w: args.slowdown for w in last}, seed=args.seed)


# -- running -----------------------------------------------------------------------------------

class IterationBar(output.Bar):
    """The iterations of a fit as they finish."""

    def __init__(self, label: str, iterations: int, enabled: bool) -> None:
        super().__init__(label, enabled)
        self.iterations = iterations

    def __call__(self, step) -> None:
        self.show(step.iteration, self.iterations, "iteration")


def main(args: argparse.Namespace) -> int:
    """Train as the (parsed) arguments say: 0 when every model was trained (and with
    --compare, every scheme's is the same), 1 when they differ; ValueError for bad
    arguments and ImportError without scikit-learn, before anything is printed and before
    any worker starts."""
    settle(args)
    if args.report:
        output.check_writable(args.report)
    multitask = args.task == "multitask"
    try:
        if multitask:
            tasks = task_data(args)
            what = tasks.what
        else:
            X, X_test, y, y_test, what = data_set(args)
    except ImportError:
        raise ImportError(EXTRA) from None
    from ffcode import learn
    from ffcode.runtime import Cluster
    if args.topology is not None:
        return _through_relays(args, getattr(learn, MULTITASK[args.tasks][0]), tasks)
    models = [getattr(learn, name) for name in MULTITASK[args.tasks][:2]] if multitask \
        else [getattr(learn, TASKS[args.task])]
    faults = stragglers(args)
    schemes, notes = schemes_for(args)
    for scheme in schemes:                  # the models' own checks, before a worker starts
        for Model in models:
            learn.settings(_model(Model, args, scheme, faults), args.workers)
    start = time.perf_counter()
    with Cluster(args.workers) as cluster:  # checks its arguments before a worker starts
        blocks = f" (k = {args.k} of {args.workers})" if args.k else \
            f" (cyclic repetition, any {args.workers - args.stragglers} of " \
            f"{args.workers} workers)" if args.coding == GRADIENT else ""
        coupling = f", coupling {args.coupling:g}" if multitask else ""
        print(f"ffcode learn {args.task}: {what}, {args.coding.upper()} coding{blocks}, "
              f"{args.iterations} iterations{coupling}")
        for line in notes:
            print(line)
        print(f"  injected: {_describe(args)}")
        cluster.wait()
        print(f"  {args.workers} workers ready at {cluster.endpoint} in "
              f"{time.perf_counter() - start:.2f} s")
        if multitask:
            results = _train_tasks(cluster, models, args, schemes[0], faults, tasks)
        else:
            results = [_train(cluster, models[0], args, scheme, faults, X, y, X_test,
                              y_test)[0] for scheme in schemes]
    metric = "accuracy" if args.task == "logistic" else "R^2"
    if multitask:
        same = _print_tasks(args, results, tasks)
    elif args.compare:
        _table(results, metric)
        first = results[0]
        same = all((r["coef"], r["intercept"]) == (first["coef"], first["intercept"])
                   for r in results)
        print(f"  every scheme learned the same model (exact arithmetic): "
              f"{'yes' if same else 'NO'}")
    else:
        r = results[0]
        print(f"  {r['scheme']}: {r['iterations']} iterations, median iteration "
              f"{r['iteration']:.4f} s, {r['seconds']:.3f} s in all (load "
              f"{r['load_seconds']:.3f} s, {r['loaded_bytes'] / 2**20:.1f} MiB); loss "
              f"{r['loss']:.4g}; test {metric} {r['score']:.4f}")
    if args.report:
        _write(args, faults, what, results)
    return 0 if not args.compare or same else 1


def _through_relays(args, Model, tasks) -> int:
    """multitask --topology: the model trained through relays with --communication (both
    with --compare), each fit's time, bytes and scores; 0 unless --compare finds that
    coded and uncoded learned different models."""
    from ffcode import learn
    from ffcode.runtime import Cluster
    ways = list(COMMUNICATIONS) if args.compare else [args.communication]
    for way in ways:                        # the model's own checks, before a worker starts
        learn.settings(_relayed(Model, args, way), args.workers)
    (X, y), (X_test, y_test) = tasks.train, tasks.test
    start = time.perf_counter()
    with Cluster(args.workers) as cluster:
        users = ", each user a worker of its own on links of the same rate" \
            if args.layout == "hierarchical" else ""
        print(f"ffcode learn multitask: {tasks.what}, through relays {args.topology} "
              f"({' and '.join(ways)}), the server hop {args.link_rate:g} Mbit/s "
              f"shared{users}, {args.iterations} iterations, coupling {args.coupling:g}")
        cluster.wait()
        print(f"  {args.workers} workers ready at {cluster.endpoint} in "
              f"{time.perf_counter() - start:.2f} s")
        for way in ways:                    # untimed: the relays import the training's code
            _relayed(Model, args, way, iterations=1).fit(X, y, cluster=cluster)
        results = []
        for way in ways:
            model = _relayed(Model, args, way)
            began = time.perf_counter()
            model.fit(X, y, cluster=cluster)
            seconds, report = time.perf_counter() - began, model.relay_report_
            results.append({"model": way, "seconds": seconds,
                            "score": float(model.score(X_test, y_test)),
                            "tasks": tasks.scores(model), "relays": report.to_dict(),
                            "coef": np.asarray(model.coef_).tolist(),
                            "intercept": np.asarray(model.intercept_).tolist()})
            print(f"  {way}: {seconds:.3f} s in all; a step moves "
                  f"{report.uplink[0] / 1e3:.1f} kB up and {report.downlink[0] / 1e3:.1f} "
                  f"kB down ({report.uplink[0] / report.update_bytes:.3g} and "
                  f"{report.downlink[0] / report.update_bytes:.3g} tasks' weights), the "
                  f"hops {statistics.median(report.uplink_seconds):.4f} s up and "
                  f"{statistics.median(report.downlink_seconds):.4f} s down" +
                  (f"; the users' links {report.user_uplink[0] / 1e3:.1f} kB up and "
                   f"{report.user_downlink[0] / 1e3:.1f} kB down"
                   if report.user_uplink else ""))
    same = _relayed_table(args, results, tasks)
    if args.report:
        _write(args, stragglers(args), tasks.what, results)
    return 0 if same else 1


def _relayed(Model, args, communication, iterations=None):
    """The multi-task model trained through --topology's relays (for ``iterations``, by
    default --iterations)."""
    return Model(coupling=args.coupling, iterations=iterations or args.iterations,
                 seed=args.seed, learning_rate=args.learning_rate, topology=args.topology,
                 communication=communication, link_rate=args.link_rate * 1e6 / 8,
                 layout=args.layout)


def _relayed_table(args, results, tasks) -> bool:
    """Each task's test score by communication; with --compare, whether coded and uncoded
    learned the same model and how their times compare."""
    metric = MULTITASK[args.tasks][2]
    print(f"  {'task':<8}" + "".join(f"{r['model']:>14}" for r in results)
          + f"   (test {metric})")
    for t, name in enumerate(tasks.names):
        print(f"  {name:<8}" + "".join(f"{r['tasks'][t]:>14.4f}" for r in results))
    if len(results) == 1:
        return True
    coded, plain = results
    same = (coded["coef"], coded["intercept"]) == (plain["coef"], plain["intercept"])
    print(f"  coded and uncoded learned the same model (exact arithmetic): "
          f"{'yes' if same else 'NO'}; coded is {_how_much(plain['seconds'], coded['seconds'])}")
    return same


def _train_tasks(cluster, models, args, scheme, faults, tasks) -> list:
    """The multi-task fit's results (with each task's test score), and with --compare
    those of the tasks' separate fits one after another, and scikit-learn's scores."""
    multi, single = models
    (X, y), (X_test, y_test) = tasks.train, tasks.test
    result, model = _train(cluster, multi, args, scheme, faults, X, y, X_test, y_test,
                           label="multi-task", coupling=args.coupling)
    result.update(model="multi-task", tasks=tasks.scores(model))
    results = [result]
    if args.compare:
        separate = [_train(cluster, single, args, scheme, faults, X, y, X_test, y_test,
                           label=f"task {name}")[0]
                    for name, (X, y, X_test, y_test) in zip(tasks.names, tasks.each)]
        results.append({"model": "separate", "scheme": str(scheme),
                        "seconds": sum(r["seconds"] for r in separate),
                        "tasks": [r["score"] for r in separate], "fits": separate})
        results.append({"model": "scikit-learn", "tasks": _scikit_learn(args, tasks)})
    return results


def _how_much(before: float, after: float) -> str:
    """How much faster (or slower) taking ``after`` seconds is than taking ``before``.

    >>> _how_much(3.0, 1.5), _how_much(1.0, 1.6)
    ('2.00x faster', '1.60x slower')
    """
    if before <= 0 or after <= 0:
        return "too quick to compare"
    return f"{before / after:.2f}x faster" if after <= before else \
        f"{after / before:.2f}x slower"


def _scikit_learn(args, tasks) -> list:
    """Each task's test score of scikit-learn's estimator on it (logistic: on the
    standardized X, as ffcode.learn standardizes it)."""
    from sklearn import linear_model
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    scores = []
    for X_train, y_train, X_test, y_test in tasks.each:
        model = make_pipeline(StandardScaler(), linear_model.LogisticRegression(
            max_iter=1000)) if args.tasks == "digits" else linear_model.LinearRegression()
        scores.append(float(model.fit(X_train, y_train).score(X_test, y_test)))
    return scores


def _print_tasks(args, results, tasks) -> bool:
    """The multi-task fit's line and its tasks' table; True unless --compare finds an
    uncoupled digits model that differs from the separate fits."""
    r, metric = results[0], MULTITASK[args.tasks][2]
    overall = "one-vs-rest test accuracy" if args.tasks == "digits" else "mean test R^2"
    print(f"  multi-task: {r['iterations']} iterations, median iteration "
          f"{r['iteration']:.4f} s, {r['seconds']:.3f} s in all (load "
          f"{r['load_seconds']:.3f} s, {r['loaded_bytes'] / 2**20:.1f} MiB); loss "
          f"{r['loss']:.4g}; {overall} {r['score']:.4f}")
    columns = [row["model"] for row in results]
    print(f"  {'task':<8}" + "".join(f"{name:>14}" for name in columns)
          + f"   (test {metric})")
    for t, name in enumerate(tasks.names):
        print(f"  {name:<8}" + "".join(f"{row['tasks'][t]:>14.4f}" for row in results))
    if not args.compare:
        return True
    separate = results[1]
    print(f"  separate: {len(tasks.names)} single-task fits one after another, "
          f"{separate['seconds']:.3f} s in all: the multi-task fit is "
          f"{_how_much(separate['seconds'], r['seconds'])}")
    if args.tasks != "digits" or args.coupling:
        return True
    same = all(fit["coef"] == row and fit["intercept"] == intercept for fit, row, intercept
               in zip(separate["fits"], r["coef"], r["intercept"]))
    print(f"  coupling 0: every task's model is its separate fit's (exact arithmetic): "
          f"{'yes' if same else 'NO'}")
    return same


def _describe(args) -> str:
    if not args.stragglers:
        return "nothing"
    slow = [str(w) for w in range(args.workers - args.stragglers, args.workers)]
    return f"worker{'s' * (len(slow) > 1)} {', '.join(slow)} {args.slowdown:g}x slower in " \
           f"every iteration"


def _train(cluster, Model, args, scheme, faults, X, y, X_test, y_test, label=None,
           **options) -> tuple:
    """Fit one model with one scheme: (its numbers, as the report writes them, the
    model)."""
    bar = IterationBar(label or scheme, args.iterations, not args.no_progress)
    model = _model(Model, args, scheme, faults, bar, **options)
    start = time.perf_counter()
    try:
        model.fit(X, y, cluster=cluster)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    steps = model.history_
    return {"scheme": str(scheme), "iterations": len(steps), "seconds": seconds,
            "iteration": statistics.median(s.seconds for s in steps),
            "load_seconds": model.load_seconds_, "loaded_bytes": model.loaded_bytes_,
            "loss": steps[-1].loss, "score": float(model.score(X_test, y_test)),
            "coef": np.asarray(model.coef_).tolist(),
            "intercept": np.asarray(model.intercept_).tolist(),
            "steps": [{"iteration": s.iteration, "seconds": s.seconds, "loss": s.loss,
                       "shipped": s.shipped} for s in steps]}, model


def _model(Model, args, scheme, faults, progress=None, **options):
    """The model the arguments ask for, with one scheme (and options: coupling)."""
    if args.learning_rate is not None:
        options["learning_rate"] = args.learning_rate
    if args.coding == GRADIENT:         # scheme: the protocol
        redundant, partial = PROTOCOLS[scheme]
        options.update(stragglers=args.stragglers if redundant else 0, partial=partial)
    else:
        options.update(scheme=scheme, k=args.k, shares=args.shares)
    return Model(coding=args.coding, iterations=args.iterations, faults=faults,
                 seed=args.seed, progress=progress, **options)


def _table(results, metric):
    base = results[0]                       # uncoded
    print(f"  {'scheme':<11}{'iteration s':>12}{'vs uncoded':>12}{'total s':>10}"
          f"{'vs uncoded':>12}{'loss':>10}{'test ' + metric:>15}")
    for r in results:
        print(f"  {r['scheme']:<11}{r['iteration']:>12.4f}"
              f"{base['iteration'] / r['iteration']:>11.2f}x{r['seconds']:>10.3f}"
              f"{base['seconds'] / r['seconds']:>11.2f}x{r['loss']:>10.4g}"
              f"{r['score']:>15.4f}")
    print("  (iteration s: the median iteration; total s: the whole fit, the data's load "
          "included;\n   vs uncoded: uncoded's time / the scheme's, above 1x is faster)")


def _write(args, faults, what, results):
    from ffcode.runtime import utc_now
    settings = {"task": args.task, "dataset": args.dataset, "data": what,
                **({"tasks": args.tasks, "coupling": args.coupling}
                   if args.task == "multitask" else {}),
                **({"topology": args.topology, "link_rate": args.link_rate,
                    "layout": args.layout}
                   if args.topology is not None else {}),
                "coding": args.coding, "k": args.k, "workers": args.workers,
                "shares": args.shares,
                "iterations": args.iterations, "learning_rate": args.learning_rate,
                "seed": args.seed, "faults": faults.to_dict()}
    data = {"ffcode": __version__, "date": utc_now(), "settings": settings, "runs": results}
    output.write_json(args.report, data)
    print(f"  report written to {args.report}")
