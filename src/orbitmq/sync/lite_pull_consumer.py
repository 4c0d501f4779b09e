"""The blocking ``LitePullConsumer``."""

from __future__ import annotations

from collections.abc import Iterable

from orbitmq.client import LitePullConsumer as AsyncLitePullConsumer
from orbitmq.client import LitePullConsumerConfig
from orbitmq.common import MessageExt, MessageQueue
from orbitmq.sync.facade import GRACE_S, RebalancingConsumerFacade, applied, blocking


class LitePullConsumer(RebalancingConsumerFacade[AsyncLitePullConsumer, LitePullConsumerConfig]):
    """Blocking ``orbitmq.client.LitePullConsumer``: owns that consumer (assigned queues, pull
    tasks, the buffer of pulled batches, offsets) and the loop thread its pulls run on.
    Methods are safe from any thread; ``poll`` from one thread at a time, as in RocketMQ."""

    _client_type = AsyncLitePullConsumer
    _thread_name = "orbitmq-sync-lite-pull"
    _what = "lite pull consumer"

    subscribe = applied(AsyncLitePullConsumer.subscribe)
    assignment = applied(AsyncLitePullConsumer.assignment)
    fetch_message_queues = blocking(AsyncLitePullConsumer.fetch_message_queues)
    commit_sync = blocking(AsyncLitePullConsumer.commit_sync)
    persist_offsets = blocking(AsyncLitePullConsumer.persist_offsets)
    committed = blocking(AsyncLitePullConsumer.committed)
    seek = blocking(AsyncLitePullConsumer.seek)
    seek_to_begin = blocking(AsyncLitePullConsumer.seek_to_begin)
    seek_to_end = blocking(AsyncLitePullConsumer.seek_to_end)
    offset_for_timestamp = blocking(AsyncLitePullConsumer.offset_for_timestamp)

    # The queues are listed on the calling thread: an iterator it passes may not be safe to
    # drive from the loop's.
    def assign(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.assign, list(queues))

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.pause, list(queues))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.resume, list(queues))

    def poll(self, timeout_s: float | None = None) -> list[MessageExt]:
        """The next pulled batch, or [] after ``timeout_s`` (default poll_timeout_s)."""
        own = self._client.config.poll_timeout_s if timeout_s is None else timeout_s
        return self._call(self._client.poll(timeout_s), max(own, 0.0) + GRACE_S)
