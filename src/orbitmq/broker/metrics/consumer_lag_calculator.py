"""``ConsumerLagCalculator``: each online consumer group's lag, in-flight and ready
messages per subscribed topic, worked out from offsets when a scrape asks (RocketMQ 5's
``ConsumerLagCalculator`` for push and pull consumers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol.perm_name import is_readable, is_writeable
from orbitmq.store import MessageStore

#: ``(group, topic, queue id) -> the offset its last pull asked for next, or -1``.
PullOffsetLookup = Callable[[str, str, int], int]


@dataclass(slots=True)
class ConsumerLag:
    """One (group, topic): the gauges' values. Timestamps are store times in ms, 0 when
    nothing is waiting."""

    group: str
    topic: str
    #: Stored and not yet committed (rocketmq_consumer_lag_messages).
    lag: int = 0
    earliest_unconsumed_timestamp: int = 0
    #: Pulled and not yet committed (rocketmq_consumer_inflight_messages).
    inflight: int = 0
    earliest_unpulled_timestamp: int = 0
    #: Stored and not yet pulled (rocketmq_consumer_ready_messages).
    ready: int = 0


class ConsumerLagCalculator:
    """Reads the managers, the store and the pull offsets; owns nothing. Each (group,
    topic) an online group subscribes to (retry topics skipped, and topics neither readable
    nor writable) gets one ``ConsumerLag``, summed over the topic's write queues.
    A message count is the offset difference (RocketMQ's estimate by tag filter is not
    made). Event-loop confined, as the managers it reads."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        store: MessageStore,
        pull_offset: PullOffsetLookup,
    ) -> None:
        self.broker_config = broker_config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.store = store
        self.pull_offset = pull_offset

    def _group_topics(self) -> Iterator[tuple[str, str, int]]:
        """(group, topic, write queue count) of each online group's subscriptions."""
        broker_perm = self.broker_config.broker_permission
        for group in sorted(self.subscription_group_manager.group_names()):
            info = self.consumer_manager.get_consumer_group_info(group)
            if info is None:
                continue
            for topic in sorted(info.subscription_table):
                if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    continue
                config = self.topic_config_manager.select_topic_config(topic)
                if config is None:
                    continue
                perm = config.perm & broker_perm
                if not is_readable(perm) and not is_writeable(perm):
                    continue
                yield group, topic, config.write_queue_nums

    def calculate(self) -> list[ConsumerLag]:
        return [self._lag(group, topic, queues) for group, topic, queues in self._group_topics()]

    def _lag(self, group: str, topic: str, queue_count: int) -> ConsumerLag:
        result = ConsumerLag(group, topic)
        earliest_unconsumed: int | None = None
        earliest_unpulled: int | None = None
        for queue_id in range(queue_count):
            broker_offset = max(self.store.get_max_offset_in_queue(topic, queue_id), 0)
            committed = self.consumer_offset_manager.query_offset(group, topic, queue_id)
            pulled = self.pull_offset(group, topic, queue_id)
            consumer_offset = committed if committed >= 0 else broker_offset
            result.lag += max(broker_offset - consumer_offset, 0)
            earliest_unconsumed = self._earlier(
                earliest_unconsumed, topic, queue_id, consumer_offset
            )
            # In flight: pulled, not committed (a queue never pulled has nothing in flight).
            pull_offset = max(pulled, 0)
            commit_offset = committed if committed >= 0 else pull_offset
            result.inflight += max(pull_offset - commit_offset, 0)
            earliest_unpulled = self._earlier(earliest_unpulled, topic, queue_id, pull_offset)
            ready_from = pulled if pulled >= 0 else broker_offset
            result.ready += max(broker_offset - ready_from, 0)
        result.earliest_unconsumed_timestamp = earliest_unconsumed or 0
        result.earliest_unpulled_timestamp = earliest_unpulled or 0
        return result

    def _earlier(self, earliest: int | None, topic: str, queue_id: int, offset: int) -> int | None:
        """The earlier of ``earliest`` and the store time of the message at ``offset`` (None:
        no message there yet)."""
        timestamp = self.store.get_message_store_timestamp(topic, queue_id, offset)
        if timestamp <= 0:
            return earliest
        return timestamp if earliest is None else min(earliest, timestamp)
