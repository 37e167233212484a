import numpy as np
from numpy.typing import NDArray

def vandermonde(points: NDArray[np.unsignedinteger], out: NDArray[np.unsignedinteger],
                p: int) -> None: ...
