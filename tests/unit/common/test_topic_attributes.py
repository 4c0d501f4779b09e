"""RocketMQ 5's topic attributes: the +key=value / -key syntax and how a change applies."""

from __future__ import annotations

import re

import pytest

from orbitmq.common.topic_attributes import (
    TOPIC_ATTRIBUTES,
    TopicAttributeError,
    alter_attributes,
    format_attributes,
    parse_attributes_modification,
    topic_message_type,
)
from orbitmq.common.topic_message_type import TopicMessageType


def test_parse_adds_and_deletes() -> None:
    assert parse_attributes_modification("+message.type=FIFO,-reserve.time") == {
        "+message.type": "FIFO",
        "-reserve.time": "",
    }
    assert parse_attributes_modification("") == {}
    assert parse_attributes_modification(None) == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("message.type=FIFO", "add/alter attribute format is wrong: 'message.type=FIFO'"),
        ("+message.type=", "add/alter attribute format is wrong"),
        ("+a=b=c", "add/alter attribute format is wrong"),
        ("message.type", "delete attribute format is wrong: 'message.type', expected -key"),
        ("+a=1,+a=2", "key duplication: '+a'"),
        ("+a=1,,+b=2", "delete attribute format is wrong: ''"),
    ],
)
def test_parse_refuses_bad_syntax_naming_the_piece(text: str, reason: str) -> None:
    with pytest.raises(TopicAttributeError, match=re.escape(reason)):
        parse_attributes_modification(text)


def test_format_is_the_inverse_of_parse() -> None:
    modification = {"+message.type": "FIFO", "-reserve.time": ""}
    assert format_attributes(modification) == "+message.type=FIFO,-reserve.time"
    assert parse_attributes_modification(format_attributes(modification)) == modification


def test_create_takes_additions_of_known_keys_with_allowed_values() -> None:
    created = alter_attributes(True, {}, {"+message.type": "FIFO", "+queue.type": "SimpleCQ"})
    assert created == {"message.type": "FIFO", "queue.type": "SimpleCQ"}
    with pytest.raises(TopicAttributeError, match=re.escape("only add attribute is supported")):
        alter_attributes(True, {}, {"-message.type": ""})
    with pytest.raises(
        TopicAttributeError, match=re.escape("unsupported key: 'colour', known keys: ")
    ):
        alter_attributes(True, {}, {"+colour": "red"})
    with pytest.raises(
        TopicAttributeError,
        match=re.escape("message.type='FOO', allowed: DELAY, FIFO, MIXED, NORMAL, TRANSACTION"),
    ):
        alter_attributes(True, {}, {"+message.type": "FOO"})
    with pytest.raises(TopicAttributeError, match=r"range\(-1, 9223372036854775807\)"):
        alter_attributes(True, {}, {"+reserve.time": "-2"})
    with pytest.raises(
        TopicAttributeError, match=re.escape("reserve.time='soon' is not a whole number")
    ):
        alter_attributes(True, {}, {"+reserve.time": "soon"})


def test_update_adds_changes_deletes_and_keeps_the_rest() -> None:
    current = {"message.type": "FIFO", "queue.type": "SimpleCQ"}
    assert alter_attributes(False, current, {}) == current
    assert alter_attributes(False, current, {"+message.type": "DELAY"}) == {
        "message.type": "DELAY",
        "queue.type": "SimpleCQ",
    }
    assert alter_attributes(False, current, {"-message.type": "", "+reserve.time": "24"}) == {
        "queue.type": "SimpleCQ",
        "reserve.time": "24",
    }
    assert current == {"message.type": "FIFO", "queue.type": "SimpleCQ"}  # not changed


def test_update_refuses_unchangeable_and_missing_keys() -> None:
    current = {"queue.type": "SimpleCQ"}
    with pytest.raises(
        TopicAttributeError, match=re.escape("unchangeable attribute. key: queue.type")
    ):
        alter_attributes(False, current, {"+queue.type": "BatchCQ"})
    with pytest.raises(TopicAttributeError, match=re.escape("nonexistent key: message.type")):
        alter_attributes(False, current, {"-message.type": ""})
    with pytest.raises(
        TopicAttributeError, match=re.escape("alter duplication key. key: message.type")
    ):
        alter_attributes(False, current, {"+message.type": "FIFO", "-message.type": ""})


def test_the_known_attributes_are_rocketmq_5s() -> None:
    assert {k: a.changeable for k, a in TOPIC_ATTRIBUTES.items()} == {
        "queue.type": False,
        "cleanup.policy": False,
        "message.type": True,
        "reserve.time": True,
    }


def test_a_topics_message_type_from_its_attributes() -> None:
    assert topic_message_type(None) is TopicMessageType.UNSPECIFIED
    assert topic_message_type({}) is TopicMessageType.NORMAL
    assert topic_message_type({"message.type": "FIFO"}) is TopicMessageType.FIFO
    assert topic_message_type({"message.type": "fifo"}) is TopicMessageType.UNSPECIFIED
