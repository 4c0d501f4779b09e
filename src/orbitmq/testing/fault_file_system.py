"""A FileSystem that fails on command: a full disk, slow or failing syncs, failing renames, a
chosen usage, and a power loss that drops what was never synced."""

from __future__ import annotations

import errno
import mmap
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
    - ``write_delay_s``: every ``write`` sleeps this long first (a disk so far behind that
      the kernel throttles writers: what holds a commit log append, and its put lock).
    - ``sync_error``: every sync raises EIO.
    - ``write_error``: every write raises EIO (a failing device).
    - ``rename_error``: renames fail with this errno, or not at all when None; only those
      whose source is ``rename_error_path`` when that is set.
    - ``usage_ratio``: reported disk usage instead of the real one.

    With ``track_unsynced`` it also keeps, for every file opened through it, the content its
    last sync made durable (read at each sync, so meant for small test stores). ``crash``
    is the moment the power goes: later syncs make nothing durable, so the store can then
    be shut down (closing its files, giving its lock back) without saving more;
    ``drop_unsynced`` puts every tracked file back to its durable content. Names and sizes
    are kept (the file system's journal holds them); bytes that were never synced, written
    through ``write`` or a mapping alike, come back as they were synced, or as zeros.

    Counters (``opens``, ``allocations``, ``syncs``, ``renames``) let tests see what the
    store did. Thread-safe.
    """

    def __init__(self, inner: FileSystem = OS_FILE_SYSTEM, *, track_unsynced: bool = False):
        self._inner = inner
        self._track_unsynced = track_unsynced
        #: Durable content by path, of every file opened since tracking began.
        self._synced: dict[str, bytes] = {}
        #: Which read of the file its ``_synced`` content is (see ``sync``).
        self._synced_read: dict[str, int] = {}
        self._reads = 0
        self._crashed = False
        self._lock = threading.Lock()
        self.open_error: int | None = None
        self.disk_full = False
        self.sync_delay_s = 0.0
        self.write_delay_s = 0.0
        self.sync_error = False
        self.write_error = False
        self.rename_error: int | None = None
        self.rename_error_path: str | None = None
        self.usage_ratio: float | None = None
        self.renames = 0
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
        key = os.path.realpath(path)
        existed = os.path.isfile(key)
        fd = self._inner.open(path, flags)
        with self._lock:
            self.opens += 1
            if self._track_unsynced and key not in self._synced:
                # What was on disk before this object saw the file counts as durable.
                self._synced[key] = _content(fd) if existed else b""
        return fd

    def map(self, fd: int, length: int) -> mmap.mmap:
        return self._inner.map(fd, length)

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
        if self.write_delay_s:
            threading.Event().wait(self.write_delay_s)
        self._inner.write(fd, data, offset)

    def sync(self, fd: int) -> None:
        self._sync_gate.wait()
        if self.sync_delay_s:
            threading.Event().wait(self.sync_delay_s)
        if self.sync_error:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        if self._crashed:
            return  # the power is off: nothing becomes durable any more
        if not self._track_unsynced:
            self._inner.sync(fd)
            with self._lock:
                self.syncs += 1
            return
        key = os.path.realpath(f"/proc/self/fd/{fd}")
        # Read before the sync: everything read was written before it began, so it is
        # durable once the sync returns (what arrives meanwhile may or may not be). Reads
        # are numbered under the lock, so that of two syncs of one file racing, the later
        # read wins.
        with self._lock:
            content = _content(fd)
            self._reads += 1
            read = self._reads
        self._inner.sync(fd)
        with self._lock:
            self.syncs += 1
            if read > self._synced_read.get(key, 0):
                self._synced[key], self._synced_read[key] = content, read

    def sync_directory(self, path: str) -> None:
        self._inner.sync_directory(path)

    def truncate(self, fd: int, length: int) -> None:
        self._inner.truncate(fd, length)

    def unlink(self, path: str) -> None:
        key = os.path.realpath(path)
        self._inner.unlink(path)
        with self._lock:
            self._synced.pop(key, None)
            self._synced_read.pop(key, None)

    def remove_directory(self, path: str) -> None:
        self._inner.remove_directory(path)

    def rename(self, source: str, target: str) -> None:
        error = self.rename_error
        if error is not None and self.rename_error_path in (None, source):
            raise OSError(error, os.strerror(error), source, None, target)
        source_key, target_key = os.path.realpath(source), os.path.realpath(target)
        self._inner.rename(source, target)
        with self._lock:
            self.renames += 1
            if self._track_unsynced:
                # The durable content moves with the name; the target's old content is gone.
                self._synced.pop(target_key, None)
                self._synced_read.pop(target_key, None)
                if source_key in self._synced:
                    self._synced[target_key] = self._synced.pop(source_key)
                if source_key in self._synced_read:
                    self._synced_read[target_key] = self._synced_read.pop(source_key)

    def crash(self) -> None:
        """From now on syncs make nothing durable (see the class docstring)."""
        self._crashed = True

    def drop_unsynced(self) -> list[str]:
        """Put every tracked file back to its last synced content (zeros where it never
        was), keeping its size: what a power loss leaves. Returns the paths changed. Call
        it with the store stopped or abandoned (its mappings would write again)."""
        if not self._track_unsynced:
            raise RuntimeError("drop_unsynced needs FaultInjectingFileSystem(track_unsynced=True)")
        changed = []
        with self._lock:
            synced = dict(self._synced)
        for path in sorted(synced):
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue
            try:
                current = _content(fd)
                durable = synced[path][: len(current)]
                durable += bytes(len(current) - len(durable))
                if durable != current:
                    os.pwrite(fd, durable, 0)
                    changed.append(path)
            finally:
                os.close(fd)
        return changed

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


def _content(fd: int) -> bytes:
    """The whole file behind ``fd``."""
    size = os.fstat(fd).st_size
    chunks = []
    position = 0
    while position < size:
        chunk = os.pread(fd, size - position, position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)
