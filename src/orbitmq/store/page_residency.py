"""Whether pages of a mapping are in memory: mincore(2), read without touching them.

A read through a mapping of pages the page cache does not hold blocks the reading thread
on the disk (a major page fault); asked first, the store can send such a read to a thread
instead of taking the fault on the event loop. For a file mapping, mincore reports the page
cache, not only this process's page tables, so pages released with ``MADV_DONTNEED``
(which stay cached) still count as in memory.
"""

from __future__ import annotations

import ctypes
import mmap
import threading
from collections.abc import Callable
from typing import Final

from orbitmq.common.libc import libc_function

PAGE_SIZE: Final = mmap.PAGESIZE
#: One vector per thread, reused (allocating one per call costs as much as the call):
#: large enough for a read of 1 MiB; a longer read gets a larger one.
_VECTOR_PAGES: Final = 256
_vectors = threading.local()


_MINCORE: Final[Callable[[int, int, ctypes.Array[ctypes.c_char]], int] | None] = libc_function(
    "mincore", (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p), ctypes.c_int
)


def mapping_address(buffer: mmap.mmap) -> int:
    """Where ``buffer`` (a writable mapping) starts in this process; 0 when unknown.

    The probe that exports the buffer is dropped before returning, so the mapping can
    still be closed; the address stays right for as long as the mapping lives."""
    try:
        probe = ctypes.c_char.from_buffer(buffer)
    except (TypeError, ValueError, BufferError):
        return 0
    address = ctypes.addressof(probe)
    del probe
    return address


def is_resident(address: int, position: int, length: int) -> bool:
    """True when every page of ``length`` bytes at ``position`` of the mapping at
    ``address`` is in memory. Where it cannot tell (no mincore, no address) it answers
    True: the caller then reads as it would without asking. A mapping that is gone
    (ENOMEM) answers False: a read through the file, not the mapping, is the safe one."""
    if _MINCORE is None or address == 0 or length <= 0:
        return True
    first = (address + position) // PAGE_SIZE * PAGE_SIZE
    end = address + position + length
    pages = (end - first + PAGE_SIZE - 1) // PAGE_SIZE
    vector = getattr(_vectors, "vector", None)
    if vector is None or len(vector) < pages:
        vector = _vectors.vector = ctypes.create_string_buffer(max(pages, _VECTOR_PAGES))
    if _MINCORE(first, end - first, vector) != 0:
        return False
    # A byte with bits other than the low one set (reserved, never seen) counts as not
    # resident: the safe answer.
    return vector.raw.count(1, 0, pages) == pages


def resident_pages(address: int, length: int) -> bytes | None:
    """One byte per page of ``length`` bytes of the mapping at ``address``, its low bit
    set when the page is in memory; None where it cannot tell (no mincore, no address, a
    failed call)."""
    if _MINCORE is None or address == 0 or length <= 0:
        return None
    pages = (length + PAGE_SIZE - 1) // PAGE_SIZE
    vector = ctypes.create_string_buffer(pages)
    if _MINCORE(address, length, vector) != 0:
        return None
    return vector.raw[:pages]
