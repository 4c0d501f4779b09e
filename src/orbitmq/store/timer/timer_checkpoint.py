"""TimerCheckpoint: ``config/timercheck``, how far the timer store got (RocketMQ 5's
``TimerCheckpoint``, the same 56-byte layout, big-endian longs):

    lastReadTimeMs | lastTimerLogFlushPos | lastTimerQueueOffset | masterTimerQueueOffset |
    dataVersion stateVersion | dataVersion timestamp | dataVersion counter

Every slot before lastReadTimeMs was delivered; every timer-topic message before
lastTimerQueueOffset is in the timer log and wheel (synced before this file is written), or
delivered. One thread writes it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Final

from orbitmq.common.file_system import FileSystem

LAYOUT: Final = struct.Struct(">7q")


@dataclass(slots=True)
class TimerCheckpoint:
    """The four positions (and RocketMQ's data version, kept at zero but for the counter)."""

    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    counter: int = 0

    @classmethod
    def load(cls, path: str) -> TimerCheckpoint:
        """The saved checkpoint; zeros when there is none (or it is short)."""
        try:
            with open(path, "rb") as file:
                data = file.read(LAYOUT.size)
        except FileNotFoundError:
            return cls()
        if len(data) < LAYOUT.size:
            return cls()
        read_ms, flush_pos, queue_offset, master, _, _, counter = LAYOUT.unpack(data)
        return cls(read_ms, flush_pos, queue_offset, master, counter)

    def save(self, path: str, fs: FileSystem, timestamp_ms: int) -> None:
        """Write and sync it in place (56 bytes: one sector, written whole or not at all)."""
        self.counter += 1
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = LAYOUT.pack(
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            0,
            timestamp_ms,
            self.counter,
        )
        fd = fs.open(path, os.O_RDWR | os.O_CREAT)
        try:
            fs.write(fd, data, 0)
            fs.sync(fd)
        finally:
            os.close(fd)
