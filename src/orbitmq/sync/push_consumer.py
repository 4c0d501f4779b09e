"""The blocking ``PushConsumer``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from orbitmq.client import ConsumeContext, ConsumeResult, MQClientError, PushConsumerConfig
from orbitmq.client import PushConsumer as AsyncPushConsumer
from orbitmq.common import MessageExt
from orbitmq.sync.facade import RebalancingConsumerFacade, applied, blocking

#: A sync PushConsumer's listener: a plain function, run on the consumer's thread pool.
#: Returning None (or ConsumeResult.SUCCESS) means consumed; raising means retry later.
SyncListener = Callable[[Sequence[MessageExt], ConsumeContext], ConsumeResult | None]


class PushConsumer(RebalancingConsumerFacade[AsyncPushConsumer, PushConsumerConfig]):
    """Blocking ``orbitmq.client.PushConsumer``: owns that consumer (subscriptions, queues,
    pull loops, offsets) and the loop thread its pulls run on. The listener is a plain
    function and runs on the consumer's thread pool (consume_thread_max threads), never on
    the loop. Its methods are safe from any thread."""

    _client_type = AsyncPushConsumer
    _thread_name = "orbitmq-sync-consumer"
    _what = "push consumer"

    subscribe = applied(AsyncPushConsumer.subscribe)
    persist_offsets = blocking(AsyncPushConsumer.persist_offsets)
    send_message_back = blocking(AsyncPushConsumer.send_message_back)

    def register_listener(self, listener: SyncListener, *, orderly: bool = False) -> None:
        """``listener(messages, context)``, a plain function: returning means consumed,
        raising means retry later. ``orderly`` gives each queue's messages one at a time."""
        if inspect.iscoroutinefunction(listener):
            # It would run on this facade's private loop, which blocking code cannot reach.
            raise MQClientError(
                f"listener {listener!r}: the blocking PushConsumer takes a plain function; "
                "use orbitmq.client.PushConsumer for async def listeners"
            )
        self._apply(self._client.register_listener, listener, orderly=orderly)
