"""A worker's part of a coded MapReduce job (planned by runtime/master/mapreduce.py), as two
tasks from its master and the state kept between them.

The map task carries the worker's files: it maps them with the user's function, prepares
what it will send in the shuffle (coded packets, or the values its turn gives it), and
opens the socket its peers will send to: a ROUTER behind a gate that admits only the
job's other workers, proven by the connection (their CURVE keys on tcp; on ipc, in a
directory only this user reaches, the kernel's word on their pids). It answers with its
endpoint. The shuffle task names every worker's endpoint: the
worker dials the others, sends its messages paced as the emulated network says, takes
theirs (each sender known by its connection, each message checked against what it
needs), decodes, reduces, and sends its output to the master. A worker's state between
the tasks is a ``Run``; it stays until the master drops it (a worker lost meanwhile, the
master sends another shuffle task, done without it), or a task of it fails.

Its four tasks are job kinds (runtime/shared/kinds.py) whose payloads, checked as they
arrive, are runtime/shared/phases.py's ``Map``, ``Shuffle``, ``Check`` and ``Drop``: each
step function here takes (job, out, worker), the worker keeping its Runs by job.

Each phase's seconds, on the wall and of CPU, as a worker counts them for its answer:

>>> clock = Clock()
>>> clock.mark()
>>> clock.lap("map")
>>> sorted(clock.wall), sorted(clock.cpu)
(['map'], ['map'])
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator, Optional
from urllib.parse import urlsplit

import numpy as np
import zmq

from ffcode import functions
from ffcode.field import GF
from ffcode.mapreduce import verify
from ffcode.mapreduce.shuffle import Message, Recovery, expected, joined, outgoing, pieces
from ffcode.runtime.shared import keys, local, wire
from ffcode.runtime.shared.phases import Map, Shuffle, chunk_of
from ffcode.runtime.shared.faults import Link
from ffcode.runtime.shared.gate import Gate, peer
from ffcode.runtime.shared.wire import Kind
from ffcode.runtime.worker.peer_links import MOST_SEQ, MOST_WAIT, PeerLinks, segments

POLL = 0.02                 # seconds the shuffle waits on its socket between looks at a stop
LINGER = 2.0                # seconds a finished shuffle's last notes get to leave
MEMORY = 0.5                # of its host's memory, what a worker's runs may hold by default


def budget(memory: Optional[int]) -> int:
    """The bytes this worker's runs may hold, ``memory`` or MEMORY of this host's."""
    if memory is not None:
        return memory
    return int(MEMORY * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


class Clock:
    """Each phase's seconds, on the wall and of CPU (the worker process's: its threads',
    zmq's among them, as Coded TeraSort's implementation counts them with clock())."""

    def __init__(self) -> None:
        self.wall: dict = {}
        self.cpu: dict = {}
        self.mark()

    def mark(self) -> None:
        self.at = (time.perf_counter(), time.process_time())

    def lap(self, phase: str) -> None:
        """The time since the last mark counts to ``phase`` (added to what it had)."""
        wall, cpu = self.at
        self.mark()
        self.wall[phase] = self.wall.get(phase, 0.0) + self.at[0] - wall
        self.cpu[phase] = self.cpu.get(phase, 0.0) + self.at[1] - cpu


class Run:
    """A worker's job between its map and its shuffle: the values it mapped, the messages
    it will send, and the socket its peers send to (its own context and gate)."""

    def __init__(self, spec: Map, held: dict, messages: list, master: str,
                 max_message: int) -> None:
        self.spec, self.held, self.messages = spec, held, messages
        self.pair: Optional[tuple[bytes, bytes]] = None if spec.keys is None else \
            (spec.keys[0].encode(), spec.keys[1].encode())      # this worker's CURVE pair
        self.clock = Clock()
        self.size = held_bytes(held, messages)
        self.busy = False               # a shuffle task uses its sockets
        self.shuffled: Optional[tuple] = None   # the last shuffle's lost, distrust, pieces
        self.dropped = False            # dropped while busy: it goes as its task ends
        self.early: list = []           # messages of a next attempt, come before its task
        self.server: Optional[tuple] = None     # (thread, stop) answering peers' copies
        self.directory: Optional[str] = None
        self.context = zmq.Context()
        ipc = spec.listen == "ipc"
        pids = set(spec.peers) if ipc else set()
        self.gate = Gate(self.context, keys=frozenset() if ipc else frozenset(spec.peers),
                         processes=pids.__contains__)
        self.router = self.context.socket(zmq.ROUTER)
        self.router.linger = 0
        self.router.maxmsgsize = max_message
        self.dials: dict = {}
        try:
            if ipc:
                self.directory = _directory(master)
                endpoint = f"ipc://{self.directory}/peers"
            else:
                assert self.pair is not None, "Map.checked: tcp carries a key pair"
                keys.server(self.router, *self.pair)
                endpoint = f"{_host(spec.listen, master)}:*"
            Gate.bind(self.router, endpoint)
        except BaseException:
            self.close()
            raise
        self.endpoint = self.router.get_string(zmq.LAST_ENDPOINT)

    def sender(self, frame: Any) -> Optional[int]:
        """The worker a received frame comes from, as its connection proves (None: no
        worker of this job)."""
        proven = peer(frame)
        mark = proven.key if self.spec.listen != "ipc" else proven.pid
        return self.spec.peers.index(mark) if mark in self.spec.peers else None

    def dial(self, endpoints: list, lost: tuple = ()) -> None:
        """A DEALER to every other worker's socket but the lost ones' (those of an earlier
        attempt hung up first)."""
        self.hang_up()
        spec = self.spec
        for j, endpoint in enumerate(endpoints):
            if j == spec.index or j in lost:
                continue
            sock = self.context.socket(zmq.DEALER)
            sock.linger = 0
            sock.sndhwm = 1 << 16
            if self.pair is not None:
                keys.client(sock, *self.pair, spec.peers[j].encode())
            sock.connect(endpoint)
            self.dials[j] = sock

    def hang_up(self, linger: float = 0.0) -> None:
        """Close the dials (what they still hold given ``linger`` seconds to leave)."""
        for sock in self.dials.values():
            sock.close(linger=int(linger * 1000))
        self.dials = {}

    def serve(self, peers: Any, attempt: int) -> None:
        """Acknowledge the peers' copies in a thread from now on, until ``quiet``."""
        stop = threading.Event()
        thread = threading.Thread(target=serve, args=(self, peers, attempt, stop),
                                  name="shuffle-peers", daemon=True)
        thread.start()
        self.server = (thread, stop)

    def quiet(self) -> None:
        """Stop acknowledging the peers' copies (the sockets are this thread's again)."""
        if self.server is not None:
            thread, stop = self.server
            stop.set()
            thread.join()
            self.server = None

    def close(self) -> None:
        """Close the sockets, the gate, and the ipc directory."""
        self.quiet()
        self.hang_up()
        self.router.close(linger=0)
        self.gate.stop()
        self.context.term()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def _directory(master: str) -> str:
    """A fresh directory (mode 0700) for the peers' ipc socket: inside the master's private
    one where the master is local (which goes when the master's pool does, whatever
    happens to this worker), else one of this worker's own."""
    if master.startswith("ipc://"):
        return tempfile.mkdtemp(prefix="peers-", dir=os.path.dirname(master[len("ipc://"):]))
    return local.private_dir()


