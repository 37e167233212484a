"""The type aliases of the public signatures."""
from typing import Any, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

# Whatever numpy.random.default_rng accepts.
Seed = Union[None, int, Sequence[int], np.random.SeedSequence, np.random.Generator]
# An integer argument: a Python or numpy integer (bools are refused at run time).
Int = Union[int, np.integer]
# An array shape, or one dimension's length.
Shape = Union[int, Sequence[int]]
# What a code decodes to: one array, or LCC's list of f(X_j). Which one depends on the code,
# which a type checker does not follow: to it an Output is "an array, or else anything"
# (typeshed's `X | Any` for such returns), so that `(C == F.matmul(A, B)).all()` on a
# decoded product checks without narrowing a union first.
Output = Union[np.ndarray, Any]

__all__ = ["ArrayLike", "Int", "Output", "Seed", "Shape"]
