"""TimerLog: the append-only file of timer units under ``timerlog/`` (RocketMQ 5's
``TimerLog``), each unit 52 bytes pointing at a message in the commit log.

Unit layout (big-endian, as RocketMQ writes it):

    size 4 | prevPos 8 | magic 4 | currWriteTimeMs 8 | delayedTime 4 | offsetPy 8 |
    sizePy 4 | realTopicHash 4 | reserved 8

``prevPos`` links the units of one wheel slot, newest first (-1 ends the chain). The due
time is ``currWriteTimeMs + delayedTime``. One writer (the timer thread) appends and reads;
not safe to share between threads.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Final

from orbitmq.common.file_system import FileSystem
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)

UNIT: Final = struct.Struct(">iqiqiqiiq")
UNIT_SIZE: Final = UNIT.size  # 52
#: RocketMQ's MAGIC_DEFAULT.
MAGIC_DEFAULT: Final = 1


@dataclass(frozen=True, slots=True)
class TimerUnit:
    """One timer: where its message is in the commit log and when it is due."""

    prev_pos: int
    write_time_ms: int
    delayed_time_ms: int
    offset_py: int
    size_py: int
    topic_hash: int = 0
    magic: int = MAGIC_DEFAULT

    @property
    def due_ms(self) -> int:
        return self.write_time_ms + self.delayed_time_ms

    def pack(self) -> bytes:
        return UNIT.pack(
            UNIT_SIZE,
            self.prev_pos,
            self.magic,
            self.write_time_ms,
            self.delayed_time_ms,
            self.offset_py,
            self.size_py,
            self.topic_hash,
            0,
        )

    @classmethod
    def unpack(cls, data: bytes) -> TimerUnit | None:
        """The unit in ``data``; None for anything but a whole, well-formed unit."""
        if len(data) < UNIT_SIZE:
            return None
        size, prev, magic, write_ms, delayed, offset_py, size_py, topic_hash, _ = UNIT.unpack_from(
            data
        )
        if size != UNIT_SIZE or magic <= 0 or size_py <= 0 or offset_py < 0:
            return None
        return cls(prev, write_ms, delayed, offset_py, size_py, topic_hash, magic)


class TimerLog:
    """Owns ``timerlog/``: appends units, reads them by position, finds its end on load."""

    def __init__(self, store_path: str, file_size: int, fs: FileSystem):
        # Whole units only: a unit never spans two files (RocketMQ pads with a blank one).
        self.file_size = file_size - file_size % UNIT_SIZE
        self.queue = MappedFileQueue(store_path, self.file_size, fs)

    def load(self, flushed_pos: int) -> int:
        """Open the files and find where the units end: from ``flushed_pos`` (what the
        checkpoint says was synced) on, whole units are kept, the first bad one and all
        after it are cut. Returns the end position."""
        queue = self.queue
        queue.load()
        last = queue.last()
        if last is None:
            return 0
        for mapped in queue.mapped_files[:-1]:
            mapped.wrote_position = mapped.flushed_position = self.file_size
        start = flushed_pos - last.file_from_offset
        position = start - start % UNIT_SIZE if 0 <= start <= self.file_size else 0
        chunk = UNIT_SIZE * 4096
        while position < self.file_size:
            data = last.read(position, min(chunk, self.file_size - position))
            whole = 0
            while whole + UNIT_SIZE <= len(data) and TimerUnit.unpack(
                data[whole : whole + UNIT_SIZE]
            ):
                whole += UNIT_SIZE
            position += whole
            if whole < len(data) or not data:
                break
        removed = last.truncate(position, zero_run_limit=UNIT_SIZE)
        if removed:
            log.warning("timer log: cut %d bytes of torn units at %d", removed, position)
        last.wrote_position = last.flushed_position = position
        queue.flushed_where = last.file_from_offset + position
        return self.end

    @property
    def end(self) -> int:
        """The position the next unit is appended at."""
        last = self.queue.last()
        return 0 if last is None else last.file_from_offset + last.wrote_position

    def append(self, unit: TimerUnit) -> int:
        """Append ``unit``; its position. Raises OSError when the file cannot be written."""
        mapped = self.queue.last_or_create(0)
        position = mapped.file_from_offset + mapped.wrote_position
        mapped.write(mapped.wrote_position, unit.pack())
        mapped.wrote_position += UNIT_SIZE
        return position

    def read(self, position: int) -> TimerUnit | None:
        """The unit at ``position``; None if there is none (beyond the end, a torn unit)."""
        if position < 0 or position + UNIT_SIZE > self.end:
            return None
        mapped = self.queue.find_by_offset(position)
        if mapped is None:
            return None
        return TimerUnit.unpack(mapped.read(position - mapped.file_from_offset, UNIT_SIZE))

    def delete_expired(self, min_phy_offset: int) -> int:
        """Delete leading files whose every unit points below ``min_phy_offset`` (their
        messages left the commit log; RocketMQ's ``deleteExpiredFileByOffsetForTimerLog``).
        Units are appended in timer-topic order, so a file's last unit points furthest."""

        def expired(mapped: MappedFile) -> bool:
            position = mapped.wrote_position - UNIT_SIZE
            if position < 0:
                return False
            unit = TimerUnit.unpack(mapped.read(position, UNIT_SIZE))
            return unit is not None and unit.offset_py + unit.size_py <= min_phy_offset

        return self.queue.delete_expired_by_offset(expired)

    def flush(self) -> int:
        """Sync what was appended; the position synced up to."""
        for mapped in self.queue.mapped_files[-2:]:
            mapped.flush(0)
        return self.end

    def shutdown(self) -> None:
        self.flush()
        self.queue.shutdown()
