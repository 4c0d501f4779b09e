"""MappedFileQueue: the ordered segment files of one commit log or consume queue."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from orbitmq.common.file_system import FileSystem
from orbitmq.store.mapped_file import (
    PREALLOCATED,
    Allocation,
    MappedFile,
    offset_to_file_name,
)
from orbitmq.store.mapped_file_cache import MappedFileCache

log = logging.getLogger(__name__)


class MappedFileQueue:
    """Owns the segment files of one directory, named by their start offsets.

    The list of files is replaced, never mutated, so readers on other threads can iterate a
    snapshot while the writer adds or retention removes files.
    """

    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        fs: FileSystem,
        zero_run_limit: int | None = None,
        allocation: Allocation = PREALLOCATED,
        cache: MappedFileCache | None = None,
    ):
        self.store_path = store_path
        #: Bounds the open files of every queue that shares it; None keeps them open.
        self.cache = cache
        #: Longest run of zero bytes a record can hold; bounds the search for a torn tail.
        self.zero_run_limit = zero_run_limit
        self.allocation = allocation
        self.mapped_file_size = mapped_file_size
        self._fs = fs
        self.mapped_files: list[MappedFile] = []
        self.flushed_where = 0
        #: How the files' mappings are read (``MappedFile.set_read_mode``), applied to every
        #: file loaded or created; None leaves the kernel's default (read-ahead).
        self.read_mode: int | None = None

    def load(self) -> None:
        """Open every segment file of the directory; sizes must match the configuration."""
        if not os.path.isdir(self.store_path):
            return
        names = sorted(n for n in os.listdir(self.store_path) if n.isdigit() and len(n) == 20)
        if names and self._is_unfinished_creation(os.path.join(self.store_path, names[-1])):
            log.warning("removing %s: its creation was cut short", names[-1])
            self._fs.unlink(os.path.join(self.store_path, names.pop()))
        files = []
        for name in names:
            mapped = MappedFile(
                os.path.join(self.store_path, name),
                self.mapped_file_size,
                self._fs,
                create=False,
                allocation=self.allocation,
                cache=self.cache,
            )
            mapped.wrote_position = mapped.flushed_position = self.mapped_file_size
            if self.read_mode is not None:
                mapped.set_read_mode(self.read_mode)
            files.append(mapped)
        self.mapped_files = files

    def _is_unfinished_creation(self, path: str) -> bool:
        """A last file shorter than configured and holding only zeros: the process died
        between creating it and reserving its space, before anything was written."""
        size = os.path.getsize(path)
        if size >= self.mapped_file_size:
            return False
        fd = self._fs.open(path, os.O_RDONLY)
        try:
            for position in range(0, size, 1 << 20):
                if os.pread(fd, 1 << 20, position).strip(b"\0"):
                    return False
        finally:
            os.close(fd)
        return True

    def first(self) -> MappedFile | None:
        files = self.mapped_files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self.mapped_files
        return files[-1] if files else None

    def last_or_create(self, start_offset: int = 0) -> MappedFile:
        """The last file if it has room, else a new one after it (or at ``start_offset``).

        Raises OSError when the file cannot be created (full disk, permissions).
        """
        last = self.last()
        if last is not None and not last.is_full():
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        else:
            create_offset = last.file_from_offset + self.mapped_file_size
        os.makedirs(self.store_path, exist_ok=True)
        path = os.path.join(self.store_path, offset_to_file_name(create_offset))
        mapped = MappedFile(
            path,
            self.mapped_file_size,
            self._fs,
            create=True,
            allocation=self.allocation,
            cache=self.cache,
        )
        if last is None:
            self.flushed_where = create_offset
        if self.read_mode is not None:
            mapped.set_read_mode(self.read_mode)
        self.mapped_files = [*self.mapped_files, mapped]
        return mapped

    def set_read_mode(self, mode: int) -> None:
        """Advise every file, and the files created from now on, ``mode`` (RocketMQ's
        scanFileAndSetReadMode). Raises OSError."""
        self.read_mode = mode
        for mapped in self.mapped_files:
            mapped.set_read_mode(mode)

    def find_by_offset(
        self, offset: int, return_first_on_not_found: bool = False
    ) -> MappedFile | None:
        """The file holding physical ``offset``."""
        files = self.mapped_files
        if not files:
            return None
        first = files[0]
        index = (offset - first.file_from_offset) // self.mapped_file_size
        if 0 <= index < len(files):
            candidate = files[index]
            if (
                candidate.file_from_offset
                <= offset
                < candidate.file_from_offset + self.mapped_file_size
            ):
                return candidate
        return first if return_first_on_not_found else None

    @property
    def min_offset(self) -> int:
        first = self.first()
        return first.file_from_offset if first is not None else 0

    @property
    def max_offset(self) -> int:
        """The offset one past the last written byte."""
        files = self.mapped_files  # read once: appends replace the list (asked per put)
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.wrote_position

    def flush(self, least_pages: int) -> bool:
        """Flush from the flushed offset on; True when nothing was left to flush."""
        before = self.flushed_where
        for mapped in self.mapped_files:
            end = mapped.file_from_offset + self.mapped_file_size
            if end <= self.flushed_where:
                continue
            flushed = mapped.flush(least_pages)
            self.flushed_where = mapped.file_from_offset + flushed
            if flushed < mapped.file_size:
                break
        return self.flushed_where == before

    def truncate_dirty_files(self, offset: int) -> int:
        """Remove every byte at or past ``offset``; returns how many non-zero bytes went."""
        removed = 0
        kept: list[MappedFile] = []
        for mapped in self.mapped_files:
            end = mapped.file_from_offset + self.mapped_file_size
            if end <= offset:
                kept.append(mapped)
            elif mapped.file_from_offset <= offset:
                removed += mapped.truncate(offset - mapped.file_from_offset, self.zero_run_limit)
                kept.append(mapped)
            else:
                removed += mapped.truncate(0, self.zero_run_limit)
                mapped.destroy()
        self.mapped_files = kept
        self.flushed_where = min(self.flushed_where, offset)
        return removed

    def delete_files(self, doomed: list[MappedFile]) -> None:
        if not doomed:
            return
        gone = {id(m) for m in doomed}
        self.mapped_files = [m for m in self.mapped_files if id(m) not in gone]
        for mapped in doomed:
            mapped.destroy()

    def delete_expired_by_time(
        self,
        expired_ms: int,
        now_ms: int,
        delete_interval_ms: int,
        clean_immediately: bool,
        batch_max: int,
    ) -> int:
        """Delete files not modified for ``expired_ms`` (all but the last; any age when
        ``clean_immediately``), at most ``batch_max``, pausing ``delete_interval_ms`` between."""
        doomed: list[MappedFile] = []
        for mapped in self.mapped_files[:-1]:
            if len(doomed) >= batch_max:
                break
            if not clean_immediately and now_ms < mapped.last_modified_ms() + expired_ms:
                break
            doomed.append(mapped)
        for i, mapped in enumerate(doomed):
            self.delete_files([mapped])
            if delete_interval_ms > 0 and i + 1 < len(doomed):
                time.sleep(delete_interval_ms / 1000)
        return len(doomed)

    def delete_expired_by_offset(self, is_expired: Callable[[MappedFile], bool]) -> int:
        """Delete leading files (never the last) for which ``is_expired`` holds."""
        doomed: list[MappedFile] = []
        for mapped in self.mapped_files[:-1]:
            if not is_expired(mapped):
                break
            doomed.append(mapped)
        self.delete_files(doomed)
        return len(doomed)

    def shutdown(self) -> None:
        for mapped in self.mapped_files:
            mapped.close()

    def destroy(self) -> None:
        for mapped in self.mapped_files:
            mapped.destroy()
        self.mapped_files = []
        self.flushed_where = 0
        if os.path.isdir(self.store_path) and not os.listdir(self.store_path):
            os.rmdir(self.store_path)
