"""Decoding: the full-speed decoder (``Decoder``, rank tracked packet by packet), robust
decoding despite wrong workers (``robust``: ``RobustDecoder``, whole results, and
``check_correctable``), the collectors that turn a job's packets into its output (one
protocol, ``collectors.Collector``), a relay's decoding of its group's packets for a
hierarchical code (``relay.GroupDecoder``), and the checks of a decoded output
(``verify``)."""
from ffcode.decoding.decoder import Decoder
from ffcode.decoding.robust import RobustDecoder

__all__ = ["Decoder", "RobustDecoder"]
