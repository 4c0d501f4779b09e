"""ConsumeQueue: the per-queue index of a topic into the commit log (R13).

A file is a run of 20-byte units — commit log offset (int64), size (int32), tag hash code
(int64) — one per message, so queue offset N lives at byte N * 20. Files hold
``mapped_file_size_consume_queue`` bytes (300,000 units) and are named by their first byte.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from orbitmq.common.file_system import FileSystem
from orbitmq.store.mapped_file import Allocation, MappedFile
from orbitmq.store.mapped_file_cache import MappedFileCache
from orbitmq.store.mapped_file_queue import MappedFileQueue
from orbitmq.store.message_store_config import CQ_STORE_UNIT_SIZE

log = logging.getLogger(__name__)

#: One unit (CQ_STORE_UNIT_SIZE bytes): commit log offset, record size, tag hash code.
UNIT: Final = struct.Struct(">qiq")
#: ``UNIT`` as a numpy record: a run of units read or packed as one array.
UNIT_DTYPE: Final = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")])
#: Size of a filler unit written where a queue has no message (before its first, or a gap).
BLANK_UNIT_SIZE: Final = 0x7FFFFFFF
_BLANK_UNIT: Final = UNIT.pack(0, BLANK_UNIT_SIZE, 0)

#: Runs of this many units or more are packed with numpy, shorter ones with struct: about
#: where they cost the same (at 500 units numpy takes two thirds of struct's time).
_NUMPY_FROM: Final = 16


def is_message_unit(offset: int, size: int) -> bool:
    return offset >= 0 and 0 < size < BLANK_UNIT_SIZE


def _pack_units(offsets: Sequence[int], sizes: Sequence[int], tags_codes: Sequence[int]) -> bytes:
    """The units of a run, as they are laid out in the file."""
    if len(offsets) < _NUMPY_FROM:
        return b"".join(map(UNIT.pack, offsets, sizes, tags_codes))
    units = np.empty(len(offsets), UNIT_DTYPE)
    units["offset"] = offsets
    units["size"] = sizes
    units["tags"] = tags_codes
    return units.tobytes()


def _units(mapped: MappedFile, limit: int, start: int = 0) -> npt.NDArray[np.void]:
    """The units of a file from byte ``start`` up to byte ``limit``, as a read-only
    structured array (read through the file, not the mapping: see ``MappedFile.read``)."""
    first = start // CQ_STORE_UNIT_SIZE
    count = max(limit // CQ_STORE_UNIT_SIZE - first, 0)
    data = mapped.read(first * CQ_STORE_UNIT_SIZE, count * CQ_STORE_UNIT_SIZE)
    return np.frombuffer(data, UNIT_DTYPE, count)


def _valid_mask(units: npt.NDArray[np.void]) -> npt.NDArray[np.bool_]:
    """Units written at all: messages and filler units."""
    return (units["offset"] >= 0) & (units["size"] > 0)


def _message_mask(units: npt.NDArray[np.void]) -> npt.NDArray[np.bool_]:
    sizes = units["size"]
    return (units["offset"] >= 0) & (sizes > 0) & (sizes < BLANK_UNIT_SIZE)


class ConsumeQueue:
    """Owns the unit files of one (topic, queueId).

    One dispatcher thread writes; readers on any thread take views with ``get_index_buffer``.
    With a ``cache``, its files open on use and close when the cache needs room.
    """

    def __init__(
        self,
        topic: str,
        queue_id: int,
        root_dir: str,
        file_size: int,
        fs: FileSystem,
        cache: MappedFileCache | None = None,
    ):
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        # Never preallocated: a broker has thousands of queues, most of them short (R19).
        self.mapped_file_queue = MappedFileQueue(
            os.path.join(root_dir, topic, str(queue_id)),
            file_size,
            fs,
            allocation=Allocation(),
            cache=cache,
        )
        #: One past the end, in the commit log, of the last message indexed here.
        self.max_physic_offset = -1
        #: Byte position of the first unit still readable (its commit log still exists).
        self.min_logic_offset = 0
        #: Set by ``recover`` when units are missing inside the queue: the commit log offset
        #: to dispatch from again (-1: from the start of the log).
        self.hole_resume_offset: int | None = None

    def load(self) -> None:
        self.mapped_file_queue.load()

    def recover(self) -> None:
        """Find the last valid unit of the last three files and drop everything after it.

        Units before it that are zero (a page lost in a power failure) are holes: they stay,
        readers skip them, and ``hole_resume_offset`` tells recovery from where to dispatch
        the commit log again to fill them.
        """
        files = self.mapped_file_queue.mapped_files[-3:]
        if not files:
            return
        # Up to each file's last written block only: most files of most queues are mostly
        # empty, and reading their zeros is what made a start with many queues slow.
        valid_parts = [_valid_mask(_units(m, m.data_end())) for m in files]
        last_file = max((i for i, v in enumerate(valid_parts) if v.any()), default=-1)
        if last_file < 0:
            end = files[0].file_from_offset
        else:
            last_unit = int(np.flatnonzero(valid_parts[last_file])[-1])
            end = files[last_file].file_from_offset + (last_unit + 1) * CQ_STORE_UNIT_SIZE
            self._find_holes(files, valid_parts, end)
        self.mapped_file_queue.truncate_dirty_files(end)
        self.mapped_file_queue.flushed_where = end
        self.max_physic_offset = -1
        for mapped in reversed(self.mapped_file_queue.mapped_files[-3:]):
            units = _units(mapped, mapped.wrote_position)
            messages = np.flatnonzero(_message_mask(units))
            if len(messages):
                last = units[int(messages[-1])]
                self.max_physic_offset = int(last["offset"]) + int(last["size"])
                break

    def _find_holes(
        self, files: list[MappedFile], valid_parts: list[npt.NDArray[np.bool_]], end: int
    ) -> None:
        previous_offset = -1
        for mapped, valid in zip(files, valid_parts, strict=True):
            limit = min(len(valid), (end - mapped.file_from_offset) // CQ_STORE_UNIT_SIZE)
            holes = np.flatnonzero(~valid[:limit])
            if len(holes):
                first = int(holes[0])
                if first > 0:
                    previous_offset = int(_units(mapped, first * CQ_STORE_UNIT_SIZE)["offset"][-1])
                self.hole_resume_offset = previous_offset
                log.warning(
                    "consume queue %s-%d has a hole at unit %d; it is dispatched again",
                    self.topic,
                    self.queue_id,
                    (mapped.file_from_offset // CQ_STORE_UNIT_SIZE) + first,
                )
                return
            if limit:
                previous_offset = int(_units(mapped, limit * CQ_STORE_UNIT_SIZE)["offset"][-1])

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop units of messages at or past commit log ``phy_offset`` (a truncated tail)."""
        if 0 <= self.max_physic_offset <= phy_offset:
            return  # the last message ends before it, so do all (units follow the log)
        self.max_physic_offset = -1
        for mapped in reversed(self.mapped_file_queue.mapped_files):
            units = _units(mapped, mapped.wrote_position)
            kept = np.flatnonzero(_message_mask(units) & (units["offset"] < phy_offset))
            if len(kept):
                last = int(kept[-1])
                self.max_physic_offset = int(units["offset"][last]) + int(units["size"][last])
                self.mapped_file_queue.truncate_dirty_files(
                    mapped.file_from_offset + (last + 1) * CQ_STORE_UNIT_SIZE
                )
                return
        self.mapped_file_queue.truncate_dirty_files(self.min_logic_offset)

    def put_message_position_info(
        self, offset: int, size: int, tags_code: int, cq_offset: int
    ) -> bool:
        """Write the unit of queue offset ``cq_offset``; True when written or already there.

        Raises OSError when a new file cannot be created; the caller retries later.
        """
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        queue = self.mapped_file_queue
        mapped = queue.last()
        if (
            mapped is not None
            and expect == mapped.file_from_offset + mapped.wrote_position
            and mapped.wrote_position + CQ_STORE_UNIT_SIZE <= mapped.allocated
        ):
            # The common case: the next unit of a file with room (its blocks reserved).
            mapped.store(mapped.wrote_position, UNIT.pack(offset, size, tags_code))
            mapped.wrote_position += CQ_STORE_UNIT_SIZE
            self.max_physic_offset = offset + size
            return True
        mapped = queue.last_or_create(expect)
        current = mapped.file_from_offset + mapped.wrote_position
        if current == queue.min_offset and not mapped.wrote_position and expect > current:
            # The queue starts later than offset 0 (older files retired): skip to it.
            self.min_logic_offset = expect
            self._fill_blank_until(expect)
            mapped = queue.last_or_create(expect)
            current = mapped.file_from_offset + mapped.wrote_position
        if expect < current:
            self._fill_hole(expect, offset, size, tags_code)  # dispatched again in recovery
            return True
        if expect > current:
            log.warning(
                "consume queue %s-%d: unit %d arrives while %d is expected; filling the gap",
                self.topic,
                self.queue_id,
                cq_offset,
                current // CQ_STORE_UNIT_SIZE,
            )
            self._fill_blank_until(expect)
            mapped = queue.last_or_create(expect)
        mapped.reserve(mapped.wrote_position + CQ_STORE_UNIT_SIZE)
        mapped.store(mapped.wrote_position, UNIT.pack(offset, size, tags_code))
        mapped.wrote_position += CQ_STORE_UNIT_SIZE
        self.max_physic_offset = offset + size
        return True

    def put_units(
        self,
        first_cq_offset: int,
        offsets: Sequence[int],
        sizes: Sequence[int],
        tags_codes: Sequence[int],
    ) -> None:
        """Write the units of consecutive queue offsets from ``first_cq_offset`` at once.

        Where they follow the last unit, each file's share is one copy (a run that reaches
        the end of a file goes on in a new one); a unit anywhere else (a queue starting
        later, a gap, a unit written before) goes through ``put_message_position_info``.
        Raises OSError when a file cannot be created or its blocks reserved.
        """
        count = len(offsets)
        queue = self.mapped_file_queue
        done = 0
        while done < count:
            position = (first_cq_offset + done) * CQ_STORE_UNIT_SIZE
            mapped = queue.last()
            if mapped is not None and position == mapped.file_from_offset + mapped.file_size:
                mapped = queue.last_or_create(position)  # on from the end of a file: a new one
            room = 0
            if mapped is not None and position == mapped.file_from_offset + mapped.wrote_position:
                room = (mapped.file_size - mapped.wrote_position) // CQ_STORE_UNIT_SIZE
            if mapped is None or not room:
                self.put_message_position_info(
                    offsets[done], sizes[done], tags_codes[done], first_cq_offset + done
                )
                done += 1
                continue
            end = min(count, done + room)
            start = mapped.wrote_position
            stop = start + (end - done) * CQ_STORE_UNIT_SIZE
            mapped.reserve(stop)
            mapped.store(
                start, _pack_units(offsets[done:end], sizes[done:end], tags_codes[done:end])
            )
            mapped.wrote_position = stop
            self.max_physic_offset = offsets[end - 1] + sizes[end - 1]
            done = end

    def _fill_hole(self, position: int, offset: int, size: int, tags_code: int) -> None:
        mapped = self.mapped_file_queue.find_by_offset(position)
        if mapped is None:
            return
        in_file = position - mapped.file_from_offset
        old_offset, old_size, _tags = UNIT.unpack_from(mapped.buffer, in_file)
        if old_offset <= 0 and old_size <= 0:
            UNIT.pack_into(mapped.buffer, in_file, offset, size, tags_code)

    def _fill_blank_until(self, expect: int) -> None:
        queue = self.mapped_file_queue
        while True:
            mapped = queue.last_or_create(expect)
            current = mapped.file_from_offset + mapped.wrote_position
            if current >= expect:
                return
            stop = min(expect - mapped.file_from_offset, mapped.file_size)
            mapped.reserve(stop)
            for position in range(mapped.wrote_position, stop, CQ_STORE_UNIT_SIZE):
                mapped.buffer[position : position + CQ_STORE_UNIT_SIZE] = _BLANK_UNIT
            mapped.wrote_position = stop

    def get_index_buffer(self, start_index: int) -> tuple[memoryview, int] | None:
        """Units from queue offset ``start_index`` to the end of its file; (view, index of
        the view's first unit). None when that offset has no file."""
        position = start_index * CQ_STORE_UNIT_SIZE
        if position < self.min_logic_offset:
            return None
        mapped = self.mapped_file_queue.find_by_offset(position)
        if mapped is None:
            return None
        in_file = position - mapped.file_from_offset
        if in_file >= mapped.wrote_position:
            return None
        return mapped.select(in_file), start_index

    def read_unit(self, index: int) -> tuple[int, int, int] | None:
        """(commit log offset, size, tag code) of queue offset ``index``, if written."""
        found = self.get_index_buffer(index)
        if found is None:
            return None
        offset, size, tags = UNIT.unpack_from(found[0], 0)
        return int(offset), int(size), int(tags)

    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset_in_queue(self) -> int:
        """One past the last message's queue offset (the next offset to be written)."""
        return self.mapped_file_queue.max_offset // CQ_STORE_UNIT_SIZE

    @property
    def last_offset(self) -> int:
        """Where the last unit's message ends in the commit log; -1 without a unit
        (RocketMQ's getLastOffset: read even when retention moved the min past it)."""
        mapped = self.mapped_file_queue.last()
        if mapped is None or mapped.wrote_position < CQ_STORE_UNIT_SIZE:
            return -1
        unit = mapped.read(mapped.wrote_position - CQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE)
        offset, size, _tags = UNIT.unpack(unit)
        return offset + size if is_message_unit(offset, size) else -1

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Move the min offset to the first unit whose message is still in the commit log."""
        for mapped in self.mapped_file_queue.mapped_files:
            start = max(self.min_logic_offset - mapped.file_from_offset, 0)
            if start >= mapped.wrote_position:
                continue
            units = _units(mapped, mapped.wrote_position, start)
            alive = np.flatnonzero(_message_mask(units) & (units["offset"] >= phy_min_offset))
            if len(alive):
                self.min_logic_offset = (
                    start + mapped.file_from_offset + int(alive[0]) * CQ_STORE_UNIT_SIZE
                )
                return
            self.min_logic_offset = mapped.file_from_offset + mapped.wrote_position

    def delete_expired_file(self, phy_min_offset: int) -> int:
        """Delete leading files whose last message is older than the commit log's min."""

        def expired(mapped: MappedFile) -> bool:
            last = mapped.wrote_position - CQ_STORE_UNIT_SIZE
            if last < 0:
                return False
            offset, size, _tags = UNIT.unpack(mapped.read(last, CQ_STORE_UNIT_SIZE))
            return offset + size <= phy_min_offset if is_message_unit(offset, size) else False

        deleted = self.mapped_file_queue.delete_expired_by_offset(expired)
        self.correct_min_offset(phy_min_offset)
        return deleted

    def find_offset(self, predicate: Callable[[int, int], bool]) -> int:
        """The first queue offset whose (commit log offset, size) satisfies a monotone
        ``predicate``; the max offset when none does. Binary search over every unit."""
        low, high = self.min_offset_in_queue, self.max_offset_in_queue
        while low < high:
            middle = (low + high) // 2
            unit = self.read_unit(middle)
            if unit is None or not is_message_unit(unit[0], unit[1]) or predicate(unit[0], unit[1]):
                high = middle
            else:
                low = middle + 1
        return low

    def flush(self, least_pages: int) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    @property
    def has_unflushed_units(self) -> bool:
        queue = self.mapped_file_queue
        return queue.flushed_where < queue.max_offset

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()

    def destroy(self) -> None:
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.mapped_file_queue.destroy()
