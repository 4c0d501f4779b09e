"""``ColdDataCheckService``: which commit log records are cold, for the cold data flow
control (RocketMQ 5's ``CommitLog.ColdDataCheckService`` and DefaultMessageStore's
``checkInColdAreaByCommitOffset``).

A record is in the cold area when it lies further behind the commit log's end than
accessMessageInMemoryHotRatio of RAM. Such a record counts as cold unless coldDataScanEnable
says to ask the page cache: then a scan (every timerColdDataCheckIntervalMs) keeps, per file,
the residency of one page in sampleSteps (mincore), and a record whose sampled page was in
memory at the last scan is not cold. A file not scanned yet counts as in memory, as in
RocketMQ.
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Sequence
from typing import Final

from orbitmq.common.clock import Clock
from orbitmq.common.service import Service
from orbitmq.store import message_reader
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.message_store_config import MessageStoreConfig

log = logging.getLogger(__name__)

#: RocketMQ's sampleSteps when the key is 0 or less.
DEFAULT_SAMPLE_STEPS: Final = 32
#: How long the scan sleeps while it is off (RocketMQ: 180 s); it looks at the keys again
#: after each sleep.
IDLE_INTERVAL_S: Final = 180.0


class ColdDataCheckService(Service):
    """Owns the sampled page-cache table (file start offset -> one byte per sampled page,
    low bit set when in memory). The scan runs on the service's thread and replaces a
    file's entry whole, so the readers (any thread) see an old or a new table, never half
    of one."""

    def __init__(self, config: MessageStoreConfig, commit_log: CommitLog, clock: Clock) -> None:
        super().__init__(clock=clock)
        self.config = config
        self.commit_log = commit_log
        self._page_cache_table: dict[int, bytes] = {}

    def attach(self) -> None:
        """Make the commit log's reads count their cold bytes with this service."""
        self.commit_log.cold_bytes = self.cold_bytes

    @property
    def sample_steps(self) -> int:
        steps = self.config.sample_steps
        return steps if steps > 0 else DEFAULT_SAMPLE_STEPS

    def _scanning(self) -> bool:
        return self.config.cold_data_flow_control_enable and self.config.cold_data_scan_enable

    def run(self) -> None:
        self.scan_files_in_page_cache()
        while not self.is_stopped():
            if not self._scanning():
                self._page_cache_table = {}
                self.wait_for_running(IDLE_INTERVAL_S)
                continue
            self.wait_for_running(self.config.timer_cold_data_check_interval_ms / 1000)
            if not self.is_stopped():
                self.scan_files_in_page_cache()

    def scan_files_in_page_cache(self) -> None:
        """Sample every commit log file's page residency now (nothing while the scan is
        off); files gone since the last scan leave the table."""
        if not self._scanning():
            return
        began = self._clock.monotonic()
        steps = self.sample_steps
        stride = steps * mmap.PAGESIZE
        table: dict[int, bytes] = {}
        for mapped in self.commit_log.mapped_file_queue.mapped_files:
            pages = mapped.resident_pages()
            # Where the kernel cannot tell, the file counts as in memory (RocketMQ's answer
            # to a failed mincore): nothing is flow-controlled by mistake.
            table[mapped.file_from_offset] = (
                pages[::steps]
                if pages is not None
                else b"\x01" * len(range(0, mapped.file_size, stride))
            )
        self._page_cache_table = table
        log.debug(
            "scanFilesInPageCache: %d files in %.0f ms",
            len(table),
            (self._clock.monotonic() - began) * 1000,
        )

    def check_in_cold_area(self, offset: int, max_offset: int) -> bool:
        """Whether the record at commit log ``offset`` is further behind ``max_offset``
        than accessMessageInMemoryHotRatio of RAM."""
        hot = message_reader.TOTAL_PHYSICAL_MEMORY * self.config.access_message_in_memory_hot_ratio
        return (max_offset - offset) * 100 > hot

    def is_data_in_page_cache(self, offset: int, max_offset: int | None = None) -> bool:
        """RocketMQ's isDataInPageCache: False only for a record in the cold area that the
        scan (when on) found out of memory; always True while the flow control is off."""
        if not self.config.cold_data_flow_control_enable:
            return True
        if max_offset is None:
            max_offset = self.commit_log.max_offset
        if not self.check_in_cold_area(offset, max_offset):
            return True
        if not self.config.cold_data_scan_enable:
            return False
        file_size = self.config.mapped_file_size_commit_log
        sampled = self._page_cache_table.get(offset - offset % file_size)
        if sampled is None:
            return True
        index = offset % file_size // mmap.PAGESIZE // self.sample_steps
        return index < len(sampled) and sampled[index] & 1 == 1

    def cold_bytes(self, offsets: Sequence[int], sizes: Sequence[int]) -> int:
        """The bytes of the records at ``offsets`` (with ``sizes``) that are cold: a
        read's coldDataSum."""
        if not offsets or not self.config.cold_data_flow_control_enable:
            return 0
        max_offset = self.commit_log.max_offset
        # Reads at the head (the usual case) are out of the cold area as a whole.
        if not self.check_in_cold_area(min(offsets), max_offset):
            return 0
        return sum(
            size
            for offset, size in zip(offsets, sizes, strict=True)
            if not self.is_data_in_page_cache(offset, max_offset)
        )
