"""Appending several prepared messages of any topics and queues with one write: the commit
log's group put (``CommitLog.put_message_group``), used by the timer store's deliveries.

Runs under the commit log's put lock, like every append."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from orbitmq.common.record_layout import END_FILE_MIN_BLANK_LENGTH
from orbitmq.store.put_message_result import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

if TYPE_CHECKING:
    from orbitmq.store.commit_log import CommitLog, _PreparedMessage

log = logging.getLogger(__name__)


def append_group_locked(
    commit_log: CommitLog, group: list[_PreparedMessage], now: int
) -> list[PutMessageResult]:
    """Encode the leading messages of ``group`` that fit the current file and write them at
    once; their results, none when the first does not fit (the caller appends it alone,
    which ends the file and starts the next)."""
    mapped = commit_log.mapped_file_queue.last()
    if mapped is None or mapped.is_full():
        return []
    base = mapped.wrote_position
    room = mapped.file_size - base - END_FILE_MIN_BLANK_LENGTH
    wrote_offset = mapped.file_from_offset + base
    chunks: list[bytes] = []
    placed: list[tuple[int, int, int]] = []  # (physical offset, bytes, queue offset)
    next_offsets: dict[str, int] = {}
    table = commit_log.topic_queue_table
    for prepared in group:
        key = f"{prepared.topic}-{prepared.queue_id}"
        queue_offset = next_offsets.get(key, table.get(key, 0))
        data = prepared.encode(commit_log, wrote_offset, queue_offset, now).data
        if len(data) > room:
            break
        room -= len(data)
        chunks.append(data)
        placed.append((wrote_offset, len(data), queue_offset))
        wrote_offset += len(data)
        next_offsets[key] = queue_offset + 1
    if not chunks:
        return []
    data = b"".join(chunks)
    try:
        mapped.reserve(base + len(data))
        mapped.write(base, data)
    except OSError as exc:
        # Nothing moved, as for a single append: the next write goes over this one.
        log.error("commit log write at %d failed: %s", placed[0][0], exc)
        failure = PutMessageResult(
            PutMessageStatus.UNKNOWN_ERROR, None, f"commit log write failed: {exc}"
        )
        return [failure] * len(placed)
    mapped.store_timestamp = now
    mapped.wrote_position = base + len(data)
    table.update(next_offsets)
    return [
        PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(
                AppendMessageStatus.PUT_OK,
                wrote_offset=offset,
                wrote_bytes=size,
                store_timestamp=now,
                logics_offset=queue_offset,
                msg_num=1,
                record_offsets=[offset],
                store_host_bytes=commit_log.store_host_bytes,
            ),
        )
        for offset, size, queue_offset in placed
    ]
