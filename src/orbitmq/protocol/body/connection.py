"""Who is connected to a broker: ``ConsumerConnection`` (GET_CONSUMER_CONNECTION_LIST 203),
``ProducerConnection`` (GET_PRODUCER_CONNECTION_LIST 204), each a set of ``Connection``, and
``GroupList`` (QUERY_TOPIC_CONSUME_BY_WHO 300). RocketMQ keeps the sets as Java HashSets;
here they are lists, written in client id order."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.protocol.body.heartbeat import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.language_code import LanguageCode


@dataclass(slots=True)
class Connection(Body):
    """One client's connection: its id, the address the broker sees, its language and the
    version its requests carry (RocketMQ's MQVersion ordinal)."""

    client_id: str = ""
    client_addr: str = ""
    language: LanguageCode = LanguageCode.JAVA
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(Body):
    """A consumer group's online clients and what the last heartbeat declared. The enums are
    None when the clients sent none."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None


@dataclass(slots=True)
class ProducerConnection(Body):
    """A producer group's online clients."""

    connection_set: list[Connection] = field(default_factory=list)


@dataclass(slots=True)
class GroupList(Body):
    """Consumer group names (RocketMQ: a HashSet, written sorted here)."""

    group_list: set[str] = field(default_factory=set)
