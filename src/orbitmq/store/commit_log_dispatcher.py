"""The store's own commit-log dispatchers (RocketMQ's CommitLogDispatcherBuildConsumeQueue
and CommitLogDispatcherBuildIndex): what the reput service does with each dispatched batch."""

from __future__ import annotations

from collections.abc import Callable

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
        get_queue = self._get_queue
        mark_dirty = self._mark_dirty
        visible = batch.visible()
        topics = batch.topics
        queue_ids = batch.queue_ids
        queue_offsets = batch.queue_offsets
        count = len(topics)
        start = 0
        while start < count:
            if not visible[start]:  # prepared and rolled-back halves stay invisible
                start += 1
                continue
            topic, queue_id = topics[start], queue_ids[start]
            end = start + 1
            while (
                end < count
                and visible[end]
                and queue_ids[end] == queue_id
                and queue_offsets[end] == queue_offsets[end - 1] + 1
                and topics[end] == topic
            ):
                end += 1
            queue = get_queue(topic, queue_id)
            queue.put_units(
                queue_offsets[start],
                batch.commit_log_offsets[start:end],
                batch.sizes[start:end],
                batch.tags_codes[start:end],
            )
            mark_dirty(queue)
            start = end


class CommitLogDispatcherBuildIndex:
    """Adds the keys of dispatched messages to the index files (same threading as above)."""

    def __init__(self, index_service: IndexService):
        self._index_service = index_service

    def dispatch(self, batch: DispatchBatch) -> None:
        self._index_service.build_index(batch)
