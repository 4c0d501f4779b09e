"""Java's ``String.hashCode`` — RocketMQ stores it in consume queues and index files.

Tag hash codes and index key hashes must equal what a Java broker computes, so files written
by either can be read by the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

_MASK32: Final = 0xFFFFFFFF
#: Fewer strings than this are hashed one by one.
_SCALAR_BELOW: Final = 8
_PREFIX_CACHE_LIMIT: Final = 4096
_prefix_hashes: dict[str, int] = {}


def java_string_hash(text: str) -> int:
    """``text.hashCode()`` as Java computes it: signed 32-bit, over UTF-16 code units."""
    data = text.encode("ascii") if text.isascii() else text.encode("utf-16-be")
    h = 0
    if text.isascii():
        for unit in data:
            h = h * 31 + unit
    else:
        for i in range(0, len(data), 2):
            h = h * 31 + ((data[i] << 8) | data[i + 1])
    h &= _MASK32
    return h - 0x1_0000_0000 if h >= 0x8000_0000 else h


def java_string_hash_with_prefix(prefix: str, text: str) -> int:
    """``(prefix + text).hashCode()``, reusing a cached hash of ``prefix``.

    Index keys are ``topic#key``: the topic part repeats for every message, so only the key
    is hashed per call. Same result as ``java_string_hash(prefix + text)``.
    """
    head = _prefix_hashes.get(prefix)
    if head is None:
        head = java_string_hash(prefix) & _MASK32
        if len(_prefix_hashes) >= _PREFIX_CACHE_LIMIT:
            _prefix_hashes.clear()
        _prefix_hashes[prefix] = head
    tail = java_string_hash(text) & _MASK32
    units = len(text.encode("utf-16-be")) // 2 if not text.isascii() else len(text)
    h = (head * pow(31, units, 0x1_0000_0000) + tail) & _MASK32
    return h - 0x1_0000_0000 if h >= 0x8000_0000 else h


_powers: dict[int, npt.NDArray[np.uint64]] = {}


def _powers_of_31(length: int) -> npt.NDArray[np.uint64]:
    powers = _powers.get(length)
    if powers is None:
        powers = np.array([pow(31, length - 1 - i, 1 << 64) for i in range(length)], np.uint64)
        _powers[length] = powers
    return powers


def java_string_hashes(texts: Sequence[str | bytes]) -> npt.NDArray[np.int32]:
    """``hashCode()`` of many strings (``str``, or ``bytes`` in UTF-8) at once.

    The hash is a polynomial in 31 over the UTF-16 code units; in uint64 arithmetic it wraps
    modulo 2^64, and its low 32 bits are Java's int result. ASCII strings of one length are
    hashed together as one matrix product; others take the scalar path.
    """
    if len(texts) <= _SCALAR_BELOW:
        # A few strings: numpy's per-call overhead would cost more than the loop.
        return np.array(
            [java_string_hash(t if isinstance(t, str) else t.decode()) for t in texts], np.int32
        )
    raw = [t.encode() if isinstance(t, str) else t for t in texts]
    result = np.zeros(len(raw), np.uint32)
    lengths = np.fromiter(map(len, raw), np.int64, len(raw))
    order = np.argsort(lengths, kind="stable")
    bounds = np.flatnonzero(np.diff(lengths[order])) + 1
    for group in np.split(order, bounds):
        length = int(lengths[group[0]]) if len(group) else 0
        if length == 0:
            continue
        members = group.tolist()
        joined = b"".join([raw[i] for i in members])
        if not joined.isascii():
            for i in members:
                result[i] = java_string_hash(raw[i].decode()) & _MASK32
            continue
        units = np.frombuffer(joined, np.uint8).reshape(len(members), length)
        hashes = units.astype(np.uint64) @ _powers_of_31(length)
        result[group] = hashes & np.uint64(_MASK32)
    return result.view(np.int32)
