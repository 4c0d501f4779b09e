"""ReputMessageService: dispatches newly written commit log records to the consume queues
and the index, and announces what became visible (long polling waits on this)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from orbitmq.common.clock import Clock
from orbitmq.common.service import Service
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.dispatch_batch import DispatchBatch, parse_records
from orbitmq.store.running_flags import RunningFlags

log = logging.getLogger(__name__)

#: Bytes parsed per dispatch round: large enough to amortize the batch work, small enough
#: that consumers see messages promptly.
_ROUND_BYTES = 1 << 20

#: Called once per reput round for each queue that got messages: (topic, queue id, the
#: queue's new max offset, the tag codes of the messages that arrived). Runs on the thread
#: that dispatched: the reput thread, or an event loop's after a small put. Keep it short.
MessageArrivingListener = Callable[[str, int, int, frozenset[int]], None]


class CommitLogDispatcher(Protocol):
    """Something built from the commit log: consume queues, the index.

    Gets the records of one reput round in log order; must be idempotent, since a round
    that failed part-way is dispatched again."""

    def dispatch(self, batch: DispatchBatch) -> None: ...


class ReputMessageService(Service):
    """Owns ``reput_from_offset``: every record below it has been dispatched.

    ``do_reput`` runs on this service's thread, or directly (recovery, tests) when the
    thread is not started; ``dispatch_soon`` lets an event loop dispatch its own small puts.
    ``clock``'s monotonic reading says when a ``wait_for_dispatch`` timed out.
    """

    def __init__(
        self,
        commit_log: CommitLog,
        dispatchers: list[CommitLogDispatcher],
        delay_levels_ms: tuple[int, ...],
        idle_interval_ms: int,
        max_record_size: int,
        clock: Clock,
        listener: MessageArrivingListener | None = None,
        running_flags: RunningFlags | None = None,
    ):
        super().__init__(clock=clock)
        #: Told when consume queues cannot be written, and when they can again.
        self._running_flags = running_flags or RunningFlags()
        self._commit_log = commit_log
        self._dispatchers = dispatchers
        self._delay_levels_ms = delay_levels_ms
        self._idle_interval_s = idle_interval_ms / 1000
        self._max_record_size = max_record_size
        self.listener = listener
        #: A slave's log may end inside a record (its rest comes with the next frame):
        #: dispatch waits for it without reporting a problem.
        self.partial_tail_expected = False
        self.reput_from_offset = 0
        #: Store time of the last dispatched message, for the checkpoint.
        self.last_dispatched_timestamp = 0
        self._stuck_at = -1
        self._progress_lock = threading.Lock()
        self._progress = threading.Condition(self._progress_lock)
        #: Threads in ``wait_for_dispatch``; a round notifies only when there are any.
        self._waiting = 0
        #: Held for a round, so that the service thread and a caller dispatching on its own
        #: thread (``dispatch_soon``) never run rounds at the same time.
        self._round = threading.Lock()

    @property
    def behind_bytes(self) -> int:
        """Bytes written to the commit log but not yet dispatched."""
        return self._commit_log.max_offset - self.reput_from_offset

    def wait_for_dispatch(self, offset: int, timeout_s: float) -> bool:
        """Block until every record below commit log ``offset`` is dispatched; False on timeout."""
        deadline = self._clock.monotonic() + timeout_s
        with self._progress:
            self._waiting += 1
            try:
                while self.reput_from_offset < offset:
                    remaining = deadline - self._clock.monotonic()
                    if remaining <= 0:
                        return False
                    self._progress.wait(remaining)
            finally:
                self._waiting -= 1
        return True

    def do_reput(self) -> int:
        """Dispatch everything written so far; returns the number of messages dispatched."""
        with self._round:
            return self._reput_and_announce()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No round runs while the block runs (a slave truncating its log moves
        ``reput_from_offset`` back in it)."""
        with self._round:
            yield

    def dispatch_soon(self, inline_below_bytes: int) -> None:
        """After an append: dispatch on the calling thread when fewer than
        ``inline_below_bytes`` wait and no round is running, else wake the service thread.

        A few records cost less to dispatch than the two thread switches of a wakeup (and
        the hop of the arrival notice back to the caller's event loop)."""
        if self.behind_bytes < inline_below_bytes and self._round.acquire(blocking=False):
            try:
                self._reput_and_announce()
            finally:
                self._round.release()
        else:
            self.wakeup()

    def _reput_and_announce(self) -> int:
        try:
            return self._reput()
        finally:
            # The condition's own lock, taken in C: every small put ends a round here.
            with self._progress_lock:
                if self._waiting:
                    self._progress.notify_all()

    def _reput(self) -> int:
        dispatched = 0
        commit_log = self._commit_log
        while self.reput_from_offset < commit_log.max_offset:
            offset = self.reput_from_offset
            if offset < commit_log.min_offset:
                offset = self.reput_from_offset = commit_log.min_offset
            data = commit_log.get_data(offset)
            if data is None:
                break
            parsed = parse_records(
                data,
                offset,
                check_crc=False,
                delay_levels_ms=self._delay_levels_ms,
                max_bytes=_ROUND_BYTES,
                max_record_size=self._max_record_size,
            )
            batch = parsed.batch
            if len(batch):
                if not self._dispatch(batch):
                    break
                dispatched += len(batch)
                self.last_dispatched_timestamp = batch.store_timestamps[-1]
                self._announce(batch)
            if parsed.end_of_file:
                self.reput_from_offset = commit_log.roll_next_file(offset)
            else:
                self.reput_from_offset = offset + parsed.consumed
            if parsed.problem:
                if not (parsed.incomplete and self.partial_tail_expected):
                    self._report_stuck(offset + parsed.consumed, parsed.problem)
                break
        return dispatched

    def _dispatch(self, batch: DispatchBatch) -> bool:
        flags = self._running_flags
        try:
            for dispatcher in self._dispatchers:
                dispatcher.dispatch(batch)
        except OSError as exc:
            # A full disk, no descriptor left: the records stay undispatched and are retried
            # on the next round; until then the store takes no more writes.
            self._report_stuck(batch.commit_log_offsets[0], f"dispatch failed: {exc}")
            if flags.make_logics_queue_error(f"consume queues cannot be written: {exc}"):
                log.error("writes refused until consume queues can be written again")
            return False
        if flags.logics_queue_error and flags.clear_logics_queue_error():
            self._stuck_at = -1
            log.warning("consume queues written again: writes accepted again")
        return True

    def _report_stuck(self, offset: int, problem: str) -> None:
        if self._stuck_at != offset:
            self._stuck_at = offset
            log.error("reput stopped at commit log offset %d: %s", offset, problem)

    def _announce(self, batch: DispatchBatch) -> None:
        listener = self.listener
        if listener is None:
            return
        queue_offsets = batch.queue_offsets
        tags_codes = batch.tags_codes.__getitem__
        for (topic, queue_id), rows in batch.queue_rows().items():
            try:
                codes = frozenset(map(tags_codes, rows))
                listener(topic, queue_id, queue_offsets[rows[-1]] + 1, codes)
            except Exception:
                log.exception("message arriving listener failed")

    def run(self) -> None:
        while not self.is_stopped():
            self.wait_for_running(self._idle_interval_s)
            self.do_reput()
        self.do_reput()
