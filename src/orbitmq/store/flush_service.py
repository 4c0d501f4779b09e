"""Background flushing of the commit log (R15) and of consume queues plus checkpoint.

ASYNC_FLUSH: ``FlushRealTimeService`` syncs every ``flushIntervalCommitLog`` ms once at least
``flushCommitLogLeastPages`` pages are dirty (all of them every thorough interval).
SYNC_FLUSH: ``GroupCommitService`` takes flush requests; every request that arrived while a
sync was running is answered by the next single sync (group commit). Syncs run on these
threads, never on the caller's event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from orbitmq.common.clock import Clock
from orbitmq.common.service import Service
from orbitmq.store.mapped_file import OS_PAGE_SIZE
from orbitmq.store.mapped_file_queue import MappedFileQueue
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.put_message_result import PutMessageStatus
from orbitmq.store.put_wait import GroupCommitRequest, answer_requests
from orbitmq.store.store_checkpoint import StoreCheckpoint

log = logging.getLogger(__name__)

_RETRY_TIMES_OVER = 10


def _flush_with_timestamp(queue: MappedFileQueue, least_pages: int) -> int:
    """Flush ``queue``; the store time of the newest message now known to be on disk (0 if
    unknown). The time is read before syncing, so every message up to it was written."""
    last = queue.last()
    timestamp = last.store_timestamp if last is not None else 0
    written = queue.max_offset
    queue.flush(least_pages)
    return timestamp if queue.flushed_where >= written else 0


class _ThoroughFlushSchedule:
    """When a flush service's next flush must be thorough (``least_pages`` 0: every dirty
    page synced), as RocketMQ's ``flush*ThoroughInterval``: once an interval has passed on
    ``clock``'s monotonic reading since the last one. Used by its service's thread only."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_thorough = clock.monotonic()

    def least_pages(self, least_pages: int, thorough_interval_ms: int) -> int:
        """``least_pages``, or 0 when a thorough flush is due (which starts a new interval)."""
        now = self._clock.monotonic()
        if now - self._last_thorough >= thorough_interval_ms / 1000:
            self._last_thorough = now
            return 0
        return least_pages


class FlushRealTimeService(Service):
    """ASYNC_FLUSH: syncs the commit log on an interval; ``clock``'s monotonic reading says
    when a thorough flush is due."""

    def __init__(
        self,
        queue: MappedFileQueue,
        config: MessageStoreConfig,
        checkpoint: StoreCheckpoint,
        clock: Clock,
    ):
        super().__init__(clock=clock)
        self._queue = queue
        self._config = config
        self._checkpoint = checkpoint
        self._thorough = _ThoroughFlushSchedule(clock)

    def run(self) -> None:
        config = self._config
        while not self.is_stopped():
            least_pages = self._thorough.least_pages(
                config.flush_commit_log_least_pages, config.flush_commit_log_thorough_interval
            )
            interval = config.flush_interval_commit_log / 1000
            if config.flush_commit_log_timed:
                time.sleep(interval)
            else:
                self.wait_for_running(interval)
            self._flush(least_pages)
        for _ in range(_RETRY_TIMES_OVER):
            if self._queue.flush(0):
                break

    def wakeup_after_append(self) -> None:
        """Wake the thread only when a flush would write something now: at least
        ``flushCommitLogLeastPages`` dirty pages. Fewer are flushed by the interval's own
        round; waking the thread for each small append (a revive log record, a 1 KiB send)
        cost two thread switches (GIL hand-offs) for a round that synced nothing."""
        least_pages = self._config.flush_commit_log_least_pages
        queue = self._queue
        if (
            least_pages <= 0
            or queue.max_offset // OS_PAGE_SIZE - queue.flushed_where // OS_PAGE_SIZE >= least_pages
        ):
            self.wakeup()

    def _flush(self, least_pages: int) -> None:
        try:
            timestamp = _flush_with_timestamp(self._queue, least_pages)
        except OSError:
            log.exception("commit log flush failed")
            return
        if timestamp > 0:
            self._checkpoint.physic_msg_timestamp = timestamp


