"""Gradient coding over GF(p): the exact sum of a data set's gradient, partition by
partition, from any n - s of n workers, and at full speed from whatever partitions the
workers have finished.

Data split into k partitions, each on s + 1 workers: a worker sends a combination of its
partitions' gradients, and any n - s workers' messages give the exact sum (Tandon, Lei,
Dimakis and Karampatziakis, 2017). Over GF(p) the decoding is exact: gradients travel as
signed fixed point (``PrimeField.from_real``), and ``GradientCode.check_magnitude``
refuses a sum that could wrap around. At full speed a worker sends, after each partition
it finishes, the combination of what it has done so far (``GradientCode.partial``), and a
``GradientDecoder`` reads the sum the moment the messages span the all-ones vector, slow
workers' partial work included; ``worst_case_processed`` and ``best_orders`` price and
choose the order in which workers process their partitions.

- ``GradientCode``: the contract; ``FractionalRepetition`` and ``CyclicRepetition``, two
  codes of it;
- ``GradientDecoder``: the master's side at full speed;
- ``worst_case_processed`` and ``best_orders``: the order of the partitions.
"""
from ffcode.gradcoding.codes import CyclicRepetition, FractionalRepetition, GradientCode
from ffcode.gradcoding.decoder import GradientDecoder
from ffcode.gradcoding.order import best_orders, worst_case_processed

__all__ = ["CyclicRepetition", "FractionalRepetition", "GradientCode", "GradientDecoder",
           "best_orders", "worst_case_processed"]
