"""MappedFileCache: a bound on the consume-queue files a store keeps open.

Each open file costs a descriptor (the one its mapping keeps) and a mapping.
A broker with ten thousand queues and more (R19) would run out of descriptors (RLIMIT_NOFILE)
or mappings (vm.max_map_count) if every file stayed open, as RocketMQ's do; here a file
opens on first use and the least recently used ones close when more than ``max_open`` are
open. Closing loses nothing: written pages stay in the page cache and flush through a
descriptor opened for the flush.
"""

from __future__ import annotations

import logging
import resource
import threading
from collections import OrderedDict
from typing import Final, Protocol

log = logging.getLogger(__name__)

#: Descriptors an open file costs: the one its mmap keeps (MappedFile closes its own).
DESCRIPTORS_PER_FILE: Final = 1
#: The smallest bound the cache accepts, whatever the limits: the last files of a few
#: queues in use at once.
MIN_OPEN_FILES: Final = 16


#: Descriptors kept for everything but consume-queue files (connections, the commit log and
#: index files, the console's and gRPC's sockets) once the limit is large enough to spare them.
SPARE_DESCRIPTORS: Final = 4096


def open_files_bound(max_open: int, share: float = 0.5) -> int:
    """``max_open`` (the maxOpenConsumeQueueFiles setting), lowered to what the process's soft
    RLIMIT_NOFILE allows: ``share`` of it, or all but SPARE_DESCRIPTORS when that is more
    (a limit of 20,000 holds 15,904 files, so ten thousand queues and more stay open rather
    than half of it, which left 10,000 queues just over the bound); the rest stays for
    connections, the commit log and index files, and everything else the process opens."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max(max_open, MIN_OPEN_FILES)
    room = max(int(soft * share), soft - SPARE_DESCRIPTORS)
    return max(MIN_OPEN_FILES, min(max_open, room // DESCRIPTORS_PER_FILE))


class CachedFile(Protocol):
    """What the cache needs of a file it bounds (MappedFile is one): the flag a use sets,
    and a close that keeps the file usable. Defined here so that the cache does not import
    the file it holds."""

    referenced: bool

    @property
    def is_open(self) -> bool: ...

    def park(self) -> bool:
        """Drop the mapping unless the file is busy; False when it was not dropped."""
        ...


class MappedFileCache:
    """Owns the ring of open files of one store and closes files beyond ``max_open``.

    Eviction is CLOCK (second chance): a use of a file only sets its ``referenced`` flag,
    so the hot path takes no lock; the hand passes over referenced files once, clearing the
    flag, and closes the first file that was not used since the hand last came by. A file
    busy in another thread (its lock taken) is passed over too. Safe from any thread.
    """

    def __init__(self, max_open: int) -> None:
        self.max_open = max(max_open, MIN_OPEN_FILES)
        #: The open files in the hand's order (insertion order; O(1) removal on close).
        self._ring: OrderedDict[CachedFile, None] = OrderedDict()
        self._lock = threading.Lock()
        #: Files closed to keep the bound, since the start.
        self.evictions = 0
        #: Stores into the files since the start (``MappedFile.store``): the clock by which
        #: a closed file's writes are judged frequent. Counted without the lock: a lost
        #: increment only makes a distance look one shorter.
        self.stores = 0

    def store_tick(self) -> int:
        """Count a store into one of the files; the count, for ``worth_reopening``."""
        now = self.stores = self.stores + 1
        return now

    def worth_reopening(self, last_store: int, now: int) -> bool:
        """Whether a closed file stored into at ``now`` (``store_tick``), and before at
        ``last_store`` (-1: never), should get its mapping back: when at most ``max_open``
        stores came between, as a file used that often keeps its place in a cache of that
        size. Files written round robin among more than that (where reopening each would
        close the next one to be written, every store) stay closed and take a pwrite."""
        return last_store >= 0 and now - last_store <= self.max_open

    @property
    def open_count(self) -> int:
        return len(self._ring)

    def opened(self, mapped: CachedFile) -> None:
        """``mapped`` was opened: track it, and close others while over the bound."""
        with self._lock:
            ring = self._ring
            ring[mapped] = None
            # Each file is looked at twice at most: once to clear its flag, once to close it.
            budget = 2 * len(ring)
            while len(ring) > self.max_open and budget > 0:
                budget -= 1
                victim, _ = ring.popitem(last=False)
                if victim is mapped:
                    ring[victim] = None
                elif victim.referenced:
                    victim.referenced = False
                    ring[victim] = None
                elif victim.park():
                    self.evictions += 1
                elif victim.is_open:
                    ring[victim] = None  # busy in another thread: next time round
                # else it was closed meanwhile and is gone already

    def closed(self, mapped: CachedFile) -> None:
        """``mapped`` was closed for good (shutdown, retention, a deleted topic)."""
        with self._lock:
            self._ring.pop(mapped, None)
