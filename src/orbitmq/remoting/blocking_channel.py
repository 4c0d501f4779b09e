"""BlockingChannel: one connection used from one thread with blocking socket calls, for
readers that move a lot of bytes and have no event loop (a Spark worker's reads).

Through the event loop a large answer crosses a thread (the loop's) and is copied out of
the frame buffer; here it is read straight into a buffer the channel keeps, and its body is
handed out as a view of that buffer. Several requests may be in flight; answers come back in
the order the server finishes them and are matched by opaque.
"""

from __future__ import annotations

import logging
import socket
import ssl as ssl_module
import struct
from typing import Final

from orbitmq.protocol import ProtocolError, RemotingCommand, check_frame_length, decode_header
from orbitmq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    connect_failure_cause,
)

log = logging.getLogger(__name__)

_LENGTH: Final = struct.Struct(">i")
#: The receive buffer starts at this size and grows to the largest frame seen.
_INITIAL_BUFFER_BYTES: Final = 1024 * 1024


class BlockingChannel:
    """Owns one socket to ``addr``, its receive buffer and the opaques of the requests sent
    and not yet answered. Not thread-safe: one thread at a time. Any failure closes it (a
    stream cut mid-frame cannot be resumed); a closed channel refuses every call."""

    def __init__(
        self, addr: str, connect_timeout_s: float, ssl: ssl_module.SSLContext | None = None
    ) -> None:
        """``ssl``: connect with TLS (the handshake within ``connect_timeout_s`` too)."""
        host, _, port = addr.rpartition(":")
        self.addr = addr
        try:
            self._socket = socket.create_connection((host, int(port)), connect_timeout_s)
        except OSError as exc:
            cause = connect_failure_cause(exc, connect_timeout_s)
            raise RemotingConnectError(f"connect to {addr} failed: {cause}") from exc
        except ValueError as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc}") from exc
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl is not None:
            try:
                self._socket = ssl.wrap_socket(self._socket, server_hostname=host)
            except OSError as exc:
                self._socket.close()
                raise RemotingConnectError(f"connect to {addr} failed: TLS: {exc}") from exc
        self._buffer = bytearray(_INITIAL_BUFFER_BYTES)
        self._waiting: set[int] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def in_flight(self) -> int:
        """Requests sent whose answers have not been received."""
        return len(self._waiting)

    def send(self, request: RemotingCommand, timeout_s: float) -> None:
        """Write ``request``; its answer is taken with ``receive``."""
        self._check_open()
        try:
            self._socket.settimeout(timeout_s)
            self._socket.sendall(request.encode())
        except OSError as exc:
            self.close()
            raise RemotingSendRequestError(
                f"send a request command to channel <{self.addr}> failed: {exc}"
            ) from exc
        self._waiting.add(request.opaque)

    def receive(self, timeout_s: float) -> tuple[RemotingCommand, memoryview]:
        """The next answer to a request sent here, and its body as a view of the channel's
        buffer: valid until the next ``receive`` or ``close``, so copy what must outlive it.
        Requests the server sends (none is expected: this connection never registers as a
        client) are skipped."""
        self._check_open()
        if not self._waiting:
            raise RemotingError(f"channel <{self.addr}> has no request awaiting an answer")
        try:
            self._socket.settimeout(timeout_s)
            while True:
                length = self._frame_length()
                frame = self._read_frame(length)
                command, body_start = decode_header(frame)
                if not command.is_response:
                    log.info("skipping request code %d from %s", command.code, self.addr)
                    continue
                if command.opaque not in self._waiting:
                    raise ProtocolError(f"answer opaque {command.opaque} matches no request")
                self._waiting.discard(command.opaque)
                return command, frame[body_start:]
        except TimeoutError as exc:
            self.close()
            raise RemotingTimeoutError(
                f"wait response on the channel <{self.addr}> timeout, {round(timeout_s * 1000)}(ms)"
            ) from exc
        except ProtocolError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise RemotingConnectError(f"connection to {self.addr} failed: {exc}") from exc

    def peer_closed(self) -> bool:
        """Whether the connection is no longer usable for a new request, checked without
        blocking: the peer closed it (a broker restarted while the channel sat idle in a
        pool), or bytes arrived that no request asked for."""
        if self._closed:
            return True
        # Non-blocking for the peek (a socket with a timeout would wait for data first);
        # send and receive set their own timeouts again.
        self._socket.setblocking(False)
        try:
            if isinstance(self._socket, ssl_module.SSLSocket):
                # TLS cannot peek; a byte read here was unasked for, and closes it anyway.
                # Records that carry no data (session tickets) are taken silently.
                self._socket.recv(1)
            else:
                self._socket.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, ssl_module.SSLWantReadError):
            return False  # nothing to read: still open
        except OSError:
            return True
        return True

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._waiting.clear()
            self._socket.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RemotingConnectError(f"channel <{self.addr}> is closed")

    def _frame_length(self) -> int:
        head = self._read_into(0, 4)
        length: int = _LENGTH.unpack_from(head)[0]
        check_frame_length(length)
        return length

    def _read_frame(self, length: int) -> memoryview:
        if length > len(self._buffer):
            self._buffer = bytearray(length)
        return self._read_into(0, length)

    def _read_into(self, start: int, size: int) -> memoryview:
        view = memoryview(self._buffer)[start : start + size]
        got = 0
        while got < size:
            n = self._socket.recv_into(view[got:])
            if n == 0:
                raise ConnectionResetError(f"{self.addr} closed the connection")
            got += n
        return view
