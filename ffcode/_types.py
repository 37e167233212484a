"""The type aliases of the public signatures."""
from typing import Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

# Whatever numpy.random.default_rng accepts.
Seed = Union[None, int, Sequence[int], np.random.SeedSequence, np.random.Generator]

__all__ = ["ArrayLike", "Seed"]
