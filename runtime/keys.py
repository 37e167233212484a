"""CURVE encryption with client authentication, from key files (pyzmq's own CURVE and ZAP
authenticator): the master accepts only workers whose public keys sit in its directory."""
import os

import zmq.auth


def generate(directory, name):
    """Write NAME.key (public) and NAME.key_secret (secret) into directory; returns their
    paths. Copy a worker's .key into the master's clients directory to authorise it."""
    os.makedirs(directory, exist_ok=True)
    return zmq.auth.create_certificates(directory, name)


def _load(path, secret):
    if not os.path.isfile(path):
        raise ValueError(f"CURVE key file {path!r} does not exist.")
    public, secret_key = zmq.auth.load_certificate(path)
    if secret and secret_key is None:
        raise ValueError(f"{path!r} holds no secret key: pass the .key_secret file.")
    return public, secret_key


def server(context, socket, secret_file, clients_dir):
    """Make socket a CURVE server that admits only the public keys in clients_dir; returns
    the running ZAP authenticator (stop it when done)."""
    from zmq.auth.thread import ThreadAuthenticator     # a thread the workers never need

    if not os.path.isdir(clients_dir):
        raise ValueError(f"CURVE clients directory {clients_dir!r} does not exist.")
    public, secret = _load(secret_file, secret=True)
    authenticator = ThreadAuthenticator(context)
    authenticator.start()
    authenticator.configure_curve(domain="*", location=os.path.abspath(clients_dir))
    socket.curve_secretkey, socket.curve_publickey = secret, public
    socket.curve_server = True
    return authenticator


def client(socket, secret_file, server_public_file):
    """Make socket a CURVE client with its own key pair, trusting the master's public key."""
    public, secret = _load(secret_file, secret=True)
    server_public, _ = _load(server_public_file, secret=False)
    socket.curve_secretkey, socket.curve_publickey = secret, public
    socket.curve_serverkey = server_public
