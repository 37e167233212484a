"""Coded MapReduce: the field's second pillar, computation traded for communication.

Each input file is mapped on r of the K workers (``shuffle.Placement``); in the shuffle
each worker needs the values of its reduce function that others mapped, and with coding
every (r + 1)-subset of the workers exchanges sums of segments that each receiver can
take apart with what it mapped itself, cutting the bytes shuffled by r
(``shuffle.coded_packet``, ``shuffle.decoded_segment``; what one worker sends and makes
of what it receives, ``shuffle.outgoing`` and ``shuffle.incoming``; ``shuffle.shuffle``
runs a whole shuffle in one process). ``verify`` checks a shuffle against a lying peer
(fingerprints of every piece received, judged for who can have lied). ``terasort`` holds TeraSort's map, reduce and
check, which Coded TeraSort shuffles coded; ``model`` prices a job's phases from bytes and
rates, on a network of capped links or a shared medium, for any K.

>>> from ffcode.mapreduce import Placement
>>> placement = Placement(6, 2)         # K = 6 workers, every batch mapped on 2 of them
>>> placement, len(placement.groups())  # the coded shuffle's groups: the 3-subsets
(Placement(K=6, r=2, 15 batches of 1 files), 20)
"""
from ffcode.mapreduce.shuffle import (Bytes, Message, Placement, Recovery, Vectors,
                                      coded_packet, decoded_segment, expected, incoming,
                                      outgoing, shuffle, uncoded_transfers)

__all__ = ["Bytes", "Message", "Placement", "Recovery", "Vectors", "coded_packet",
           "decoded_segment", "expected", "incoming", "outgoing", "shuffle",
           "uncoded_transfers"]
