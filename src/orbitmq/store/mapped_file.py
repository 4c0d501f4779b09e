"""MappedFile: one fixed-size, memory-mapped segment file of a commit log or consume queue."""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import threading

from orbitmq.store.errors import StoreError
from orbitmq.store.file_system import FileSystem

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
#: How far ahead of the writer a file that is not preallocated reserves disk blocks.
ALLOCATION_CHUNK = 128 * 1024


def offset_to_file_name(offset: int) -> str:
    """RocketMQ's file name for a segment starting at ``offset``: 20 zero-padded digits."""
    return f"{offset:020d}"


class MappedFile:
    """Owns one segment: its descriptor, its mapping and its wrote/flushed positions.

    One writer appends (the owner of the queue's put lock); readers on other threads may
    take views through ``select`` at any time; ``flush`` may run on a flush thread.
    Positions are plain ints: the bytes of a record are written before ``wrote_position``
    moves past them, so a reader never sees a half-written record below it.
    """

    def __init__(
        self,
        path: str,
        file_size: int,
        fs: FileSystem,
        *,
        create: bool,
        preallocate: bool = True,
    ):
        self.file_name = path
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(path))
        self._fs = fs
        self._lock = threading.Lock()
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        try:
            if create and preallocate:
                fs.allocate(fd, 0, file_size)
            elif create:
                os.ftruncate(fd, file_size)
            else:
                actual = os.fstat(fd).st_size
                if actual != file_size:
                    raise StoreError(
                        f"{path} is {actual} bytes, not the configured {file_size}; "
                        "check the mapped file size settings"
                    )
            self.buffer = mmap.mmap(fd, file_size)
        except BaseException:
            os.close(fd)
            if create:
                os.unlink(path)
            raise
        self._fd = fd
        self._view = memoryview(self.buffer)
        self.wrote_position = 0
        self.flushed_position = 0
        #: Bytes from the start with disk blocks reserved; writes stay below it.
        self.allocated = file_size if preallocate else 0
        #: Store timestamp of the last message written here, for the checkpoint.
        self.store_timestamp = 0
        self.available = True

    def __repr__(self) -> str:
        return f"MappedFile({self.file_name!r}, wrote={self.wrote_position})"

    @property
    def free_bytes(self) -> int:
        return self.file_size - self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def reserve(self, end: int) -> None:
        """Reserve blocks up to ``end`` (and a chunk beyond) before writing there.

        Files that are not preallocated (consume queues: thousands of them, mostly short)
        grow their reservation in chunks; raises OSError when the disk is full.
        """
        if end <= self.allocated:
            return
        new_end = min(max(end, self.allocated + ALLOCATION_CHUNK), self.file_size)
        self._fs.allocate(self._fd, self.allocated, new_end - self.allocated)
        self.allocated = new_end

    def append(self, data: bytes | memoryview) -> bool:
        """Copy ``data`` at the wrote position; False when it does not fit."""
        start = self.wrote_position
        end = start + len(data)
        if end > self.file_size:
            return False
        self.reserve(end)
        self.buffer[start:end] = data
        self.wrote_position = end
        return True

    def write(self, position: int, data: bytes | bytearray) -> None:
        """Write ``data`` at ``position`` through the file, not the mapping: an append of
        fresh pages through the mapping takes a page fault per page, and another after each
        sync write-protects them again; reads through the mapping see the bytes at once (one
        page cache). Raises OSError."""
        self._fs.write(self._fd, data, position)

    def select(self, position: int, size: int | None = None) -> memoryview:
        """A zero-copy view of ``size`` bytes from ``position`` (to the wrote position if None)."""
        end = self.wrote_position if size is None else min(position + size, self.file_size)
        return self._view[position:end]

    def is_able_to_flush(self, least_pages: int) -> bool:
        flushed, wrote = self.flushed_position, self.wrote_position
        if wrote <= flushed:
            return False
        if self.is_full() or least_pages <= 0:
            return True
        return wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE >= least_pages

    def flush(self, least_pages: int = 0) -> int:
        """Sync once ``least_pages`` dirty pages wait (any, if 0); returns the flushed position."""
        if self.is_able_to_flush(least_pages):
            target = self.wrote_position
            with self._lock:
                if self.available:
                    self._fs.sync(self._fd)
                    self.flushed_position = target
        return self.flushed_position

    def truncate(self, position: int, zero_run_limit: int | None = None) -> int:
        """Zero everything from ``position`` on; positions move back to it.

        Returns how many bytes from ``position`` on were not zero (what the truncation
        removed). Files are written front to back without gaps, so with ``zero_run_limit``
        the search for data stops after that many zero bytes in a row instead of reading a
        large preallocated file to its end.
        """
        last_data = position
        chunk = 1 << 20
        for start in range(position, self.file_size, chunk):
            end = min(start + chunk, self.file_size)
            kept = len(self.buffer[start:end].rstrip(b"\0"))
            if kept:
                last_data = start + kept
            elif zero_run_limit is not None and end - last_data > zero_run_limit:
                break
        if last_data > position:
            self.buffer[position:last_data] = bytes(last_data - position)
        self.wrote_position = min(self.wrote_position, position)
        self.flushed_position = min(self.flushed_position, position)
        return last_data - position

    def release_pages(self) -> None:
        """Drop this mapping's pages from the process's resident set (``MADV_DONTNEED``).

        Nothing is lost: the page cache keeps the pages, dirty ones included (their dirty
        bit moves to the page cache and a flush still writes them), and the next access
        through the mapping maps them again.
        """
        with self._lock:
            if self.available:
                self.buffer.madvise(mmap.MADV_DONTNEED)

    def last_modified_ms(self) -> int:
        return os.stat(self.file_name).st_mtime_ns // 1_000_000

    def close(self) -> None:
        """Unmap and close, keeping the file. Views still held by readers stay valid."""
        with self._lock:
            if not self.available:
                return
            self.available = False
            self._view.release()
            try:
                self.buffer.close()
            except BufferError:
                # A reader still holds a view; the mapping goes when the last view does.
                log.debug("%s closed while a reader held a view", self.file_name)
            os.close(self._fd)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.file_name)