def _host(listen: str, master: str) -> str:
    """tcp://ADDRESS to bind: the address this host reaches HOST from (listen
    "tcp://HOST"), or the master's host ("tcp"): the route the kernel picks, so that
    whoever reaches that host reaches this one (no packet is sent)."""
    host = urlsplit(listen if listen != "tcp" else master).hostname or "127.0.0.1"
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                          socket.SOCK_DGRAM)
    try:
        probe.connect((host, 9))
        return f"tcp://{probe.getsockname()[0]}"
    finally:
        probe.close()


def drop_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """Let go of a job's mapped values and socket (its shuffle will not come; one that
    is still running, stopped but not yet at its end, lets go as it ends)."""
    runs, key = worker.runs, job.payload.run
    run = runs.get(key)
    if run is not None and run.busy:
        run.dropped = True
    elif run is not None:
        runs.pop(key).close()
    answer(job, out, {"dropped": run is not None}, b"")
    yield


def map_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """The map task: map the files, prepare the shuffle's messages, open the peers' socket,
    and answer with its endpoint (a generator yielding between batches)."""
    spec: Map = job.payload
    runs, master = worker.runs, worker.endpoint
    if spec.listen == "ipc" and spec.peers[spec.index] != os.getpid():
        raise ValueError(f"worker {spec.index} of the placement is another process")
    f = local.load_function(spec.f)
    placement, algebra = spec.placement, spec.algebra()
    batches = placement.mapped_by(spec.index)
    files = job.shares[0] if job.shares else []
    if len(files) != len(batches) * placement.per_batch:
        raise ValueError(f"worker {spec.index} maps {len(batches)} batches of "
                         f"{placement.per_batch} files, not {len(files)} files")
    clock = Clock()
    held: dict = {}
    for at, b in enumerate(batches):
        parts: list = [[] for _ in range(placement.workers)]
        for n, number in enumerate(placement.batch_files(b)):
            values = _mapped(f, files[at * placement.per_batch + n], job.args, number,
                             spec, algebra)
            for q, value in enumerate(values):
                parts[q].append(value)
            if job.stop.is_set():
                return
        for q, values in enumerate(parts):
            held[(q, b)] = b"".join(values) if spec.field is None else algebra.total(
                values, f"map function's values for function {q} of batch {b}")
        yield
    clock.lap("map")
    messages = outgoing(placement, spec.index, held, algebra, spec.coded)
    clock.lap("encode")
    fitting(messages, spec.index, job.max_message)
    old = runs.pop(spec.run, None)
    if old is not None:
        old.close()
    _room(runs, spec, held, messages)
    if job.stop.is_set():
        return                  # stopped meanwhile: the master's drop may come first
    run = Run(spec, held, messages, master, job.max_message)
    run.clock = clock
    runs[spec.run] = run
    answer(job, out, {"endpoint": run.endpoint}, b"")


