"""The OrbitMQ client: producer, consumers, admin."""

from orbitmq.client.acl_admin import AclAdmin
from orbitmq.client.acl_admin_api import PlainAccessConfig
from orbitmq.client.acl_client_rpc_hook import AclClientRPCHook, SessionCredentials
from orbitmq.client.admin_api import MQAdminAPI
from orbitmq.client.admin_client import AdminClient, ConsumerProgress, QueueProgress, QueueStatus
from orbitmq.client.allocate_strategy import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    MachineRoomResolver,
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_by_machine_room,
    allocate_consistent_hash,
    message_queue_key,
)
from orbitmq.client.backoff import Backoff
from orbitmq.client.broker_admin import BrokerAdmin
from orbitmq.client.consistent_hash_router import ConsistentHashRouter, HashFunction, md5_hash
from orbitmq.client.consume_message_hook import (
    ConsumeMessageContext,
    ConsumeMessageHook,
    MessageFilterHook,
)
from orbitmq.client.consumer_config import (
    ConsumeContext,
    ConsumeResult,
    Listener,
    PushConsumerConfig,
)
from orbitmq.client.dead_letters import DeadLetter, ResendResult, ResendStatus
from orbitmq.client.errors import (
    MQBrokerError,
    MQClientError,
    NoRouteError,
    SendTimeoutError,
    WrongServerError,
)
from orbitmq.client.group_admin import (
    ConsumerNotOnlineError,
    GroupAdmin,
    MessageTrack,
    TrackType,
)
from orbitmq.client.latency_fault import (
    DEFAULT_LATENCY_MAX_MS,
    DEFAULT_NOT_AVAILABLE_DURATION_MS,
    ISOLATION_LATENCY_MS,
    FaultItem,
    LatencyFaultTolerance,
    MQFaultStrategy,
)
from orbitmq.client.lite_pull_consumer import LitePullConsumer, LitePullConsumerConfig
from orbitmq.client.message_selector import MessageSelector, sql, tag
from orbitmq.client.mq_client_api import MQClientAPI, OffsetNotFoundError
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance
from orbitmq.client.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from orbitmq.client.process_queue import ProcessQueue, PullPauseReason
from orbitmq.client.producer import (
    MessageQueueSelector,
    Producer,
    ProducerConfig,
    SendContext,
    SendMessageHook,
    select_by_hash,
)
from orbitmq.client.pull_result import PullResult, PullStatus
from orbitmq.client.push_consumer import PushConsumer
from orbitmq.client.queue_reader import (
    OffsetOutOfRangeError,
    QueueReader,
    queue_offsets,
    read_queue_range,
)
from orbitmq.client.queue_scan import ScanRange, scan_messages
from orbitmq.client.send_result import SendResult, SendStatus
from orbitmq.client.simple_consumer import MessageView, SimpleConsumer, SimpleConsumerConfig
from orbitmq.client.topic_publish_info import ThreadLocalIndex, TopicPublishInfo
from orbitmq.client.transaction_listener import TransactionListener
from orbitmq.client.transaction_producer import TransactionProducer, TransactionSendResult
from orbitmq.client.transaction_verdict import LocalTransactionState, TransactionVerdict
from orbitmq.remoting import TlsSystemConfig

__all__ = [
    "DEFAULT_LATENCY_MAX_MS",
    "DEFAULT_NOT_AVAILABLE_DURATION_MS",
    "ISOLATION_LATENCY_MS",
    "AclAdmin",
    "AclClientRPCHook",
    "AdminClient",
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "Backoff",
    "BrokerAdmin",
    "ClientConfig",
    "ConsistentHashRouter",
    "ConsumeContext",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumeResult",
    "ConsumerNotOnlineError",
    "ConsumerProgress",
    "DeadLetter",
    "FaultItem",
    "GroupAdmin",
    "HashFunction",
    "LatencyFaultTolerance",
    "Listener",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "LocalFileOffsetStore",
    "LocalTransactionState",
    "MQAdminAPI",
    "MQBrokerError",
    "MQClientAPI",
    "MQClientError",
    "MQClientInstance",
    "MQFaultStrategy",
    "MachineRoomResolver",
    "MessageFilterHook",
    "MessageQueueSelector",
    "MessageSelector",
    "MessageTrack",
    "MessageView",
    "NoRouteError",
    "OffsetNotFoundError",
    "OffsetOutOfRangeError",
    "OffsetStore",
    "PlainAccessConfig",
    "ProcessQueue",
    "Producer",
    "ProducerConfig",
    "PullPauseReason",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "PushConsumerConfig",
    "QueueProgress",
    "QueueReader",
    "QueueStatus",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "ResendResult",
    "ResendStatus",
    "ScanRange",
    "SendContext",
    "SendMessageHook",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "SessionCredentials",
    "SimpleConsumer",
    "SimpleConsumerConfig",
    "ThreadLocalIndex",
    "TlsSystemConfig",
    "TopicPublishInfo",
    "TrackType",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "TransactionVerdict",
    "WrongServerError",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "allocate_by_machine_room",
    "allocate_consistent_hash",
    "md5_hash",
    "message_queue_key",
    "queue_offsets",
    "read_queue_range",
    "scan_messages",
    "select_by_hash",
    "sql",
    "tag",
]
