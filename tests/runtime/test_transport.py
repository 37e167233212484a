"""The transport on its own: any peer (not only the master) listens through a Transport and
is dialled with ``dial``; CURVE keys decide who gets in, on both sides of the handshake."""
import contextlib
import time

import pytest
import zmq

from ffcode.runtime.shared import keys
from ffcode.runtime.shared.transport import HANDSHAKE_REFUSED, Transport, dial
from ffcode.runtime.shared.wire import Header, Kind


def handshake(monitor, seconds=10.0) -> int:
    """The first handshake event the dialler's monitor reports."""
    from zmq.utils.monitor import recv_monitor_message
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if monitor.poll(100):
            event = recv_monitor_message(monitor)["event"]
            if event & (zmq.EVENT_HANDSHAKE_SUCCEEDED | HANDSHAKE_REFUSED):
                return event
    raise AssertionError("no handshake within the time")


@contextlib.contextmanager
def dialled(transport, server_public, client):
    """A DEALER dialled to the transport with the client's key pair (files)."""
    context = zmq.Context()
    try:
        link = dial(context, transport.endpoint, keys.load_client(client[1], server_public))
        yield link
        link.monitor.close(linger=0)
        link.socket.close(linger=0)
    finally:
        context.destroy(linger=0)


@pytest.fixture
def peer(tmp_path):
    """A listening peer with a CURVE key that admits one client key ("friend")."""
    server_public, server_secret = keys.generate(str(tmp_path / "server"), "peer")
    friend = keys.generate(str(tmp_path / "friend"), "friend")
    stranger = keys.generate(str(tmp_path / "stranger"), "stranger")
    keys.authorise(friend[0], str(tmp_path / "clients"))
    transport = Transport(key=server_secret, clients=str(tmp_path / "clients"))
    transport.bind("tcp://127.0.0.1:*")
    yield transport, server_public, friend, stranger
    transport.close()


@pytest.mark.bounded(30)
def test_an_admitted_key_reaches_the_peer(bounded, peer):
    transport, server_public, friend, _ = peer
    with dialled(transport, server_public, friend) as link:
        assert handshake(link.monitor) == zmq.EVENT_HANDSHAKE_SUCCEEDED
        link.socket.send_multipart([Header(Kind.HEARTBEAT, transport.session, 0).pack()])
        deadline = time.monotonic() + 10
        got = []
        while not got and time.monotonic() < deadline:
            got = [m for m in transport.receive(0.1) if m.header is not None]
        assert got and got[0].header.kind == Kind.HEARTBEAT


@pytest.mark.bounded(30)
def test_an_unknown_key_is_refused_at_the_handshake(bounded, peer):
    transport, server_public, _, stranger = peer
    with dialled(transport, server_public, stranger) as link:
        assert handshake(link.monitor) & HANDSHAKE_REFUSED
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            assert not [m for m in transport.receive(0.05) if m.header is not None]
        assert transport.rejected_total["refused"] >= 1


def test_bad_keys_leave_nothing_open():
    context = zmq.Context()
    try:
        with pytest.raises(zmq.ZMQError):
            dial(context, "tcp://127.0.0.1:1", (b"short", b"short", b"short"))
    finally:
        context.term()          # would hang on a socket left open
