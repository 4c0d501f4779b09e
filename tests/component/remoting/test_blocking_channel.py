"""BlockingChannel, and the range reader's pool of them, against a scripted peer on a real
socket: answers matched by opaque, bodies as views of the reused buffer, every way the peer
can fail (refused, silent, a bad frame, a cut stream; each failure closes the channel), and
a pooled channel whose peer went away while it sat idle."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

import pytest

from orbitmq.client.blocking_range_reader import BlockingRangeReader
from orbitmq.protocol import (
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
)
from orbitmq.remoting import RemotingConnectError, RemotingTimeoutError
from orbitmq.remoting.blocking_channel import BlockingChannel
from tests.eventually import eventually

Script = Callable[[socket.socket], object]


class Peer(Protocol):
    """The ``peer`` fixture: serve ``connections`` connections with ``script``."""

    def __call__(self, script: Script, connections: int = 1) -> str: ...


@pytest.fixture
def peer() -> Iterator[Peer]:
    """Serve one connection with a script; the address to connect to."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(script: Script, connections: int = 1) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def run() -> None:
            for _ in range(connections):
                conn, _ = listener.accept()
                with conn:
                    script(conn)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return f"127.0.0.1:{listener.getsockname()[1]}"

    yield serve
    for listener in listeners:
        listener.close()
    for thread in threads:
        thread.join(5)


def requests_from(conn: socket.socket, count: int) -> list[RemotingCommand]:
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    while len(got) < count:
        data = conn.recv(65536)
        if not data:
            break
        got += decoder.feed(data)
    return got


def answer(request: RemotingCommand, body: bytes) -> bytes:
    return RemotingCommand.create_response(request, ResponseCode.SUCCESS, body=body).encode()


def request(n: int = 0) -> RemotingCommand:
    return RemotingCommand.create_request(RequestCode.PULL_MESSAGE, {"n": str(n)})


def test_answers_are_matched_by_opaque_and_bodies_are_views_of_one_buffer(peer: Peer) -> None:
    def script(conn: socket.socket) -> None:
        first, second = requests_from(conn, 2)
        # A request from the server first (skipped), then the answers in reverse order.
        push = RemotingCommand.create_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {})
        conn.sendall(push.encode() + answer(second, b"two" * 1000) + answer(first, b"one"))
        requests_from(conn, 1)  # until the client closes

    channel = BlockingChannel(peer(script), 2.0)
    sent = [request(1), request(2)]
    for r in sent:
        channel.send(r, 2.0)
    assert channel.in_flight == 2
    command, body = channel.receive(2.0)
    assert command.opaque == sent[1].opaque and bytes(body) == b"two" * 1000
    command, body2 = channel.receive(2.0)
    assert command.opaque == sent[0].opaque and bytes(body2) == b"one"
    assert body.obj is body2.obj  # no copy: the bodies are views of the channel's buffer
    assert channel.in_flight == 0
    channel.close()


def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as spare:
        port = spare.getsockname()[1]
    with pytest.raises(RemotingConnectError, match=f"connect to 127.0.0.1:{port} failed"):
        BlockingChannel(f"127.0.0.1:{port}", 1.0)


def test_no_answer_in_time_is_a_timeout_and_closes_the_channel(peer: Peer) -> None:
    done = threading.Event()
    channel = BlockingChannel(peer(lambda conn: done.wait(5)), 2.0)
    channel.send(request(), 1.0)
    with pytest.raises(RemotingTimeoutError, match="timeout, 200"):
        channel.receive(0.2)
    done.set()
    assert channel.closed
    with pytest.raises(RemotingConnectError, match="is closed"):
        channel.send(request(), 1.0)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (struct.pack(">i", 2**30), ProtocolError),  # a length past the frame limit
        (struct.pack(">i", 100) + b"short", RemotingConnectError),  # cut mid-frame
        (b"", RemotingConnectError),  # closed before answering
    ],
)
def test_a_bad_or_cut_stream_fails_the_channel(peer: Peer, reply: bytes, error: type) -> None:
    def script(conn: socket.socket) -> None:
        requests_from(conn, 1)
        conn.sendall(reply)

    channel = BlockingChannel(peer(script), 2.0)
    channel.send(request(), 2.0)
    with pytest.raises(error):
        channel.receive(2.0)
    assert channel.closed


def test_an_answer_to_no_request_is_a_protocol_error(peer: Peer) -> None:
    def script(conn: socket.socket) -> None:
        requests_from(conn, 1)
        conn.sendall(answer(request(), b"stray"))

    channel = BlockingChannel(peer(script), 2.0)
    channel.send(request(), 2.0)
    with pytest.raises(ProtocolError, match="matches no request"):
        channel.receive(2.0)
    assert channel.closed


def test_an_idle_channel_knows_when_its_peer_has_gone(peer: Peer) -> None:
    closed = threading.Event()

    def script(conn: socket.socket) -> None:
        requests_from(conn, 1)
        conn.sendall(answer(first, b"ok"))
        closed.wait(5)

    first = request()
    channel = BlockingChannel(peer(script), 2.0)
    channel.send(first, 2.0)
    channel.receive(2.0)
    assert not channel.peer_closed()  # idle and open
    closed.set()  # the peer's script ends: it closes the connection
    eventually(channel.peer_closed, 5, 0.01, what="the peer's close")


def test_a_range_reader_replaces_a_pooled_channel_whose_peer_has_gone(peer: Peer) -> None:
    accepted: list[int] = []

    def script(conn: socket.socket) -> None:
        accepted.append(1)  # and close at once: a broker that restarted

    addr = peer(script, connections=2)
    reader = BlockingRangeReader("g", 2.0)
    stale = BlockingChannel(addr, 2.0)
    reader._idle[addr] = [stale]
    eventually(stale.peer_closed, 5, 0.01)
    fresh = reader._take(addr)
    assert fresh is not stale and stale.closed and not fresh.closed
    fresh.close()
    reader.close()
