"""TopicConfig's RocketMQ 5 attributes on the wire: the JSON member, the compact form of
compressed REGISTER_BROKER bodies (a sixth field, JSON), and the message type they give."""

from __future__ import annotations

import orjson
import pytest

from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol.body import BodyError, TopicConfig


def test_json_carries_the_attributes_as_rocketmq_5_writes_them() -> None:
    config = TopicConfig("Orders", 4, 4, attributes={"message.type": "FIFO"})
    assert orjson.loads(config.to_json())["attributes"] == {"message.type": "FIFO"}
    assert TopicConfig.from_json(config.to_json()) == config
    # A 4.x body has no member: no attributes, NORMAL.
    old = TopicConfig.from_json(b'{"topicName":"Old","readQueueNums":1,"writeQueueNums":1}')
    assert (old.attributes, old.topic_message_type) == ({}, TopicMessageType.NORMAL)
    assert config.topic_message_type is TopicMessageType.FIFO


def test_the_compact_form_adds_the_attributes_only_when_there_are_some() -> None:
    plain = TopicConfig("Old", 2, 2)
    assert plain.to_compact() == "Old 2 2 6 SINGLE_TAG"
    typed = TopicConfig(
        "Orders", 4, 4, attributes={"message.type": "DELAY", "queue.type": "SimpleCQ"}
    )
    text = typed.to_compact()
    assert text == 'Orders 4 4 6 SINGLE_TAG {"message.type":"DELAY","queue.type":"SimpleCQ"}'
    assert TopicConfig.from_compact(text) == typed
    assert TopicConfig.from_compact(plain.to_compact()) == plain
    # RocketMQ 5 always writes the sixth field, "{}" when empty; unreadable JSON is ignored.
    assert TopicConfig.from_compact("T 1 1 6 SINGLE_TAG {}").attributes == {}
    assert TopicConfig.from_compact("T 1 1 6 SINGLE_TAG {broken").attributes == {}
    with pytest.raises(BodyError, match="expected 5"):
        TopicConfig.from_compact("T 1 1")
