"""StoreCheckpoint: the store times up to which commit log, consume queues and index are
known to be on disk. One 4 KiB file: physicMsgTimestamp int64 at 0, logicsMsgTimestamp int64
at 8, indexMsgTimestamp int64 at 16 (RocketMQ's layout)."""

from __future__ import annotations

import mmap
import os
import struct
from typing import Final

from orbitmq.store.file_system import FileSystem
from orbitmq.store.mapped_file import OS_PAGE_SIZE

_LAYOUT: Final = struct.Struct(">qqq")


class StoreCheckpoint:
    """Owns the checkpoint file. Setters are plain assignments from the flush threads;
    ``flush`` writes and syncs all three."""

    def __init__(self, path: str, fs: FileSystem):
        self._fs = fs
        os.makedirs(os.path.dirname(path), exist_ok=True)
        existed = os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size < OS_PAGE_SIZE:
            os.ftruncate(self._fd, OS_PAGE_SIZE)
        self._buffer = mmap.mmap(self._fd, OS_PAGE_SIZE)
        physic, logics, index = _LAYOUT.unpack_from(self._buffer, 0) if existed else (0, 0, 0)
        self.physic_msg_timestamp: int = physic
        self.logics_msg_timestamp: int = logics
        self.index_msg_timestamp: int = index

    @property
    def min_timestamp(self) -> int:
        """Where abnormal recovery may start: the older of commit log and consume queue
        times, less 3 s of slack, as RocketMQ computes it."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp, self.index_msg_timestamp)

    def flush(self) -> None:
        _LAYOUT.pack_into(
            self._buffer,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
        )
        self._fs.sync(self._fd)

    def shutdown(self) -> None:
        self.flush()
        self._buffer.close()
        os.close(self._fd)
