"""Malformed bytes close the connection that sent them, and only that one."""

from __future__ import annotations

import struct

import pytest

from orbitmq.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import RemotingClient, RemotingServer
from tests.component.remoting.conftest import RawFactory, ServerFactory
from tests.component.remoting.support import RecordingListener, echo_processor

pytestmark = pytest.mark.timeout(10)


def _json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


BAD_INPUT = {
    "garbage": b"\x00\x00\x00\x02GET / HTTP/1.1\r\n\r\n",
    "length_20_MiB": struct.pack(">i", 20 * 1024 * 1024) + b"\x00" * 64,
    "negative_length": struct.pack(">i", -5) + b"\x00" * 8,
    "bad_json_header": _json_frame(b'{"code": 34, "opaque": '),
    "header_not_an_object": _json_frame(b"[1, 2]"),
    "header_longer_than_frame": struct.pack(">ii", 8, 1000) + b"{}{}",
    "unknown_serialize_type": struct.pack(">ii", 6, (7 << 24) | 2) + b"{}",
    "good_frame_then_garbage": RemotingCommand.create_request(RequestCode.HEART_BEAT).encode()
    + b"\x00\x00\x00\x01\xff",
}


@pytest.mark.parametrize("data", BAD_INPUT.values(), ids=BAD_INPUT.keys())
async def test_malformed_bytes_close_only_that_connection(
    server_factory: ServerFactory, raw_factory: RawFactory, client: RemotingClient, data: bytes
) -> None:
    listener = RecordingListener()

    def setup(server: RemotingServer) -> None:
        server.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
        server.add_listener(listener)

    server = await server_factory(setup)
    addr = f"127.0.0.1:{server.port}"
    before = await client.invoke(addr, RemotingCommand.create_request(RequestCode.HEART_BEAT), 5)
    raw = await raw_factory(server)

    await raw.send(data)
    await raw.wait_eof()  # returns only once the server has closed the connection

    await listener.failed.wait()
    assert isinstance(listener.errors[0], ProtocolError)
    after = await client.invoke(addr, RemotingCommand.create_request(RequestCode.HEART_BEAT), 5)
    assert before.code == after.code == ResponseCode.SUCCESS
    assert len(server.channels) == 1  # the well-behaved client's
