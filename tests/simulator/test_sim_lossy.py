"""The simulator on links that lose packets (ffcode.sim.simulate_lossy, ffcode.sim_lossy):
without loss it is the loss-free simulator exactly; the losses are the channel's, the
task's sends and its answer drawn first; each worker follows ffcode.delivery's rule (a
task sent again after each wait until it gets through, a loss found by an acknowledgement
made up at once, the last of a burst after its timeout, giving up after GIVE_UP timeouts);
the rateless schemes send about what the losses call for; repeating schemes take longer as
the loss grows; dead links; the model's checks of loss, burst and rtt."""
import math
import statistics
import time
from dataclasses import replace

import numpy as np
import pytest

from ffcode import sim, sim_lossy
from ffcode.channel import Loss
from ffcode.delivery import GIVE_UP, POLLS, TASK_TRIES, GiveUp, Poll, Stream
from ffcode.errors import InvalidParameterError
from ffcode.schemes import NAMES, Scheme
from ffcode.sim import Model, Pareto, ShiftedExponential, simulate, simulate_lossy
from ffcode.sim_lossy import worker_sends

TEN_MS = ShiftedExponential(0.01, 0.0)
MODELS = {
    "stragglers": Model(6, 4, 4, piece_time=ShiftedExponential(0.1, 0.0),
                        slowdown={3: 4, 4: 4, 5: 4}),
    "shares": Model(6, 4, 4, piece_time=ShiftedExponential(0.1, 0.05), shares=2, seed=3),
    "links": Model(5, 3, 3, piece_time=ShiftedExponential(0.01, 0.05),
                   link_rate={0: 2e6, 1: 5e6, 3: 1e7}, master_rate=3e7, piece_bytes=1e5,
                   share_cost=0.002, shares={1: 3}, seed=7),
    "counted": Model(40, 20, 30, piece_time=Pareto(0.01, 2.5), seed=2),  # m·R > EXACT_UP_TO
}


def _sends(model, scheme, worker):
    ready, sizes, held = scheme.packet_times(model)
    return worker_sends(model, worker, scheme, ready[worker, held[worker]],
                        sizes[worker, held[worker]])


def _traffic(monkeypatch, model, scheme, worker):
    """What the worker sends (``_sends``), and its stream's log, in order: ("packet", when
    it left), ("poll", when, number) as the stream asked, ("ack", when, poll) for each
    acknowledgement (poll: the Poll it answers, or None) that reached it, ("give up",
    when) if it gave up."""
    streams = []

    class Logged(Stream):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.log = []
            streams.append(self)

        def sent(self, index, share, message, now, **how):
            self.log.append(("packet", now))
            return super().sent(index, share, message, now, **how)

        def tick(self, now):
            out = super().tick(now)
            self.log += [("poll", now, o.number) for o in out if isinstance(o, Poll)]
            self.log += [("give up", now) for o in out if isinstance(o, GiveUp)]
            return out

        def acked(self, got, ranks, ended, now, poll=None):
            self.log.append(("ack", now, poll))
            return super().acked(got, ranks, ended, now, poll)

    with monkeypatch.context() as patched:
        patched.setattr(sim_lossy, "Stream", Logged)
        sent = _sends(model, scheme, worker)
    (stream,) = streams
    return sent, stream.log


def _up(log):
    """The messages up in the log (packets and polls), in the order they left."""
    return [entry for entry in log if entry[0] in ("packet", "poll")]


# -- (1) no loss: the loss-free simulator's seconds, exactly ----------------------------------

@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("scheme", NAMES)
def test_no_loss_is_the_loss_free_simulator(name, scheme):
    model = MODELS[name]
    run = simulate_lossy(model, scheme)
    assert run.seconds == simulate(model, scheme)
    assert run.lost == 0 and run.sent >= run.needed == Scheme.parse(scheme).packets_needed(model)


@pytest.mark.parametrize("rtt", [0.001, 1.0])
def test_no_loss_sends_each_packet_once(rtt):
    """Nothing is sent again nor made up: every worker's packets are its originals, at the
    loss-free times (its task came at once), with round trips up to the longest timeout
    (1 s: the timer has measured them, and waits three)."""
    model = replace(MODELS["shares"], rtt=rtt)
    for scheme in map(Scheme.parse, NAMES):
        ready, _, held = scheme.packet_times(model)
        for worker in range(model.n_workers):
            sent = _sends(model, scheme, worker)
            assert sent.left.tolist() == sorted(ready[worker, held[worker]].tolist())
            assert sent.counts.all() and not sent.lost.any()


