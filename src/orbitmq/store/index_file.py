"""IndexFile: a hash index from message keys to commit log offsets (R14).

Layout: a 40-byte header (beginTimestamp int64, endTimestamp int64, beginPhyOffset int64,
endPhyOffset int64, hashSlotCount int32, indexCount int32), then ``hash_slot_num`` slots of
int32 (the newest entry of the slot), then ``index_num`` entries of 20 bytes: key hash int32,
commit log offset int64, seconds since beginTimestamp int32, previous entry of the same slot
int32. Entry 0 is never used; 0 means "none".
"""

from __future__ import annotations

import struct
from typing import Final

from orbitmq.common.java_hash import java_string_hash_with_prefix
from orbitmq.store.file_system import FileSystem
from orbitmq.store.mapped_file import MappedFile

INDEX_HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_SIZE: Final = 20
INVALID_INDEX: Final = 0
_MAX_INT: Final = 0x7FFFFFFF

_HEADER: Final = struct.Struct(">qqqqii")
_SLOT: Final = struct.Struct(">i")
_ENTRY: Final = struct.Struct(">iqii")


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE


def index_key_hash(prefix: str, key: str) -> int:
    """RocketMQ's ``indexKeyHashMethod`` of ``prefix + key``: |hashCode|, 0 if negative."""
    h = abs(java_string_hash_with_prefix(prefix, key))
    return h if h <= _MAX_INT else 0


class IndexFile:
    """Owns one index file and its header.

    One dispatcher thread puts keys; queries from other threads read a consistent enough
    picture: an entry is complete before the slot points to it.
    """

    def __init__(
        self, path: str, hash_slot_num: int, index_num: int, fs: FileSystem, *, create: bool
    ):
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.mapped_file = MappedFile(
            path, index_file_size(hash_slot_num, index_num), fs, create=create
        )
        header = _HEADER.unpack_from(self.mapped_file.buffer, 0)
        self.begin_timestamp: int = header[0]
        self.end_timestamp: int = header[1]
        self.begin_phy_offset: int = header[2]
        self.end_phy_offset: int = header[3]
        self.hash_slot_count: int = header[4]
        self.index_count: int = header[5]
        if create or self.index_count <= 0:
            self.index_count = 1
            self._write_header()
        self.mapped_file.wrote_position = self.mapped_file.file_size

    @property
    def file_name(self) -> str:
        return self.mapped_file.file_name

    def _write_header(self) -> None:
        _HEADER.pack_into(
            self.mapped_file.buffer,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, prefix: str, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Index ``prefix + key`` (``topic#key``); False when the file is full."""
        if self.index_count >= self.index_num:
            return False
        buffer = self.mapped_file.buffer
        key_hash = index_key_hash(prefix, key)
        slot_at = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        slot_value = _SLOT.unpack_from(buffer, slot_at)[0]
        if slot_value <= INVALID_INDEX or slot_value > self.index_count:
            slot_value = INVALID_INDEX
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), _MAX_INT)
        entry_at = (
            INDEX_HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE + self.index_count * INDEX_SIZE
        )
        _ENTRY.pack_into(buffer, entry_at, key_hash, phy_offset, time_diff, slot_value)
        _SLOT.pack_into(buffer, slot_at, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == INVALID_INDEX:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self._write_header()
        return True

    def is_time_matched(self, begin: int, end: int) -> bool:
        return self.begin_timestamp <= end and begin <= self.end_timestamp

    def select_phy_offset(
        self, prefix: str, key: str, max_num: int, begin: int, end: int, found: list[int]
    ) -> None:
        """Append to ``found`` the offsets of entries whose key hash equals that of
        ``prefix + key`` and whose time is in [begin, end], newest first, until ``found``
        holds ``max_num``. Different keys may share a hash: callers re-check the key."""
        buffer = self.mapped_file.buffer
        key_hash = index_key_hash(prefix, key)
        slot_at = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        next_index = _SLOT.unpack_from(buffer, slot_at)[0]
        if next_index <= INVALID_INDEX or next_index > self.index_count or self.index_count <= 1:
            return
        entries_at = INDEX_HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE
        while len(found) < max_num:
            hash_read, phy_offset, time_diff, prev = _ENTRY.unpack_from(
                buffer, entries_at + next_index * INDEX_SIZE
            )
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                found.append(phy_offset)
            if (
                prev <= INVALID_INDEX
                or prev > self.index_count
                or prev == next_index
                or time_read < begin
            ):
                break
            next_index = prev

    def flush(self) -> None:
        self.mapped_file.flushed_position = 0
        self.mapped_file.flush(0)

    def shutdown(self) -> None:
        self.mapped_file.close()

    def destroy(self) -> None:
        self.mapped_file.destroy()
