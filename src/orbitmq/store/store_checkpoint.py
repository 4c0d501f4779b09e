"""StoreCheckpoint: the store times up to which commit log, consume queues and index are
known to be on disk. One 4 KiB file: physicMsgTimestamp int64 at 0, logicsMsgTimestamp int64
at 8, indexMsgTimestamp int64 at 16 (RocketMQ's layout)."""

from __future__ import annotations

import mmap
import os
import struct
from typing import Final

from orbitmq.common.file_system import FileSystem
from orbitmq.store.mapped_file import OS_PAGE_SIZE

_LAYOUT: Final = struct.Struct(">qqq")


class StoreCheckpoint:
    """Owns the checkpoint file once ``load`` opened it. Setters are plain assignments from
    the flush threads; ``flush`` writes and syncs all three."""

    def __init__(self, path: str, fs: FileSystem):
        self._path = path
        self._fs = fs
        self._fd = -1
        self._buffer: mmap.mmap | None = None
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0

    def load(self) -> None:
        """Open (or create) the file and read the three times."""
        os.makedirs(os.path.dirname(self._path), exist_ok=True)
        existed = os.path.exists(self._path)
        self._fd = self._fs.open(self._path, os.O_RDWR | os.O_CREAT)
        if os.fstat(self._fd).st_size < OS_PAGE_SIZE:
            # Blocks, not a hole: the page is written through the mapping, where a full
            # disk would be a SIGBUS.
            self._fs.allocate(self._fd, 0, OS_PAGE_SIZE)
        self._buffer = self._fs.map(self._fd, OS_PAGE_SIZE)
        if existed:
            times = _LAYOUT.unpack_from(self._buffer, 0)
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = times

    @property
    def min_timestamp(self) -> int:
        """Where abnormal recovery may start: the older of commit log and consume queue
        times, less 3 s of slack, as RocketMQ computes it."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        return min(self.min_timestamp, self.index_msg_timestamp)

    def flush(self) -> None:
        if self._buffer is None:
            return  # never loaded: nothing to write to
        _LAYOUT.pack_into(
            self._buffer,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
        )
        self._fs.sync(self._fd)

    def shutdown(self) -> None:
        if self._buffer is None:
            return
        self.flush()
        self._buffer.close()
        self._buffer = None
        os.close(self._fd)