def test_simulate_takes_the_lossy_path_only_with_loss(monkeypatch):
    model = replace(MODELS["stragglers"], loss={2: 0.3})
    for scheme in NAMES:
        assert simulate(model, scheme) == simulate_lossy(model, scheme).seconds
    assert sim.compare(model)["ideal"] == sim.compare(MODELS["stragglers"])["ideal"]
    loss_free = {name: {scheme: simulate(model, scheme) for scheme in NAMES}
                 for name, model in MODELS.items()}

    def lossy(*args):
        raise AssertionError("the lossy path taken without loss")
    monkeypatch.setattr(sim, "simulate_lossy", lossy)
    monkeypatch.setattr(sim.sim_lossy, "worker_sends", lossy)
    for name, model in MODELS.items():          # loss 0, however given: not lossy
        for again in (model, replace(model, loss=0.0, burst=4), replace(model, loss={1: 0})):
            assert {scheme: simulate(again, scheme) for scheme in NAMES} == loss_free[name]


@pytest.mark.parametrize("scheme", ["systematic", "cfs", "compfs"])
@pytest.mark.parametrize("seed", range(4))
def test_counting_rule_equals_rank_tracking_under_loss(monkeypatch, scheme, seed):
    """Copies that came again and combinations that add nothing are left out of both."""
    model = Model(6, 3, 4, piece_time=ShiftedExponential(0.01, 0.01), loss=0.3, burst=2,
                  shares=2, seed=seed)
    exact = simulate_lossy(model, scheme)
    monkeypatch.setattr(sim, "EXACT_UP_TO", 0)
    assert simulate_lossy(model, scheme) == exact


# -- (2) the losses are the channel's ---------------------------------------------------------

@pytest.mark.parametrize("burst", [None, 4])
def test_the_messages_fates_are_the_links(burst, monkeypatch):
    """Each worker's messages up, its answer to the task and then its packets and polls in
    the order they leave, meet the fates of Loss(p, burst).link(seed=[seed, 29, worker]);
    down, the task's sends meet the first fates of [seed, 31, worker], and the master's
    acknowledgements and answers to polls the rest, one for each packet or poll that
    arrived, in that order: those not lost reach the worker rtt after their packet or poll
    left, in order, an answer numbered as its poll. The same seed gives the same run."""
    model = Model(4, 2, 6, piece_time=TEN_MS, loss=[0.1, 0.3, 0.0, 0.5], burst=burst, seed=5)
    for worker in range(model.n_workers):           # every task gets through, at last
        assert not Loss(model.loss[worker], burst).link(seed=[5, 31, worker]) \
            .losses(TASK_TRIES).all()
    polls = answered = 0
    for scheme in map(Scheme.parse, NAMES):
        for worker in range(model.n_workers):
            sent, log = _traffic(monkeypatch, model, scheme, worker)
            up = Loss(model.loss[worker], burst).link(seed=[5, 29, worker])
            down = Loss(model.loss[worker], burst).link(seed=[5, 31, worker])
            up.lost()                                   # its answer to the task
            while down.lost():                          # the task's sends
                pass
            messages = _up(log)
            fates = up.losses(len(messages)).tolist()
            assert len(sent.lost) > 0
            assert sent.left.tolist() == [m[1] for m in messages if m[0] == "packet"]
            assert sent.lost.tolist() == [f for m, f in zip(messages, fates)
                                          if m[0] == "packet"]
            numbers = [m[2] for m in messages if m[0] == "poll"]
            assert numbers == list(range(len(numbers)))
            assert not numbers or scheme.rateless       # ARQ schemes never poll
            acks = [(m[1] + model.rtt, None if m[0] == "packet" else m[2])
                    for m, lost in zip(messages, fates) if not lost and not down.lost()]
            assert [(t, poll) for _, t, poll in (e for e in log if e[0] == "ack")] == acks
            polls += len(numbers)
            answered += sum(poll is not None for _, poll in acks)
        assert simulate_lossy(model, scheme) == simulate_lossy(replace(model), scheme)
    assert polls > answered > 0                        # (some polls or answers lost)
    assert simulate_lossy(model, "cfs") != simulate_lossy(replace(model, seed=6), "cfs")


def _runs(lost: np.ndarray) -> list:
    edges = np.diff(np.concatenate([[0], lost.astype(int), [0]]))
    return (np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).tolist()


