"""The broker: processors, managers of persisted metadata and services around the store.
For now: its configuration (broker.conf) and the managers of topics.json,
subscriptionGroup.json and consumerOffset.json."""

from orbitmq.broker.broker_config import BrokerConfig, BrokerStartupConfig, load_broker_config
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.subscription_group_config import SubscriptionGroupConfig
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import InvalidTopicError, TopicConfigManager

__all__ = [
    "BrokerConfig",
    "BrokerStartupConfig",
    "ConsumerOffsetManager",
    "InvalidTopicError",
    "SubscriptionGroupConfig",
    "SubscriptionGroupManager",
    "TopicConfigManager",
    "load_broker_config",
]
