"""The push consumer's settings and listener types (RocketMQ's ``DefaultMQPushConsumer``
fields and ``MessageListener*``), in Python style."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from orbitmq.client.allocate_strategy import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueStrategy,
)
from orbitmq.common import MessageExt, MessageQueue
from orbitmq.protocol import ConsumeFromWhere, MessageModel


class ConsumeResult(enum.Enum):
    """What a listener answers. Returning None means SUCCESS; raising means the failure
    answer (RECONSUME_LATER, or SUSPEND_CURRENT_QUEUE_A_MOMENT for orderly listeners)."""

    SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass
class ConsumeContext:
    """Given to each listener call: the queue, and what the listener may change.

    ``delay_level_when_next_consume`` (concurrent): 0 lets the broker choose (3 + reconsume
    times), -1 sends failed messages straight to the dead letter queue.
    ``suspend_current_queue_time_s`` (orderly): how long the queue waits before a retry.
    ``ack_index`` (concurrent batches): messages up to this index succeeded even when the
    batch failed."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    suspend_current_queue_time_s: float = 1.0
    ack_index: int = -1


Listener = Callable[
    [Sequence[MessageExt], ConsumeContext],
    "ConsumeResult | Awaitable[ConsumeResult | None] | None",
]


@dataclass
class ConsumerConfig:
    """What the push and lite pull consumers' settings share (RocketMQ's names). Times in
    seconds."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: For CONSUME_FROM_TIMESTAMP: epoch milliseconds (RocketMQ: half an hour ago).
    consume_timestamp_ms: int | None = None
    allocate_strategy: AllocateMessageQueueStrategy = field(
        default_factory=AllocateMessageQueueAveragely
    )
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue_mib: int = 100
    rebalance_interval_s: float = 20.0
    #: Broadcasting: where offsets.json files live (RocketMQ's rocketmq.client.localOffsetStoreDir).
    local_offset_store_dir: str | None = None
    #: Message trace (R41): SubBefore and SubAfter records around every listener call (or
    #: poll), sent in the background to ``trace_topic`` (RocketMQ's enableMsgTrace and
    #: customizedTraceTopic; None: RMQ_SYS_TRACE_TOPIC).
    enable_trace: bool = False
    trace_topic: str | None = None


@dataclass
class PushConsumerConfig(ConsumerConfig):
    """RocketMQ's DefaultMQPushConsumer settings. Times in seconds."""

    consume_thread_min: int = 20
    consume_thread_max: int = 20
    consume_concurrently_max_span: int = 2000
    pull_interval_s: float = 0.0
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = 32
    #: -1: RocketMQ's default, 16 for concurrent consumers (unbounded retries in place for
    #: orderly ones in RocketMQ; here 16 too, then the dead letter queue, as R27 asks).
    max_reconsume_times: int = -1
    suspend_current_queue_time_s: float = 1.0
    consume_timeout_s: float = 15 * 60.0
    #: How long the broker holds a pull that finds nothing (long polling).
    broker_suspend_max_time_s: float = 15.0
    #: Orderly: how often queue locks are renewed at the broker.
    lock_renew_interval_s: float = 20.0

    @property
    def effective_max_reconsume_times(self) -> int:
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times