def fitting(messages: list, index: int, max_message: int) -> None:
    """ValueError naming a shuffle message larger than its receivers take (their sockets
    would drop the sender unheard), before anything is sent."""
    largest = max(messages, key=lambda m: _nbytes(m.payload), default=None)
    if largest is not None and _nbytes(largest.payload) > max_message:
        raise ValueError(f"worker {index}'s shuffle message to workers "
                         f"{list(largest.receivers)} is {_nbytes(largest.payload)} bytes, "
                         f"larger than the {max_message} bytes its peers take: use more "
                         f"files, or a Cluster with a larger max_message")


def held_bytes(held: dict, messages: list) -> int:
    """The bytes a run holds, at most (a message may share its value's)."""
    return sum(_nbytes(v) for v in held.values()) + sum(_nbytes(m.payload) for m in messages)


def _room(runs: dict, spec: Map, held: dict, messages: list) -> None:
    """ValueError unless this worker's runs of the jobs in flight and the new one's fit in
    its memory budget (each held until its job ends: none can be let go)."""
    new = held_bytes(held, messages)
    others = sum(run.size for run in runs.values())
    limit = budget(spec.memory)
    if new + others > limit:
        raise ValueError(f"worker {spec.index} would hold {new + others} bytes of MapReduce "
                         f"jobs (this one's {new}, and {others} of {len(runs)} others in "
                         f"flight), over its budget of {limit} bytes: run fewer jobs at "
                         f"once, or give run_mapreduce a larger memory")


def _mapped(f: Callable, data: Any, args: list, number: int, spec: Map,
            algebra: Any) -> list:
    """A file's values, one per reduce function: a list or tuple of K values, checked;
    ValueError (TypeError for another type) naming the file. Whatever the function
    raises, SystemExit and KeyboardInterrupt too, fails this job alone."""
    try:
        values = f(data, *args)
    except BaseException as e:
        raise ValueError(f"the map function failed on file {number}: "
                         f"{type(e).__name__}: {e}") from None
    K = spec.placement.workers
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"the map function gave a {type(values).__name__} for file "
                        f"{number}, not a list or tuple of its {K} values (one per reduce "
                        f"function)")
    if len(values) != K:
        raise ValueError(f"the map function gave {len(values)} values for file {number}, "
                         f"not one per reduce function ({K})")
    if spec.field is None:
        return [_as_bytes(v, f"the map function's value for file {number}") for v in values]
    return [algebra.F.elements(v, f"the map function's value for file {number}").reshape(-1)
            for v in values]


