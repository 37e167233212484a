"""Users' functions f that raise a BaseException on blocks of five rows (and double the
others), for the workers to import in tests/runtime/test_user_exceptions.py: a module of
its own, importable by hand-started workers without the test suite's helpers."""


class Custom(BaseException):
    """A BaseException of the user's own."""


RAISED = {"SystemExit": SystemExit(3), "KeyboardInterrupt": KeyboardInterrupt("in f"),
          "GeneratorExit": GeneratorExit("in f"), "Custom": Custom("mine")}


def _raiser(name):
    def f(F, X):
        """Doubles X; raises RAISED[name] on blocks of five rows."""
        if X.shape[0] == 5:
            raise RAISED[name]
        return F.add(X, X)
    f.__name__ = f.__qualname__ = f"raises_{name}"
    return f


raises_SystemExit = _raiser("SystemExit")
raises_KeyboardInterrupt = _raiser("KeyboardInterrupt")
raises_GeneratorExit = _raiser("GeneratorExit")
raises_Custom = _raiser("Custom")


def split_map(data, k):
    """A MapReduce map: a file's K = k[0] equal consecutive parts (bytes)."""
    k = int(k[0])
    m = len(data) // k
    return [data[i * m:(i + 1) * m].tobytes() for i in range(k)]


def exiting_map(data, k):
    raise SystemExit(3)


def interrupted_reduce(values):
    raise KeyboardInterrupt("in f")
