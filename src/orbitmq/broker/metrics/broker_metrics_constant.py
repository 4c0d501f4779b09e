"""RocketMQ 5's broker metric names, label keys, label values and histogram buckets
(``BrokerMetricsConstant``, ``DefaultStoreMetricsConstant`` and the views of
``BrokerMetricsManager``)."""

from __future__ import annotations

from typing import Final

COUNTER_MESSAGES_IN_TOTAL: Final = "rocketmq_messages_in_total"
COUNTER_MESSAGES_OUT_TOTAL: Final = "rocketmq_messages_out_total"
COUNTER_THROUGHPUT_IN_TOTAL: Final = "rocketmq_throughput_in_total"
COUNTER_THROUGHPUT_OUT_TOTAL: Final = "rocketmq_throughput_out_total"
HISTOGRAM_MESSAGE_SIZE: Final = "rocketmq_message_size"

GAUGE_BROKER_PERMISSION: Final = "rocketmq_broker_permission"
GAUGE_TOPIC_NUM: Final = "rocketmq_topic_number"
GAUGE_CONSUMER_GROUP_NUM: Final = "rocketmq_consumer_group_number"
GAUGE_PRODUCER_CONNECTIONS: Final = "rocketmq_producer_connections"
GAUGE_CONSUMER_CONNECTIONS: Final = "rocketmq_consumer_connections"

GAUGE_CONSUMER_LAG_MESSAGES: Final = "rocketmq_consumer_lag_messages"
GAUGE_CONSUMER_LAG_LATENCY: Final = "rocketmq_consumer_lag_latency"
GAUGE_CONSUMER_INFLIGHT_MESSAGES: Final = "rocketmq_consumer_inflight_messages"
GAUGE_CONSUMER_QUEUEING_LATENCY: Final = "rocketmq_consumer_queueing_latency"
GAUGE_CONSUMER_READY_MESSAGES: Final = "rocketmq_consumer_ready_messages"

GAUGE_STORAGE_SIZE: Final = "rocketmq_storage_size"
GAUGE_STORAGE_FLUSH_BEHIND: Final = "rocketmq_storage_flush_behind_bytes"
GAUGE_STORAGE_DISPATCH_BEHIND: Final = "rocketmq_storage_dispatch_behind_bytes"

NODE_TYPE_BROKER: Final = "broker"
LABEL_TOPIC: Final = "topic"
LABEL_CONSUMER_GROUP: Final = "consumer_group"
LABEL_MESSAGE_TYPE: Final = "message_type"
LABEL_IS_RETRY: Final = "is_retry"
LABEL_IS_SYSTEM: Final = "is_system"
LABEL_LANGUAGE: Final = "language"
LABEL_VERSION: Final = "version"
LABEL_CONSUME_MODE: Final = "consume_mode"
LABEL_STORAGE_TYPE: Final = "storage_type"
LABEL_STORAGE_MEDIUM: Final = "storage_medium"
DEFAULT_STORAGE_TYPE: Final = "local"
DEFAULT_STORAGE_MEDIUM: Final = "disk"

#: The message size buckets, in bytes: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB.
MESSAGE_SIZE_BUCKETS: Final = (1024, 4096, 512 * 1024, 1024 * 1024, 2048 * 1024, 4096 * 1024)

#: ``MixAll.CID_RMQ_SYS_PREFIX``: consumer groups of RocketMQ's own.
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
