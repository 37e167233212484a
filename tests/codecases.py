"""Every code with small data encoded once, for the decoder tests: the encoding, the local
results, the exact output from an independent oracle (Python ints) and code.decode's answer,
and the packets of every kind."""
from ffcode import LCC, MDS, Decoder, MatDot, PolynomialCode, ProductCode, piece_packets

from helpers import assert_output, obj_matmul, rand

W_SEED = 23


def times_W(F, X):
    """Row-linear: X @ W for a fixed (cols x 2) matrix W."""
    return F.matmul(X, rand(F.p, (X.shape[1], 2), W_SEED))


def gram(F, X):
    """Not row-linear: X @ X.T (degree 2)."""
    return F.matmul(X, X.T)


NOT_ROW_LINEAR = ("LCC gram", "LCC square")


class Case:
    """name: "MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "ProductCode sparse"
    (support 0, 1, 3, 4), "LCC t=0", "LCC t=1" (row-linear f), or one of NOT_ROW_LINEAR.

    ``encoding`` is what code.encode returned (seeded), ``results[i]`` worker i's local
    result of it, and ``decoder(m)`` a Decoder of that encoding."""

    def __init__(self, name, F, seed=0):
        p = F.p
        self.name, self.F, self.result_shape = name, F, None
        if name.startswith("MDS"):
            A = rand(p, (9, 4), (seed, 1))
            x = rand(p, 4 if name == "MDS vector" else (4, 3), (seed, 2))
            code, data, args = MDS(F, 2, 5), (A,), (x,)
            expected = obj_matmul(p, A, x.reshape(4, -1)).reshape((9,) + x.shape[1:])
        elif name in ("PolynomialCode", "MatDot", "ProductCode sparse"):
            # share rows: 5 (A split in 2 row blocks, or MatDot's whole 5): uneven for m > 1
            A = rand(p, (5, 6) if name == "MatDot" else (9, 3), (seed, 3))
            B = rand(p, (A.shape[1], 7), (seed, 4))
            code = {"PolynomialCode": lambda: PolynomialCode(F, 2, 2, 6),
                    "MatDot": lambda: MatDot(F, 2, 5),
                    "ProductCode sparse": lambda: ProductCode(F, 6, [[0], [1]], [[0, 3]]),
                    }[name]()
            data, args, expected = (A, B), (), obj_matmul(p, A, B)
        else:
            X = [rand(p, (5, 3), (seed, 5, j)) for j in range(2)]
            if name == "LCC gram":
                code = LCC(F, 2, 1, gram, 2, 7)
                expected = [obj_matmul(p, x, x.T) for x in X]
                self.result_shape = (5, 5)
            elif name == "LCC square":
                code = LCC(F, 2, 1, "ffcode.functions:square", 2, 6)
                expected = [(x.astype(object) * x.astype(object)) % p for x in X]
                self.result_shape = (5, 3)
            else:
                t = 1 if name == "LCC t=1" else 0
                code = LCC(F, 2, t, times_W, 1, 4 + t, row_linear=True)
                expected = [obj_matmul(p, x, rand(p, (3, 2), W_SEED)) for x in X]
            data, args = (X,), ()
        self.code, self.data, self.args, self.expected = code, data, args, expected
        self.encoding = code.encode(*data, seed=seed)
        checked = code.arguments(self.encoding, *args)
        self.results = [code.compute(share, *checked) for share in self.encoding]
        R, N = code.recovery_threshold, code.n_workers
        self.reference = code.decode(self.encoding,
                                     {i: self.results[i] for i in range(N - R, N)})

    @property
    def full_speed_ok(self):
        return self.name not in NOT_ROW_LINEAR

    def decoder(self, m, defer=False) -> Decoder:
        """A Decoder of the encoding, for packets of m pieces (of ``finished`` or of
        ``full_speed``: the same data in the same layout)."""
        return Decoder(self.encoding, m, result_shape=self.result_shape, defer=defer)

    def full_speed(self, m, seed) -> list:
        """Per worker, the m packets of computation at full speed (an encoding of the same
        data with pieces=m: the layout of ``encoding``, so its Decoder decodes them)."""
        shares = self.code.encode(*self.data, pieces=m, seed=seed)
        checked = self.code.arguments(shares, *self.args)
        return [list(self.code.compute_pieces(share, *checked)) for share in shares]

    def finished(self, m, seed, systematic=False) -> list:
        """Per worker, the m packets of its whole local result."""
        return [list(piece_packets(self.F, y, m, i, seed=(seed, i), systematic=systematic))
                for i, y in enumerate(self.results)]

    def check(self, got) -> None:
        """got is exactly code.decode's answer, and the true output."""
        for want in (self.reference, self.expected):
            assert_output(self.F, got, want)
