"""Schemes as strategies (ffcode.schemes): a scheme is still everything its name was as an
Enum; each built-in scheme's object does what the code base did by branching on its name
(the worker's send step, the master's collector, the simulator's timing); and a scheme
defined here, outside the package, is parsed by name, runs in the simulator and decodes
exactly through its own send step and collector."""
import copy
import json
import math
import pickle

import numpy as np
import pytest

from ffcode import GF, MDS
from ffcode.decoding import collectors
from ffcode.pieces import Packet, PieceShare, piece_packets, piece_results
from ffcode.schemes import (NAMES, Scheme, default, names, register, registered,
                            unregister)
from ffcode.sim import Model, ShiftedExponential, compare, simulate

from helpers import scheme_registered

F = GF(65521)
BUILT_IN = ["uncoded", "classic", "systematic", "cfs", "compfs"]
# name: (packets(4), send, holds, coded, whole, piecewise, plain)
PROPERTIES = {
    "uncoded": (1, "whole", "slices", False, True, False, True),
    "classic": (1, "whole", "shares", True, True, False, True),
    "systematic": (4, "systematic", "shares", True, False, False, True),
    "cfs": (4, "random", "shares", True, False, False, False),
    "compfs": (4, "pieces", "pieces", True, False, True, False),
}
CHOICES = "must be one of uncoded, classic, systematic, cfs, compfs"


class Halves(Scheme):
    """A scheme defined outside the package: whole results sent as 2 plain row pieces,
    whatever m."""
    plain = True

    def packets(self, m):
        return 2

    def packets_of(self, F, computed, m, worker, seed=None):
        return piece_packets(F, computed, 2, worker, systematic=True)


@pytest.fixture
def halves():
    with scheme_registered(Halves("halves")) as scheme:
        yield scheme


# -- a scheme is its name ------------------------------------------------------------------

def test_the_built_in_schemes_in_order():
    assert [str(s) for s in Scheme] == BUILT_IN == list(NAMES) == list(names())
    assert len(Scheme) == 5 and list(registered()) == list(Scheme)
    assert [Scheme.UNCODED, Scheme.CLASSIC, Scheme.SYSTEMATIC, Scheme.CFS,
            Scheme.COMPFS] == list(Scheme)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_scheme_is_its_name(name):
    scheme = Scheme.parse(name)
    assert scheme is Scheme(name) is Scheme[name.upper()] is getattr(Scheme, name.upper())
    assert Scheme.parse(scheme) is scheme
    assert isinstance(scheme, str) and scheme == name and str(scheme) == name
    assert scheme.value == name and type(scheme.value) is str and scheme.name == name.upper()
    assert f"{scheme:>12}" == f"{name:>12}" and repr(scheme) == \
        f"<Scheme.{name.upper()}: {name!r}>"
    assert {name: 1}[scheme] == 1 and {scheme: 1}[name] == 1
    assert json.dumps({"scheme": scheme}) == json.dumps({"scheme": name})
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(scheme, protocol)) is scheme
    assert copy.copy(scheme) is scheme and copy.deepcopy([scheme])[0] is scheme


@pytest.mark.parametrize("value", ["fast", "COMPFS", "", 3, None, "coded", "ideal"],
                         ids=repr)
def test_parse_names_the_choices(value):
    with pytest.raises(ValueError, match=f"'scheme' {CHOICES}; not {value!r}"):
        Scheme.parse(value)
    with pytest.raises(ValueError, match="'method' must be one of"):
        Scheme.parse(value, "method")
    with pytest.raises((ValueError, TypeError)):
        Scheme(value)


def test_the_default_scheme():
    assert default() is default(True) is Scheme.COMPFS and default(False) is Scheme.CFS
    assert [str(s.for_computation(False)) for s in Scheme] == \
        ["uncoded", "classic", "systematic", "cfs", "cfs"]
    assert all(s.for_computation(True) is s for s in Scheme)


# -- each built-in scheme does what the code base did by its name --------------------------

@pytest.mark.parametrize("name", BUILT_IN)
def test_properties(name):
    scheme = Scheme.parse(name)
    whole = PROPERTIES[name][4]
    assert (scheme.packets(4), scheme.send, scheme.holds, scheme.coded, scheme.whole,
            scheme.piecewise, scheme.plain) == PROPERTIES[name]
    assert scheme.packets(1) == 1 and scheme.packets(7) == (1 if whole else 7)


