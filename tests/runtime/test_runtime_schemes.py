"""A scheme defined here, outside the package, runs on local workers: the master plans it
through its object (layout, coefficient seeds, collector, needed packets), its tasks name it
with the import path of its object, and the workers import it there and send through its
own ``packets_of``, exactly. A task naming a scheme that is not built in and cannot be
imported as one is refused as it arrives."""
import json

import numpy as np
import pytest

import ffcode
from ffcode import GF, MDS
from ffcode.errors import ProtocolError
from ffcode.pieces import piece_packets
from ffcode.runtime.master.jobs import Options, Plan
from ffcode.runtime.shared.task import Task
from ffcode.schemes import Scheme, path_of, register, unregister

from helpers import scheme_registered

F = GF(65521)


class Thirds(Scheme):
    """Whole results sent as 3 random combinations of their row pieces, whatever m."""

    def packets(self, m):
        return 3

    def packets_of(self, F, computed, m, worker, seed=None):
        return piece_packets(F, computed, 3, worker, seed=seed)


# Bound at the top level of this module: the workers import it as "<module>:THIRDS".
THIRDS = Thirds("thirds")


@pytest.fixture
def thirds():
    with scheme_registered(THIRDS) as scheme:
        yield scheme


def data(seed=1):
    return F.random((12, 5), seed=seed), F.random(5, seed=seed + 1)


def tasks(scheme, code=MDS(F, 2, 3), **options):
    A, x = data()
    plan = Plan(code, (A, x), Options(scheme=scheme, pieces=4, seed=3, **options),
                tuple((k,) for k in range(code.n_workers)))
    return plan, [task for task, _ in filter(None, plan.tasks)]


def test_a_plan_names_the_scheme_and_the_path_of_its_object(thirds):
    plan, planned = tasks("thirds")
    assert plan.scheme is THIRDS and plan.pieces == 3 and plan.needed == 3 * 2
    path = path_of(THIRDS)
    assert path.endswith(":THIRDS") and plan.label == "thirds"
    for k, task in enumerate(planned):
        payload = task.payload
        assert (payload.scheme, payload.scheme_path, payload.pieces) == ("thirds", path, 3)
        assert payload.seeds == THIRDS.coefficient_seeds(3, [k])
        back = Task.from_meta(json.loads(json.dumps(task.to_meta())))
        assert back == task and back.payload.strategy is THIRDS
    _, built_in = tasks("cfs")
    assert all(t.payload.scheme_path is None for t in built_in)


def test_a_scheme_the_workers_cannot_import_is_refused_before_any_work(thirds):
    register(Thirds("unbound"))         # bound to no name a worker could import
    try:
        with pytest.raises(ValueError, match="cannot be found by worker processes"):
            tasks("unbound")
    finally:
        unregister("unbound")


@pytest.mark.parametrize("scheme, path, error", [
    ("telepathy", None, "scheme must be one of uncoded, classic"),
    ("thirds", None, "scheme must be one of"),
    ("thirds", "no_colon", "scheme_path must be an import path"),
    ("thirds", "no.such.module:THIRDS", "Cannot import"),
    ("thirds", "json:dumps", "is not the scheme 'thirds'"),
    ("thirds", "ffcode.schemes:NAMES", "is not the scheme 'thirds'"),
    ("halves", "{module}:THIRDS", "is not the scheme 'halves'"),
    ("cfs", "{module}:THIRDS", "is a built-in one"),
    (3, None, "scheme must be a string")])
def test_a_task_naming_an_unknown_scheme_is_refused(thirds, scheme, path, error):
    """Nothing but a built-in scheme by name, or a Scheme at its import path, is run."""
    meta = tasks("thirds")[1][0].to_meta()
    module = path_of(THIRDS).partition(":")[0]
    meta["payload"].update(scheme=scheme, scheme_path=path and path.format(module=module))
    with pytest.raises(ProtocolError, match=error):
        Task.from_meta(meta)


@pytest.mark.bounded(90)
def test_a_scheme_defined_here_runs_exactly_on_local_workers(bounded, thirds):
    """Shipped with each job and resident, beside a built-in scheme, and correcting a wrong
    worker: every output exact."""
    code = MDS(F, 2, 3)
    A, x = data()
    expected = F.matmul(A, x)
    with ffcode.Cluster(3) as cluster:
        output, report = cluster.run(code, A, x, scheme="thirds", pieces=4)
        assert np.array_equal(output, expected)
        assert report.settings["scheme"] == "thirds" and report.settings["pieces"] == 3
        output, _ = cluster.run(code, A, x, scheme="cfs", pieces=4)
        assert np.array_equal(output, expected)
        resident = cluster.load(code, A, scheme="thirds", pieces=4)
        for seed in range(2):
            x = F.random(5, seed=10 + seed)
            output, _ = cluster.run(resident, x)
            assert np.array_equal(output, F.matmul(A, x))
        cluster.unload(resident)
        output, _ = cluster.run(MDS(F, 1, 3), A, x, scheme="thirds", adversaries=1,
                                faults=ffcode.Faults(corrupt={1: "random"}))
        assert np.array_equal(output, F.matmul(A, x))