@pytest.mark.parametrize("p, burst", [(0.1, None), (0.3, None), (0.2, 4.0), (0.4, 4.0)])
def test_loss_share_and_runs(p, burst, monkeypatch):
    """Over a long run the link loses p of the messages in runs of mean ``burst``
    (1 / (1 - p) when independent), and so do the simulated workers' messages up, packets
    and polls (a little more: a worker sends more while its link is bad). Independent, the
    packets alone too; in bursts they lose less, the polls going in the bad spells (at the
    timeouts of packets lost in them). Measured (compfs, 40 workers' messages up | their
    packets): at p = 0.1, 0.3 0.104 in runs of 1.11, 0.294 1.41 | 0.105 1.10, 0.296 1.44;
    in bursts of 4, at p = 0.2, 0.4: 0.21 4.06, 0.43 4.31 | 0.15 2.48, 0.38 2.99."""
    mean_run = burst or 1 / (1 - p)
    model = Model(40, 10, 50, piece_time=TEN_MS, loss=p, burst=burst, seed=1)
    fates = model.losses[0].link(seed=[1, 29, 0]).losses(100_000)
    assert fates.mean() == pytest.approx(p, abs=0.01)
    assert statistics.fmean(_runs(fates)) == pytest.approx(mean_run, rel=0.05)
    packets, messages = [], []
    for worker in range(model.n_workers):
        sent, log = _traffic(monkeypatch, model, Scheme.COMPFS, worker)
        packets.append(sent.lost)
        up = model.losses[worker].link(seed=[1, 29, worker]).losses(1 + len(_up(log)))
        messages.append(up[1:])                     # (after its answer to the task)
    for lost in (messages, packets) if burst is None else (messages,):
        assert np.concatenate(lost).mean() == pytest.approx(p, abs=0.035)
        assert statistics.fmean(r for w in lost for r in _runs(w)) == \
            pytest.approx(mean_run, rel=0.15)
    if burst:
        assert np.concatenate(packets).mean() < np.concatenate(messages).mean() - 0.03


# -- (3) rateless schemes send about what the losses call for ---------------------------------

SEEDS = range(20)
OVERHEAD_SEEDS = range(40)


def _overhead(scheme, p, burst):
    """The mean over seeds of sent / (needed / (1 - p)): N = 12, R = 8, m = 8, one share
    each, pieces of 10 ms, no stragglers, rtt 1 ms."""
    runs = [simulate_lossy(Model(12, 8, 8, piece_time=TEN_MS, loss=p, burst=burst,
                                 rtt=0.001, seed=seed), scheme) for seed in OVERHEAD_SEEDS]
    assert all(math.isfinite(r.seconds) for r in runs)
    return statistics.fmean(r.sent / (r.needed / (1 - p)) for r in runs)


@pytest.mark.parametrize("burst", [None, 4])
@pytest.mark.parametrize("p", [0.05, 0.1, 0.2, 0.3, 0.4])
@pytest.mark.parametrize("scheme", ["cfs", "compfs"])
def test_rateless_schemes_send_what_the_losses_call_for(scheme, p, burst):
    """Within a tenth of a sender told of each loss at once. Measured (40 seeds), at
    p = 0.05, 0.1, 0.2, 0.3, 0.4: cfs 1.00 0.99 1.00 0.99 0.98, in bursts of 4 1.00 1.00
    0.99 0.98 0.99; compfs 1.00 1.00 1.00 0.98 0.98, in bursts 0.98 0.97 0.94 0.92 0.93.
    Below 1: the master decodes from the workers whose packets got through first, and in
    bursts the packets lose less than p (polls go in the bad spells: test_loss_share_and_
    runs). Before polls (a packet taken for lost at its first timeout) they were cfs 1.00
    0.99 1.00 1.00 1.02, in bursts 1.00 1.00 1.02 1.06 1.14; compfs 1.03 1.04 1.07 1.05
    1.06, in bursts 1.02 1.04 1.07 1.10 1.18: compfs sends its pieces one by one, 10 ms
    apart, each alone in flight, so a lost acknowledgement met its packet's timeout (10 ms)
    before the next acknowledgement (11 ms), and the packet, arrived, was made up in vain;
    now the answer to the poll shows it there. A lost task starts its worker 50 ms or more
    later (at p = 0.4 in bursts, over a third of the workers: the downlink stays bad over
    the tries), so the master decodes later, and the workers that started on time go
    through their whole deliveries first."""
    assert _overhead(scheme, p, burst) <= 1.1


