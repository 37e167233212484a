import numpy as np
from numpy.typing import NDArray

def combine_rows_31(A: NDArray[np.uint32], rows: list[NDArray[np.uint32]] | NDArray[np.uint32],
                    out: NDArray[np.uint32], p: int, mode: int) -> None: ...
def combine_rows_64(A: NDArray[np.uint32] | NDArray[np.uint64],
                    rows: list[NDArray[np.uint32]] | list[NDArray[np.uint64]]
                    | NDArray[np.uint32] | NDArray[np.uint64],
                    out: NDArray[np.uint32] | NDArray[np.uint64], p: int, mode: int) -> None: ...
