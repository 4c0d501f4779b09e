"""A FileSystem that fails on command: a full disk, slow or failing syncs, a chosen usage."""

from __future__ import annotations

import errno
import os
import threading

from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem


class FaultInjectingFileSystem:
    """Wraps a real FileSystem; each fault is a plain attribute tests switch on and off.

    - ``open_error``: opening a file fails with this errno (``errno.EMFILE``: the process ran
      out of descriptors), or not at all when None.
    - ``disk_full``: allocations fail with ENOSPC, and so do writes outside the blocks
      allocated through this object (a write into a hole needs blocks), as on a full disk.
    - ``sync_delay_s``: every sync sleeps this long first (a slow disk).
    - ``sync_error``: every sync raises EIO.
    - ``write_error``: every write raises EIO (a failing device).
    - ``usage_ratio``: reported disk usage instead of the real one.

    Counters (``opens``, ``allocations``, ``syncs``) let tests see what the store did. Thread-safe.
    """

    def __init__(self, inner: FileSystem = OS_FILE_SYSTEM):
        self._inner = inner
        self._lock = threading.Lock()
        self.open_error: int | None = None
        self.disk_full = False
        self.sync_delay_s = 0.0
        self.sync_error = False
        self.write_error = False
        self.usage_ratio: float | None = None
        self.allocations = 0
        self.syncs = 0
        self.opens = 0
        #: Allocated ranges by (device, inode): where a write needs no new blocks.
        self._allocated: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._sync_gate = threading.Event()
        self._sync_gate.set()

    def open(self, path: str, flags: int) -> int:
        error = self.open_error
        if error is not None:
            raise OSError(error, os.strerror(error), path)
        fd = self._inner.open(path, flags)
        with self._lock:
            self.opens += 1
        return fd

    def allocate(self, fd: int, offset: int, length: int) -> None:
        if self.disk_full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._inner.allocate(fd, offset, length)
        with self._lock:
            self.allocations += 1
            ranges = self._allocated.setdefault(_inode(fd), [])
            ranges.append((offset, offset + length))
            ranges.sort()
            merged = [ranges[0]]
            for start, end in ranges[1:]:
                if start <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
                else:
                    merged.append((start, end))
            self._allocated[_inode(fd)] = merged

    def _is_allocated(self, fd: int, offset: int, length: int) -> bool:
        with self._lock:
            ranges = self._allocated.get(_inode(fd), [])
            return any(start <= offset and offset + length <= end for start, end in ranges)

    def write(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
        if self.disk_full and not self._is_allocated(fd, offset, len(data)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.write_error:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._inner.write(fd, data, offset)

    def sync(self, fd: int) -> None:
        self._sync_gate.wait()
        if self.sync_delay_s:
            threading.Event().wait(self.sync_delay_s)
        if self.sync_error:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._inner.sync(fd)
        with self._lock:
            self.syncs += 1

    def hold_syncs(self) -> None:
        """Make every sync wait until ``release_syncs`` (to build up a commit group)."""
        self._sync_gate.clear()

    def release_syncs(self) -> None:
        self._sync_gate.set()

    def disk_usage_ratio(self, path: str) -> float:
        if self.usage_ratio is not None:
            return self.usage_ratio
        return self._inner.disk_usage_ratio(path)


def _inode(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return (stat.st_dev, stat.st_ino)
