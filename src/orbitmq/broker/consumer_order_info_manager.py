"""``ConsumerOrderInfoManager``: FIFO POP's state per queue (RocketMQ 5's
``ConsumerOrderInfoManager``), persisted as ``config/consumerOrderInfo.json``.

A FIFO POP (``order=true``) hands out a queue's messages only when the batch handed out
before is acked in full or its invisible time is over; the group's consumer offset stays at
the first message not acked. The manager remembers, per (topic, group, queue), the batch
handed out last (its offsets, pop time and invisible time, which of them are acked, a
changed invisible time per offset) and how many times each offset was handed out (the
answer's ``orderCountInfo``, which clients show as reconsume times).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from orbitmq.common import OS_FILE_SYSTEM, ConfigFile, FileSystem
from orbitmq.common.clock import Clock
from orbitmq.protocol.pop_extra_info import order_count_entry

log = logging.getLogger(__name__)

#: RocketMQ's ``CONSUMER_ORDER_INFO`` file under the config directory.
CONSUMER_ORDER_INFO_CONFIG_NAME: Final = "consumerOrderInfo"
#: commit_and_next's answers that are not offsets (RocketMQ's -1 and -2).
ILLEGAL_OFFSET: Final = -1
NO_NEED_COMMIT: Final = -2


@dataclass(slots=True)
class OrderInfo:
    """The batch handed out last from one queue."""

    pop_time: int
    invisible_time: int
    offsets: list[int]
    attempt_id: str | None = None
    commit_bits: int = 0
    #: offset -> how many times it was handed out before this batch.
    consumed_count: dict[int, int] = field(default_factory=dict)
    #: offset -> its next visible time after CHANGE_MESSAGE_INVISIBLETIME.
    next_visible: dict[int, int] = field(default_factory=dict)

    def need_block(self, attempt_id: str | None, now_ms: int) -> bool:
        if not self.offsets:
            return False
        if attempt_id is not None and attempt_id == self.attempt_id:
            return False  # the same attempt asking again gets the same messages
        default = self.pop_time + self.invisible_time
        for index, offset in enumerate(self.offsets):
            if self.commit_bits >> index & 1:
                continue
            if self.next_visible.get(offset, default) > now_ms:
                return True
        return False

    def next_offset(self) -> int:
        """The first offset not acked, or the one after the batch when all are."""
        for index, offset in enumerate(self.offsets):
            if not self.commit_bits >> index & 1:
                return offset
        return self.offsets[-1] + 1

    def to_value(self) -> dict[str, Any]:
        return {
            "p": self.pop_time,
            "i": self.invisible_time,
            "o": self.offsets,
            "a": self.attempt_id,
            "cm": self.commit_bits,
            "cc": {str(k): v for k, v in self.consumed_count.items()},
            "ot": {str(k): v for k, v in self.next_visible.items()},
        }

    @classmethod
    def from_value(cls, raw: dict[str, Any]) -> OrderInfo:
        return cls(
            pop_time=int(raw["p"]),
            invisible_time=int(raw["i"]),
            offsets=[int(o) for o in raw["o"]],
            attempt_id=raw.get("a"),
            commit_bits=int(raw.get("cm", 0)),
            consumed_count={int(k): int(v) for k, v in (raw.get("cc") or {}).items()},
            next_visible={int(k): int(v) for k, v in (raw.get("ot") or {}).items()},
        )


class ConsumerOrderInfoManager:
    """Owns the FIFO POP table ((topic, group, queue id) -> OrderInfo) and its file.

    Use from the broker's event loop; ``persist`` copies under a lock and may run in a
    worker thread.
    """

    def __init__(
        self, config_path: str | os.PathLike[str], clock: Clock, fs: FileSystem = OS_FILE_SYSTEM
    ) -> None:
        self._file = ConfigFile(config_path, fs)
        self._clock = clock
        self._table: dict[tuple[str, str, int], OrderInfo] = {}
        self._lock = threading.Lock()
        self._changes = 0

    def update(
        self,
        attempt_id: str | None,
        topic: str,
        group: str,
        queue_id: int,
        pop_time: int,
        invisible_time: int,
        offsets: list[int],
    ) -> list[str]:
        """Record the batch just handed out; the answer's orderCountInfo entries for it
        (one per offset, by queue offset)."""
        key = (topic, group, queue_id)
        old = self._table.get(key)
        info = OrderInfo(pop_time, invisible_time, list(offsets), attempt_id)
        if old is not None:
            same_attempt = attempt_id is not None and attempt_id == old.attempt_id
            for offset in offsets:
                if offset in old.offsets:
                    count = old.consumed_count.get(offset, 0)
                    info.consumed_count[offset] = count if same_attempt else count + 1
        with self._lock:
            self._table[key] = info
            self._changes += 1
        return [
            order_count_entry(topic, queue_id, offset, info.consumed_count.get(offset, 0))
            for offset in offsets
        ]

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int) -> bool:
        info = self._table.get((topic, group, queue_id))
        return info is not None and info.need_block(attempt_id, self._clock.now_ms())

    def consumed_count(self, topic: str, group: str, queue_id: int, offset: int) -> int:
        info = self._table.get((topic, group, queue_id))
        return info.consumed_count.get(offset, 0) if info is not None else 0

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        with self._lock:
            if self._table.pop((topic, group, queue_id), None) is not None:
                self._changes += 1

    def commit_and_next(
        self, topic: str, group: str, queue_id: int, offset: int, pop_time: int
    ) -> int:
        """Mark ``offset`` acked; the group's offset to commit, ILLEGAL_OFFSET when the
        batch does not hold it, NO_NEED_COMMIT when the ack is of an older batch."""
        info = self._table.get((topic, group, queue_id))
        if info is None:
            return offset + 1
        if not info.offsets:
            return ILLEGAL_OFFSET
        if pop_time != info.pop_time:
            return NO_NEED_COMMIT
        try:
            index = info.offsets.index(offset)
        except ValueError:
            return ILLEGAL_OFFSET
        with self._lock:
            info.commit_bits |= 1 << index
            self._changes += 1
        return info.next_offset()

    def update_next_visible_time(
        self,
        topic: str,
        group: str,
        queue_id: int,
        offset: int,
        pop_time: int,
        next_visible_ms: int,
    ) -> bool:
        """False when the batch of ``pop_time`` is no longer the queue's last."""
        info = self._table.get((topic, group, queue_id))
        if info is None or info.pop_time != pop_time:
            return False
        with self._lock:
            info.next_visible[offset] = next_visible_ms
            self._changes += 1
        return True

    # -- persistence -----------------------------------------------------------------------

    def load(self) -> None:
        raw = self._file.load_with(orjson.loads)
        if not raw:
            return
        table = {}
        for key, value in (raw.get("table") or {}).items():
            topic, group, queue_id = key.rsplit("@", 2)
            table[(topic, group, int(queue_id))] = OrderInfo.from_value(value)
        with self._lock:
            self._table = table

    def persist(self) -> bool:
        with self._lock:
            if self._changes == 0:
                return False
            changes = self._changes
            table = {
                f"{topic}@{group}@{queue_id}": info.to_value()
                for (topic, group, queue_id), info in self._table.items()
            }
        self._file.save({"table": table})
        with self._lock:
            self._changes -= changes
        return True
