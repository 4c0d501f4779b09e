"""What a client says about its consumer when asked through the broker:
``ConsumerRunningInfo`` (GET_CONSUMER_RUNNING_INFO 307) and ``ConsumeMessageDirectlyResult``
(CONSUME_MESSAGE_DIRECTLY 309). Member names are fastjson's from RocketMQ's getters
(``getPullRT`` -> ``pullRT``, ``isDroped`` -> ``droped``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common import MessageQueue
from orbitmq.protocol.body.heartbeat import SubscriptionData
from orbitmq.protocol.body.json_codec import Body, json_name

#: ConsumerRunningInfo.properties keys RocketMQ's tools read.
PROP_NAMESERVER_ADDR: Final = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE: Final = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY: Final = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE: Final = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION: Final = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP: Final = "PROP_CONSUMER_START_TIMESTAMP"


@dataclass(slots=True)
class ProcessQueueInfo(Body):
    """One queue a consumer holds: its committed offset, the messages cached for the
    listener, its lock (orderly) and when it last pulled and consumed (epoch ms)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = field(default=0, metadata=json_name("cachedMsgSizeInMiB"))
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@dataclass(slots=True)
class ConsumeStatus(Body):
    """A consumer's rates in one topic (RocketMQ's ConsumerStatsManager)."""

    pull_rt: float = field(default=0.0, metadata=json_name("pullRT"))
    pull_tps: float = field(default=0.0, metadata=json_name("pullTPS"))
    consume_rt: float = field(default=0.0, metadata=json_name("consumeRT"))
    consume_ok_tps: float = field(default=0.0, metadata=json_name("consumeOKTPS"))
    consume_failed_tps: float = field(default=0.0, metadata=json_name("consumeFailedTPS"))
    consume_failed_msgs: int = 0


@dataclass(slots=True)
class ConsumerRunningInfo(Body):
    """One client's view of one consumer group: its settings as properties, subscriptions,
    the queues it holds and its rates per topic; ``jstack`` only when asked for."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None


class CMResult(enum.Enum):
    """What a listener answered to a message consumed directly (RocketMQ's CMResult)."""

    CR_SUCCESS = 0
    CR_LATER = 1
    CR_ROLLBACK = 2
    CR_COMMIT = 3
    CR_THROW_EXCEPTION = 4
    CR_RETURN_NULL = 5


@dataclass(slots=True)
class ConsumeMessageDirectlyResult(Body):
    """The outcome of handing one message to a consumer's listener outside its queues."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0
