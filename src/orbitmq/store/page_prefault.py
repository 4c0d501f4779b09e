"""Writable pages of a mapping made ready ahead of their first store: madvise(2) with
``MADV_POPULATE_WRITE`` (Linux 5.14 and later).

The first store into each page of a shared file mapping faults, and the fault prepares the
page for writing in the file system (ext4's ``page_mkwrite``), tens of microseconds of kernel
time each in a busy broker. Stores that land on random pages (an index file's hash slots)
pay it per store until every page was touched. Populating the range once does the same work
in one call, off the path of the stores, and changes no byte of the file, so it may run
while another thread writes into the range.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
from collections.abc import Callable
from typing import Final

from orbitmq.common.libc import libc_function

log = logging.getLogger(__name__)

#: ``MADV_POPULATE_WRITE`` from <sys/mman.h> (Python's ``mmap`` module names it from 3.13).
MADV_POPULATE_WRITE: Final = 23


#: Called through ctypes, which lets go of the GIL for the call: populating megabytes takes
#: milliseconds, which ``mmap.madvise`` would take from every other thread.
_MADVISE: Final[Callable[[int, int, int], int] | None] = libc_function(
    "madvise", (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int), ctypes.c_int
)


def populate_write(address: int, position: int, length: int) -> bool:
    """Fault in, writable, the pages of ``length`` bytes at ``position`` of the mapping at
    ``address`` (from ``mapping_address``). False where that cannot be done (no madvise, a
    kernel without ``MADV_POPULATE_WRITE``, a mapping that is gone, no memory): the stores
    then fault as they would have, nothing else changes."""
    if _MADVISE is None or address == 0 or length <= 0:
        return False
    first = (address + position) // mmap.PAGESIZE * mmap.PAGESIZE
    if _MADVISE(first, address + position + length - first, MADV_POPULATE_WRITE) == 0:
        return True
    log.debug("MADV_POPULATE_WRITE failed: errno %d", ctypes.get_errno())
    return False
