"""What happened in one job: per-worker timelines, times, packets used and wasted, and the
messages rejected, as a Python object and as JSON.

A report made by hand: a worker whose second packet raised no rank was wasted on it.

>>> timeline = WorkerTimeline(0, packets=[{"innovative": True}, {"innovative": False}])
>>> report = Report("cfs", "MDS(n=3, k=2)", n_workers=1, pieces=1, needed=1,
...                 workers=[timeline])
>>> report.received, report.used, report.wasted
(2, 1, 1)
>>> data = report.to_dict()
>>> list(data)[:4], data["schema"] == SCHEMA, data["workers"][0]["wasted"]
(['schema', 'ffcode', 'date', 'settings'], True, 1)
>>> stamp = utc_now()
>>> len(stamp), stamp[4], stamp[10], stamp[-1]
(20, '-', 'T', 'Z')
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from ffcode.version import __version__

SCHEMA = 10                 # the version of the JSON layout below; raised when it changes
MAX_GROUP_JOBS = 1 << 16    # a relay's group's jobs a report takes
MAX_GROUP_SIZE = 1 << 10    # and workers per job


def utc_now() -> str:
    """The current time in UTC, ISO 8601 to the second: '2026-12-01T09:30:00Z'."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WorkerTimeline:
    """One worker's job, in seconds from the job's start (the master's clock, except
    ``sent`` and ``stopped``: the worker's clock minus the master's at the start, so a
    remote worker's clock offset shows there). In JSON: ``worker`` (its place in the job,
    0..workers-1: what faults name), ``host``, ``pid`` (as the worker said), ``node`` (the
    Ray node ID of a Ray worker, as Ray placed it; null for others), ``shares`` (the code
    indices of the shares it held, in the order it worked through them), ``share_sent``
    (its task sent), ``shipped`` (bytes sent for the job: its task message, with its
    shares unless resident, and the job's arguments; plus ``reloaded``), ``reloaded``
    (bytes of its resident shares sent again because it replaced a lost worker, else 0),
    ``packets`` (a record per packet accepted: ``index`` (its number in the worker's
    stream, share k's piece j being k·m + j), ``share`` (the code index), ``piece``,
    ``sent``, ``received``, ``compute`` (s computing it, as the worker reported),
    ``innovative`` (it raised the rank)), ``compute`` (s in all), ``speed`` (pieces of
    work per second it delivered, task sent to last packet received; for a worker stopped
    before its first packet the most it can have been, one packet's work over its time
    at the job; null for one lost without packets), ``done`` (its message that every packet was sent arrived; null if it was
    stopped first), ``stopped`` (it acknowledged the stop), ``lost`` (why it was given up
    on, or null), ``dropped`` (the messages of the job that its emulated lossy link
    dropped, [from the worker, to it]: ``Faults(loss=...)``), ``link_packets`` (its packets
    that reached its lossy link until the output was decodable, dropped or not; 0 on a
    link without loss), ``used`` and ``wasted`` (packets); for a relay, ``group``: its group's
    jobs (of a hierarchical code, a piece of work each; of an ordinary code, one) as it
    reported them with its DONE or stop acknowledgement (``Report.brief``: ``total`` s,
    ``shipped`` bytes to the group's workers, ``received`` packets from them, ``rank``
    (those that counted: decoded, or forwarded), ``workers``: each one's ``packets`` and
    ``lost``), else null."""
    worker: int
    host: str = ""
    pid: int = 0
    node: str | None = None                         # the Ray node ID (Ray workers only)
    shares: list = field(default_factory=list)      # the code indices it held
    share_sent: float | None = None
    shipped: int = 0                                # bytes sent for the job
    reloaded: int = 0                               # of them, its resident share again
    packets: list = field(default_factory=list)    # {index, sent, received, compute,
                                                    #  innovative}
    compute: float = 0.0                            # seconds computing, as reported
    speed: float | None = None                      # pieces of work per second delivered
    done: float | None = None                       # sent every packet
    stopped: float | None = None                    # acknowledged the stop
    lost: str | None = None                         # why it was given up on
    dropped: list = field(default_factory=lambda: [0, 0])   # by its lossy link: [from, to]
    link_packets: int = 0                           # its packets onto its lossy link,
    #                                                 until the output was decodable
    group: list | None = None                       # a relay's group's jobs, in brief

    @property
    def used(self) -> int:
        return sum(p["innovative"] for p in self.packets)

    @property
    def wasted(self) -> int:
        return len(self.packets) - self.used


