"""A job as typed values: the tasks a plan makes cross the wire and come back equal, every
malformed field is refused at the receiving end, and cfs coefficients are fresh per job
unless a seed is given."""
import json

import numpy as np
import pytest

from ffcode import GF, MDS, Faults, PolynomialCode
from ffcode.errors import ProtocolError
from ffcode.runtime.master.jobs import Options, Plan
from ffcode.runtime.shared import kinds
from ffcode.runtime.shared.payloads import Relayed
from ffcode.runtime.shared.task import (FaultPlan, Load, Task, Unload, job_message, packet_index,
                                        read_task, share_piece)
from ffcode.runtime.shared.wire import Header, Kind
from ffcode.schemes import Scheme

F = GF(65521)


def plan(scheme, seed=None, faults=Faults(), assignment=None):
    code = PolynomialCode(F, 2, 2, 6)
    A, B = F.random((8, 6), seed=1), F.random((6, 4), seed=2)
    assignment = assignment or tuple((i,) for i in range(6))
    return Plan(code, (A, B), Options(scheme=scheme, pieces=2, seed=seed, faults=faults),
                assignment)


@pytest.mark.parametrize("scheme", list(Scheme))
def test_tasks_cross_the_wire_unchanged(scheme):
    faults = Faults(slowdown={1: 3.0}, delay={2: (0.01, 0.02)}, crash_after={3: 2},
                    hang_after={4: 1}, link_rate={5: 1e6}, corrupt={0: "piece"}, seed=7)
    for task, arrays in filter(None, plan(scheme, seed=3, faults=faults).tasks):
        meta = json.loads(json.dumps(task.to_meta()))
        assert Task.from_meta(meta) == task
        assert task.kind == "coded" and task.payload.scheme == scheme
        assert task.payload.strategy is Scheme(scheme) and task.payload.scheme_path is None
        assert len(arrays) >= sum(task.counts)


def test_load_and_unload_cross_the_wire_unchanged():
    load = Load(3, (2, 2))
    assert Load.from_meta(json.loads(json.dumps(load.to_meta()))) == load
    assert Unload.from_meta(json.loads(json.dumps(Unload(3).to_meta()))) == Unload(3)
    for bad in ({"data": -1}, {"data": "3"}, {"data": 3, "counts": []}, [3]):
        with pytest.raises(ProtocolError):
            Unload.from_meta(bad)
    with pytest.raises(ProtocolError, match="counts"):
        Load.from_meta({"data": 3, "counts": [2, -2]})


def good_meta():
    return plan(Scheme.CFS, seed=1).tasks[0][0].to_meta()


@pytest.mark.parametrize("field,value", [
    ("f", 3), ("f", "no_colon"), ("p", -1), ("p", 2.5), ("scheme", "telepathy"),
    ("scheme", 3), ("scheme_path", "no_colon"),
    ("pieces", 0), ("shares", True), ("operand", "x"), ("seeds", [[1, 2]] * 5),
    ("seeds", [[1]])])
def test_malformed_payload_is_refused(field, value):
    meta = good_meta()
    meta["payload"][field] = value
    with pytest.raises(ProtocolError, match=field):
        Task.from_meta(meta)


@pytest.mark.parametrize("field,value", [
    ("counts", {"a": 1}), ("counts", [-1]), ("data", -2), ("max_message", 0),
    ("faults", None), ("priority", 1.5), ("payload", None), ("payload", [])])
def test_malformed_task_is_refused(field, value):
    meta = good_meta()
    meta[field] = value
    with pytest.raises(ProtocolError, match=field if field != "payload" else "fields"):
        Task.from_meta(meta)


@pytest.mark.parametrize("kind", ["telepathy", 3, None, "os:system", "json:dumps",
                                  "no.such.module:Kind"])
def test_unknown_kinds_are_refused(kind):
    """A kind is a built-in one or the import path of a JobKind: nothing else is run."""
    meta = good_meta()
    meta["kind"] = kind
    with pytest.raises(ProtocolError, match="kind|JobKind"):
        Task.from_meta(meta)


def test_a_payload_of_another_kind_is_refused():
    meta = good_meta()
    meta["kind"] = "drop"
    with pytest.raises(ProtocolError, match="drop task needs the fields"):
        Task.from_meta(meta)


@pytest.mark.parametrize("field,value", [
    ("slowdown", 0.5), ("slowdown", float("inf")), ("delays", [-1.0]), ("delays", "x"),
    ("corrupt", "subtle"), ("link_rate", 0), ("crash_after", -1), ("hang_after", 1.5)])
def test_malformed_faults_are_refused(field, value):
    meta = good_meta()
    meta["faults"][field] = value
    with pytest.raises(ProtocolError, match=field.rstrip("s")):
        Task.from_meta(meta)


def test_missing_or_extra_fields_are_refused():
    meta = good_meta()
    del meta["payload"]["seeds"]
    with pytest.raises(ProtocolError, match="fields"):
        Task.from_meta(meta)
    meta = good_meta()
    del meta["priority"]
    with pytest.raises(ProtocolError, match="fields"):
        Task.from_meta(meta)
    meta = good_meta()
    meta["shell"] = "rm -rf /"
    with pytest.raises(ProtocolError, match="fields"):
        Task.from_meta(meta)
    with pytest.raises(ProtocolError, match="fields"):
        FaultPlan.from_meta([])


