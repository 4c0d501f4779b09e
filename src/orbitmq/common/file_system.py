"""The file-system seam: opening, mapping, allocating, writing, syncing, truncating,
unlinking and renaming files, removing empty directories, and disk usage.

The store and the config files call these instead of ``os`` directly so tests can inject a
full disk, a slow sync, a failing rename or a power loss (unsynced data dropped) without a
special mount. Closing a descriptor and reading stay plain ``os`` calls: no fault of theirs
matters to what is kept.
"""

from __future__ import annotations

import mmap
import os
import shutil
from typing import Protocol


class FileSystem(Protocol):
    """The file-system operations whose failures the store and the config files must
    survive."""

    def open(self, path: str, flags: int) -> int:
        """A descriptor of ``path`` (``os.open`` flags, mode 0644 for a new file); raises
        OSError (EMFILE when the process has no descriptor left)."""
        ...

    def map(self, fd: int, length: int) -> mmap.mmap:
        """A shared read-write mapping of the first ``length`` bytes of ``fd``'s file."""
        ...

    def allocate(self, fd: int, offset: int, length: int) -> None:
        """Reserve disk blocks for ``length`` bytes at ``offset``, so that later writes
        through a mapping there cannot fail."""
        ...

    def write(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
        """Write all of ``data`` at ``offset`` of the file (its page cache, which mappings of
        the file share); raises OSError when the device refuses it."""
        ...

    def sync(self, fd: int) -> None:
        """Make the file's data durable."""
        ...

    def sync_directory(self, path: str) -> None:
        """Make the names in directory ``path`` durable (after a rename or a creation)."""
        ...

    def truncate(self, fd: int, length: int) -> None:
        """Set the file's size to ``length`` (a hole when it grows)."""
        ...

    def unlink(self, path: str) -> None:
        """Delete ``path``; raises FileNotFoundError when it does not exist."""
        ...

    def rename(self, source: str, target: str) -> None:
        """Move ``source`` to ``target``, replacing it atomically (``os.replace``)."""
        ...

    def remove_directory(self, path: str) -> None:
        """Delete the empty directory ``path``; raises OSError when it is not empty."""
        ...

    def disk_usage_ratio(self, path: str) -> float:
        """Used space of the file system holding ``path``, 0.0 to 1.0."""
        ...


class OsFileSystem:
    """The real file system. Stateless, safe from any thread."""

    def open(self, path: str, flags: int) -> int:
        return os.open(path, flags, 0o644)

    def map(self, fd: int, length: int) -> mmap.mmap:
        return mmap.mmap(fd, length)

    def allocate(self, fd: int, offset: int, length: int) -> None:
        # Blocks really reserved: a write through the mapping into a sparse hole on a full
        # disk would kill the process with SIGBUS instead of failing cleanly here.
        os.posix_fallocate(fd, offset, length)

    def write(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, offset)
            view, offset = view[written:], offset + written

    def sync(self, fd: int) -> None:
        os.fdatasync(fd)

    def sync_directory(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def truncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def rename(self, source: str, target: str) -> None:
        os.replace(source, target)

    def remove_directory(self, path: str) -> None:
        os.rmdir(path)

    def disk_usage_ratio(self, path: str) -> float:
        # A store that has not stored a message yet has no commit log directory; as
        # RocketMQ's getDiskPartitionSpaceUsedPercent, make it rather than fail each round.
        os.makedirs(path, exist_ok=True)
        usage = shutil.disk_usage(path)
        return usage.used / usage.total if usage.total else 0.0


OS_FILE_SYSTEM = OsFileSystem()
