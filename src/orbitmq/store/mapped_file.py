"""MappedFile: one fixed-size, memory-mapped segment file of a commit log, consume queue or
index."""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from orbitmq.common.file_system import FileSystem
from orbitmq.store.errors import StoreError
from orbitmq.store.mapped_file_cache import MappedFileCache
from orbitmq.store.page_prefault import populate_write
from orbitmq.store.page_residency import is_resident, mapping_address, resident_pages

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
#: How far ahead of its writer a consume-queue or index file reserves disk blocks, at most.
ALLOCATION_CHUNK = 128 * 1024


#: Truncation reads what it may zero, and reservations write zeros, in chunks of this size.
_ZERO_CHUNK = 1 << 20
_ZEROS = bytes(_ZERO_CHUNK)
_ZEROS_VIEW = memoryview(_ZEROS)


def _data_length(chunk: bytes) -> int:
    """The length of ``chunk`` up to its last non-zero byte."""
    if chunk == _ZEROS[: len(chunk)]:  # the usual case, one memcmp instead of a scan
        return 0
    return len(chunk.rstrip(b"\0"))


@dataclass(frozen=True, slots=True)
class Allocation:
    """How a file gets its disk blocks: all when it is created (``preallocate``,
    warmMapedFileEnable), or ahead of its writer in chunks that grow with the file (a page
    first, then as much as it holds, at most ``max_chunk``), so that it takes disk as data
    arrives. ``zero_fill`` reserves by writing zeros through the file, for files written
    through the mapping: the first store through a mapping into reserved-but-unwritten
    blocks waits for the file system's journal (1 to 13 ms measured on ext4, per new file);
    without it, chunks are reserved with fallocate (files written with pwrite)."""

    preallocate: bool = False
    max_chunk: int = ALLOCATION_CHUNK
    zero_fill: bool = True


#: Every block at creation: commit log and index files under warmMapedFileEnable.
PREALLOCATED: Final = Allocation(preallocate=True)


def offset_to_file_name(offset: int) -> str:
    """RocketMQ's file name for a segment starting at ``offset``: 20 zero-padded digits."""
    return f"{offset:020d}"


