"""Cold reads off the event loop: records not in memory are read on a thread first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from orbitmq.store.commit_log import CommitLog
from orbitmq.store.get_message_result import GetMessageResult
from orbitmq.store.mapped_file import MappedFile

log = logging.getLogger(__name__)

#: Reads ``size`` bytes at ``position`` of a commit log file, blocking (a test's seam).
FileRead = Callable[[MappedFile, int, int], bytes]


def _pread(mapped: MappedFile, position: int, size: int) -> bytes:
    return mapped.read(position, size)


class ColdReader:
    """Loads the records of a cold read (``GetMessageResult.cold_offsets``) on a thread.

    A view of the mapping over pages the page cache lacks blocks whoever first touches it:
    on the event loop, every connection. Such records are read instead with ``pread``
    (which lets go of the GIL while the disk works) on a thread of the reader's own pool
    (``max_in_flight`` threads, started on first use: the loop's default executor serves
    other work, which a slow disk must not hold up), and the result's views are replaced
    by views of those copies, so the answer that the loop writes touches no cold page.

    At most ``max_in_flight`` loads run at once; others wait their turn in arrival order,
    holding no copy while they wait: cold readers share the disk and cannot use more
    memory than ``max_in_flight`` reads' worth (each bounded by the on-disk transfer limits,
    64 KiB / 8 messages by default, or one message). 0 loads nothing: cold views are then
    touched on the loop, as before. Use from one event loop; the loads run on threads.
    """

    def __init__(
        self, commit_log: CommitLog, max_in_flight: int, read: FileRead | None = None
    ) -> None:
        self.commit_log = commit_log
        self.max_in_flight = max_in_flight
        #: Reads a run of records on a pool thread (``MappedFile.read``: pread); tests
        #: replace it to hold a cold read.
        self.read_file: FileRead = read or _pread
        self._slots = asyncio.Semaphore(max(1, max_in_flight))
        self._pool: ThreadPoolExecutor | None = None
        #: Reads loaded on a thread, and those that fell back to the mapping's views.
        self.loaded_count = 0
        self.failed_count = 0

    async def load(self, result: GetMessageResult) -> None:
        """Replace ``result``'s cold views by copies read on a thread; no-op for a hot read."""
        offsets = result.cold_offsets
        if offsets is None or self.max_in_flight <= 0:
            return
        sizes = [len(record) for record in result.message_buffers]
        async with self._slots:
            loop = asyncio.get_running_loop()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_in_flight, "ColdRead")
            try:
                records = await loop.run_in_executor(self._pool, self._load, offsets, sizes)
            except (OSError, ValueError) as exc:
                # A file retention removed meanwhile: the views still hold its mapping.
                self.failed_count += 1
                log.debug("cold read fell back to the mapping: %s", exc)
                return
        result.message_buffers[:] = records
        result.cold_offsets = None
        self.loaded_count += 1

    def close(self) -> None:
        """Let the pool's threads end (a read in progress finishes; its answer is dropped
        with the connection). A later load starts a new pool."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _load(self, offsets: list[int], sizes: list[int]) -> list[memoryview]:
        """On a thread: one read per run of adjacent records in the same file."""
        files = self.commit_log.mapped_file_queue
        records: list[memoryview] = []
        index = 0
        while index < len(offsets):
            mapped = files.find_by_offset(offsets[index])
            if mapped is None:
                raise ValueError(f"no commit log file holds offset {offsets[index]}")
            base = mapped.file_from_offset
            low = end = offsets[index]
            stop = index
            while (
                stop < len(offsets)
                and offsets[stop] == end
                and end + sizes[stop] <= base + mapped.file_size
            ):
                end += sizes[stop]
                stop += 1
            if stop == index:
                raise ValueError(f"record at offset {low} runs past its file")
            chunk = memoryview(self.read_file(mapped, low - base, end - low))
            if len(chunk) != end - low:
                raise ValueError(f"short read at offset {low}")
            for at in range(index, stop):
                start = offsets[at] - low
                records.append(chunk[start : start + sizes[at]])
            index = stop
        return records
