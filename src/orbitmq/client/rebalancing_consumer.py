"""``RebalancingConsumer``: what the push and lite pull consumers share as members of a
consumer group: the client instance, the ``Rebalance`` of their subscriptions, the offset
store, the ``PullAPIWrapper`` that picks each queue's broker, ``async with`` over their
start and shutdown, and the answers the instance asks of every consumer (RocketMQ's
MQConsumerInner)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from orbitmq.client.consume_message_hook import (
    ConsumeMessageContext,
    ConsumeMessageHook,
    MessageFilterHook,
)
from orbitmq.client.consumer_config import ConsumerConfig
from orbitmq.client.errors import MQClientError
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance, own_or_borrow
from orbitmq.client.offset_store import OffsetStore, ReadOffsetType
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.producer import new_trace_dispatcher
from orbitmq.client.pull_api_wrapper import PullAPIWrapper
from orbitmq.client.rebalance import Rebalance, start_offset
from orbitmq.client.trace.async_trace_dispatcher import AsyncTraceDispatcher, TraceDispatcherType
from orbitmq.client.trace.trace_hooks import ConsumeMessageTraceHook
from orbitmq.common import AsyncLifetime, Clock, MessageExt, MessageQueue
from orbitmq.common.config_binding import config_properties
from orbitmq.filter import SubscriptionData, is_tag_type
from orbitmq.protocol import (
    MASTER_ID,
    ConsumerData,
    ConsumerRunningInfo,
    ConsumeStatus,
    ConsumeType,
)
from orbitmq.protocol.body.consumer_running import (
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
)

_ConfigT = TypeVar("_ConfigT", bound=ConsumerConfig)


class RebalancingConsumer(AsyncLifetime, Generic[_ConfigT]):
    """Owns a consumer's group name, configuration, ``Rebalance`` and offset store (set at
    start), and its MQClientInstance unless one is given. ``apply`` takes each rebalance
    round's new share, ``owned`` answers the queues of a topic the consumer holds. One
    event loop."""

    #: How the heartbeat describes this kind of consumer.
    CONSUME_TYPE: ClassVar[ConsumeType]

    def __init__(
        self,
        group: str,
        config: _ConfigT,
        *,
        namesrv_addr: str | None,
        client_config: ClientConfig | None,
        instance: MQClientInstance | None,
        apply: Callable[[set[MessageQueue]], Awaitable[None]],
        owned: Callable[[str], set[MessageQueue]],
        clock: Clock,
    ) -> None:
        if not group:
            raise MQClientError("consumer group is empty")
        self.group = group
        self.config = config
        self.instance, self._own_instance = own_or_borrow(instance, namesrv_addr, client_config)
        #: Wall time of pulls, locks and subscriptions; monotonic deadlines (tests move it).
        self._clock = clock
        self.rebalance = Rebalance(
            self.instance,
            group,
            config.message_model,
            config.allocate_strategy,
            config.rebalance_interval_s,
            apply,
            owned,
            clock,
        )
        self.offset_store: OffsetStore
        #: Which broker of a group each queue is pulled from (the brokers' suggestions).
        self.pull_api_wrapper = PullAPIWrapper(self.instance)
        #: The consumer's own filter (R38), applied to every pulled message.
        self.message_filter: MessageFilterHook | None = None
        self.hooks: list[ConsumeMessageHook] = []
        #: Sends this consumer's trace records; set at start when enable_trace is on.
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        #: Wall time of the start, for GET_CONSUMER_RUNNING_INFO (0 before it).
        self._start_timestamp_ms = 0

    @abstractmethod
    async def shutdown(self) -> None: ...

    async def _stop(self) -> None:
        await self.shutdown()

    @property
    def clock(self) -> Clock:
        """The clock the consumer was built with."""
        return self._clock

    def register_consume_hook(self, hook: ConsumeMessageHook) -> None:
        self.hooks.append(hook)

    def before_consume(
        self, messages: Sequence[MessageExt], mq: MessageQueue
    ) -> ConsumeMessageContext:
        context = ConsumeMessageContext(self.group, mq, messages)
        for hook in self.hooks:
            hook.consume_message_before(context)
        return context

    def after_consume(self, context: ConsumeMessageContext, success: bool) -> None:
        context.success = success
        for hook in self.hooks:
            hook.consume_message_after(context)

    async def _start_trace(self) -> None:
        """With enable_trace on: the trace dispatcher started (its producer on this
        consumer's client instance, which must be started) and the trace hook registered."""
        if not self.config.enable_trace or self.trace_dispatcher is not None:
            return
        dispatcher = new_trace_dispatcher(
            self.instance, self.group, TraceDispatcherType.CONSUME, self.config.trace_topic
        )
        await dispatcher.start()
        self.trace_dispatcher = dispatcher
        self.hooks.append(ConsumeMessageTraceHook(dispatcher, self._clock))

    async def _stop_trace(self) -> None:
        """The trace records still queued sent, then the trace producer stopped."""
        dispatcher, self.trace_dispatcher = self.trace_dispatcher, None
        if dispatcher is not None:
            self.hooks = [h for h in self.hooks if not isinstance(h, ConsumeMessageTraceHook)]
            await dispatcher.shutdown()

    def unsubscribe(self, topic: str) -> None:
        self.rebalance.unsubscribe(topic)

    def register_message_filter(self, message_filter: MessageFilterHook | None) -> None:
        """``message_filter(message) -> bool`` sees each pulled message before the
        application does; False drops it (R38: for what a tag or SQL92 expression cannot
        say). It runs on the consumer's event loop, so it must not block. None removes it."""
        self.message_filter = message_filter

    async def _check_client_in_broker(self) -> None:
        """CHECK_CLIENT_CONFIG of every non-TAG subscription with every known master, as
        RocketMQ's consumers do at start: a broker that refuses it (SQL92 not enabled, an
        expression it cannot compile) raises MQBrokerError with its code and remark."""
        instance = self.instance
        for subscription in self.subscriptions.values():
            if is_tag_type(subscription.expression_type):
                continue
            for addrs in list(instance.broker_addrs.values()):
                addr = addrs.get(MASTER_ID)
                if addr is not None:
                    await instance.api.check_client_config(
                        addr,
                        instance.client_id,
                        self.group,
                        subscription,
                        instance.config.mq_client_api_timeout_s,
                    )

    @property
    def subscriptions(self) -> dict[str, SubscriptionData]:
        return self.rebalance.subscriptions

    # -- what the client instance asks ------------------------------------------------------

    async def _running_info(
        self, queues: Mapping[MessageQueue, ProcessQueue], properties: Mapping[str, str]
    ) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO reports (RocketMQ's consumerRunningInfo of its push
        and lite pull consumers): the settings as properties (plus the kind's own
        ``properties``), subscriptions, and each queue held with its committed offset. The
        rates per topic are zeros: this client keeps no consume statistics yet."""
        props = config_properties([self.config, self.instance.config])
        props |= {
            "consumerGroup": self.group,
            PROP_CONSUMER_START_TIMESTAMP: str(self._start_timestamp_ms),
            PROP_CONSUME_TYPE: self.CONSUME_TYPE.name,
            **properties,
        }
        data = self.consumer_data()
        info = ConsumerRunningInfo(props, subscription_set=data.subscription_data_set)
        for mq, pq in sorted(queues.items()):
            offset = await self.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
            info.mq_table[mq] = pq.fill_process_queue_info(offset)
        info.status_table = {s.topic: ConsumeStatus() for s in data.subscription_data_set}
        return info

    def consumer_data(self) -> ConsumerData:
        return self.rebalance.consumer_data(self.CONSUME_TYPE, self.config.consume_from_where)

    def subscribed_topics(self) -> set[str]:
        return set(self.subscriptions)

    def update_topic_subscribe_info(self, topic: str, queues: set[MessageQueue]) -> None:
        self.rebalance.topic_queues[topic] = queues

    def rebalance_now(self) -> None:
        self.rebalance.wakeup()

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return await start_offset(
            self.instance,
            self.offset_store,
            mq,
            self.config.consume_from_where,
            self.config.consume_timestamp_ms,
            self._clock.now_ms(),
        )
