"""IndexFile: a hash index from message keys to commit log offsets (R14).

Layout: a 40-byte header (beginTimestamp int64, endTimestamp int64, beginPhyOffset int64,
endPhyOffset int64, hashSlotCount int32, indexCount int32), then ``hash_slot_num`` slots of
int32 (the newest entry of the slot), then ``index_num`` entries of 20 bytes: key hash int32,
commit log offset int64, seconds since beginTimestamp int32, previous entry of the same slot
int32. Entry 0 is never used; 0 means "none".
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from orbitmq.common.file_system import FileSystem
from orbitmq.common.java_hash import (
    java_string_hash,
    java_string_hash_with_prefix,
    java_string_hashes,
)
from orbitmq.store.mapped_file import Allocation, MappedFile

INDEX_HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_SIZE: Final = 20
INVALID_INDEX: Final = 0
_MAX_INT: Final = 0x7FFFFFFF

_HEADER: Final = struct.Struct(">qqqqii")
_SLOT: Final = struct.Struct(">i")
_ENTRY: Final = struct.Struct(">iqii")
#: Fewer keys than this are hashed and put one by one: numpy's per-call overhead would
#: dominate.
_ONE_BY_ONE_BELOW: Final = 8
_ENTRY_DTYPE: Final = np.dtype(
    [("hash", ">i4"), ("offset", ">i8"), ("diff", ">i4"), ("prev", ">i4")]
)


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE


def _index_hash(java_hash: int) -> int:
    """RocketMQ's ``indexKeyHashMethod`` from a ``hashCode``: its absolute value, 0 where
    Java's ``Math.abs`` stays negative (``Integer.MIN_VALUE``)."""
    h = abs(java_hash)
    return h if h <= _MAX_INT else 0


def index_key_hash(prefix: str, key: str) -> int:
    """``indexKeyHashMethod`` of ``prefix + key``."""
    return _index_hash(java_string_hash_with_prefix(prefix, key))


def _full_key_hash(key: bytes) -> int:
    """``index_key_hash`` of a full key (``topic#key`` in UTF-8)."""
    return _index_hash(java_string_hash(key.decode()))


def index_key_hashes(keys: Sequence[str | bytes]) -> npt.NDArray[np.int64]:
    """``index_key_hash`` of many full keys (``topic#key``) at once."""
    hashes = np.abs(java_string_hashes(keys).astype(np.int64))
    hashes[hashes > _MAX_INT] = 0
    return hashes


