"""A coded job on a worker: the steps of the "coded" kind (runtime/shared/kinds.py), and
the exceptions by which a job's steps tell the worker process how they ended. A worker
works through its shares in order: computing a share's result whole and sending it as its
scheme says, a turn a share, or, at full speed, a packet per piece as it is computed, a
turn a piece (the worker's queue may give another job's turn between two). It
checks for a stop between pieces and in every injected pause; injected faults slow,
pause and corrupt it here (a slowdown k pauses k - 1 times the CPU time a piece took).

An injected malicious worker's payload stays well-formed: one element off by one.

>>> import numpy as np
>>> tamper(GF(7), np.array([[1, 2]]), 0, "piece", None).tolist()
[[2, 2]]
"""
from __future__ import annotations

import threading
import time

import numpy as np

from ffcode.field import GF
from ffcode.pieces import PieceShare, piece_packets, piece_results, stacked_results
from ffcode.runtime.shared import local, wire
from ffcode.runtime.shared.payloads import Coded
from ffcode.runtime.shared.task import packet_index
from ffcode.runtime.shared.wire import Kind
from ffcode.runtime.worker.taskqueue import PIECE


class Stopped(Exception):
    """The job was stopped while the compute thread waited (to hand over a packet, or for
    a relay's group)."""


class Unable(Exception):
    """The worker can do no more of a job, though nothing is wrong with the job (a relay
    whose group lost more workers than its code absorbs): it says DONE after what it
    sent, as a straggler that ran out of work."""


def operation(task: Coded):
    """(F, op): the coded task's field and its computation on the operands, checked to give
    field elements."""
    F = GF(task.p)
    f = local.load_function(task.f)
    return F, lambda *operands: F.elements(f(F, *operands), "the local result")


def tamper(F, payload, index, mode, rng):
    """An injected malicious worker's payload: random elements, one element of its first
    piece off by one, or a random row too many; well-formed in every case."""
    if mode == "random":
        return F.random(payload.shape, rng)
    if mode == "shape" and payload.ndim:
        return np.concatenate([payload, F.random((1,) + payload.shape[1:], rng)])
    if mode == "piece" and index == 0 and payload.size:
        payload = payload.copy()
        payload.flat[0] = F.add(payload.flat[0], 1)
    return payload


def compute(job, out, worker=None):
    """Run one task to its end (its kind's steps one after another; ``worker``: the
    process serving it, a plain worker's stand-in by default)."""
    for _ in job.kind.steps(job, out, worker or _PLAIN):
        pass


def coded_steps(job, out, worker):
    """A coded job's steps (its kind's, runtime/shared/kinds.py): the worker computes
    its f itself; refused by a relay, whose group computes."""
    if worker.relays:
        raise ValueError("this worker is a relay: it runs a hierarchical code's inner "
                         "code, and the task has none")
    return steps(job, out, operation(job.coded))


def steps(job, out, computation):
    """Run one coded task, its shares in order, handing each message to out(header,
    frames): a generator that yields after each turn (a piece at full speed, else a
    share), so that the compute thread can turn to another job; returns early on a stop.
    ``computation``: (F, op)."""
    F, op = computation
    held = job.shares                   # read once: an unload may clear it meanwhile
    if held is None:
        if job.stop.is_set():
            return                      # stopped, then unloaded, before it started: no work
        raise ValueError(f"this worker holds no resident data {job.data} (never loaded, or "
                         f"unloaded)")
    shares = job.coded.shares
    if len(held) != shares:
        raise ValueError(f"the task names {shares} shares of resident data {job.data}, this "
                         f"worker holds {len(held)}")
    delays = job.faults.delays
    work = len(delays) // shares            # pieces of work per share, a pause each
    corrupt = job.faults.corrupt
    rng = np.random.default_rng() if corrupt else None     # fresh entropy costs 30 us
    seeds = job.coded.seeds or [None] * shares
    kept: list = []                     # answering once: every packet, until the last
    once = job.coded.once

    def send(*packet):
        """A packet (index, rows, compute seconds, coefficients, payload) out now, or kept
        for the answer."""
        if once:
            kept.append(packet)
        else:
            send_packet(job, out, *packet)

    for k, share in enumerate(held):
        finished = yield from share_steps(job, F, op, share, k,
                                          delays[k * work:(k + 1) * work], seeds[k], rng, send)
        if not finished:
            return
    if kept and answer(job, kept, out):
        return
    for packet in kept:                 # packets that do not make one answer: one by one
        send_packet(job, out, *packet)
    out(job.header(Kind.DONE), job.ended(Kind.DONE)[1:])