@pytest.mark.parametrize("name", BUILT_IN)
def test_send_step_as_the_worker_sent(name):
    """The packets of a result (the runtime worker's share_steps): one whole packet, m plain
    pieces, m random combinations from the share's seed, or each piece's packet as it is
    computed."""
    scheme, m, worker = Scheme.parse(name), 3, 2
    y = F.random((7, 2), seed=1)
    seeds = scheme.coefficient_seeds(11, [5, 8])
    if name == "cfs":
        assert seeds == tuple(tuple(int(s) for s in np.random.SeedSequence(
            [11, k]).generate_state(2)) for k in (5, 8))
    else:
        assert seeds is None
    seed = seeds[0] if seeds else None
    if scheme.piecewise:
        blocks = F.random((m, 3, 2), seed=2)
        share = PieceShare(worker, F.random((m, m), seed=3), blocks, (), 0)
        computed = piece_results(lambda block: block, share)
        packets = scheme.packets_of(F, computed, m, worker, seed)
        first = next(packets)           # taken one at a time, as they are computed
        assert first.index == 0 and np.array_equal(first.payload, blocks[0])
        assert [p.index for p in packets] == [1, 2]
        return
    got = list(scheme.packets_of(F, y, m, worker, seed))
    if scheme.whole:
        expected = [Packet(worker, 0, np.ones(1, F.dtype), y)]
    else:
        expected = list(piece_packets(F, y, m, worker, seed=seed,
                                      systematic=name == "systematic"))
    assert len(got) == scheme.packets(m) == len(expected)
    for a, b in zip(got, expected):
        assert (a.worker, a.index, a.rows) == (b.worker, b.index, b.rows)
        assert np.array_equal(a.coeffs, b.coeffs) and np.array_equal(a.payload, b.payload)


def _run_locally(scheme, code, data, x, m, adversaries=0, order=None):
    """A job without processes: the scheme encodes, each worker in ``order`` computes its
    share and sends it by the scheme's send step, the scheme's collector decodes."""
    encoding = scheme.encode_data(code, (data,), m, seed=4)
    args = code.arguments(encoding, x)
    collector = scheme.collector(code, encoding, m, adversaries)
    seeds = scheme.coefficient_seeds(9, range(len(encoding)))
    for w in order or range(len(encoding)):
        computed = code.compute_pieces(encoding[w], *args) if scheme.piecewise else \
            code.compute(encoding[w], *args)
        for packet in scheme.packets_of(F, computed, m, w, seeds[w] if seeds else None):
            collector.add(packet)
        if collector.complete:
            break
    return encoding, collector


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("adversaries", [0, 1])
def test_encode_collect_decode(name, adversaries):
    """Each scheme's layout, send step and collector make an exact job (as runtime.jobs.Plan
    chose them: Gather of the slices, else ffcode.decoding.collectors.for_job, whole for
    classic), and its needed packets are today's: every slice, or m·(R + 2A)."""
    scheme, m = Scheme.parse(name), 3
    if adversaries and not scheme.coded:
        return
    code = MDS(F, 2, 5)
    A, x = F.random((8, 4), seed=1), F.random(4, seed=2)
    encoding, collector = _run_locally(scheme, code, A, x, m, adversaries, [4, 1, 0, 3, 2])
    assert collector.complete and np.array_equal(collector.result(), F.matmul(A, x))
    if scheme.coded:
        assert scheme.needed(code, encoding, m, adversaries) == \
            scheme.packets(m) * (2 + 2 * adversaries)
        if not adversaries:
            assert isinstance(collector, collectors.Collector)
    else:
        assert isinstance(collector, collectors.Gather)
        assert scheme.needed(code, encoding, m) == collector.needed == 5


def test_a_coded_collector_needs_an_encoding():
    code = MDS(F, 2, 4)
    with pytest.raises(TypeError, match="Split"):
        Scheme.UNCODED.collector(code, code.encode(F.random((4, 2), seed=1)), 2)
    with pytest.raises(TypeError, match="Encoding"):
        Scheme.CFS.collector(code, code.uncoded(F.random((4, 2), seed=1)), 2)


@pytest.mark.parametrize("name", BUILT_IN)
def test_packet_times(name):
    """When each packet is ready, its bytes and which there are: a packet per piece as
    computed (compfs), every share's whole result as one packet (classic) or m (systematic,
    cfs), one slice per worker (uncoded)."""
    scheme = Scheme.parse(name)
    model = Model(3, 2, 3, piece_time=ShiftedExponential(0.1, 0.05), shares=(2, 1, 3),
                  piece_bytes=10.0)
    ready, sizes, held = scheme.packet_times(model)
    finished = np.cumsum(model.times, axis=1)
    if name == "uncoded":
        work = model.uncoded_work
        expected = (model.compute[:, :3].sum(axis=1) * work + model.pauses[:, :3].sum(axis=1))
        assert np.array_equal(ready[:, 0], expected) and held.all()
        assert np.array_equal(sizes, np.full((3, 1), 30.0 * work))
    elif name == "compfs":
        assert np.array_equal(ready[held], finished[model.held])
        assert (sizes == 10.0).all() and np.array_equal(held, model.held)
    else:
        q = scheme.packets(3)
        assert np.array_equal(ready[held], np.repeat(finished[:, 2::3], q, axis=1)[held])
        assert held.sum(axis=1).tolist() == [2 * q, q, 3 * q] and (sizes == 30.0 / q).all()
    assert scheme.shipped(model) == (3 if name == "uncoded" else 6)