# -- (4) repeating schemes ---------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["uncoded", "classic", "systematic"])
def test_repeating_takes_longer_as_loss_grows(scheme):
    """Each loss costs a timeout before the copy leaves; every packet needed is sent, and
    arrives, at least once."""
    means = []
    for p in (0.0, 0.1, 0.2, 0.4):
        runs = [simulate_lossy(Model(12, 8, 8, piece_time=TEN_MS, loss=p, seed=seed), scheme)
                for seed in SEEDS]
        assert all(r.sent >= r.needed for r in runs)
        assert all(r.sent - r.lost >= r.needed for r in runs if math.isfinite(r.seconds))
        means.append(statistics.fmean(r.seconds for r in runs))
    assert means == sorted(means) and means[-1] > means[0]


def _seed(uplink, downlink, loss=Loss(0.5)):
    """The first seed whose worker 0 on a link losing as ``loss`` (half, independently)
    meets the fates ``uplink`` up (its answer to the task, then its packets in the order
    they leave) and ``downlink`` down (the task's sends, then the master's
    acknowledgements)."""
    return next(s for s in range(1000)
                if loss.link(seed=[s, 29, 0]).losses(len(uplink)).tolist() == uplink
                and loss.link(seed=[s, 31, 0]).losses(len(downlink)).tolist() == downlink)


def test_a_lost_task_is_sent_again_after_each_wait():
    """The worker starts when its task gets through: a send lost, one wait (50 ms) later,
    two lost, 50 + 100 ms later; its pieces (of 10 ms each, sent one by one by compfs) are
    ready that much later, and so is the master's decoding."""
    for lost, start in [(0, 0.0), (1, 0.05), (2, 0.15)]:
        model = Model(1, 1, 2, piece_time=TEN_MS, loss=0.5,
                      seed=_seed([False] * 3, [True] * lost + [False] * 3))
        sent = _sends(model, Scheme.COMPFS, 0)
        assert sent.left.tolist() == pytest.approx([start + 0.01, start + 0.02])
        assert sent.counts.all() and not sent.lost.any()
        run = simulate_lossy(model, "compfs")
        assert run == sim.LossyRun(pytest.approx(start + 0.02), 2, 0, 2)


def test_a_task_sent_task_tries_times_loses_its_worker():
    """A task is sent up to TASK_TRIES times, each wait twice the one before up to 0.5 s:
    the last send, if it gets through, starts the worker after the waits before it
    (6.25 s); lost too, the worker never starts, and sends nothing. Links losing half, in
    runs of 16."""
    loss = Loss(0.5, burst=16)
    waits = sum(min(0.5, 0.05 * 2**k) for k in range(TASK_TRIES - 1))
    late = Model(1, 1, 2, piece_time=TEN_MS, loss=0.5, burst=16,
                 seed=_seed([False] * 2, [True] * (TASK_TRIES - 1) + [False] * 2, loss))
    assert _sends(late, Scheme.CLASSIC, 0).left.tolist() == pytest.approx([waits + 0.02])
    lost = replace(late, seed=_seed([], [True] * TASK_TRIES, loss))
    assert len(_sends(lost, Scheme.CLASSIC, 0).left) == 0
    assert simulate_lossy(lost, "classic") == sim.LossyRun(math.inf, 0, 0, 1)


def test_a_lost_whole_result_is_sent_again_after_the_timeout():
    """One worker, its one packet lost: nothing after it to tell, so its copy leaves when its
    timeout is up (10 ms, the least: the timer has measured round trips of 1 ms), and is
    acknowledged."""
    model = Model(1, 1, 2, piece_time=TEN_MS, loss=0.5,
                  seed=_seed([False, True, False], [False, False]))
    sent = _sends(model, Scheme.CLASSIC, 0)
    assert sent.left.tolist() == pytest.approx([0.02, 0.03])
    assert simulate_lossy(model, "classic") == sim.LossyRun(sent.left[1], 2, 1, 1)


