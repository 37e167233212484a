"""Where a worker process and a relay start: the one module that joins the runtime's two
sides, so that neither imports the other. A local pool's fork server and a Ray actor load it
by name (``ffcode.runtime.master.pool.ENTRY``); ``ffcode worker`` runs it by hand.

>>> maker(0) is process.Worker
True
"""
from __future__ import annotations

from typing import Any, Callable, NoReturn

from ffcode.runtime.worker import process, relay as relays


def prepare(level: int) -> None:
    """A process about to start workers: ffcode's loggers to stderr at the master's level,
    and the first-use costs paid once."""
    process.log_to_stderr(level)
    process.warm_up()


def maker(group: int = 0) -> Callable[..., Any]:
    """The maker of a worker (Worker's arguments): a relay with a group of ``group`` local
    workers, started and connected first, or a plain worker (0)."""
    if not group:
        return process.Worker
    from ffcode.runtime.master.group import Group   # a relay's only: workers start lean
    return relays.maker(Group(group))


def worker(endpoint: str, **options: Any) -> NoReturn:
    """Serve the master at endpoint as a worker, then exit the process: the arguments are
    ``ffcode.runtime.worker.process.run``'s (CURVE keys, timeout, buffer)."""
    process.run(endpoint, **options)


def relay(endpoint: str, *, size: int, **options: Any) -> NoReturn:
    """Start a group of ``size`` local workers and, once they are connected, serve the
    master at endpoint as their relay; then exit the process: ``ffcode worker --connect
    ENDPOINT --group SIZE`` starts one by hand."""
    process.run(endpoint, make=maker(size), **options)
