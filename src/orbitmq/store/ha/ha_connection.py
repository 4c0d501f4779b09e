"""HAConnection: the master's end of one slave's connection (RocketMQ's HAConnection with
its ReadSocketService and WriteSocketService)."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING

from orbitmq.store.commit_log import CommitLog
from orbitmq.store.ha.ha_codec import MASTER_READ_BUFFER_SIZE, ReportDecoder, encode_frame_header
from orbitmq.store.message_store_config import MessageStoreConfig

if TYPE_CHECKING:
    from orbitmq.store.ha.ha_service import HAService

log = logging.getLogger(__name__)

#: The writer waits for new data at most this long at a time (RocketMQ polls every 100 ms;
#: ours is woken by each put, so this only bounds how late it sees a close).
_WRITER_WAIT_S = 1.0
#: A backlog goes out in sends of about this many bytes of frames: one system call and one
#: wakeup of the slave per frame of 32 KiB capped catch-up near 140 MB/s.
_FRAMES_PER_SEND_BYTES = 1024 * 1024


class HAConnection:
    """Owns one accepted socket and its two threads: the reader takes the slave's reports
    (its acknowledged offset), the writer streams the commit log from the first report on.

    ``wakeup`` and ``close`` are safe from any thread; the rest is the threads' own."""

    def __init__(
        self,
        service: HAService,
        sock: socket.socket,
        address: str,
        commit_log: CommitLog,
        config: MessageStoreConfig,
    ) -> None:
        self._service = service
        self._sock = sock
        self.address = address
        self._commit_log = commit_log
        self._config = config
        #: Where the slave asked the stream to start (its first report); -1 before it.
        self.slave_request_offset = -1
        #: The slave's latest report: its commit log holds everything below it.
        self.slave_ack_offset = -1
        #: Where the next frame starts; -1 until the stream starts.
        self.next_transfer_from_where = -1
        #: The end of what is streamed or being streamed (set before a send, so that a
        #: report of its first frames, which may arrive before the send returns, counts).
        self._sending_end = -1
        #: The slave's own tail when it holds one this master lost: a report of exactly
        #: this offset may come from before the slave truncated, and proves nothing.
        self._lost_tail = -1
        self._bad_ack_reported = False
        self._requested = threading.Event()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._close_lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._read_loop, name=f"HAReadSocket-{address}", daemon=True),
            threading.Thread(target=self._write_loop, name=f"HAWriteSocket-{address}", daemon=True),
        ]

    def start(self) -> None:
        # One timeout for both directions: a slave that sends nothing, or reads nothing,
        # for haHousekeepingInterval is gone.
        self._sock.settimeout(self._config.ha_housekeeping_interval / 1000)
        for thread in self._threads:
            thread.start()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def wakeup(self) -> None:
        """New data in the commit log (called per put: a flag check when already set)."""
        if not self._wake.is_set():
            self._wake.set()

    def close(self, reason: str) -> None:
        with self._close_lock:
            if self._closed.is_set():
                return
            self._closed.set()
        log.info("HA connection from %s closed: %s", self.address, reason)
        # Gone from the service before the peer can see the close.
        self._service.remove_connection(self)
        self._wake.set()
        self._requested.set()
        with contextlib.suppress(OSError):  # the peer reset it first
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def join(self, timeout_s: float) -> None:
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout_s)

    # -- reports (ReadSocketService) -----------------------------------------------------

    def _read_loop(self) -> None:
        decoder = ReportDecoder()
        reason = "the slave closed it"
        try:
            while not self._closed.is_set():
                data = self._sock.recv(MASTER_READ_BUFFER_SIZE)
                if not data:
                    break
                offset = decoder.feed(data)
                if offset is not None and not self._on_report(offset):
                    reason = f"bad report {offset}"
                    break
        except TimeoutError:
            reason = f"no report for {self._config.ha_housekeeping_interval} ms"
        except OSError as exc:
            reason = f"read failed: {exc}"
        self.close(reason)

    def _on_report(self, offset: int) -> bool:
        max_offset = self._commit_log.max_offset
        if offset < 0:
            log.warning("HA slave %s reported offset %d: not an offset", self.address, offset)
            return False
        if self.slave_request_offset < 0:
            self.slave_request_offset = offset
            log.info("HA slave %s requests the commit log from %d", self.address, offset)
            self._requested.set()
            return True
        if offset > self._sending_end:
            # Not streamed (yet): the slave's own tail, before the stream starts or before
            # it truncates; only counted once the stream has passed it.
            if offset > max_offset and not self._bad_ack_reported:
                self._bad_ack_reported = True
                log.warning(
                    "HA slave %s reports offset %d, beyond this master's max offset %d",
                    self.address,
                    offset,
                    max_offset,
                )
            return True
        if self._lost_tail >= 0:
            if offset == self._lost_tail:
                return True
            self._lost_tail = -1  # another offset: the slave has truncated
        self.slave_ack_offset = offset
        self._service.notify_transfer_some(offset)
        return True

    # -- frames (WriteSocketService) -----------------------------------------------------

    def _start_offset(self) -> int:
        """A fresh slave (offset 0) gets everything this master keeps, from its first
        file (RocketMQ 4.9.8 starts at its last file). A slave beyond what this master
        can vouch for (it lost a tail the slave got) is sent the log from where the
        master's recovered log ended: the slave truncates to there."""
        requested = self.slave_request_offset
        if requested == 0:
            return self._commit_log.min_offset
        trusted = self._service.trusted_offset()
        if requested <= trusted:
            return requested
        start = min(self._service.recovered_max_offset, self._commit_log.max_offset)
        log.warning(
            "HA slave %s reports offset %d, beyond this master's log as recovered (%d) and "
            "as streamed since (%d): it holds a tail this master lost; streaming from %d, "
            "where it must truncate",
            self.address,
            requested,
            self._service.recovered_max_offset,
            self._service.shipped_offset,
            start,
        )
        return start

    def _write_loop(self) -> None:
        try:
            while not self._requested.is_set():
                self._requested.wait(_WRITER_WAIT_S)
            if self._closed.is_set():
                return
            start = self._start_offset()
            if start < self.slave_request_offset:
                self._lost_tail = self.slave_request_offset
            self.next_transfer_from_where = self._sending_end = start
            self._stream()
        except TimeoutError:
            self.close(f"the slave read nothing for {self._config.ha_housekeeping_interval} ms")
        except OSError as exc:
            self.close(f"write failed: {exc}")

    def _stream(self) -> None:
        commit_log = self._commit_log
        batch = self._config.ha_transfer_batch_size
        heartbeat_s = self._config.ha_send_heartbeat_interval / 1000
        sock = self._sock
        last_write = float("-inf")  # the first frame goes at once, even an empty one
        missing_reported = -1
        while not self._closed.is_set():
            self._wake.clear()
            offset = self.next_transfer_from_where
            data = commit_log.get_data(offset) if offset < commit_log.max_offset else None
            if data:
                # A frame never crosses a file: get_data ends at its file's written end.
                # Several frames go in one send: each still holds at most a batch.
                parts: list[bytes | memoryview] = []
                sent = 0
                while sent < len(data) and sent < _FRAMES_PER_SEND_BYTES:
                    chunk = data[sent : sent + batch]
                    parts += (encode_frame_header(offset + sent, len(chunk)), chunk)
                    sent += len(chunk)
                self._sending_end = offset + sent
                sock.sendall(b"".join(parts))
                self.next_transfer_from_where = offset + sent
                self._service.note_shipped(self.next_transfer_from_where)
                last_write = time.monotonic()
                continue
            if data is None and offset < commit_log.min_offset and missing_reported != offset:
                missing_reported = offset
                log.warning(
                    "HA slave %s needs offset %d, but this master's log starts at %d",
                    self.address,
                    offset,
                    commit_log.min_offset,
                )
            now = time.monotonic()
            if now - last_write >= heartbeat_s:
                sock.sendall(encode_frame_header(offset, 0))
                last_write = now
            self._wake.wait(min(_WRITER_WAIT_S, max(0.0, last_write + heartbeat_s - now)))