class MappedFile:
    """Owns one segment: its mapping, its descriptor and its wrote/flushed positions.

    One writer appends (the owner of the queue's put lock); readers on other threads may
    take views through ``select`` at any time; ``flush`` may run on a flush thread.
    Positions are plain ints: the bytes of a record are written before ``wrote_position``
    moves past them, so a reader never sees a half-written record below it.

    A file given a ``MappedFileCache`` is opened on first use and may be closed by the
    cache when others are used more recently (a broker with many queues would otherwise
    hold descriptors and a mapping per file). Closing drops the file's references only:
    a thread that took ``buffer`` or a view just before goes on with a mapping that stays
    valid until it lets go, and what it writes lands in the same page cache. Such a file
    keeps no descriptor of its own: syncs, reservations and reads through the file open one
    for the call.
    """

    def __init__(
        self,
        path: str,
        file_size: int,
        fs: FileSystem,
        *,
        create: bool,
        allocation: Allocation = PREALLOCATED,
        cache: MappedFileCache | None = None,
    ):
        self.file_name = path
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(path))
        self._fs = fs
        self._allocation = allocation
        self._cache = cache
        self._lock = threading.Lock()
        self._fd = -1
        self._buffer: mmap.mmap | None = None
        self._view: memoryview | None = None
        #: Where the mapping starts in this process (0: not mapped), for ``is_resident``.
        self._address = 0
        #: Set on every use; the cache's clock hand clears it (second chance).
        self.referenced = True
        #: The cache's store count at this file's last ``store`` (-1: none yet).
        self._last_store = -1
        if create:
            self._create(allocation.preallocate)
        else:
            actual = os.stat(path).st_size
            if actual != file_size:
                raise StoreError(
                    f"{path} is {actual} bytes, not the configured {file_size}; "
                    "check the mapped file size settings"
                )
            if cache is None:
                self._open()
        self.wrote_position = 0
        self.flushed_position = 0
        #: Bytes from the start with disk blocks reserved; writes through the mapping stay
        #: below it. -1: not known yet (a file loaded from disk, see ``reserve``).
        self.allocated = file_size if allocation.preallocate else (0 if create else -1)
        #: Store timestamp of the last message written here, for the checkpoint.
        self.store_timestamp = 0
        self.available = True

    def _create(self, preallocate: bool) -> None:
        fd = self._fs.open(self.file_name, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        try:
            if preallocate:
                self._fs.allocate(fd, 0, self.file_size)
            else:
                self._fs.truncate(fd, self.file_size)
            buffer = self._fs.map(fd, self.file_size)
        except BaseException:
            os.close(fd)
            self._fs.unlink(self.file_name)
            raise
        self._adopt(fd, buffer)

    def _open(self) -> mmap.mmap:
        fd = self._fs.open(self.file_name, os.O_RDWR)
        try:
            buffer = self._fs.map(fd, self.file_size)
        except BaseException:
            os.close(fd)
            raise
        return self._adopt(fd, buffer)

    def _adopt(self, fd: int, buffer: mmap.mmap) -> mmap.mmap:
        """Keep ``buffer``, the mapping of ``fd``, and take ``fd`` over. A file the cache
        manages keeps no descriptor but the mapping's own (CPython's mmap holds a duplicate),
        so that it costs one while open; what needs one (syncs, reservations) opens one for
        the call."""
        if self._cache is None:
            self._fd = fd
        else:
            os.close(fd)
        self._buffer, self._view = buffer, memoryview(buffer)
        self._address = mapping_address(buffer)
        if self._cache is not None:
            self._cache.opened(self)
        return buffer

    def _reopen(self) -> mmap.mmap:
        with self._lock:
            buffer = self._buffer
            if buffer is not None:  # another thread opened it first
                return buffer
            if not self.available:
                raise StoreError(f"{self.file_name} is closed")
            return self._open()

    def __repr__(self) -> str:
        return f"MappedFile({self.file_name!r}, wrote={self.wrote_position})"

    @property
    def buffer(self) -> mmap.mmap:
        """The mapping (opened again if the cache closed it). Raises OSError when the file
        cannot be opened (EMFILE, ENOENT)."""
        self.referenced = True
        buffer = self._buffer
        return buffer if buffer is not None else self._reopen()

    @property
    def is_open(self) -> bool:
        return self._buffer is not None

    @property
    def free_bytes(self) -> int:
        return self.file_size - self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @contextlib.contextmanager
    def _descriptor(self) -> Iterator[int | None]:
        """A descriptor of the file for one call (syncs and allocations act on the file,
        whichever descriptor); None once the file is closed for good. No lock is held
        while the caller uses it: appends go on during a sync.

        A file without a cache yields its own descriptor, which lives until ``close``; a
        file the cache manages (which keeps none) one opened for the call."""
        if self._cache is None:
            yield self._fd if self.available else None
            return
        with self._lock:
            fd = self._fs.open(self.file_name, os.O_RDWR) if self.available else None
        if fd is None:
            yield None
            return
        try:
            yield fd
        finally:
            os.close(fd)

    def reserve(self, end: int) -> None:
        """Give bytes up to ``end`` their disk blocks before they are written (see
        ``Allocation``). A store through a mapping into a hole on a full disk kills the
        process with SIGBUS, and a write into one allocates blocks piecemeal; this raises
        OSError (ENOSPC) instead, and reserves ahead."""
        allocated = self.allocated
        if end <= allocated:
            return
        if allocated < 0:
            # Loaded from disk: what it holds ends at its last data, or where it was written
            # (nothing below that is ever zeroed).
            written = -(-self.wrote_position // OS_PAGE_SIZE) * OS_PAGE_SIZE
            allocated = self.allocated = min(max(self.data_end(), written), self.file_size)
            if end <= allocated:
                return
        chunk = min(self._allocation.max_chunk, max(OS_PAGE_SIZE, allocated))
        new_end = min(max(end, allocated + chunk), self.file_size)
        # Never over what the writer wrote (a unit may have ended past a reservation).
        first = max(allocated, self.wrote_position)
        with self._descriptor() as fd:
            if fd is None:
                raise StoreError(f"{self.file_name} is closed")
            if not self._allocation.zero_fill:
                self._fs.allocate(fd, first, new_end - first)
            else:
                for start in range(first, new_end, _ZERO_CHUNK):
                    self._fs.write(fd, _ZEROS_VIEW[: min(_ZERO_CHUNK, new_end - start)], start)
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

    def write(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``position`` through the file, not the mapping: an append of
        fresh pages through the mapping takes a page fault per page, and another after each
        sync write-protects them again; reads through the mapping see the bytes at once (one
        page cache). A write into a hole of a sparse file allocates its blocks and fails
        with ENOSPC on a full disk, where a store through the mapping would kill the process
        with SIGBUS. Raises OSError."""
        if self._cache is None and self.available:
            # Every commit log append: its own descriptor, without the context manager's
            # microsecond.
            self._fs.write(self._fd, data, position)
            return
        with self._descriptor() as fd:
            if fd is None:
                raise StoreError(f"{self.file_name} is closed")
            self._fs.write(fd, data, position)

    def store(self, position: int, data: bytes) -> None:
        """Copy ``data`` (a few bytes) to ``position``: through the mapping while the file is
        open; while the cache has it closed, through the file (one ``pwrite``) unless it is
        written often enough to deserve its mapping back (``worth_reopening``). A writer
        that reopened a closed file for every 20-byte unit would pay an open, an mmap and a
        write fault, and evict another file whose munmap costs as much: with more queues
        written round robin than the cache holds, that was every unit. Raises OSError."""
        buffer = self._buffer
        cache = self._cache
        if cache is not None:
            now = cache.store_tick()
            last, self._last_store = self._last_store, now
            if buffer is None and cache.worth_reopening(last, now):
                buffer = self._reopen()
        if buffer is not None:
            self.referenced = True
            buffer[position : position + len(data)] = data
        else:
            self.write(position, data)

    def read(self, position: int, size: int) -> bytes:
        """``size`` bytes from ``position``, read through the file (pread), not the mapping:
        through a mapping, the first touch of pages the file system holds no data for
        (holes, reserved blocks) costs a page fault each, about a millisecond for the 128 KiB
        a consume-queue file reserves ahead; recovery reads the end of every queue once
        and would pay it for each. Raises OSError."""
        with self._descriptor() as fd:
            if fd is None:
                raise StoreError(f"{self.file_name} is closed")
            return os.pread(fd, size, position)

    def select(self, position: int, size: int | None = None) -> memoryview:
        """A zero-copy view of ``size`` bytes from ``position`` (to the wrote position if None)."""
        self.referenced = True
        view = self._view
        if view is None:
            view = memoryview(self._reopen())
        end = self.wrote_position if size is None else min(position + size, self.file_size)
        return view[position:end]

    def is_resident(self, position: int, size: int) -> bool:
        """Whether ``size`` bytes from ``position`` are in the page cache (mincore), so that
        reading them through ``select``'s view takes no disk read. A file not mapped now
        answers False (reading it would map it, and may fault)."""
        address = self._address
        return address != 0 and is_resident(address, position, size)

    def populate(self, position: int, size: int) -> bool:
        """Fault in, writable, the pages of ``size`` bytes from ``position`` (``populate_write``)
        so that stores through the mapping there take no page fault; False where that could
        not be done. Any thread, at any time: no byte changes."""
        return populate_write(self._address, position, size)

    def resident_pages(self) -> bytes | None:
        """The whole file's page residency (``page_residency.resident_pages``); None when
        the file is not mapped now or the kernel cannot tell."""
        return resident_pages(self._address, self.file_size)

    def set_read_mode(self, advice: int) -> None:
        """Advise the kernel how the mapping is read (``MADV_NORMAL``: read-ahead,
        ``MADV_RANDOM``: none); a closed file is left alone. Raises OSError."""
        with self._lock:
            if self.available and self._buffer is not None:
                self._buffer.madvise(advice)

    def data_end(self) -> int:
        """Where the file's written bytes end at most: the end of its last run of data as the
        file system reports it (SEEK_DATA / SEEK_HOLE; reserved but unwritten blocks count as
        holes on ext4 and xfs), page-rounded; the whole file where it cannot tell.

        Recovery reads up to here instead of a mostly empty file to its end."""
        with self._descriptor() as fd:
            if fd is None:
                return self.file_size
            end = 0
            position = 0
            try:
                while position < self.file_size:
                    start = os.lseek(fd, position, os.SEEK_DATA)
                    end = position = os.lseek(fd, start, os.SEEK_HOLE)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no data after ``position``
                    return self.file_size
            return min(end, self.file_size)

    def is_able_to_flush(self, least_pages: int) -> bool:
        flushed, wrote = self.flushed_position, self.wrote_position
        if wrote <= flushed:
            return False
        if self.is_full() or least_pages <= 0:
            return True
        return wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE >= least_pages

    def flush(self, least_pages: int = 0) -> int:
        """Sync once ``least_pages`` dirty pages wait (any, if 0); returns the flushed position.

        A file the cache closed is synced through a descriptor of its own: its pages stayed
        dirty in the page cache, which a sync through any descriptor writes."""
        if self.is_able_to_flush(least_pages):
            target = self.wrote_position
            if self._cache is None:
                with self._lock:  # not while ``close`` gives the descriptor back
                    if self.available:
                        self._fs.sync(self._fd)
                        self.flushed_position = target
            else:
                with self._descriptor() as fd:
                    if fd is not None:
                        self._fs.sync(fd)
                        self.flushed_position = target
        return self.flushed_position

    def truncate(self, position: int, zero_run_limit: int | None = None) -> int:
        """Zero everything from ``position`` on; positions move back to it.

        Returns how many bytes from ``position`` on were not zero (what the truncation
        removed). The search for data ends where the file system's data ends; files are
        written front to back without gaps, so with ``zero_run_limit`` it also stops after
        that many zero bytes in a row instead of reading a large preallocated file to its end.
        """
        last_data = position
        stop = self.data_end()  # past it the file system holds no data: nothing to zero
        for start in range(position, stop, _ZERO_CHUNK):
            end = min(start + _ZERO_CHUNK, stop)
            kept = _data_length(self.read(start, end - start))
            if kept:
                last_data = start + kept
            elif zero_run_limit is not None and end - last_data > zero_run_limit:
                break
        if last_data > position:
            self.write(position, bytes(last_data - position))
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
            if self.available and self._buffer is not None:
                self._buffer.madvise(mmap.MADV_DONTNEED)

    def last_modified_ms(self) -> int:
        return os.stat(self.file_name).st_mtime_ns // 1_000_000

    def park(self) -> bool:
        """Drop the mapping (and with it its descriptor), keeping the file usable (it opens
        again on the next use); False when the file is busy or already closed. The cache
        calls this; it never waits for the file's lock."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._buffer is None:
                return False
            # No munmap here: a thread may hold the mapping; it goes with the last holder.
            self._buffer = self._view = None
            self._address = 0
            return True
        finally:
            self._lock.release()

    def close(self) -> None:
        """Unmap and close, keeping the file. Views still held by readers stay valid."""
        with self._lock:
            if not self.available:
                return
            self.available = False
            buffer, view, fd = self._buffer, self._view, self._fd
            self._buffer = self._view = None
            self._address = 0
            self._fd = -1
            if view is not None:
                view.release()
            if buffer is not None:
                try:
                    buffer.close()
                except BufferError:
                    # A reader still holds a view; the mapping goes when the last view does.
                    log.debug("%s closed while a reader held a view", self.file_name)
            if fd >= 0:
                os.close(fd)
        if self._cache is not None:
            self._cache.closed(self)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self._fs.unlink(self.file_name)
