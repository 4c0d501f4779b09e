"""HAService: the master's side of replication (RocketMQ's HAService with its
AcceptSocketService): listens on haListenPort and keeps one HAConnection per slave."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading

from orbitmq.store.ha.group_transfer_service import GroupTransferService
from orbitmq.store.ha.ha_connection import HAConnection
from orbitmq.store.message_store import MessageStore
from orbitmq.store.put_wait import GroupCommitRequest

log = logging.getLogger(__name__)


class HAService:
    """Owns the HA listening socket, its accept thread, the slaves' connections and the
    sends waiting for a slave (``group_transfer``, whose ``push2_slave_max_offset`` is the
    highest offset any slave acknowledged).

    ``wakeup`` is called by the store after every put (``MessageStore.on_append``): it only
    sets each connection's flag. A SYNC_MASTER's store puts its sends' requests here
    (``is_slave_ok``, ``put_request``: the store's ``GroupTransfer``); each slave report
    answers every request it covers. All methods are safe from any thread."""

    def __init__(self, store: MessageStore, bind_address: str = "0.0.0.0") -> None:
        self._store = store
        self._bind_address = bind_address
        self.group_transfer = GroupTransferService()
        #: The commit log's end when this service started (after recovery): a slave
        #: claiming more than this and more than ``shipped_offset`` holds a tail this
        #: master lost, which may differ from what this master wrote there since.
        self.recovered_max_offset = 0
        #: The furthest any connection streamed to since start.
        self.shipped_offset = 0
        self._connections: tuple[HAConnection, ...] = ()
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    @property
    def port(self) -> int:
        """The bound port (haListenPort, or the one the system picked for 0)."""
        assert self._server is not None, "not started"
        return int(self._server.getsockname()[1])

    @property
    def connections(self) -> tuple[HAConnection, ...]:
        return self._connections

    def start(self) -> None:
        """Bind and listen (raises OSError when the port is taken), then accept."""
        self.recovered_max_offset = self._store.commit_log.max_offset
        server = socket.create_server(
            (self._bind_address, self._store.config.ha_listen_port), reuse_port=False
        )
        server.settimeout(1.0)  # the accept loop looks at the stop flag this often
        self._server = server
        self._thread = threading.Thread(target=self._accept_loop, name="HAAccept", daemon=True)
        self._thread.start()
        log.info("HA service listening on %s:%d", self._bind_address, self.port)

    def _accept_loop(self) -> None:
        server = self._server
        assert server is not None
        while not self._stopped.is_set():
            try:
                sock, peer = server.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if not self._stopped.is_set():
                    log.warning("HA accept failed: %s", exc)
                    self._stopped.wait(1.0)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            address = f"{peer[0]}:{peer[1]}"
            log.info("HA slave connected from %s", address)
            connection = HAConnection(
                self, sock, address, self._store.commit_log, self._store.config
            )
            with self._lock:
                self._connections = (*self._connections, connection)
            connection.start()

    def remove_connection(self, connection: HAConnection) -> None:
        with self._lock:
            self._connections = tuple(c for c in self._connections if c is not connection)

    def trusted_offset(self) -> int:
        """Below this offset a slave's log matches this master's: what the master had at
        start or has streamed since."""
        return max(self.recovered_max_offset, self.shipped_offset)

    def note_shipped(self, offset: int) -> None:
        self.shipped_offset = max(self.shipped_offset, offset)

    def wakeup(self) -> None:
        for connection in self._connections:
            connection.wakeup()

    @property
    def push2_slave_max_offset(self) -> int:
        """The highest offset any slave acknowledged."""
        return self.group_transfer.push2_slave_max_offset

    def notify_transfer_some(self, offset: int) -> None:
        """A slave holds everything below ``offset``."""
        self.group_transfer.notify_transfer_some(offset)

    def put_request(self, request: GroupCommitRequest) -> None:
        """A SYNC_MASTER's send waits for a slave to hold its message."""
        self.group_transfer.put_request(request)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and less than haSlaveFallbehindMax behind (RocketMQ's
        isSlaveOK, which SYNC_MASTER asks before waiting)."""
        config = self._store.config
        gap = master_put_where - self.push2_slave_max_offset
        return bool(self._connections) and gap < config.ha_slave_fallbehind_max

    def shutdown(self) -> None:
        self._stopped.set()
        if self._server is not None:
            # close() alone leaves a blocked accept() waiting out its timeout; shutdown()
            # wakes it at once (EINVAL on Linux), so a stop does not take a second.
            with contextlib.suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
        if self._thread is not None:
            self._thread.join(5.0)
        for connection in self._connections:
            connection.close("the master shuts down")
            connection.join(5.0)
