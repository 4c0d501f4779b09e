"""Processors and a raw connection for the remoting tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orbitmq.protocol import FrameDecoder, RemotingCommand, ResponseCode
from orbitmq.remoting import ChannelContext, ChannelEventListener

Handler = Callable[[ChannelContext, RemotingCommand], Awaitable[RemotingCommand | None]]


class FuncProcessor:
    """A RequestProcessor from a coroutine function; counts what it was given."""

    def __init__(self, handler: Handler, *, reject: bool = False) -> None:
        self._handler = handler
        self.reject = reject
        self.calls = 0

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        self.calls += 1
        return await self._handler(ctx, request)

    def reject_request(self) -> bool:
        return self.reject


async def echo(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
    """SUCCESS with the request's body and extFields."""
    return RemotingCommand.create_response(
        request, ResponseCode.SUCCESS, ext_fields=dict(request.ext_fields), body=request.body
    )


def echo_processor() -> FuncProcessor:
    return FuncProcessor(echo)


@dataclass
class RecordingListener(ChannelEventListener):
    """Records channel events and signals each kind with an asyncio.Event."""

    events: list[tuple[str, int]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    failed: asyncio.Event = field(default_factory=asyncio.Event)
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def on_connect(self, ctx: ChannelContext) -> None:
        self.events.append(("connect", ctx.id))
        self.connected.set()

    def on_close(self, ctx: ChannelContext) -> None:
        self.events.append(("close", ctx.id))
        self.closed.set()

    def on_exception(self, ctx: ChannelContext, error: BaseException) -> None:
        self.events.append(("exception", ctx.id))
        self.errors.append(error)
        self.failed.set()

    def on_idle(self, ctx: ChannelContext) -> None:
        self.events.append(("idle", ctx.id))
        self.idle.set()


class RawConnection:
    """A plain stream connection: send any bytes, read whole commands, see the close."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._decoder = FrameDecoder()
        self._ready: list[RemotingCommand] = []

    @classmethod
    async def open(cls, host: str, port: int) -> RawConnection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def send(self, data: bytes | RemotingCommand) -> None:
        self.writer.write(data.encode() if isinstance(data, RemotingCommand) else data)
        await self.writer.drain()

    async def read_command(self) -> RemotingCommand:
        while not self._ready:
            chunk = await self.reader.read(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self._ready.extend(self._decoder.feed(chunk))
        return self._ready.pop(0)

    async def wait_eof(self) -> bytes:
        """Everything the server still sent, once it has closed the connection."""
        return await self.reader.read()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()
