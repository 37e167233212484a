"""What the master's and the workers' sides of a coded MapReduce job agree on: the emulated
networks, the size of an output's chunks to the master, and the checks of a job's field,
memory budget and link delay, made alike at both ends."""
from __future__ import annotations

from typing import Any, Optional

from ffcode import checks
from ffcode.field import MAX_P

NETWORKS = ("links", "turns")
CHUNK = 16 << 20            # bytes of output per packet to the master, at most
MAX_DELAY = 3600.0          # seconds an emulated link may hold a message


def chunk_of(max_message: int) -> int:
    """Bytes of output per packet to the master: CHUNK, or less where the master takes
    less."""
    return min(CHUNK, max_message)


def prime_of(value: Any, name: str) -> int:
    """A job's field: a prime p that ffcode.GF takes (2 <= p < 2**63); ValueError naming
    ``name`` otherwise."""
    if type(value) is not int or not 2 <= value < MAX_P or not checks.is_prime(value):
        raise ValueError(f"Argument '{name}' must be a prime, not {value!r}: ffcode.GF's "
                         f"fields are those of the primes below 2**63.")
    return value


def memory_of(value: Any) -> Optional[int]:
    """Bytes a worker's runs may hold (None: the default share of its host's memory)."""
    return None if value is None else checks.integer(value, "memory", low=1)


def delay_of(value: Any) -> float:
    """A link's delay: seconds, from 0 to MAX_DELAY."""
    delay = checks.non_negative(value, "link_delay")
    if delay > MAX_DELAY:
        raise ValueError(f"Argument 'link_delay' must be at most {MAX_DELAY:g} s, not "
                         f"{delay:g}.")
    return delay
