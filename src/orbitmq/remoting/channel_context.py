"""The roles a connection plays for the code above the transport: ``ChannelContext`` (what a
processor gets with each request) and ``ChannelEventListener`` (who hears of connects, closes,
errors and idle timeouts: RocketMQ's ``ChannelEventListener``)."""

from __future__ import annotations

from typing import Protocol

from orbitmq.common.message import SocketAddress
from orbitmq.protocol import RemotingCommand


class ChannelContext(Protocol):
    """One connection, seen from a processor or a listener.

    Use it only from the event loop that owns the connection. ``id`` is unique within the
    process and stable for the connection's life, so registries (clients, consumers,
    producers) may key on it; ``attributes`` is free space for them.
    """

    @property
    def id(self) -> int: ...

    @property
    def remote_address(self) -> str:
        """``ip:port`` of the peer, as RocketMQ prints it (``parseChannelRemoteAddr``)."""
        ...

    @property
    def remote_socket_address(self) -> SocketAddress: ...

    @property
    def local_socket_address(self) -> SocketAddress: ...

    @property
    def attributes(self) -> dict[str, object]: ...

    @property
    def is_active(self) -> bool:
        """Open and not closing: a write now may still reach the peer."""
        ...

    def write(self, command: RemotingCommand) -> bool:
        """Queue ``command``'s frame for sending (RocketMQ's ``writeAndFlush``). A processor
        that answered None uses this to answer later. False when the connection is closed:
        the frame is dropped, as Netty drops writes to a closed channel."""
        ...

    def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send ``request`` marked oneway; no answer is expected. Raises
        RemotingSendRequestError when the connection is closed."""
        ...

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send ``request`` and wait for the response with its opaque on this connection.
        Raises RemotingTimeoutError, RemotingSendRequestError or (the connection was lost
        while waiting) RemotingConnectError."""
        ...

    def close(self) -> None:
        """Close after flushing what was written; listeners hear ``on_close``."""
        ...


class ChannelEventListener(Protocol):
    """Hears what happens to connections (RocketMQ's ``ChannelEventListener``): registries
    clear a connection's registrations on close. Called on the event loop, one event at a
    time and in order (connect, then idle or exception if any, then close); must not block.
    An exception raised here is logged and does not affect the connection or other
    listeners. Subclass to inherit the empty defaults."""

    def on_connect(self, ctx: ChannelContext) -> None:
        return None

    def on_close(self, ctx: ChannelContext) -> None:
        return None

    def on_exception(self, ctx: ChannelContext, error: BaseException) -> None:
        """A malformed frame or a socket error; the connection is being closed."""
        return None

    def on_idle(self, ctx: ChannelContext) -> None:
        """Nothing read or written for the idle time; the connection is being closed."""
        return None
