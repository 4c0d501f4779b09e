"""The message types of RocketMQ 5 (``TopicMessageType``): what a topic accepts and what a
message is, and the one check between them that sends go through.

The one home of these rules: the broker's remoting send path, the gRPC endpoint (which tells
clients a topic's accepted types and refuses sends of another type) and the metrics labels
all ask here. Pure functions over a message's property map; safe from any thread.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX


class TopicMessageType(enum.Enum):
    """RocketMQ 5's ``TopicMessageType``: the value of a topic's ``message.type`` attribute
    and the kind of a message. UNSPECIFIED is what a missing topic has (every send to it
    fails the check); MIXED accepts every kind (created only when the broker's
    ``enableMixedMessageType`` is on)."""

    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"

    @property
    def metrics_value(self) -> str:
        """The ``message_type`` label of RocketMQ 5's metrics: the value in lower case."""
        return self.value.lower()


#: The properties that make a message a delayed one: a delay level (4.x), a delivery time
#: or a delay in seconds or milliseconds (5.x timer messages).
_DELAY_KEYS: Final = frozenset(
    {
        mc.PROPERTY_DELAY_TIME_LEVEL,
        mc.PROPERTY_TIMER_DELIVER_MS,
        mc.PROPERTY_TIMER_DELAY_SEC,
        mc.PROPERTY_TIMER_DELAY_MS,
    }
)
#: The 4.x commercial client's delivery time, which RocketMQ 5's metrics count as delay.
START_DELIVER_TIME: Final = "__STARTDELIVERTIME"
_METRICS_DELAY_KEYS: Final = _DELAY_KEYS | {START_DELIVER_TIME}
#: Any of these makes a message other than normal (a fast path: most messages have none).
TYPED_PROPERTY_KEYS: Final = _METRICS_DELAY_KEYS | {
    mc.PROPERTY_TRANSACTION_PREPARED,
    mc.PROPERTY_SHARDING_KEY,
}


def message_type_of(properties: Mapping[str, str]) -> TopicMessageType:
    """A message's type as RocketMQ 5 checks it on send (``parseFromMessageProperty``):
    TRANSACTION when ``TRAN_MSG`` is exactly "true", else DELAY when it carries a delay
    level or a timer property, else FIFO when it has a message group (``__SHARDINGKEY``),
    else NORMAL."""
    if TYPED_PROPERTY_KEYS.isdisjoint(properties):
        return TopicMessageType.NORMAL
    if properties.get(mc.PROPERTY_TRANSACTION_PREPARED) == "true":
        return TopicMessageType.TRANSACTION
    if not _DELAY_KEYS.isdisjoint(properties):
        return TopicMessageType.DELAY
    if mc.PROPERTY_SHARDING_KEY in properties:
        return TopicMessageType.FIFO
    return TopicMessageType.NORMAL


def metrics_message_type_of(properties: Mapping[str, str]) -> TopicMessageType:
    """A message's type as RocketMQ 5's broker metrics label it
    (``BrokerMetricsManager.getMessageType``), which differs from the send check in three
    details: ``TRAN_MSG`` is read as a Java boolean (any case of "true"), a message group
    wins over a delay, and ``__STARTDELIVERTIME`` counts as a delay."""
    if TYPED_PROPERTY_KEYS.isdisjoint(properties):
        return TopicMessageType.NORMAL
    if properties.get(mc.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        return TopicMessageType.TRANSACTION
    if mc.PROPERTY_SHARDING_KEY in properties:
        return TopicMessageType.FIFO
    if not _METRICS_DELAY_KEYS.isdisjoint(properties):
        return TopicMessageType.DELAY
    return TopicMessageType.NORMAL


def message_type_problem(
    topic_type: TopicMessageType, message_type: TopicMessageType
) -> str | None:
    """Why a message of ``message_type`` may not go to a topic of ``topic_type``
    (RocketMQ 5 proxy's ``DefaultTopicMessageTypeValidator``, its text byte for byte), or
    None when it may: the types must be equal, or the topic MIXED; an UNSPECIFIED message
    never passes."""
    if message_type is TopicMessageType.UNSPECIFIED or (
        message_type is not topic_type and topic_type is not TopicMessageType.MIXED
    ):
        return (
            f"TopicMessageType validate failed, the expected type is {topic_type.value}, "
            f"but actual type is {message_type.value}"
        )
    return None


def is_message_type_checked(topic: str, properties: Mapping[str, str]) -> bool:
    """Whether a send to ``topic`` is checked at all: not for retry and dead letter topics
    (their messages keep the type they had), nor for a message the broker moves between
    its own stores (``TRANSFER_FLAG``), as RocketMQ 5's proxy skips them."""
    return not (
        topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        or topic.startswith(DLQ_GROUP_TOPIC_PREFIX)
        or mc.PROPERTY_TRANSFER_FLAG in properties
    )


def send_type_problem(
    topic: str, topic_type: TopicMessageType, properties: Mapping[str, str]
) -> str | None:
    """The whole send check: None when a message with ``properties`` may go to ``topic``
    of ``topic_type``, else the remark to answer (MESSAGE_ILLEGAL over remoting,
    MESSAGE_PROPERTY_CONFLICT_WITH_TYPE over gRPC, as RocketMQ 5's proxy maps it)."""
    if not is_message_type_checked(topic, properties):
        return None
    return message_type_problem(topic_type, message_type_of(properties))
