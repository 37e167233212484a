import numpy as np
from numpy.typing import NDArray

def folding(p: int) -> tuple[int, int]: ...
def dot_rows(A: NDArray[np.uint32] | NDArray[np.uint64], B: NDArray[np.uint32] | NDArray[np.uint64],
             out: NDArray[np.uint32] | NDArray[np.uint64], p: int, mode: int,
             check_a: bool = False) -> bool: ...
