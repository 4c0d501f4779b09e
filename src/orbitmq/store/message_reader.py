"""Reading a queue: consume-queue units to commit log records (RocketMQ's getMessage)."""

from __future__ import annotations

import os
from typing import Final

from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import UNIT, ConsumeQueue, is_message_unit
from orbitmq.store.get_message_result import GetMessageResult, GetMessageStatus
from orbitmq.store.message_filter import MessageFilter
from orbitmq.store.message_store_config import CQ_STORE_UNIT_SIZE, MessageStoreConfig

_NO_FILE: Final = -1


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
    pulling from a slave for such a backlog.
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
            limits = (max_msg_nums, max_total_bytes)
            _collect(config, commit_log, found[0], offset, limits, message_filter, result)
    return result


def _collect(
    config: MessageStoreConfig,
    commit_log: CommitLog,
    units: memoryview,
    offset: int,
    limits: tuple[int, int | None],
    message_filter: MessageFilter | None,
    result: GetMessageResult,
) -> None:
    max_msg_nums, max_total_bytes = limits
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    max_phy = commit_log.max_offset
    memory = TOTAL_PHYSICAL_MEMORY * config.access_message_in_memory_max_ratio // 100
    # RocketMQ's bound on units examined per read, in bytes of consume queue (16,000 bytes =
    # 800 units): a filter that matches little cannot make one pull scan a whole file.
    limit = min(
        len(units), max(16000, max_msg_nums * 20) // CQ_STORE_UNIT_SIZE * CQ_STORE_UNIT_SIZE
    )
    skip_until = _NO_FILE
    last_phy = 0
    read = 0
    buffers = result.message_buffers
    queue_offsets = result.message_queue_offsets
    for phy, size, tags_code in UNIT.iter_unpack(units[:limit]):
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
        queue_offsets.append(offset + read - 1)
        result.buffer_total_size += size
        result.status = GetMessageStatus.FOUND
        skip_until = _NO_FILE
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_phy - last_phy > memory
