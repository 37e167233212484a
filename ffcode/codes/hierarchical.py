"""Hierarchical codes (Park, Lee, Sohn, Suh, Moon, "Hierarchical coding for distributed
computing"): an outer code across groups of workers, an inner code inside each group.

The outer code encodes the job's data into one share per group; the inner code encodes
each group's share into one share per worker of the group, and a worker computes the
product of its share. Worker (g, w), numbered g · group_size + w, evaluates a polynomial
in two variables at the outer code's point a_g and the inner code's point b_w:

    h(a, b) = sum over e in outer support, f in inner support of H_ef a**e b**f

so the code is linear with R = R_o · R_i unknowns, its equations the Kronecker products of
the two codes' (``evaluations``); any R_o groups with R_i workers each give the output,
and so may other sets whose equations have full rank. It decodes two ways with the same
result: all at once, as any code of the contract (``decode``, the full-speed ``Decoder``:
how a master decodes it when every worker reports to it), or in two layers
(``decode_group`` for a group's inner code, as a relay near the group would, then
``decode_groups`` for the outer code over the groups' results), the way that spreads the
decoding over the groups: each group decodes R_i unknowns and the master R_o, instead of
R_o · R_i at the master.

Both codes are codes of matrix products (MDS, PolynomialCode, MatDot, any ProductCode) in
one field. An outer code that encodes B (PolynomialCode, MatDot) gives each group a pair
of shares, which an inner code that encodes B too splits further, and an inner MDS sends
the group's B share whole to its workers; an outer MDS leaves x to the job (an argument,
sent whole to every worker), so its inner code must be an MDS too.

>>> from ffcode import GF, MDS
>>> F = GF(65521)
>>> code = HierarchicalCode(MDS(F, 2, 3), MDS(F, 3, 4))     # 3 groups of 4 workers
>>> code.n_workers, code.recovery_threshold, code.groups, code.group_size
(12, 6, 3, 4)
>>> A, x = F.random((12, 5), seed=1), F.random(5, seed=2)
>>> shares = code.encode(A)
>>> results = {i: code.compute(shares[i], x) for i in (0, 2, 3, 8, 9, 10)}
>>> bool((code.decode(shares, results) == F.matmul(A, x)).all())
True
>>> groups = {g: code.decode_group(shares, g, results) for g in (0, 2)}
>>> bool((code.decode_groups(shares, groups) == F.matmul(A, x)).all())
True
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from ffcode import checks, functions
from ffcode._types import ArrayLike, Int, Output, Seed
from ffcode.codes.base import Code, Encoding, Split, read_only
from ffcode.codes.product import ProductCode
from ffcode.constraints import InstanceOf, validate
from ffcode.pieces import PieceShare
from ffcode.errors import InvalidParameterError

PRODUCT_CODE = InstanceOf(ProductCode, what="a code of matrix products (MDS, PolynomialCode, "
                                            "MatDot or a ProductCode)")


@dataclasses.dataclass(frozen=True, eq=False)
class HierarchicalEncoding(Encoding):
    """A hierarchical code's Encoding: the workers' shares, and the outer code's encoding
    (``outer``: a share per group) and each group's inner encoding (``inner``), which
    decoding a group and the groups needs."""
    outer: Optional[Encoding] = None
    inner: tuple = ()


class HierarchicalCode(Code):
    """An outer code across ``outer.n_workers`` groups and an inner code inside each group
    of ``inner.n_workers`` workers (see the module docstring): ``groups``, ``group_size``,
    ``group_of(worker)``; worker (g, w) is number g · group_size + w, its ``points`` row
    (a_g, b_w). The R unknowns are numbered (``support``): unknown d is the coefficient of
    a**e b**f for (e, f) = ``pairs[d]``."""
    function = staticmethod(functions.matmul)
    row_linear_operand: Optional[int] = 0
    every_r_decodes = False     # R results from too few groups do not

    _parameter_constraints = {"outer": PRODUCT_CODE, "inner": PRODUCT_CODE}

    def __init__(self, outer: ProductCode, inner: ProductCode) -> None:
        validate(HierarchicalCode._parameter_constraints, {"outer": outer, "inner": inner})
        if inner.F.p != outer.F.p:
            raise InvalidParameterError(f"The inner code's field GF({inner.F.p}) is not the outer "
                                        f"code's GF({outer.F.p}).")
        if outer.encodes == 1 and inner.encodes == 2:
            raise InvalidParameterError(f"The outer {type(outer).__name__} leaves x to the job "
                                        "(sent whole to every worker), so the inner code cannot "
                                        "split it: use an MDS inside the groups, or an outer code "
                                        "that encodes B (PolynomialCode, MatDot).")
        F = outer.F
        self.outer, self.inner = outer, inner
        self.F = F
        self.groups, self.group_size = outer.n_workers, inner.n_workers
        self.n_workers = self.groups * self.group_size
        self.pairs = tuple((e, f) for e in outer.support for f in inner.support)
        self.support = tuple(range(len(self.pairs)))    # the unknowns, pairs in that order
        self.recovery_threshold = len(self.pairs)
        self.inputs, self.encodes = outer.inputs, outer.encodes
        self.points = read_only(np.array([(a, b) for a in outer.points for b in inner.points],
                                         F.dtype).reshape(self.n_workers, 2))
        rows = [F.matmul(outer.evaluations[g].reshape(-1, 1),
                         inner.evaluations[w].reshape(1, -1)).reshape(-1)
                for g in range(self.groups) for w in range(self.group_size)]
        self.evaluations = read_only(np.array(rows, F.dtype))

    def __repr__(self) -> str:
        return f"HierarchicalCode({self.outer!r}, {self.inner!r})"

    @property
    def dense(self) -> bool:
        return False

    def group_of(self, worker: Int) -> tuple[int, int]:
        """(group, worker within the group) of a worker."""
        return divmod(self.worker_index(worker), self.group_size)

    def members(self, group: Int) -> list[int]:
        """The workers of a group, by number."""
        group = checks.integer(group, "group")
        if not 0 <= group < self.groups:
            raise InvalidParameterError(f"Group {group} is out of range: this code has groups "
                                        f"0..{self.groups - 1}.")
        return list(range(group * self.group_size, (group + 1) * self.group_size))

    # -- encoding -----------------------------------------------------------------------------

    def encode(self, *data: ArrayLike, pieces: Optional[Int] = None,
               seed: Seed = None) -> HierarchicalEncoding:
        """The workers' shares: the outer code's share of each group encoded by the inner
        code (its B share, when the inner code leaves B whole, added to every worker's);
        with pieces=m, PieceShares for computation at full speed. ``seed`` makes the masks
        and the pieces' combinations reproducible (None: fresh entropy)."""
        m = self.pieces_for(pieces)
        if len(data) != self.encodes:
            raise InvalidParameterError(f"{self!r}.encode takes {self.encodes} "
                                        f"array{'s' if self.encodes != 1 else ''} of data, got "
                                        f"{len(data)}.")
        rng = None if seed is None else np.random.default_rng(seed)
        outer = _encode(self.outer, data, None, rng)
        inner, shares = [], []
        for g, group in enumerate(outer):
            encoded, whole = group[:self.inner.encodes], group[self.inner.encodes:]
            encoding = _encode(self.inner, encoded, m, rng)
            inner.append(encoding)
            for w, share in enumerate(encoding):
                worker = g * self.group_size + w
                shares.append(dataclasses.replace(share, worker=worker, rest=share.rest +
                                                  whole)
                              if isinstance(share, PieceShare) else share + whole)
        return HierarchicalEncoding(self, tuple(shares), outer.shapes, inner[0].blocks, m,
                                    None if isinstance(seed, np.random.Generator) else seed,
                                    outer.masks + inner[0].masks, outer.magnitude,
                                    outer=outer, inner=tuple(inner))

    def arguments(self, encoding: Encoding | Split, *args: ArrayLike) -> tuple:
        """The job's arguments, as the outer code takes them (MDS: x)."""
        encoding = self.check_encoding(encoding, split=True)
        if isinstance(encoding, HierarchicalEncoding):
            assert encoding.outer is not None, "encode sets it"
            return self.outer.arguments(encoding.outer, *args)
        return self.outer.arguments(dataclasses.replace(encoding, code=self.outer), *args)

    def compute(self, share: tuple, *args: ArrayLike) -> np.ndarray:
        """The worker's exact product of its share's two operands (or of its A share and
        the job's x)."""
        if not (isinstance(share, tuple) and len(share) + len(args) == 2):
            raise InvalidParameterError("Argument 'share' must be a share from encode, with the "
                                        "job's arguments two operands in all, not "
                                        f"{type(share).__name__} and {len(args)} argument(s).")
        return super().compute(share, *args)

    def check_encoding(self, encoding: Any, split: bool = False) -> Any:
        encoding = super().check_encoding(encoding, split)
        if not split and not isinstance(encoding, HierarchicalEncoding):
            raise InvalidParameterError("Argument 'encoding' must be what HierarchicalCode.encode "
                                        "returned.")
        return encoding

    def _layers(self, encoding: Any) -> tuple[Encoding, tuple]:
        """(the outer encoding, the groups' inner encodings) of this code's encoding."""
        encoding = self.check_encoding(encoding)
        return encoding.outer, encoding.inner

    # -- decoding -----------------------------------------------------------------------------

    def result_rows(self, encoding: Encoding) -> Optional[int]:
        return self.inner.result_rows(self._layers(encoding)[1][0])

    def result_shape(self, encoding: Encoding, shape: tuple) -> tuple:
        return self.inner.result_shape(self._layers(encoding)[1][0], shape)

    def assemble(self, encoding: Encoding, blocks: np.ndarray) -> Output:
        """The output from the R = R_o · R_i coefficient blocks (outer exponent major): each
        outer coefficient assembled by the inner code from its R_i blocks, then the output
        by the outer code."""
        encoded, inner = self._layers(encoding)
        R_i, template = self.inner.recovery_threshold, inner[0]
        outer = np.stack([self.inner.assemble(template, self.inner.output_blocks(
            blocks[d * R_i:(d + 1) * R_i])) for d in range(self.outer.recovery_threshold)])
        return self.outer.assemble(encoded, self.outer.output_blocks(outer))

    def decode_group(self, encoding: Encoding, group: Int,
                     results: Mapping[int, ArrayLike]) -> np.ndarray:
        """Group ``group``'s outer local result from the results of at least R_i of its
        workers (``results`` by worker number; other groups' are ignored): its inner code
        decoded, as a relay near the group would."""
        inner = self._layers(encoding)[1]
        members = self.members(group)           # refuses a group out of range
        own = {worker - members[0]: y for worker, y in results.items()
               if self.worker_index(worker) in members}
        return self.inner.decode(inner[int(group)], own)

    def decode_groups(self, encoding: Encoding, results: Mapping[int, ArrayLike]) -> Output:
        """The output from the outer local results of at least R_o groups (``results`` by
        group, as ``decode_group`` gives them): the outer code decoded, as the master above
        the relays would."""
        return self.outer.decode(self._layers(encoding)[0], results)

    # -- checks and the uncoded split ---------------------------------------------------------

    def check(self, inputs: Sequence, output: Output, seed: Seed = None) -> bool:
        return self.outer.check(inputs, output, seed)

    def check_cost(self, inputs: Sequence) -> Optional[float]:
        return self.outer.check_cost(inputs)

    def uncoded(self, *data: ArrayLike) -> Split:
        return dataclasses.replace(self.outer.uncoded(*data), code=self)


def _encode(code: ProductCode, data: Sequence, pieces: Optional[int],
            rng: Optional[np.random.Generator]) -> Encoding:
    """code.encode of its data (A, or A and B), in pieces or not, drawing from rng."""
    if code.encodes == 1:
        return code.encode(data[0], pieces=pieces, seed=rng)
    return code.encode(data[0], data[1], pieces=pieces, seed=rng)
