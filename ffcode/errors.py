"""ffcode's exceptions: one root, so that ``except ffcode.FFCodeError`` catches whatever
ffcode itself raised. Narrower classes also subclass the built-in they refine, so that
``except ValueError`` (a decoding failure) or ``except RuntimeError`` (a cluster failure)
keeps working. The runtime's errors (``ffcode.ClusterError`` and below) derive from it."""


class FFCodeError(Exception):
    """Base of every exception ffcode defines."""


class DecodingError(FFCodeError, ValueError):
    """The results do not determine the output: more workers are wrong than the code can
    correct, or the workers' equations are dependent."""
