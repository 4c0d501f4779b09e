"""TLS on a remoting server's port, told apart from plain RocketMQ remoting by the first byte
(RocketMQ's ``HandshakeHandler``): a TLS record starts with 0x16 (handshake), a RocketMQ
frame with the high byte of its length, which is 0 for any frame under 16 MiB.

asyncio's own TLS (``start_tls``) cannot be handed bytes already read from the socket, so
a connection found to speak TLS gets ``TlsServerProtocol``: OpenSSL over memory buffers
(``ssl.SSLObject``), the same design as asyncio's own TLS layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable, Iterable
from typing import Any, Final, cast

from orbitmq.remoting.tls_system_config import TlsMode

log = logging.getLogger(__name__)

#: The first byte of a TLS handshake record (a ClientHello).
TLS_HANDSHAKE_BYTE: Final = 0x16
#: Netty's SslHandler handshake timeout: a peer that starts TLS and stalls is dropped.
HANDSHAKE_TIMEOUT_S: Final = 10.0
_READ_CHUNK_BYTES: Final = 256 * 1024


def feed(protocol: asyncio.BaseProtocol, data: bytes | bytearray | memoryview) -> None:
    """Hand ``data`` to ``protocol`` as if its transport had read it (either kind)."""
    if isinstance(protocol, asyncio.BufferedProtocol):
        view = memoryview(data)
        while view:
            buffer = memoryview(protocol.get_buffer(len(view)))
            n = min(len(buffer), len(view))
            buffer[:n] = view[:n]
            protocol.buffer_updated(n)
            view = view[n:]
    else:
        cast(asyncio.Protocol, protocol).data_received(bytes(data))


def _peer_text(peername: Any) -> str:
    """``host:port`` of a peername (IPv6 ones have 4 fields)."""
    if isinstance(peername, tuple) and len(peername) >= 2:
        return f"{peername[0]}:{peername[1]}"
    return str(peername)


class HandshakeHandler(asyncio.Protocol):
    """Owns a new connection until its first bytes arrive, then hands it to the
    connection's protocol, plain or through TLS, or closes it as ``mode`` says (RocketMQ's
    log lines). ``context`` None: TLS connections are refused. A connection that sends
    nothing for ``max_idle_s`` is closed, as an idle channel is. One per connection; used on
    the loop's thread only."""

    def __init__(
        self,
        mode: TlsMode,
        context: ssl.SSLContext | None,
        new_protocol: Callable[[], asyncio.BaseProtocol],
        max_idle_s: float | None = None,
    ) -> None:
        self._mode = mode
        self._context = context
        self._new_protocol = new_protocol
        self._max_idle_s = max_idle_s
        self._transport: asyncio.Transport | None = None
        self._idle_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        if self._max_idle_s is not None:
            self._idle_timer = asyncio.get_running_loop().call_later(
                self._max_idle_s, self._transport.abort
            )

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        assert transport is not None
        self._cancel_idle_timer()
        peer = _peer_text(transport.get_extra_info("peername"))
        if data[0] != TLS_HANDSHAKE_BYTE:
            if self._mode is TlsMode.ENFORCING:
                log.warning(
                    "refused a plain connection from %s: clients intend to establish an "
                    "insecure connection while this server is running in SSL enforcing mode "
                    "(tls.server.mode=enforcing)",
                    peer,
                )
                transport.abort()
                return
            self._hand_over(transport, self._new_protocol(), data)
            return
        if self._mode is TlsMode.DISABLED or self._context is None:
            why = (
                "this server is running in SSL disabled mode (tls.server.mode=disabled)"
                if self._mode is TlsMode.DISABLED
                else "no certificate is configured (tls.server.certPath, tls.server.keyPath)"
            )
            log.warning("refused a TLS connection from %s: %s", peer, why)
            transport.abort()
            return
        tls = TlsServerProtocol(self._context, self._new_protocol(), peer)
        self._hand_over(transport, tls, data)

    @staticmethod
    def _hand_over(
        transport: asyncio.Transport, protocol: asyncio.BaseProtocol, data: bytes
    ) -> None:
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if not transport.is_closing():
            feed(protocol, data)

    def eof_received(self) -> bool | None:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_idle_timer()
        self._transport = None

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None


