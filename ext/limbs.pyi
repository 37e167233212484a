import numpy as np
from numpy.typing import NDArray

def split_limbs(a: NDArray[np.unsignedinteger], out: NDArray[np.float64], nlimbs: int,
                pairs: NDArray[np.intp], p: int, bits: int) -> None: ...
def combine_products(prods: NDArray[np.float64], diagonals: NDArray[np.int64], bits: int,
                     out: NDArray[np.unsignedinteger], p: int, mode: int) -> None: ...
