"""ScheduleMessageService: delivers delayed messages when their time comes (R33).

The broker owns it (as RocketMQ 5 does) and drives the store through ``ScheduleStore``, the
few reads and the put it needs. A message sent with delay level L is stored in
SCHEDULE_TOPIC_XXXX, queue L - 1, with its real topic and queue in REAL_TOPIC / REAL_QID; its
consume-queue tag code is the delivery time. This service walks each level's queue in order,
and once a message is due, stores it again in its real topic (DELAY removed) and moves that
level's offset on. Offsets are kept in config/delayOffset.json, so a restart neither loses nor
repeats more than the last interval.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, Protocol

import orjson

from orbitmq.common import message_const as mc
from orbitmq.common.clock import Clock
from orbitmq.common.config_file import ConfigFile
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.message import MessageExt, MessageExtBrokerInner, to_real_destination
from orbitmq.common.message_decoder import decode_message
from orbitmq.common.service import Service
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from orbitmq.store import PutMessageResult, PutMessageStatus

_NON_STR_KEYS: Final = orjson.OPT_NON_STR_KEYS

log = logging.getLogger(__name__)

#: RocketMQ's pause before retrying a level whose delivery failed, or polling for new ones.
DELAY_FOR_A_WHILE_S = 0.1


def message_timeup(message: MessageExt) -> MessageExtBrokerInner | None:
    """The message as it must appear in its real topic; None if it lost its destination."""
    properties = dict(message.properties)
    properties.pop(mc.PROPERTY_DELAY_TIME_LEVEL, None)
    return to_real_destination(message, properties)


class ScheduleStore(Protocol):
    """What delivery needs of the store (``MessageStore`` is one): a level queue's bounds
    and message units, the record a unit points to, and a put."""

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_message_unit_in_queue(
        self, topic: str, queue_id: int, offset: int
    ) -> tuple[int, int, int] | None: ...

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> memoryview | None: ...

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...


class ScheduleMessageService(Service):
    """Owns the delivery offset of every delay level (config/delayOffset.json) and the
    thread that delivers.

    ``deliver_due`` may also be called directly (tests, a stopped service); the offset table
    is only touched from one thread at a time. ``clock.now_ms`` decides what is due,
    ``clock.monotonic`` when the offsets are persisted.
    """

    def __init__(
        self,
        store: ScheduleStore,
        delay_levels_ms: Sequence[int],
        offset_file: str,
        *,
        clock: Clock,
        fs: FileSystem = OS_FILE_SYSTEM,
        persist_interval_ms: int,
    ):
        super().__init__()
        self._store = store
        self._levels_ms = delay_levels_ms
        self._file = ConfigFile(offset_file, fs)
        self._clock = clock
        self._persist_interval_s = persist_interval_ms / 1000
        self.offset_table: dict[int, int] = {}
        self._persisted: dict[int, int] = {}

    def load(self) -> None:
        """Read delayOffset.json ({"offsetTable": {level: offset}}), .bak if need be."""
        saved: Any = self._file.load() or {}
        table = saved.get("offsetTable", {}) if isinstance(saved, dict) else {}
        self.offset_table = {
            int(level): int(offset)
            for level, offset in table.items()
            if str(level).isdigit() and 1 <= int(level) <= len(self._levels_ms)
        }
        self._persisted = dict(self.offset_table)

    def persist(self) -> None:
        if self.offset_table != self._persisted:
            self._file.save({"offsetTable": dict(sorted(self.offset_table.items()))})
            self._persisted = dict(self.offset_table)

    def encode(self) -> bytes:
        """The offsets as delayOffset.json holds them (GET_ALL_DELAY_OFFSET's body, RocketMQ's
        ScheduleMessageService.encode); a copy taken first, as the delivering thread writes."""
        table = dict(self.offset_table)
        return orjson.dumps({"offsetTable": dict(sorted(table.items()))}, option=_NON_STR_KEYS)

    def deliver_due(self) -> float | None:
        """Deliver every due message of every level; seconds until the next waiting one is
        due (None when none waits). A failed delivery is retried after a short while."""
        now = self._clock.now_ms()
        waits = []
        for level in range(1, len(self._levels_ms) + 1):
            wait_ms = self._deliver_level(level, now)
            if wait_ms is not None:
                waits.append(wait_ms)
        return max(min(waits), 0) / 1000 if waits else None

    def _deliver_level(self, level: int, now: int) -> float | None:
        """Deliver the due messages of one level; ms until its next message is due."""
        store, queue_id = self._store, level - 1
        end = store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id)
        if end == 0:
            return None  # the level's queue was never written: no offset to record
        offset = max(
            self.offset_table.get(level, 0),
            store.get_min_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id),
        )
        wait_ms: float | None = None
        while offset < end:
            unit = store.get_message_unit_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id, offset)
            if unit is None:
                offset += 1
                continue
            # A time further out than the level's delay (a clock that jumped) means now.
            deliver_at = unit[2] if unit[2] <= now + self._levels_ms[level - 1] else now
            if deliver_at > now:
                wait_ms = deliver_at - now
                break
            if not self._deliver(unit[0], unit[1]):
                wait_ms = DELAY_FOR_A_WHILE_S * 1000
                break
            offset += 1
        self.offset_table[level] = offset
        return wait_ms

    def _deliver(self, commit_log_offset: int, size: int) -> bool:
        """Store one due message in its real topic; False to retry it later."""
        record = self._store.select_one_message_by_offset(commit_log_offset, size)
        if record is None:
            return True  # its commit log file was retired: nothing left to deliver
        try:
            inner = message_timeup(decode_message(record))
        except MessageFormatError:
            log.exception("skipping an undecodable delayed message at %d", commit_log_offset)
            return True
        if inner is None:
            log.error("delayed message at %d has no REAL_TOPIC/REAL_QID", commit_log_offset)
            return True
        result = self._store.put_message(inner)
        if result.status is PutMessageStatus.PUT_OK:
            return True
        log.warning(
            "delivering a delayed message failed (%s %s); retrying", result.status, result.remark
        )
        return False

    def run(self) -> None:
        last_persist = self._clock.monotonic()
        while not self.is_stopped():
            try:
                wait_s = self.deliver_due()
            except OSError:
                log.exception("delayed delivery failed; retrying")
                wait_s = DELAY_FOR_A_WHILE_S
            if self._clock.monotonic() - last_persist >= self._persist_interval_s:
                self.persist()
                last_persist = self._clock.monotonic()
            # New delayed messages may arrive at any time: poll as RocketMQ does.
            self.wait_for_running(
                min(wait_s, DELAY_FOR_A_WHILE_S) if wait_s else DELAY_FOR_A_WHILE_S
            )
        self.persist()