class TlsServerProtocol(asyncio.Protocol):
    """Owns the server side of one TLS session over a plain transport: the handshake (under
    ``HANDSHAKE_TIMEOUT_S``), then decrypts into ``app`` and encrypts what ``app`` writes
    through a ``TlsTransport``. ``app`` hears ``connection_made`` once the handshake is done.
    Used on the loop's thread only."""

    def __init__(self, context: ssl.SSLContext, app: asyncio.BaseProtocol, peer: str) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._app = app
        self._peer = peer
        self._raw: asyncio.Transport | None = None
        self._app_transport: TlsTransport | None = None
        self._timeout: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._raw = cast(asyncio.Transport, transport)
        self._timeout = asyncio.get_running_loop().call_later(
            HANDSHAKE_TIMEOUT_S, self._handshake_timed_out
        )

    def data_received(self, data: bytes) -> None:
        self._incoming.write(data)
        if self._app_transport is None and not self._handshake():
            return
        try:
            open_ = self._read_app_data()
        except ssl.SSLError as exc:
            log.warning("TLS connection from %s failed: %s", self._peer, exc)
            self.raw.abort()
            return
        if not open_:
            # The peer's close_notify (OpenSSL reads it as 0 bytes): ours answers it.
            self.close_notify()
            self.raw.close()

    def _handshake(self) -> bool:
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        except ssl.SSLError as exc:
            self._flush()  # the alert tells the client why
            log.warning("TLS handshake with %s failed: %s", self._peer, exc)
            self.raw.abort()
            return False
        self._flush()
        if self._timeout is not None:
            self._timeout.cancel()
        self._app_transport = TlsTransport(self)
        self._app.connection_made(self._app_transport)
        return True

    def _read_app_data(self) -> bool:
        """Decrypt what has arrived into the application; False once the peer closed."""
        app, transport = self._app, self._app_transport
        n = 0
        while transport is not None and not transport.is_closing():
            try:
                if isinstance(app, asyncio.BufferedProtocol):
                    buffer = memoryview(app.get_buffer(_READ_CHUNK_BYTES))
                    n = self._ssl.read(len(buffer), buffer)  # type: ignore[assignment]
                    if n:
                        app.buffer_updated(n)
                else:
                    chunk = self._ssl.read(_READ_CHUNK_BYTES)
                    n = len(chunk)
                    if n:
                        cast(asyncio.Protocol, app).data_received(chunk)
            except ssl.SSLWantReadError:
                break
            if not n:
                return False
        self._flush()  # session tickets and key updates write too
        return True

    def _handshake_timed_out(self) -> None:
        log.warning("TLS handshake with %s timed out after %.0f s", self._peer, HANDSHAKE_TIMEOUT_S)
        self.raw.abort()

    @property
    def raw(self) -> asyncio.Transport:
        assert self._raw is not None
        return self._raw

    @property
    def ssl_object(self) -> ssl.SSLObject:
        return self._ssl

    def write(self, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
        """Encrypt ``chunks`` and write them in one go."""
        for chunk in chunks:
            if chunk:
                self._ssl.write(chunk)
        self._flush()

    def close_notify(self) -> None:
        """Send TLS's close_notify (the peer's answer is not waited for)."""
        # SSLWantReadError: ours is written, the peer's is still to come.
        with contextlib.suppress(ssl.SSLError):
            self._ssl.unwrap()
        self._flush()

    def _flush(self) -> None:
        if self._outgoing.pending and self._raw is not None and not self._raw.is_closing():
            self._raw.write(self._outgoing.read())

    def eof_received(self) -> bool | None:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timeout is not None:
            self._timeout.cancel()
        if self._app_transport is not None:
            self._app_transport.closed = True
            self._app.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._app_transport is not None:
            self._app.pause_writing()

    def resume_writing(self) -> None:
        if self._app_transport is not None:
            self._app.resume_writing()


class TlsTransport(asyncio.Transport):
    """The application's side of a ``TlsServerProtocol``: writes are encrypted, flow control
    and reading pauses are the socket's. Used on the loop's thread only."""

    def __init__(self, tls: TlsServerProtocol) -> None:
        super().__init__()
        self._tls = tls
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._tls.ssl_object
        if name == "peercert":
            return self._tls.ssl_object.getpeercert()
        if name == "cipher":
            return self._tls.ssl_object.cipher()
        return self._tls.raw.get_extra_info(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._tls.write((data,))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self._tls.write(list_of_data)

    def can_write_eof(self) -> bool:
        return False

    def is_closing(self) -> bool:
        return self.closed or self._tls.raw.is_closing()

    def close(self) -> None:
        if not self.is_closing():
            self._tls.close_notify()
            self._tls.raw.close()

    def abort(self) -> None:
        self._tls.raw.abort()

    def pause_reading(self) -> None:
        self._tls.raw.pause_reading()

    def resume_reading(self) -> None:
        self._tls.raw.resume_reading()

    def is_reading(self) -> bool:
        return self._tls.raw.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._tls.raw.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._tls.raw.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._tls.raw.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        raise NotImplementedError("a TLS connection's protocol is fixed")

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._tls._app
