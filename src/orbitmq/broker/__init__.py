"""The broker: processors, managers of persisted metadata and services around the store.
For now: its configuration (broker.conf) and the managers of topics.json,
subscriptionGroup.json and consumerOffset.json."""

from orbitmq.broker.ack_message_processor import AckMessageProcessor
from orbitmq.broker.admin_broker_processor import AdminBrokerProcessor
from orbitmq.broker.broker_config import BrokerConfig, BrokerStartupConfig, load_broker_config
from orbitmq.broker.broker_controller import BrokerController
from orbitmq.broker.change_invisible_time_processor import ChangeInvisibleTimeProcessor
from orbitmq.broker.client_housekeeping import ClientHousekeeping
from orbitmq.broker.client_manage_processor import ClientManageProcessor
from orbitmq.broker.consumer_manage_processor import ConsumerManageProcessor
from orbitmq.broker.consumer_manager import (
    ClientChannelInfo,
    ConsumerGroupInfo,
    ConsumerIdsChangeNotifier,
    ConsumerManager,
)
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.pop_components import PopComponents
from orbitmq.broker.pop_message_processor import PopMessageProcessor
from orbitmq.broker.pop_revive_service import PopReviveService
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.pull_message_processor import PullMessageProcessor
from orbitmq.broker.pull_request_hold_service import PullRequest, PullRequestHoldService
from orbitmq.broker.query_message_processor import QueryMessageProcessor
from orbitmq.broker.rebalance_lock_manager import (
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    RebalanceLockManager,
)
from orbitmq.broker.schedule_message_service import ScheduleMessageService, ScheduleStore
from orbitmq.broker.send_message_back_processor import SendMessageBackProcessor
from orbitmq.broker.send_message_processor import SendMessageProcessor
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import InvalidTopicError, TopicConfigManager
from orbitmq.protocol.body import SubscriptionGroupConfig

__all__ = [
    "REBALANCE_LOCK_MAX_LIVE_TIME_MS",
    "AckMessageProcessor",
    "AdminBrokerProcessor",
    "BrokerConfig",
    "BrokerController",
    "BrokerStartupConfig",
    "ChangeInvisibleTimeProcessor",
    "ClientChannelInfo",
    "ClientHousekeeping",
    "ClientManageProcessor",
    "ConsumerGroupInfo",
    "ConsumerIdsChangeNotifier",
    "ConsumerManageProcessor",
    "ConsumerManager",
    "ConsumerOffsetManager",
    "InvalidTopicError",
    "PopComponents",
    "PopMessageProcessor",
    "PopReviveService",
    "ProducerManager",
    "PullMessageProcessor",
    "PullRequest",
    "PullRequestHoldService",
    "QueryMessageProcessor",
    "RebalanceLockManager",
    "ScheduleMessageService",
    "ScheduleStore",
    "SendMessageBackProcessor",
    "SendMessageProcessor",
    "SubscriptionGroupConfig",
    "SubscriptionGroupManager",
    "TopicConfigManager",
    "load_broker_config",
]