class GroupCommitService(Service):
    """SYNC_FLUSH: answers flush requests in groups, one sync per group."""

    def __init__(self, queue: MappedFileQueue, checkpoint: StoreCheckpoint):
        super().__init__()
        self._queue = queue
        self._checkpoint = checkpoint
        self._lock = threading.Lock()
        self._requests_write: list[GroupCommitRequest] = []
        self._requests_read: list[GroupCommitRequest] = []

    def put_request(self, request: GroupCommitRequest) -> None:
        """Queue ``request``. A thread's request wakes the service at once; an event loop's
        is woken for by the loop when it begins to wait (``MessageStore.await_put``): woken
        from inside the append, this thread found the GIL still held by the loop for the
        rest of the request and slept again on it (two more futex calls and a task switch
        per send); woken at the await, it mostly finds the loop gone to poll."""
        with self._lock:
            self._requests_write.append(request)
        if request.waiter is None:
            self.wakeup()

    def on_wait_end(self) -> None:
        with self._lock:
            self._requests_read, self._requests_write = self._requests_write, self._requests_read

    def run(self) -> None:
        while not self.is_stopped():
            self.wait_for_running(0.01)
            self._do_commit()
        # Answer what arrived during shutdown.
        self.on_wait_end()
        self._do_commit()

    def _do_commit(self) -> None:
        requests = self._requests_read
        if not requests:
            # Nothing waits, but keep the checkpoint moving (RocketMQ flushes anyway).
            self._flush()
            return
        self._requests_read = []
        status = PutMessageStatus.PUT_OK if self._flush() else PutMessageStatus.FLUSH_DISK_TIMEOUT
        flushed = self._queue.flushed_where
        if status is PutMessageStatus.PUT_OK and any(r.next_offset > flushed for r in requests):
            # Appended after the sync began: one more sync covers them.
            status = (
                PutMessageStatus.PUT_OK if self._flush() else PutMessageStatus.FLUSH_DISK_TIMEOUT
            )
            flushed = self._queue.flushed_where
        answers: list[tuple[GroupCommitRequest, PutMessageStatus]] = []
        for request in requests:
            ok = status is PutMessageStatus.PUT_OK and request.next_offset <= flushed
            answers.append(
                (request, PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_DISK_TIMEOUT)
            )
        answer_requests(answers)

    def _flush(self) -> bool:
        try:
            timestamp = _flush_with_timestamp(self._queue, 0)
        except OSError:
            log.exception("commit log sync failed")
            return False
        if timestamp > 0:
            self._checkpoint.physic_msg_timestamp = timestamp
        return True


class FlushConsumeQueueService(Service):
    """Syncs consume queues and index files, then the checkpoint, on an interval; ``clock``'s
    monotonic reading says when a thorough flush is due."""

    def __init__(
        self,
        config: MessageStoreConfig,
        flush_logic: Callable[[int], int],
        checkpoint: StoreCheckpoint,
        clock: Clock,
    ):
        super().__init__(clock=clock)
        self._config = config
        self._flush_logic = flush_logic
        self._checkpoint = checkpoint
        self._thorough = _ThoroughFlushSchedule(clock)

    def do_flush(self, least_pages: int) -> None:
        """Flush consume queues and index; on a thorough flush (``least_pages`` 0, when
        every dirty page is synced) also move and sync the checkpoint, as RocketMQ does:
        the checkpoint must never claim what a power loss could still take."""
        try:
            logics_timestamp = self._flush_logic(least_pages)
            if least_pages == 0:
                if logics_timestamp > 0:
                    self._checkpoint.logics_msg_timestamp = logics_timestamp
                self._checkpoint.flush()
        except OSError:
            log.exception("consume queue flush failed")

    def run(self) -> None:
        config = self._config
        while not self.is_stopped():
            self.wait_for_running(config.flush_interval_consume_queue / 1000)
            least_pages = self._thorough.least_pages(
                config.flush_consume_queue_least_pages, config.flush_consume_queue_thorough_interval
            )
            self.do_flush(least_pages)
        self.do_flush(0)
