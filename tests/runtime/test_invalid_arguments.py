"""Every bad argument to the runtime raises ffcode.InvalidParameterError, before anything
starts: caught by `except ffcode.FFCodeError` as by `except ValueError` and `except
TypeError`, naming the argument."""
import pytest

import ffcode
from ffcode import GF, MDS
from ffcode.runtime import Faults, Options, Task, run_mapreduce
from ffcode.runtime.shared import keys
from ffcode.runtime.shared.transport import check_endpoint

F = GF(65521)

BAD = {
    "cluster workers": (lambda: ffcode.Cluster(0), "n_workers"),
    "cluster engine": (lambda: ffcode.Cluster(2, engine="carrier pigeon"), "engine"),
    "cluster message": (lambda: ffcode.Cluster(2, max_message=1), "max_message"),
    "cluster groups": (lambda: ffcode.Cluster(12, groups=5), "equal groups"),
    "options timeout": (lambda: Options(timeout=0), "timeout"),
    "options scheme": (lambda: Options(scheme="telepathy"), "scheme"),
    "options faults": (lambda: Options(faults={}), "faults"),
    "options adversaries": (lambda: Options(adversaries=-1), "adversaries"),
    "faults slowdown": (lambda: Faults(slowdown={0: 0.5}), "slowdown"),
    "faults corrupt": (lambda: Faults(corrupt={0: "subtle"}), "corrupt"),
    "mapreduce cluster": (lambda: run_mapreduce(None, [b"x"], "m:f", load=1), "cluster"),
    "endpoint": (lambda: check_endpoint("carrier://pigeon", secure=True), "endpoint"),
    "key file": (lambda: keys.load_client("/nonexistent.key_secret", "/nonexistent.key"),
                 "does not exist"),
    "payload of no kind": (lambda: Task(object()).to_meta(), "no job kind's payload"),
    "code": (lambda: MDS(F, 3, 2), "k"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_argument_is_an_invalid_parameter_error(name):
    call, named = BAD[name]
    with pytest.raises(ffcode.InvalidParameterError, match=named) as raised:
        call()
    assert isinstance(raised.value, ffcode.FFCodeError)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, TypeError)
