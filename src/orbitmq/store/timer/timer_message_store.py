"""TimerMessageStore: files timer messages into the time wheel and delivers each at its
time (RocketMQ 5's ``TimerMessageStore``, its enqueue, dequeue and flush services in one
thread).

Flow: a timer message sits in ``rmq_sys_wheel_timer`` queue 0, its due time as the consume
queue's tag code. *Enqueue* reads that queue from ``curr_queue_offset``: a timer whose slot
is still ahead goes into the timer log (a unit pointing at the message) and its wheel slot's
chain; one whose slot was read already goes straight to the ready heap. *Load* reads every
slot that has begun (``curr_read_ms`` up to now) into the ready heap. *Deliver* pops each
timer of the heap once the clock reaches its exact due time, reads its message from the
commit log and puts it into its real topic and queue. *Flush* syncs the timer log, then the
wheel, then writes ``timercheck`` with positions held back to the oldest timer not yet
delivered, so a crash at any point loses nothing; a restart reads again from there (a few
timers may be delivered twice: at least once).

*Recall*: a recall marker (TIMER_DEL_UNIQKEY = real topic + unique id, RocketMQ 5.3's
RECALL_MESSAGE) is filed like a timer, due at the very time of the timer it cancels, so both
fall due together and are delivered in one batch (a batch never splits one due time): the
marker is read first, never delivered, and drops its timer. Markers and timers are in the
commit log and the wheel alike, so a restart re-reads both and the recall holds.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import deque
from typing import Final, NamedTuple, Protocol

from orbitmq.common import message_const as mc
from orbitmq.common.clock import Clock
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.message import MessageExt, MessageExtBrokerInner, to_real_destination
from orbitmq.common.message_decoder import decode_message
from orbitmq.common.service import Service
from orbitmq.common.topic import RMQ_SYS_WHEEL_TIMER_TOPIC
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.put_message_result import PutMessageResult, PutMessageStatus
from orbitmq.store.timer.timer_checkpoint import TimerCheckpoint
from orbitmq.store.timer.timer_intake import build_delete_key
from orbitmq.store.timer.timer_log import TimerLog, TimerUnit
from orbitmq.store.timer.timer_wheel import TimerWheel

log = logging.getLogger(__name__)

TIMER_QUEUE_ID: Final = 0
#: Timer-topic messages filed per pass, so delivery is never held up long by intake.
ENQUEUE_BATCH: Final = 4096
#: Timers held in memory at most (due ones waiting for their put); past it intake and slot
#: reading pause, so memory stays bounded however many fall due at once.
MAX_READY: Final = 100_000
#: Due timers put with one commit log write.
DELIVER_BATCH: Final = 256
#: Longest sleep: new timers wake the loop (``wakeup``), this only bounds a missed wakeup.
#: Empty slots up to this far ahead are passed over without waking for each (a wake takes
#: the GIL from the event loop: one per 100 ms slot showed in the sends' latency tail).
IDLE_WAIT_MS: Final = 500
#: Pause before retrying a delivery the store refused for now (busy, flushing slowly).
RETRY_WAIT_MS: Final = 50
#: Outcomes that no retry can change: the timer is dropped with an error logged.
_FINAL_FAILURES: Final = frozenset(
    {
        PutMessageStatus.MESSAGE_ILLEGAL,
        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
        PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL,
        PutMessageStatus.WHEEL_TIMER_NOT_ENABLE,
    }
)


class TimerHostStore(Protocol):
    """What the timer store needs of the message store (``MessageStore`` is one)."""

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_message_unit_in_queue(
        self, topic: str, queue_id: int, offset: int
    ) -> tuple[int, int, int] | None: ...

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> memoryview | None: ...

    def put_message_group(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]: ...

    @property
    def min_phy_offset(self) -> int: ...

    @property
    def max_phy_offset(self) -> int: ...

    @property
    def flushed_phy_offset(self) -> int: ...


class ReadyTimer(NamedTuple):
    """A timer whose slot was read: due time first, so the heap pops the earliest."""

    due_ms: int
    seq: int
    offset_py: int
    size_py: int
    enqueue_ms: int
    #: The wheel slot it was read from (-1: it came straight from the timer topic).
    slot_ms: int
    #: Its timer-topic queue offset when it came straight from there (-1: from the wheel).
    queue_offset: int


def timer_timeup(message: MessageExt, enqueue_ms: int, now_ms: int) -> MessageExtBrokerInner | None:
    """The message as it appears in its real topic (RocketMQ's ``convertMessage``):
    REAL_TOPIC / REAL_QID cleared, TIMER_OUT_MS kept (so it is never a timer again),
    TIMER_ENQUEUE_MS / TIMER_DEQUEUE_MS added. None if it lost its destination."""
    properties = dict(message.properties)
    inner = to_real_destination(message, properties)
    if inner is not None:
        del properties[mc.PROPERTY_REAL_TOPIC], properties[mc.PROPERTY_REAL_QUEUE_ID]
        properties[mc.PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_ms)
        properties[mc.PROPERTY_TIMER_DEQUEUE_MS] = str(now_ms)
    return inner


class TimerMessageStore(Service):
    """Owns ``timerwheel``, ``timerlog/`` and ``config/timercheck``, and the thread that
    files and delivers timers.

    ``load`` before ``start``; ``step`` runs one pass (tests drive it with a ManualClock
    instead of starting the thread). Everything but ``wakeup``, ``start`` and ``shutdown``
    belongs to one thread at a time.
    """

    def __init__(
        self,
        store: TimerHostStore,
        config: MessageStoreConfig,
        *,
        clock: Clock,
        fs: FileSystem = OS_FILE_SYSTEM,
    ):
        super().__init__(clock=clock)
        self._store = store
        self._config = config
        self._fs = fs
        self.precision_ms = config.timer_precision_ms
        # Two laps of the longest delay: a slot's next lap lies beyond any timer accepted
        # while delivery lags by up to timerMaxDelaySec (RocketMQ: 2 x 7 days of slots).
        self.slots_total = 2 * math.ceil(config.timer_max_delay_sec * 1000 / self.precision_ms)
        self.timer_log = TimerLog(config.timer_log_dir, config.mapped_file_size_timer_log, fs)
        self.wheel: TimerWheel | None = None
        self.checkpoint = TimerCheckpoint()
        self.curr_read_ms = 0
        self.curr_queue_offset = 0
        self._ready: list[ReadyTimer] = []
        self._seq = 0
        self._last_flush_ms = 0
        self._retry_at_ms = 0
        #: Positions the checkpoint may take once the commit log is synced past the first
        #: number: (commit log end when they were taken, read time, queue offset).
        self._candidates: deque[tuple[int, int, int]] = deque()
        #: Timers delivered since load (for tests and the benchmark).
        self.delivered = 0
        #: Timers dropped by a recall marker since load.
        self.recalled = 0
        #: Delete keys of the recall markers read, with their due time: kept while a timer
        #: of that time may still be ready (a put to retry).
        self._deleted: dict[str, int] = {}
        #: Something was filed, read from the wheel or delivered since the last checkpoint:
        #: an idle broker syncs and rewrites nothing (slots read empty need no record).
        self._dirty = False

    # -- lifecycle --------------------------------------------------------------------

    def load(self) -> None:
        """Open the files and recover: the timer log is cut after its last whole unit, the
        read time and queue offset come from timercheck."""
        config = self._config
        self.checkpoint = TimerCheckpoint.load(config.timer_check_file)
        self.timer_log.load(self.checkpoint.last_timer_log_flush_pos)
        self.wheel = TimerWheel(
            config.timer_wheel_file, self.slots_total, self.precision_ms, self._fs
        )
        now = self._clock.now_ms()
        read_ms = self.checkpoint.last_read_time_ms or now
        # Every slot from there on is read again, however long the broker was down (nothing
        # writes to the wheel meanwhile, so each still names its time): a day down costs
        # 864,000 slot reads at 100 ms slots, about a second, once.
        self.curr_read_ms = self.wheel.slot_time(read_ms)
        self.curr_queue_offset = self.checkpoint.last_timer_queue_offset
        self._last_flush_ms = now
        log.info(
            "timer store loaded: read time %d, timer queue offset %d, timer log end %d",
            self.curr_read_ms,
            self.curr_queue_offset,
            self.timer_log.end,
        )

    def run(self) -> None:
        while not self.is_stopped():
            self.wait_for_running(self.step())

    def shutdown(self, timeout_s: float = 10.0) -> None:
        super().shutdown(timeout_s)
        if self.wheel is not None:
            self.flush(final=True)
            self.wheel.shutdown()
            self.wheel = None
            self.timer_log.shutdown()

    # -- one pass -----------------------------------------------------------------------

    def step(self) -> float:
        """Enqueue, read begun slots, deliver what is due, flush when it is time; returns
        the seconds to wait before the next pass."""
        now = self._clock.now_ms()
        caught_up = self.enqueue(now)
        self.load_slots(now)
        now = self._clock.now_ms()
        self.deliver(now)
        if now - self._last_flush_ms >= self._config.timer_flush_interval_ms:
            self.flush()
        if not caught_up and len(self._ready) < MAX_READY:
            return 0.0  # more to file at once
        waits = [IDLE_WAIT_MS, self._next_filled_slot_ms(now + IDLE_WAIT_MS) - now]
        if self._ready:
            waits.append(max(self._ready[0].due_ms, self._retry_at_ms) - now)
        waits.append(self._last_flush_ms + self._config.timer_flush_interval_ms - now)
        return max(min(waits), 0) / 1000

    def enqueue(self, now: int) -> bool:
        """File up to ENQUEUE_BATCH new timer-topic messages; True when none is left."""
        wheel = self.wheel
        assert wheel is not None, "load() first"
        store, topic = self._store, RMQ_SYS_WHEEL_TIMER_TOPIC
        end = store.get_max_offset_in_queue(topic, TIMER_QUEUE_ID)
        offset = max(self.curr_queue_offset, store.get_min_offset_in_queue(topic, TIMER_QUEUE_ID))
        stop = min(end, offset + ENQUEUE_BATCH)
        while offset < stop and len(self._ready) < MAX_READY:
            unit = store.get_message_unit_in_queue(topic, TIMER_QUEUE_ID, offset)
            if unit is not None:
                offset_py, size_py, due_ms = unit
                if due_ms < self.curr_read_ms:
                    self._push(ReadyTimer(due_ms, 0, offset_py, size_py, now, -1, offset))
                elif not self._file(wheel, offset_py, size_py, due_ms, now):
                    break  # its ring position holds an undelivered slot of another lap
            offset += 1
        self._dirty |= offset != self.curr_queue_offset
        self.curr_queue_offset = offset
        return offset >= end

    def _file(self, wheel: TimerWheel, offset_py: int, size_py: int, due: int, now: int) -> bool:
        """Append a unit to the timer log and chain it into its slot."""
        slot_ms = wheel.slot_time(due)
        raw = wheel.get_raw_slot(due)
        if raw.time_ms == slot_ms:
            prev, first, num = raw.last_pos, raw.first_pos, raw.num
        elif raw.time_ms >= self.curr_read_ms:
            return False
        else:
            prev, first, num = -1, -1, 0
        position = self.timer_log.append(TimerUnit(prev, now, due - now, offset_py, size_py))
        wheel.put_slot(slot_ms, position if first < 0 else first, position, num + 1)
        return True

    def _next_filled_slot_ms(self, limit_ms: int) -> int:
        """The start of the first unread slot before ``limit_ms`` that holds timers, else
        ``limit_ms``. Only a filed timer fills a slot, and filing happens on this thread
        after a ``wakeup``, so a sleep until then misses none."""
        wheel = self.wheel
        assert wheel is not None, "load() first"
        slot_ms = self.curr_read_ms
        while slot_ms < limit_ms:
            if wheel.get_slot(slot_ms).num > 0:
                return slot_ms
            slot_ms += self.precision_ms
        return limit_ms

    def load_slots(self, now: int) -> None:
        """Move the timers of every slot that has begun into the ready heap."""
        wheel = self.wheel
        assert wheel is not None, "load() first"
        while self.curr_read_ms <= now and len(self._ready) < MAX_READY:
            slot = wheel.get_slot(self.curr_read_ms)
            position = slot.last_pos
            self._dirty |= position >= 0
            while position >= 0:
                unit = self.timer_log.read(position)
                if unit is None:
                    # Deleted with the commit log files it pointed into, or damaged.
                    log.warning("timer log unit at %d is unreadable; its chain ends", position)
                    break
                self._push(
                    ReadyTimer(
                        unit.due_ms,
                        0,
                        unit.offset_py,
                        unit.size_py,
                        unit.write_time_ms,
                        self.curr_read_ms,
                        -1,
                    )
                )
                # Units are appended, so a chain only goes back; anything else is damage.
                position = unit.prev_pos if unit.prev_pos < position else -1
            self.curr_read_ms += self.precision_ms

    def _push(self, timer: ReadyTimer) -> None:
        self._seq += 1
        heapq.heappush(self._ready, timer._replace(seq=self._seq))

    def deliver(self, now: int) -> int:
        """Put every ready timer due by ``now`` into its real topic, DELIVER_BATCH at a time
        with one commit log write each; how many went."""
        if now < self._retry_at_ms:
            return 0
        ready, count = self._ready, 0
        while ready and ready[0].due_ms <= now:
            batch = [heapq.heappop(ready)]
            # Past the batch size only for timers of the last one's time: a recall marker
            # and its timer are due together and must meet in one batch.
            while (
                ready
                and ready[0].due_ms <= now
                and (len(batch) < DELIVER_BATCH or ready[0].due_ms == batch[-1].due_ms)
            ):
                batch.append(heapq.heappop(ready))
            stored, retry = self._put_batch(batch, now)
            count += stored
            if retry:
                for timer in retry:
                    heapq.heappush(ready, timer)
                self._retry_at_ms = now + RETRY_WAIT_MS
                break
        self.delivered += count
        self._dirty |= count > 0
        if self._deleted:
            oldest = ready[0].due_ms if ready else now + 1
            self._deleted = {k: due for k, due in self._deleted.items() if due >= oldest}
        return count

    def _put_batch(self, batch: list[ReadyTimer], now: int) -> tuple[int, list[ReadyTimer]]:
        """Store due timers' messages in their real topics: how many were stored, and the
        timers to retry later."""
        found: list[tuple[ReadyTimer, MessageExtBrokerInner]] = []
        for timer in batch:
            inner = self._timeup(timer, now)
            if inner is None:
                continue
            delete_key = inner.properties.get(mc.PROPERTY_TIMER_DEL_UNIQKEY)
            if delete_key is not None:  # a recall marker: read first, never delivered
                self._deleted[delete_key] = timer.due_ms
            else:
                found.append((timer, inner))
        messages: list[MessageExtBrokerInner] = []
        sent: list[ReadyTimer] = []
        for timer, inner in found:
            if self._deleted and self._is_recalled(inner):
                self.recalled += 1
                continue
            messages.append(inner)
            sent.append(timer)
        if not messages:
            return 0, []
        retry = []
        for timer, result in zip(sent, self._store.put_message_group(messages), strict=True):
            if result.status is PutMessageStatus.PUT_OK:
                continue
            if result.status in _FINAL_FAILURES:
                log.error("timer message at %d dropped: %s", timer.offset_py, result.remark)
            else:
                retry.append(timer)
        if retry:
            log.warning("delivering %d timer messages failed; retrying", len(retry))
        return len(messages) - len(retry), retry

    def _is_recalled(self, inner: MessageExtBrokerInner) -> bool:
        unique_key = inner.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if unique_key is None:
            return False
        # Kept, not popped: pruned once no timer of its time is left (a copy delivered
        # twice after a restart is dropped too).
        if build_delete_key(inner.topic, unique_key) not in self._deleted:
            return False
        log.info("timer message %s of %s recalled: not delivered", unique_key, inner.topic)
        return True

    def _timeup(self, timer: ReadyTimer, now: int) -> MessageExtBrokerInner | None:
        """The due timer's message for its real topic; None if there is none to deliver."""
        record = self._store.select_one_message_by_offset(timer.offset_py, timer.size_py)
        if record is None:
            log.error("timer message at %d is gone from the commit log", timer.offset_py)
            return None
        try:
            inner = timer_timeup(decode_message(record), timer.enqueue_ms, now)
        except MessageFormatError:
            log.exception("skipping an undecodable timer message at %d", timer.offset_py)
            return None
        if inner is None:
            log.error("timer message at %d has no REAL_TOPIC/REAL_QID", timer.offset_py)
        return inner

    def flush(self, final: bool = False) -> None:
        """Sync the timer log, then the wheel, then write timercheck. Its read time and
        queue offset never pass a timer that is not delivered yet, nor a delivery whose copy
        in the real topic is not synced in the commit log yet (they wait in ``_candidates``
        for the store's flush services). ``final``: the broker is stopping and the store's
        shutdown syncs the commit log next, so the newest positions are taken."""
        wheel = self.wheel
        assert wheel is not None, "load() first"
        self._last_flush_ms = self._clock.now_ms()
        if not self._dirty and not self._candidates:
            return
        self._dirty = False
        log_end = self.timer_log.flush()
        wheel.flush()
        # Timer log files pointing only at retired commit log files go (RocketMQ: every
        # 30 s; here with each flush, a read of one unit per file).
        self.timer_log.delete_expired(self._store.min_phy_offset)
        read_ms, queue_offset = self.curr_read_ms, self.curr_queue_offset
        for timer in self._ready:
            if timer.slot_ms >= 0:
                read_ms = min(read_ms, timer.slot_ms)
            else:
                queue_offset = min(queue_offset, timer.queue_offset)
        candidates = self._candidates
        candidates.append((self._store.max_phy_offset, read_ms, queue_offset))
        flushed = self._store.flushed_phy_offset
        checkpoint = self.checkpoint
        while candidates and (final or candidates[0][0] <= flushed):
            _, checkpoint.last_read_time_ms, checkpoint.last_timer_queue_offset = (
                candidates.popleft()
            )
        checkpoint.master_timer_queue_offset = checkpoint.last_timer_queue_offset
        checkpoint.last_timer_log_flush_pos = log_end
        checkpoint.save(self._config.timer_check_file, self._fs, self._last_flush_ms)

    @property
    def pending_ready(self) -> int:
        """Timers read from the wheel (or the topic) and not delivered yet."""
        return len(self._ready)
