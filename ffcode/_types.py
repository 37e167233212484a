"""The type aliases of the public signatures."""
from typing import List, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

# Whatever numpy.random.default_rng accepts.
Seed = Union[None, int, Sequence[int], np.random.SeedSequence, np.random.Generator]
# An integer argument: a Python or numpy integer (bools are refused at run time).
Int = Union[int, np.integer]
# An array shape, or one dimension's length.
Shape = Union[int, Sequence[int]]
# What a code decodes to: one array, or LCC's list of f(X_j).
Output = Union[np.ndarray, List[np.ndarray]]

__all__ = ["ArrayLike", "Int", "Output", "Seed", "Shape"]
