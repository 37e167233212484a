"""The master's collector of a MapReduce phase (``runtime.mapreduce.Answers``), without
processes: every worker's answer, then its output in chunks, is gathered exactly; what a
worker says is checked before it is believed (its output's announced size bounds its
chunks, which come after its answer, each once and of the size it must have), a bad packet
changes nothing, and more idle answers than expected end the phase at once."""
import json

import numpy as np
import pytest

from ffcode.pieces import Packet
from ffcode.runtime.master.mapreduce import MAX_OUTPUT, Answers
from ffcode.runtime.shared.phases import CHUNK


def packet(worker, index, payload):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return Packet(worker, index, np.ones(1, np.uint8), np.frombuffer(data, np.uint8))


def test_answers_and_chunks_are_gathered_exactly():
    answers = Answers(2)
    out = bytes(range(256)) * 3
    assert answers.add(packet(0, 0, {"bytes": len(out), "index": 0}))
    assert not answers.complete and answers.rank == 0
    assert answers.add(packet(0, 1, out))
    assert answers.add(packet(1, 0, {"bytes": 0, "index": 1}))
    assert answers.complete and answers.rank == 2
    assert answers.result() == [({"bytes": len(out), "index": 0}, out),
                                ({"bytes": 0, "index": 1}, b"")]


@pytest.mark.parametrize("first, bad, why", [
    (None, packet(0, 1, b"x"), "before its answer"),
    (None, packet(0, 0, b"not json"), "Expecting value"),
    (None, packet(0, 0, {"index": 0}), "size"),
    (None, packet(0, 0, {"bytes": MAX_OUTPUT + 1}), "size"),
    (None, packet(0, 0, {"bytes": -1}), "size"),
    (None, packet(0, 0, ["bytes", 3]), "size"),
    (None, packet(2, 0, {"bytes": 0}), "no answer expected"),
    ({"bytes": 5}, packet(0, 0, {"bytes": 5}), "twice"),
    ({"bytes": 5}, packet(0, 1, b"toolong"), "chunk"),
    ({"bytes": 5}, packet(0, 2, b"12345"), "chunk"),
    ({"bytes": CHUNK + 1}, packet(0, 1, b"1"), "chunk"),
])
def test_a_bad_packet_is_refused_and_changes_nothing(first, bad, why):
    answers = Answers(2)
    if first is not None:
        answers.add(packet(0, 0, first))
    before = (dict(answers.meta), {w: dict(c) for w, c in answers.chunks.items()},
              set(answers.done))
    with pytest.raises(ValueError, match=why):
        answers.add(bad)
    assert (answers.meta, answers.chunks, answers.done) == before


def test_a_finished_worker_sends_nothing_more():
    answers = Answers(2)
    answers.add(packet(0, 0, {"bytes": 0}))
    with pytest.raises(ValueError, match="no answer expected"):
        answers.add(packet(0, 1, b""))


def test_more_idle_answers_than_expected_end_the_phase():
    answers = Answers(3, idle=1)
    answers.add(packet(0, 0, {"bytes": 0, "idle": True}))
    assert not answers.complete and not answers.replaced
    answers.add(packet(1, 0, {"bytes": 0, "idle": True}))
    assert answers.complete and answers.replaced
    assert [meta for meta, _ in answers.result()] == [{"bytes": 0, "idle": True}] * 2
