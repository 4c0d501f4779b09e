"""POP's names: retry topics, the revive topic and group, the revive log's tags
(RocketMQ 5's ``KeyBuilder`` and ``PopAckConstants``).

A message popped and not acked in time is written again to the group's POP retry topic:
``%RETRY%<group>_<topic>`` (v1, RocketMQ 5's default) or ``%RETRY%<group>+<topic>`` (v2,
``enableRetryTopicV2``). Check points and acks go to ``rmq_sys_REVIVE_LOG_<cluster>``, read
back by the revive service as the consumer group ``CID_RMQ_SYS_REVIVE_GROUP``.
"""

from __future__ import annotations

from typing import Final

from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX

#: The revive queue id a FIFO POP answer names: its messages have no check point; their
#: state lives in the ConsumerOrderInfoManager.
POP_ORDER_REVIVE_QUEUE: Final = 999
REVIVE_TOPIC_PREFIX: Final = SYSTEM_TOPIC_PREFIX + "REVIVE_LOG_"
REVIVE_GROUP: Final = "CID_RMQ_SYS_REVIVE_GROUP"
CK_TAG: Final = "ck"
ACK_TAG: Final = "ack"
BATCH_ACK_TAG: Final = "bAck"
#: RocketMQ's ``PopAckConstants.SPLIT``, the joiner of polling keys and unique ids.
SPLIT: Final = "@"
#: A check point is written to revive this long (ms) before its revive time.
ACK_TIME_INTERVAL_MS: Final = 1000
_SEPARATOR_V1: Final = "_"
_SEPARATOR_V2: Final = "+"


def build_cluster_revive_topic(cluster_name: str) -> str:
    """``rmq_sys_REVIVE_LOG_<cluster>``."""
    return REVIVE_TOPIC_PREFIX + cluster_name


def is_revive_topic(topic: str) -> bool:
    return topic.startswith(REVIVE_TOPIC_PREFIX)


def build_pop_retry_topic_v1(topic: str, group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group + _SEPARATOR_V1 + topic


def build_pop_retry_topic_v2(topic: str, group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group + _SEPARATOR_V2 + topic


def build_pop_retry_topic(topic: str, group: str, retry_v2: bool = False) -> str:
    """The group's POP retry topic for ``topic``."""
    if retry_v2:
        return build_pop_retry_topic_v2(topic, group)
    return build_pop_retry_topic_v1(topic, group)


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and _SEPARATOR_V2 in topic


def parse_normal_topic(topic: str, group: str) -> str:
    """The topic a POP retry topic of ``group`` retries (``topic`` itself if not one)."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2 = RETRY_GROUP_TOPIC_PREFIX + group + _SEPARATOR_V2
    if topic.startswith(v2):
        return topic[len(v2) :]
    return topic[len(RETRY_GROUP_TOPIC_PREFIX + group + _SEPARATOR_V1) :]


def build_polling_key(topic: str, group: str, queue_id: int) -> str:
    """``<topic>@<group>@<queueId>``: where POP long polling parks a request."""
    return f"{topic}{SPLIT}{group}{SPLIT}{queue_id}"
