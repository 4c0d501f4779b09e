"""HAClient: a slave's connection to its master's HA port (RocketMQ's HAService.HAClient)."""

from __future__ import annotations

import contextlib
import logging
import socket
import time

from orbitmq.common.service import Service
from orbitmq.store.ha.ha_codec import (
    SLAVE_READ_BUFFER_SIZE,
    Frame,
    FrameDecoder,
    FrameError,
    encode_report,
)
from orbitmq.store.ha.slave_log import append_to_commit_log, truncate_commit_log
from orbitmq.store.message_store import MessageStore

log = logging.getLogger(__name__)

#: RocketMQ's HAClient waits 5 s before connecting again after a failure or a close.
RECONNECT_INTERVAL_S = 5.0
_CONNECT_TIMEOUT_S = 3.0


class _ConnectionEndError(Exception):
    """Why the current connection ends (logged; the client connects again)."""


class HAClient(Service):
    """Owns the slave's HA socket: reports the store's max offset, appends the master's
    frames at their offsets, reconnects from its own max offset after any close.

    One thread (the service's); ``update_master_address`` and ``shutdown`` are safe from any
    thread."""

    def __init__(
        self,
        store: MessageStore,
        master_address: str = "",
        *,
        reconnect_interval_s: float = RECONNECT_INTERVAL_S,
    ) -> None:
        super().__init__(clock=store.clock)
        self._store = store
        self._config = store.config
        self._master_address = master_address or store.config.ha_master_address
        self._reconnect_interval_s = reconnect_interval_s
        self._sock: socket.socket | None = None
        #: The offset last reported to the master.
        self.current_reported_offset = 0
        #: Connections made so far (for tests and tools).
        self.connections_made = 0

    @property
    def master_address(self) -> str:
        return self._master_address

    def update_master_address(self, address: str) -> None:
        """The master's HA address ("host:port"), e.g. from the name server's answer to
        REGISTER_BROKER; a change closes the current connection. haMasterAddress, when set,
        wins over what the name server says."""
        if self._config.ha_master_address or not address or address == self._master_address:
            return
        log.info("HA master address: %s (was %r)", address, self._master_address)
        self._master_address = address
        self._close_socket()
        self.wakeup()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self._stopped.set()
        self._close_socket()
        super().shutdown(timeout_s)

    def _close_socket(self) -> None:
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed by the peer
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def run(self) -> None:
        while not self.is_stopped():
            address = self._master_address
            if address:
                try:
                    self._serve(address)
                except (_ConnectionEndError, FrameError, OSError) as exc:
                    if not self.is_stopped():
                        log.warning("HA connection to master %s ended: %s", address, exc)
            if not self.is_stopped():
                self.wait_for_running(self._reconnect_interval_s)

    def _serve(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S)
        self._sock = sock
        self.connections_made += 1
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            log.info("HA connected to master %s", address)
            self._exchange(sock, address)
        finally:
            self._sock = None
            sock.close()

    def _exchange(self, sock: socket.socket, address: str) -> None:
        heartbeat_s = self._config.ha_send_heartbeat_interval / 1000
        housekeeping_s = self._config.ha_housekeeping_interval / 1000
        commit_log = self._store.commit_log
        decoder = FrameDecoder()
        # Reported at once (4.9.8 waits haSendHeartbeatInterval first): catch-up starts now.
        last_write = self._report(sock, commit_log.max_offset)
        last_read = time.monotonic()
        sock.settimeout(min(heartbeat_s, 1.0))
        while not self.is_stopped() and address == self._master_address:
            try:
                data = sock.recv(SLAVE_READ_BUFFER_SIZE)
            except TimeoutError:
                data = None
            now = time.monotonic()
            if data == b"":
                raise _ConnectionEndError("the master closed it")
            if data:
                last_read = now
                self._apply_all(decoder.feed(data))
                if commit_log.max_offset > self.current_reported_offset:
                    last_write = self._report(sock, commit_log.max_offset)
            if now - last_write >= heartbeat_s:
                last_write = self._report(sock, commit_log.max_offset)
            if now - last_read > housekeeping_s:
                raise _ConnectionEndError(
                    f"nothing from the master for {housekeeping_s * 1000:.0f} ms"
                )

    def _report(self, sock: socket.socket, offset: int) -> float:
        sock.sendall(encode_report(offset))
        self.current_reported_offset = offset
        return time.monotonic()

    def _apply_all(self, frames: list[Frame]) -> None:
        """Append the frames of one read: contiguous bodies in one write."""
        bodies: list[bytes] = []
        start = end = -1
        for frame in frames:
            if bodies and frame.offset == end:
                bodies.append(frame.body)
                end += len(frame.body)
                continue
            if bodies:
                append_to_commit_log(self._store, start, b"".join(bodies))
                bodies = []
            self._check_offset(frame.offset)
            if frame.body:
                bodies.append(frame.body)
                start, end = frame.offset, frame.offset + len(frame.body)
        if bodies:
            append_to_commit_log(self._store, start, b"".join(bodies))

    def _check_offset(self, offset: int) -> None:
        """A frame must start at this slave's max offset (any, for an empty log)."""
        own = self._store.commit_log.max_offset
        if own in (0, offset):
            return
        if offset > own:
            raise _ConnectionEndError(
                f"frame at offset {offset} is not this slave's max offset {own}"
            )
        # Our master streams from its own end to a slave that is ahead of it.
        removed = truncate_commit_log(self._store, offset)
        log.error(
            "this slave's commit log (max offset %d) is ahead of its master's (%d): "
            "truncated to %d, %d bytes of data removed",
            own,
            offset,
            offset,
            removed,
        )