def send_packet(job, out, index, rows, compute, coeffs, payload) -> None:
    """One PACKET to out(header, frames); on a lossy link, kept for fresh combinations of
    its share (runtime/worker/lossy.py)."""
    if job.kept is not None:
        job.kept.setdefault(index // job.coded.pieces, {})[index] = (coeffs, payload, rows)
    header = job.header(Kind.PACKET, index, rows, compute)
    out(header, wire.packet_arrays(header, coeffs, payload))


def answer(job, packets: list, out) -> bool:
    """Send a task's packets (index, rows, compute seconds, coefficients, payload) as one
    ANSWER, done implied: all of them, numbered 0, 1, ... as the master numbers them (share
    k's piece j is packet k·m + j); False, nothing sent, when they are not (a scheme's send
    step numbering them otherwise) or do not stack (results of different rows or
    shapes)."""
    indices, rows, computes, coeffs, payloads = zip(*packets)
    if list(indices) != list(range(len(packets))) or len(set(rows)) > 1:
        return False
    header = job.header(Kind.ANSWER, 0, rows[0], sum(computes))
    try:
        frames = wire.answer_arrays(header, list(coeffs), list(payloads))
    except ValueError:
        return False
    out(header, frames)
    return True


def share_steps(job, F, op, share, k, delays, seed, rng, out):
    """Compute the task's share k and send its packets, numbered on from k·m, by its
    scheme's send step (``packets_of``), each to out(index, rows, compute seconds,
    coefficients, payload), yielding after each piece at full speed, else
    after the share (the compute thread may turn to another job); False if the job was
    stopped. A slowdown k pauses k - 1 times the CPU
    time the piece took (its thread's: what a k times slower processor would add, whatever
    else shares the cores)."""
    scheme, m = job.coded.strategy, job.coded.pieces
    work = len(delays) or m                 # the job's pieces of work per share
    slowdown, corrupt = job.faults.slowdown, job.faults.corrupt
    if scheme.piecewise:                # a packet per piece, as it is computed
        blocks, G, *rest = share
        piece_share = PieceShare(job.worker, G, blocks, (*rest, *job.args),
                                 job.coded.operand)
        results = (stacked_results if job.together else piece_results)(op, piece_share)
        computed = iter(scheme.packets_of(F, results, work, job.worker, seed))
        for j in range(m):
            packet, spent, cpu = _timed(next, computed, slowed=slowdown != 1)
            if paused(job, (slowdown - 1) * cpu + delays[j]):
                return False
            out(packet_index(k, j, m), 0, spent, packet.coeffs,
                tamper(F, packet.payload, j, corrupt, rng))
            if j < m - 1:
                yield PIECE             # a turn a piece: another job's may come between
        yield
        return True
    y, spent, cpu = _timed(op, *share, *job.args, slowed=slowdown != 1)  # then packets
    if paused(job, (slowdown - 1) * cpu + sum(delays)):
        return False
    y = tamper(F, y, 0, corrupt, rng)   # a wrong result: every packet of it is wrong
    # sparse repairs (cfs): the pieces go plain, fresh combinations mix the lost ones
    packets = piece_packets(F, y, m, job.worker, systematic=True) \
        if job.task.repair == "sparse" else scheme.packets_of(F, y, work, job.worker, seed)
    for packet in packets:
        if job.stop.is_set():
            return False
        out(packet_index(k, int(packet.index), m), y.shape[0], spent, packet.coeffs,
            packet.payload)
        spent = 0.0
    yield
    return True


def _timed(function, *args, slowed: bool = True) -> tuple:
    """(function(*args), its wall seconds, its CPU seconds in this thread: 0 unless
    ``slowed``, as only a slowdown needs them)."""
    start, cpu = time.perf_counter(), time.thread_time() if slowed else 0.0
    result = function(*args)
    return (result, time.perf_counter() - start,
            time.thread_time() - cpu if slowed else 0.0)


def paused(job, seconds) -> bool:
    """An injected pause, cut short by a stop (True when stopped); the longest wait the
    platform takes bounds it (faults bound each pause, not their sum)."""
    if seconds <= 0:
        return job.stop.is_set()
    return job.stop.wait(min(seconds, threading.TIMEOUT_MAX))




class _Plain:
    """A plain worker as a task's steps see it, for ``compute``."""
    relays = False


_PLAIN = _Plain()
