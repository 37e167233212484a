"""CURVE key files and sockets: the master accepts only workers whose public keys sit in its
clients directory (the gate, runtime/shared/gate.py, admits them), or session keys that never touch
a disk (the Ray engine's).

Key files use pyzmq's certificate format (``zmq.auth.load_certificate`` reads them). A secret
key file is created readable by its owner only (mode 0600, never wider, not even for a
moment) and is never overwritten unless asked to.

A key pair written and read back (z85 keys of 40 characters, the secret one its owner's
alone); asked for again, the pair is reused:

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as directory:
...     public_file, secret_file = generate(directory, "worker")
...     public, secret = load_secret(secret_file)
...     mode = stat.S_IMODE(os.stat(secret_file).st_mode)
...     generated = pair(directory, "worker")[2]
>>> os.path.basename(public_file), os.path.basename(secret_file)
('worker.key', 'worker.key_secret')
>>> type(public), len(public), len(secret), oct(mode), generated
(<class 'bytes'>, 40, 40, '0o600', False)
"""
from __future__ import annotations

import os
import stat

import zmq
import zmq.auth

from ffcode.errors import InvalidParameterError

_BANNER = "#   ZeroMQ CURVE {} Certificate, written by ffcode\n"


def generate(directory: str, name: str, force: bool = False) -> tuple[str, str]:
    """Write NAME.key (public) and NAME.key_secret (secret, mode 0600) into directory
    (created mode 0700 if missing); returns their paths. FileExistsError (naming the file)
    if either exists, unless force=True replaces them. Copy a worker's .key into the
    master's clients directory to authorise it (``authorise``)."""
    public_file, secret_file = paths(directory, name)
    if not force:
        for path in (public_file, secret_file):
            if os.path.lexists(path):
                raise FileExistsError(17, "A CURVE key file already exists", path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    public, secret = zmq.curve_keypair()
    _write(secret_file, "**Secret**", public, secret, force)
    _write(public_file, "Public", public, None, force)
    return public_file, secret_file


def paths(directory: str, name: str) -> tuple[str, str]:
    """(NAME.key, NAME.key_secret) in directory."""
    base = os.path.join(directory, name)
    return base + ".key", base + ".key_secret"


def pair(directory: str, name: str) -> tuple[str, str, bool]:
    """The key pair NAME in directory: reused when both files exist, generated when neither
    does; returns (public file, secret file, whether it was generated). ValueError when only
    one of the two exists (a pair cannot be completed)."""
    public_file, secret_file = paths(directory, name)
    present = [os.path.exists(path) for path in (public_file, secret_file)]
    if all(present):
        _load(secret_file, secret=True)
        return public_file, secret_file, False
    if any(present):
        missing = public_file if not present[0] else secret_file
        raise InvalidParameterError(
            f"CURVE key pair {name!r} in {directory!r} is incomplete: "
            f"{missing!r} is missing (remove the other file to make a new pair).")
    return (*generate(directory, name), True)


def authorise(public_file: str, clients_dir: str) -> str:
    """Put a copy of a worker's public key file into the master's clients directory (made
    if missing) unless it is already there; returns the copy's path. ValueError when a
    different key sits under that name."""
    public, _ = _load(public_file, secret=False)
    os.makedirs(clients_dir, mode=0o700, exist_ok=True)
    copy = os.path.join(clients_dir, os.path.basename(public_file))
    if os.path.exists(copy):
        if _load(copy, secret=False)[0] != public:
            raise InvalidParameterError(f"{copy!r} holds another public key than {public_file!r}.")
        return copy
    _write(copy, "Public", public, None, force=False)
    return copy


def _write(path, kind, public, secret, force):
    """One key file, created with O_EXCL (never through a link, never over a file unless
    force removes it first) and mode 0600 for a secret, 0644 for a public key."""
    if force and os.path.lexists(path):
        os.remove(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if secret else 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(_BANNER.format(kind) + "\nmetadata\ncurve\n")
        f.write(f'    public-key = "{public.decode()}"\n')
        if secret is not None:
            f.write(f'    secret-key = "{secret.decode()}"\n')


def _load(path, secret):
    """(public, secret or None) of a key file; ValueError naming the file when it is
    missing, unreadable, not a key file, or a secret key that others may read."""
    if not os.path.isfile(path):
        raise InvalidParameterError(f"CURVE key file {path!r} does not exist (or is not a file).")
    try:
        public, secret_key = zmq.auth.load_certificate(path)
    except OSError as e:
        raise InvalidParameterError(
            f"Cannot read CURVE key file {path!r}: {e.strerror}.") from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidParameterError(
            f"{path!r} is not a CURVE key file (no public key in it).") from None
    if secret and secret_key is None:
        raise InvalidParameterError(f"{path!r} holds no secret key: pass the .key_secret file.")
    if secret:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            raise InvalidParameterError(
                f"CURVE secret key file {path!r} may be read by others (mode "
                f"{mode:o}): 'chmod 600 {path}' (a secret key must be its "
                f"owner's alone).")
    return public, secret_key


def load_secret(secret_file: str) -> tuple[bytes, bytes]:
    """(public, secret) from a secret key file."""
    return _load(secret_file, secret=True)


def load_client(secret_file: str, server_public_file: str) -> tuple[bytes, bytes, bytes]:
    """A worker's (public, secret, master's public) from its key files."""
    return (*_load(secret_file, secret=True), _load(server_public_file, secret=False)[0])


def load_clients(directory: str) -> frozenset:
    """The public keys (z85 strings) of the authorised workers: every NAME.key file in
    directory. ValueError naming the first file that cannot be read or holds no key: one
    bad file must not leave the master admitting fewer workers than its user thinks."""
    if not os.path.isdir(directory):
        raise InvalidParameterError(f"CURVE clients directory {directory!r} does not exist.")
    found = set()
    for name in sorted(os.listdir(directory)):
        if name.endswith(".key"):
            found.add(_load(os.path.join(directory, name), secret=False)[0].decode())
    return frozenset(found)


def server(socket, public: bytes, secret: bytes) -> None:
    """Make socket a CURVE server with this key pair (its binds from now on); which clients
    it admits is the gate's (runtime.gate) to say."""
    socket.curve_secretkey, socket.curve_publickey = secret, public
    socket.curve_server = True


def client(socket, public: bytes, secret: bytes, server_public: bytes):
    """Make socket a CURVE client with its own key pair, trusting the master's public key."""
    socket.curve_secretkey, socket.curve_publickey = secret, public
    socket.curve_serverkey = server_public
