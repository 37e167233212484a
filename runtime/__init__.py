"""The ZeroMQ master/worker runtime of ffcode (installed as ffcode.runtime).

It drives the core (field, codes, decoder) and is never imported by it; ``ffcode.Cluster``
and ``ffcode.Faults`` re-export it lazily. The names below load on first use too, so that a
worker process imports only the modules it runs.
"""
import importlib

from ffcode.errors import (ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)

_WHERE = {"Cluster": "cluster", "Faults": "faults", "SCHEMES": "jobs", "Report": "report",
          "WorkerTimeline": "report"}
__all__ = sorted([*_WHERE, "ClusterError", "JobFailed", "JobTimeout", "ProtocolError",
                  "VerificationError", "WorkerError"])


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f"ffcode.runtime.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ffcode.runtime' has no attribute {name!r}")
