"""Recovery (R17): find where the commit log's valid records end, cut what follows, and
bring consume queues and index back in line with it.

Normal path (no abort file): scan the last three commit log files. Abnormal path (abort
file present: the process died): scan from the newest file whose first record is older than
the checkpoint, with every record's body CRC checked. Either way a record stops the scan when
its magic code, lengths, physical offset or CRC are wrong; everything after it is zeroed and
the number of non-zero bytes removed is reported.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.dispatch_batch import parse_records
from orbitmq.store.index_service import IndexService
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.store_checkpoint import StoreCheckpoint

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RecoveryReport:
    """What recovery found and did."""

    abnormal: bool
    #: Commit log offset where the scan began.
    scan_from_offset: int
    #: One past the last valid record: the new end of the commit log.
    valid_offset: int
    #: Non-zero bytes removed past ``valid_offset`` (a torn or corrupt tail).
    truncated_bytes: int
    records_checked: int
    #: Why the scan stopped before the end of the data, if it did.
    problem: str
    #: Where dispatch resumes to rebuild consume queues and index.
    reput_from_offset: int = 0


def _first_record_timestamp(mapped: MappedFile, max_record_size: int) -> int:
    head = mapped.select(0, max_record_size + 4096)
    parsed = parse_records(head, mapped.file_from_offset, check_crc=False, max_bytes=1)
    stamps = parsed.batch.store_timestamps
    return stamps[0] if stamps else -1


def _start_file_index(
    files: list[MappedFile],
    abnormal: bool,
    checkpoint: StoreCheckpoint,
    index_safe: bool,
    max_record_size: int,
) -> int:
    if not abnormal:
        return max(0, len(files) - 3)
    limit = checkpoint.min_timestamp_index if index_safe else checkpoint.min_timestamp
    for index in range(len(files) - 1, -1, -1):
        timestamp = _first_record_timestamp(files[index], max_record_size)
        if 0 < timestamp <= limit:
            return index
    return 0


def scan_commit_log(
    commit_log: CommitLog,
    abnormal: bool,
    checkpoint: StoreCheckpoint,
    check_crc: bool,
    index_safe: bool = False,
) -> RecoveryReport:
    """Find the end of the valid records and truncate the commit log there."""
    queue = commit_log.mapped_file_queue
    files = queue.mapped_files
    if not files:
        return RecoveryReport(abnormal, 0, 0, 0, 0, "")
    max_record_size = commit_log.config.max_message_size
    start = _start_file_index(files, abnormal, checkpoint, index_safe, max_record_size)
    scan_from = files[start].file_from_offset
    checked = 0
    problem = ""
    valid = scan_from
    for mapped in files[start:]:
        view = mapped.select(0, mapped.file_size)
        position = 0
        end_of_file = False
        while position < mapped.file_size:
            parsed = parse_records(
                view[position:],
                mapped.file_from_offset + position,
                check_crc=check_crc or abnormal,
                max_record_size=max_record_size,
            )
            checked += len(parsed.batch)
            position += parsed.consumed
            end_of_file = parsed.end_of_file
            if parsed.end_of_file:
                break
            if parsed.problem:
                if bytes(view[position : position + 8]).strip(b"\0"):
                    problem = parsed.problem
                break
        # A file closed by an end-of-file record is whole: when it is the last one (the
        # next could not be created, a full disk), the log ends after it, marker kept.
        valid = mapped.file_from_offset + (mapped.file_size if end_of_file else position)
        if not end_of_file or problem:
            break
    truncated = queue.truncate_dirty_files(valid)
    queue.flushed_where = valid
    if truncated or problem:
        log.warning(
            "commit log recovery: cut %d byte(s) after offset %d (%s)",
            truncated,
            valid,
            problem or "torn tail",
        )
    return RecoveryReport(abnormal, scan_from, valid, truncated, checked, problem)


def recover_logic(
    report: RecoveryReport,
    commit_log: CommitLog,
    consume_queues: Iterable[ConsumeQueue],
    index_service: IndexService | None,
    index_was_built: bool = False,
) -> None:
    """Cut consume queues and index past the valid end and decide where dispatch resumes
    to rebuild what is missing."""
    valid = report.valid_offset
    cover = -1
    holes: list[int] = []
    # Min offsets are corrected after the dispatch that follows (the store's
    # topic-queue table recovery, as RocketMQ's recoverTopicQueueTable).
    for queue in consume_queues:
        queue.recover()
        queue.truncate_dirty_logic_files(valid)
        cover = max(cover, queue.max_physic_offset)
        if queue.hole_resume_offset is not None:
            holes.append(max(queue.hole_resume_offset, commit_log.min_offset))
    reput_from = cover if cover >= 0 else commit_log.min_offset
    reput_from = min([reput_from, *holes])
    if report.abnormal:
        reput_from = min(reput_from, report.scan_from_offset)
    if index_service is not None:
        rebuild_from = index_service.truncate(valid)
        if rebuild_from >= 0:
            reput_from = min(reput_from, rebuild_from)
        elif not index_service.index_files and index_was_built:
            # The index directory is gone while messages were indexed before: rebuild it.
            reput_from = commit_log.min_offset
    report.reput_from_offset = max(min(reput_from, valid), commit_log.min_offset)