def shuffle_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """The shuffle task: exchange the messages with the peers, decode, reduce, and send the
    output to the master (a generator yielding while it waits). The run stays until the
    master drops it (it may send another attempt if a worker was lost), unless the task
    fails. A worker holding no values of the job (one that replaced a lost worker) says
    so."""
    runs, attempt = worker.runs, job.payload
    run = runs.get(attempt.run)
    if run is not None and run.spec.index in attempt.lost:     # excluded by a check
        run.shuffled = None                 # nothing of this attempt to check
        run = None
    if run is None:
        answer(job, out, {"idle": True}, b"")
        return
    run.quiet()                         # the last attempt's peers are done with
    run.busy = True
    spec, linger = run.spec, 0.0
    try:
        if len(attempt.endpoints) != spec.placement.workers:
            raise ValueError(f"a shuffle task names {len(attempt.endpoints)} endpoints, not "
                             f"its {spec.placement.workers} workers'")
        algebra = spec.algebra()
        clock = run.clock
        clock.mark()
        recovery = Recovery(spec.placement, attempt.lost, spec.coded, attempt.distrust) \
            if attempt.lost or attempt.distrust else None
        messages = run.messages if recovery is None else \
            recovery.outgoing(spec.index, run.held, algebra)
        messages = _forged(messages, spec)
        fitting(messages, spec.index, job.max_message)
        clock.lap("encode")
        run.dial(attempt.endpoints, attempt.lost)
        keys = expected(spec.placement, spec.index, spec.coded) if recovery is None else \
            recovery.expected(spec.index)
        received, sent, peers = yield from _exchange(job, run, messages, attempt, len(keys))
        if received is None:
            return                          # stopped
        linger = LINGER
        if peers is not None:               # (acknowledgements may have been lost)
            run.serve(peers, attempt.attempt)
        clock.lap("shuffle")
        got = pieces(spec.placement, spec.index, received, run.held, algebra, spec.coded,
                     recovery)
        run.shuffled = (attempt.lost, attempt.distrust, got)    # what a check looks at
        values = joined(got, algebra)
        functions = [spec.index] if recovery is None else recovery.functions(spec.index)
        clock.lap("decode")
        outputs = [_reduced(run, q, values, algebra) for q in functions]
        clock.lap("reduce")
        answer(job, out, {**clock.wall, **sent, "cpu": clock.cpu, "index": spec.index,
                           "functions": functions, "sizes": [len(o) for o in outputs]},
                b"".join(outputs))
    finally:                            # (a stopped task's generator may just be dropped)
        run.busy = False
        if run.server is None:
            run.hang_up(linger)
        if run.dropped or not (job.stop.is_set() or linger):    # else another attempt
            _let_go(runs, spec.run, run)                        # may come, or the drop


def _let_go(runs: dict, key: int, run: Run) -> None:
    """Close a run, and forget it unless another took its place meanwhile."""
    if runs.get(key) is run:
        del runs[key]
    run.close()


def check_steps(job: Any, out: Callable, worker: Any) -> Iterator[None]:
    """The check task (ffcode.mapreduce.verify): with the master's seed, drawn once every
    shuffle message had arrived, answer the fingerprints of the pieces this worker
    received, sent or vouches for in its last shuffle."""
    run = worker.runs.get(job.payload.run)
    if run is None or run.shuffled is None or run.busy:
        answer(job, out, {"idle": True}, b"")
        return
    spec = run.spec
    lost, distrust, got = run.shuffled
    if spec.index in lost:
        answer(job, out, {"idle": True}, b"")
        return
    plan = verify.Plan(spec.placement, spec.coded, lost, distrust)
    prints = verify.prints(plan, spec.index, job.payload.seed, got, run.held, spec.algebra())
    answer(job, out, {"prints": _forged_prints(prints, plan, spec)}, b"")
    yield


# A test's liar: FFCODE_TEST_SHUFFLE_LIE="INDEX:MODE[,MODE]" in a worker's environment
# when it starts (never from the network) makes the worker at place INDEX ("any": every
# worker started so) lie: "send" spoils the first element of each message it sends
# ("send1": of its first message only),
# "vouch" each fingerprint it gives of a piece another worker sent, "accuse" each of a
# piece it received.
_LIE = os.environ.get("FFCODE_TEST_SHUFFLE_LIE", "").partition(":")


def _lies(spec: Map, mode: str) -> bool:
    return _LIE[0] in ("any", str(spec.index)) and mode in _LIE[2].split(",")


def _forged(messages: list, spec: Map) -> list:
    if not (_lies(spec, "send") or _lies(spec, "send1")):
        return messages
    out = list(messages)
    for n, m in enumerate(messages[:1] if _lies(spec, "send1") else messages):
        payload = np.frombuffer(_payload(m.payload), np.uint8).copy()
        if spec.field is None:
            payload[:1] ^= 1
        else:
            payload = payload.view(np.asarray(m.payload).dtype)
            payload[:1] = (payload[:1] + 1) % spec.field
        out[n] = Message(m.sender, m.receivers, payload if spec.field else
                         payload.tobytes(), m.group, m.batch, m.lengths, m.function)
    return out