def test_job_messages_cross_the_wire_and_repeat_from_memory():
    """A JOB message's task and arrays come back as sent; the same task again is the same
    meta frame (encoded once), and that frame read again the same task (parsed once),
    its arrays still read from each message's own frames and checked against them."""
    task, arrays = plan(Scheme.COMPFS, seed=3).tasks[1]
    header = Header(Kind.JOB, 7, 1, 1)
    frames = job_message(header, task, arrays)
    again = job_message(Header(Kind.JOB, 7, 2, 1), Task.from_meta(task.to_meta()), arrays)
    assert frames[1] is again[1]                        # encoded once
    read, kind, back = read_task(frames[1:])
    assert read == task and kind is kinds.find("coded")
    assert all(np.array_equal(a, b) for a, b in zip(back, arrays))
    fresh = [a + 1 for a in arrays]
    second = read_task([bytes(again[1])] + job_message(header, task, fresh)[2:])
    assert second[0] is read                            # parsed once
    assert all(np.array_equal(a, b) for a, b in zip(second[2], fresh))
    with pytest.raises(ProtocolError, match="array count"):
        read_task(frames[1:-1])                         # remembered, yet checked
    with pytest.raises(ProtocolError, match="malformed"):
        read_task([frames[1]] + [np.zeros(3, np.uint8)] * (len(frames) - 2))
    with pytest.raises(ProtocolError, match="meta frame"):
        read_task([])


def test_only_immutable_built_in_tasks_are_remembered():
    """A relay's task holds a dict (not hashable): encoded and parsed each time, as is
    a malformed frame (refused every time)."""
    coded, arrays = plan(Scheme.CLASSIC).tasks[0]
    relayed = Task(Relayed(coded.payload, {"name": "MDS"}, None), coded.counts)
    header = Header(Kind.JOB, 7, 1, 0)
    frames = job_message(header, relayed, arrays)
    assert job_message(header, relayed, arrays)[1] is not frames[1]
    assert read_task(frames[1:])[0] == relayed
    assert read_task(frames[1:])[0] is not read_task(frames[1:])[0]    # parsed each time
    bad = json.loads(frames[1])
    bad["priority"] = "high"
    for _ in range(2):
        with pytest.raises(ProtocolError, match="priority"):
            read_task([json.dumps(bad).encode()] + frames[2:])


def test_packet_numbering_round_trips():
    for m in (1, 2, 5):
        for k in range(4):
            for j in range(m):
                assert share_piece(packet_index(k, j, m), m) == (k, j)


def seeds(p):
    return [task.payload.seeds for task, _ in p.tasks]


def test_cfs_coefficients_fresh_per_job_unless_seeded():
    """With seed=None every job draws its own coefficients (and says so in its settings);
    a given seed repeats them."""
    first, second = plan(Scheme.CFS), plan(Scheme.CFS)
    assert seeds(first) != seeds(second)
    assert first.coefficient_seed != second.coefficient_seed
    assert first.settings((), False)["seed"] is None
    assert first.settings((), False)["coefficient_seed"] == first.coefficient_seed
    assert seeds(plan(Scheme.CFS, seed=9)) == seeds(plan(Scheme.CFS, seed=9))
    assert plan(Scheme.CFS, seed=9).settings((), False)["coefficient_seed"] == 9
    assert seeds(plan(Scheme.CFS, seed=9)) != seeds(plan(Scheme.CFS, seed=10))
    assert all(s is None for s in seeds(plan(Scheme.COMPFS)))


def test_several_shares_number_packets_on():
    p = plan(Scheme.SYSTEMATIC, seed=1, assignment=((0, 3), (1, 4), (2, 5), (), (), ()))
    assert p.tasks[0][0].payload.shares == 2 and p.tasks[3] is None
    assert p.share_of(0, packet_index(1, 1, 2)) == (3, 1)
    assert p.share_of(0, packet_index(2, 0, 2)) is None


@pytest.mark.parametrize("bad,error", [
    (dict(scheme="fastest"), ValueError), (dict(pieces=0), ValueError),
    (dict(faults={}), TypeError), (dict(timeout=0), ValueError),
    (dict(timeout="1"), TypeError), (dict(verify="yes"), TypeError),
    (dict(progress=3), TypeError), (dict(adversaries=-1), ValueError),
    (dict(assignment=[[0]], allocate="speed"), ValueError)])
def test_options_are_checked_as_they_are_made(bad, error):
    with pytest.raises(error):
        Options(**bad)


def test_options_fill_in_the_defaults():
    options = Options().resolved()
    assert (options.scheme, options.pieces) == (Scheme.COMPFS, 4)
    assert Options(scheme="cfs").resolved(Scheme.CLASSIC, 2).scheme == Scheme.CFS
    code = MDS(F, 2, 4)
    assert Options().assignment_for(code, 4, [None] * 4) == ((0,), (1,), (2,), (3,))
    assert np.array_equal([len(h) for h in Options(allocate=[3, 1]).assignment_for(
        MDS(F, 2, 8), 2, [None] * 2)], [6, 2])
