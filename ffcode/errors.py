"""ffcode's exceptions: one root, so that ``except ffcode.FFCodeError`` catches whatever
ffcode itself raised, in the core and in the runtime, a bad argument included. Narrower
classes also subclass the built-in they refine, so that ``except ValueError`` (a decoding
failure, a bad argument), ``except TypeError`` (a bad argument) or ``except RuntimeError``
(a cluster failure) keeps working.

>>> from ffcode.errors import FFCodeError, InvalidParameterError, JobTimeout
>>> error = JobTimeout("rank 3/8 no output within the timeout", report=None)
>>> isinstance(error, FFCodeError), isinstance(error, RuntimeError)
(True, True)
>>> [issubclass(InvalidParameterError, c) for c in (FFCodeError, ValueError, TypeError)]
[True, True, True]
"""
from __future__ import annotations

from typing import Any


class FFCodeError(Exception):
    """Base of every exception ffcode defines."""


class InvalidParameterError(FFCodeError, ValueError, TypeError):
    """An argument that is not what the function takes: of a wrong type, or a wrong value
    (the message names the argument, what it must be and what it got). Both a ValueError
    and a TypeError, so that code catching either, as before this class, still catches it
    (as scikit-learn's ``InvalidParameterError``)."""


class DecodingError(FFCodeError, ValueError):
    """The results do not determine the output: more workers are wrong than the code can
    correct, or the workers' equations are dependent."""


class ClusterError(FFCodeError, RuntimeError):
    """Base of the runtime's errors: the cluster or a job could not do what was asked.
    ``report`` is the job's ``Report`` (what happened until the failure), where a job ran."""

    def __init__(self, message: str = "", *, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class ClusterBusy(ClusterError):
    """A submit with ``block=False`` found the cluster's ``max_in_flight`` jobs in flight."""


class JobFailed(ClusterError):
    """The job cannot complete; the message names what is missing and why."""


class JobTimeout(JobFailed):
    """The job did not complete within its timeout."""


class WorkerError(JobFailed):
    """A worker's computation raised; the message carries the worker's error."""


class VerificationError(JobFailed):
    """Wrong results spoiled the job: the decoded output failed its check, or, when
    correcting A wrong workers, the results cannot be explained with A of them wrong.
    No output is returned."""


class ProtocolError(ClusterError):
    """A message that is not valid ffcode wire format (counted and dropped by the master)."""


class NoMaster(ClusterError):
    """A worker found no master at its endpoint within its connect timeout."""
