"""Reading a queue: consume-queue units to commit log records (RocketMQ's getMessage)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import (
    BLANK_UNIT_SIZE,
    UNIT,
    UNIT_DTYPE,
    ConsumeQueue,
    is_message_unit,
)
from orbitmq.store.get_message_result import ColdBytes, GetMessageResult, GetMessageStatus
from orbitmq.store.message_filter import MessageFilter, matches_every_message
from orbitmq.store.message_store_config import CQ_STORE_UNIT_SIZE, MessageStoreConfig

_NO_FILE: Final = -1
#: Records this close to the commit log's end were written moments ago and are taken as
#: in the page cache without asking mincore (a call costs about 1.5 us from Python, on
#: every pull at the head otherwise). 64 MiB is half a minute of a 2 MB/s producer.
RECENT_BYTES: Final = 64 * 1024 * 1024


def _total_physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


TOTAL_PHYSICAL_MEMORY: Final = _total_physical_memory()


def _is_batch_full(
    config: MessageStoreConfig,
    size: int,
    max_msg_nums: int,
    total_bytes: int,
    count: int,
    in_disk: bool,
) -> bool:
    if count == 0:
        return False
    if count >= max_msg_nums:
        return True
    if in_disk:
        return (
            total_bytes + size > config.max_transfer_bytes_on_message_in_disk
            or count > config.max_transfer_count_on_message_in_disk - 1
        )
    return (
        total_bytes + size > config.max_transfer_bytes_on_message_in_memory
        or count > config.max_transfer_count_on_message_in_memory - 1
    )


def read_messages(
    config: MessageStoreConfig,
    commit_log: CommitLog,
    queue: ConsumeQueue | None,
    offset: int,
    max_msg_nums: int,
    message_filter: MessageFilter | None,
    max_total_bytes: int | None = None,
) -> GetMessageResult:
    """Messages of ``queue`` from ``offset``: statuses and next offsets as RocketMQ answers.

    Records are views into the mapped commit log, not copies. A read is bounded by the
    transfer limits (in memory: 256 KiB / 32 messages; a backlog older than
    accessMessageInMemoryMaxRatio of RAM counts as on disk: 64 KiB / 8) and suggests
    pulling from a slave for such a backlog. While ``commit_log.cold_bytes`` is set the
    result's ``cold_data_sum`` counts the bytes of its cold records (the cold data flow
    control).
    """
    if queue is None:
        return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, next_begin_offset=0)
    min_offset = queue.min_offset_in_queue
    max_offset = queue.max_offset_in_queue
    result = GetMessageResult(
        GetMessageStatus.NO_MESSAGE_IN_QUEUE,
        next_begin_offset=offset,
        min_offset=min_offset,
        max_offset=max_offset,
    )
    if max_offset == 0:
        result.next_begin_offset = 0
    elif offset < min_offset:
        result.status, result.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
    elif offset == max_offset:
        result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
    elif offset > max_offset:
        result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
        result.next_begin_offset = min_offset if min_offset == 0 else max_offset
    else:
        found = queue.get_index_buffer(offset)
        if found is None:
            result.status = GetMessageStatus.OFFSET_FOUND_NULL
            units_per_file = queue.file_size // CQ_STORE_UNIT_SIZE
            result.next_begin_offset = offset + units_per_file - offset % units_per_file
        else:
            memory = TOTAL_PHYSICAL_MEMORY * config.access_message_in_memory_max_ratio // 100
            request = _ReadRequest(
                config,
                commit_log,
                offset,
                max_msg_nums,
                max_total_bytes,
                commit_log.max_offset,
                memory,
                commit_log.cold_bytes,
            )
            _collect(request, found[0], message_filter, result)
    return result


@dataclass(frozen=True, slots=True)
class _ReadRequest:
    """One read's inputs and bounds, shared by the two ways of taking units."""

    config: MessageStoreConfig
    commit_log: CommitLog
    #: The queue offset of the first unit.
    offset: int
    max_msg_nums: int
    max_total_bytes: int | None
    #: The commit log's max offset when the read began.
    max_phy: int
    #: How far behind ``max_phy`` a record may be and still count as in memory.
    memory: int
    #: Counts the cold bytes of the records taken; None: not counted.
    cold_bytes: ColdBytes | None


def _collect(
    request: _ReadRequest,
    units: memoryview,
    message_filter: MessageFilter | None,
    result: GetMessageResult,
) -> None:
    """Fill ``result`` from the units of one consume-queue file, from the read's queue
    offset on: by ``_take_run`` when it can, else message by message."""
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    # RocketMQ's bound on units examined per read, in bytes of consume queue (16,000 bytes =
    # 800 units): a filter that matches little cannot make one pull scan a whole file.
    limit = min(
        len(units),
        max(16000, request.max_msg_nums * CQ_STORE_UNIT_SIZE)
        // CQ_STORE_UNIT_SIZE
        * CQ_STORE_UNIT_SIZE,
    )
    window = units[:limit]
    if matches_every_message(message_filter) and _take_run(request, window, result):
        return
    _take_each(request, window, message_filter, result)