def _forged_prints(prints: list, plan: Any, spec: Map) -> list:
    roles = plan.roles(spec.index)
    return [v + 1 if _lies(spec, "vouch") and role == "voucher" or
            _lies(spec, "accuse") and role == "receiver" else v
            for v, (_, role) in zip(prints, roles)]


def _reduced(run: Run, q: int, values: dict, algebra: Any) -> bytes:
    """Function q's output: its values, the worker's own batches' and those received, in
    batch order, joined (bytes) or added up (a field), then the user's reduce."""
    spec = run.spec
    ordered = [run.held[(q, b)] if (q, b) in run.held else values[(q, b)]
               for b in range(len(spec.placement.subsets))]
    whole = b"".join(ordered) if spec.field is None else algebra.total(
        ordered, f"values of function {q} (one a batch) at worker {spec.index}")
    if spec.reduce is not None:
        if spec.reduce.startswith("__main__:"):
            local.import_main()
        try:
            whole = functions.load(spec.reduce)(whole)
        except BaseException as e:          # SystemExit too: this job fails, not the worker
            raise ValueError(f"the reduce function failed on function {q}'s values at "
                             f"worker {spec.index}: {type(e).__name__}: {e}") from None
    if spec.field is not None:
        whole = algebra.F.elements(whole, "the reduce function's output")
    return _as_bytes(whole, "the reduce function's output")


