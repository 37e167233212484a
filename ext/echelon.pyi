import numpy as np
from numpy.typing import NDArray

def row_echelon(M: NDArray[np.unsignedinteger], p: int, ncols: int, reduced: bool,
                pivot_rows: NDArray[np.intp], pivot_cols: NDArray[np.intp]) -> int: ...
