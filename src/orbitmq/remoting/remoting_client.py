"""``RemotingClient``: requests to remoting servers over one connection per address."""

from __future__ import annotations

import asyncio
import logging
import ssl as ssl_module
from typing import Final

from orbitmq.common.message import SocketAddress
from orbitmq.protocol import MAX_FRAME_BYTES, RemotingCommand
from orbitmq.remoting.channel import Channel
from orbitmq.remoting.channel_context import ChannelContext, ChannelEventListener
from orbitmq.remoting.channel_event_listeners import ChannelEventListeners
from orbitmq.remoting.errors import (
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    connect_failure_cause,
)
from orbitmq.remoting.processor_registry import ProcessorRegistry
from orbitmq.remoting.processor_table import ProcessorTable
from orbitmq.remoting.rpc_hook import RPCHook

log = logging.getLogger(__name__)

#: RocketMQ's connectTimeoutMillis (3000) and clientChannelMaxIdleTimeSeconds (120).
DEFAULT_CONNECT_TIMEOUT_S: Final = 3.0
DEFAULT_CHANNEL_MAX_IDLE_S: Final = 120.0


def parse_address(addr: str) -> SocketAddress:
    """``host:port`` (RocketMQ's form, split at the last colon) or ``[v6]:port``."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise RemotingConnectError(
            f"address {addr!r} is not host:port with a port in 1..65535",
            retriable=False,
            refresh_route=False,
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host, int(port))


class RemotingClient(ProcessorRegistry):
    """Owns one connection per server address (RocketMQ's ``NettyRemotingClient``
    channelTables), made on first use and replaced after it closes, and its own
    ``ProcessorTable`` for requests servers send over those connections
    (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...).

    ``invoke`` matches the response by opaque (a future per request on the connection):
    it raises RemotingConnectError when no connection can be made or it is lost while
    waiting, RemotingSendRequestError when the write fails (the connection is closed), and
    RemotingTimeoutError when no answer comes in time (the connection is closed too when
    ``close_socket_if_timeout``, RocketMQ's clientCloseSocketIfTimeout, default true).

    ``rpc_hook`` runs on every request before it is written (RocketMQ's registerRPCHook:
    ``AclClientRPCHook`` signs it).

    Safe to share between tasks of one event loop; not thread-safe.
    """

    def __init__(
        self,
        *,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        channel_max_idle_s: float | None = DEFAULT_CHANNEL_MAX_IDLE_S,
        close_socket_if_timeout: bool = True,
        ssl: ssl_module.SSLContext | None = None,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        table: ProcessorTable | None = None,
        rpc_hook: RPCHook | None = None,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.rpc_hook = rpc_hook
        self.channel_max_idle_s = channel_max_idle_s
        self.close_socket_if_timeout = close_socket_if_timeout
        self._ssl = ssl
        self._max_frame_bytes = max_frame_bytes
        super().__init__(table)
        self._events = ChannelEventListeners()
        self._events.add(_Tracker(self))
        self._events.add(self._listeners)
        self._channels: dict[str, Channel] = {}
        self._address_of: dict[int, str] = {}
        self._connecting: dict[str, asyncio.Task[Channel]] = {}
        self._closed = False

    # -- requests -----------------------------------------------------------------------------

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        """Send ``request`` to ``addr`` and return its response. ``timeout_s`` covers
        connecting as well (RocketMQ subtracts the connect time too)."""
        if self.rpc_hook is not None:
            self.rpc_hook.do_before_request(addr, request)
        channel = self._channels.get(addr)
        if channel is not None and channel.is_active and not self._closed:
            # Connected (almost every call): no connect deadline to keep.
            return await self._invoke_on(channel, addr, request, timeout_s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            async with asyncio.timeout_at(deadline):
                channel = await self._get_channel(addr)
        except TimeoutError:
            # Still connecting when the request's time ran out: a connect failure, as in
            # RocketMQ (RemotingConnectException), so callers look elsewhere.
            raise RemotingConnectError(
                f"connect to {addr} failed: timed out after {round(timeout_s * 1000)} ms"
            ) from None
        return await self._invoke_on(channel, addr, request, deadline - loop.time())

    async def _invoke_on(
        self, channel: Channel, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        try:
            return await channel.invoke(request, timeout_s)
        except RemotingSendRequestError:
            log.warning("invoke: send request failed, closing the channel [%s]", addr)
            channel.close()
            raise
        except RemotingTimeoutError:
            if self.close_socket_if_timeout:
                log.warning(
                    "invoke: no response in %.3f s, closing the channel [%s]", timeout_s, addr
                )
                channel.close()
            raise

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """Send ``request`` marked oneway; returns once it is written (no answer comes)."""
        if self.rpc_hook is not None:
            self.rpc_hook.do_before_request(addr, request)
        channel = await self.get_channel(addr)
        try:
            channel.invoke_oneway(request)
        except RemotingSendRequestError:
            channel.close()
            raise

    # -- connections --------------------------------------------------------------------------

    async def get_channel(self, addr: str) -> ChannelContext:
        """The open connection to ``addr``, connecting first when there is none. Concurrent
        callers share one connection attempt."""
        return await self._get_channel(addr)

    async def _get_channel(self, addr: str) -> Channel:
        if self._closed:
            raise RemotingConnectError(f"connect to {addr} failed: the client is closed")
        channel = self._channels.get(addr)
        if channel is not None and channel.is_active:
            return channel
        attempt = self._connecting.get(addr)
        if attempt is None:
            attempt = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = attempt
            attempt.add_done_callback(lambda done: self._connect_done(addr, done))
        # Shielded: one caller giving up (its timeout) must not cancel the attempt others
        # wait on.
        return await asyncio.shield(attempt)

    async def _connect(self, addr: str) -> Channel:
        host, port = parse_address(addr)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _, channel = await loop.create_connection(
                    self._new_channel, host, port, ssl=self._ssl
                )
        except (OSError, TimeoutError) as exc:
            cause = connect_failure_cause(exc, self.connect_timeout_s)
            raise RemotingConnectError(f"connect to {addr} failed: {cause}") from exc
        if self._closed:
            channel.close()
            raise RemotingConnectError(f"connect to {addr} failed: the client is closed")
        self._channels[addr] = channel
        self._address_of[channel.id] = addr
        log.info("connected to %s (channel %d)", addr, channel.id)
        return channel

    def _connect_done(self, addr: str, attempt: asyncio.Task[Channel]) -> None:
        if self._connecting.get(addr) is attempt:
            del self._connecting[addr]
        if not attempt.cancelled():
            attempt.exception()  # retrieved: callers may all have given up

    def close_channel(self, addr: str) -> None:
        """Close the connection to ``addr`` if there is one; the next request reconnects."""
        channel = self._channels.get(addr)
        if channel is not None:
            channel.close()

    @property
    def addresses(self) -> list[str]:
        """Addresses with an open connection."""
        return [addr for addr, channel in self._channels.items() if channel.is_active]

    async def close(self, grace_s: float = 1.0) -> None:
        """Close every connection; requests still waiting fail with RemotingConnectError.
        Further requests fail too."""
        self._closed = True
        attempts = list(self._connecting.values())
        for attempt in attempts:
            attempt.cancel()
        if attempts:
            await asyncio.gather(*attempts, return_exceptions=True)
        channels = list(self._channels.values())
        for channel in channels:
            channel.close()
        if channels:
            closing = [asyncio.ensure_future(channel.wait_closed()) for channel in channels]
            _, late = await asyncio.wait(closing, timeout=grace_s)
            for channel in channels:
                if not channel.is_closed:
                    channel.abort()
            if late:
                await asyncio.wait(late, timeout=grace_s)

    def _new_channel(self) -> Channel:
        return Channel(
            self.table,
            self._events,
            max_idle_s=self.channel_max_idle_s,
            max_frame_bytes=self._max_frame_bytes,
        )


class _Tracker(ChannelEventListener):
    """Forgets a connection once it closes, so the next request to its address reconnects."""

    def __init__(self, client: RemotingClient) -> None:
        self._client = client

    def on_close(self, ctx: ChannelContext) -> None:
        client = self._client
        addr = client._address_of.pop(ctx.id, None)
        if addr is not None and client._channels.get(addr) is ctx:
            del client._channels[addr]
