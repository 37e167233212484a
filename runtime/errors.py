"""The runtime's exceptions: every failure a user sees funnels through these, all under
ffcode's root error."""
from ffcode.errors import FFCodeError


class ClusterError(FFCodeError, RuntimeError):
    """Base of the runtime's errors: the cluster or a job could not do what was asked."""


class JobFailed(ClusterError):
    """The job cannot complete; the message names what is missing and why."""


class JobTimeout(JobFailed):
    """The job did not complete within its timeout."""


class WorkerError(JobFailed):
    """A worker's computation raised; the message carries the worker's error."""


class ProtocolError(ClusterError):
    """A message that is not valid ffcode wire format (counted and dropped by the master)."""


class VerificationError(JobFailed):
    """Wrong results spoiled the job: the decoded output failed its check, or, when
    correcting A wrong workers, the results cannot be explained with A of them wrong.
    No output is returned."""
