"""What happened in one job: per-worker timelines, times, packets used and wasted, and the
messages rejected, as a Python object and as JSON."""
import json
from dataclasses import asdict, dataclass, field


@dataclass
class WorkerTimeline:
    """One worker's job, in seconds from the job's start (sent: the worker's clock)."""
    worker: int
    host: str = ""
    pid: int = 0
    share_sent: float = None
    packets: list = field(default_factory=list)    # {index, sent, received, compute,
                                                    #  innovative}
    compute: float = 0.0                            # seconds computing, as reported
    done: float = None                              # sent every packet
    stopped: float = None                           # acknowledged the stop
    lost: str = None                                # why it was given up on

    @property
    def used(self) -> int:
        return sum(p["innovative"] for p in self.packets)

    @property
    def wasted(self) -> int:
        return len(self.packets) - self.used


@dataclass
class Report:
    scheme: str
    code: str
    n_workers: int
    pieces: int
    needed: int
    rank: int = 0
    encode: float = 0.0         # encoding the shares
    compute: float = 0.0        # from the first share sent until decodable
    decode: float = 0.0         # from decodable to the output
    total: float = 0.0          # the whole run, encode and verification included
    verify: float = 0.0         # checking the output (Freivalds), after decoding
    verified: bool = None       # the check's verdict (None: not checked)
    wrong: list = field(default_factory=list)           # found wrong (of those heard)
    stop_latency: list = field(default_factory=list)   # per worker: decodable -> ack
    quiet: float = None         # decodable -> the job's last message left its worker
    wasted_after_stop: int = 0  # packets that arrived after the output was decodable
    stale: int = 0              # messages of earlier jobs dropped
    rejected: dict = field(default_factory=dict)       # reason -> count
    workers: list = field(default_factory=list)

    @property
    def received(self) -> int:
        return sum(len(w.packets) for w in self.workers)

    @property
    def used(self) -> int:
        return sum(w.used for w in self.workers)

    @property
    def wasted(self) -> int:
        return self.received - self.used + self.wasted_after_stop

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(received=self.received, used=self.used, wasted=self.wasted)
        for timeline, worker in zip(self.workers, out["workers"]):
            worker.update(used=timeline.used, wasted=timeline.wasted)
        return out

    def to_json(self, path=None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    def summary(self) -> str:
        lost = [f"{w.worker} ({w.lost})" for w in self.workers if w.lost]
        rejected = sum(self.rejected.values())
        return (f"{self.scheme}: {self.total:.3f} s (encode {self.encode:.3f}, compute "
                f"{self.compute:.3f}, decode {self.decode:.3f}"
                + (f", verify {self.verify:.3f}" if self.verified is not None else "")
                + f"); packets used {self.used}/"
                f"{self.needed}, wasted {self.wasted}, per worker "
                f"{[w.used for w in self.workers]}"
                + (f"; lost {', '.join(lost)}" if lost else "")
                + (f"; wrong results from {self.wrong} (corrected, excluded)" if self.wrong
                   else "")
                + (f"; rejected {rejected} {self.rejected}" if rejected else "")
                + (f"; {self.stale} stale" if self.stale else ""))