class IndexFile:
    """Owns one index file and its header.

    One dispatcher thread puts keys; queries from other threads read a consistent enough
    picture: an entry is complete before the slot points to it.
    """

    def __init__(
        self,
        path: str,
        hash_slot_num: int,
        index_num: int,
        fs: FileSystem,
        *,
        create: bool,
        preallocate: bool = True,
    ):
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.mapped_file = MappedFile(
            path,
            index_file_size(hash_slot_num, index_num),
            fs,
            create=create,
            allocation=Allocation(preallocate=preallocate),
        )
        #: Where the entries begin; header and slot table before it.
        self._entries_at = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        # Header and slots are written anywhere at any time: their blocks come first. The
        # entries are written front to back and get theirs as they grow (``_reserve``), so
        # a file that is not preallocated takes disk as keys arrive, and a full disk is an
        # OSError there rather than a SIGBUS on a write through the mapping.
        self.mapped_file.reserve(self._entries_at)
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

    def populate_slots(self) -> bool:
        """Fault in the header and the hash slots (``MappedFile.populate``); False where
        that could not be done. Keys land on random slots: until every page of the table was
        touched, nearly every put would fault a page in. Any thread, while keys are put."""
        return self.mapped_file.populate(0, self._entries_at)

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_keys(
        self,
        keys: list[bytes],
        phy_offsets: list[int],
        store_timestamps: list[int],
    ) -> int:
        """Index full keys (``topic#key`` in UTF-8) at once, exactly as putting them one by
        one would; returns how many fit (the rest belong in the next file).

        Entries of one slot chain newest to oldest: within the batch each entry points to the
        previous entry of its slot, the first to what the slot held before.
        """
        count = min(len(keys), self.index_num - self.index_count)
        if count <= 0:
            return 0
        if count < _ONE_BY_ONE_BELOW:
            self._put_one_by_one(
                [_full_key_hash(key) for key in keys[:count]],
                phy_offsets[:count],
                store_timestamps[:count],
            )
            return count
        hashes = index_key_hashes(keys[:count])
        offsets = np.array(phy_offsets[:count], np.int64)
        stamps = np.array(store_timestamps[:count], np.int64)
        first_id = self.index_count
        ids = np.arange(first_id, first_id + count, dtype=np.int64)
        slots = hashes % self.hash_slot_num
        order = np.argsort(slots, kind="stable")
        sorted_slots = slots[order]
        sorted_ids = ids[order]
        group_start = np.ones(count, bool)
        group_start[1:] = sorted_slots[1:] != sorted_slots[:-1]
        group_end = np.ones(count, bool)
        group_end[:-1] = group_start[1:]
        slot_table = np.frombuffer(
            self.mapped_file.buffer, ">i4", self.hash_slot_num, INDEX_HEADER_SIZE
        )
        existing = slot_table[sorted_slots[group_start]].astype(np.int64)
        invalid = (existing <= INVALID_INDEX) | (existing > first_id)
        existing[invalid] = INVALID_INDEX
        prev_sorted = np.empty(count, np.int64)
        prev_sorted[1:] = sorted_ids[:-1]
        prev_sorted[group_start] = existing
        previous = np.empty(count, np.int64)
        previous[order] = prev_sorted
        begin = self.begin_timestamp if self.begin_timestamp > 0 else store_timestamps[0]
        diffs = np.clip((stamps - begin) // 1000, 0, _MAX_INT)
        if self.begin_timestamp <= 0:
            diffs[0] = 0
        entries = np.empty(count, _ENTRY_DTYPE)
        entries["hash"] = hashes
        entries["offset"] = offsets
        entries["diff"] = diffs
        entries["prev"] = previous
        at = self._entries_at + first_id * INDEX_SIZE
        self.mapped_file.reserve(at + count * INDEX_SIZE)
        self.mapped_file.buffer[at : at + count * INDEX_SIZE] = entries.tobytes()
        slot_table[sorted_slots[group_end]] = sorted_ids[group_end]
        if first_id <= 1:
            self.begin_phy_offset = phy_offsets[0]
            self.begin_timestamp = store_timestamps[0]
        self.hash_slot_count += int(invalid.sum())
        self.index_count += count
        self.end_phy_offset = phy_offsets[count - 1]
        self.end_timestamp = store_timestamps[count - 1]
        self._write_header()
        return count

    def _put_one_by_one(self, hashes: list[int], offsets: list[int], stamps: list[int]) -> None:
        """``put_keys`` for a few keys, RocketMQ's ``putKey`` one key at a time."""
        entries_at = self._entries_at
        self.mapped_file.reserve(entries_at + (self.index_count + len(hashes)) * INDEX_SIZE)
        buffer = self.mapped_file.buffer
        for key_hash, offset, stamp in zip(hashes, offsets, stamps, strict=True):
            slot_at = INDEX_HEADER_SIZE + key_hash % self.hash_slot_num * HASH_SLOT_SIZE
            previous = _SLOT.unpack_from(buffer, slot_at)[0]
            if previous <= INVALID_INDEX or previous > self.index_count:
                previous = INVALID_INDEX
                self.hash_slot_count += 1
            if self.begin_timestamp <= 0:
                diff = 0
            else:
                diff = min(max((stamp - self.begin_timestamp) // 1000, 0), _MAX_INT)
            _ENTRY.pack_into(
                buffer, entries_at + self.index_count * INDEX_SIZE, key_hash, offset, diff, previous
            )
            _SLOT.pack_into(buffer, slot_at, self.index_count)
            if self.index_count <= 1:
                self.begin_phy_offset = offset
                self.begin_timestamp = stamp
            self.index_count += 1
            self.end_phy_offset = offset
            self.end_timestamp = stamp
        self._write_header()

    def repair(self) -> int:
        """Undo an update the process died in; returns the number of slots restored.

        ``put_keys`` writes entries, then slots, then the header. A slot pointing at or past
        the header's count was written for entries the header never counted; each such new
        entry's ``prev`` still holds what the slot held before, so following the chain back
        below the count restores it. The update is then redone by dispatch.
        """
        slots = np.frombuffer(self.mapped_file.buffer, ">i4", self.hash_slot_num, INDEX_HEADER_SIZE)
        dangling = np.flatnonzero(slots >= self.index_count)
        entries_at = INDEX_HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE
        for slot in dangling.tolist():
            value = int(slots[slot])
            for _ in range(self.index_num):
                if value < self.index_count or value >= self.index_num:
                    break
                value = _SLOT.unpack_from(
                    self.mapped_file.buffer, entries_at + value * INDEX_SIZE + 16
                )[0]
            slots[slot] = value if 0 <= value < self.index_count else INVALID_INDEX
        return len(dangling)

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
