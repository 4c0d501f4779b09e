"""What a slave does to its own store with what its master sends: append raw commit log
bytes at the master's offsets (RocketMQ's appendToCommitLog) and, beyond RocketMQ, cut a
tail the master no longer has."""

from __future__ import annotations

import logging

from orbitmq.store.errors import StoreError
from orbitmq.store.message_store import MessageStore

log = logging.getLogger(__name__)


def append_to_commit_log(store: MessageStore, offset: int, data: bytes) -> None:
    """Write ``data`` at physical ``offset``, which must be where the log ends (or, in an
    empty log, anywhere: the first file starts at the file boundary below it). The bytes
    are the master's, end-of-file blank records included, so the files match byte for byte.

    From the slave's HA thread only (a slave has no other writer). Raises StoreError when
    ``offset`` is not the end of the log, OSError when the disk refuses."""
    queue = store.commit_log.mapped_file_queue
    view = memoryview(data)
    while view:
        mapped = queue.last_or_create(offset)
        position = offset - mapped.file_from_offset
        if position != mapped.wrote_position:
            raise StoreError(
                f"slave append at offset {offset}: the commit log ends at "
                f"{mapped.file_from_offset + mapped.wrote_position}"
            )
        size = min(len(view), mapped.file_size - position)
        mapped.reserve(position + size)
        mapped.write(position, view[:size])
        mapped.wrote_position = position + size
        mapped.store_timestamp = store.clock.now_ms()
        offset += size
        view = view[size:]
    store.reput_message_service.wakeup()
    if store.flush_real_time_service is not None:
        store.flush_real_time_service.wakeup()


def truncate_commit_log(store: MessageStore, offset: int) -> int:
    """Cut the commit log, consume queues and index back to physical ``offset`` (a slave
    ahead of its master); returns how many non-zero bytes of log went. The reput service
    pauses meanwhile and dispatches again from where the cut left whole data."""
    reput = store.reput_message_service
    with reput.paused():
        removed = store.commit_log.mapped_file_queue.truncate_dirty_files(offset)
        for queue in store.all_consume_queues():
            queue.truncate_dirty_logic_files(offset)
        rebuild_from = offset
        if store.config.message_index_enable:
            index_from = store.index_service.truncate(offset)
            if index_from >= 0:
                rebuild_from = min(rebuild_from, index_from)
        reput.reput_from_offset = min(reput.reput_from_offset, rebuild_from)
        store.recover_topic_queue_table()
    reput.wakeup()
    return removed
