"""RocketMQ's ``UtilAll.crc32``: the one CRC32 of OrbitMQ (stored BODYCRC, the body check of a
broker's registration), computed with ISA-L, which is several times faster than zlib's."""

from __future__ import annotations

from typing import Final

from isal.isal_zlib import crc32 as _isal_crc32

#: Java has no unsigned int: RocketMQ clears the sign bit so the value fits an int32.
_INT31_MASK: Final = 0x7FFFFFFF


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 of ``data`` (zlib's polynomial) with the sign bit cleared, as RocketMQ stores
    and checks it. A pure function: safe from any thread."""
    return _isal_crc32(data) & _INT31_MASK
