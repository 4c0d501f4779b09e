"""``SimpleConsumer``: RocketMQ 5's simple consumer (R28) over the 4.x remoting port's POP
consumption. The application asks for up to N messages, each invisible to the group's other
consumers for a while; it acks each one it is done with, or changes how long it stays
invisible. A message neither acked nor changed in time is handed out again (to this or
another consumer of the group), its delivery attempt counted.

::

    async with SimpleConsumer("group", namesrv_addr="127.0.0.1:9876") as consumer:
        await consumer.subscribe("Orders", "TagA || TagB")      # or sql("amount > 100")
        for view in await consumer.receive(16, invisible_duration_s=30):
            ...
            await consumer.ack(view)

RocketMQ 5's API shape (``receive(maxMessageNum, invisibleDuration)``, ``ack(messageView)``,
``changeInvisibleDuration(messageView, duration)``, a long-polling ``awaitDuration``), served
by POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME instead of gRPC. Each receive
asks one broker serving the topic (round robin over the subscribed topics, then over the
topic's brokers), all its queues at once.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from orbitmq.client.errors import MQBrokerError, MQClientError
from orbitmq.client.message_selector import MessageSelector, selector_of
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance, own_or_borrow
from orbitmq.client.pop_api import PopAPI, receipt_handle_of
from orbitmq.common import AsyncLifetime, MessageExt, topic_problem
from orbitmq.common import message_const as mc
from orbitmq.filter import SubscriptionParseError
from orbitmq.protocol import MASTER_ID, ConsumeFromWhere, ConsumerData, ConsumeType, MessageModel
from orbitmq.protocol import SubscriptionData as SubscriptionDataBody
from orbitmq.protocol.header import (
    POP_MAX_MSG_NUMS,
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
)
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.pop_extra_info import ExtraInfo, ExtraInfoError
from orbitmq.remoting import RemotingError

log = logging.getLogger(__name__)

#: RocketMQ 5's limits for a receive's invisible duration (its proxy's
#: minInvisibleTimeMillsForRecv and maxInvisibleTimeMills), the same over remoting here so
#: that code moving between the two protocols meets the same rules.
MIN_INVISIBLE_DURATION_S: Final = 10.0
MAX_INVISIBLE_DURATION_S: Final = 12 * 3600.0
#: A new group starts at the end of each queue (RocketMQ 5's ConsumeInitMode.MAX, what its
#: proxy pops with); a queue whose messages are all still in memory is read from its start.
_INIT_MODE_MAX: Final = 1
_QUEUE_ID_ALL: Final = -1


@dataclass
class SimpleConsumerConfig:
    """RocketMQ 5's SimpleConsumer settings. Times in seconds. Read by the consumer at each
    receive; change them from its event loop only."""

    #: How long a receive waits at the broker for a message when none is there (long
    #: polling, RocketMQ 5's awaitDuration).
    await_duration_s: float = 30.0
    #: Receive as a FIFO group: within a message queue, the next messages are handed out
    #: only after the previous ones are acked or their invisible time is over. None: as the
    #: group's config on the brokers says (RocketMQ 5: consumeMessageOrderly=true, read at
    #: start, as RocketMQ 5's proxy reads it for each receive).
    fifo: bool | None = None


@dataclass(eq=False)
class MessageView:
    """A received message (RocketMQ 5's ``MessageView``): the stored message, the broker it
    came from and its receipt handle, which ``ack`` and ``change_invisible_duration`` need
    (the latter replaces it). Plain data; hand it back to the consumer that received it."""

    message: MessageExt
    broker_name: str
    receipt_handle: str

    @property
    def topic(self) -> str:
        return self.message.topic

    @property
    def message_id(self) -> str:
        """The id the producer's send returned (UNIQ_KEY), else the offset message id."""
        return self.message.unique_key or self.message.msg_id

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def properties(self) -> dict[str, str]:
        return self.message.properties

    @property
    def tag(self) -> str | None:
        return self.message.tags

    @property
    def keys(self) -> list[str]:
        return self.message.keys

    @property
    def message_group(self) -> str | None:
        """The FIFO message group (``__SHARDINGKEY``), None for other messages."""
        return self.message.properties.get(mc.PROPERTY_SHARDING_KEY)

    @property
    def delivery_attempt(self) -> int:
        """1 for the first delivery, one more for each redelivery."""
        return self.message.reconsume_times + 1

    @property
    def queue_id(self) -> int:
        return self.message.queue_id

    @property
    def queue_offset(self) -> int:
        return self.message.queue_offset

    @property
    def born_timestamp_ms(self) -> int:
        return self.message.born_timestamp


def _check_range(field_name: str, value: float, low: float, high: float, unit: str) -> None:
    if not low <= value <= high:
        raise MQClientError(f"{field_name}: {value} is not between {low:g} and {high:g} {unit}")


class SimpleConsumer(AsyncLifetime):
    """Owns the group's subscriptions (topic -> tag or SQL92 selector) and the round-robin
    positions over topics and brokers; owns its MQClientInstance unless one is given. One
    event loop; receive, ack and change from as many tasks of it as wanted."""

    CONSUME_TYPE: Final = ConsumeType.CONSUME_POP

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: SimpleConsumerConfig | None = None,
        instance: MQClientInstance | None = None,
        subscription_expressions: Mapping[str, str | MessageSelector] | None = None,
    ) -> None:
        if not group:
            raise MQClientError("consumer group is empty")
        self.group = group
        self.config = config or SimpleConsumerConfig()
        if self.config.await_duration_s < 0:
            raise MQClientError(
                f"await_duration_s: {self.config.await_duration_s} is negative; 0 or more"
            )
        self._subscriptions: dict[str, MessageSelector] = {}
        for topic, expression in (subscription_expressions or {}).items():
            self._subscriptions[topic] = self._selector(topic, expression)
        self.instance, self._own_instance = own_or_borrow(instance, namesrv_addr, client_config)
        self.pop_api = PopAPI(self.instance.remoting)
        self._topic_turn = itertools.count()
        self._broker_turns: dict[str, itertools.count[int]] = {}
        self._started = False
        #: The group's consumeMessageOrderly, once a broker told it.
        self._fifo: bool | None = None

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        """Register the group, fetch the subscribed topics' routes (an unknown topic
        raises NoRouteError) and heartbeat to their brokers."""
        if self._started:
            return
        self.instance.register_consumer(self)
        try:
            await self.instance.start()
            for topic in sorted(self._subscriptions):
                await self.instance.update_topic_route(topic)
        except BaseException:
            await self.instance.unregister_consumer(self.group)
            if self._own_instance:
                await self.instance.shutdown()
            raise
        await self.instance.send_heartbeat_to_all_brokers()
        self._started = True

    async def _order(self, addr: str) -> bool:
        """Whether to pop in order: ``config.fifo``, else the group's consumeMessageOrderly
        as the first broker asked says (asked once; a broker that cannot say counts as
        not orderly, and is asked again next time)."""
        if self.config.fifo is not None:
            return self.config.fifo
        if self._fifo is None:
            timeout_s = self.instance.config.mq_client_api_timeout_s
            try:
                self._fifo = await self.pop_api.group_consumes_orderly(addr, self.group, timeout_s)
            except (MQBrokerError, MQClientError, RemotingError) as exc:
                log.warning("group %s: its config at %s: %s", self.group, addr, exc)
                return False
        return self._fifo

    @property
    def fifo(self) -> bool:
        """Whether receives are FIFO POP: ``config.fifo``, else the group's config as the
        brokers hold it (known after the first receive; False before)."""
        return bool(self._fifo) if self.config.fifo is None else self.config.fifo

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    async def _stop(self) -> None:
        await self.shutdown()

    def _check_started(self) -> None:
        if not self._started:
            raise MQClientError(f"simple consumer {self.group} is not started: start() first")

    # -- subscriptions --------------------------------------------------------------------

    @staticmethod
    def _selector(topic: str, expression: str | MessageSelector) -> MessageSelector:
        problem = topic_problem(topic)
        if problem is not None:
            raise MQClientError(f"topic: {problem}")
        selector = selector_of(expression)
        try:
            selector.subscription(topic, 0)
        except SubscriptionParseError as exc:
            raise MQClientError(f"expression of {topic}: {exc}") from exc
        return selector

    async def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Receive ``topic``'s messages that ``expression`` selects (a tag expression such
        as ``"TagA || TagB"``, or ``sql(...)``), replacing an earlier expression. Once
        started, the topic's route is fetched now: an unknown topic raises NoRouteError."""
        selector = self._selector(topic, expression)
        if self._started:
            await self.instance.update_topic_route(topic)
        self._subscriptions[topic] = selector
        if self._started:
            await self.instance.send_heartbeat_to_all_brokers()

    def unsubscribe(self, topic: str) -> None:
        """Stop receiving ``topic``'s messages."""
        self._subscriptions.pop(topic, None)

    @property
    def subscription_expressions(self) -> dict[str, MessageSelector]:
        """A copy: topic -> its selector."""
        return dict(self._subscriptions)

    # -- receive, ack, change -------------------------------------------------------------

    async def receive(self, max_message_num: int, invisible_duration_s: float) -> list[MessageView]:
        """Up to ``max_message_num`` (1 to 32) messages of one subscribed topic, invisible
        to the group's other receives for ``invisible_duration_s`` (10 s to 12 h). Waits up
        to ``config.await_duration_s`` for one to arrive; [] when none did."""
        _check_range("max_message_num", max_message_num, 1, POP_MAX_MSG_NUMS, "messages")
        _check_range(
            "invisible_duration_s",
            invisible_duration_s,
            MIN_INVISIBLE_DURATION_S,
            MAX_INVISIBLE_DURATION_S,
            "seconds",
        )
        self._check_started()
        if not self._subscriptions:
            raise MQClientError(f"simple consumer {self.group} has no subscription: subscribe()")
        topics = sorted(self._subscriptions)
        topic = topics[next(self._topic_turn) % len(topics)]
        selector = self._subscriptions[topic]
        broker_name, addr = await self._pick_broker(topic)
        await_ms = int(self.config.await_duration_s * 1000)
        header = PopMessageRequestHeader(
            consumer_group=self.group,
            topic=topic,
            queue_id=_QUEUE_ID_ALL,
            max_msg_nums=max_message_num,
            invisible_time=int(invisible_duration_s * 1000),
            poll_time=await_ms,
            born_time=time.time_ns() // 1_000_000,
            init_mode=_INIT_MODE_MAX,
            exp_type=selector.expression_type,
            exp=selector.expression,
            order=await self._order(addr),
            broker_name=broker_name,
        )
        timeout_s = self.config.await_duration_s + self.instance.config.mq_client_api_timeout_s
        result = await self.pop_api.pop_message(addr, broker_name, header, timeout_s)
        return [MessageView(m, broker_name, receipt_handle_of(m)) for m in result.messages]

    async def _pick_broker(self, topic: str) -> tuple[str, str]:
        """The next broker (name, master address) with readable queues of ``topic``."""
        route = self.instance.routes.get(topic)
        if route is None:
            route = await self.instance.update_topic_route(topic)
        masters = {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}
        readable = sorted(
            q.broker_name
            for q in route.queue_datas
            if is_readable(q.perm) and q.read_queue_nums > 0 and masters.get(q.broker_name)
        )
        if not readable:
            raise MQClientError(f"topic {topic} has no readable queue on a master broker")
        turn = self._broker_turns.setdefault(topic, itertools.count())
        name = readable[next(turn) % len(readable)]
        addr = masters[name]
        assert addr is not None
        return name, addr

    def _handle(self, message: MessageView) -> ExtraInfo:
        try:
            return ExtraInfo.parse(message.receipt_handle)
        except ExtraInfoError as exc:
            raise MQClientError(f"receipt_handle: {exc}") from None

    async def ack(self, message: MessageView) -> None:
        """Done with ``message``: the group will not receive it again. An ack after the
        invisible time is accepted, as RocketMQ accepts it, but may come too late: the
        message may have been handed out again already. MQBrokerError when the broker
        refuses (a handle that is not one of its own, a topic or queue it no longer has);
        MQClientError for a handle that is not one at all."""
        handle = self._handle(message)
        self._check_started()
        addr = await self.instance.find_broker_addr_or_fetch(handle.broker_name, message.topic)
        header = AckMessageRequestHeader(
            consumer_group=self.group,
            topic=handle.real_topic(message.topic, self.group),
            queue_id=handle.queue_id,
            extra_info=message.receipt_handle,
            offset=message.queue_offset if handle.queue_offset is None else handle.queue_offset,
            broker_name=handle.broker_name,
        )
        await self.pop_api.ack_message(addr, header, self.instance.config.mq_client_api_timeout_s)

    async def change_invisible_duration(
        self, message: MessageView, invisible_duration_s: float
    ) -> str:
        """Keep ``message`` invisible for ``invisible_duration_s`` (0 to 12 h) from now on,
        instead of until its current deadline; 0 hands it out again at once. Returns the
        new receipt handle, which also replaces ``message.receipt_handle``: acks and
        changes after this one need it."""
        _check_range(
            "invisible_duration_s", invisible_duration_s, 0, MAX_INVISIBLE_DURATION_S, "seconds"
        )
        handle = self._handle(message)
        self._check_started()
        addr = await self.instance.find_broker_addr_or_fetch(handle.broker_name, message.topic)
        offset = message.queue_offset if handle.queue_offset is None else handle.queue_offset
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=self.group,
            topic=handle.real_topic(message.topic, self.group),
            queue_id=handle.queue_id,
            extra_info=message.receipt_handle,
            offset=offset,
            invisible_time=int(invisible_duration_s * 1000),
            broker_name=handle.broker_name,
        )
        timeout_s = self.instance.config.mq_client_api_timeout_s
        changed = await self.pop_api.change_invisible_time(addr, header, handle, timeout_s)
        message.receipt_handle = str(changed)
        message.message.properties[mc.PROPERTY_POP_CK] = message.receipt_handle
        return message.receipt_handle

    # -- what the client instance asks (RocketMQ's MQConsumerInner) -------------------------

    def consumer_data(self) -> ConsumerData:
        """The group in this client's heartbeats: a POP consumer and its subscriptions."""
        return ConsumerData(
            group_name=self.group,
            consume_type=self.CONSUME_TYPE,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            subscription_data_set=[
                SubscriptionDataBody(
                    topic=s.topic,
                    sub_string=s.sub_string,
                    tags_set=set(s.tags_set),
                    code_set=set(s.code_set),
                    sub_version=s.sub_version,
                    expression_type=s.expression_type,
                )
                for s in (
                    selector.subscription(topic, 0)
                    for topic, selector in sorted(self._subscriptions.items())
                )
            ],
        )

    def subscribed_topics(self) -> set[str]:
        return set(self._subscriptions)

    def update_topic_subscribe_info(self, topic: str, queues: object) -> None:
        """Nothing to keep: each receive reads the instance's route."""

    def rebalance_now(self) -> None:
        """Nothing to rebalance: POP shares the queues at the broker."""
