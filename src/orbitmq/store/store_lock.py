"""StoreLock: one process per store directory.

RocketMQ keeps a ``lock`` file in the store root and takes a POSIX record lock on its first
byte before it starts; a second broker on the same directory stops with "Lock failed, MQ
already started". The lock here is the same lock on the same byte (Java's
``FileChannel.tryLock`` is ``fcntl(F_SETLK)`` on Linux), so an OrbitMQ broker and a RocketMQ
broker also keep each other out of one directory. The kernel drops the lock with its
process, so a lock left by kill -9 never blocks the next start.

POSIX record locks belong to the process, not to the descriptor: a second lock by the same
process succeeds, and closing *any* descriptor of the file drops the lock. A table of the
lock files this process holds answers for the process itself, before any descriptor of a
held lock file is opened.
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import threading
from typing import Final

from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.store.errors import StoreError

#: RocketMQ's name for the file (StorePathConfigHelper.getLockFile).
LOCK_FILE_NAME: Final = "lock"

# ``struct flock`` on Linux (l_type, l_whence, l_start, l_len, l_pid), native alignment.
_FLOCK: Final = struct.Struct("hhqqi")

# The lock files this process holds, by (device, inode): the kernel's answer for another
# process, kept for this one (see the module docstring). Process-wide by nature.
_held: dict[tuple[int, int], str] = {}
_held_guard = threading.Lock()


class StoreLockedError(StoreError):
    """Another process (or another store of this process) holds the store directory."""

    def __init__(self, root: str, holder_pid: int | None):
        self.root = root
        self.holder_pid = holder_pid
        holder = f"process {holder_pid}" if holder_pid else "another process"
        super().__init__(
            f"the store {root} is in use by {holder} (Lock failed, MQ already started): "
            "stop it first, or give this one another data directory (storePathRootDir)"
        )


def lock_file_path(root: str) -> str:
    return os.path.join(root, LOCK_FILE_NAME)


class StoreLock:
    """Owns the lock of one store root while held: ``acquire`` takes it or raises
    ``StoreLockedError`` (changing nothing in the directory but creating an empty lock file
    where there was none), ``release`` gives it back. Safe from any thread; one acquire per
    object at a time."""

    def __init__(self, root: str, fs: FileSystem = OS_FILE_SYSTEM):
        self.root = root
        self._fs = fs
        self.path = lock_file_path(root)
        self._fd: int | None = None
        self._key: tuple[int, int] | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        os.makedirs(self.root, exist_ok=True)
        with _held_guard:
            key = _key_of(self.path)
            if key is not None and key in _held:
                raise StoreLockedError(self.root, os.getpid())
            fd = self._fs.open(self.path, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
            except OSError:
                pid = _holder_pid(fd)
                os.close(fd)  # holds no lock of ours: dropping it drops nothing
                raise StoreLockedError(self.root, pid) from None
            stat = os.fstat(fd)
            self._key = (stat.st_dev, stat.st_ino)
            _held[self._key] = self.root
            self._fd = fd
        # The holder's pid, for people and for ``orbitmq stop`` on systems without F_GETLK.
        self._fs.truncate(fd, 0)
        self._fs.write(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        with _held_guard:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            if self._key is not None:
                _held.pop(self._key, None)
            os.close(fd)  # closing the descriptor releases the record lock


def store_holder_pid(root: str) -> int | None:
    """The pid of the process that holds the store at ``root``; None when it is free."""
    path = lock_file_path(root)
    with _held_guard:
        key = _key_of(path)
        if key is None:
            return None
        if key in _held:
            return os.getpid()
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            if sys.platform == "linux":
                return _locker_pid(fd)
            try:  # no portable F_GETLK layout elsewhere: try the lock itself
                fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)
            except OSError:
                return _pid_in_file(fd)
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)
            return None
        finally:
            os.close(fd)  # this process holds no lock on the file (checked above)


def _key_of(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino)


def _holder_pid(fd: int) -> int | None:
    if sys.platform == "linux":
        pid = _locker_pid(fd)
        if pid is not None:
            return pid
    return _pid_in_file(fd)


def _locker_pid(fd: int) -> int | None:
    """The pid of the process holding a write lock on byte 0 (F_GETLK), if any."""
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    lock_type, _whence, _start, _length, pid = _FLOCK.unpack(answer)
    return pid if lock_type != fcntl.F_UNLCK and pid > 0 else None


def _pid_in_file(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
