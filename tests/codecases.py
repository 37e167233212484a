"""Every code with small data encoded once, for the decoder tests: the local results, the
exact output from an independent oracle (Python ints) and code.decode's answer, and the
packets of every kind."""
from ffcode import LCC, MDS, Decoder, MatDot, PolynomialCode, piece_packets

from helpers import assert_field_array, obj_matmul, rand

W_SEED = 23


def times_W(F, X):
    """Row-linear: X @ W for a fixed (cols x 2) matrix W."""
    return F.matmul(X, rand(F.p, (X.shape[1], 2), W_SEED))


def gram(F, X):
    """Not row-linear: X @ X.T (degree 2)."""
    return F.matmul(X, X.T)


NOT_ROW_LINEAR = ("LCC gram", "LCC square")


class Case:
    """name: "MDS vector", "MDS matrix", "PolynomialCode", "MatDot", "LCC t=0", "LCC t=1"
    (row-linear f), or one of NOT_ROW_LINEAR."""

    def __init__(self, name, F, seed=0):
        p = F.p
        self.name, self.F, self.result_shape = name, F, None
        if name.startswith("MDS"):
            A = rand(p, (9, 4), (seed, 1))
            x = rand(p, 4 if name == "MDS vector" else (4, 3), (seed, 2))
            code, data, args = MDS(F, 2, 5), (A,), (x,)
            expected = obj_matmul(p, A, x.reshape(4, -1)).reshape((9,) + x.shape[1:])
        elif name in ("PolynomialCode", "MatDot"):
            # share rows: 5 for PolynomialCode (A split in 2), 5 for MatDot: uneven for m > 1
            A = rand(p, (9, 3) if name == "PolynomialCode" else (5, 6), (seed, 3))
            B = rand(p, (A.shape[1], 7), (seed, 4))
            code = PolynomialCode(F, 2, 2, 6) if name == "PolynomialCode" else MatDot(F, 2, 5)
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
        shares = code.encode(*data, seed=seed)
        self.results = [code.compute(share, *args) for share in shares]
        R, N = code.recovery_threshold, code.n_workers
        self.reference = code.decode({i: self.results[i] for i in range(N - R, N)})

    @property
    def full_speed_ok(self):
        return self.name not in NOT_ROW_LINEAR

    def decoder(self, m, defer=False) -> Decoder:
        return Decoder(self.code, m, result_shape=self.result_shape, defer=defer)

    def full_speed(self, m, seed) -> list:
        """Per worker, the m packets of computation at full speed."""
        shares = self.code.encode(*self.data, pieces=m, seed=seed)
        return [list(self.code.compute_pieces(share, *self.args)) for share in shares]

    def finished(self, m, seed, systematic=False) -> list:
        """Per worker, the m packets of its whole local result."""
        return [list(piece_packets(self.F, y, m, i, seed=(seed, i), systematic=systematic))
                for i, y in enumerate(self.results)]

    def check(self, got) -> None:
        """got is exactly code.decode's answer, and the true output."""
        for want in (self.reference, self.expected):
            if isinstance(want, list):
                assert isinstance(got, list) and len(got) == len(want)
                for g, w in zip(got, want):
                    assert_field_array(self.F, g, w)
            else:
                assert_field_array(self.F, got, want)