@pytest.mark.parametrize("name", BUILT_IN)
def test_decodable(name):
    """Which packets decode, arriving from these shares with these pieces: every slice
    (uncoded), R whole results (classic), R copies of every plain piece (systematic), any
    m·R random combinations (cfs, compfs), or what the rank tracking says when it runs."""
    scheme = Scheme.parse(name)
    model = Model(4, 2, 2)
    shares = np.array([0, 0, 1, 2, 1, 3, 2, 3])
    pieces = np.array([0, 1, 0, 0, 1, 1, 1, 0])
    expected = {"uncoded": 3, "classic": 1, "systematic": 4, "cfs": 3, "compfs": 3}[name]
    assert scheme.decodable(shares, pieces, model) == expected
    exact = 42 if scheme.coded and not scheme.whole else expected
    assert scheme.decodable(shares, pieces, model, lambda: 42) == exact
    if not scheme.whole:
        assert scheme.decodable(shares[:3], pieces[:3], model) is None


# -- a scheme defined outside the package ------------------------------------------------

def test_a_new_scheme_is_parsed_by_name(halves):
    assert Scheme.parse("halves") is Scheme("halves") is Scheme["HALVES"] is halves
    assert names() == (*BUILT_IN, "halves") and registered()[-1] is halves
    assert list(Scheme) == [Scheme.parse(name) for name in BUILT_IN]     # the built-in ones
    assert pickle.loads(pickle.dumps(halves)) is halves
    assert (halves.packets(8), halves.coded, halves.whole, halves.holds) == \
        (2, True, False, "shares")
    with pytest.raises(ValueError, match=f"{CHOICES}, halves; not 'quarters'"):
        Scheme.parse("quarters")


def test_registering(halves):
    with pytest.raises(ValueError, match="named 'halves' already"):
        register(Halves("halves"))
    with pytest.raises(ValueError, match="named 'cfs' already"):
        register(Halves("cfs"))
    with pytest.raises(ValueError, match="reserved"):
        register(Halves("ideal"))
    with pytest.raises(TypeError, match="must be a Scheme"):
        register("thirds")
    with pytest.raises(ValueError, match="lower-case identifier"):
        Halves("Two Halves")
    with pytest.raises(ValueError, match="cannot be unregistered"):
        unregister("cfs")
    with pytest.raises(ValueError, match="No scheme is registered as 'thirds'"):
        unregister("thirds")


def test_unregistered(halves):
    unregister("halves")
    try:
        assert names() == tuple(BUILT_IN)
        with pytest.raises(ValueError, match=CHOICES + "; not 'halves'"):
            Scheme.parse("halves")
        with pytest.raises(ValueError, match="scheme"):
            simulate(Model(2, 1, 1), "halves")
    finally:
        register(halves)        # for the fixture to take away


@pytest.mark.parametrize("m", [1, 2, 4, 5])
@pytest.mark.parametrize("link_rate", [math.inf, 3e6])
def test_a_new_scheme_runs_in_the_simulator(halves, m, link_rate):
    """Halves sends each whole result as 2 plain pieces: the master needs R copies of each,
    the last of them at the same moment as systematic's m pieces (the same bytes cross the
    same links), for any m; exact tracking and counting agree."""
    model = Model(6, 3, m, piece_time=ShiftedExponential(0.01, 0.01), slowdown={0: 3, 4: 5},
                  link_rate={1: link_rate, 5: link_rate}, shares=(1, 2, 1, 1, 2, 1),
                  piece_bytes=1e5, seed=m)
    seconds = simulate(model, "halves")
    assert 0 < seconds < math.inf
    assert seconds == pytest.approx(simulate(model, "systematic"))
    times = compare(model)
    assert list(times) == [*BUILT_IN, "halves", "ideal"] and times["halves"] == seconds
    assert simulate(model, halves) == seconds


def test_a_new_scheme_counts_as_tracked(halves, monkeypatch):
    from ffcode import sim
    model = Model(5, 3, 4, piece_time=ShiftedExponential(0.01, 0.02), slowdown={2: 4},
                  shares=2, seed=3)
    exact = simulate(model, "halves")
    monkeypatch.setattr(sim, "EXACT_UP_TO", 0)
    assert simulate(model, "halves") == exact


def test_a_new_scheme_decodes_exactly(halves):
    """Its own send step and the collector it inherits (a Decoder of 2 pieces) decode."""
    code = MDS(F, 3, 5)
    A, x = F.random((7, 3), seed=5), F.random(3, seed=6)
    encoding, collector = _run_locally(halves, code, A, x, 4, order=[2, 4, 0, 1, 3])
    assert collector.complete and np.array_equal(collector.result(), F.matmul(A, x))
    assert halves.needed(code, encoding, 4) == 6 and collector.needed == 6
    assert halves.coefficient_seeds(1, [0, 1]) is None