def _take_run(request: _ReadRequest, units: memoryview, result: GetMessageResult) -> bool:
    """Take what ``_take_each`` would from ``units`` when every message is wanted, with the
    per-message work done in C: the units read as one array, limits by prefix sums, one
    file lookup per run of records in the same commit log file. Returns False, leaving
    ``result`` as it was, when the loop is needed: a unit that is not a message, a backlog
    counted as on disk (its smaller limits), a record not readable (file gone, or not
    written that far).
    """
    config, offset = request.config, request.offset
    window = len(units) // CQ_STORE_UNIT_SIZE
    # The loop takes the first message whatever the limits, and stops at the unit after
    # the last it takes: no more units than that are looked at.
    most = max(1, min(request.max_msg_nums, config.max_transfer_count_on_message_in_memory))
    count = min(window, most + 1)
    looked_at = np.frombuffer(units, UNIT_DTYPE, count)
    phys, sizes = looked_at["offset"], looked_at["size"]
    lowest = int(phys.min())
    if lowest < 0 or sizes.min() <= 0 or sizes.max() >= BLANK_UNIT_SIZE:
        return False
    if request.max_phy - lowest > request.memory:
        return False
    byte_limit = config.max_transfer_bytes_on_message_in_memory
    if request.max_total_bytes is not None:
        byte_limit = min(byte_limit, request.max_total_bytes)
    totals = np.cumsum(sizes, dtype=np.int64)
    fit = int(np.searchsorted(totals, byte_limit, side="right"))
    taken = max(1, min(count, most, fit))
    probe = request.max_phy - lowest > RECENT_BYTES
    read = _records(request.commit_log, phys[:taken], sizes[:taken], probe)
    if read is None:
        return False
    records, resident = read
    if not resident:
        result.cold_offsets = phys[:taken].tolist()
    result.message_buffers.extend(records)
    result.message_queue_offsets.extend(range(offset, offset + taken))
    result.buffer_total_size = int(totals[taken - 1])
    if request.cold_bytes is not None:
        result.cold_data_sum = request.cold_bytes(phys[:taken].tolist(), sizes[:taken].tolist())
    result.status = GetMessageStatus.FOUND
    result.next_begin_offset = offset + taken
    # suggest_pulling_from_slave stays False: no unit looked at is on disk.
    return True


def _records(
    commit_log: CommitLog,
    phys: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int32],
    probe: bool,
) -> tuple[list[memoryview], bool] | None:
    """Views of the records at ``phys`` with ``sizes``, as ``CommitLog.get_message`` gives
    them, looking up each commit log file once, and whether all of them are in the page
    cache (asked only when ``probe``); None when one is not readable."""
    files = commit_log.mapped_file_queue
    records: list[memoryview] = []
    resident = True
    first = 0
    while first < len(phys):
        mapped = files.find_by_offset(int(phys[first]))
        if mapped is None:
            return None
        base = mapped.file_from_offset
        view = mapped.select(0)
        # Units follow the commit log, so this file's run ends where offsets reach its end
        # (past ``first`` at least: that one is in the file); the bounds check below keeps
        # the answer exact even if they did not.
        stop = first + int(np.searchsorted(phys[first:], base + mapped.file_size))
        starts = phys[first:stop] - base
        ends = starts + sizes[first:stop]
        low, high = int(starts.min()), int(ends.max())
        if low < 0 or high > len(view):
            return None
        records += [view[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        resident = resident and (not probe or mapped.is_resident(low, high - low))
        first = stop
    return records, resident


def _take_each(
    request: _ReadRequest,
    units: memoryview,
    message_filter: MessageFilter | None,
    result: GetMessageResult,
) -> None:
    """RocketMQ's loop over the units one by one: any filter, holes, files being removed."""
    config, commit_log, offset = request.config, request.commit_log, request.offset
    max_msg_nums, max_total_bytes = request.max_msg_nums, request.max_total_bytes
    max_phy, memory = request.max_phy, request.memory
    skip_until = _NO_FILE
    last_phy = 0
    read = 0
    taken_phys: list[int] = []
    cold = False
    buffers = result.message_buffers
    queue_offsets = result.message_queue_offsets
    for phy, size, tags_code in UNIT.iter_unpack(units):
        if not is_message_unit(phy, size):
            read += 1
            continue
        last_phy = phy
        if skip_until != _NO_FILE and phy < skip_until:
            read += 1
            continue
        in_disk = max_phy - phy > memory
        if _is_batch_full(
            config, size, max_msg_nums, result.buffer_total_size, len(buffers), in_disk
        ) or (
            buffers
            and max_total_bytes is not None
            and result.buffer_total_size + size > max_total_bytes
        ):
            break
        read += 1
        if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code):
            result.filtered_count += 1
            continue
        record = commit_log.get_message(phy, size)
        if record is None:
            if not buffers:
                result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
            skip_until = commit_log.roll_next_file(phy)
            continue
        if message_filter is not None and not message_filter.is_matched_by_commit_log(record):
            result.filtered_count += 1
            continue
        buffers.append(record)
        taken_phys.append(phy)
        cold = cold or in_disk
        queue_offsets.append(offset + read - 1)
        result.buffer_total_size += size
        result.status = GetMessageStatus.FOUND
        skip_until = _NO_FILE
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_phy - last_phy > memory
    if request.cold_bytes is not None and taken_phys:
        result.cold_data_sum = request.cold_bytes(taken_phys, [len(b) for b in buffers])
    if taken_phys and (
        cold
        or (
            max_phy - min(taken_phys) > RECENT_BYTES
            and not _resident(commit_log, taken_phys, buffers)
        )
    ):
        result.cold_offsets = taken_phys


def _resident(commit_log: CommitLog, phys: list[int], records: list[memoryview]) -> bool:
    """Whether every record (at ``phys``, as long as ``records``) is in the page cache: one
    mincore call per commit log file over the span its records cover."""
    files = commit_log.mapped_file_queue
    index = 0
    while index < len(phys):
        mapped = files.find_by_offset(phys[index])
        if mapped is None:
            return False
        base = mapped.file_from_offset
        file_end = base + mapped.file_size
        low = high = phys[index]
        while index < len(phys) and phys[index] < file_end:
            high = max(high, phys[index] + len(records[index]))
            index += 1
        if not mapped.is_resident(low - base, high - low):
            return False
    return True
