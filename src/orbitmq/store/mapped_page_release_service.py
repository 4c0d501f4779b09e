"""MappedPageReleaseService: gives an idle broker's mapped file pages back to the kernel.

Every page a broker reads or writes through a mapping (commit log reads, consume queue and
index writes) stays in its resident set until the file is unmapped, so after a burst of
traffic an idle broker shows hundreds of MiB of RSS that are only page cache. Once the store
has seen no put and no read for ``mappedPageReleaseIdleInterval`` ms, this service drops
those pages from the process (``MappedFile.release_pages``); the page cache keeps them, so
the next read maps them again without touching the disk.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

from orbitmq.common.clock import Clock
from orbitmq.common.service import Service

log = logging.getLogger(__name__)


class MappedPageReleaseService(Service):
    """Owns the idle clock: when the store's activity mark last changed (by ``clock``'s
    monotonic reading), and whether the pages have been released since."""

    def __init__(
        self,
        idle_interval_ms: int,
        activity_mark: Callable[[], Hashable],
        release: Callable[[], int],
        clock: Clock,
    ):
        super().__init__(clock=clock)
        self._idle_interval_ms = idle_interval_ms
        self._activity_mark = activity_mark
        self._release = release
        self._mark: Hashable = None
        self._changed_at = self._now_ms()
        self._released = False

    def check(self) -> int:
        """One look at the store: release the pages if it has been idle long enough and they
        were not released since the last activity; returns how many files were released."""
        now = self._now_ms()
        mark = self._activity_mark()
        if mark != self._mark:
            self._mark, self._changed_at, self._released = mark, now, False
            return 0
        if self._released or now - self._changed_at < self._idle_interval_ms:
            return 0
        self._released = True
        released = self._release()
        log.debug(
            "store idle for %.0f ms: released the pages of %d mapped files",
            now - self._changed_at,
            released,
        )
        return released

    def _now_ms(self) -> float:
        return self._clock.monotonic() * 1000

    def run(self) -> None:
        # A quarter of the interval between looks: pages go 1-1.25 intervals after the
        # last activity, and an idle broker wakes four times per interval.
        pause_s = self._idle_interval_ms / 4000
        while not self.is_stopped():
            self.wait_for_running(pause_s)
            if self.is_stopped():
                break
            try:
                self.check()
            except (OSError, ValueError):
                log.exception("releasing mapped pages failed; trying again when idle next")
