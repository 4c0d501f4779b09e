"""The push consumer's per-queue buffer: messages pulled from one queue and not yet consumed.

A ``ProcessQueue`` sits between the pull service, which puts what each pull returns, and the
consume service, which removes what the listener has finished with. Its lowest held offset is
the queue's commit point (R26): a message finished out of order never moves the committed
offset past one still in flight. It also answers the pull service's flow-control question
(R25), holds the orderly consumer's lock and "being consumed" state (R27), and finds messages
held past the consume timeout.

Behaviour follows RocketMQ 4.9's client ``ProcessQueue``.
"""

from __future__ import annotations

import bisect
import enum
import threading
from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Final

from orbitmq.common import SYSTEM_CLOCK, Clock, MessageExt
from orbitmq.common import message_const as mc
from orbitmq.protocol.body import ProcessQueueInfo

#: An orderly consumer's lock at the broker counts as lost on the client after this long
#: without renewal (``rocketmq.client.rebalance.lockMaxLiveTime``); the broker keeps it 60 s,
#: so the client gives up first and never consumes on a lock the broker has let go.
REBALANCE_LOCK_MAX_LIVE_TIME_MS: Final = 30_000
#: How often an orderly consumer renews its locks (``rocketmq.client.rebalance.lockInterval``).
REBALANCE_LOCK_INTERVAL_MS: Final = 20_000
#: A queue not pulled for this long is considered stuck (``rocketmq.client.pull.pullMaxIdleTime``).
PULL_MAX_IDLE_TIME_MS: Final = 120_000
#: At most this many expired messages are looked at per sweep, as RocketMQ's cleanExpiredMsg.
EXPIRED_SWEEP_LIMIT: Final = 16

#: The push consumer's flow-control defaults (pullThresholdForQueue,
#: pullThresholdSizeForQueue in MiB, consumeConcurrentlyMaxSpan).
PULL_THRESHOLD_FOR_QUEUE: Final = 1000
PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB: Final = 100
CONSUME_CONCURRENTLY_MAX_SPAN: Final = 2000

_MIB: Final = 1024 * 1024
# Batch bookkeeping maps these over a pull's messages rather than loop in Python.
_QUEUE_OFFSET: Final = attrgetter("queue_offset")
_BODY: Final = attrgetter("body")


class PullPauseReason(enum.StrEnum):
    """Why the pull service should wait before pulling this queue again."""

    MSG_COUNT = "cached message count exceeds the threshold"
    MSG_SIZE = "cached message size exceeds the threshold"
    MAX_SPAN = "cached message offset span exceeds the threshold"