def _as_bytes(value: Any, what: str) -> bytes:
    """A value as bytes (a bytes-like object, or an array's elements); ValueError naming
    what it is otherwise."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    try:
        return bytes(memoryview(value).cast("B"))
    except TypeError:
        raise ValueError(f"{what} is not bytes but {type(value).__name__}") from None


def _exchange(job: Any, run: Run, messages: list, attempt: Shuffle, expected: int):
    """Send this worker's messages and take the others' (a generator; returns (the
    messages received, what it sent, its PeerLinks on lossy links), or (None, None, None)
    once stopped). On "links" every pair of workers has its own link of ``rate`` bytes a
    second and a message for several receivers goes to each; on "turns" the workers send
    one after another on a shared medium of that rate, a message reaching all its
    receivers at once. Links that lose messages (``attempt.loss``): ``_lossy_exchange``."""
    if attempt.lossy():
        return (yield from _lossy_exchange(job, run, messages, attempt, expected))
    spec, turns = run.spec, attempt.network == "turns"
    lanes = _lanes(spec, messages, attempt)
    links = {lane: Link(attempt.rate) for lane in lanes}
    received: list = []
    sent = _sent(messages)
    order = [w for w in range(spec.placement.workers) if w not in attempt.lost]
    place = order.index(spec.index)
    waiting = turns and place > 0       # for the previous worker's turn
    passed = not turns or place == len(order) - 1
    noted, heard = False, set[int]()    # "I have all mine" said to the others; heard from
    early, run.early = run.early, []    # what came of this attempt while the last one ran
    while True:
        if job.stop.is_set():
            return None, None, None
        now = time.monotonic()
        due = now + POLL
        if not waiting:
            for lane, queue in lanes.items():
                due = min(due, _send(run, queue, links[lane], attempt.delay, sent, now))
            if not passed and not any(lanes.values()):
                _note(run, order[place + 1], attempt.attempt, turn=True)
                passed = True
        if not noted and len(received) >= expected:
            for j in run.dials:
                _note(run, j, attempt.attempt, done=True)
            noted = True
        if noted and passed and not any(lanes.values()) and len(heard) == len(run.dials):
            return received, sent, None     # every message arrived: the sockets may close
        if early or run.router.poll(max(0, int((due - time.monotonic()) * 1000))):
            while early or run.router.poll(0):
                frames = early.pop(0) if early else run.router.recv_multipart(copy=False)
                message, sender, _ = _read(run, frames, attempt.attempt)
                if message == "turn":
                    if sender != order[place - 1]:
                        raise ValueError(f"worker {sender} passed a turn out of order")
                    waiting = False
                elif message == "done":
                    heard.add(sender)
                elif isinstance(message, Message):
                    received.append(message)
        yield


def _lossy_exchange(job: Any, run: Run, messages: list, attempt: Shuffle, expected: int):
    """``_exchange`` on links that lose messages (runtime/worker/peer_links.py): every
    segment acknowledged, asked about and sent again as PeerLinks says; on "turns" a
    worker passes the medium on once every segment it sent was acknowledged, the turn sent
    again until the next worker answers it. Returns once every message expected is here
    and every segment sent (and the turn) was acknowledged."""
    spec, turns = run.spec, attempt.network == "turns"
    lanes, counts = _lanes(spec, messages, attempt), dict.fromkeys(run.dials, 0)
    for item in (item for queue in lanes.values() for item in queue):
        for j in item[0]:
            counts[j] += 1
    links = {lane: Link(attempt.rate) for lane in lanes}
    peers = PeerLinks(spec.index, counts, attempt.loss, attempt.burst, attempt.seed,
                      attempt.attempt, time.monotonic(), job.max_message)
    received: list = []
    sent = _sent(messages)
    order = [w for w in range(spec.placement.workers) if w not in attempt.lost]
    place = order.index(spec.index)
    waiting = turns and place > 0       # for the previous worker's turn
    to = order[place + 1] if turns and place < len(order) - 1 else None    # the next turn
    again: Optional[float] = 0.0        # when to pass the turn (again); None: answered
    again_on_medium: dict = {}          # turns: a segment's copy not yet on the medium
    early, run.early = run.early, []    # what came of this attempt while the last one ran
    while True:
        if job.stop.is_set():
            return None, None, None
        now = time.monotonic()
        peers.tick(now)
        for j, seq, (_, frames, size) in peers.resends:
            item = again_on_medium.get(id(frames[1])) if turns else None
            if item is not None and item[3] is None:    # one multicast serves them all
                item[0], item[1][j], item[4][j] = (*item[0], j), frames, seq
                continue
            item = [(j,), {j: frames}, size, None, {j: seq}, True]
            lanes[None if turns else j].append(item)
            if turns:
                again_on_medium[id(frames[1])] = item       # (by the segment's payload)
        for j, number in peers.polls:
            if peers.passes(j):
                _note(run, j, attempt.attempt, poll=number)
        peers.resends.clear()
        peers.polls.clear()
        due = min(now + POLL, peers.due)
        if not waiting:
            for lane, queue in lanes.items():
                due = min(due, _send(run, queue, links[lane], attempt.delay, sent, now,
                                     peers))
            if to is not None and again is not None and peers.complete and \
                    not any(lanes.values()):
                if now >= again:
                    if peers.passes(to):
                        _note(run, to, attempt.attempt, turn=True)
                    again = now + min(MOST_WAIT, 2 * peers.timer.estimate)
                due = min(due, again)
        if len(received) >= expected and peers.complete and not any(lanes.values()) and \
                (to is None or again is None):
            dropped = peers.dropped
            sent.update(dropped=[dropped.get(j, 0) for j in range(len(spec.peers))],
                        resent=peers.resent)
            return received, sent, peers    # every message here, each sent taken
        if early or run.router.poll(max(0, int((due - time.monotonic()) * 1000))):
            while early or run.router.poll(0):
                frames = early.pop(0) if early else run.router.recv_multipart(copy=False)
                message, sender, extra = _read(run, frames, attempt.attempt)
                if message == "turned" and sender == to:
                    again = None
                elif message == "turn":
                    if sender != order[place - 1]:
                        raise ValueError(f"worker {sender} passed a turn out of order")
                    waiting = False
                    if peers.passes(sender):
                        _note(run, sender, attempt.attempt, turned=True)
                elif message is not None:
                    whole = _on_lossy(run, peers, message, sender, extra, attempt.attempt)
                    if whole is not None:
                        received.append(whole)
        yield


def _sent(messages: list) -> dict:
    """What a worker's answer says it sent: the payload bytes, each message counted once
    (``sent``), the bytes put on the links (``copies``, counted as they go) and the
    messages."""
    return {"sent": sum(memoryview(_payload(m.payload)).nbytes for m in messages),
            "copies": 0, "messages": len(messages)}


def _lanes(spec: Map, messages: list, attempt: Shuffle) -> dict:
    """The messages by lane (a receiver on "links", None for the medium of "turns"): each
    a deque of [receivers, frames, size, when it leaves, its numbers on lossy lanes, sent
    again]. On lossy links a message goes in SEGMENT-byte segments, each numbered in turn
    on each receiver's lane (frames and numbers then by receiver)."""
    lanes: dict = {}
    numbers: dict = {}                  # receiver -> segments numbered on its lane so far
    for m in messages:
        frames = _frames(spec.run, attempt.attempt, m)
        size = memoryview(frames[1]).nbytes
        for lane in ((None,) if attempt.network == "turns" else m.receivers):
            receivers = m.receivers if lane is None else (lane,)
            queue = lanes.setdefault(lane, deque())
            if not attempt.lossy():
                queue.append([receivers, frames, size, None, None, False])
                continue
            parts, meta = segments(size), json.loads(frames[0])
            first = {j: numbers.get(j, 0) for j in receivers}
            for n, (start, end) in enumerate(parts):
                payload = memoryview(frames[1])[start:end]
                seqs = {j: first[j] + n for j in receivers}
                queue.append([receivers, {j: [json.dumps(dict(
                    meta, first=first[j], parts=len(parts), seq=seqs[j])).encode(), payload]
                    for j in receivers}, end - start, None, seqs, False])
            for j in receivers:
                numbers[j] = first[j] + len(parts)
    return lanes