def test_a_loss_found_by_an_acknowledgement_is_made_up_at_once():
    """Piece 0 lost, piece 1 arrives: its acknowledgement (rtt = 1 ms later) tells, and the
    worker sends piece 0 again (systematic) or one fresh combination for it (cfs) then,
    not a timeout later; the master decodes at 21 ms."""
    model = Model(1, 1, 2, piece_time=TEN_MS, loss=0.5,
                  seed=_seed([False, True, False, False], [False, False, False]))
    for scheme in (Scheme.SYSTEMATIC, Scheme.CFS):
        sent = _sends(model, scheme, 0)
        assert sent.left.tolist() == pytest.approx([0.02, 0.02, 0.021])
        assert sent.lost.tolist() == [True, False, False]
        assert sent.counts.tolist() == [False, True, True]
        assert simulate_lossy(model, scheme).seconds == pytest.approx(0.021)


def test_a_silent_link_is_given_up_after_give_up_timeouts(monkeypatch):
    """The task got through, and then the link loses everything up (half its messages, in
    runs of 1000): the worker gives up at its GIVE_UP-th timeout counted in a row, each
    counted, the stream's own backoff doubling at each: t_k = 10 ms·2^k up to 1 s (the
    timer has measured round trips of 1 ms). Classic sends its one packet at each timeout,
    the k-th copy waiting t_k. cfs asks the master about its 4 packets (or their
    stand-ins) at POLLS timeouts (one poll each time, lost; a poll stands in for the
    packets, re-armed before the timeout that asks backs off: after the k-th it waits
    t_(k-1)), and at the next takes them for lost and sends a fresh combination for each
    (after the k-th, waiting t_k). Both give up about as soon: 10.31 s classic, 9.4 s cfs
    (before, a poll's timeout did not count, and cfs gave up after 4·GIVE_UP packets)."""
    loss = Loss(0.5, burst=1000)
    rounds = [k for k in range(1, GIVE_UP) if k % (POLLS + 1) == 0]   # fresh ones then
    packets, polls = 4 * (1 + len(rounds)), GIVE_UP - 1 - len(rounds)
    up = 1 + packets + polls
    model = Model(6, 4, 4, piece_time=TEN_MS, loss={0: 0.5}, burst={0: 1000},
                  seed=_seed([True] * up, [False], loss))
    t = [min(1.0, 0.01 * 2**k) for k in range(GIVE_UP)]
    sent, log = _traffic(monkeypatch, model, Scheme.CLASSIC, 0)
    assert sent.lost.all() and len(sent.left) == len(_up(log)) == GIVE_UP
    assert sent.left[-1] - sent.left[0] == pytest.approx(sum(t[:-1]))
    assert log[-1] == ("give up", pytest.approx(sent.left[0] + sum(t)))
    assert log[-1][1] == pytest.approx(10.31)
    sent, log = _traffic(monkeypatch, model, Scheme.CFS, 0)
    assert sent.lost.all() and len(sent.left) == packets == 16
    assert [m[0] for m in _up(log)].count("poll") == polls == 12
    assert 1 + len(_up(log)) == up and not any(m[0] == "ack" for m in log)
    waits = [t[0]] + [t[k] if k in rounds else t[k - 1] for k in range(1, GIVE_UP)]
    timeouts = sent.left[0] + np.cumsum(waits)      # the k-th counted at timeouts[k - 1]
    assert [m[1] for m in _up(log) if m[0] == "poll"] == \
        pytest.approx([timeouts[k - 1] for k in range(1, GIVE_UP) if k not in rounds])
    assert np.unique(sent.left).tolist() == \
        pytest.approx([sent.left[0]] + [timeouts[k - 1] for k in rounds])
    assert log[-1] == ("give up", pytest.approx(timeouts[-1]))
    assert log[-1][1] == pytest.approx(9.4)


# -- (5) dead links ----------------------------------------------------------------------------

def test_one_dead_link_is_made_up_for_by_redundancy():
    """A link that loses everything never carries the task: its worker never starts, and
    sends not a single packet; the others decode without it, but for uncoded."""
    model = Model(6, 4, 4, piece_time=TEN_MS, loss={0: 1.0})
    times = sim.compare(model)
    assert math.isinf(times["uncoded"])
    assert all(math.isfinite(times[s]) for s in ("classic", "systematic", "cfs", "compfs"))
    for scheme in map(Scheme.parse, NAMES):
        assert len(_sends(model, scheme, 0).left) == 0
        assert all(len(_sends(model, scheme, w).left) > 0 for w in range(1, 6))
        assert simulate_lossy(model, scheme).lost == 0


