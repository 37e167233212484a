"""The ZeroMQ master/worker runtime of ffcode (installed as ffcode.runtime).

It drives the core (field, codes, decoder) and is never imported by it; ``ffcode.Cluster``
and ``ffcode.Faults`` re-export it lazily. The names below load on first use too, so that a
worker process imports only the modules it runs.
"""
import importlib

from ffcode.errors import (ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)

# name -> its module, or "module:attribute" where the module's own name says less
_WHERE = {"Cluster": "cluster", "Faults": "faults", "Options": "jobs", "Plan": "jobs", "Report": "report",
          "WorkerTimeline": "report",
          # for the command line: reports, key files and the worker process
          "SCHEMA": "report", "utc_now": "report", "MAX_META_BYTES": "wire",
          "generate_keys": "keys:generate", "key_pair": "keys:pair",
          "authorise_key": "keys:authorise", "run_worker": "worker:run",
          "reachable": "transport"}
__all__ = sorted([*_WHERE, "ClusterError", "JobFailed", "JobTimeout", "ProtocolError",
                  "VerificationError", "WorkerError"])


def __getattr__(name):
    if name in _WHERE:
        module, _, attribute = _WHERE[name].partition(":")
        return getattr(importlib.import_module(f"ffcode.runtime.{module}"), attribute or name)
    raise AttributeError(f"module 'ffcode.runtime' has no attribute {name!r}")
