"""TeraSort's pieces (and Coded TeraSort's, which shuffles the same values coded):
100-byte records with 10-byte keys, compared as unsigned bytes; K key ranges from a
sample of the keys, so that skewed keys still give balanced ranges; the map of a file
(its records dealt into the K ranges), the reduce of a range (its records sorted), and
the check of an output: every range sorted, the ranges in order, and the whole a
permutation of the input.

>>> data = records(1000, seed=1, skew=3.0)            # keys crowded towards 0
>>> np.bincount(data[:, 0] // 64).tolist()            # four equal ranges of keys: unequal
[692, 143, 86, 79]
>>> parts = partition(data, boundaries(data, 4, seed=2, sample=200))
>>> [len(p) // RECORD for p in parts]                 # four ranges from a sample: balanced
[243, 223, 261, 273]
>>> check([sort(p) for p in parts], data), check([sort(p) for p in parts[::-1]], data)
(True, False)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ffcode import checks
from ffcode.errors import InvalidParameterError

RECORD, KEY = 100, 10       # bytes of a record, and of its key (its first bytes)
SAMPLE = 10000              # keys sampled for the ranges' boundaries, at most


def as_records(data: bytes | np.ndarray, what: str = "records") -> np.ndarray:
    """Records as an (n, 100) array of bytes; ValueError for data that is not whole
    records."""
    raw = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
        else np.asarray(data)
    if raw.dtype != np.uint8:
        raise InvalidParameterError(f"{what.capitalize()} must be bytes or a uint8 array, not "
                                    f"{raw.dtype}.")
    if raw.ndim == 2 and raw.shape[1] == RECORD:
        return np.ascontiguousarray(raw)
    if raw.ndim != 1 or raw.size % RECORD:
        raise InvalidParameterError(f"{what.capitalize()} must be whole records of {RECORD} bytes: "
                                    f"{raw.size} bytes is not a multiple of {RECORD}.")
    return raw.reshape(-1, RECORD)


def keys(data: bytes | np.ndarray) -> np.ndarray:
    """The records' keys as 10-byte values that numpy compares as unsigned bytes."""
    return np.ascontiguousarray(as_records(data)[:, :KEY]).view(f"V{KEY}").reshape(-1)


def records(count: int, seed: int | None = None, skew: float = 0.0) -> np.ndarray:
    """``count`` random records (as TeraGen makes them: random keys, then a payload); with
    ``skew`` > 0 the keys crowd towards small values (the first byte a power ``1 + skew``
    of a uniform draw), so that equal ranges of keys would hold very unequal shares."""
    count = checks.integer(count, "count", low=0)
    skew = checks.non_negative(skew, "skew")
    rng = np.random.default_rng(seed)
    out = rng.integers(0, 256, (count, RECORD), dtype=np.uint8)
    if skew:
        out[:, 0] = (256 * rng.random(count) ** (1 + skew)).astype(np.uint8)
    return out


def boundaries(data: bytes | np.ndarray, ranges: int, seed: int | None = None,
               sample: int = SAMPLE) -> np.ndarray:
    """The ``ranges - 1`` keys that split the keys into ``ranges`` ranges of about equal
    counts: quantiles of a random sample of them (at most ``sample``)."""
    ranges = checks.integer(ranges, "ranges", low=1)
    sample = checks.integer(sample, "sample", low=1)
    all_keys = keys(data)
    if not all_keys.size:
        return all_keys[:0]
    rng = np.random.default_rng(seed)
    chosen = np.sort(all_keys[rng.choice(all_keys.size, min(sample, all_keys.size),
                                         replace=False)])
    return chosen[[len(chosen) * q // ranges for q in range(1, ranges)]]


def _halves(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of rows that start with a key: its first 8 bytes as one big-endian integer, and its
    last 2 as another: the key
    order is theirs, compared in turn (integers sort and search several times faster than
    10-byte values)."""
    hi = np.ascontiguousarray(rows[:, :8]).view(">u8").reshape(-1).astype(np.uint64)
    lo = np.ascontiguousarray(rows[:, 8:KEY]).view(">u2").reshape(-1).astype(np.uint16)
    return hi, lo


def ranges_of(data: bytes | np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each record's range: how many of the (sorted) ``bounds`` its key is not below."""
    rows = as_records(data)
    bounds = np.asarray(bounds)
    if not bounds.size:
        return np.zeros(len(rows), np.intp)
    hi, lo = _halves(rows)
    bound_hi, _ = _halves(bounds.view(np.uint8).reshape(-1, KEY))
    where = np.searchsorted(bound_hi, hi, side="right")
    near = np.isin(hi, bound_hi)                # a bound shares its first 8 bytes: all 10
    if near.any():
        where[near] = np.searchsorted(bounds, keys(rows[near]), side="right")
    return where


def partition(data: bytes | np.ndarray, bounds: np.ndarray) -> list[bytes]:
    """A file's map: its records dealt into the ``len(bounds) + 1`` ranges, range q holding
    the keys from bounds[q - 1] (included) to bounds[q] (excluded), in input order."""
    rows = as_records(data)
    where = ranges_of(rows, bounds)
    order = np.argsort(where.astype(np.uint16 if len(bounds) < 65535 else np.intp),
                       kind="stable")           # 16-bit: numpy sorts it by radix
    counts = np.bincount(where, minlength=len(bounds) + 1)
    ends = np.cumsum(counts)
    ordered = rows[order]
    return [ordered[end - count:end].tobytes() for count, end in zip(counts, ends)]


def mapper(data: bytes | np.ndarray, bounds: bytes | np.ndarray) -> list[bytes]:
    """``partition`` with the bounds as plain bytes (10 a key), as a MapReduce job ships
    them to its workers (``ffcode.runtime.master.mapreduce.run``'s map)."""
    raw = np.frombuffer(bounds, np.uint8) if isinstance(bounds, (bytes, bytearray)) else \
        np.asarray(bounds, np.uint8).reshape(-1)
    if raw.size % KEY:
        raise InvalidParameterError(f"Bounds of {raw.size} bytes are not whole {KEY}-byte keys.")
    return partition(data, np.ascontiguousarray(raw).view(f"V{KEY}"))


def sort(data: bytes | np.ndarray) -> bytes:
    """A range's reduce: its records sorted by key (records of equal keys in any order)."""
    rows = as_records(data)
    hi, lo = _halves(rows)
    order = np.argsort(hi)
    ordered = hi[order]
    if bool((ordered[1:] == ordered[:-1]).any()):       # first 8 bytes equal: the last 2
        order = np.lexsort((lo, hi))
    return rows[order].tobytes()


def check(outputs: Sequence[bytes | np.ndarray], data: bytes | np.ndarray) -> bool:
    """Whether the reducers' outputs, in range order, are the input sorted: each sorted,
    each range's keys not below the previous range's, and all of them together the
    input's records, each as often."""
    parts = [as_records(o, "an output") for o in outputs]
    whole = np.concatenate(parts) if parts else as_records(data)[:0]
    k = keys(whole)
    if not bool((np.sort(k) == k).all()):      # void keys compare for equality alone
        return False
    original = as_records(data)
    if original.shape != whole.shape:
        return False
    mine = np.sort(whole.view(f"V{RECORD}").reshape(-1))
    theirs = np.sort(original.view(f"V{RECORD}").reshape(-1))
    return bool((mine == theirs).all())