def _on_lossy(run: Run, peers: PeerLinks, message: Any, sender: int, extra: Any,
              attempt: int) -> Optional[Message]:
    """A message on a lossy link: an acknowledgement taken; a poll, or a shuffle message's
    segment (``extra``: its number, its message's first number and count), answered with
    the bitmap of the sender's segments here (the link may lose the answer). The whole
    shuffle message once its last segment came, else None."""
    if sender not in peers.got:
        return None                         # a worker this attempt does without
    if message == "ack":
        bits, poll = extra
        peers.acked(sender, bits, time.monotonic(), poll)
        return None
    whole = None
    if isinstance(message, Message):
        if extra is None:
            raise ValueError(f"worker {sender} sent a shuffle message without its number "
                             f"on a lossy link")
        seq, first, parts = extra
        if peers.received(sender, seq):
            whole = peers.assembly.add(sender, seq, first, parts, message)
    if peers.passes(sender):
        poll = {"poll": extra} if message == "poll" else {}
        _note(run, sender, attempt, ack=peers.ack(sender), **poll)
    return whole


def serve(run: Run, peers: PeerLinks, attempt: int, stop: threading.Event) -> None:
    """A run's peers' copies, polls and turns answered after its exchange ended (their
    answer was lost), until ``stop``: the run let go of, or another attempt
    begun (a thread's loop: its sockets are the thread's meanwhile)."""
    while not stop.is_set():
        if not run.router.poll(int(POLL * 1000)):
            continue
        frames = run.router.recv_multipart(copy=False)
        try:
            message, sender, extra = _read(run, frames, attempt)
            if message == "poll" or isinstance(message, Message):
                _on_lossy(run, peers, message, sender, extra, attempt)
            elif message == "turn" and sender in run.dials and peers.passes(sender):
                _note(run, sender, attempt, turned=True)    # its answer was lost
        except ValueError:
            continue                # a peer's bad copy: nothing here depends on it


def _note(run: Run, to: int, attempt: int, **what: Any) -> None:
    """A turn passed on (on lossy links, "turned": its answer), "done": every message for
    this worker arrived (so that a worker closes its sockets only once what it sent was
    taken), a poll or an acknowledgement."""
    run.dials[to].send(json.dumps({"run": run.spec.run, "attempt": attempt,
                                   **what}).encode())


def _send(run: Run, queue: deque, link: Link, delay: float, sent: dict, now: float,
          peers: Optional[PeerLinks] = None) -> float:
    """Send the lane's messages that are due; when to look again. A message goes on the
    link once the one before it has been carried (no burst credit), is carried at the
    link's rate, and leaves ``delay`` seconds later: the link carries the next one
    meanwhile. On a lossy link (``peers``) it may be lost as it leaves."""
    for item in queue:
        if item[3] is not None:
            continue
        if link.free_at is not None and link.free_at > now:
            break
        carried = link.due(item[2], now)
        link.sent(carried)
        item[3] = carried + delay
    while queue and queue[0][3] is not None and queue[0][3] <= now:
        receivers, frames, size, _, seqs, again = queue.popleft()
        for receiver in receivers:
            if peers is None:
                run.dials[receiver].send_multipart(frames, copy=False)
            else:                           # frames and numbers by receiver
                if peers.passes(receiver):
                    run.dials[receiver].send_multipart(frames[receiver], copy=False)
                peers.left(receiver, seqs[receiver], (receiver, frames[receiver], size),
                           now, again)
            sent["copies"] += size
    if not queue:
        return now + POLL
    waiting = [queue[0][3]] if queue[0][3] is not None else []
    if queue[-1][3] is None and link.free_at is not None:
        waiting.append(link.free_at)
    return min(waiting, default=now)


def _payload(value: Any) -> Any:
    return np.ascontiguousarray(value).view(np.uint8) if isinstance(value, np.ndarray) \
        else value