def test_too_many_dead_links_never_decode():
    model = Model(6, 4, 4, piece_time=TEN_MS, loss={0: 1.0, 3: 1.0, 5: 1.0}, burst={3: 2})
    for scheme in map(Scheme.parse, NAMES):
        assert simulate(model, scheme) == math.inf
        run = simulate_lossy(model, scheme)     # the live links' everything, none lost
        assert all(len(_sends(model, scheme, w).left) == 0 for w in (0, 3, 5))
        assert run.lost == 0
        assert run.sent == sum(len(_sends(model, scheme, w).left) for w in (1, 2, 4)) > 0


# -- (6) the model's checks -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"loss": -0.1}, r"loss.*worker 0.*probability in \[0, 1\]"),
    ({"loss": 1.5}, r"probability in \[0, 1\], not 1.5"),
    ({"loss": math.nan}, r"probability in \[0, 1\], not nan"),
    ({"loss": "0.1"}, r"must be a number in \[0, 1\], not str"),
    ({"loss": {1: 2.0}}, r"worker 1 .*not 2.0"),
    ({"loss": [0.1, 0.2]}, r"'loss' gives 2 values for 3 workers"),
    ({"loss": {5: 0.1}}, r"loss names worker 5"),
    ({"loss": 0.2, "burst": 0.5}, r"burst.*>= 1 message, not 0.5"),
    ({"loss": 0.8, "burst": 2}, r"too short for p = 0.8"),
    ({"loss": 0.1, "burst": "4"}, r"burst' must be a number, not str"),
    ({"rtt": -0.001}, r"'rtt'"),
    ({"rtt": math.inf}, r"'rtt'"),
    ({"rtt": math.nan}, r"'rtt'"),
])
def test_bad_loss_burst_or_rtt_is_refused(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        Model(3, 2, 2, **kwargs)


def test_loss_and_burst_per_worker():
    model = Model(3, 2, 2, loss={1: 0.5}, burst=[None, 4, None], rtt=0.0)
    assert model.loss.tolist() == [0.0, 0.5, 0.0] and model.burst == (None, 4.0, None)
    assert model.losses[1] == Loss(0.5, 4.0) and model.rtt == 0.0
    again = replace(model)                  # a Model's own values are taken again
    assert again.losses == model.losses
    with pytest.raises(ValueError, match="scheme"):
        simulate_lossy(model, "ideal")


def test_thirty_workers_with_four_shares_in_well_under_a_second():
    model = Model(30, 60, 8, shares=4, piece_time=ShiftedExponential(0.01, 0.01), loss=0.3,
                  burst=4, seed=3)
    start = time.perf_counter()
    times = sim.compare(model)
    assert time.perf_counter() - start < 2.0                    # six schemes, ideal included
    assert times["ideal"] <= times["compfs"] < times["classic"]


# -- sparse repairs ----------------------------------------------------------------------------

def test_sparse_repairs_decode_and_mix_only_lost_pieces():
    """cfs with repair="sparse": every seeded run decodes; each repair mixes pieces of its
    share that were lost (or taken for lost at a timeout: a few), never all when only some
    were; dense runs are what they were."""
    mixed = overreach = 0
    for seed in range(20):
        model = Model(n_workers=6, recovery_threshold=4, pieces=4, loss=0.3, seed=seed,
                      piece_time=ShiftedExponential(0.01, 0.0))
        run = simulate_lossy(model, "cfs", repair="sparse")
        assert np.isfinite(run.seconds) and run.sent >= run.needed
        ready, sizes, _ = Scheme.CFS.packet_times(model)
        sent = sim_lossy.worker_sends(model, 0, Scheme.CFS, ready[0], sizes[0], "sparse")
        lost = {int(p) for p, gone, a in zip(sent.piece, sent.lost, sent.among)
                if gone and not a}
        for among, piece in zip(sent.among, sent.piece):
            if among:
                mixed += 1
                assert set(among) <= set(range(4))
                overreach += not set(among) <= lost
        dense = sim_lossy.worker_sends(model, 0, Scheme.CFS, ready[0], sizes[0])
        assert not any(dense.among)
    assert mixed > 10 and overreach <= mixed // 4, (mixed, overreach)


def test_sparse_repairs_are_refused_where_they_cannot_be():
    model = Model(n_workers=4, recovery_threshold=2, pieces=4, loss=0.2, seed=1)
    for scheme, match in (("compfs", "fixed when its data was encoded"),
                          ("classic", "sends a lost packet again")):
        with pytest.raises(ValueError, match=match):
            simulate_lossy(model, scheme, repair="sparse")
    with pytest.raises(ValueError, match="'repair' must be one of"):
        simulate_lossy(model, "cfs", repair="bats")
