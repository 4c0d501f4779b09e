"""Message property helpers and MessageQueue ordering."""

from __future__ import annotations

from orbitmq.common import Message, MessageExt, MessageQueue


def test_tags_are_the_tags_property() -> None:
    message = Message("T")
    assert message.tags is None
    message.tags = "TagA"
    assert message.properties == {"TAGS": "TagA"}
    assert Message("T", properties={"TAGS": "TagB"}).tags == "TagB"
    message.tags = None
    assert message.properties == {}


def test_keys_are_one_space_separated_property() -> None:
    message = Message("T")
    assert message.keys == []
    message.keys = ["order-1", "user-2"]
    assert message.properties["KEYS"] == "order-1 user-2"
    assert message.keys == ["order-1", "user-2"]
    message.keys = "k1 k2  k3 "
    assert message.properties["KEYS"] == "k1 k2  k3 "
    assert message.keys == ["k1", "k2", "k3"]
    message.keys = []
    assert "KEYS" not in message.properties
    message.keys = ["only"]
    message.keys = ""
    assert "KEYS" not in message.properties
    assert Message("T", properties={"KEYS": "a b"}).keys == ["a", "b"]


def test_delay_time_level() -> None:
    message = Message("T")
    assert message.delay_time_level == 0
    message.delay_time_level = 3
    assert message.properties == {"DELAY": "3"}
    assert message.delay_time_level == 3
    assert Message("T", properties={"DELAY": "18"}).delay_time_level == 18
    message.delay_time_level = 0
    assert "DELAY" not in message.properties


def test_wait_store_msg_ok_defaults_to_true() -> None:
    assert Message("T").wait_store_msg_ok is True
    assert Message("T", properties={"WAIT": "true"}).wait_store_msg_ok is True
    assert Message("T", properties={"WAIT": "false"}).wait_store_msg_ok is False


def test_unique_key_is_the_uniq_key_property() -> None:
    assert Message("T").unique_key is None
    assert Message("T", properties={"UNIQ_KEY": "0A0B"}).unique_key == "0A0B"


def test_helpers_leave_other_properties_alone() -> None:
    message = MessageExt("T", properties={"a": "1"})
    message.tags = "x"
    message.keys = ["k"]
    message.delay_time_level = 2
    assert message.properties == {"a": "1", "TAGS": "x", "KEYS": "k", "DELAY": "2"}


def test_messages_do_not_share_property_dicts() -> None:
    first, second = Message("T"), Message("T")
    first.tags = "x"
    assert second.properties == {}


def test_message_queue_order_is_topic_then_broker_then_queue() -> None:
    queues = [
        MessageQueue(topic="b", broker_name="broker-a", queue_id=0),
        MessageQueue(topic="a", broker_name="broker-b", queue_id=0),
        MessageQueue(topic="a", broker_name="broker-a", queue_id=10),
        MessageQueue(topic="a", broker_name="broker-a", queue_id=2),
    ]
    # queue ids compare as numbers (2 before 10); topic decides before broker name
    assert sorted(queues) == [
        MessageQueue(topic="a", broker_name="broker-a", queue_id=2),
        MessageQueue(topic="a", broker_name="broker-a", queue_id=10),
        MessageQueue(topic="a", broker_name="broker-b", queue_id=0),
        MessageQueue(topic="b", broker_name="broker-a", queue_id=0),
    ]


def test_message_queue_is_a_hashable_value() -> None:
    assert MessageQueue("t", "b", 1) == MessageQueue("t", "b", 1)
    assert len({MessageQueue("t", "b", 1), MessageQueue("t", "b", 1)}) == 1
    assert MessageQueue("t", "b", 1) != MessageQueue("t", "b", 2)