def _nbytes(value: Any) -> int:
    return memoryview(_payload(value)).nbytes


def _frames(run_id: int, attempt: int, m: Message) -> list:
    meta = {"run": run_id, "attempt": attempt,
            "group": None if m.group is None else list(m.group), "batch": m.batch,
            "function": m.function, "lengths": [int(n) for n in m.lengths]}
    return [json.dumps(meta).encode(), _payload(m.payload)]


def _read(run: Run, frames: list, attempt: int) -> tuple:
    """(a peer's message as a shuffle Message, "turn" for a turn passed on, "done" for a
    peer that has all its messages, "ack" for an acknowledgement, or None for what no
    worker of this job or attempt sent; its sender; a message's number on its lane (None:
    a lossless link's) or an acknowledgement's bitmap); ValueError for a worker's
    malformed one."""
    sender = run.sender(frames[1]) if len(frames) > 1 else None
    if sender is None:
        return None, None, None
    spec = run.spec
    try:
        meta = json.loads(frames[1].bytes)
        if not isinstance(meta, dict) or meta.get("run") != spec.run or \
                type(meta.get("attempt")) is not int or \
                not 1 <= meta["attempt"] <= attempt + 1:
            raise ValueError("of another job")
        if meta["attempt"] < attempt:
            return None, None, None         # an earlier attempt's, still on its way
        if meta["attempt"] > attempt:       # the next attempt's, come before its task
            run.early.append(frames)
            return None, None, None
        if len(frames) == 2:
            for note in ("done", "turn", "turned"):
                if meta.get(note) is True:
                    return note, sender, None
            if "ack" in meta:
                poll = meta.get("poll")
                return "ack", sender, (_bitmap(meta["ack"]),
                                       None if poll is None else _number(poll))
            if "poll" in meta:
                return "poll", sender, _number(meta["poll"])
        group, batch, function, lengths = (meta["group"], meta["batch"], meta["function"],
                                           meta["lengths"])
        segment = tuple(meta.get(key) for key in ("seq", "first", "parts"))
        if len(frames) != 3 or not (isinstance(lengths, list) and all(
                type(n) is int and n >= 0 for n in lengths)) or not (
                group is None and type(batch) is int or batch is None and
                isinstance(group, list) and all(type(w) is int for w in group)) or \
                function is not None and type(function) is not int or \
                segment != (None,) * 3 and not all(type(n) is int and 0 <= n < MOST_SEQ
                                                   for n in segment):
            raise ValueError("malformed")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"worker {sender} sent a bad shuffle message ({e})") from None
    payload: Any = frames[2].buffer
    if spec.field is not None:
        dtype = GF(spec.field).dtype
        if payload.nbytes % dtype.itemsize:
            raise ValueError(f"worker {sender} sent a vector of {payload.nbytes} bytes")
        payload = np.frombuffer(payload, dtype)
    receivers = (spec.index,) if group is None else tuple(w for w in group if w != sender)
    return Message(sender, receivers, payload, None if group is None else tuple(group),
                   batch, tuple(lengths), function), sender, \
        None if segment[0] is None else segment


def _number(value: Any) -> int:
    """A poll's number (ValueError for anything but a whole number below 2**32)."""
    if type(value) is not int or not 0 <= value < 1 << 32:
        raise ValueError("a poll's number is a whole number below 2**32")
    return value


def _bitmap(value: Any) -> bytes:
    """An acknowledgement's bitmap, from its hex (ValueError for anything else, or one
    longer than a lane numbers)."""
    if not isinstance(value, str) or len(value) > MOST_SEQ // 4:
        raise ValueError("an acknowledgement is a bitmap in hex")
    return bytes.fromhex(value)


def answer(job: Any, out: Callable, meta: dict, output: bytes) -> None:
    """The worker's answer to the master: packet 0 its meta (JSON), then its output in
    chunks of CHUNK bytes (fewer where the master takes less); then DONE."""
    blob = json.dumps(dict(meta, bytes=len(output))).encode()
    view, size = memoryview(output), chunk_of(job.max_message)
    chunks = [blob] + [view[at:at + size] for at in range(0, len(output), size)]
    one = np.ones(1, np.uint8)
    for index, chunk in enumerate(chunks):
        header = job.header(Kind.PACKET, index, len(chunk))
        out(header, wire.packet_arrays(header, one, np.frombuffer(chunk, np.uint8)))
    out(job.header(Kind.DONE), job.ended(Kind.DONE)[1:])
