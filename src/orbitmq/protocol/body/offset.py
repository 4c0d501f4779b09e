"""Consumer offset bodies: ``ConsumerOffsetSerializeWrapper`` (consumerOffset.json, where
RocketMQ's fastjson writes queue ids as bare numbers) and ``ResetOffsetBody``
(RESET_CONSUMER_CLIENT_OFFSET 220, INVOKE_BROKER_TO_RESET_OFFSET 222)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from orbitmq.common import MessageQueue
from orbitmq.protocol.body.json_codec import Body

#: Joins topic and group in an offset table key: ``"TopicTest@my_group"``.
TOPIC_GROUP_SEPARATOR: Final = "@"


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(Body):
    """Committed offsets: ``"topic@group"`` to queue id to consume-queue offset."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class ResetOffsetBody(Body):
    """The consume-queue offset each queue should restart from."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)
