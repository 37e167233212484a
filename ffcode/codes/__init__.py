"""Polynomial codes: any recovery_threshold of n_workers local results give the exact output.

Every code has ``recovery_threshold``, ``n_workers``, ``points``, ``encode(...)`` (a list
of n_workers shares), ``compute(share, ...)`` (a worker's local result) and
``decode({worker_index: local_result})``.
"""
from ffcode.codes.lcc import LCC
from ffcode.codes.matdot import MatDot
from ffcode.codes.mds import MDS
from ffcode.codes.polynomial import PolynomialCode

__all__ = ["LCC", "MDS", "MatDot", "PolynomialCode"]