class ProcessQueue:
    """Owns the messages held for one message queue, ordered by queue offset, and that queue's
    consume-side state: dropped, locked (orderly), consuming (orderly), timestamps.

    Two tables, as RocketMQ: ``held`` (pulled, waiting or being consumed concurrently) and, for
    orderly consumption only, ``consuming`` (taken by :meth:`take_messages`, not yet committed).
    ``msg_count`` and ``msg_size`` cover both.

    Safe to use from several tasks and threads: every change of the tables happens under one
    ``threading.Lock`` (listeners may run on a thread pool). The plain flags and timestamps
    (``dropped``, ``locked``, ``last_*_timestamp``, ``msg_acc_cnt``) are single attribute
    stores, which are atomic in Python, as RocketMQ's are ``volatile``.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._held: dict[int, MessageExt] = {}
        # The held offsets in ascending order. Pulls deliver increasing offsets, so a put is
        # almost always an append; removals are a bisect and a memmove over at most ~1000 ints.
        self._offsets: list[int] = []
        # Orderly only: taken for consumption and not yet committed (consumingMsgOrderlyTreeMap).
        self._consuming: dict[int, MessageExt] = {}
        self._size_bytes = 0
        # The offset of the last message put: the commit point once nothing is held.
        self._queue_offset_max = 0
        self._consuming_flag = False
        now = clock.now_ms()
        self.dropped = False
        self.locked = False
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now
        self.last_lock_timestamp = now
        self.try_unlock_times = 0
        #: Messages the broker holds beyond the last one pulled (its MAX_OFFSET minus the last
        #: pulled offset); reported in consumer running info.
        self.msg_acc_cnt = 0

    # --- sizes --------------------------------------------------------------------------------

    @property
    def msg_count(self) -> int:
        """Messages held, including those an orderly consumer has taken but not committed."""
        with self._lock:
            return len(self._held) + len(self._consuming)

    @property
    def msg_size(self) -> int:
        """Sum of the body sizes of the messages counted by ``msg_count``, in bytes."""
        with self._lock:
            return self._size_bytes

    @property
    def max_span(self) -> int:
        """Highest minus lowest held offset (not counting orderly ``consuming``); 0 if none."""
        with self._lock:
            return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    @property
    def queue_offset_max(self) -> int:
        """The queue offset of the last new message put."""
        return self._queue_offset_max

    @property
    def first_offset(self) -> int | None:
        """The lowest held offset, or None when nothing is held."""
        with self._lock:
            return self._offsets[0] if self._offsets else None

    @property
    def last_offset(self) -> int | None:
        """The highest held offset, or None when nothing is held."""
        with self._lock:
            return self._offsets[-1] if self._offsets else None

    def has_temp_message(self) -> bool:
        """Whether any message is waiting (orderly ``consuming`` not counted)."""
        with self._lock:
            return bool(self._held)

    # --- the pull side ------------------------------------------------------------------------

    def put_messages(self, msgs: Sequence[MessageExt]) -> bool:
        """Hold what a pull returned. Returns True when the caller should dispatch a consume
        request: messages are held and no one was consuming (RocketMQ's dispatchToConsume;
        an orderly consumer runs one consume loop per queue and relies on it).

        A message already held is replaced but not counted twice; one an orderly consumer has
        taken and not committed is ignored (it is being consumed already).
        """
        with self._lock:
            if not self._put_new_run(msgs):
                for msg in msgs:
                    self._put_one(msg)
            dispatch = False
            if self._held and not self._consuming_flag:
                self._consuming_flag = True
                dispatch = True
            if msgs:
                self._note_backlog(msgs[-1])
        return dispatch

    def _put_new_run(self, msgs: Sequence[MessageExt]) -> bool:
        """Hold ``msgs`` at once if they are what a pull normally brings: distinct offsets in
        ascending order, all above anything held or taken. False (nothing done) otherwise."""
        if not msgs:
            return True
        offsets = list(map(_QUEUE_OFFSET, msgs))
        first = offsets[0]
        if self._offsets and first <= self._offsets[-1]:
            return False
        if self._consuming and first <= max(self._consuming):
            return False
        fresh = dict(zip(offsets, msgs, strict=True))
        if len(fresh) != len(offsets) or offsets != sorted(offsets):
            return False
        self._held.update(fresh)
        self._offsets.extend(offsets)
        self._queue_offset_max = offsets[-1]
        self._size_bytes += sum(map(len, map(_BODY, msgs)))
        return True

    def _put_one(self, msg: MessageExt) -> None:
        offset = msg.queue_offset
        if offset in self._consuming:
            return
        previous = self._held.get(offset)
        self._held[offset] = msg
        if previous is None:
            self._insert_offset(offset)
            self._queue_offset_max = offset
            self._size_bytes += len(msg.body)
        else:
            self._size_bytes += len(msg.body) - len(previous.body)

    def _insert_offset(self, offset: int) -> None:
        if not self._offsets or offset > self._offsets[-1]:
            self._offsets.append(offset)
        else:
            bisect.insort(self._offsets, offset)

    def _note_backlog(self, last: MessageExt) -> None:
        raw = last.properties.get(mc.PROPERTY_MAX_OFFSET)
        if raw is None:
            return
        try:
            backlog = int(raw) - last.queue_offset
        except ValueError:
            return  # a malformed property only loses a statistic
        if backlog > 0:
            self.msg_acc_cnt = backlog

    def pull_pause_reason(
        self,
        *,
        threshold_count: int = PULL_THRESHOLD_FOR_QUEUE,
        threshold_size_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
        max_span: int = CONSUME_CONCURRENTLY_MAX_SPAN,
        orderly: bool = False,
    ) -> PullPauseReason | None:
        """None when the pull service may pull this queue now, else why it should wait.

        Checked in RocketMQ's order: count, size (whole MiB, so a queue pauses only once it
        holds more than ``threshold_size_mib`` + 1 MiB), span. Orderly consumers skip the
        span check: a message retried in place keeps the low end fixed by design.
        """
        with self._lock:
            count = len(self._held) + len(self._consuming)
            size_mib = self._size_bytes // _MIB
            span = self._offsets[-1] - self._offsets[0] if self._offsets else 0
        if count > threshold_count:
            return PullPauseReason.MSG_COUNT
        if size_mib > threshold_size_mib:
            return PullPauseReason.MSG_SIZE
        if not orderly and span > max_span:
            return PullPauseReason.MAX_SPAN
        return None

    def is_pull_expired(self) -> bool:
        """No pull for this queue in ``PULL_MAX_IDLE_TIME_MS``: rebalance may drop it."""
        return self._clock.now_ms() - self.last_pull_timestamp > PULL_MAX_IDLE_TIME_MS

    # --- concurrent consumption ---------------------------------------------------------------

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Forget consumed messages; returns the offset to commit (R26).

        That is the lowest offset still held, or the last put offset + 1 when nothing remains.
        -1 when nothing was held at the call (nothing to commit; RocketMQ answers the same, and
        callers commit only offsets >= 0).
        """
        with self._lock:
            self.last_consume_timestamp = self._clock.now_ms()
            if not self._held:
                return -1
            offsets = list(map(_QUEUE_OFFSET, msgs))
            stored = list(map(self._held.pop, offsets, repeat(None, len(offsets))))
            if all(stored):
                # Every message was held (the usual case), and a finished batch is usually
                # a run of neighbours in the offset list: one slice deletion drops them all.
                self._size_bytes -= sum(map(len, map(_BODY, stored)))
                self._discard_offsets(offsets)
            else:
                for offset, held in zip(offsets, stored, strict=True):
                    if held is not None:
                        self._discard_offset(offset)
                        self._size_bytes -= len(held.body)
            return self._offsets[0] if self._offsets else self._queue_offset_max + 1

    def _discard_offsets(self, offsets: list[int]) -> None:
        if not offsets:
            return
        start = bisect.bisect_left(self._offsets, offsets[0])
        stop = start + len(offsets)
        if self._offsets[start:stop] == offsets:
            del self._offsets[start:stop]
            return
        for offset in offsets:
            self._discard_offset(offset)

    def _discard_offset(self, offset: int) -> None:
        index = bisect.bisect_left(self._offsets, offset)
        if index < len(self._offsets) and self._offsets[index] == offset:
            del self._offsets[index]

    def expired_messages(
        self, consume_timeout_ms: int, now_ms: int | None = None, limit: int = EXPIRED_SWEEP_LIMIT
    ) -> list[MessageExt]:
        """Held messages whose consumption started more than ``consume_timeout_ms`` ago.

        As RocketMQ's cleanExpiredMsg, only the head of the queue is examined, in offset order,
        stopping at the first message not expired (or not started) and after ``limit``: the
        lowest offset is what holds back the commit point. The caller sends each back and
        then removes it. Concurrent consumers only; orderly ones retry in place instead.
        """
        now = self._clock.now_ms() if now_ms is None else now_ms
        expired: list[MessageExt] = []
        with self._lock:
            for offset in self._offsets[:limit]:
                msg = self._held[offset]
                raw = msg.properties.get(mc.PROPERTY_CONSUME_START_TIMESTAMP)
                if not raw:
                    break
                try:
                    started_ms = int(raw)
                except ValueError:
                    break
                if now - started_ms <= consume_timeout_ms:
                    break
                expired.append(msg)
        return expired

    # --- orderly consumption ------------------------------------------------------------------

    @property
    def consuming(self) -> bool:
        """Orderly: a consume loop is running for this queue (set by ``put_messages`` when it
        asks for a dispatch, cleared by ``take_messages`` when nothing is left)."""
        return self._consuming_flag

    @consuming.setter
    def consuming(self, value: bool) -> None:
        with self._lock:
            self._consuming_flag = value

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Orderly: move up to ``batch_size`` lowest held messages to ``consuming`` and return
        them. An empty answer also ends the consume loop (``consuming`` becomes False) under
        the same lock as ``put_messages``, so a message put meanwhile triggers a new dispatch.
        """
        with self._lock:
            self.last_consume_timestamp = self._clock.now_ms()
            count = min(batch_size, len(self._offsets))
            taken_offsets = self._offsets[:count]
            del self._offsets[:count]
            taken = []
            for offset in taken_offsets:
                msg = self._held.pop(offset)
                self._consuming[offset] = msg
                taken.append(msg)
            if not taken:
                self._consuming_flag = False
        return taken

    def commit(self) -> int:
        """Orderly: the taken messages were consumed. Forgets them and returns the offset to
        commit (highest taken + 1), or -1 when nothing was taken."""
        with self._lock:
            if not self._consuming:
                return -1
            highest = max(self._consuming)
            self._size_bytes -= sum(len(msg.body) for msg in self._consuming.values())
            self._consuming.clear()
            return highest + 1

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """Orderly: put taken messages back to be consumed again (in place, keeping order)."""
        with self._lock:
            for msg in msgs:
                self._hold_again(msg.queue_offset, msg)

    def _hold_again(self, offset: int, msg: MessageExt) -> None:
        # Whatever was counted for this offset (taken or held) is replaced by ``msg``, so the
        # size stays exact even for a message handed back that was never taken.
        taken = self._consuming.pop(offset, None)
        previous = self._held.get(offset)
        if previous is None:
            self._insert_offset(offset)
        else:
            self._size_bytes -= len(previous.body)
        if taken is not None:
            self._size_bytes -= len(taken.body)
        self._held[offset] = msg
        self._size_bytes += len(msg.body)

    def rollback(self) -> None:
        """Orderly: put every taken message back (the listener gave up on them all)."""
        with self._lock:
            for offset, msg in list(self._consuming.items()):
                self._hold_again(offset, msg)

    def is_lock_expired(self) -> bool:
        """The broker lock was not renewed within ``REBALANCE_LOCK_MAX_LIVE_TIME_MS``."""
        return self._clock.now_ms() - self.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME_MS

    def fill_process_queue_info(self, commit_offset: int) -> ProcessQueueInfo:
        """What GET_CONSUMER_RUNNING_INFO reports of this queue (RocketMQ's
        fillProcessQueueInfo): the cached run, the orderly taken run, lock and times."""
        info = ProcessQueueInfo(
            commit_offset=commit_offset,
            locked=self.locked,
            try_unlock_times=self.try_unlock_times,
            last_lock_timestamp=self.last_lock_timestamp,
            droped=self.dropped,
            last_pull_timestamp=self.last_pull_timestamp,
            last_consume_timestamp=self.last_consume_timestamp,
        )
        with self._lock:
            if self._offsets:
                info.cached_msg_min_offset = self._offsets[0]
                info.cached_msg_max_offset = self._offsets[-1]
                info.cached_msg_count = len(self._offsets)
            info.cached_msg_size_in_mib = self._size_bytes // (1024 * 1024)
            if self._consuming:
                info.transaction_msg_min_offset = min(self._consuming)
                info.transaction_msg_max_offset = max(self._consuming)
                info.transaction_msg_count = len(self._consuming)
        return info

    # --- lifetime -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every message (the queue was dropped or its offset reset)."""
        with self._lock:
            self._held.clear()
            self._offsets.clear()
            self._consuming.clear()
            self._size_bytes = 0
            self._queue_offset_max = 0
