"""``Rebalance``: a consumer's subscriptions and its share of their queues (RocketMQ's
``RebalanceImpl``), shared by the push and lite pull consumers; and ``start_offset``, where a
queue newly owned starts (``computePullFromWhere``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from orbitmq.client.allocate_strategy import AllocateMessageQueueStrategy
from orbitmq.client.errors import NoRouteError
from orbitmq.client.message_selector import MessageSelector, selector_of
from orbitmq.client.mq_client_instance import MQClientInstance
from orbitmq.client.offset_store import OffsetStore, ReadOffsetType
from orbitmq.common import SUB_ALL, Clock, MessageQueue
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import ConsumeFromWhere, ConsumerData, ConsumeType, MessageModel
from orbitmq.protocol import SubscriptionData as SubscriptionDataBody

log = logging.getLogger(__name__)

#: How soon a rebalance looks again for a subscribed topic that had no route.
MISSING_ROUTE_RETRY_S: Final = 1.0
#: CONSUME_FROM_TIMESTAMP without a timestamp starts half an hour back, as RocketMQ does.
DEFAULT_CONSUME_TIMESTAMP_AGO_MS: Final = 30 * 60 * 1000


class Rebalance:
    """Owns a consumer's subscriptions, the readable queues of each subscribed topic (from
    the routes the client instance refreshes) and the rebalance loop: at ``run``'s start,
    every ``interval_s``, on ``wakeup`` (the broker's NOTIFY_CONSUMER_IDS_CHANGED), and after
    1 s while a subscribed topic has no route yet. Each round hands the consumer's new share
    to ``apply``. One event loop."""

    def __init__(
        self,
        instance: MQClientInstance,
        group: str,
        message_model: MessageModel,
        strategy: AllocateMessageQueueStrategy,
        interval_s: float,
        apply: Callable[[set[MessageQueue]], Awaitable[None]],
        owned: Callable[[str], set[MessageQueue]],
        clock: Clock,
    ) -> None:
        self.instance = instance
        self._clock = clock  # the subscriptions' versions
        self.group = group
        self.message_model = message_model
        self.strategy = strategy
        self.interval_s = interval_s
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_queues: dict[str, set[MessageQueue]] = {}
        self._apply = apply
        self._owned = owned
        self._wakeup = asyncio.Event()

    def subscribe(self, topic: str, expression: str | MessageSelector = SUB_ALL) -> None:
        selector = selector_of(expression)
        self.subscriptions[topic] = selector.subscription(topic, self._clock.now_ms())
        self._wakeup.set()

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        self._wakeup.set()

    def wakeup(self) -> None:
        self._wakeup.set()

    def consumer_data(
        self, consume_type: ConsumeType, consume_from_where: ConsumeFromWhere
    ) -> ConsumerData:
        """The group's entry in this client's heartbeat."""
        return ConsumerData(
            group_name=self.group,
            consume_type=consume_type,
            message_model=self.message_model,
            consume_from_where=consume_from_where,
            subscription_data_set=[
                SubscriptionDataBody(
                    topic=s.topic,
                    sub_string=s.sub_string,
                    tags_set=set(s.tags_set),
                    code_set=set(s.code_set),
                    sub_version=s.sub_version,
                    expression_type=s.expression_type,
                )
                for s in self.subscriptions.values()
            ],
        )

    async def fetch_routes(self) -> None:
        """Routes of every subscribed topic, as far as they exist yet (a topic may be
        subscribed before it is created). A name server that cannot be reached, or is no
        name server, raises: as RocketMQ's consumer start does, so a wrong namesrv_addr
        fails the start within one request timeout instead of leaving a silent consumer."""
        for topic in list(self.subscriptions):
            try:
                await self.instance.update_topic_route(topic)
            except NoRouteError as exc:
                log.info("no route for %s yet: %s", topic, exc)

    async def run(self) -> None:
        """Rebalance until cancelled."""
        while True:
            # A topic without a route yet (typically %RETRY%group, which the broker creates
            # on this consumer's first heartbeat) is looked for again soon, not in 20 s.
            missing = any(not self.topic_queues.get(t) for t in self.subscriptions)
            interval = MISSING_ROUTE_RETRY_S if missing else self.interval_s
            try:
                async with asyncio.timeout(interval):
                    await self._wakeup.wait()
            except TimeoutError:
                pass
            self._wakeup.clear()
            try:
                await self.do_rebalance()
            except Exception:
                log.exception("rebalance of %s failed", self.group)

    async def do_rebalance(self) -> None:
        """This consumer's share of every subscribed topic, handed to ``apply``."""
        wanted: set[MessageQueue] = set()
        for topic in sorted(self.subscriptions):
            wanted |= await self._allocate(topic)
        await self._apply(wanted)

    async def _allocate(self, topic: str) -> set[MessageQueue]:
        queues = self.topic_queues.get(topic)
        if not queues:
            try:
                await self.instance.update_topic_route(topic)
            except Exception as exc:
                log.debug("no route for %s yet: %s", topic, exc)
                return set()
            # Its brokers may be new to this client: they must know the consumer before
            # they can list it among the group's consumers.
            await self.instance.send_heartbeat_to_all_brokers()
            queues = self.topic_queues.get(topic)
        if not queues:
            return set()
        if self.message_model is MessageModel.BROADCASTING:
            return set(queues)
        addr = self.instance.any_broker_addr_of(topic)
        if addr is None:
            return set()
        try:
            cids = await self.instance.api.get_consumer_id_list(
                addr, self.group, self.instance.config.mq_client_api_timeout_s
            )
        except Exception as exc:
            # Keep what is owned rather than drop it on a transient failure.
            log.warning("consumer list of %s from %s failed: %s", self.group, addr, exc)
            return self._owned(topic)
        if not cids:
            return set()
        return set(
            self.strategy.allocate(
                self.group, self.instance.client_id, sorted(queues), sorted(cids)
            )
        )


async def start_offset(
    instance: MQClientInstance,
    offset_store: OffsetStore,
    mq: MessageQueue,
    consume_from_where: ConsumeFromWhere,
    consume_timestamp_ms: int | None,
    now_ms: int,
) -> int:
    """RebalancePushImpl / RebalanceLitePullImpl.computePullFromWhere: the group's committed
    offset, else where ``consume_from_where`` starts a new group. -1 when it cannot be known
    now (the broker could not be asked). ``now_ms`` is the time CONSUME_FROM_TIMESTAMP counts back
    from when the config names no timestamp."""
    last = await offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
    if last >= 0:
        return last
    if last != -1:
        return -1
    if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return 0
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        stamp = consume_timestamp_ms
        if stamp is None:
            stamp = now_ms - DEFAULT_CONSUME_TIMESTAMP_AGO_MS
        return await instance.search_offset(mq, stamp)
    return await instance.max_offset(mq)
