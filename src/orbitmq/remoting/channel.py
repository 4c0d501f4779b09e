"""``Channel``: one remoting connection as an asyncio Protocol, for servers and clients alike.

Why a Protocol and not streams: as a ``BufferedProtocol`` the socket reads go straight into
the sans-IO ``FrameDecoder``'s buffer and each decoded command is dispatched in the same
callback, with no reader task per connection, no ``readexactly`` awaits and no second buffer
(StreamReader keeps its own; ``data_received`` would hand over a new bytes object per read,
to be copied again: 1.4-1.7 against 0.4 µs of CPU per KiB message in a socketpair test).
Writes go to the transport, whose flow-control callbacks (``pause_writing``) give us
back-pressure. With uvloop this is the fastest path asyncio offers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final, cast

from orbitmq.common.message import SocketAddress
from orbitmq.protocol import MAX_FRAME_BYTES, FrameDecoder, ProtocolError, RemotingCommand
from orbitmq.remoting.channel_context import ChannelEventListener
from orbitmq.remoting.errors import (
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from orbitmq.remoting.processor_table import ProcessorTable

log = logging.getLogger(__name__)

_ids = itertools.count(1)
_UNKNOWN: Final[SocketAddress] = ("0.0.0.0", 0)
#: Timers may fire a clock tick early; a connection this close to the limit is idle.
_IDLE_SLACK_S: Final = 0.001
#: How many abandoned requests a connection remembers, so that their late answers are
#: dropped quietly; the oldest is forgotten first (a peer may never answer some).
_ABANDONED_MEMORY: Final = 1024
#: Why a server may close a plain connection before answering anything.
PLAIN_CLOSED_HINT: Final = (
    " before answering anything: a server with tls.server.mode=enforcing closes plain"
    " connections (connect with TLS: tls.enable=true, --tls)"
)
#: Default transport write-buffer high-water mark; reading pauses above it (see
#: ``pause_writing``), so a peer that does not read its answers cannot grow our memory.
DEFAULT_WRITE_BUFFER_HIGH_BYTES: Final = 4 * 1024 * 1024


class Channel(asyncio.BufferedProtocol):
    """Owns one connection: its transport, its ``FrameDecoder``, the requests it sent that
    await a response (opaque -> future), the tasks processing requests it received, and its
    idle timer. It is the ``ChannelContext`` processors and listeners see.

    Requests it receives go to ``table`` (one task each, so answers go out when ready and
    possibly out of order); responses complete the matching ``invoke``. A response to a
    request whose caller was cancelled is dropped quietly; one matching no request at all is
    logged as a warning. A malformed frame
    closes this connection only. With ``max_idle_s`` set, a connection that neither reads
    nor writes for that long is closed (Netty's ALL_IDLE). With ``pause_reading_when_blocked``
    (servers), reading stops while the write buffer is above its high-water mark.

    Confined to the event loop that created it; not thread-safe.
    """

    def __init__(
        self,
        table: ProcessorTable,
        listener: ChannelEventListener,
        *,
        max_idle_s: float | None = None,
        pause_reading_when_blocked: bool = False,
        write_buffer_high_bytes: int = DEFAULT_WRITE_BUFFER_HIGH_BYTES,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self._id = next(_ids)
        self._table = table
        self._listener = listener
        self._max_idle_s = max_idle_s
        self._pause_reading_when_blocked = pause_reading_when_blocked
        self._write_buffer_high_bytes = write_buffer_high_bytes
        self._decoder = FrameDecoder(max_frame_bytes)
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._remote: SocketAddress = _UNKNOWN
        self._local: SocketAddress = _UNKNOWN
        self._remote_text = "UNKNOWN"
        self._attributes: dict[str, object] = {}
        self._responses: dict[int, asyncio.Future[RemotingCommand]] = {}
        #: Opaques of requests whose caller was cancelled while waiting (insertion-ordered).
        self._abandoned: dict[int, None] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: Frames (head, body) written during this turn of the loop, not yet handed to the
        #: transport (see ``write``).
        self._outgoing: list[bytes | bytearray | memoryview] = []
        self._last_activity = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._failed = False
        self._heard = False
        self._closed: asyncio.Future[None] = self._loop.create_future()

    def __repr__(self) -> str:
        return f"Channel(id={self._id}, remote={self._remote_text}, active={self.is_active})"

    # -- ChannelContext ---------------------------------------------------------------------

    @property
    def id(self) -> int:
        return self._id

    @property
    def remote_address(self) -> str:
        return self._remote_text

    @property
    def remote_socket_address(self) -> SocketAddress:
        return self._remote

    @property
    def local_socket_address(self) -> SocketAddress:
        return self._local

    @property
    def attributes(self) -> dict[str, object]:
        return self._attributes

    @property
    def is_active(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    @property
    def is_closed(self) -> bool:
        """The connection is gone (``connection_lost`` has run)."""
        return self._closed.done()

    @property
    def pending_tasks(self) -> frozenset[asyncio.Task[None]]:
        """Tasks still processing requests received on this connection."""
        return frozenset(self._tasks)

    @property
    def pending_responses(self) -> int:
        """Requests sent on this connection still awaiting their response."""
        return len(self._responses)

    def write(self, command: RemotingCommand) -> bool:
        transport = self._transport
        if transport is None or transport.is_closing():
            log.debug("dropping a write to closed %r: %r", self, command)
            return False
        # Encoded before anything is queued: an oversize frame raises ProtocolError and
        # leaves the stream intact. Head and body stay two buffers, so a pull's records are
        # not copied once more into a single frame.
        head = command.encode_head()
        outgoing = self._outgoing
        if not outgoing:
            # The frames written during this turn of the loop go out together, with one
            # writev: acks answered together cost one syscall, not one each.
            self._loop.call_soon(self._flush_outgoing)
        outgoing.append(head)
        if command.body:
            outgoing.append(command.body)
        self._last_activity = self._loop.time()
        return True

    def invoke_oneway(self, request: RemotingCommand) -> None:
        request.mark_oneway()
        if not self.write(request):
            raise RemotingSendRequestError(
                f"send a request command to channel <{self._remote_text}> failed: closed"
            )

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        if not self.is_active:
            raise RemotingSendRequestError(
                f"send a request command to channel <{self._remote_text}> failed: closed"
            )
        opaque = request.opaque
        if opaque in self._responses:
            raise RemotingSendRequestError(
                f"opaque {opaque} already awaits a response on <{self._remote_text}>",
                retriable=False,
                refresh_route=False,
            )
        loop = self._loop
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        self._responses[opaque] = future
        # A timer on the future, not asyncio.timeout(): that one asks for the running loop
        # twice (a getpid system call each in Python 3.11) and makes an object per request.
        timer = loop.call_later(timeout_s, self._expire, future, timeout_s)
        try:
            self.write(request)
            return await future
        except asyncio.CancelledError:
            # The caller gave the request up (a consumer shutting down cancels its held long
            # polls): the peer may still answer it, and that answer is expected, not news.
            self._abandon(opaque)
            raise
        finally:
            timer.cancel()
            if self._responses.get(opaque) is future:
                del self._responses[opaque]

    def _expire(self, future: asyncio.Future[RemotingCommand], timeout_s: float) -> None:
        if not future.done():
            future.set_exception(
                RemotingTimeoutError(
                    f"wait response on the channel <{self._remote_text}> timeout, "
                    f"{round(timeout_s * 1000)}(ms)"
                )
            )

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._flush_outgoing()  # what was written before close goes out before the FIN
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping unsent bytes (for a peer that stopped reading)."""
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        self._remote = _address(transport.get_extra_info("peername"))
        self._local = _address(transport.get_extra_info("sockname"))
        self._remote_text = f"{self._remote[0]}:{self._remote[1]}"
        transport.set_write_buffer_limits(high=self._write_buffer_high_bytes)
        self._last_activity = self._loop.time()
        if self._max_idle_s is not None:
            self._idle_timer = self._loop.call_later(self._max_idle_s, self._check_idle)
        log.info("channel %d active, remote %s", self._id, self._remote_text)
        self._listener.on_connect(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._last_activity = self._loop.time()
        self._heard = True
        try:
            commands = self._decoder.buffer_updated(nbytes)
            if commands:
                for command in commands:
                    self._received(command)
                # The decoder returns the good frames before a bad one and keeps the error
                # for its next call: ask for it now rather than wait for more bytes.
                self._decoder.buffer_updated(0)
        except ProtocolError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if exc is not None and not self._failed:
            self._failed = True
            log.warning("channel %d to %s failed: %s", self._id, self._remote_text, exc)
            self._listener.on_exception(self, exc)
        responses, self._responses = self._responses, {}
        reason = f"connection to {self._remote_text} closed"
        transport = self._transport
        if not self._heard and transport is not None and not transport.get_extra_info("ssl_object"):
            reason += PLAIN_CLOSED_HINT
        for future in responses.values():
            if not future.done():
                future.set_exception(RemotingConnectError(reason))
        log.info("channel %d inactive, remote %s", self._id, self._remote_text)
        self._closed.set_result(None)
        self._listener.on_close(self)

    def pause_writing(self) -> None:
        if self._pause_reading_when_blocked and self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._pause_reading_when_blocked and self._transport is not None:
            self._transport.resume_reading()

    # -- internals ----------------------------------------------------------------------------

    def _received(self, command: RemotingCommand) -> None:
        if command.is_response:
            future = self._responses.pop(command.opaque, None)
            if future is None or future.done():
                self._unmatched(command.opaque)
                return
            future.set_result(command)
            return
        self._table.dispatch(self, command, self._spawn)

    def _flush_outgoing(self) -> None:
        """Hand the frames queued by ``write`` to the transport, in order; dropped when the
        connection closed meanwhile (as bytes in the transport's buffer would be)."""
        outgoing = self._outgoing
        if not outgoing:
            return
        self._outgoing = []
        transport = self._transport
        if transport is None or transport.is_closing():
            log.debug("dropping %d buffers written to closed %r", len(outgoing), self)
            return
        transport.writelines(outgoing)

    def _abandon(self, opaque: int) -> None:
        self._abandoned[opaque] = None
        if len(self._abandoned) > _ABANDONED_MEMORY:
            del self._abandoned[next(iter(self._abandoned))]

    def _unmatched(self, opaque: int) -> None:
        """A response nobody waits for: quiet when its request was abandoned on purpose; a
        warning otherwise (it timed out, or the peer sent an opaque we never used)."""
        if opaque in self._abandoned:
            del self._abandoned[opaque]
            log.debug(
                "response opaque %d from %s answers a request given up before; dropped",
                opaque,
                self._remote_text,
            )
            return
        log.warning(
            "response opaque %d from %s matches no request (timed out?)",
            opaque,
            self._remote_text,
        )

    def _spawn(
        self, work: Coroutine[Any, Any, None], on_done: Callable[[], None]
    ) -> asyncio.Task[None]:
        task = self._loop.create_task(work)
        tasks = self._tasks
        tasks.add(task)

        def done(task: asyncio.Task[None]) -> None:
            # One callback for both: each done callback is a handle of its own on the loop.
            tasks.discard(task)
            on_done()

        task.add_done_callback(done)
        return task

    def _fail(self, error: ProtocolError) -> None:
        if self._failed:
            return
        self._failed = True
        log.warning("closing channel %d to %s: %s", self._id, self._remote_text, error)
        self._listener.on_exception(self, error)
        self.close()

    def _check_idle(self) -> None:
        self._idle_timer = None
        if not self.is_active or self._max_idle_s is None:
            return
        idle_s = self._loop.time() - self._last_activity
        if idle_s + _IDLE_SLACK_S >= self._max_idle_s:
            log.warning(
                "channel %d to %s idle for %.1f s, closing", self._id, self._remote_text, idle_s
            )
            self._listener.on_idle(self)
            self.close()
        else:
            self._idle_timer = self._loop.call_later(self._max_idle_s - idle_s, self._check_idle)


def _address(value: Any) -> SocketAddress:
    """(host, port) from a transport's peername or sockname (IPv6 ones have 4 fields)."""
    if isinstance(value, tuple) and len(value) >= 2:
        return (str(value[0]), int(value[1]))
    return _UNKNOWN
