"""The ZeroMQ master/worker runtime of ffcode (installed as ffcode.runtime).

It drives the core (field, codes, decoder) and is never imported by it; ``ffcode.Cluster``
and ``ffcode.Faults`` re-export it lazily. The names below load on first use too, so that a
worker process imports only the modules it runs.
"""
import importlib
from typing import TYPE_CHECKING

from ffcode.errors import (ClusterBusy, ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)

if TYPE_CHECKING:       # what __getattr__ loads (_WHERE), as type checkers see it
    from ffcode.runtime.cluster import Cluster
    from ffcode.runtime.driver import JobFuture
    from ffcode.runtime.faults import Faults
    from ffcode.runtime.jobs import Options, Plan
    from ffcode.runtime.keys import authorise as authorise_key
    from ffcode.runtime.mapreduce import MapReduceReport
    from ffcode.runtime.mapreduce import run as run_mapreduce
    from ffcode.runtime.keys import generate as generate_keys
    from ffcode.runtime.keys import pair as key_pair
    from ffcode.runtime.report import SCHEMA, Report, WorkerTimeline, utc_now
    from ffcode.runtime.transport import reachable
    from ffcode.runtime.wire import MAX_META_BYTES
    from ffcode.runtime.relay import run as run_relay
    from ffcode.runtime.worker import run as run_worker

# name -> its module, or "module:attribute" where the module's own name says less
_WHERE = {"Cluster": "cluster", "JobFuture": "driver", "Faults": "faults", "Options": "jobs", "Plan": "jobs", "Report": "report",
          "WorkerTimeline": "report",
          # for the command line: reports, key files and the worker process
          "SCHEMA": "report", "utc_now": "report", "MAX_META_BYTES": "wire",
          "generate_keys": "keys:generate", "key_pair": "keys:pair",
          "authorise_key": "keys:authorise", "run_worker": "worker:run",
          "run_relay": "relay:run",
          # coded MapReduce: a job's phases on a cluster's workers, and what they did
          "run_mapreduce": "mapreduce:run", "MapReduceReport": "mapreduce",
          "reachable": "transport"}
__all__ = sorted([*_WHERE, "ClusterBusy", "ClusterError", "JobFailed", "JobTimeout", "ProtocolError",
                  "VerificationError", "WorkerError"])


def __getattr__(name: str) -> object:
    if name in _WHERE:
        module, _, attribute = _WHERE[name].partition(":")
        return getattr(importlib.import_module(f"ffcode.runtime.{module}"), attribute or name)
    raise AttributeError(f"module 'ffcode.runtime' has no attribute {name!r}")
