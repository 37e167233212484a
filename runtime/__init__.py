"""The ZeroMQ master/worker runtime of ffcode (installed as ffcode.runtime).

It drives the core (field, codes, decoder) and is never imported by it; ``ffcode.Cluster``
and ``ffcode.Faults`` re-export it lazily. The names below load on first use too, so that a
worker process imports only the modules it runs.

Three sub-packages, each importing only downward: ``master`` (the cluster a user holds and
what serves it), ``worker`` (a worker process, a relay, MapReduce's phases on a worker) and
``shared`` (the wire, tasks, transport, faults and reports both sides use); ``entry`` joins
the two sides where a worker or a relay process starts.
"""
import importlib
from typing import TYPE_CHECKING

from ffcode.errors import (ClusterBusy, ClusterError, JobFailed, JobTimeout, ProtocolError,
                           VerificationError, WorkerError)

if TYPE_CHECKING:       # what __getattr__ loads (_WHERE), as type checkers see it
    from ffcode.runtime.master.cluster import Cluster
    from ffcode.runtime.master.driver import JobFuture
    from ffcode.runtime.master.engines import (Engine, LocalEngine, RayEngine, RemoteWorkers,
                                               engine_names, register_engine,
                                               unregister_engine)
    from ffcode.runtime.shared.faults import Faults
    from ffcode.runtime.shared.kinds import JobKind, JobPlan
    from ffcode.runtime.master.plans import KindPlan
    from ffcode.runtime.master.gradient import GradientStep
    from ffcode.runtime.master.mtl import MultiTaskReport
    from ffcode.runtime.master.mtl import train as train_multitask
    from ffcode.runtime.shared.task import Task
    from ffcode.runtime.master.jobs import Plan
    from ffcode.runtime.master.options import Options
    from ffcode.runtime.shared.keys import authorise as authorise_key
    from ffcode.runtime.master.mapreduce import MapReduceReport
    from ffcode.runtime.master.mapreduce import run as run_mapreduce
    from ffcode.runtime.shared.keys import generate as generate_keys
    from ffcode.runtime.shared.keys import pair as key_pair
    from ffcode.runtime.shared.report import SCHEMA, Report, WorkerTimeline, utc_now
    from ffcode.runtime.shared.transport import reachable
    from ffcode.runtime.shared.wire import MAX_META_BYTES
    from ffcode.runtime.entry import relay as run_relay
    from ffcode.runtime.entry import worker as run_worker

# name -> its module, or "module:attribute" where the module's own name says less
_WHERE = {"Cluster": "master.cluster", "JobFuture": "master.driver", "Faults": "shared.faults",
          "Options": "master.options", "Plan": "master.jobs", "Report": "shared.report",
          "WorkerTimeline": "shared.report",
          # where workers come from: engines, and the registry of their names
          "Engine": "master.engines", "LocalEngine": "master.engines",
          "RayEngine": "master.engines", "RemoteWorkers": "master.engines",
          "register_engine": "master.engines", "unregister_engine": "master.engines",
          "engine_names": "master.engines",
          # for the command line: reports, key files and the worker process
          "SCHEMA": "shared.report", "utc_now": "shared.report",
          "MAX_META_BYTES": "shared.wire", "generate_keys": "shared.keys:generate",
          "key_pair": "shared.keys:pair", "authorise_key": "shared.keys:authorise",
          "run_worker": "entry:worker", "run_relay": "entry:relay",
          # coded MapReduce: a job's phases on a cluster's workers, and what they did
          "run_mapreduce": "master.mapreduce:run", "MapReduceReport": "master.mapreduce",
          "reachable": "shared.transport",
          # a job kind of one's own: its payload's task, the master's plan, the worker's steps
          "JobKind": "shared.kinds", "JobPlan": "shared.kinds", "KindPlan": "master.plans",
          "Task": "shared.task",
          # gradient coding: one step of a gradient code on the cluster
          "GradientStep": "master.gradient",
          # multi-task learning through relays: a training's steps, and what they did
          "train_multitask": "master.mtl:train", "MultiTaskReport": "master.mtl"}
__all__ = sorted([*_WHERE, "ClusterBusy", "ClusterError", "JobFailed", "JobTimeout", "ProtocolError",
                  "VerificationError", "WorkerError"])


def __getattr__(name: str) -> object:
    if name in _WHERE:
        module, _, attribute = _WHERE[name].partition(":")
        return getattr(importlib.import_module(f"ffcode.runtime.{module}"), attribute or name)
    raise AttributeError(f"module 'ffcode.runtime' has no attribute {name!r}")
