"""The blocking ``SimpleConsumer``."""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.client import ClientConfig, MessageSelector, MessageView, SimpleConsumerConfig
from orbitmq.client import SimpleConsumer as AsyncSimpleConsumer
from orbitmq.sync.facade import (
    DEFAULT_CALL_TIMEOUT_S,
    GRACE_S,
    Facade,
    GroupFacade,
    applied,
    blocking,
)


class SimpleConsumer(GroupFacade[AsyncSimpleConsumer, SimpleConsumerConfig]):
    """Blocking ``orbitmq.client.SimpleConsumer``: owns that consumer (its subscriptions) and
    the loop thread its requests run on. Methods are safe from any thread, several at once
    (each receive is its own POP request)."""

    _client_type = AsyncSimpleConsumer
    _thread_name = "orbitmq-sync-simple"
    _what = "simple consumer"

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: SimpleConsumerConfig | None = None,
        subscription_expressions: Mapping[str, str | MessageSelector] | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        # GroupFacade's constructor without its client factory: this client also takes
        # its subscriptions at construction, as RocketMQ 5's builder does.
        Facade.__init__(
            self,
            lambda: AsyncSimpleConsumer(
                group,
                namesrv_addr=namesrv_addr,
                client_config=client_config,
                config=config,
                subscription_expressions=subscription_expressions,
            ),
            thread_name=f"{self._thread_name}-{group}",
            what=f"{self._what} {group}",
            call_timeout_s=call_timeout_s,
        )

    subscribe = blocking(AsyncSimpleConsumer.subscribe)
    unsubscribe = applied(AsyncSimpleConsumer.unsubscribe)
    ack = blocking(AsyncSimpleConsumer.ack)
    change_invisible_duration = blocking(AsyncSimpleConsumer.change_invisible_duration)

    @property
    def subscription_expressions(self) -> dict[str, MessageSelector]:
        """A copy, taken on the loop: topic -> its selector."""
        return self._apply(lambda: self._client.subscription_expressions)

    @property
    def fifo(self) -> bool:
        """Whether receives are FIFO POP (``config.fifo``, or the group's config)."""
        return self._apply(lambda: self._client.fifo)

    def receive(self, max_message_num: int, invisible_duration_s: float) -> list[MessageView]:
        """Up to ``max_message_num`` (1 to 32) messages of one subscribed topic, invisible
        to the group's other receives for ``invisible_duration_s`` (10 s to 12 h). Waits up
        to ``config.await_duration_s`` for one to arrive; [] when none did."""
        client = self._client
        wait_s = client.config.await_duration_s + client.instance.config.mq_client_api_timeout_s
        return self._call(client.receive(max_message_num, invisible_duration_s), wait_s + GRACE_S)