@dataclass
class Report:
    """One job, as ``Cluster.run`` returns it and ``to_dict``/``to_json`` write it.

    Every time is in seconds (floats); the job's clock starts when its tasks are sent, after
    encoding. The JSON object (schema 10; 9 had no ``settings.repair``, 8 no workers'
    ``dropped`` and ``link_packets``, 7 no groups' ranks, 6 no workers' ``group``, 5 no
    ``settings.priority``, 4 no ``settings.coefficient_seed``, 3 no
    ``shares``, ``speed``, packets' ``share`` and ``piece`` and ``settings.assignment``; 2
    no ``reloaded`` and ``settings.resident``, 1 no ``node`` and ``shipped``):

    - ``schema`` (int, 10), ``ffcode`` (the version that ran the job), ``date`` (UTC ISO 8601,
      when the report was made, e.g. "2026-12-01T09:30:00Z");
    - ``settings``: how the job was asked for: ``code`` (its repr), ``p``, ``inputs`` (the
      input shapes), ``scheme``, ``pieces``, ``faults`` (the injected faults), ``seed``
      (as given, null: fresh randomness), ``coefficient_seed`` (the seed the packets' random
      coefficients came from: the given one, or one drawn for this job), ``adversaries``
      (wrong workers corrected), ``verify``, ``resident`` (the id of the resident data the
      job ran on, or null), ``assignment`` (per worker, the code
      indices of its shares), ``priority`` (its workers run the tasks of higher priority
      first, those of equal priority in turn), ``repair`` ("dense" or "sparse": how a
      lossy link's lost packets were made up);
    - ``job`` (the job's number on its cluster), ``cancelled`` (true for a job cancelled
      before it ended: what happened until then);
    - ``scheme``, ``code`` (repr), ``n_workers`` (the job's worker processes; the code's
      points may be more), ``pieces`` (m as run: 1 for uncoded and
      classic), ``needed`` (the rank that decodes: R, or m·R, or m·(R + A)), ``rank`` (reached);
    - times: ``encode`` (encoding the shares), ``compute`` (first task sent -> decodable),
      ``decode`` (decodable -> output), ``verify`` (checking the output), ``total`` (the
      whole run: encode + compute + decode + verify); ``verified`` (true, false, or null
      when not checked);
    - ``wrong``: workers found sending wrong results (when correcting, also those that
      sent an invalid packet or whose computation failed: none of their packets counted);
      ``stop_latency``: per acknowledging worker, decodable -> its stop acknowledgement left
      it (s); ``quiet``: decodable -> the job's last message left its worker (s, null if
      none came); ``wasted_after_stop``,
      ``stale`` (messages of earlier jobs), ``rejected`` (reason -> count of messages:
      "malformed", "invalid packet", "wrong worker" (a packet of a worker already named
      wrong, dropped unread), ...);
      ``shipped`` (bytes sent to the workers for the job), ``received``, ``used``
      (innovative packets), ``wasted`` (received - used +
      wasted_after_stop);
    - ``workers``: a WorkerTimeline each (see there), plus its ``used`` and ``wasted``.
    """
    scheme: str
    code: str
    n_workers: int
    pieces: int
    needed: int
    job: int = 0                # its number on its cluster
    cancelled: bool = False     # cancelled before it ended
    rank: int = 0
    encode: float = 0.0         # encoding the shares
    compute: float = 0.0        # from the first share sent until decodable
    decode: float = 0.0         # from decodable to the output
    total: float = 0.0          # the whole run, encode and verification included
    verify: float = 0.0         # checking the output (Freivalds), after decoding
    verified: bool | None = None  # the check's verdict (None: not checked)
    wrong: list = field(default_factory=list)           # found wrong (or failed)
    stop_latency: list = field(default_factory=list)   # per worker: decodable -> ack
    quiet: float | None = None  # decodable -> the job's last message left its worker
    wasted_after_stop: int = 0  # packets that arrived after the output was decodable
    stale: int = 0              # messages of earlier jobs dropped
    rejected: dict = field(default_factory=dict)       # reason -> count
    workers: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)       # filled by Cluster.run
    schema: int = SCHEMA
    ffcode: str = __version__
    date: str = field(default_factory=utc_now)

    @property
    def shipped(self) -> int:
        return sum(w.shipped for w in self.workers)

    @property
    def reloaded(self) -> list:
        """The workers that got their resident share again (replacing lost ones)."""
        return [w.worker for w in self.workers if w.reloaded]

    @property
    def received(self) -> int:
        return sum(len(w.packets) for w in self.workers)

    @property
    def used(self) -> int:
        return sum(w.used for w in self.workers)

    @property
    def wasted(self) -> int:
        return self.received - self.used + self.wasted_after_stop

    def brief(self) -> dict:
        """The job in brief, as a relay tells the master about its group's job (read back
        with ``read_group``)."""
        return {"total": self.total, "shipped": self.shipped, "received": self.received,
                "rank": self.rank, "workers": [{"packets": len(w.packets), "lost": w.lost}
                            for w in self.workers]}

    def to_dict(self) -> dict:
        """The JSON object described above (schema, ffcode and date first)."""
        out = asdict(self)
        out = {key: out.pop(key) for key in ("schema", "ffcode", "date", "settings")} | out
        out.update(shipped=self.shipped, received=self.received, used=self.used,
                   wasted=self.wasted)
        for timeline, worker in zip(self.workers, out["workers"]):
            worker.update(used=timeline.used, wasted=timeline.wasted)
        return out

    def to_json(self, path: str | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    def summary(self) -> str:
        """The report in one line, as ``ffcode run`` prints it.

        The scheme and its seconds (total, then encode, compute, decode and, where the
        output was checked, verify), the MiB shipped to the workers, the packets used of
        those needed and the ones wasted, and the packets used per worker; then, where
        there are any, the shares per worker, the lost workers and why, the workers that
        resident shares were reloaded to, the wrong workers corrected, and the messages
        rejected and stale.

        >>> report = Report("cfs", "MDS(n=3, k=2)", n_workers=2, pieces=1, needed=2,
        ...                 workers=[WorkerTimeline(0, packets=[{"innovative": True}]),
        ...                          WorkerTimeline(1, packets=[{"innovative": True},
        ...                                                     {"innovative": False}])])
        >>> print(report.summary())    # doctest: +NORMALIZE_WHITESPACE
        cfs: 0.000 s (encode 0.000, compute 0.000, decode 0.000); shipped 0.0 MiB;
        packets used 2/2, wasted 1, per worker [1, 1]
        """
        lost = [f"{w.worker} ({w.lost})" for w in self.workers if w.lost]
        rejected = sum(self.rejected.values())
        return (f"{self.scheme}: {self.total:.3f} s (encode {self.encode:.3f}, compute "
                f"{self.compute:.3f}, decode {self.decode:.3f}"
                + (f", verify {self.verify:.3f}" if self.verified is not None else "")
                + f"); shipped {self.shipped / 2**20:.1f} MiB; packets used {self.used}/"
                f"{self.needed}, wasted {self.wasted}, per worker "
                f"{[w.used for w in self.workers]}"
                + (f" of shares {[len(w.shares) for w in self.workers]}"
                   if any(len(w.shares) > 1 for w in self.workers) else "")
                + (f"; lost {', '.join(lost)}" if lost else "")
                + (f"; resident shares reloaded to {self.reloaded}" if self.reloaded else "")
                + (f"; wrong results from {self.wrong} (corrected, excluded)" if self.wrong
                   else "")
                + (f"; rejected {rejected} {self.rejected}" if rejected else "")
                + (f"; {self.stale} stale" if self.stale else ""))


def read_group(data) -> list:
    """A relay's group's jobs in brief (``Report.brief`` each), as it sent them: checked
    field by field, ValueError on anything else.

    >>> read_group([{"total": 0.5, "shipped": 10, "received": 4, "rank": 3,
    ...              "workers": [{"packets": 4, "lost": None}]}])[0]["rank"]
    3
    >>> read_group([{"total": -1}])
    Traceback (most recent call last):
    ...
    ValueError: a relay's group job must be {total, shipped, received, rank, workers}
    """
    if not isinstance(data, list) or len(data) > MAX_GROUP_JOBS:
        raise ValueError("a relay's group jobs must be a list")
    return [_group_job(job) for job in data]


def _group_job(job) -> dict:
    keys = {"total", "shipped", "received", "rank", "workers"}
    if not (isinstance(job, dict) and set(job) == keys and _count(job["shipped"]) and
            _count(job["received"]) and _count(job["rank"]) and
            job["rank"] <= job["received"] and type(job["total"]) in (int, float) and
            0 <= job["total"] < float("inf") and isinstance(job["workers"], list) and
            len(job["workers"]) <= MAX_GROUP_SIZE):
        raise ValueError("a relay's group job must be {total, shipped, received, rank, "
                         "workers}")
    for worker in job["workers"]:
        if not (isinstance(worker, dict) and set(worker) == {"packets", "lost"} and
                _count(worker["packets"]) and (worker["lost"] is None or
                                               isinstance(worker["lost"], str) and
                                               len(worker["lost"]) <= 200)):
            raise ValueError("a relay's group worker must be {packets, lost}")
    return job


def _count(value) -> bool:
    return type(value) is int and 0 <= value < 1 << 63
