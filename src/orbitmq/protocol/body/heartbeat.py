"""What clients tell the broker in HEART_BEAT (34) and CHECK_CLIENT_CONFIG (46), and what
GET_CONSUMER_LIST_BY_GROUP (38) answers: ``HeartbeatData`` with its producer, consumer and
subscription data."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from orbitmq.common import EXPRESSION_TYPE_TAG
from orbitmq.protocol.body.json_codec import Body, json_name


class ConsumeType(enum.Enum):
    """Pull (the application pulls) or push (the client library pulls for it).

    Written by name; the C++ client sends the ordinal (declaration order).
    """

    CONSUME_ACTIVELY = 0
    CONSUME_PASSIVELY = 1
    #: RocketMQ 5: a POP consumer (the broker records it for groups that pop).
    CONSUME_POP = 2


class MessageModel(enum.Enum):
    """Each message to every consumer of the group, or to one of them."""

    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(enum.Enum):
    """Where a group with no committed offset starts. The middle three are deprecated in
    RocketMQ but still arrive from old clients; the ordinals must stay as declared."""

    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class SubscriptionData(Body):
    """One topic a consumer group subscribes to, with its filter expression.

    ``tags_set`` and ``code_set`` (the tags' Java hash codes) are what tag filtering uses;
    ``sub_version`` orders subscriptions (a newer one replaces an older one).
    """

    class_filter_mode: bool = False
    topic: str = ""
    sub_string: str = ""
    tags_set: set[str] = field(default_factory=set)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = field(default_factory=_now_ms)
    expression_type: str = EXPRESSION_TYPE_TAG


@dataclass(slots=True)
class ProducerData(Body):
    group_name: str = ""


@dataclass(slots=True)
class ConsumerData(Body):
    """A consumer group as one client runs it. The enums are None when the client sent none."""

    group_name: str = ""
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(slots=True)
class HeartbeatData(Body):
    """A client's heartbeat: its id and the producer and consumer groups it runs.

    RocketMQ keeps the data sets as Java sets; here they are lists in the order sent.
    """

    client_id: str = field(default="", metadata=json_name("clientID"))
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)


@dataclass(slots=True)
class CheckClientRequestBody(Body):
    """CHECK_CLIENT_CONFIG (46)'s body: a consumer asks whether a broker takes one of its
    subscriptions (an SQL92 expression compiles) before it starts consuming."""

    client_id: str = ""
    group: str = ""
    subscription_data: SubscriptionData | None = None


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(Body):
    """The client ids of a group's live consumers."""

    consumer_id_list: list[str] = field(default_factory=list)
