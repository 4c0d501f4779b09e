"""The store's own commit-log dispatchers (RocketMQ's CommitLogDispatcherBuildConsumeQueue
and CommitLogDispatcherBuildIndex): what the reput service does with each dispatched batch."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.dispatch_batch import DispatchBatch
from orbitmq.store.index_service import IndexService


class CommitLogDispatcherBuildConsumeQueue:
    """Writes the consume-queue units of plain and committed messages. Called from one
    dispatching thread (or the loop) at a time, as the reput service does."""

    def __init__(
        self,
        get_or_create_consume_queue: Callable[[str, int], ConsumeQueue],
        mark_dirty: Callable[[ConsumeQueue], None],
    ):
        self._get_queue = get_or_create_consume_queue
        self._mark_dirty = mark_dirty

    def dispatch(self, batch: DispatchBatch) -> None:
        """Each queue's units of the round in one ``put_units`` (a write per file), and
        the queue marked for the flush once: a few calls per queue, not per message."""
        get_queue = self._get_queue
        mark_dirty = self._mark_dirty
        commit_log_offsets = batch.commit_log_offsets
        sizes = batch.sizes
        tags_codes = batch.tags_codes
        queue_offsets = batch.queue_offsets
        for (topic, queue_id), rows in batch.queue_rows().items():
            queue = get_queue(topic, queue_id)
            if len(rows) == 1:
                row = rows[0]
                queue.put_message_position_info(
                    commit_log_offsets[row], sizes[row], tags_codes[row], queue_offsets[row]
                )
            else:
                pick = itemgetter(*rows)
                offsets = pick(queue_offsets)
                first = offsets[0]
                if offsets == tuple(range(first, first + len(rows))):
                    queue.put_units(first, pick(commit_log_offsets), pick(sizes), pick(tags_codes))
                else:
                    # Not one run (a queue whose offsets jump): each unit at its own offset.
                    for row in rows:
                        queue.put_message_position_info(
                            commit_log_offsets[row],
                            sizes[row],
                            tags_codes[row],
                            queue_offsets[row],
                        )
            mark_dirty(queue)


class CommitLogDispatcherBuildIndex:
    """Adds the keys of dispatched messages to the index files (same threading as above)."""

    def __init__(self, index_service: IndexService):
        self._index_service = index_service

    def dispatch(self, batch: DispatchBatch) -> None:
        self._index_service.build_index(batch)
