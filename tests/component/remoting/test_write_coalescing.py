"""Frames written during one turn of the loop leave with one transport write, in order, and a
close sends what was written before it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from orbitmq.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import Channel, ProcessorTable
from tests.component.remoting.support import RecordingListener

pytestmark = pytest.mark.timeout(10)


class CountingTransport:
    """A real socket transport that counts the buffers handed to it per call."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.calls: list[int] = []

    def writelines(self, data: Iterable[bytes | bytearray | memoryview]) -> None:
        buffers = list(data)
        self.calls.append(len(buffers))
        self.transport.writelines(buffers)

    def write(self, data: bytes) -> None:
        self.calls.append(1)
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class Counted(asyncio.BufferedProtocol):
    """Hands ``channel`` a CountingTransport around the real one."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.transport: CountingTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = CountingTransport(transport)  # type: ignore[arg-type]
        self.channel.connection_made(self.transport)  # type: ignore[arg-type]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.channel.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self.channel.buffer_updated(nbytes)

    def connection_lost(self, exc: Exception | None) -> None:
        self.channel.connection_lost(exc)


async def _peer() -> tuple[asyncio.Server, asyncio.Queue[bytes]]:
    """A server that puts every chunk it reads on a queue, then b"" at EOF."""
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            chunks.put_nowait(chunk)
        chunks.put_nowait(b"")
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0), chunks


@pytest.fixture
async def connected() -> AsyncIterator[tuple[Channel, CountingTransport, asyncio.Queue[bytes]]]:
    server, chunks = await _peer()
    channel = Channel(ProcessorTable(), RecordingListener())
    protocol = Counted(channel)
    port = server.sockets[0].getsockname()[1]
    await asyncio.get_running_loop().create_connection(lambda: protocol, "127.0.0.1", port)
    assert protocol.transport is not None
    yield channel, protocol.transport, chunks
    channel.abort()
    server.close()


def _responses(count: int) -> list[RemotingCommand]:
    result = []
    for i in range(count):
        request = RemotingCommand.create_request(RequestCode.HEART_BEAT)
        result.append(
            RemotingCommand.create_response(
                request, ResponseCode.SUCCESS, ext_fields={"n": str(i)}, body=b"b%d" % i
            )
        )
    return result


async def _read_commands(chunks: asyncio.Queue[bytes], count: int) -> tuple[list[int], bool]:
    """The ``n`` field of the first ``count`` commands the peer read, and whether EOF came."""
    decoder, eof = FrameDecoder(), False
    got: list[int] = []
    while len(got) < count or not eof:
        chunk = await chunks.get()
        if not chunk:
            eof = True
            break
        got.extend(int(command.ext_fields["n"]) for command in decoder.feed(chunk))
    return got, eof


async def test_frames_written_in_one_turn_go_out_in_one_transport_write(
    connected: tuple[Channel, CountingTransport, asyncio.Queue[bytes]],
) -> None:
    channel, transport, chunks = connected
    for command in _responses(20):
        assert channel.write(command)
    assert transport.calls == []  # queued until the end of this turn

    got: list[int] = []
    decoder = FrameDecoder()
    while len(got) < 20:
        got.extend(int(command.ext_fields["n"]) for command in decoder.feed(await chunks.get()))

    assert got == list(range(20))
    assert transport.calls == [40]  # head and body of each, one writelines


async def test_frames_written_before_close_are_sent_before_the_close(
    connected: tuple[Channel, CountingTransport, asyncio.Queue[bytes]],
) -> None:
    channel, _transport, chunks = connected
    for command in _responses(5):
        channel.write(command)
    channel.close()

    assert await _read_commands(chunks, 5) == ([0, 1, 2, 3, 4], True)
    assert not channel.write(_responses(1)[0])  # closing: refused, not queued


async def test_frames_written_after_a_turn_are_written_again_separately(
    connected: tuple[Channel, CountingTransport, asyncio.Queue[bytes]],
) -> None:
    channel, transport, chunks = connected
    first, second = _responses(2)
    channel.write(first)
    await asyncio.sleep(0)  # one turn: the first frame leaves on its own
    await asyncio.sleep(0)
    channel.write(second)
    channel.close()

    assert await _read_commands(chunks, 2) == ([0, 1], True)
    assert transport.calls == [2, 2]
