"""Decoding: the full-speed decoder (``Decoder``, rank tracked packet by packet), robust
decoding despite wrong workers (``robust``: ``RobustDecoder``, whole results, and
``check_correctable``), the collectors that turn a job's packets into its output (one
protocol, ``collectors.Collector``), what a relay does with its group's packets (decode
them for a hierarchical code, ``relay.GroupDecoder``; forward those that add rank for an
ordinary one, ``relay.Forwarder``), and the checks of a decoded output
(``verify``)."""
from ffcode.decoding.decoder import Decoder
from ffcode.decoding.robust import RobustDecoder

__all__ = ["Decoder", "RobustDecoder"]
