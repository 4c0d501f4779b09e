"""``RemotingServer``: accepts RocketMQ remoting connections and routes their requests."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from orbitmq.common.errors import ConfigError
from orbitmq.common.lifetime import AsyncLifetime
from orbitmq.protocol import MAX_FRAME_BYTES
from orbitmq.remoting.channel import DEFAULT_WRITE_BUFFER_HIGH_BYTES, Channel
from orbitmq.remoting.channel_context import ChannelContext, ChannelEventListener
from orbitmq.remoting.channel_event_listeners import ChannelEventListeners
from orbitmq.remoting.handshake_handler import HandshakeHandler
from orbitmq.remoting.processor_registry import ProcessorRegistry
from orbitmq.remoting.processor_table import ProcessorTable
from orbitmq.remoting.tls_system_config import TlsSystemConfig

log = logging.getLogger(__name__)

#: RocketMQ's serverChannelMaxIdleTimeSeconds.
DEFAULT_CHANNEL_MAX_IDLE_S: Final = 120.0
#: RocketMQ's serverSocketBacklog.
DEFAULT_BACKLOG: Final = 1024


class RemotingServer(ProcessorRegistry, AsyncLifetime):
    """Owns a listening socket, the connections it accepted and its ``ProcessorTable``
    (RocketMQ's ``NettyRemotingServer``).

    Wiring registers every code with its processor before ``start`` (one visible table:
    ``table.registrations``). Each connection is a ``Channel``: requests are processed as
    tasks bounded by their executor, answers keep the request's opaque and serialize type,
    a malformed frame closes that connection only, and a connection idle for
    ``channel_max_idle_s`` is closed. Listeners added with ``add_listener`` hear every
    connect, close, exception and idle (registries clear a client's state on close).

    ``port`` is the bound port once started (pass 0 to let the OS choose). ``tls`` None
    serves plain connections only, as before TLS existed; otherwise its tls.server.mode
    applies: disabled refuses TLS, permissive takes both, enforcing refuses plain, each
    connection told by its first byte (``HandshakeHandler``); TLS is refused when no server
    certificate is configured. Use from one event loop; not thread-safe.
    """

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        channel_max_idle_s: float | None = DEFAULT_CHANNEL_MAX_IDLE_S,
        tls: TlsSystemConfig | None = None,
        backlog: int = DEFAULT_BACKLOG,
        write_buffer_high_bytes: int = DEFAULT_WRITE_BUFFER_HIGH_BYTES,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        table: ProcessorTable | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ConfigError(f"listenPort {port} is outside 0..65535")
        if channel_max_idle_s is not None and channel_max_idle_s <= 0:
            raise ConfigError(
                f"serverChannelMaxIdleTimeSeconds {channel_max_idle_s} must be above 0"
            )
        self.host = host
        self._requested_port = port
        self.channel_max_idle_s = channel_max_idle_s
        self.tls = tls
        # Built now: a bad certificate or key fails the server's construction.
        self._ssl = tls.server_context() if tls is not None else None
        self._backlog = backlog
        self._write_buffer_high_bytes = write_buffer_high_bytes
        self._max_frame_bytes = max_frame_bytes
        super().__init__(table)
        self._channels: dict[int, Channel] = {}
        self._events = ChannelEventListeners()
        self._events.add(_Tracker(self._channels))
        self._events.add(self._listeners)
        self._server: asyncio.Server | None = None
        self._port: int | None = None

    # -- lifetime -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port; only once started."""
        if self._port is None:
            raise RuntimeError("RemotingServer is not started")
        return self._port

    @property
    def is_serving(self) -> bool:
        return self._server is not None and self._server.is_serving()

    @property
    def channels(self) -> list[ChannelContext]:
        """The open connections, oldest first."""
        return list(self._channels.values())

    async def bind(self) -> None:
        """Take the port without accepting connections yet (they are refused until
        ``start``): a server that must load state first learns of a busy port before it
        touches anything. Raises OSError when the address is in use."""
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_connection,
            self.host,
            self._requested_port,
            backlog=self._backlog,
            reuse_address=True,
            start_serving=False,
        )
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Bind (if not yet) and accept connections."""
        await self.bind()
        assert self._server is not None
        if not self._server.is_serving():
            await self._server.start_serving()
            tls = f" (tls.server.mode={self.tls.server_mode.value})" if self.tls else ""
            log.info("remoting server listening on %s:%d%s", self.host, self.port, tls)

    async def _stop(self) -> None:
        await self.stop()

    async def stop(self, grace_s: float = 1.0) -> None:
        """Stop accepting, give requests in progress up to ``grace_s`` to answer, close every
        connection (listeners hear on_close), and cancel what is still running."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        channels = list(self._channels.values())
        tasks = {task for channel in channels for task in channel.pending_tasks}
        if tasks:
            await asyncio.wait(tasks, timeout=grace_s)
        for channel in channels:
            channel.close()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        closing = [asyncio.ensure_future(channel.wait_closed()) for channel in channels]
        if closing:
            _, late = await asyncio.wait(closing, timeout=grace_s)
            for channel in channels:
                if not channel.is_closed:
                    channel.abort()  # a peer that does not read its last answers
            if late:
                await asyncio.wait(late, timeout=grace_s)
        await server.wait_closed()
        log.info("remoting server on port %s stopped", self._port)

    def _new_connection(self) -> asyncio.BaseProtocol:
        if self.tls is None:
            return self._new_channel()
        return HandshakeHandler(
            self.tls.server_mode, self._ssl, self._new_channel, self.channel_max_idle_s
        )

    def _new_channel(self) -> Channel:
        return Channel(
            self.table,
            self._events,
            max_idle_s=self.channel_max_idle_s,
            pause_reading_when_blocked=True,
            write_buffer_high_bytes=self._write_buffer_high_bytes,
            max_frame_bytes=self._max_frame_bytes,
        )


class _Tracker(ChannelEventListener):
    """Keeps the server's table of open connections; heard before any user listener."""

    def __init__(self, channels: dict[int, Channel]) -> None:
        self._channels = channels

    def on_connect(self, ctx: ChannelContext) -> None:
        if isinstance(ctx, Channel):
            self._channels[ctx.id] = ctx

    def on_close(self, ctx: ChannelContext) -> None:
        self._channels.pop(ctx.id, None)
