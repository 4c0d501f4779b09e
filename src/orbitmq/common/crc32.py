"""RocketMQ's ``UtilAll.crc32``: the one CRC32 of OrbitMQ (stored BODYCRC, the body check of a
broker's registration), computed with ISA-L, which is several times faster than zlib's."""

from __future__ import annotations

from typing import Final

from isal.isal_zlib import crc32 as isal_crc32  # re-exported for the hot loops

__all__ = ["INT31_MASK", "crc32", "isal_crc32"]

#: Java has no unsigned int: RocketMQ clears the sign bit so the value fits an int32. A loop
#: over many records that cannot afford a call per record (the commit log's batch encoder)
#: computes ``isal_crc32(data) & INT31_MASK``, which is ``crc32(data)``.
INT31_MASK: Final = 0x7FFFFFFF


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 of ``data`` (zlib's polynomial) with the sign bit cleared, as RocketMQ stores
    and checks it. A pure function: safe from any thread."""
    return isal_crc32(data) & INT31_MASK
