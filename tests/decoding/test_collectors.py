"""The collector protocol: every collector a job's packets can go to has every attribute the
master uses (``wrong`` and ``buffer`` included, so that nobody probes for them), one
collector that trusts every sender refuses to exclude one, and correcting wrong workers
needs R + 2A points, one check for every collector and the runtime."""
import numpy as np
import pytest

from ffcode import GF, LCC, MDS, Decoder, Packet, RobustDecoder, piece_packets
from ffcode.decoding.collectors import Collector, Gather, Robust, ShapeVote, for_job
from ffcode.decoding.robust import check_correctable

F = GF(65521)
MEMBERS = ["needed", "rank", "complete", "pending", "wrong", "buffer", "add", "eliminate",
           "result", "counted", "exclude"]


def mds_job(n_workers=5):
    code = MDS(F, k=2, n_workers=n_workers)
    A, x = F.random((4, 3), seed=1), F.random(3, seed=2)
    return code, code.encode(A), x, F.matmul(A, x)


def every_collector():
    """(name, a fresh collector) for every kind the runtime makes, and the decoders."""
    code, encoding, _, _ = mds_job()
    lcc = LCC(F, k=2, t=0, f="ffcode.functions:square", degree=2, n_workers=3)
    return [("Decoder", Decoder(encoding, 2)),
            ("deferred Decoder", for_job(encoding, 2)),
            ("RobustDecoder", RobustDecoder(encoding, 2, 1)),
            ("Gather", Gather(F, 3, np.concatenate)),
            ("Robust", Robust(encoding, 1)),
            ("vote, correcting", for_job(encoding, 2, adversaries=1)),
            ("vote, whole results", for_job(encoding, 1, adversaries=1, whole=True)),
            ("vote, rows unknown", for_job(lcc.encode([F.random((4, 3))] * 2), 2))]


@pytest.mark.parametrize("name, collector", every_collector(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_every_collector_speaks_the_protocol(name, collector):
    assert isinstance(collector, Collector), name
    for member in MEMBERS:
        assert hasattr(collector, member), (name, member)
    assert collector.wrong == [] and collector.buffer is None and collector.pending == 0
    assert collector.rank == 0 and not collector.complete


def test_protocol_names_what_the_master_uses():
    assert {name for name in dir(Collector) if not name.startswith("_")} == set(MEMBERS)
    assert not isinstance(object(), Collector)


def test_a_deferred_decoder_hands_on_its_buffer():
    """The buffer a deferred decoder staged its payloads in is the one a next job reuses;
    a vote hands on its leader's."""
    code, encoding, x, expected = mds_job()
    packets = [p for w in (0, 3) for p in piece_packets(F, code.compute(encoding[w], x), 2,
                                                          w, seed=w)]
    first = for_job(encoding, 2)
    for packet in packets:
        first.add(packet)
    assert isinstance(first.buffer, np.ndarray) and first.buffer.dtype == F.dtype
    np.testing.assert_array_equal(first.result(), expected)
    second = for_job(encoding, 2, buffer=first.buffer)
    for packet in packets:
        second.add(packet)
    assert second.buffer is first.buffer
    np.testing.assert_array_equal(second.result(), expected)
    vote = ShapeVote(lambda shape, first_: Decoder(encoding, 2, shape, defer=True), 2)
    assert vote.buffer is None
    vote.add(packets[0])
    assert vote.buffer is vote.leader.buffer


@pytest.mark.parametrize("make", [lambda e: Decoder(e, 2), lambda e: for_job(e, 2),
                                  lambda e: Gather(F, 3, list)],
                         ids=["Decoder", "deferred Decoder", "Gather"])
def test_trusting_collectors_refuse_to_exclude(make):
    _, encoding, _, _ = mds_job()
    with pytest.raises(ValueError, match="trusts every"):
        make(encoding).exclude(0)


def test_check_correctable():
    """R + 2A points, or R + 2S when the A wrong workers hold S shares between them."""
    check_correctable(4, 8, 2)
    check_correctable(2, 8, 3, adversaries=2)
    with pytest.raises(ValueError, match=r"^Correcting 2 wrong workers needs R \+ 2A = 8 "
                                         r"workers; the code has 7\.$"):
        check_correctable(4, 7, 2)
    with pytest.raises(ValueError, match=r"^Correcting 1 wrong workers holding up to 2 shares "
                                         r"needs R \+ 2S = 8 shares; the code has 7\.$"):
        check_correctable(4, 7, 2, adversaries=1)


def test_robust_collectors_need_r_plus_2a_points():
    """Robust (whole results) and RobustDecoder refuse what the code cannot correct."""
    _, encoding, _, _ = mds_job(n_workers=5)             # R = 2: A = 1 fits, A = 2 does not
    for make in (lambda A: Robust(encoding, A), lambda A: RobustDecoder(encoding, 2, A),
                 lambda A: for_job(encoding, 2, adversaries=A),
                 lambda A: for_job(encoding, 1, adversaries=A, whole=True)):
        with pytest.raises(ValueError, match=r"R \+ 2A = 6 workers; the code has 5"):
            make(2)
    assert Robust(encoding, 1).needed == 4
    with pytest.raises(ValueError, match="'adversaries' must be non-negative"):
        Robust(encoding, -1)


def test_gather_assembles_in_worker_order():
    gather = Gather(F, 2, np.concatenate)
    assert gather.add(Packet(1, 0, [1], np.array([3, 4], F.dtype)))
    assert not gather.complete and gather.needed == 2
    with pytest.raises(ValueError, match="Not assembled yet: 1/2"):
        gather.result()
    with pytest.raises(ValueError, match="Worker 2 has no uncoded task"):
        gather.add(Packet(2, 0, [1], np.array([5, 6], F.dtype)))
    with pytest.raises(ValueError, match="index 0, coefficients"):
        gather.add(Packet(0, 1, [1], np.array([1, 2], F.dtype)))
    assert gather.add(Packet(0, 0, [1], np.array([1, 2], F.dtype)))
    assert gather.result().tolist() == [1, 2, 3, 4] and gather.counted(0, 0)
    assert not gather.add(Packet(0, 0, [1], np.array([1, 2], F.dtype)))    # one each
