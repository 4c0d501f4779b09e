"""Typed remoting bodies: the JSON that rides in a RemotingCommand's body.

Each body is a dataclass with RocketMQ's member names (``from_json`` / ``to_json``). Reading
accepts fastjson's non-standard output (unquoted integer and object map keys); writing is
always standard JSON.
"""

from orbitmq.protocol.body.broker_stats import (
    GROUP_GET_NUMS,
    TOPIC_PUT_NUMS,
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeStatsList,
    stats_key,
)
from orbitmq.protocol.body.cluster import (
    NAMESPACE_ORDER_TOPIC_CONFIG,
    ClusterInfo,
    KVTable,
    RegisterBrokerBody,
)
from orbitmq.protocol.body.connection import (
    Connection,
    ConsumerConnection,
    GroupList,
    ProducerConnection,
)
from orbitmq.protocol.body.consume_queue import ConsumeQueueData, QueryConsumeQueueResponseBody
from orbitmq.protocol.body.consumer_running import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeStatus,
    ProcessQueueInfo,
)
from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.body.heartbeat import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from orbitmq.protocol.body.json_codec import Body, json_name
from orbitmq.protocol.body.json_text import dumps_body, fastjson_to_standard, loads_body
from orbitmq.protocol.body.lock import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from orbitmq.protocol.body.offset import (
    TOPIC_GROUP_SEPARATOR,
    ConsumerOffsetSerializeWrapper,
    OffsetMovedEvent,
    ResetOffsetBody,
)
from orbitmq.protocol.body.pop import (
    BatchAck,
    BatchAckMessageRequestBody,
    bit_set_bytes,
    bit_set_indexes,
)
from orbitmq.protocol.body.route import MASTER_ID, BrokerData, QueueData, TopicRouteData
from orbitmq.protocol.body.stats import ConsumeStats, OffsetWrapper, TopicOffset, TopicStatsTable
from orbitmq.protocol.body.subscription_group import SubscriptionGroupConfig
from orbitmq.protocol.body.topic import (
    DataVersion,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
)

__all__ = [
    "GROUP_GET_NUMS",
    "MASTER_ID",
    "NAMESPACE_ORDER_TOPIC_CONFIG",
    "TOPIC_GROUP_SEPARATOR",
    "TOPIC_PUT_NUMS",
    "BatchAck",
    "BatchAckMessageRequestBody",
    "Body",
    "BodyError",
    "BrokerData",
    "BrokerStatsData",
    "BrokerStatsItem",
    "CMResult",
    "CheckClientRequestBody",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "GetConsumerListByGroupResponseBody",
    "GroupList",
    "HeartbeatData",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "OffsetMovedEvent",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "QueryConsumeQueueResponseBody",
    "QueueData",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "bit_set_bytes",
    "bit_set_indexes",
    "dumps_body",
    "fastjson_to_standard",
    "json_name",
    "loads_body",
    "stats_key",
]
