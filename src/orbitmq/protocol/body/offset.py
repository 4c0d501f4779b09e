"""Consumer offset bodies: ``ConsumerOffsetSerializeWrapper`` (consumerOffset.json, where
RocketMQ's fastjson writes queue ids as bare numbers), ``ResetOffsetBody``
(RESET_CONSUMER_CLIENT_OFFSET 220, INVOKE_BROKER_TO_RESET_OFFSET 222) and ``OffsetMovedEvent``
(the body of messages in the OFFSET_MOVED_EVENT topic)."""

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


@dataclass(slots=True)
class OffsetMovedEvent(Body):
    """A pull asked for an offset the queue no longer (or does not yet) hold: the broker
    answered PULL_OFFSET_MOVED with ``offset_new`` and records it for operators."""

    consumer_group: str = ""
    message_queue: MessageQueue = field(default_factory=lambda: MessageQueue("", "", 0))
    offset_request: int = 0
    offset_new: int = 0
